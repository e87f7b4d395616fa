"""Probe questions: exact-answer questions about one recorded decision, asked and scored as SpatialScore items.

A family's generator (e.g. :mod:`benchmarks.attribution.navigation`) writes :class:`ProbeQuestion`\\ s from the
simulator state of a decision, never from the instruction text alone; here each becomes a SpatialScore item
(:class:`~benchmarks.static.items.StaticItem`) so that the prompt is SpatialScore's (the paper's per-type
instruction, :func:`benchmarks.static.spatialscore.build_prompt`), the answer key is written as that prompt
asks (:func:`~benchmarks.static.spatialscore.gold_answer`) and the reply is scored by the project's
SpatialScore scorer (:func:`~benchmarks.static.spatialscore.score_project`: option letters, yes/no, MRA with
units). The images are the exact arrays the policy was shown at that decision.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from benchmarks.scoring.units import Quantity
from benchmarks.static import spatialscore
from benchmarks.static.items import StaticItem
from policies.backends.base import Backend, Message
from policies.mllm.common import prompt_id

#: A question counts as answered right at this score or above (MC and yes/no score 0 or 1; MRA is graded).
RIGHT_AT = 0.5
LETTERS = "ABCD"


@dataclass(frozen=True)
class ProbeQuestion:
    """One exact-answer question about a decision's state.

    ``task``: ``mcq`` (``options`` in shown order, ``key`` the right letter), ``judgment`` (``key`` ``yes`` or
    ``no``) or ``numeric`` (``key`` a :class:`Quantity`). ``truth``: the simulator values behind the key."""

    kind: str
    task: str
    text: str
    key: str | Quantity
    options: tuple[str, ...] = ()
    truth: Mapping[str, Any] = field(default_factory=dict)

    def item(self, item_id: str) -> StaticItem:
        """The question as a SpatialScore item (options written into the question, as SpatialScore does)."""
        lettered = "\n".join(f"({LETTERS[i]}) {t}" for i, t in enumerate(self.options))
        question = f"{self.text}\n{lettered}" if self.options else self.text
        options = {LETTERS[i]: t for i, t in enumerate(self.options)}
        answer_text = str(self.key.value if isinstance(self.key, Quantity) else self.key)
        return StaticItem(
            benchmark=spatialscore.NAME,
            item_id=item_id,
            index=0,
            question=question,
            answer=answer_text,
            task=self.task,
            options=options,
            category="probe",
            tags={"kind": self.kind},
            meta={"key": self.key, "answer_text": answer_text},
        )


def multi_choice(
    kind: str, text: str, right: str, wrong: Sequence[str], rng: np.random.Generator, truth: Mapping[str, Any]
) -> ProbeQuestion:
    """A multi-choice question with the options shuffled by ``rng`` (a fixed order would favour a model that
    always answers (A))."""
    texts = [right, *wrong]
    shown = [texts[int(i)] for i in rng.permutation(len(texts))]
    return ProbeQuestion(kind, "mcq", text, LETTERS[shown.index(right)], tuple(shown), truth)


class ProbeBook:
    """The gold answers of every probe asked so far, as a truth (a stand-in model may answer from it)."""

    def __init__(self) -> None:
        self._gold: dict[str, str] = {}

    def add(self, messages: Sequence[Message], gold: str) -> None:
        self._gold[prompt_id(messages)] = gold

    def __call__(self, messages: Sequence[Message]) -> str:
        found = self._gold.get(prompt_id(messages))
        if found is None:
            raise RuntimeError("the probe book has no gold answer for this conversation")
        return found


def probe_messages(item: StaticItem, images: Sequence[np.ndarray]) -> list[Message]:
    """SpatialScore's prompt for ``item`` with ``images`` (the decision's), as the static runner sends it."""
    prompt = spatialscore.build_prompt(item)
    content: list[dict[str, Any]] = [{"type": "image", "image": image} for image in images]
    content.append({"type": "text", "text": prompt.text})
    return [{"role": "user", "content": content}]


def ask(
    model: Backend,
    question: ProbeQuestion,
    images: Sequence[np.ndarray],
    book: ProbeBook | None,
    item_id: str,
) -> dict[str, Any]:
    """Ask ``model`` one probe and score the reply; the line for ``decisions.jsonl`` (without unit fields).

    The gold answer goes into ``book`` first (when given: the stand-in's truth reads it)."""
    item = question.item(item_id)
    messages = probe_messages(item, images)
    gold = spatialscore.gold_answer(item)
    if book is not None:
        book.add(messages, gold)
    began = time.perf_counter()
    generation = model.generate(messages)
    seconds = time.perf_counter() - began
    score = spatialscore.score_project(item, generation.text)
    key = question.key.to_dict() if isinstance(question.key, Quantity) else question.key
    return {
        "kind": question.kind,
        "answer_type": question.task,
        "question": item.question,
        "expected": key,
        "gold": gold,
        "text": generation.text,
        "score": float(score.score or 0.0),
        "right": float(score.score or 0.0) >= RIGHT_AT,
        "scorer": score.scorer,
        "truth": dict(question.truth),
        "latency_s": round(seconds, 4),
        "injected_error": generation.injected_error,
    }
