"""lmms-eval's ``spatialtreebench`` scorers and aggregation, reproduced.

Quirks kept here (the project's SpatialTree mode differs on each):

- Multiple choice: a list of case-sensitive English answer phrases, then the letters after the last
  "Answer:", then "(X)", "X ", "X." tokens, then option texts; with nothing found it draws a random letter.
  The draw here comes from a generator seeded by the item id, so a run is repeatable, and the parse is
  flagged ``random_fallback``. One of the phrases is two patterns fused by a missing comma ("Consequently,
  the correct option is X" directly followed by "The correct option is X"), kept as is.
- MRA: commas are deleted first (so "1,200" is 1200 but "(3, 4)" is no longer a coordinate pair), the first
  number is taken, thresholds come from ``numpy.linspace``; no number or a zero truth scores 0.
- Gravity: roll, pitch and vFOV from a JSON block; any missing field or unparsable JSON scores 0 for the
  item; sigma <= 0 scores 0 for that field.
- Yes/no "judge" items: the later of the last "yes" and last "no" substrings wins ("no" inside "know").
- Aggregation: items pool by the name of their deepest tag, spaces removed, and every tree leaf of that
  name takes the pool's mean, so a tag shared by two levels lands in both; a leaf without items counts 0.
"""

from __future__ import annotations

import base64
import io
import json
import math
import random
import re
import zlib
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from benchmarks.scoring.aggregate import WeightNode, aggregate_tree

# The phrases the scorer tries first, in its order. The fused entry reproduces a missing comma upstream.
_ANSWER_PHRASES = tuple(
    re.compile(p)
    for p in (
        r"The correct option is ([A-Z])",
        r"The answer is ([A-Z])",
        r"The correct answer is ([A-Z])",
        r"Option ([A-Z]) is correct",
        r"The right choice is ([A-Z])",
        r"Thus, the answer is ([A-Z])",
        r"Therefore, the correct option is ([A-Z])",
        r"The answer should be ([A-Z])",
        r"Hence, the correct answer is ([A-Z])",
        r"The correct choice is ([A-Z])",
        r"Accordingly, the answer is ([A-Z])",
        r"Consequently, the correct option is ([A-Z])" r"The correct option is ([A-Z])",
        r"The answer is ([A-Z])",
        r"The correct answer is ([A-Z])",
        r"Option ([A-Z]) is correct",
        r"Answer: ([A-Z])",
        r"Answer ([A-Z])",
        r"Choice ([A-Z])",
        r"Select ([A-Z])",
        r"([A-Z]) is correct",
        r"([A-Z]) is the answer",
        r"([A-Z]) is the correct option",
        r"Correct: ([A-Z])",
        r"Right: ([A-Z])",
        r"<\|begin_of_box\|>([A-Z])<\|end_of_box\|>",
    )
)


def item_rng(item_id: str) -> random.Random:
    """A generator seeded by the item id (crc32), for the scorer's random-letter fallback."""
    return random.Random(zlib.crc32(item_id.encode("utf-8")))


def parse_multiple_choice(response: str, options: Sequence[str], seed_key: str) -> tuple[str, str]:
    """The letter lmms-eval's multiple-choice scorer reads, and the rule that produced it.

    ``seed_key`` (the item id) seeds the random letter drawn when nothing is found.
    """
    letters = [chr(ord("A") + i) for i in range(len(options))]
    texts = dict(zip(letters, options))
    for pattern in _ANSWER_PHRASES:
        match = pattern.search(response)
        if match and match.group(1) in letters:
            return match.group(1), "answer_phrase"
    last = response.rfind("Answer:")
    if last != -1:
        rest = response[last + len("Answer:") :].strip()
        inside = [c for c in letters if c in rest]
        if len(inside) == 1:
            return inside[0], "last_answer_colon"
    return _by_tokens(response, letters, texts, seed_key)


def _by_tokens(response: str, letters: list[str], texts: Mapping[str, str], seed_key: str) -> tuple[str, str]:
    for char in (",", ".", "!", "?", ";", ":", "'"):
        response = response.strip(char)
    padded = f" {response} "
    candidates = [c for c in letters if f"({c})" in padded]
    bracketed, by_text = bool(candidates), False
    if not candidates:
        candidates = [c for c in letters if f"{c} " in padded]
    if not candidates:
        candidates = [c for c in letters if f"{c}." in padded]
    if not candidates and len(padded.split()) > 5:
        candidates = [c for c in letters if str(texts[c]).lower() in padded.lower()]
        by_text = bool(candidates)
    if not candidates:
        return item_rng(seed_key).choice(letters), "random_fallback"
    if len(candidates) == 1:
        return candidates[0], "token"
    if by_text:
        positions = [padded.lower().rfind(str(texts[c]).lower()) for c in candidates]
    else:
        positions = [padded.rfind(f"({c})" if bracketed else f" {c} ") for c in candidates]
    return candidates[int(np.argmax(positions))], "last_of_several"


# The scorer's number is r"-?\d+\.?\d*"; written r"-?\d+(?:\.\d*)?" (the same strings) so that a digit run is
# not split two ways by backtracking (quadratic on a long run of digits).
_NUM = r"-?\d+(?:\.\d*)?"
_COORDINATE_PATTERNS = tuple(
    re.compile(p.replace("N", _NUM))
    for p in (r"\(\s*N\s*,\s*N\s*\)", r"\[\s*N\s*,\s*N\s*\]", r"\{\s*N\s*,\s*N\s*\}", r"\bN\s*,\s*N\b")
)
_FIRST_NUMBER = re.compile(_NUM)


# The scorer's thresholds: numpy.linspace(0.5, 0.95, int((0.95 - 0.5) / 0.05 + 2)), floats as numpy makes
# them.
_THRESHOLDS = np.linspace(0.5, 0.95, int((0.95 - 0.5) / 0.05 + 2))


def find_number(response: str) -> str:
    """The number string the MRA scorer reads ("" when none)."""
    text = response.replace(",", "")
    stripped = text
    for pattern in _COORDINATE_PATTERNS:
        stripped = pattern.sub("", stripped)
    match = _FIRST_NUMBER.search(stripped) or _FIRST_NUMBER.search(text)
    return match.group() if match else ""


def mean_relative_accuracy(response: str, answer: Any) -> tuple[float, str]:
    """lmms-eval's MRA for one item: (score, number read). Unreadable numbers or a zero truth score 0."""
    number = find_number(response)
    try:
        pred, gt = float(number), float(answer)
        error = abs(pred - gt) / gt
    except (ValueError, ZeroDivisionError, TypeError):
        return 0.0, number
    return float(np.mean(error <= 1 - _THRESHOLDS)), number


def _json_block(response: str) -> str:
    # The scorer searches r"```json\n(.*?)\n```" then r"```\n(.*?)\n```" (DOTALL); found here by position:
    # only the first opening can match (if no closing follows it, none follows a later one), and the lazy
    # group ends at the first closing after it. The regexes rescan the text from every unclosed opening.
    for opening in ("```json\n", "```\n"):
        start = response.find(opening)
        end = response.find("\n```", start + len(opening)) if start >= 0 else -1
        if end >= 0:
            return response[start + len(opening) : end]
    start, end = response.find("{"), response.rfind("}")
    if start != -1 and end != -1 and start < end:
        return response[start : end + 1]
    fields = {
        k: m.group(1)
        for k in ("roll", "pitch", "vfov")
        if (m := re.search(rf"[\"']?{k}[\"']?\s*[:=]\s*(-?\d+\.?\d*)", response, re.IGNORECASE))
    }
    if len(fields) == 3:
        return json.dumps({k: float(v) for k, v in fields.items()})
    return response


def gravity_score(response: str, answer: str, hint: Mapping[str, Any]) -> tuple[float, str]:
    """lmms-eval's gravity score: mean Gaussian kernel over roll, pitch, vFOV, or 0 with a reason."""
    block = _json_block(response)
    try:
        pred = json.loads(block)
    except (ValueError, RecursionError):  # a JSONDecodeError, an int over 4,300 digits, deep nesting
        try:
            pred = json.loads(re.sub(r",\s*([}\]])", r"\1", block))
        except (ValueError, RecursionError):
            return 0.0, "unparsable JSON"
    if not isinstance(pred, dict) or any(pred.get(k) is None for k in ("roll", "pitch", "vfov")):
        return 0.0, "missing roll, pitch or vfov"
    try:  # any error here makes lmms-eval's process_results score the item 0
        gt = json.loads(answer)
        scores = [_kernel(pred[k], gt[k], hint[f"{k}_unc"]) for k in ("roll", "pitch", "vfov")]
    except (
        TypeError,
        KeyError,
        ValueError,
        OverflowError,
    ) as error:  # OverflowError: an int beyond float range
        return 0.0, f"scorer error: {error!r}"
    return sum(scores) / 3.0, "gaussian kernel over roll, pitch, vfov"


def _kernel(pred: float, gt: float, sigma: float) -> float:
    if not sigma > 0:
        return 0.0
    return max(0.0, min(1.0, math.exp(-((pred - gt) ** 2) / (2 * sigma**2))))


def last_yes_no(response: str) -> str:
    """``"yes"``, ``"no"`` or ``"other"``: whichever substring occurs last in the lower-cased text."""
    lower = (response or "").lower()
    yes, no = lower.rfind("yes"), lower.rfind("no")
    if yes == -1 and no == -1:
        return "other"
    return "yes" if yes > no else "no"


def affordance_score(response: str, mask_b64: str) -> tuple[float, str]:
    """Mask value (0-1) at the last point in the response; a point within [0, 1]^2 is normalised. A coordinate
    beyond the float range (a 400-digit run reads inf) scores 0 as no point; rounding it to a pixel, as
    upstream does, raises OverflowError."""
    point = _last_point(response)
    if point is None:
        return 0.0, "no point"
    if not all(math.isfinite(v) for v in point):
        return (
            0.0,
            f"no point: coordinate {point[0] if not math.isfinite(point[0]) else point[1]} is beyond the float range",
        )
    mask = decode_mask(mask_b64)
    if mask is None:
        return 0.0, "undecodable mask"
    height, width = mask.shape[:2]
    x, y = point
    normalised = 0.0 <= x <= 1.0 and 0.0 <= y <= 1.0
    col = round(x * (width - 1)) if normalised else round(x)
    row = round(y * (height - 1)) if normalised else round(y)
    col, row = max(0, min(width - 1, col)), max(0, min(height - 1, row))
    return float(mask[row, col]) / 255.0, f"mask value at column {col}, row {row}"


_POINT_PATTERNS = (
    (re.compile(r"(?i)x\s*[:=]\s*([-+]?\d+(?:\.\d+)?)\D+?y\s*[:=]\s*([-+]?\d+(?:\.\d+)?)"), False),
    (re.compile(r"(?i)y\s*[:=]\s*([-+]?\d+(?:\.\d+)?)\D+?x\s*[:=]\s*([-+]?\d+(?:\.\d+)?)"), True),
    (re.compile(r"\(\s*([-+]?\d+(?:\.\d+)?)\s*,\s*([-+]?\d+(?:\.\d+)?)\s*\)"), False),
    (re.compile(r"\[\s*([-+]?\d+(?:\.\d+)?)\s*,\s*([-+]?\d+(?:\.\d+)?)\s*\]"), False),
    # "(?:[-+]|(?<!\d))" starts a number only at a sign or where a digit run begins: a start inside a run
    # finds nothing the run's own start does not find first, and trying every one is quadratic in the run's
    # length.
    (re.compile(r"((?:[-+]|(?<!\d))\d+(?:\.\d+)?)\s*,\s*([-+]?\d+(?:\.\d+)?)"), False),
)


def _last_point(text: str) -> tuple[float, float] | None:
    best: tuple[int, float, float] | None = None
    for pattern, swapped in _POINT_PATTERNS:
        for match in pattern.finditer(text.strip()):
            a, b = float(match.group(1)), float(match.group(2))
            x, y = (b, a) if swapped else (a, b)
            if best is None or match.end() > best[0]:
                best = (match.end(), x, y)
    return None if best is None else (best[1], best[2])


def decode_mask(mask_b64: str) -> np.ndarray | None:
    """A grey-scale mask image from base64 (optionally a data URI), or ``None``."""
    from PIL import Image, UnidentifiedImageError

    payload = mask_b64.split("base64,", 1)[-1] if mask_b64 else ""
    try:
        raw = base64.b64decode(payload + "=" * (-len(payload) % 4))
        return np.asarray(Image.open(io.BytesIO(raw)).convert("L"))
    except (ValueError, UnidentifiedImageError, OSError):
        return None


# --------------------------------------------------------------------------------------------------------
# Aggregation


_SPATREE_KEY = re.compile(r"spatree(\d+)")


def leaf_name(tags: Mapping[str, Any]) -> str | None:
    """The value of the deepest ``spatreeN`` tag, the key lmms-eval pools items by."""
    depths = {int(m.group(1)): k for k in tags if (m := _SPATREE_KEY.fullmatch(k))}
    return str(tags[depths[max(depths)]]) if depths else None


def aggregate_by_name(tree: WeightNode, scored: Iterable[tuple[Mapping[str, Any], float]]) -> dict[str, Any]:
    """The tree score as lmms-eval computes it: pools by leaf name, missing leaves count 0."""
    pools: dict[str, list[float]] = defaultdict(list)
    for tags, score in scored:
        name = leaf_name(tags)
        if name:
            pools[name].append(score)
    means = {name: float(np.mean(values)) for name, values in pools.items()}

    def by_name(path: tuple[str, ...]) -> float | None:
        return means.get(path[-1].replace(" ", "")) if path else None

    return aggregate_tree(tree, by_name, missing="zero")
