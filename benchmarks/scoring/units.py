"""Units of length and area, and conversion to centimetres (the unit SpatialScore's MRA compares in).

Factors follow the SpatialScore evaluator (m 100, cm 1, mm 0.1, in 2.54, ft 30.48) plus km and yd.
Areas ("square meters", "m²") convert with the squared factor, so 2 m² and 20000 cm² compare equal.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

CM_PER_UNIT: dict[str, float] = {
    "m": 100.0,
    "cm": 1.0,
    "mm": 0.1,
    "km": 100000.0,
    "in": 2.54,
    "ft": 30.48,
    "yd": 91.44,
}

_LENGTH_ALIASES: dict[str, str] = {
    "m": "m",
    "meter": "m",
    "meters": "m",
    "metre": "m",
    "metres": "m",
    "cm": "cm",
    "centimeter": "cm",
    "centimeters": "cm",
    "centimetre": "cm",
    "centimetres": "cm",
    "mm": "mm",
    "millimeter": "mm",
    "millimeters": "mm",
    "millimetre": "mm",
    "millimetres": "mm",
    "km": "km",
    "kilometer": "km",
    "kilometers": "km",
    "kilometre": "km",
    "kilometres": "km",
    "in": "in",
    "inch": "in",
    "inches": "in",
    "″": "in",
    "ft": "ft",
    "foot": "ft",
    "feet": "ft",
    "′": "ft",
    "yd": "yd",
    "yard": "yd",
    "yards": "yd",
}

# Longest spellings first so "meters" wins over "m". Plain quote marks are not units: models quote
# numbers ('3'), so only the prime signs ′ ″ stand for feet and inches.
_LENGTH_WORDS = sorted((a for a in _LENGTH_ALIASES if a.isalpha()), key=len, reverse=True)
_LENGTH_RE = r"(?:" + "|".join(_LENGTH_WORDS) + r")"
UNIT_AFTER_NUMBER = re.compile(
    r"^\s*(?P<area>(?:sq(?:uare)?\.?\s+)?)(?P<unit>"
    + _LENGTH_RE
    + r"|[″′])(?P<power>\^2|²|2(?![\d.]))?(?![A-Za-z])",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Quantity:
    """A number with an optional canonical unit: ``"m"``, ``"cm"``... or an area such as ``"m2"``."""

    value: float
    unit: str | None = None

    def to_dict(self) -> dict[str, float | str | None]:
        """JSON-safe form for per-sample records."""
        return {"value": self.value, "unit": self.unit}


def canonical_length_unit(word: str) -> str | None:
    """``"Meters"`` -> ``"m"``; ``None`` when the word is not a length unit."""
    return _LENGTH_ALIASES.get(word.strip().lower())


def read_unit(text_after_number: str) -> tuple[str | None, int]:
    """The unit written right after a number, and how many characters it spans (0 when none)."""
    match = UNIT_AFTER_NUMBER.match(text_after_number)
    if not match:
        return None, 0
    unit = canonical_length_unit(match.group("unit"))
    if unit is None:
        return None, 0
    is_area = bool(match.group("area").strip()) or bool(match.group("power"))
    if unit == "in" and not is_area and not _inch_is_unit(text_after_number[match.end() :]):
        return None, 0
    return (unit + "2" if is_area else unit), match.end()


def _inch_is_unit(rest: str) -> bool:
    """ "3 in" is inches only at the end of a clause, not in "3 in the room"."""
    return re.match(r"^\s*(?:$|[.,;:!?)\]}])", rest) is not None


def unit_dimension(unit: str | None) -> str | None:
    """``"length"``, ``"area"`` or ``None`` (no unit)."""
    if unit is None:
        return None
    return "area" if unit.endswith("2") else "length"


def to_centimetres(quantity: Quantity) -> float:
    """Length in cm, or area in cm²; a quantity without unit is returned unchanged."""
    if quantity.unit is None:
        return quantity.value
    if quantity.unit.endswith("2"):
        return quantity.value * CM_PER_UNIT[quantity.unit[:-1]] ** 2
    return quantity.value * CM_PER_UNIT[quantity.unit]


_QUESTION_UNIT = re.compile(
    r"\b(?:in|measured in|units? of|answer in)\s+(?P<area>square\s+)?(?P<unit>" + _LENGTH_RE + r")\b",
    re.IGNORECASE,
)


def unit_stated_in_question(question: str) -> str | None:
    """The unit a question asks for ("... (in meters)?" -> ``"m"``), or ``None``.

    VSI-Bench-style items store the ground truth as a bare number and say the unit only in the question.
    """
    matches = list(_QUESTION_UNIT.finditer(question))
    if not matches:
        return None
    last = matches[-1]
    unit = canonical_length_unit(last.group("unit"))
    if unit is None:
        return None
    return unit + "2" if last.group("area") else unit
