"""MultihopSpatial's two public scorers, reproduced: the repository script and lmms-eval's task.

Both read the answer with the same lenient "Answer: (x) ..." patterns, convert a box with any coordinate
above 1 from 0-1000 to 0-1, compute IoU in pixels against the ``[x, y, w, h]`` ground truth and round it to
4 decimals before the 0.5 threshold. They differ in:

- Denominators: the repository divides MCQ accuracy and Acc@50IoU by the items whose answer letter it could
  read (refusals drop out); lmms-eval divides by all items.
- Invalid boxes: the repository computes IoU for any parsed box (even inverted or outside the image);
  lmms-eval gives no IoU unless the box is inside [0, 1] with x2 > x1 and y2 > y1.
- Number syntax: the repository reads ``[\\d.]+`` and a malformed number such as ``1.2.3`` raises, which
  turns the whole item into an error (no prediction, out of every denominator); lmms-eval's pattern only
  matches well-formed numbers, so such a box is simply not found.
- Box syntax order: the repository tries ``Bounding Box: [...]`` first, lmms-eval ``"bbox_2d": [...]``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeGuard

_ANSWER_PAREN = re.compile(r"Answer:\s*(\([a-d]\)\s*[^\n]*)", re.IGNORECASE)
_ANSWER_HALF_PAREN = re.compile(r"Answer:\s*([a-d])\)\s*([^\n]*)", re.IGNORECASE)
_ANSWER_LETTER_EOL = re.compile(r"Answer:\s*([a-d])\s*$", re.IGNORECASE | re.MULTILINE)
_ANY_PAREN_OPTION = re.compile(r"(\([a-d]\)\s*[^\n,\[\]]*)", re.IGNORECASE)
_LETTER_IN_PARENS = re.compile(r"\(([a-d])\)", re.IGNORECASE)

_REPO_NUM = r"([\d.]+)"
# lmms-eval writes r"(\d*\.?\d+)"; this matches the same strings without splitting a digit run two ways
# (quadratic backtracking on a long run of digits).
_LMMS_NUM = r"(\d+(?:\.\d+)?|\.\d+)"


def _four(num: str) -> str:
    return r"\[\s*" + r"\s*,\s*".join([num] * 4) + r"\s*\]"


_REPO_BOX_PATTERNS = (
    (re.compile(r"Bounding Box:\s*" + _four(_REPO_NUM), re.IGNORECASE), "search"),
    (re.compile(r'"bbox_2d"\s*:\s*' + _four(_REPO_NUM)), "search"),
    (re.compile(_four(_REPO_NUM)), "findall"),
)
_LMMS_BOX_PATTERNS = (
    (re.compile(r'"bbox_2d"\s*:\s*' + _four(_LMMS_NUM)), "search"),
    (re.compile(r"Bounding Box:\s*" + _four(_LMMS_NUM), re.IGNORECASE), "search"),
    (re.compile(_four(_LMMS_NUM)), "findall"),
)


def parse_answer(text: str) -> str | None:
    """The normalised ``"(a) description"`` string both scorers read, or ``None``."""
    if not text:
        return None
    match = _ANSWER_PAREN.search(text)
    if match:
        return match.group(1).strip()
    match = _ANSWER_HALF_PAREN.search(text)
    if match:
        letter, description = match.group(1).lower(), match.group(2).strip()
        return f"({letter}) {description}" if description else f"({letter})"
    match = _ANSWER_LETTER_EOL.search(text)
    if match:
        return f"({match.group(1).lower()})"
    match = _ANY_PAREN_OPTION.search(text)
    return match.group(1).strip() if match else None


def choice_letter(text: str | None) -> str | None:
    """The lower-case letter in the first ``(x)`` of a parsed answer or answer key."""
    if text is None:
        return None
    match = _LETTER_IN_PARENS.search(text)
    return match.group(1).lower() if match else None


class MalformedBoxError(ValueError):
    """The repository script's crash on a box number like ``1.2.3``."""


def _first_box(text: str, patterns: tuple[tuple[re.Pattern[str], str], ...]) -> tuple[str, ...] | None:
    for pattern, how in patterns:
        if how == "search":
            match = pattern.search(text)
            if match:
                return match.groups()
        else:
            found = pattern.findall(text)
            if found:
                return found[0]
    return None


def _to_unit_scale(box: list[float]) -> list[float]:
    return [v / 1000.0 for v in box] if any(v > 1 for v in box) else box


def parse_box_repo(text: str) -> list[float] | None:
    """The repository's box parse (0-1 after rescaling).

    Raises:
        MalformedBoxError: when a matched coordinate is not a number (e.g. ``1.2.3``), as the script does.
    """
    groups = _first_box(text, _REPO_BOX_PATTERNS)
    if groups is None:
        return None
    try:
        return _to_unit_scale([float(v) for v in groups])
    except ValueError as error:
        raise MalformedBoxError(f"could not convert box coordinates {list(groups)} ({error})") from None


def parse_box_lmms(text: str) -> list[float] | None:
    """lmms-eval's box parse (0-1 after rescaling); malformed numbers are simply not matched."""
    groups = _first_box(text, _LMMS_BOX_PATTERNS)
    return None if groups is None else _to_unit_scale([float(v) for v in groups])


def is_valid_unit_box(box: Sequence[float] | None) -> TypeGuard[Sequence[float]]:
    """lmms-eval's validity test: four coordinates in [0, 1] with x2 > x1 and y2 > y1."""
    if box is None or len(box) != 4:
        return False
    return all(0 <= v <= 1 for v in box) and box[2] > box[0] and box[3] > box[1]


def pixel_iou(gt_xywh: Sequence[float], pred_unit: Sequence[float], width: float, height: float) -> float:
    """IoU in pixels, rounded to 4 decimals, exactly as both scorers compute it (no validity checks)."""
    gx, gy, gw, gh = gt_xywh
    gt = (gx, gy, gx + gw, gy + gh)
    pred = (pred_unit[0] * width, pred_unit[1] * height, pred_unit[2] * width, pred_unit[3] * height)
    ix1, iy1, ix2, iy2 = max(gt[0], pred[0]), max(gt[1], pred[1]), min(gt[2], pred[2]), min(gt[3], pred[3])
    if ix2 <= ix1 or iy2 <= iy1:
        return 0.0
    inter = (ix2 - ix1) * (iy2 - iy1)
    union = (gt[2] - gt[0]) * (gt[3] - gt[1]) + (pred[2] - pred[0]) * (pred[3] - pred[1]) - inter
    return 0.0 if union <= 0 else round(inter / union, 4)


@dataclass(frozen=True)
class HopRecord:
    """One item as a public scorer records it."""

    prediction: str | None
    pred_letter: str | None
    answer_letter: str | None
    correct: bool
    pred_box: list[float] | None
    iou: float | None
    error: str | None = None


def score_repo(
    response: str, answer: str, gt_xywh: Sequence[float], width: float, height: float
) -> HopRecord:
    """The repository script's record for one response (IoU even for invalid boxes)."""
    answer_letter = choice_letter(answer)
    try:
        prediction = parse_answer(response)
        box = parse_box_repo(response)
    except MalformedBoxError as error:
        return HopRecord(None, None, answer_letter, False, None, None, f"the script raises here: {error}")
    letter = choice_letter(prediction)
    iou = pixel_iou(gt_xywh, box, width, height) if box is not None and len(box) == 4 else None
    return HopRecord(
        prediction, letter, answer_letter, letter is not None and letter == answer_letter, box, iou
    )


def score_lmms(
    response: str, answer: str, gt_xywh: Sequence[float], width: float, height: float
) -> HopRecord:
    """lmms-eval's record for one response (IoU only for valid boxes)."""
    prediction = parse_answer(response)
    letter, answer_letter = choice_letter(prediction), choice_letter(answer)
    box = parse_box_lmms(response)
    iou = pixel_iou(gt_xywh, box, width, height) if is_valid_unit_box(box) else None
    return HopRecord(
        prediction, letter, answer_letter, letter is not None and letter == answer_letter, box, iou
    )


def summarize_repo(records: Sequence[HopRecord]) -> dict[str, float | int]:
    """Repository aggregation: accuracy and Acc@50IoU over items with both letters readable."""
    evaluated = [r for r in records if r.answer_letter and r.pred_letter]
    correct = sum(1 for r in evaluated if r.answer_letter == r.pred_letter)
    ious = [r.iou for r in records if r.iou is not None and r.correct]
    hits = sum(1 for r in records if r.correct and r.iou is not None and r.iou >= 0.5)
    n = len(evaluated)
    return {
        "evaluated": n,
        "mcq_accuracy": round(correct / n * 100, 2) if n else 0.0,
        "acc_at_50_iou": round(hits / n * 100, 2) if n else 0.0,
        "avg_iou": round(sum(ious) / len(ious), 4) if ious else 0.0,
    }


def summarize_lmms(records: Sequence[HopRecord]) -> dict[str, float | int]:
    """lmms-eval aggregation: every item in every denominator; avg IoU in percent."""
    n = len(records)
    ious = [r.iou for r in records if r.correct and r.iou is not None]
    hits = sum(1 for r in records if r.correct and r.iou is not None and r.iou >= 0.5)
    return {
        "evaluated": n,
        "mcq_accuracy": round(sum(r.correct for r in records) / n * 100, 2) if n else 0.0,
        "acc_at_50_iou": round(hits / n * 100, 2) if n else 0.0,
        "avg_iou": round(sum(ious) / len(ious) * 100, 2) if ious else 0.0,
    }
