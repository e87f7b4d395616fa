"""Parsers that turn a model's free-form answer into a value, and say how they did it.

Every parser returns a :class:`ParseResult` (value, ok, method, explanation) and never raises on model text,
so each score can be traced back to what was read and why (a refusal, an ambiguous answer, no number...).
The parsers are strict about ambiguity: when a response names two different options, the parse fails with
the candidates in the explanation instead of picking one.

These are the project's parsers. The public scorers' own behaviours (quirks included) live in
:mod:`benchmarks.scoring.official`.
"""

from __future__ import annotations

import ast
import collections
import functools
import itertools
import json
import math
import re
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from benchmarks.scoring.units import Quantity, read_unit

# --------------------------------------------------------------------------------------------------------
# Result type


@dataclass(frozen=True)
class ParseResult:
    """What a parser read from a response. ``value`` is ``None`` when ``ok`` is False."""

    value: Any
    ok: bool
    method: str
    explanation: str = ""

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe form for per-sample records."""
        return {
            "value": _json_value(self.value),
            "ok": self.ok,
            "method": self.method,
            "explanation": self.explanation,
        }


def _json_value(value: object) -> Any:
    if isinstance(value, Quantity):
        return value.to_dict()
    if isinstance(value, tuple):
        return [_json_value(v) for v in value]
    return value


def parsed(value: object, method: str, explanation: str = "") -> ParseResult:
    """A successful parse."""
    return ParseResult(value, True, method, explanation)


def failed(method: str, explanation: str) -> ParseResult:
    """A failed parse; ``method`` names the failure (``empty``, ``refusal``, ``ambiguous``...)."""
    return ParseResult(None, False, method, explanation)


# --------------------------------------------------------------------------------------------------------
# Shared clean-up

#: Longest response the parsers read, in characters (about 50,000 tokens of English: room for a long
#: reasoning block before the answer). A longer one is runaway generation: it is cut to this length, read,
#: and reported as a failed parse (method ``input_truncated``; what was read from the kept part stays in the
#: value and explanation). Every parser runs in time linear in its input, and this cap bounds that time:
#: under 0.3 s for any input on a loaded 2-core machine (``bench/parser_speed.py``).
MAX_RESPONSE_CHARS = 200_000

# Tags are found by position and paired by a linear scan (a lazy ``<think>.*?</think>`` rescans the rest of
# the text from every unclosed ``<think>``: quadratic time).
_THINK_OPEN = re.compile(r"<think>", re.IGNORECASE)
_THINK_CLOSE = re.compile(r"</think>", re.IGNORECASE)
_ANSWER_OPEN = re.compile(r"<answer>", re.IGNORECASE)
_ANSWER_CLOSE = re.compile(r"</answer>", re.IGNORECASE)
_REFUSALS = re.compile(
    r"\b(?:cannot|can ?not|can't|unable to|not possible to|impossible to)\s+(?:be\s+)?"
    r"(?:determine|determined|tell|answer|say|know|identify|see|infer|judge)"
    r"|\bI(?:'m| am) (?:sorry|not sure|unable)"
    r"|\b(?:insufficient|not enough) (?:information|context|detail)"
    r"|\bnone of the (?:above|options|choices)\b|\bno (?:correct|valid) (?:option|answer)\b",
    re.IGNORECASE,
)


def clean_response(text: object) -> str:
    """Drop reasoning blocks, keep the last ``<answer>`` block if any, remove markdown emphasis."""
    if not isinstance(text, str):
        return ""
    body = _drop_blocks(text, _THINK_OPEN, _THINK_CLOSE)
    unclosed = _THINK_OPEN.search(body)
    if unclosed:  # an unclosed reasoning block: the answer, if any, is not in it
        body = body[: unclosed.start()]
    tagged = [
        body[inner_start:inner_end]
        for _, inner_start, inner_end, _ in _tag_blocks(body, _ANSWER_OPEN, _ANSWER_CLOSE)
    ]
    if tagged:
        body = tagged[-1]
    return body.replace("**", "").replace("__", "").strip()


def _tag_blocks(
    text: str, opening: re.Pattern[str], closing: re.Pattern[str]
) -> Iterator[tuple[int, int, int, int]]:
    """``(start, inner_start, inner_end, end)`` of each ``<tag>...</tag>`` block, as a lazy regex
    ``<tag>.*?</tag>`` scanning left to right finds them, in linear time: each search starts where the
    previous block ended, and when an opening has no closing after it, no later opening has one either."""
    pos = 0
    while (start := opening.search(text, pos)) is not None:
        end = closing.search(text, start.end())
        if end is None:
            return
        yield start.start(), start.end(), end.start(), end.end()
        pos = end.end()


def _drop_blocks(text: str, opening: re.Pattern[str], closing: re.Pattern[str]) -> str:
    """``text`` with each ``<tag>...</tag>`` block replaced by one space."""
    parts, pos = [], 0
    for start, _, _, end in _tag_blocks(text, opening, closing):
        parts += [text[pos:start], " "]
        pos = end
    return "".join(parts) + text[pos:] if parts else text


def bounded(text: str) -> tuple[str, str]:
    """``text`` cut to :data:`MAX_RESPONSE_CHARS`, and a note saying so (``""`` when nothing was cut)."""
    if len(text) <= MAX_RESPONSE_CHARS:
        return text, ""
    return text[
        :MAX_RESPONSE_CHARS
    ], f"response of {len(text):,} characters cut to the first {MAX_RESPONSE_CHARS:,}"


def truncated_result(result: ParseResult, note: str) -> ParseResult:
    """A parse of a cut response: a failure whatever was read (kept in ``value`` to show what it was)."""
    return ParseResult(
        result.value, False, "input_truncated", f"{note}; read there: {result.method}, {result.explanation}"
    )


def bounded_parser(parse: Callable[..., ParseResult]) -> Callable[..., ParseResult]:
    """Wrap a parser so it reads at most :data:`MAX_RESPONSE_CHARS` and reports a cut as a parse error."""

    @functools.wraps(parse)
    def run(text: object, *args: Any, **kwargs: Any) -> ParseResult:
        if not isinstance(text, str) or len(text) <= MAX_RESPONSE_CHARS:
            return parse(text, *args, **kwargs)
        kept, note = bounded(text)
        return truncated_result(parse(kept, *args, **kwargs), note)

    return run


def outer_braces(text: str) -> str | None:
    """The first ``{`` to the last ``}`` (what ``re.search(r"\\{.*\\}", text, re.DOTALL)`` matches), or None;
    found with two string searches (the regex rescans the rest from every unclosed ``{``: quadratic)."""
    start, end = text.find("{"), text.rfind("}")
    return text[start : end + 1] if 0 <= start < end else None


def is_refusal(text: str) -> bool:
    """True when the text declines to answer ("cannot be determined", "none of the above"...)."""
    return _REFUSALS.search(text) is not None


def _no_answer(body: str, what: str) -> ParseResult:
    if not body:
        return failed("empty", "the response is empty")
    if is_refusal(body):
        return failed("refusal", f"the response declines to answer ({_clip(body)})")
    return failed(f"no_{what}", f"no {what} found in {_clip(body)}")


def _clip(text: str, limit: int = 80) -> str:
    flat = " ".join(text.split())
    return repr(flat if len(flat) <= limit else flat[: limit - 3] + "...")


# --------------------------------------------------------------------------------------------------------
# Option letters

OptionSpec = Mapping[str, str] | Sequence[str] | str

# Regexes here never put two quantified runs that can match the same characters side by side (``\s*\s*``):
# on a long run of spaces the engine would try every split, quadratic or worse. Optional tokens carry their
# own trailing whitespace instead, which matches the same strings.
_MARKER = re.compile(
    r"\b(?:final\s+answer|answer|correct\s+(?:option|choice|answer))\b(?:\s+is)?\s*(?:[:=\-]\s*)?"
    r"(?:option\s+|choice\s+)?(?:(?P<open>[(\[])\s*)?(?P<letter>[A-Za-z])\s*(?P<close>[)\]])?(?=$|[\s.,:;!)\]])",
    re.IGNORECASE,
)
_CHOICE_WORD = re.compile(
    r"\b(?:option|choice|choose|select|pick)\s+(?P<open>\()?(?P<letter>[A-Za-z])(?P<close>\))?(?=$|[\s.,:;!)])",
    re.IGNORECASE,
)
_BARE = re.compile(r"^[(\[]?\s*([A-Za-z])\s*(?:[)\]]\s*)?[.:]?$")
_LEADING = re.compile(r"^(?:[(\[]\s*([A-Za-z])\s*[)\]]|([A-Za-z])\s*[.):])\s*(\S.*)?$", re.DOTALL)
_PAREN = re.compile(r"\(([A-Za-z])\)")
_WORD = re.compile(r"[a-z0-9]+(?:[.'’-][a-z0-9]+)*")


def option_letters(options: OptionSpec) -> tuple[str, ...]:
    """The valid letters of an option spec (a mapping letter -> text, a letter sequence or ``"ABCD"``)."""
    if isinstance(options, Mapping):
        return tuple(str(k).upper() for k in options)
    return tuple(str(k).upper() for k in options)


@bounded_parser
def parse_option(text: object, options: OptionSpec = "ABCD") -> ParseResult:
    """Read one option letter: ``"(b)"``, ``"B."``, ``"Answer: b"``, ``"B) chair"``, or the option's text alone.

    Args:
        text: the model's raw response.
        options: a mapping letter -> option text (enables matching the text alone) or just the letters.
    """
    letters = option_letters(options)
    texts = {k.upper(): str(v) for k, v in options.items()} if isinstance(options, Mapping) else {}
    body = clean_response(text)
    if not body:
        return _no_answer(body, "option")
    for finder in (_by_marker, _by_bare_letter, _by_leading_letter, _by_choice_word, _by_parenthesis):
        result = finder(body, letters)
        if result is not None:
            return result
    by_text = _by_option_text(body, texts)
    if by_text is not None:
        return by_text
    by_letter = _by_standalone_letter(body, letters)
    return by_letter if by_letter is not None else _no_answer(body, "option")


def _accept_letter(match: re.Match[str], body: str) -> str | None:
    """A lowercase letter counts only when bracketed or punctuated ("a cat" is not option A)."""
    letter = match.group("letter")
    if letter.isupper() or match.group("open") or match.group("close"):
        return letter.upper()
    following = body[match.end("letter") : match.end("letter") + 1]
    return letter.upper() if following in ("", ".", ":", ")", ",", ";", "\n") else None


def _checked(letter: str, letters: tuple[str, ...], method: str, how: str) -> ParseResult:
    if letter not in letters:
        return failed("letter_out_of_range", f"{how}: {letter} is not one of the options {''.join(letters)}")
    return parsed(letter, method, how)


def _by_marker(body: str, letters: tuple[str, ...]) -> ParseResult | None:
    found = None  # the last accepted marker
    for m in _MARKER.finditer(body):
        letter = _accept_letter(m, body)
        if letter is not None:
            found = (m, letter)
    if found is None:
        return None
    match, letter = found
    return _checked(letter, letters, "answer_marker", f"answer marker {match.group(0).strip()!r}")


def _by_bare_letter(body: str, letters: tuple[str, ...]) -> ParseResult | None:
    match = _BARE.match(body)
    if match is None:
        return None
    return _checked(match.group(1).upper(), letters, "bare_letter", f"the response is the letter {body!r}")


def _by_leading_letter(body: str, letters: tuple[str, ...]) -> ParseResult | None:
    match = _LEADING.match(body)
    if match is None:
        return None
    letter = (match.group(1) or match.group(2)).upper()
    if letter not in letters:
        return None  # e.g. "I. ..." or a sentence; let later rules look
    if {m.group(1).upper() for m in _PAREN.finditer(body)} & set(letters) - {letter}:
        return None  # "(a) or (c)": another option is named too
    return parsed(
        letter,
        "leading_letter",
        f"the response starts with {body[: match.start(3) if match.group(3) else len(body)].strip()!r}",
    )


def _by_choice_word(body: str, letters: tuple[str, ...]) -> ParseResult | None:
    found = {_accept_letter(m, body) for m in _CHOICE_WORD.finditer(body)} - {None}
    found &= set(letters)
    if len(found) == 1:
        letter = found.pop()
        return parsed(letter, "choice_word", f"the response picks option {letter}")
    return None


def _by_parenthesis(body: str, letters: tuple[str, ...]) -> ParseResult | None:
    found = sorted({m.group(1).upper() for m in _PAREN.finditer(body)} & set(letters))
    if len(found) == 1:
        return parsed(found[0], "parenthesized_letter", f"the only bracketed letter is ({found[0]})")
    if len(found) > 1:
        return failed("ambiguous", f"the response names options {', '.join(found)}")
    return None


def normalize_text(text: str) -> str:
    """Lower-case words joined by single spaces, punctuation dropped (for option-text matching)."""
    return " ".join(_WORD.findall(text.lower()))


def _by_option_text(body: str, texts: Mapping[str, str]) -> ParseResult | None:
    normalized = {k: normalize_text(v) for k, v in texts.items() if normalize_text(v)}
    answer = normalize_text(body)
    exact = [k for k, v in normalized.items() if v == answer]
    if len(exact) == 1:
        return parsed(exact[0], "option_text_exact", f"the response is option {exact[0]}'s text")
    hits = [
        k for k, v in normalized.items() if re.search(rf"(?<![a-z0-9]){re.escape(v)}(?![a-z0-9])", answer)
    ]
    # An option whose text lies inside another matched option's text ("left" in "back left") is not a hit.
    hits = [k for k in hits if not any(k != o and normalized[k] in normalized[o] for o in hits)]
    if len(hits) == 1:
        return parsed(
            hits[0], "option_text", f"the response contains option {hits[0]}'s text {texts[hits[0]]!r}"
        )
    if len(hits) > 1:
        return failed("ambiguous", f"the response contains the texts of options {', '.join(sorted(hits))}")
    return None


def _standalone_letters(body: str, letters: tuple[str, ...]) -> set[str]:
    """The option letters that stand alone somewhere in ``body`` (the article "A" and pronoun "I" opening a
    sentence do not count). Each letter is searched for until one occurrence counts: checking every
    standalone capital of a long text in Python costs about a second per megabyte."""
    found = set()
    for letter in dict.fromkeys(letters):
        if len(letter) != 1 or not "A" <= letter <= "Z":
            continue  # only single capitals can stand alone
        for match in _standalone_pattern(letter).finditer(body):
            if letter in "AI" and _opens_sentence(body, match):
                continue
            found.add(letter)
            break
    return found


@functools.lru_cache(maxsize=32)
def _standalone_pattern(letter: str) -> re.Pattern[str]:
    """The letter with no letter, digit or apostrophe on either side."""
    return re.compile(rf"(?<![A-Za-z0-9'’]){letter}(?![A-Za-z0-9'’])")


_FOLLOWING_WORD = re.compile(r" ([a-z]+)")


def _opens_sentence(body: str, match: re.Match[str]) -> bool:
    """ "A cat ..." at a sentence start is an article; "A and C" or "A, because" is an option letter."""
    following = _FOLLOWING_WORD.match(body, match.end())  # no slicing: a copy per letter is quadratic
    if following is None or following.group(1) in ("and", "or", "is", "because", "since"):
        return False
    before = _last_non_space(body, match.start())
    return before == "" or before in ".!?:\n"


def _last_non_space(text: str, end: int) -> str:
    """The last character of ``text[:end].rstrip()`` ("" when there is none), without copying the text."""
    i = end - 1
    while i >= 0 and text[i].isspace():
        i -= 1
    return text[i] if i >= 0 else ""


def _by_standalone_letter(body: str, letters: tuple[str, ...]) -> ParseResult | None:
    found = sorted(_standalone_letters(body, letters))
    if len(found) == 1:
        return parsed(found[0], "standalone_letter", f"the only option letter in the response is {found[0]}")
    if len(found) > 1:
        return failed("ambiguous", f"the response names options {', '.join(found)}")
    return None


# --------------------------------------------------------------------------------------------------------
# Multiple-answer sets

_COMPACT = re.compile(r"^[(\[]?([A-Z]{2,8})[)\]]?\.?$")
_SET_MARKER = re.compile(
    r"\b(?:final\s+answers?|answers?|correct\s+(?:options|choices|answers))\b(?:\s+(?:is|are))?\s*[:=\-]?",
    re.IGNORECASE,
)


@bounded_parser
def parse_option_set(text: object, options: OptionSpec = "ABCDE") -> ParseResult:
    """Read a set of option letters (``"A, C"``, ``"AC"``, ``"['A', 'C']"``, ``"A and C"``), sorted.

    Text after the last answer marker is read when there is one; without letters, option texts are matched.
    """
    letters = option_letters(options)
    texts = {k.upper(): str(v) for k, v in options.items()} if isinstance(options, Mapping) else {}
    body = clean_response(text)
    if not body:
        return _no_answer(body, "options")
    segment, where = _answer_segment(body)
    for reader in (_set_from_literal, _set_compact, _set_from_letters):
        found = reader(segment, letters)
        if found is not None:
            return _set_result(found, letters, reader.__name__.removeprefix("_set_"), where)
    return _set_from_texts(body, texts)


def _answer_segment(body: str) -> tuple[str, str]:
    markers = list(_SET_MARKER.finditer(body))
    if not markers:
        return body, "the response"
    rest = body[markers[-1].end() :].strip()
    return rest.splitlines()[0] if rest else rest, "the text after the answer marker"


def _set_result(found: list[str], letters: tuple[str, ...], method: str, where: str) -> ParseResult:
    outside = sorted(set(found) - set(letters))
    if outside:
        return failed("letter_out_of_range", f"{where} names {', '.join(outside)}, not in {''.join(letters)}")
    value = tuple(sorted(set(found)))
    return parsed(value, method, f"{where} names {', '.join(value)}")


def _set_from_literal(segment: str, letters: tuple[str, ...]) -> list[str] | None:
    match = re.search(r"\[[^\[\]]*\]", segment)
    if match is None:
        return None
    value = _literal_or_none(match.group(0))
    if not isinstance(value, list) or not all(isinstance(v, str | int | float) for v in value):
        return None  # letters are strings; anything else (nested lists, huge numbers, ...) is not a key
    try:
        items = [str(v).strip().upper() for v in value]
    except ValueError:  # str() of an int over 4,300 digits
        return None
    split = [p.strip().strip("()") for item in items for p in re.split(r"[,\s]+", item) if p.strip()]
    return split if split and all(re.fullmatch(r"[A-Z]", p) for p in split) else None


def _literal_or_none(span: str) -> Any:
    """``ast.literal_eval(span)``, or None when it fails in any way (model text is not code: it can nest
    deeply enough for a RecursionError or hold a literal that warns)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SyntaxWarning)
            # "invalid escape sequence" before Python 3.12
            warnings.simplefilter("ignore", DeprecationWarning)
            return ast.literal_eval(span)
    except Exception:
        return None


def _set_compact(segment: str, letters: tuple[str, ...]) -> list[str] | None:
    match = _COMPACT.match(segment.strip())
    return list(match.group(1)) if match else None


def _set_from_letters(segment: str, letters: tuple[str, ...]) -> list[str] | None:
    found = [m.group(1).upper() for m in _PAREN.finditer(segment)]
    found += sorted(_standalone_letters(segment, tuple("ABCDEFGH")))
    return found or None


def _set_from_texts(body: str, texts: Mapping[str, str]) -> ParseResult:
    normalized = {k: normalize_text(v) for k, v in texts.items() if normalize_text(v)}
    answer = normalize_text(body)
    hits = [
        k for k, v in normalized.items() if re.search(rf"(?<![a-z0-9]){re.escape(v)}(?![a-z0-9])", answer)
    ]
    hits = [k for k in hits if not any(k != o and normalized[k] in normalized[o] for o in hits)]
    if hits:
        return parsed(
            tuple(sorted(hits)),
            "option_texts",
            f"the response contains the texts of {', '.join(sorted(hits))}",
        )
    return _no_answer(body, "options")


def answer_key_letters(answer: object) -> tuple[str, ...]:
    """The letters of a ground-truth key: ``"(a)"``, ``"B"``, ``"(c) text"``, ``"AC"``, ``"A, C"``, ``["A", "C"]``.

    Raises:
        ValueError: when the key names no option letter (the loader reports it with the item id).
    """
    if isinstance(answer, list | tuple):
        return tuple(sorted({str(a).strip().strip("()").upper() for a in answer}))
    key = str(answer).strip()
    single = re.match(r"^[(\[]?\s*([A-Za-z])\s*[)\]]?(?:[.:]|\s|$)", key)
    if single and (len(key) <= 3 or key[0] in "([" or re.match(r"^[A-Za-z][.:]", key)):
        return (single.group(1).upper(),)
    compact = _COMPACT.match(key)
    if compact:
        return tuple(sorted(compact.group(1)))
    listed = _set_from_literal(key, tuple("ABCDEFGH")) or re.findall(r"(?<![A-Za-z])([A-H])(?![A-Za-z])", key)
    if listed:
        return tuple(sorted(set(listed)))
    raise ValueError(f"answer key {answer!r} names no option letter")


# --------------------------------------------------------------------------------------------------------
# Options written inside a question

_OPTION_STYLES = (
    re.compile(r"\(([A-Fa-f])\)\s*"),  # "(a) Left (b) Right", "(A) train\n(B) lights"
    re.compile(r"(?m)^[ \t]*([A-F])\s*[.:)]\s+"),  # "A: Point A" / "A. chair" on their own lines
    re.compile(r"(?:^|(?<=[\s,;]))([A-F])\.\s+"),  # "Options: A. back-left, B. front-right"
)


def split_lettered_options(question: str) -> dict[str, str]:
    """Options written inside a question, letter -> text; ``{}`` when none are found.

    Letters must run A, B, C... in order of appearance. An option's text stops at the next option, at the
    end of its line, or at ``</choice>``.
    """
    for style in _OPTION_STYLES:
        markers = _consecutive_markers(list(style.finditer(question)))
        if len(markers) >= 2:
            return _option_texts(question, markers)
    return {}


def _consecutive_markers(matches: list[re.Match[str]]) -> list[re.Match[str]]:
    run: list[re.Match[str]] = []
    for match in matches:
        letter = match.group(1).upper()
        if letter == chr(ord("A") + len(run)):
            run.append(match)
        elif letter == "A":
            run = [match]  # a later, fresh list of options replaces an earlier false start
    return run


def _option_texts(question: str, markers: list[re.Match[str]]) -> dict[str, str]:
    options = {}
    for i, match in enumerate(markers):
        end = markers[i + 1].start() if i + 1 < len(markers) else len(question)
        text = question[match.end() : end].split("</choice>")[0].split("\n")[0]
        options[match.group(1).upper()] = text.strip().rstrip(",;").strip()
    return options


# --------------------------------------------------------------------------------------------------------
# Yes / no

_LEADING_YES_NO = re.compile(r"^\W*(yes|no|true|false)\b", re.IGNORECASE)
# "\s*[:=\-]?\s*\W*" matched exactly the strings "\W*" matches, with cubic backtracking on spaces.
_MARKED_YES_NO = re.compile(r"\banswer\b(?:\s+is)?\W*(yes|no|true|false)\b", re.IGNORECASE)
_YES_NO_WORD = re.compile(r"\b(yes|no)\b", re.IGNORECASE)
_TRUE_FALSE_WORD = re.compile(r"\b(not\s+true|true|false)\b", re.IGNORECASE)
_AS_YES_NO = {"yes": "yes", "no": "no", "true": "yes", "false": "no", "not true": "no"}


@bounded_parser
def parse_yes_no(text: object) -> ParseResult:
    """Read ``"yes"`` or ``"no"`` (also true/false). "No, that is not correct." is no."""
    body = clean_response(text)
    if not body:
        return _no_answer(body, "yes_no")
    for pattern, method in ((_LEADING_YES_NO, "leading_word"), (_MARKED_YES_NO, "answer_marker")):
        matches = list(pattern.finditer(body))
        if matches:
            word = matches[-1].group(1).lower()
            return parsed(_AS_YES_NO[word], method, f"{method.replace('_', ' ')} {word!r}")
    for pattern, method in ((_YES_NO_WORD, "only_word"), (_TRUE_FALSE_WORD, "only_truth_word")):
        kinds = {_AS_YES_NO[" ".join(m.group(1).lower().split())] for m in pattern.finditer(body)}
        if len(kinds) == 1:
            value = kinds.pop()
            return parsed(value, method, f"the response says only {value!r}")
        if len(kinds) > 1:
            return failed("ambiguous", "the response says both yes and no")
    return _no_answer(body, "yes_no")


# --------------------------------------------------------------------------------------------------------
# Numbers with units

# Thousands separators: a run of digit groups joined by single commas is one number when it is well formed,
# a first group of 1-3 digits and every later group of exactly 3, with no digit and no ",digit" after it
# ("1,200", "1,234,567.5"; a comma followed by anything else is punctuation: "1,000, or so" reads 1000). A
# malformed run ("1,000,5", "12,34,567", "1234,567") is a list: each comma-separated group is its own
# number, as in "(3,4)". The grouped reading is tried only where a run starts (``(?<!\d,)``): started
# from every group, each attempt scans to the end of the run, quadratic on "1,000,000,...,5".
_NUMBER = re.compile(
    r"(?<![\w.])((?<!\d,)\d{1,3}(?:,\d{3})+(?:\.\d+)?(?!\d|,\d)|\d+(?:\.\d+)?|\.\d+)(?:[eE]([-+]?\d+))?(?![\w.]\d)"
)
_RANGE_JOIN = re.compile(r"^\s*(?:-|–|—|~|to)\s*$", re.IGNORECASE)
# "\s*([^}]*)" is written "\s*([^\s}][^}]*|)" (same groups): the two runs never compete for spaces.
_SCALAR_TAG = re.compile(
    r"\\?scalar\s*\{\s*([^\s}][^}]*|)\}(?:\s*\\?distance_unit\s*\{\s*([^\s}][^}]*|)\})?", re.IGNORECASE
)
_NUMBER_MARKER = re.compile(
    r"\b(?:final\s+answer|answer|estimate|result)\b(?:\s+is)?\s*[:=\-]?", re.IGNORECASE
)
_ONES = [
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
_TENS = {
    "twenty": 20,
    "thirty": 30,
    "forty": 40,
    "fifty": 50,
    "sixty": 60,
    "seventy": 70,
    "eighty": 80,
    "ninety": 90,
}
_NUMBER_WORD = re.compile(
    r"\b(?:(?P<tens>"
    + "|".join(_TENS)
    + r")(?:[\s-](?P<unit>"
    + "|".join(_ONES[1:10])
    + r"))?|(?P<ones>"
    + "|".join(_ONES)
    + r")|(?P<dozen>a dozen))\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class _Number:
    value: float
    start: int
    end: int


def _numbers(text: str, *, last: bool) -> tuple[list[_Number], int]:
    """The first two numbers in ``text`` (the last two with ``last``) and how many there are in all.

    Only these can be the chosen number or join it in a range; building every number of a long text would
    cost seconds per megabyte. The count is exact with ``last``, else it is that of the numbers returned.
    """
    if not last:
        kept = list(itertools.islice(_NUMBER.finditer(text), 2))
        return [_number(text, m) for m in kept], len(kept)
    tail: collections.deque[re.Match[str]] = collections.deque(maxlen=2)
    count = 0
    for match in _NUMBER.finditer(text):
        tail.append(match)
        count += 1
    return [_number(text, m) for m in tail], count


def _number(text: str, match: re.Match[str]) -> _Number:
    value = _magnitude(match.group(1).replace(",", ""), match.group(2))
    if _is_negative(text, match.start()):
        value = -value
    return _Number(value, match.start(), match.end())


#: Beyond this decimal exponent every float is inf (or 0.0 for a negative one); 10 ** 400 is still cheap.
_EXPONENT_LIMIT = 400


def _magnitude(mantissa: str, exponent: str | None) -> float:
    """``mantissa * 10 ** exponent`` as a float, inf when it overflows; never a huge intermediate integer
    (``10 ** 9999999`` takes seconds) nor an ``int()`` of more than 4,300 digits (a ValueError)."""
    value = float(mantissa)
    if not exponent:
        return value
    digits = exponent.lstrip("+-").lstrip("0") or "0"
    power = int(digits) if len(digits) <= 4 else _EXPONENT_LIMIT + 1
    if exponent.startswith("-"):
        power = -power
    if abs(power) <= _EXPONENT_LIMIT:
        try:
            return value * 10**power  # as written before: the same floats for every usual exponent
        except OverflowError:  # int too large to convert to float
            return math.inf if value else 0.0
    if power < 0 or value == 0:
        return 0.0
    return math.inf


def _is_negative(text: str, start: int) -> bool:
    """A minus sign counts unless it joins a range ("10-15" is a range, "-3" is negative)."""
    if start == 0 or text[start - 1] not in "-−":
        return False
    return not _last_non_space(text, start - 1).isdigit()


@bounded_parser
def parse_number(text: object) -> ParseResult:
    """Read a number with its unit (``Quantity``): "2.5 m", "between 3 and 4 feet" (ranges take the maximum),
    "three", ``\\scalar{1.2} \\distance_unit{m}``. With several numbers and no answer marker, the last one is
    taken and the explanation says so. Thousands separators make one number only in a well-formed run
    ("1,234.5"; "1,000," too, the comma being punctuation); a malformed run ("1,000,5") is a list of numbers.
    A number beyond the float range ("1e400", a run of 103 groups) is a failed parse (``number_out_of_range``),
    never an infinity in a score.
    """
    result = _parse_number(text)
    if result.ok and not math.isfinite(result.value.value):
        return failed(
            "number_out_of_range", f"{result.explanation}: {result.value.value} is not a finite float"
        )
    return result


def _parse_number(text: object) -> ParseResult:
    body = clean_response(text)
    if not body:
        return _no_answer(body, "number")
    tagged = _from_scalar_tag(body)
    if tagged is not None:
        return tagged
    markers = list(_NUMBER_MARKER.finditer(body))
    if markers:
        marked = _quantity_in(
            body[markers[-1].end() :].split("\n")[0], "answer_marker", "after the answer marker"
        )
        if marked is not None:
            return marked
    found = _quantity_in(body, "number", "in the response", last=True)
    return found if found is not None else _from_words(body)


def _from_scalar_tag(body: str) -> ParseResult | None:
    # A tag ends with "}": searching only up to the last one keeps each "scalar{" from scanning to the end of
    # the text when no "}" follows (quadratic on "scalar{scalar{..."). Same first match.
    match = _SCALAR_TAG.search(body, 0, body.rfind("}") + 1)
    if match is None:
        return None
    numbers, _ = _numbers(match.group(1), last=True)
    if not numbers:
        return failed("no_number", f"empty scalar tag {match.group(0)!r}")
    unit, _ = read_unit(match.group(2) or "")
    return parsed(Quantity(numbers[-1].value, unit), "scalar_tag", f"scalar tag {match.group(0)!r}")


def _quantity_in(text: str, method: str, where: str, *, last: bool = False) -> ParseResult | None:
    numbers, count = _numbers(text, last=last)
    if not numbers:
        return None
    index = len(numbers) - 1 if last else 0
    number, span = _with_range(text, numbers, index)
    unit, _ = read_unit(text[number.end :])
    if span:
        return parsed(Quantity(number.value, unit), "range_max", f"range {span!r} {where}: took the maximum")
    note = f"{count} numbers {where}; took the last" if last and count > 1 else f"number {where}"
    return parsed(Quantity(number.value, unit), method if not (last and count > 1) else "last_number", note)


def _with_range(text: str, numbers: list[_Number], index: int) -> tuple[_Number, str]:
    """The chosen number, or the larger end of a range it belongs to (with the range's text).

    ``numbers`` holds the chosen number and its neighbour(s): only a pair holding it can be its range.
    """
    number = numbers[index]
    pairs = [(numbers[i], numbers[i + 1]) for i in range(len(numbers) - 1)]
    for low, high in pairs:
        if number in (low, high) and _joins_range(text, low, high):
            return (high if high.value >= low.value else low), text[low.start : high.end]
    return number, ""


def _joins_range(text: str, low: _Number, high: _Number) -> bool:
    between = text[low.end : high.start]
    unit, span = read_unit(between)
    if unit is not None:
        between = between[span:]
    if _RANGE_JOIN.match(between):
        return True
    return (
        between.strip().lower() == "and"
        and re.search(r"between\s*$", text[: low.start], re.IGNORECASE) is not None
    )


def _from_words(body: str) -> ParseResult:
    words = list(_NUMBER_WORD.finditer(body))
    if not words:
        return _no_answer(body, "number")
    match = words[-1]
    unit, _ = read_unit(body[match.end() :])
    note = f"number word {match.group(0)!r}" + ("; took the last of several" if len(words) > 1 else "")
    return parsed(Quantity(_word_value(match), unit), "number_word", note)


def _word_value(match: re.Match[str]) -> float:
    if match.group("dozen"):
        return 12.0
    if match.group("ones"):
        return float(_ONES.index(match.group("ones").lower()))
    unit = match.group("unit")
    return float(_TENS[match.group("tens").lower()] + (_ONES.index(unit.lower()) if unit else 0))


# --------------------------------------------------------------------------------------------------------
# Bounding boxes

# "bounding\s*box\s*:?\s*" matched the same strings, but without a colon its two space runs compete: every
# split of the spaces after "Bounding Box" was tried (quadratic). The colon carries its own spaces here.
_BOX_LABELLED = (
    re.compile(r"[\"']?bbox_2d[\"']?\s*:\s*(\[[^\[\]]*\])", re.IGNORECASE),
    re.compile(r"bounding\s*box\s*(?::\s*)?(\[[^\[\]]*\])", re.IGNORECASE),
)
_BOX_BARE = re.compile(r"(\[[^\[\]]*\]|\([^()]*\))")
_COORD = re.compile(r"[-+]?(?:\d+(?:\.\d+)?|\.\d+)(?:[eE][-+]?\d+)?")
BOX_SCALES = ("auto", "0-1", "0-1000", "pixel")


@bounded_parser
def parse_box(
    text: object, *, scale: str = "auto", image_size: tuple[float, float] | None = None
) -> ParseResult:
    """Read an ``[x1, y1, x2, y2]`` box and normalise it to 0-1.

    Args:
        text: the model's raw response; a ``"bbox_2d"`` key or a ``Bounding Box:`` label is preferred over
            a bare four-number list.
        scale: ``"auto"`` (all coordinates <= 1 means 0-1, otherwise <= 1000 means 0-1000), ``"0-1"``,
            ``"0-1000"``, or ``"pixel"`` (needs ``image_size``). ``auto`` never guesses pixels.
        image_size: (width, height) for pixel coordinates.

    The value is the normalised box; ``ok`` is False (value kept) when it is degenerate or outside the image.
    """
    if scale not in BOX_SCALES:
        raise ValueError(f"unknown box scale {scale!r}; use one of {BOX_SCALES}")
    body = clean_response(text)
    if not body:
        return _no_answer(body, "box")
    coords, where, problem = _box_coordinates(body)
    if coords is None:
        return failed(
            "malformed_box" if problem else "no_box", problem or f"no four-number box in {_clip(body)}"
        )
    return _normalised_box(coords, where, scale, image_size)


def _box_coordinates(body: str) -> tuple[list[float] | None, str, str]:
    """The first well-formed four-number list: labelled ones first, then bare ones."""
    problem = ""
    for where, chunks in (
        ("labelled", _labelled_chunks(body)),
        ("bare", (m.group(1) for m in _BOX_BARE.finditer(body))),
    ):
        for chunk in chunks:
            parts = [p.strip() for p in chunk[1:-1].split(",")]
            if len(parts) != 4:
                continue
            if all(_COORD.fullmatch(p) for p in parts):
                return [float(p) for p in parts], where, ""
            problem = problem or f"malformed coordinates in {chunk!r}"
    return None, "", problem


def _labelled_chunks(body: str) -> Iterator[str]:
    for pattern in _BOX_LABELLED:
        for match in pattern.finditer(body):
            yield match.group(1)


def _normalised_box(
    coords: list[float], where: str, scale: str, image_size: tuple[float, float] | None
) -> ParseResult:
    chosen = scale
    if scale == "auto":
        top = max(abs(c) for c in coords)
        chosen = "0-1" if top <= 1 else "0-1000" if top <= 1000 else ""
        if not chosen:
            return failed(
                "box_scale_unknown",
                f"coordinates {coords} exceed 1000: pixel coordinates? pass the pixel scale",
            )
    if chosen != "pixel":
        divisors = {"0-1": (1.0, 1.0), "0-1000": (1000.0, 1000.0)}[chosen]
    elif image_size is None:
        raise ValueError("parse_box(scale='pixel') needs image_size=(width, height)")
    else:
        divisors = image_size
    box = (coords[0] / divisors[0], coords[1] / divisors[1], coords[2] / divisors[0], coords[3] / divisors[1])
    how = f"{where} box {coords} read on the {chosen} scale"
    problem = _box_problem(box)
    return (
        ParseResult(box, False, "invalid_box", f"{how}; {problem}")
        if problem
        else parsed(box, f"box_{chosen}", how)
    )


def _box_problem(box: tuple[float, float, float, float]) -> str:
    if not all(math.isfinite(v) for v in box):
        return "non-finite coordinate"
    if box[2] <= box[0] or box[3] <= box[1]:
        return "x2 <= x1 or y2 <= y1"
    if min(box) < 0 or max(box) > 1:
        return "coordinates outside the image"
    return ""


@bounded_parser
def parse_parameters(text: str, expected: Mapping[str, Any]) -> ParseResult:
    """Named numbers (``"pitch": 3.2``...) from a JSON object or ``name: value`` text; at least one expected."""
    block = outer_braces(text or "")
    values: dict[str, float] = {}
    # read from the JSON, even when unusable (1e400): no second reading from the text
    in_json: set[str] = set()
    if block:
        try:
            data = json.loads(re.sub(r",\s*([}\]])", r"\1", block))
        except (ValueError, RecursionError):  # bad JSON, an int over 4,300 digits, deep nesting
            data = None
        if isinstance(data, dict):
            found = {
                k: _finite_float(v) for k, v in data.items() if k in expected and isinstance(v, int | float)
            }
            values, in_json = {k: v for k, v in found.items() if v is not None}, set(found)
    for name in expected:
        if name not in values and name not in in_json:
            match = re.search(
                rf"[\"']?{re.escape(name)}[\"']?\s*[:=]\s*(-?\d+(?:\.\d+)?)", text or "", re.IGNORECASE
            )
            value = _finite_float(match.group(1)) if match else None
            if value is not None:
                values[name] = value
    if not values:
        return failed("no_parameters", f"none of {', '.join(expected)} found")
    missing = [k for k in expected if k not in values]
    return parsed(
        values,
        "named_numbers",
        f"missing {', '.join(missing)} (scored 0)" if missing else "all parameters read",
    )


def _finite_float(value: Any) -> float | None:
    """``float(value)`` when finite; None for a number beyond the float range (e.g. 400 digits), never a raise."""
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) else None
