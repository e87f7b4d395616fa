"""Typical model errors, injected at a seeded rate into a test backend's answers.

A backend that injects one says which kind in :attr:`Generation.injected_error
<policies.backends.base.Generation.injected_error>`; that metadata is the only way an injected error reaches
policies, runners and records. Each kind says what a parser must make of it (:func:`expected_effect`), so
parse-failure accounting can be checked against known counts.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import numpy as np

# ------------------------------------------------------------------------------------------ injection
# Each kind says what a parser must make of it: "unusable" answers count as parse errors (no action, no
# parsed answer), "repaired" ones are usable after a repair (parse_repairs). Tests compare these counts
# with the recorded ones exactly.

Corruption = Callable[[str, np.random.Generator], str]


def _unknown_primitive(text: str, rng: np.random.Generator) -> str:
    """Every action name replaced by a word no parser knows (a model inventing its own vocabulary); a
    manipulation step's gripper state too, since parsers rightly keep a step whose gripper alone is valid."""
    return _rewrite_json(text, lambda value: _replace_actions(value, "teleport"), fallback="teleport")


def _malformed_json(text: str, rng: np.random.Generator) -> str:
    """Structure lost: braces, brackets and colons gone, as a model that half-forgot the format writes."""
    broken = "".join(" " if c in "{}[]:" else c for c in text)
    return f"My answer is {broken.replace(chr(34), '')} and nothing else"


def _truncated(text: str, rng: np.random.Generator) -> str:
    """Cut off after the first few characters, as by a tiny token budget: nothing usable survives."""
    return text[: min(len(text) // 4, 6)]


def _prose(text: str, rng: np.random.Generator) -> str:
    """The right answer wrapped in chatter and a code fence (usable: parsers extract it)."""
    return f"Let me look at the images carefully.\n\n```json\n{text}\n```\n\nThis should do it."


def _empty(text: str, rng: np.random.Generator) -> str:
    """No text at all (a model that stops at once): nothing to read, whatever the answer format."""
    return ""


def _refusal(text: str, rng: np.random.Generator) -> str:
    """A refusal instead of the answer (short-answer routes). Worded without option letters a-f, the
    words yes/no (nor a substring such as "know") or digits, so even the public scorers' lenient rules,
    which take the first letter a-f anywhere or the last "no" substring, find no answer in it."""
    return "I'm sorry, I must skip this."


def _answer_sentence(text: str, rng: np.random.Generator) -> str:
    """The right answer said in a short sentence (short-answer routes; usable: parsers read past it)."""
    return f"Answer: {text}"


_LETTER = re.compile(r"\(([A-F])\)")
_YES_NO = re.compile(r"\b(yes|no)\b", re.IGNORECASE)
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


def _wrong_answer(text: str, rng: np.random.Generator) -> str:
    """A confident wrong answer in the asked format (a misperception, short-answer routes): the first option
    letter in parentheses replaced by another of (A)-(D), else yes and no swapped, else every number scaled by
    2.5 to 4 (an MRA of 0). An answer with none of these becomes a refusal."""
    letter = _LETTER.search(text)
    if letter is not None:
        others = [c for c in "ABCD" if c != letter.group(1)]
        wrong = others[int(rng.integers(len(others)))]
        return f"{text[: letter.start()]}({wrong}){text[letter.end() :]}"
    if _YES_NO.search(text):
        return _YES_NO.sub(lambda m: _flip_yes_no(m.group(1)), text)
    if _NUMBER.search(text):
        factor = float(rng.uniform(2.5, 4.0))
        return _NUMBER.sub(lambda m: f"{float(m.group(0)) * factor:.2f}", text)
    return _refusal(text, rng)


def _flip_yes_no(word: str) -> str:
    flipped = "no" if word.lower() == "yes" else "yes"
    return flipped.capitalize() if word[0].isupper() else flipped


#: kind -> (corruption, expected effect on the parser: "unusable" or "usable")
ERROR_KINDS: dict[str, tuple[Corruption, str]] = {
    "unknown_primitive": (_unknown_primitive, "unusable"),
    "malformed_json": (_malformed_json, "unusable"),
    "truncated": (_truncated, "unusable"),
    "prose": (_prose, "usable"),
    "empty": (_empty, "unusable"),
    "refusal": (_refusal, "unusable"),
    "answer_sentence": (_answer_sentence, "usable"),
    "wrong_answer": (_wrong_answer, "usable"),
}
#: What the closed-loop routes draw from by default (plans: JSON that can lose its structure or vocabulary).
DEFAULT_ERROR_KINDS: tuple[str, ...] = ("unknown_primitive", "malformed_json", "truncated", "prose")
#: What the offline short-answer routes draw from (static benchmarks: a letter, yes/no, a number, a box).
ANSWER_ERROR_KINDS: tuple[str, ...] = ("truncated", "empty", "refusal", "answer_sentence")
#: What a misperceiving stand-in draws from (state probes' corrupted answers): readable, wrong.
PERCEPTION_ERROR_KINDS: tuple[str, ...] = ("wrong_answer",)


def _rewrite_json(text: str, rewrite: Callable[[Any], Any], *, fallback: str) -> str:
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return fallback
    return json.dumps(rewrite(value))


def _replace_actions(value: Any, word: str) -> Any:
    if isinstance(value, dict):
        # EB navigation names an action twice ({"action_id": 4, "action_name": ...}): both are invented
        return {
            k: (
                [word] * len(v)
                if k == "actions" and isinstance(v, list)
                else word
                if k in ("action", "action_name", "action_id", "gripper")
                else _replace_actions(v, word)
            )
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_replace_actions(v, word) for v in value]
    return value


def expected_effect(kind: str | None) -> str:
    """``"clean"`` for no injection, else the kind's expected parser outcome (``unusable`` / ``usable``)."""
    return "clean" if kind is None else ERROR_KINDS[kind][1]
