"""Every parser that reads model output, as a one-argument callable, and the inputs that once made them slow.

The hardening checks use this one list: ``bench/parser_speed.py`` times every parser on every pattern from
1 KB to 1 MB, and the tests fuzz every parser and replay each pattern. A parser added to the project belongs
here, so that it is held to the same bounds: linear time in its input, no exception on any text.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from action_mapping.parsing import parse_plan
from benchmarks.scoring import judge, parsers
from benchmarks.scoring.official import multihop, space10, spatialscore, spatialtree
from benchmarks.scoring.official.goal_lmms_eval import lmms_eval_decode
from benchmarks.scoring.parsers import (
    answer_key_letters,
    parse_box,
    parse_number,
    parse_option,
    parse_option_set,
    parse_yes_no,
    split_lettered_options,
)

_OPTIONS = {"A": "left", "B": "right", "C": "front left", "D": "back"}
_GRAVITY_TRUTH = '{"roll": 1.0, "pitch": 2.0, "vfov": 50.0}'
_GRAVITY_HINT = {"roll_unc": 1.0, "pitch_unc": 1.0, "vfov_unc": 5.0}


def _parameters(text: str) -> Any:
    """SpatialTree's camera-parameter parser (pitch and roll expected)."""
    return parsers.parse_parameters(text, {"pitch": 1.0, "roll": 2.0})


def _capped(parse: Callable[[str], Any]) -> Callable[[str], Any]:
    """``parse`` behind the cap the static runner applies to official-compatible scorers
    (``result.bounded_scorer``), read at call time so that a benchmark can lift it."""
    return lambda text: parse(parsers.bounded(text)[0])


def _repo_box(text: str) -> Any:
    try:
        return multihop.parse_box_repo(text)
    except multihop.MalformedBoxError as error:  # the reproduced script's documented crash ("1.2.3")
        return str(error)


def _answer_key(text: str) -> Any:
    try:
        return answer_key_letters(text)
    except ValueError as error:  # documented: a key naming no letter is a loader error
        return str(error)


#: name -> parser of one model response (fixed options / truths where the parser needs them). The
#: official-compatible scorers come behind the runner's cap, as the static benchmarks call them.
PARSERS: dict[str, Callable[[str], Any]] = {
    "parse_option": lambda t: parse_option(t, _OPTIONS),
    "parse_option_set": lambda t: parse_option_set(t, _OPTIONS),
    "parse_yes_no": parse_yes_no,
    "parse_number": parse_number,
    "parse_box": parse_box,
    "parse_plan": parse_plan,
    "goal.lmms_eval_decode": lmms_eval_decode,
    "multihop.parse_answer": _capped(multihop.parse_answer),
    "multihop.parse_box_lmms": _capped(multihop.parse_box_lmms),
    "multihop.parse_box_repo": _capped(_repo_box),
    "space10.read_answer": _capped(lambda t: space10.read_answer(t, _OPTIONS, False)),
    "space10.read_answer_multiple": _capped(lambda t: space10.read_answer(t, _OPTIONS, True)),
    "spatialscore.extract_option": _capped(spatialscore.extract_option),
    "spatialscore.extract_yes_no": _capped(spatialscore.extract_yes_no),
    "spatialscore.extract_number": _capped(spatialscore.extract_number),
    "spatialscore.numeric_with_unit": _capped(lambda t: spatialscore.numeric_with_unit_correct(t, "3 m")),
    "spatialtree.parse_multiple_choice": _capped(lambda t: spatialtree.parse_multiple_choice(t, list(_OPTIONS.values()), "item-1")),
    "spatialtree.mean_relative_accuracy": _capped(lambda t: spatialtree.mean_relative_accuracy(t, "3")),
    "spatialtree.gravity_score": _capped(lambda t: spatialtree.gravity_score(t, _GRAVITY_TRUTH, _GRAVITY_HINT)),
    "spatialtree.last_yes_no": _capped(spatialtree.last_yes_no),
    "spatialtree.last_point": _capped(spatialtree._last_point),
    "static.spatialtree.parse_parameters": _parameters,
    "judge.parse_output_line": judge.parse_output_line,
    "judge.parse_json_score": judge.parse_json_score,
    "answer_key_letters": _answer_key,
    "split_lettered_options": split_lettered_options,
}


def _fill(head: str, unit: str, tail: str = "") -> Callable[[int], str]:
    """``head + unit * k + tail``, cut to exactly ``n`` characters (the tail kept when it fits)."""

    def make(n: int) -> str:
        body = n - len(head) - len(tail)
        return (head + unit * (body // len(unit) + 1))[: n - len(tail)] + tail if body > 0 else (head + tail)[:n]

    return make


def _distinct_fences(n: int) -> str:
    """Many fenced blocks sharing a long prefix (the de-duplication compared each with all before it)."""
    width = max(int(n**0.5), 8)
    blocks, size, i = [], 0, 0
    while size < n:
        block = "```\n" + "x" * width + f"{i}\n```\n"
        blocks.append(block)
        size += len(block)
        i += 1
    return "".join(blocks)[:n]


#: name -> input of (about) n characters. Each once took super-linear time or raised in some parser.
PATTERNS: dict[str, Callable[[int], str]] = {
    "exponent digits (about 1e999...)": _fill("about 1e", "9"),
    "huge exponent numbers (1e9999999 )": _fill("", "1e9999999 "),
    "answer + spaces": _fill("answer", " ", "x"),
    "unclosed fence + one long line": _fill('```json\n{"step_1": {"actions": ["W"], "step_nums": [1]}, ', '"step_2": {"actions": ["W", "A"], '),
    "unclosed fence + spaces": _fill("```", " ", "x"),
    "bare items ([W, W, ...)": _fill("[", "W, "),
    "bare item with spaces": _fill("[a", " ", "b]"),
    "unclosed <think>": _fill("", "<think>"),
    "unclosed <answer>": _fill("", "<answer>"),
    "scalar{ repeated": _fill("", "scalar{"),
    "repeated letters (A A A)": _fill("", "A "),
    "1-1-1-...": _fill("", "1-"),
    "distinct fenced blocks": _distinct_fences,
    "long digit run": _fill("[", "1"),
    "big integer in a plan": _fill('{"step_1": {"actions": ["W"], "step_nums": [0x', "f", "]}}"),
    "unclosed braces": _fill("", "{"),
    "numbers with commas": _fill("", "1,"),
    "unclosed <conclusion>(a)": _fill("", "<conclusion>(a)\n"),
    "many fenced lists to repair": _fill("", "```\n[a, b, 'c', (1, 2),\n```\n"),
    "Python-literal plan": _fill("{'step_1': {'actions': ['W'], 'step_nums': [1]}, 'step_2': {'actions': [", "'W', "),
}
