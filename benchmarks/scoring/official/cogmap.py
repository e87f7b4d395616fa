"""lmms-eval's ``cogmapeval`` (SpatialTree-Bench cognitive-map items, MindCube's evaluator), reproduced.

score = 0.2 * answer correct + 0.6 * best overall similarity + 0.2 * rotation-invariant isomorphism, where

- the answer is the letter MindCube's extractor reads (the last "X." for X in A-E first, then an
  ``<Answer>`` section, then "Answer: X"-like patterns, then the last standalone letter of the last line
  that has one) and must equal the item's answer string;
- the generated map is the JSON between the first "{" and the last "}" of the response (repaired when it
  does not parse: comments dropped, bare keys quoted, trailing commas removed, else ``"key": {...}`` pairs
  kept one by one); the reference map is the ``cogmap`` of the item's hint;
- both maps must have valid positions (two finite numbers: a position beyond the float range makes the map
  invalid, scoring 0 similarity while the answer still counts, where upstream raises on an integer too
  large for a float and compares NaNs for ``1e400``; a JSON integer over Python's 4,300-digit limit makes
  the map unparsable, as upstream's catch-all does) and facings (a known word); objects are compared by
  name (a list or object as a name makes the map invalid, where upstream raises TypeError); for each of
  six rotations (identity, z 90/180/270, x 90, y 90) of the generated map the pairwise relation
  (right/left/down/up by the larger coordinate difference; inner/outer, from facings, under distance 0.5)
  of every reference pair present in both maps is compared, directional = matching pairs / reference pairs,
  facing = matching facings / reference objects with a facing (1 when none), overall = 0.7 directional +
  0.3 facing, and the rotation with the strictly largest overall wins (none when all are 0: then
  isomorphism counts as false);
- upstream's metric raises (so lmms-eval scores 0) when the hint lacks ``id_type`` or ``cogmap``, or when a
  simple-format generated map holds an empty list for an object; :class:`CogmapError` stands for that.

Every text scan here is linear in the response length (upstream's regular expressions are not all), and
the similarity in the number of objects of the generated map (upstream's is quadratic: 92 s for a 100 KB
map).
"""

from __future__ import annotations

import bisect
import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

_FACINGS = {
    "up",
    "down",
    "left",
    "right",
    "inner",
    "outer",
    "top",
    "bottom",
    "north",
    "south",
    "east",
    "west",
    "front",
    "back",
    "into",
    "out",
    "inside",
    "outside",
    "forward",
    "backward",
}
_FACING_ALIASES = {
    "top": "up",
    "bottom": "down",
    "north": "up",
    "south": "down",
    "east": "right",
    "west": "left",
    "front": "inner",
    "back": "outer",
    "into": "inner",
    "out": "outer",
    "inside": "inner",
    "outside": "outer",
    "forward": "inner",
    "backward": "outer",
}
_Z_TURNS = {
    "up": ["up", "right", "down", "left"],
    "right": ["right", "down", "left", "up"],
    "down": ["down", "left", "up", "right"],
    "left": ["left", "up", "right", "down"],
}
_X_TURN = {"up": "inner", "down": "outer", "inner": "down", "outer": "up", "left": "left", "right": "right"}
_Y_TURN = {"left": "inner", "right": "outer", "inner": "right", "outer": "left", "up": "up", "down": "down"}


class CogmapError(ValueError):
    """Input on which upstream's metric raises (lmms-eval then scores the item 0)."""


# --------------------------------------------------------------------------------------------------------
# The answer letter

_LETTER_DOT = re.compile(r"([A-E])\.")
_ANSWER_SECTION = re.compile(r"<Answer>([^<]*)")
_SECTION_PATTERNS = (
    re.compile(r"[Mm]y answer is ([A-E])"),
    re.compile(r"[Tt]he answer is ([A-E])"),
    re.compile(r"\b([A-E])\b"),
)
_TEXT_PATTERNS = (
    re.compile(r"(?:^|\n)(?:Answer: )?([A-E])(?:\.|$|\s)"),
    re.compile(r"[\*\"]([A-E])[\*\"]"),
    re.compile(r"\bAnswer:?\s*([A-E])\b"),
    re.compile(r"[Mm]y answer is ([A-E])"),
    re.compile(r"answer is ([A-E])"),
)
_STANDALONE = re.compile(r"\b([A-E])\b")


def _last(pattern: re.Pattern[str], text: str) -> str | None:
    found = None
    for match in pattern.finditer(text):
        found = match.group(1)
    return found


def extract_answer(text: str | None) -> str | None:
    """MindCube's answer letter. Every upstream pattern that needs "X." can only match when the first
    pattern (the last "X." anywhere) already has, so those are not tried again."""
    if not text:
        return None
    letter = _last(_LETTER_DOT, text)
    if letter is not None:
        return letter
    section = _answer_section(text)
    if section is not None:
        for pattern in _SECTION_PATTERNS:
            letter = _last(pattern, section)
            if letter is not None:
                return letter
    for pattern in _TEXT_PATTERNS:
        letter = _last(pattern, text)
        if letter is not None:
            return letter
    for line in reversed(text.split("\n")):
        match = _STANDALONE.search(line)
        if match:
            return match.group(1)
    return None


def _answer_section(text: str) -> str | None:
    """Upstream's ``<Answer>(.*?)(?:<|$)``: up to the next "<", or the end (a final newline excluded)."""
    match = _ANSWER_SECTION.search(text)
    if match is None:
        return None
    section = match.group(1)
    end = match.end(1)
    return section[:-1] if end == len(text) and section.endswith("\n") else section


# --------------------------------------------------------------------------------------------------------
# The map JSON

_COMMENT = re.compile(r"//.*")
_CONTROL = re.compile(r"[\n\r\t]")
_BARE_KEY = re.compile(r"(?<!\w)(\w+)(\s*):")
_TRAILING_OBJECT = re.compile(r",\s*}")
_TRAILING_ARRAY = re.compile(r",\s*]")
_PAIR_KEY = re.compile(r'"([^"]+)":\s*\{')


def extract_json(text: str | None) -> Any:
    """The JSON value between the first "{" and the last "}", repaired if needed; ``None`` when none."""
    if not text:
        return None
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end <= start:
        return None
    candidate = text[start : end + 1]
    try:
        return json.loads(candidate)
    except json.JSONDecodeError:
        return _repaired(candidate)


def _quote_and_trim(text: str) -> str:
    """Bare keys quoted and trailing commas dropped (upstream's ``(\\s*?)(\\w+)(\\s*?):`` rewrite has the same
    effect: every word directly followed by optional spaces and ":" is quoted)."""
    text = _BARE_KEY.sub(r'"\1"\2:', text)
    return _TRAILING_ARRAY.sub("]", _TRAILING_OBJECT.sub("}", text))


def _repaired(candidate: str) -> Any:
    try:
        return json.loads(_quote_and_trim(_CONTROL.sub(" ", _COMMENT.sub("", candidate))))
    except (json.JSONDecodeError, RecursionError):
        pass
    result = {}
    for key, body in _object_pairs(candidate):
        try:
            result[key] = json.loads(_quote_and_trim("{" + body + "}"))
        except (json.JSONDecodeError, RecursionError):
            continue
    return result or None


def _object_pairs(text: str) -> list[tuple[str, str]]:
    """Upstream's ``"key":\\s*{ body }`` pairs, where the body holds objects nested at most one level deep,
    found left to right without overlap as ``re.findall`` finds them, in linear time: where each body ends is
    precomputed from the sequence of braces."""
    braces = [i for i, c in enumerate(text) if c in "{}"]
    # from brace k at depth 0: index of the closing "}"
    close_at: list[int | None] = [None] * (len(braces) + 2)
    for k in range(len(braces) - 1, -1, -1):
        if text[braces[k]] == "}":
            close_at[k] = braces[k]
        elif k + 1 < len(braces) and text[braces[k + 1]] == "}":
            close_at[k] = close_at[k + 2] if k + 2 < len(braces) else None
    pairs: list[tuple[str, str]] = []
    position = 0
    while True:
        match = _PAIR_KEY.search(text, position)
        if match is None:
            return pairs
        k = bisect.bisect_left(braces, match.end())
        end = close_at[k] if k < len(braces) else None
        if end is None:
            position = match.start() + 1
            continue
        pairs.append((match.group(1), text[match.end() : end]))
        position = end + 1


# --------------------------------------------------------------------------------------------------------
# Maps


def _is_complex(cogmap: object) -> bool:
    return isinstance(cogmap, dict) and isinstance(cogmap.get("objects"), list)


def _valid_position(position: object) -> bool:
    """Two numbers first; finite ones (upstream raises OverflowError on an integer beyond the float range
    and compares NaNs for 1e400: both make the map invalid here)."""
    if not isinstance(position, list) or len(position) < 2:
        return False
    try:
        return math.isfinite(float(position[0])) and math.isfinite(float(position[1]))
    except (TypeError, ValueError, OverflowError):
        return False


def _valid_facing(facing: object) -> bool:
    if facing is None:
        return True
    if isinstance(facing, list):
        if not facing:
            return True
        facing = facing[0]
    return isinstance(facing, str) and facing.lower().strip() in _FACINGS


def _entry_ok(entry: object) -> bool:
    if not isinstance(entry, dict):
        return False
    if "position" not in entry or not _valid_position(entry["position"]):
        return False
    return "facing" not in entry or _valid_facing(entry["facing"])


def valid_format(cogmap: object) -> bool:
    """Upstream's format check: objects (and views) with names, valid positions and known facings."""
    if not isinstance(cogmap, dict):
        return False
    if _is_complex(cogmap):
        entries = list(cogmap["objects"])
        if "views" in cogmap:
            if not isinstance(cogmap["views"], list):
                return False
            entries += cogmap["views"]
        return all(_entry_ok(e) and "name" in e and not isinstance(e["name"], list | dict) for e in entries)
    return all(_entry_ok(v) for v in cogmap.values())


def _first_of_lists(cogmap: dict[str, Any]) -> dict[str, Any]:
    """A simple-format map with list values reduced to their first element (upstream raises on an empty list)."""
    out = {}
    for key, value in cogmap.items():
        if isinstance(value, list):
            if not value:
                raise CogmapError(f"object {key!r} holds an empty list: upstream's metric raises IndexError")
            value = value[0]
        out[key] = value
    return out


def _normalize_facing(facing: object) -> str | None:
    if isinstance(facing, list):
        facing = facing[0] if facing else None
    if not isinstance(facing, str) or not facing.strip():
        return None
    word = facing.lower().strip()
    return _FACING_ALIASES.get(word, word)


def _position(entry: Mapping[str, Any]) -> np.ndarray:
    value = entry.get("position")
    try:
        if isinstance(value, list) and len(value) >= 2:
            return np.array([float(value[0]), float(value[1])], dtype=float)
    except (TypeError, ValueError, OverflowError):
        pass
    return np.array([0.0, 0.0])


def _objects(cogmap: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """name -> {"position", "facing"}; views after objects in the complex format."""
    if "objects" in cogmap:
        entries = [*cogmap.get("objects", []), *cogmap.get("views", [])]
        return {
            e["name"]: {"position": _position(e), "facing": _normalize_facing(e.get("facing"))}
            for e in entries
            if "name" in e
        }
    return {
        k: {"position": _position(v), "facing": _normalize_facing(v.get("facing"))}
        for k, v in cogmap.items()
        if isinstance(v, dict)
    }


def _relation(p1: np.ndarray, p2: np.ndarray, f1: str | None, f2: str | None) -> str | None:
    dx, dy = p2[0] - p1[0], p2[1] - p1[1]
    if np.sqrt(dx**2 + dy**2) < 0.5:
        if f1 == "inner" or f2 == "outer":
            return "inner"
        if f1 == "outer" or f2 == "inner":
            return "outer"
        return "inner" if np.linalg.norm(p1 - p2) < 0.2 else None
    if abs(dx) > abs(dy):
        return "right" if dx > 0 else "left"
    return "down" if dy > 0 else "up"


def _relations(
    objects: Mapping[str, Mapping[str, Any]], names: list[str]
) -> dict[str, dict[str, str | None]]:
    table: dict[str, dict[str, str | None]] = {a: {} for a in names}
    for a in names:
        for b in names:
            if a != b:
                table[a][b] = (
                    _relation(
                        objects[a]["position"],
                        objects[b]["position"],
                        objects[a]["facing"],
                        objects[b]["facing"],
                    )
                    if a in objects and b in objects
                    else None
                )
    return table


def _rotations() -> list[tuple[str, np.ndarray, Any]]:
    out: list[tuple[str, np.ndarray, Any]] = [("identity", np.eye(3), lambda f: f)]
    for angle in (90, 180, 270):
        rad = np.radians(angle)
        cos_a, sin_a = np.cos(rad), np.sin(rad)
        matrix = np.array([[cos_a, -sin_a, 0], [sin_a, cos_a, 0], [0, 0, 1]])
        out.append(
            (f"z_rot_{angle}", matrix, lambda f, a=angle: _Z_TURNS[f][(a // 90) % 4] if f in _Z_TURNS else f)
        )
    out.append(
        ("x_rot_90", np.array([[1, 0, 0], [0, 0, -1], [0, 1, 0]]), lambda f: _X_TURN.get(f, f) if f else f)
    )
    out.append(
        ("y_rot_90", np.array([[0, 0, 1], [0, 1, 0], [-1, 0, 0]]), lambda f: _Y_TURN.get(f, f) if f else f)
    )
    return out


@dataclass
class Similarity:
    """Upstream's similarity record of one generated map against the reference."""

    parsable_json: bool = False
    valid_format: bool = False
    valid_graph: bool = False
    coverage: float = 0.0
    directional: float = 0.0
    facing: float = 0.0
    overall: float = 0.0
    isomorphic: bool = False
    best_rotation: str | None = None
    common_objects: list[str] = field(default_factory=list)


def _rotated(
    gen: Mapping[str, Any], names: list[Any], matrix: np.ndarray, turn: Any
) -> dict[Any, dict[str, Any]]:
    """The generated objects ``names``, their positions rotated by ``matrix`` and facings by ``turn``."""
    return {
        k: {"position": (matrix @ np.append(gen[k]["position"], 0.0))[:2], "facing": turn(gen[k]["facing"])}
        for k in names
    }


def similarity(generated: object, reference: object) -> Similarity:
    """Best overall similarity over the six rotations (see the module docstring).

    Upstream builds the relations of every pair of generated objects, quadratic in the size of the model's
    map; only pairs of objects the reference also names are ever compared, so only those are built here:
    time linear in the generated map (and quadratic in the reference, as upstream), the same result.
    """
    result = Similarity()
    if not generated or not reference or not isinstance(generated, dict) or not isinstance(reference, dict):
        return result
    result.parsable_json = True
    if not _is_complex(generated):
        generated = _first_of_lists(generated)
    result.valid_format = valid_format(generated) and valid_format(reference)
    if not result.valid_format:
        return result
    gen, ref = _objects(generated), _objects(reference)
    if not gen or not ref:
        return result
    result.valid_graph = True
    ref_names = set(ref)
    if "views" not in generated and "objects" in reference:
        ref_names = {o["name"] for o in reference.get("objects", []) if "name" in o}
    common = ref_names & set(gen)
    result.coverage = len(common) / len(ref_names) if ref_names else 0
    shared = sorted(common, key=lambda n: (type(n).__name__, n))  # complex-format names may mix types
    result.common_objects = shared
    if not common:
        return result
    ref_rel = _relations(ref, list(ref_names))
    pairs = [(a, b) for a in shared for b in shared if a != b and ref_rel[a][b] is not None]
    faced = [o for o in shared if ref[o]["facing"]]
    for name, matrix, turn in _rotations():
        rotated = _rotated(gen, shared, matrix, turn)
        gen_rel = _relations(rotated, shared)
        directional = sum(1 for a, b in pairs if gen_rel[a][b] == ref_rel[a][b]) / len(pairs) if pairs else 0
        facing = (
            sum(1 for o in faced if rotated[o]["facing"] == ref[o]["facing"]) / len(faced) if faced else 1.0
        )
        overall = 0.7 * directional + 0.3 * facing
        if overall > result.overall:
            result.overall, result.directional, result.facing, result.best_rotation = (
                overall,
                directional,
                facing,
                name,
            )
            result.isomorphic = _contains(gen_rel, ref_rel)
    return result


def _contains(gen_rel: Mapping[str, Mapping[str, Any]], ref_rel: Mapping[str, Mapping[str, Any]]) -> bool:
    """Every reference relation is present, and equal, in the generated relations (those among the objects
    both maps name: a reference object the generated map lacks has no relations there)."""
    return all(
        a in gen_rel and b in gen_rel[a] and gen_rel[a][b] == rel
        for a, row in ref_rel.items()
        for b, rel in row.items()
    )


@dataclass(frozen=True)
class CogmapScore:
    """One cognitive-map item as upstream scores it."""

    score: float
    answer: str | None
    answer_correct: bool
    similarity: Similarity


def score(response: str, answer: object, hint: Mapping[str, Any]) -> CogmapScore:
    """0.2 answer + 0.6 overall similarity + 0.2 isomorphism.

    Raises:
        CogmapError: where upstream's metric raises (lmms-eval then scores 0).
    """
    if "id_type" not in hint or "cogmap" not in hint:
        raise CogmapError(
            f"the hint lacks {'id_type' if 'id_type' not in hint else 'cogmap'}: upstream's metric raises KeyError"
        )
    if hint["id_type"] and not isinstance(hint["id_type"], str):  # upstream lower()s any truthy id
        raise CogmapError(f"id_type {hint['id_type']!r} is not text: upstream's metric raises AttributeError")
    letter = extract_answer(response)
    correct = bool(letter) and letter == answer
    reference = extract_json(hint["cogmap"]) if isinstance(hint["cogmap"], str) else hint["cogmap"]
    try:
        generated = extract_json(response)
    except (RecursionError, ValueError):  # upstream wraps the generated map's extraction in a catch-all
        generated = None  # ValueError: a JSON integer over Python's 4,300-digit limit
    sim = similarity(generated, reference)
    value = 0.2 * float(correct) + 0.6 * float(sim.overall) + 0.2 * float(sim.isomorphic)
    return CogmapScore(value, letter, correct, sim)
