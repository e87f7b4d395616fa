"""GRPO rewards for every kind of the spatial corpus (:mod:`benchmarks.datagen.corpus`), with MultihopSpatial's
three terms (format, answer accuracy, box) extended to the corpus's single-hop answers.

Each corpus row's references say what it asks for, and the terms follow them:

====================================  ====================================  ============================  ==================
reference (``response``, ``bbox``)    R_format = 1 when the completion ...  R_accuracy                    R_bbox
====================================  ====================================  ============================  ==================
a letter and a box (``*multihop``)    has the recipe's ``Answer: (x) ...``  the letters match             (GIoU + 1) / 2
                                      then ``Bounding Box: [n, n, n, n]``
                                      (:func:`~benchmarks.scoring.
                                      multihop_rewards.format_ok`)
a box only (``*localisation``)        holds an integer box                  0 (the box term scores it)    (GIoU + 1) / 2
a letter only (multiple choice)       names one option (the project's       the letters match             0
                                      option parser)
a number (distance, depth, size)      holds a number                        MRA (VSI-Bench's mean         0
                                                                            relative accuracy)
====================================  ====================================  ============================  ==================

So a multi-hop row scores exactly as :data:`~benchmarks.posttrain.multihop_rewards.PAPER_REWARD_FUNCS` score it,
and the gold assistant turn of every row earns the most its row allows (``tests/benchmarks/posttrain/test_spatial_rewards.py``).
The functions have TRL's reward signature ``(completions, **kwargs) -> list[float]``; the references arrive
as the dataset columns ``response`` and ``bbox_normalized``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from benchmarks.posttrain.multihop_rewards import (
    _column,
    answer_letter,
    bbox_term,
    completion_text,
    format_ok,
    int_box,
    key_letter,
)
from benchmarks.scoring.metrics import mean_relative_accuracy
from benchmarks.scoring.parsers import parse_number, parse_option


def reference_kind(response: str | None, box: Sequence[float] | None) -> str:
    """What a row asks for: ``letter+box``, ``box``, ``letter`` or ``number`` (see the module table)."""
    letter = key_letter(response) is not None
    if box is not None:
        return "letter+box" if letter else "box"
    return "letter" if letter else "number"


def _chosen_letter(text: str, kind: str) -> str | None:
    """The completion's option letter, lower case: the recipe's ``Answer: (x)`` or any option the parser reads."""
    if kind == "letter+box":
        return answer_letter(text)
    result = parse_option(text, "ABCD")
    return str(result.value).lower() if result.ok else None


def format_score(text: str, response: str | None, box: Sequence[float] | None) -> float:
    """R_format for one completion against its row's references."""
    kind = reference_kind(response, box)
    if kind == "letter+box":
        ok = format_ok(text)
    elif kind == "box":
        ok = int_box(text) is not None
    elif kind == "letter":
        ok = _chosen_letter(text, kind) is not None
    else:
        ok = parse_number(text).ok
    return 1.0 if ok else 0.0


def accuracy_score(text: str, response: str | None, box: Sequence[float] | None) -> float:
    """R_accuracy for one completion: letter match, MRA for numbers, 0 for box-only rows."""
    kind = reference_kind(response, box)
    if kind == "box":
        return 0.0
    if kind == "number":
        reference = parse_number(response)
        if not reference.ok:
            raise ValueError(
                f"reference {response!r} is neither a letter, a box nor a number; fix the corpus row"
            )
        predicted = parse_number(text)
        return mean_relative_accuracy(predicted.value.value if predicted.ok else None, reference.value.value)
    chosen = _chosen_letter(text, kind)
    return 1.0 if chosen is not None and chosen == key_letter(response) else 0.0


def _references(completions: Sequence[Any], kwargs: dict[str, Any]) -> tuple[list[Any], list[Any]]:
    n = len(completions)
    responses = _column(kwargs, "response", n)
    if responses is None:
        raise ValueError(
            "spatial rewards need the 'response' column; train on a corpus from benchmarks.datagen.corpus"
        )
    boxes = _column(kwargs, "bbox_normalized", n) or [None] * n
    return responses, boxes


def spatial_format_reward(completions: Sequence[Any], **kwargs: Any) -> list[float]:
    """R_format per completion (see the module table)."""
    responses, boxes = _references(completions, kwargs)
    return [format_score(completion_text(c), r, b) for c, r, b in zip(completions, responses, boxes)]


def spatial_accuracy_reward(completions: Sequence[Any], **kwargs: Any) -> list[float]:
    """R_accuracy per completion (see the module table)."""
    responses, boxes = _references(completions, kwargs)
    return [accuracy_score(completion_text(c), r, b) for c, r, b in zip(completions, responses, boxes)]


def spatial_bbox_reward(completions: Sequence[Any], **kwargs: Any) -> list[float]:
    """R_bbox per completion: (GIoU + 1) / 2 where the row has a box, else 0."""
    _, boxes = _references(completions, kwargs)
    return [bbox_term(completion_text(c), b) for c, b in zip(completions, boxes)]


#: Every corpus kind, for ``GRPOTrainer(reward_funcs=SPATIAL_REWARD_FUNCS)`` (``--rewards spatial``).
SPATIAL_REWARD_FUNCS = (spatial_format_reward, spatial_accuracy_reward, spatial_bbox_reward)
