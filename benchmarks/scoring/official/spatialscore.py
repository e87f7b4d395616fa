"""SpatialScore's public scorer (``test_qwen.py`` with the parsers of ``utils/util.py``), reproduced.

Behaviours that differ from the project's parsers (all deliberate here):

- Option letters: after a few structured patterns, the first letter a-f anywhere in the text is taken, so
  "Left" reads as E. A response with no a-f letter is compared as its cleaned text.
- Yes/no: "yes"-like words (yes, yeah, yep, correct, true, right, agree) are checked before "no"-like
  words, so "No, that is not correct." reads as Yes.
- Open-ended: a ground truth containing any unit substring (even the single letter "m") is compared with
  unit conversion to cm and counts as correct when max(pred/gt, gt/pred) < 2. Otherwise VSI-Bench items
  ignore units and use MRA on bare numbers ("0.4 m" against 40 scores 0), RealWorldQA compares strings
  exactly, and other sources need the exact number.
- MRA uses ``numpy.linspace`` thresholds and compares in floating point, so an error exactly on a
  threshold can miss it (1 - 0.8 < 0.2 in floating point); a prediction of 0 scores 1 only when the truth is 0.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

import numpy as np

_TAGS = re.compile(r"</?(?:CONCLUSION|conclusion|ANSWER|answer|ASSISTANT|assistant)>")
_ASSISTANT_LETTER = re.compile(r"ASSISTANT:\s*\(?([A-Fa-f])\)?")
# The scorer's first pattern is r"<conclusion>\s*\(([A-Fa-f])\).*?</conclusion>" (one line after the letter);
# _conclusion_letter finds its match by position (the lazy scan is quadratic over many unclosed tags).
_CONCLUSION_LETTER = re.compile(r"<conclusion>\s*\(([A-Fa-f])\)", re.IGNORECASE)
_CONCLUSION_CLOSE = re.compile(r"</conclusion>", re.IGNORECASE)
_CONCLUSION_BARE = re.compile(r"<conclusion>\s*\(?([A-Fa-f])\)?\.?\s*</conclusion>", re.IGNORECASE)
_OPTION_PATTERNS = (
    re.compile(r"(?i)(?:answer|option)[:\s]*\(?([A-Fa-f])\)?\.?"),
    re.compile(r"(?i)(?:^|\s)\(?([A-Fa-f])\)\.?(?:$|\s|\.)"),
    re.compile(r"(?i)(?:^|\s)([A-Fa-f])\.?(?:$|\s|\.|,)"),
    re.compile(r"(?i)(?:^|\s)([A-Fa-f])\.(?:$|\s)"),
)
_ANY_LETTER = re.compile(r"[A-Fa-f]")
_YES_WORDS = tuple(
    re.compile(p)
    for p in (r"\byes\b", r"\byeah\b", r"\byep\b", r"\bcorrect\b", r"\btrue\b", r"\bright\b", r"\bagreed?\b")
)
_NO_WORDS = tuple(
    re.compile(p)
    for p in (
        r"\bno\b",
        r"\bnope\b",
        r"\bnot\b",
        r"\bfalse\b",
        r"\bwrong\b",
        r"\bincorrect\b",
        r"\bdisagreed?\b",
    )
)
# Order matters: the scorer tests words in this order, so "seventeen" starts with "seven" and reads as 7.
_NUMBER_WORDS = (
    ("zero", "0"),
    ("one", "1"),
    ("two", "2"),
    ("three", "3"),
    ("four", "4"),
    ("five", "5"),
    ("six", "6"),
    ("seven", "7"),
    ("eight", "8"),
    ("nine", "9"),
    ("ten", "10"),
    ("eleven", "11"),
    ("twelve", "12"),
    ("thirteen", "13"),
    ("fourteen", "14"),
    ("fifteen", "15"),
    ("sixteen", "16"),
    ("seventeen", "17"),
    ("eighteen", "18"),
    ("nineteen", "19"),
    ("twenty", "20"),
    ("first", "1"),
    ("second", "2"),
    ("third", "3"),
    ("fourth", "4"),
    ("fifth", "5"),
    ("sixth", "6"),
    ("seventh", "7"),
    ("eighth", "8"),
    ("ninth", "9"),
    ("tenth", "10"),
)
#: Substrings of a ground truth that switch the scorer to unit comparison ("m" matches any word with an m).
UNIT_TRIGGERS = (
    "meter",
    "meters",
    "m",
    "cm",
    "centimeter",
    "centimeters",
    "km",
    "kilometer",
    "kilometers",
    "inch",
    "inches",
    "ft",
    "foot",
    "feet",
)
_CM_FACTORS = {
    "m": 100,
    "meter": 100,
    "meters": 100,
    "metre": 100,
    "metres": 100,
    "cm": 1,
    "centimeter": 1,
    "centimeters": 1,
    "mm": 0.1,
    "ft": 30.48,
    "foot": 30.48,
    "feet": 30.48,
    "in": 2.54,
    "inch": 2.54,
    "inches": 2.54,
}
_VSI_SOURCE = "VSI-Bench_8"
_THRESHOLDS = np.linspace(0.5, 0.95, int((0.95 - 0.5) / 0.05 + 2))  # as the scorer builds them


def _without_tags(text: str) -> str:
    return _TAGS.sub("", text).strip()


def extract_option(text: str) -> str:
    """The option letter the public scorer reads (upper case), or the cleaned text when it finds none."""
    text = text.strip()
    if re.match(r"^[A-Fa-f]\.?$", text):
        return text[0].upper()
    assistant = _ASSISTANT_LETTER.search(text)
    if assistant:
        return assistant.group(1).upper()
    concluded = _conclusion_letter(text)
    if concluded:
        return concluded.upper()
    for pattern in (_CONCLUSION_BARE, *_OPTION_PATTERNS):
        match = pattern.search(text)
        if match:
            return match.group(1).upper()
    anywhere = _ANY_LETTER.search(text)
    return anywhere.group(0).upper() if anywhere else _without_tags(text)


def _conclusion_letter(text: str) -> str | None:
    """The letter of the first ``<conclusion>(x)`` with a ``</conclusion>`` later on the same line."""
    closes = [m.start() for m in _CONCLUSION_CLOSE.finditer(text)]
    newlines = [m.start() for m in re.finditer("\n", text)]
    for match in _CONCLUSION_LETTER.finditer(text):
        k = bisect.bisect_left(closes, match.end())
        if k == len(closes):
            return None  # no closing tag after this one, hence after none of the later ones
        n = bisect.bisect_left(newlines, match.end())
        if n == len(newlines) or newlines[n] >= closes[k]:  # no line break before the closing tag
            return match.group(1)
    return None


def extract_yes_no(text: str) -> str:
    """``"Yes"``/``"No"`` as the public scorer reads it (yes-words win), or the cleaned text."""
    text = text.strip()
    if text.lower() in ("yes", "no"):
        return text.capitalize()
    assistant = _ASSISTANT_LETTER.search(text)
    if assistant:
        return assistant.group(1).upper()
    clean = _without_tags(text)
    tagged = re.search(r"<conclusion>\s*(yes|no)\s*</conclusion>", text, re.IGNORECASE)
    if tagged:
        return tagged.group(1).capitalize()
    lower = clean.lower()
    if any(p.search(lower) for p in _YES_WORDS):
        return "Yes"
    if any(p.search(lower) for p in _NO_WORDS):
        return "No"
    return clean


def extract_number(text: str) -> str:
    """The number string the public scorer reads (digits first, then number words), or the cleaned text."""
    text = text.strip()
    if text.isdigit():
        return text
    assistant = _ASSISTANT_LETTER.search(text)
    if assistant:
        return assistant.group(1).upper()
    clean = _without_tags(text)
    lower = clean.lower()
    tagged = re.search(r"<conclusion>\s*(\d+)\s*</conclusion>", text, re.IGNORECASE)
    if tagged:
        return tagged.group(1)
    digits = re.search(r"\d+(?:\.\d+)?", lower)
    if digits:
        return digits.group(0)
    phrases = ("there are {}", "there is {}", "shows {}")
    for word, digit in _NUMBER_WORDS:
        if (
            lower.startswith(word)
            or f" {word} " in lower
            or lower.endswith(f" {word}")
            or any(p.format(word) in lower for p in phrases)
        ):
            return digit
    tokens = lower.split()
    for word, digit in _NUMBER_WORDS:
        if word in tokens:
            return digit
    return clean


def _first_group(patterns: tuple[tuple[str, int], ...], text: str) -> re.Match[str] | None:
    # Every match ends at a "}" or later; searching only up to the last "}" stops r"\\scalar\{([^}]+)\}" from
    # scanning to the end from every unclosed tag (quadratic). The other patterns search the whole text.
    braces_end = text.rfind("}") + 1
    for pattern, flags in patterns:
        compiled = re.compile(pattern, flags)
        match = compiled.search(text, 0, braces_end) if pattern.endswith("\\}") else compiled.search(text)
        if match:
            return match
    return None


# The scorer's patterns, with its number r"\d+\.?\d*" written r"\d+(?:\.\d*)?" (the same strings, without
# splitting a digit run two ways) and, where a number is not anchored by a word, started only where a digit
# run begins "(?<!\d)" (a start inside a run finds nothing the run's own start does not find first). Both keep
# the backtracking linear on long runs of digits; the matches are the scorer's.
_NUM = r"\d+(?:\.\d*)?"
_VALUE_PATTERNS = (
    (r"\\scalar\{([^}]+)\}", 0),
    (r"\*\*([\d.]+)\s*(?:[a-zA-Z]+)\*\*", 0),
    (r"(?:approximately|about|roughly)\s*\**([\d.]+)\s*(?:[a-zA-Z]+)\**", re.IGNORECASE),
    (rf"(?<!\d)({_NUM})\s*(?:[a-zA-Z]+)", 0),
)
_UNIT_PATTERNS = (
    (r"\\distance_unit\{([^}]+)\}", 0),
    (rf"\*\*{_NUM}\s*([a-zA-Z]+)\*\*", 0),
    (rf"(?:approximately|about|roughly)\s*\**{_NUM}\s*([a-zA-Z]+)\**", re.IGNORECASE),
    (rf"(?<!\d){_NUM}\s*([a-zA-Z]+)", 0),
)


def numeric_with_unit_correct(pred: str, gt: str, tolerance: float = 2.0) -> tuple[bool, str]:
    """The public unit comparison: both converted to cm (unknown units count as cm), correct when
    max(pred/gt, gt/pred) < tolerance. Returns (correct, explanation)."""
    pred = _without_tags(pred)
    value_match, unit_match = _first_group(_VALUE_PATTERNS, pred), _first_group(_UNIT_PATTERNS, pred)
    numbers = re.findall(r"\d+\.?\d*", value_match.group(1)) if value_match else []
    if not numbers or unit_match is None:
        return False, "no number followed by a unit in the response"
    value, unit = float(numbers[0]), unit_match.group(1).lower().strip()
    gt_match = re.search(rf"(?<!\d)({_NUM})\s*([a-zA-Z]+)", gt)
    if gt_match is None:
        return False, "ground truth has no number followed by a unit"
    gt_value, gt_unit = float(gt_match.group(1)), gt_match.group(2).lower().strip()
    if value == 0 or gt_value == 0:
        return value == gt_value == 0, "zero value: correct only if both are zero"
    pred_cm, gt_cm = value * _CM_FACTORS.get(unit, 1), gt_value * _CM_FACTORS.get(gt_unit, 1)
    ratio = max(pred_cm / gt_cm, gt_cm / pred_cm)
    return (
        ratio < tolerance,
        f"{value} {unit} vs {gt_value} {gt_unit}: ratio {ratio:.4g} (correct below {tolerance})",
    )


def mean_relative_accuracy(
    pred: float, gt: float, start: float = 0.5, end: float = 0.95, interval: float = 0.05
) -> float:
    """The public MRA: ``numpy.linspace`` thresholds, floating-point comparison, zero truth -> inf error."""
    thresholds = (
        _THRESHOLDS
        if (start, end, interval) == (0.5, 0.95, 0.05)
        else np.linspace(start, end, int((end - start) / interval + 2))
    )
    error = abs(pred - gt) / gt if gt != 0 else float("inf")
    return float(np.mean(error <= 1 - thresholds))


@dataclass(frozen=True)
class RepoScore:
    """One item scored the public way: score in [0, 1], what was read, and which rule applied."""

    score: float
    read: str
    rule: str
    explanation: str


def score_item(question_type: str, source: str, response: str, gt: str) -> RepoScore:
    """Score one SpatialScore item exactly as ``test_qwen.py`` does.

    Raises:
        ValueError: for an open-ended numeric item whose ground truth has no number (the script crashes).
    """
    kind = question_type.lower()
    if kind == "multi-choice":
        pred, key = extract_option(response), extract_option(gt)
        return RepoScore(
            float(pred.upper() == key.upper()), pred, "option_letter", f"read {pred!r}, key {key!r}"
        )
    if kind == "judgment":
        pred, key = extract_yes_no(response), extract_yes_no(gt)
        return RepoScore(float(pred.lower() == key.lower()), pred, "yes_no", f"read {pred!r}, key {key!r}")
    return _score_open(source, response, gt)


def _score_open(source: str, response: str, gt: str) -> RepoScore:
    if any(unit in gt.lower() for unit in UNIT_TRIGGERS):
        correct, why = numeric_with_unit_correct(response, gt)
        return RepoScore(float(correct), response, "unit_ratio", why)
    if source == "RealWorldQA":
        # The script's responses are stripped by the generation code before this comparison.
        return RepoScore(
            float(response.strip().lower() == gt.lower()),
            response.strip(),
            "exact_text",
            "exact string match",
        )
    try:
        pred = float(extract_number(response))
    except ValueError:
        pred = 0.0  # the script's fallback for an unreadable number
    gt_value = float(extract_number(gt))  # raises like the script when the truth has no number
    if source == _VSI_SOURCE:
        if pred == 0:
            return RepoScore(
                float(gt_value == 0), str(pred), "vsi_mra", "prediction 0: scores 1 only if the truth is 0"
            )
        return RepoScore(
            mean_relative_accuracy(pred, gt_value),
            str(pred),
            "vsi_mra",
            f"MRA of {pred} against {gt_value} (units ignored)",
        )
    return RepoScore(float(pred == gt_value), str(pred), "exact_number", f"{pred} == {gt_value}")
