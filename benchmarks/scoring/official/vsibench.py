"""lmms-eval's ``vsibench`` / ``vsibench_debiased`` scorer, reproduced (``lmms_eval/tasks/vsibench/utils.py``).

- Multiple choice (MCA types): the first space-separated token of the response, trailing dots removed and
  white space stripped, must equal the ground-truth letter ignoring case ("A." and "a" match "A";
  "The answer is A" and "(A)" do not).
- Numerical answers (NA types): the first number in the response, digits or English number words,
  whichever starts first ("three" = 3, "twenty-one" = 21, "three hundred and twenty" = 320; consecutive
  number words separated by anything but letters, e.g. "three, four", are summed into one number); units
  are ignored. A number beyond the float range (a 400-digit run, "hundred hundred ...") is read as no
  number (``number_out_of_range``), where upstream reads the digits as inf (scoring 0 all the same) and
  raises OverflowError on the words. Score = mean over C in ``numpy.linspace(0.5, 0.95, 10)`` of ``|pred - gt| / gt <= 1 - C``,
  in floating point without a tolerance (an error of exactly 0.2 fails C = 0.80, whose 1 - C is
  0.19999999999999996). No number scores 0. A ground truth of 0 raises ZeroDivisionError upstream (the
  run stops); here it scores 0 with the problem recorded.
- Aggregation: the mean of each question type; the three ``object_rel_direction`` levels averaged into
  one; overall = the mean of the resulting eight sub-scores (types, not items, weigh equally). Upstream
  raises KeyError when one rel-direction level is absent (a partial run); here the present levels are
  averaged and the gap is reported.
"""

from __future__ import annotations

import math
import re
import sys
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TypedDict

import numpy as np

MCA_QUESTION_TYPES = (
    "object_rel_direction_easy",
    "object_rel_direction_medium",
    "object_rel_direction_hard",
    "object_rel_distance",
    "route_planning",
    "obj_appearance_order",
)
NA_QUESTION_TYPES = (
    "object_abs_distance",
    "object_counting",
    "object_size_estimation",
    "room_size_estimation",
)
DIRECTION_LEVELS = MCA_QUESTION_TYPES[:3]
#: The eight reported sub-scores, in lmms-eval's metric-list order, with their metric suffix.
SUB_SCORES = (
    ("obj_appearance_order", "accuracy"),
    ("object_abs_distance", "MRA:.5:.95:.05"),
    ("object_counting", "MRA:.5:.95:.05"),
    ("object_rel_distance", "accuracy"),
    ("object_size_estimation", "MRA:.5:.95:.05"),
    ("room_size_estimation", "MRA:.5:.95:.05"),
    ("route_planning", "accuracy"),
    ("object_rel_direction", "accuracy"),
)

_NUMBER_WORDS = {
    **{
        w: i
        for i, w in enumerate(
            [
                "zero",
                "one",
                "two",
                "three",
                "four",
                "five",
                "six",
                "seven",
                "eight",
                "nine",
                "ten",
                "eleven",
                "twelve",
                "thirteen",
                "fourteen",
                "fifteen",
                "sixteen",
                "seventeen",
                "eighteen",
                "nineteen",
            ]
        )
    },
    "twenty": 20,
    "thirty": 30,
    "forty": 40,
    "fifty": 50,
    "sixty": 60,
    "seventy": 70,
    "eighty": 80,
    "ninety": 90,
    "hundred": 100,
    "thousand": 1000,
}
_DIGITS = re.compile(r"-?\d+(?:\.\d+)?")
_LARGEST_FLOAT = int(sys.float_info.max)
_WORD = re.compile(r"[a-z]+")
#: ``numpy.linspace(0.5, 0.95, int((0.95 - 0.5) / 0.05 + 2))``: the upstream thresholds, bit for bit.
THRESHOLDS = np.linspace(0.5, 0.95, int((0.95 - 0.5) / 0.05 + 2))


def fuzzy_matching(prediction: str) -> str:
    """The first space-separated token, trailing dots removed, stripped."""
    return prediction.split(" ")[0].rstrip(".").strip()


def mca_score(prediction: str, ground_truth: str) -> float:
    """1.0 when the first token equals the ground-truth letter (case-insensitive), else 0.0."""
    return 1.0 if fuzzy_matching(prediction).lower() == str(ground_truth).lower() else 0.0


def _word_run(text: str) -> tuple[int | None, list[str]]:
    """Where the first number word starts and the run of number words from there ("and" skipped; any other
    word ends the run; characters between words are not looked at)."""
    start: int | None = None
    run: list[str] = []
    for match in _WORD.finditer(text):
        token = match.group(0)
        if start is None:
            if token in _NUMBER_WORDS:
                start, run = match.start(), [token]
        elif token != "and":
            if token not in _NUMBER_WORDS:
                break
            run.append(token)
    return start, run


def _words_value(run: list[str]) -> float:
    """The run's value; inf once it passes the largest float ("hundred" x 200 is 10**400: the integer is not
    built further, and ``float()`` of it would raise OverflowError)."""
    total, current = 0, 0
    for token in run:
        value = _NUMBER_WORDS[token]
        if value == 100:
            current = max(current, 1) * 100
        elif value == 1000:
            total += max(current, 1) * 1000
            current = 0
        else:
            current += value
        if total + current > _LARGEST_FLOAT:
            return math.inf
    return float(total + current)


def read_number(text: str | None) -> tuple[float | None, str]:
    """The first number of a response as upstream reads it (see the module docstring), and how: the value
    with ``first_number``, or ``None`` with ``no_number`` or ``number_out_of_range`` (beyond the float range)."""
    lowered = "" if text is None else str(text).strip().lower()
    digits = _DIGITS.search(lowered)
    start, run = _word_run(lowered)
    if digits is not None and (start is None or digits.start() < start):
        value = float(digits.group(0))  # a run past the float range reads inf, never raises
    elif start is not None:
        value = _words_value(run)
    else:
        return None, "no_number"
    return (value, "first_number") if math.isfinite(value) else (None, "number_out_of_range")


def extract_number(text: str | None) -> float | None:
    """The first number of a response as upstream reads it, or ``None`` (none, or beyond the float range)."""
    return read_number(text)[0]


def to_float(value: object) -> float | None:
    """``float(value)``, or ``None`` when it is not a number."""
    try:
        return float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError, OverflowError):  # OverflowError: an int beyond the float range
        return None


@dataclass(frozen=True)
class NumericScore:
    """One numerical answer as upstream scores it."""

    score: float
    prediction: float | None
    problem: str | None = None
    read: str = "first_number"  # how the prediction was read: first_number, no_number, number_out_of_range


def na_score(prediction: str, ground_truth: object) -> NumericScore:
    """MRA of the first number against the ground truth, as upstream computes it."""
    (pred, read), target = read_number(prediction), to_float(ground_truth)
    if pred is None or target is None:  # upstream: TypeError -> the worst case, 0
        problem = None if target is not None else f"ground truth {ground_truth!r} is not a number"
        return NumericScore(0.0, pred, problem, read)
    if target == 0:
        return NumericScore(
            0.0,
            pred,
            "ground truth 0: upstream divides by zero (ZeroDivisionError stops its run); scored 0 here",
            read,
        )
    error = abs(pred - target) / target
    return NumericScore(float(np.mean(error <= 1 - THRESHOLDS)), pred, None, read)


class Aggregate(TypedDict):
    """:func:`aggregate`'s result."""

    sub_scores: dict[str, float]
    overall: float | None
    missing: list[str]


def aggregate(scores: Iterable[tuple[str, float]]) -> Aggregate:
    """Sub-scores and overall (fractions 0-1, rounded to 6 places as lmms-eval reports them) from
    (question type, item score) pairs; ``missing`` lists reported sub-scores with no item."""
    by_type: dict[str, list[float]] = defaultdict(list)
    for question_type, value in scores:
        by_type[question_type].append(value)
    means = {t: sum(v) / len(v) for t, v in by_type.items()}
    directions = [means.pop(level) for level in DIRECTION_LEVELS if level in means]
    if directions:
        means["object_rel_direction"] = sum(directions) / len(directions)
    present = [name for name, _ in SUB_SCORES if name in means]
    sub = {name: round(means[name], 6) for name in present}
    overall = sum(means[name] for name in present) / len(present) if present else math.nan
    missing = [name for name, _ in SUB_SCORES if name not in means]
    missing += [
        f"{level} (averaged into object_rel_direction)"
        for level in DIRECTION_LEVELS
        if directions and level not in by_type
    ]
    return {
        "sub_scores": sub,
        "overall": None if math.isnan(overall) else round(overall, 6),
        "missing": missing,
    }


def metric_names() -> Mapping[str, str]:
    """lmms-eval's printed key for each sub-score (``object_counting_MRA:.5:.95:.05``...)."""
    return {name: f"{name}_{metric}" for name, metric in SUB_SCORES}
