"""Metrics as pure functions: accuracy, MRA, relative error, IoU / GIoU, Gaussian-kernel orientation score.

Conventions: boxes are ``(x1, y1, x2, y2)`` in one coordinate frame (normalised 0-1 unless said otherwise);
scores are in [0, 1]; an empty population gives ``None`` (shown as N/A), never 0.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence

from benchmarks.scoring.units import Quantity, to_centimetres, unit_dimension

Box = tuple[float, float, float, float]

#: VSI-Bench / SpatialScore thresholds C in {0.50, 0.55, ..., 0.95}.
MRA_THRESHOLDS: tuple[float, ...] = tuple(round(0.50 + 0.05 * i, 2) for i in range(10))
#: Absolute slack when comparing a relative error with 1 - C, so that an error exactly on a threshold
#: counts as the published definition (<=) says. Without it, 1 - 0.8 = 0.19999999999999996 in floating
#: point and a prediction of 12 for 10 (error 0.2) would miss the 0.80 threshold.
MRA_TOLERANCE = 1e-9


def mean(values: Iterable[float]) -> float | None:
    """Arithmetic mean; ``None`` for no values."""
    items = list(values)
    return sum(items) / len(items) if items else None


def accuracy(flags: Iterable[bool]) -> float | None:
    """Fraction of true flags; ``None`` when there are none."""
    return mean(1.0 if f else 0.0 for f in flags)


def relative_error(pred: float, gt: float) -> float:
    """|pred - gt| / |gt|; a zero ground truth gives +inf (as the published MRA defines it)."""
    if gt == 0:
        return math.inf
    return abs(pred - gt) / abs(gt)


def mean_relative_accuracy(
    pred: float | None, gt: float, thresholds: Sequence[float] = MRA_THRESHOLDS
) -> float:
    """MRA (VSI-Bench): mean over C of 1[relative_error <= 1 - C]. No prediction scores 0.

    >>> mean_relative_accuracy(12, 10)  # error 0.2 passes C = 0.50 ... 0.80, fails 0.85 ... 0.95
    0.7
    """
    if pred is None or not math.isfinite(pred):
        return 0.0
    error = relative_error(pred, gt)
    return sum(1 for c in thresholds if error <= (1 - c) + MRA_TOLERANCE) / len(thresholds)


def comparable_values(pred: Quantity, gt: Quantity) -> tuple[float, float, str] | str:
    """Bring two quantities to one unit (cm or cm²) for MRA, or say why they cannot be compared.

    A prediction without a unit borrows the ground truth's (as SpatialScore's evaluator does); a
    prediction unit is ignored, with a note, when the ground truth has none.
    """
    if pred.unit is None or gt.unit is None:
        note = (
            "no units"
            if pred.unit == gt.unit
            else (
                f"prediction borrows the ground truth unit {gt.unit}"
                if pred.unit is None
                else f"ground truth has no unit; prediction unit {pred.unit} ignored"
            )
        )
        return pred.value, gt.value, note
    if unit_dimension(pred.unit) != unit_dimension(gt.unit):
        return f"cannot compare {pred.unit} with {gt.unit}"
    return to_centimetres(pred), to_centimetres(gt), f"{pred.unit} and {gt.unit} compared in cm"


def mra_with_units(pred: Quantity | None, gt: Quantity) -> tuple[float, str]:
    """MRA after unit conversion, with an explanation of the conversion."""
    if pred is None:
        return 0.0, "no prediction"
    values = comparable_values(pred, gt)
    if isinstance(values, str):
        return 0.0, values
    p, g, note = values
    return mean_relative_accuracy(p, g), f"{note}; relative error {relative_error(p, g):.4g}"


# --------------------------------------------------------------------------------------------------------
# Boxes


def xywh_to_xyxy(box: Sequence[float]) -> Box:
    """``[x, y, w, h]`` -> ``(x1, y1, x2, y2)``."""
    x, y, w, h = box
    return (x, y, x + w, y + h)


def normalize_box(box: Sequence[float], width: float, height: float) -> Box:
    """Pixel ``(x1, y1, x2, y2)`` -> 0-1 coordinates."""
    return (box[0] / width, box[1] / height, box[2] / width, box[3] / height)


def box_area(box: Sequence[float]) -> float:
    """Area, 0 for degenerate boxes."""
    return max(0.0, box[2] - box[0]) * max(0.0, box[3] - box[1])


def _overlap(a: Sequence[float], b: Sequence[float]) -> tuple[float, float]:
    """(intersection, union) areas of two xyxy boxes."""
    width = min(a[2], b[2]) - max(a[0], b[0])
    height = min(a[3], b[3]) - max(a[1], b[1])
    inter = width * height if width > 0 and height > 0 else 0.0
    return inter, box_area(a) + box_area(b) - inter


def iou(a: Sequence[float], b: Sequence[float]) -> float:
    """Intersection over union of two xyxy boxes; 0 when the union is empty."""
    inter, union = _overlap(a, b)
    return inter / union if union > 0 else 0.0


def order_corners(box: Sequence[float]) -> Box:
    """``(min x, min y, max x, max y)``: a box written with swapped corners, read as the box it spans."""
    return (min(box[0], box[2]), min(box[1], box[3]), max(box[0], box[2]), max(box[1], box[3]))


def giou(a: Sequence[float], b: Sequence[float], *, sort_corners: bool = False) -> float:
    """Generalised IoU (Rezatofighi et al. 2019): IoU - |C \\ (A u B)| / |C|, C the enclosing box. In [-1, 1].

    Args:
        sort_corners: read each box as the box its corners span (``(x2, y2, x1, y1)`` = ``(x1, y1, x2, y2)``),
            as MultihopSpatial's training reward does; by default a box with x2 < x1 or y2 < y1 is empty
            (area 0), which is what the project's own scoring wants from a malformed box.
    """
    if sort_corners:
        a, b = order_corners(a), order_corners(b)
    inter, union = _overlap(a, b)
    hull = (max(a[2], b[2]) - min(a[0], b[0])) * (max(a[3], b[3]) - min(a[1], b[1]))
    overlap = inter / union if union > 0 else 0.0
    if hull <= 0:
        # Both boxes degenerate on one line or point: no enclosing area, GIoU falls back to IoU (0 here).
        return overlap
    return overlap - (hull - union) / hull


def bbox_reward(giou_value: float) -> float:
    """MultihopSpatial's GRPO box reward R_bbox = (GIoU + 1) / 2, in [0, 1]."""
    return (giou_value + 1.0) / 2.0


def hit_at_iou(correct: bool, iou_value: float | None, threshold: float = 0.5) -> bool:
    """Acc@IoU for one sample: the answer is right AND the box overlaps the truth by >= threshold."""
    return bool(correct) and iou_value is not None and iou_value >= threshold


# --------------------------------------------------------------------------------------------------------
# Orientation and sets


def gaussian_kernel_score(pred: float, gt: float, sigma: float, period: float | None = None) -> float:
    """S = exp(-(pred - gt)^2 / (2 sigma^2)) (SpatialTree Eq. 7; sigma is the annotation's uncertainty).

    Args:
        period: when given (e.g. 360 for azimuth), the difference is wrapped to [-period/2, period/2]; the
            paper's formula uses the raw difference, which is the default.
    """
    if not sigma > 0:
        raise ValueError(f"sigma must be > 0, got {sigma}")
    diff = pred - gt
    if period is not None:
        diff = (diff + period / 2) % period - period / 2
    return math.exp(-(diff**2) / (2 * sigma**2))


def orientation_score(
    pred: Mapping[str, float], gt: Mapping[str, float], sigma: Mapping[str, float]
) -> float:
    """Mean Gaussian-kernel score over the ground truth's parameters (pitch/roll/vFOV or azimuth/polar/rotation);
    a parameter the prediction lacks scores 0."""
    scores = [
        gaussian_kernel_score(pred[k], v, sigma[k]) if _is_number(pred.get(k)) else 0.0 for k, v in gt.items()
    ]
    return sum(scores) / len(scores)


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def set_exact_match(pred: Iterable[str], gt: Iterable[str]) -> bool:
    """All and only the correct options were chosen (SpaCE-10's multiple-answer rule)."""
    return set(pred) == set(gt)
