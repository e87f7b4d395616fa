"""Probe questions: exact-answer questions about one recorded decision, asked and scored as SpatialScore items.

A family's generator (e.g. :mod:`benchmarks.attribution.navigation`) writes :class:`ProbeQuestion`\\ s from the
simulator state of a decision, never from the instruction text alone; here each becomes a SpatialScore item
(:class:`~benchmarks.static.items.StaticItem`) so that the prompt is SpatialScore's (the paper's per-type
instruction, :func:`benchmarks.static.spatialscore.build_prompt`), the answer key is written as that prompt
asks (:func:`~benchmarks.static.spatialscore.gold_answer`) and the reply is scored by the project's
SpatialScore scorer (:func:`~benchmarks.static.spatialscore.score_project`: option letters, yes/no, MRA with
units). SpatialScore has no box questions: a ``box`` probe is the spatial corpus's localisation question
(:func:`benchmarks.datagen.corpus_format.localisation_text`, ``Bounding Box: [x1, y1, x2, y2]`` on 0-1000), sent
as written and scored by its IoU with the gold box (:func:`benchmarks.static.multihop.box_overlap`, the
MultihopSpatial scorer's box term), right at IoU 0.5 (Acc@50IoU). The images are the exact arrays the policy
was shown at that decision.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from benchmarks.datagen.corpus_format import box_answer
from benchmarks.scoring.result import SampleScore
from benchmarks.scoring.units import Quantity
from benchmarks.static import spatialscore
from benchmarks.static.items import StaticItem
from benchmarks.static.multihop import box_overlap
from policies.backends.base import Backend, Message
from policies.mllm.common import prompt_id

#: A question counts as answered right at this score or above (MC and yes/no score 0 or 1; MRA and IoU are
#: graded; 0.5 IoU is Acc@50IoU).
RIGHT_AT = 0.5
LETTERS = "ABCD"


@dataclass(frozen=True)
class ProbeQuestion:
    """One exact-answer question about a decision's state.

    ``task``: ``mcq`` (``options`` in shown order, ``key`` the right letter), ``judgment`` (``key`` ``yes`` or
    ``no``), ``numeric`` (``key`` a :class:`Quantity`) or ``box`` (``key`` the ``[x1, y1, x2, y2]`` box on
    0-1000). ``truth``: the simulator values behind the key."""

    kind: str
    task: str
    text: str
    key: str | Quantity | tuple[int, ...]
    options: tuple[str, ...] = ()
    truth: Mapping[str, Any] = field(default_factory=dict)

    def item(self, item_id: str) -> StaticItem:
        """The question as a SpatialScore item (options written into the question, as SpatialScore does)."""
        lettered = "\n".join(f"({LETTERS[i]}) {t}" for i, t in enumerate(self.options))
        question = f"{self.text}\n{lettered}" if self.options else self.text
        options = {LETTERS[i]: t for i, t in enumerate(self.options)}
        answer_text = _answer_text(self.key)
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


def _answer_text(key: str | Quantity | tuple[int, ...]) -> str:
    if isinstance(key, tuple):
        return box_answer(key)
    return str(key.value if isinstance(key, Quantity) else key)


def score(item: StaticItem, response: str) -> SampleScore:
    """A box probe's IoU with its gold box; any other by SpatialScore's project scorer."""
    if item.task != "box":
        return spatialscore.score_project(item, response)
    box, overlap, _ = box_overlap(response, [v / 1000 for v in item.meta["key"]])
    why = f"IoU {overlap:.4f} with {list(item.meta['key'])}" + ("" if box.ok else f" ({box.method})")
    return SampleScore(overlap, None, box, "box_iou", why, {"iou": overlap})


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
    """SpatialScore's prompt for ``item`` with ``images`` (the decision's), as the static runner sends it (a
    box question as the corpus writes it: SpatialScore's instructions ask for a letter, yes/no or a scalar)."""
    text = item.question if item.task == "box" else spatialscore.build_prompt(item).text
    content: list[dict[str, Any]] = [{"type": "image", "image": image} for image in images]
    content.append({"type": "text", "text": text})
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
    scored = score(item, generation.text)
    key = question.key.to_dict() if isinstance(question.key, Quantity) else question.key
    return {
        "kind": question.kind,
        "answer_type": question.task,
        "question": item.question,
        "expected": key,
        "gold": gold,
        "text": generation.text,
        "score": float(scored.score or 0.0),
        "right": float(scored.score or 0.0) >= RIGHT_AT,
        "scorer": scored.scorer,
        "truth": dict(question.truth),
        "latency_s": round(seconds, 4),
        "injected_error": generation.injected_error,
    }
