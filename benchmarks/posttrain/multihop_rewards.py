"""MultihopSpatial's GRPO training rewards (paper Sec. 4, Eq. 1-2; public recipe ``train/src/train/reward_funcs.py``).

R = R_format + alpha * R_mcq + beta * R_bbox with alpha = beta = 1, each term 0 when its part is unparsable:

- R_format = 1 when the completion holds ``Answer: (x)`` (x in a-d, any case) followed by at least one
  character that is a word character, white space, ``-``, ``'`` or ``"``, and later
  ``Bounding Box: [n, n, n, n]`` with four *integers* (the 0-1000 scale the training prompt asks for);
  ``Answer: (b)`` followed directly by ``,`` or a box written with decimals (``0.25``) earns 0.
- R_mcq = 1 when the letter of the first ``Answer: (x)`` equals the letter of the first ``(x)`` of the
  reference response (``"(c) white car"``).
- R_bbox = (GIoU + 1) / 2 between the first ``Bounding Box: [n, n, n, n]`` (integers) and the reference box
  ``[x1, y1, x2, y2]`` on 0-1000; both boxes are read as the box their corners span (swapped corners are not
  penalised), and a box with no enclosing area scores its IoU. A coordinate over 2**53 leaves the box unread
  (R_bbox = 0): past it floats no longer hold every integer and the box's area overflows them, and past
  4,300 digits the recipe's ``int()`` raises ValueError.

The public recipe also loads a truncation term (``msr_truncation_reward``: -1 when a completion has no
complete box or an unclosed ``<think>``, else 0); it is outside the paper's Eq. 1 and offered separately.

Every ``*_reward`` function has TRL's reward-function signature ``(completions, **kwargs) -> list[float]``:
pass them to ``trl.GRPOTrainer(reward_funcs=[...])`` directly; dataset columns arrive as keyword lists
(``response``: reference answers, ``bbox_normalized``: reference boxes on 0-1000). Completions may be
strings or conversational ``[{"role": "assistant", "content": ...}]`` lists. Nothing here imports TRL.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from benchmarks.scoring.metrics import bbox_reward, giou

#: Paper Eq. 1 weights (Appendix A: alpha = beta = 1).
ALPHA = 1.0
BETA = 1.0

_ANSWER = re.compile(r"Answer:\s*\(([a-d])\)", re.IGNORECASE)
_KEY_LETTER = re.compile(r"\(([a-d])\)", re.IGNORECASE)
_INT_BOX = re.compile(r"Bounding Box:\s*\[\s*(\d+)\s*,\s*(\d+)\s*,\s*(\d+)\s*,\s*(\d+)\s*\]", re.IGNORECASE)
_THINK_ANSWER = re.compile(r"Answer:\s*\([a-d]\)", re.IGNORECASE)
#: Largest box coordinate read (see the module docstring).
MAX_COORDINATE = 2**53


def completion_text(completion: object) -> str:
    """The text of one TRL completion: a string, or the last message's content of a conversation."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, Sequence) and completion and isinstance(completion[-1], Mapping):
        content = completion[-1].get("content", "")
        if isinstance(content, list):  # multimodal content parts
            return "".join(part.get("text", "") for part in content if isinstance(part, Mapping))
        return str(content)
    return ""


def _follows_answer(char: str) -> bool:
    """Whether ``char`` may follow ``(x)`` in a well-formatted answer: the recipe's ``[\\w\\s\\-'"]``."""
    return char.isalnum() or char == "_" or char.isspace() or char in "-'\""


def format_ok(text: str) -> bool:
    """The recipe's format test on one completion (see the module docstring), in one pass over the text.

    The recipe's pattern is ``Answer:\\s*\\([a-d]\\)\\s*[\\w\\s\\-'"]+.*?Bounding Box:\\s*\\[int, int, int, int\\]``
    with DOTALL. It matches exactly when some ``Answer: (x)`` is followed by one allowed character and a
    complete integer box starts after that character; the earliest such answer leaves the most room, so
    only it needs a box search.
    """
    for match in _ANSWER.finditer(text):
        end = match.end()
        if end < len(text) and _follows_answer(text[end]):
            return _INT_BOX.search(text, end + 1) is not None
    return False


def answer_letter(text: str) -> str | None:
    """The lower-case letter of the first ``Answer: (x)``, or ``None``."""
    match = _ANSWER.search(text)
    return match.group(1).lower() if match else None


def key_letter(reference: str | None) -> str | None:
    """The lower-case letter of the first ``(x)`` of a reference answer such as ``"(c) white car"``."""
    match = _KEY_LETTER.search(reference or "")
    return match.group(1).lower() if match else None


def int_box(text: str) -> tuple[int, int, int, int] | None:
    """The first ``Bounding Box: [n, n, n, n]`` with integer coordinates, or ``None`` (also when a coordinate
    is over :data:`MAX_COORDINATE`)."""
    match = _INT_BOX.search(text)
    if match is None:
        return None
    digits = [group.lstrip("0") or "0" for group in match.groups()]
    if any(len(d) > len(str(MAX_COORDINATE)) for d in digits):  # never int() of a huge digit run
        return None
    box = (int(digits[0]), int(digits[1]), int(digits[2]), int(digits[3]))
    return None if max(box) > MAX_COORDINATE else box


def box_to_1000(xywh: Sequence[float], width: float, height: float) -> list[int]:
    """A pixel ``[x, y, w, h]`` box as the recipe's reference ``[x1, y1, x2, y2]`` on 0-1000: each corner
    scaled, truncated toward zero (``int``) and clamped to [0, 1000]."""
    x, y, w, h = xywh
    scaled = (x / width, y / height, (x + w) / width, (y + h) / height)
    return [max(0, min(1000, int(v * 1000))) for v in scaled]


def strip_thinking(text: str) -> str:
    """The answer part of a thinking model's completion, as the recipe prepares it for Thinking models:
    the text after ``</think>``; for an unclosed ``<think>``, the text from the last ``Answer: (x)`` (empty
    when there is none, so every term scores 0); the text itself when there is no ``<think>``."""
    if "</think>" in text:
        return text.split("</think>", 1)[1].strip()
    if "<think>" in text:
        starts = [match.start() for match in _THINK_ANSWER.finditer(text)]
        return text[starts[-1] :].strip() if starts else ""
    return text


# --------------------------------------------------------------------------------------------------------
# Per-sample terms


def format_term(text: str) -> float:
    """R_format for one completion text."""
    return 1.0 if format_ok(text) else 0.0


def mcq_term(text: str, reference: str | None) -> float:
    """R_mcq for one completion text: 1 when both letters are readable and equal."""
    predicted, key = answer_letter(text), key_letter(reference)
    return 1.0 if predicted is not None and key is not None and predicted == key else 0.0


def bbox_term(text: str, reference_box: Sequence[float] | None) -> float:
    """R_bbox = (GIoU + 1) / 2 for one completion text against a 0-1000 ``[x1, y1, x2, y2]`` box."""
    box = int_box(text)
    if box is None or reference_box is None:
        return 0.0
    return bbox_reward(giou(box, reference_box, sort_corners=True))


def total_reward(
    text: str,
    reference: str | None,
    reference_box: Sequence[float] | None,
    alpha: float = ALPHA,
    beta: float = BETA,
) -> float:
    """R = R_format + alpha R_mcq + beta R_bbox for one completion text (paper Eq. 1)."""
    return format_term(text) + alpha * mcq_term(text, reference) + beta * bbox_term(text, reference_box)


def truncation_term(text: str, penalty: float = -1.0) -> float:
    """The recipe's truncation penalty: ``penalty`` for an unclosed ``<think>`` or a completion without a
    complete integer box, else 0."""
    if "<think>" in text and "</think>" not in text:
        return penalty
    return 0.0 if _INT_BOX.search(text) else penalty


# --------------------------------------------------------------------------------------------------------
# TRL reward functions: (completions, **kwargs) -> list[float]


def _column(kwargs: Mapping[str, Any], name: str, n: int) -> list[Any] | None:
    values = kwargs.get(name)
    if values is None:
        return None
    values = list(values)
    if len(values) != n:
        raise ValueError(
            f"reward column {name!r} has {len(values)} entries for {n} completions; pass one per completion"
        )
    return values


def msr_format_reward(completions: Sequence[Any], **kwargs: Any) -> list[float]:
    """R_format per completion."""
    return [format_term(completion_text(c)) for c in completions]


def msr_mcq_reward(completions: Sequence[Any], **kwargs: Any) -> list[float]:
    """R_mcq per completion; ``response`` holds the reference answers (all 0 without them, as the recipe)."""
    references = _column(kwargs, "response", len(completions))
    if references is None:
        return [0.0] * len(completions)
    return [mcq_term(completion_text(c), r) for c, r in zip(completions, references)]


def msr_bbox_reward(completions: Sequence[Any], **kwargs: Any) -> list[float]:
    """R_bbox per completion; ``bbox_normalized`` holds the reference 0-1000 boxes (all 0 without them)."""
    boxes = _column(kwargs, "bbox_normalized", len(completions))
    if boxes is None:
        return [0.0] * len(completions)
    return [bbox_term(completion_text(c), b) for c, b in zip(completions, boxes)]


def msr_total_reward(completions: Sequence[Any], **kwargs: Any) -> list[float]:
    """R = R_format + alpha R_mcq + beta R_bbox per completion (alpha, beta from kwargs, default 1) — the
    paper's Eq. 1 as one function, equal to the sum of the three term functions."""
    alpha, beta = float(kwargs.get("alpha", ALPHA)), float(kwargs.get("beta", BETA))
    terms = zip(
        msr_format_reward(completions, **kwargs),
        msr_mcq_reward(completions, **kwargs),
        msr_bbox_reward(completions, **kwargs),
    )
    return [f + alpha * m + beta * b for f, m, b in terms]


def msr_truncation_reward(completions: Sequence[Any], **kwargs: Any) -> list[float]:
    """The recipe's extra truncation term (0 or ``penalty_value``, default -1); ``raw_completions`` when
    given are checked instead (the texts before thinking was stripped)."""
    penalty = float(kwargs.get("penalty_value", -1.0))
    raw = _column(kwargs, "raw_completions", len(completions))
    return [truncation_term(completion_text(c), penalty) for c in (raw if raw is not None else completions)]


#: The paper's three terms, for ``GRPOTrainer(reward_funcs=PAPER_REWARD_FUNCS)`` (TRL sums them, weight 1).
PAPER_REWARD_FUNCS = (msr_format_reward, msr_mcq_reward, msr_bbox_reward)
#: What the public recipe loads by default: the paper's terms plus the truncation penalty.
RECIPE_REWARD_FUNCS = (*PAPER_REWARD_FUNCS, msr_truncation_reward)
