"""Every parser that reads model output, as a one-argument callable, and the inputs that once made them slow.

The hardening checks use this one list: ``bench/parser_speed.py`` times every parser on every pattern from
1 KB to 1 MB, and the tests fuzz every parser and replay each pattern. A parser added to the project belongs
here, so that it is held to the same bounds: linear time in its input, no exception on any text.
"""

from __future__ import annotations

import base64
import functools
import io
from collections.abc import Callable
from typing import Any

import numpy as np

from action_mapping import NAVIGATION_STEP_SIZES
from action_mapping.parsing import parse_plan
from benchmarks.posttrain import multihop_rewards, spatial_rewards
from benchmarks.scoring import judge, parsers
from benchmarks.scoring.goal import GoalReference, score_goal
from benchmarks.scoring.official import (
    cogmap,
    multihop,
    space10,
    space10_stats,
    spatialscore,
    spatialtree,
    vsibench,
)
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
#: A cognitive map's reference, its objects named as in the "huge map" pattern so that the maps overlap.
_COGMAP_HINT = {
    "id_type": "among",
    "cogmap": {
        "o1": {"position": [0, 0], "facing": "up"},
        "o2": {"position": [3, 1]},
        "o3": {"position": [1, 5], "facing": "left"},
    },
}
_REFERENCE_BOX = [100, 200, 300, 400]
#: One corpus row of each kind the spatial rewards know: (reference answer, reference box).
_REWARD_ROWS = (
    ("(a) chair", [100, 200, 300, 400]),
    (None, [100, 200, 300, 400]),
    ("(b) table", None),
    ("2.5 m", None),
)


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


@functools.cache
def _mask() -> str:
    """A 4 x 4 affordance mask (base64 PNG) with values 0-255, built once."""
    from PIL import Image

    buffer = io.BytesIO()
    Image.fromarray(np.arange(0, 256, 16, dtype=np.uint8).reshape(4, 4)).save(buffer, format="PNG")
    return base64.b64encode(buffer.getvalue()).decode("ascii")


@functools.cache
def _goal_reference() -> GoalReference:
    return GoalReference(
        "nav", parse_plan('{"step_1": {"actions": ["W"], "step_nums": [2]}}'), NAVIGATION_STEP_SIZES
    )


def _rewards(text: str) -> tuple[float, ...]:
    """MultihopSpatial's recipe on a thinking model's completion (answer part, then the three terms and the
    truncation penalty), and the spatial rewards' three terms on a row of each kind."""
    answer = multihop_rewards.strip_thinking(text)
    recipe = (
        multihop_rewards.total_reward(answer, "(a) chair", _REFERENCE_BOX),
        multihop_rewards.truncation_term(text),
    )
    spatial = tuple(
        f(text, response, box)
        for response, box in _REWARD_ROWS
        for f in (
            spatial_rewards.format_score,
            spatial_rewards.accuracy_score,
            lambda t, r, b: multihop_rewards.bbox_term(t, b),
        )
    )
    return recipe + spatial


def _cogmap(text: str) -> Any:
    try:
        return cogmap.score(text, "A", _COGMAP_HINT)
    except cogmap.CogmapError as error:  # documented: where upstream's metric raises (the item scores 0)
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
    "spatialtree.parse_multiple_choice": _capped(
        lambda t: spatialtree.parse_multiple_choice(t, list(_OPTIONS.values()), "item-1")
    ),
    "spatialtree.mean_relative_accuracy": _capped(lambda t: spatialtree.mean_relative_accuracy(t, "3")),
    "spatialtree.gravity_score": _capped(
        lambda t: spatialtree.gravity_score(t, _GRAVITY_TRUTH, _GRAVITY_HINT)
    ),
    "spatialtree.last_yes_no": _capped(spatialtree.last_yes_no),
    "spatialtree.last_point": _capped(spatialtree._last_point),
    "spatialtree.affordance_score": _capped(lambda t: spatialtree.affordance_score(t, _mask())),
    "spatialtree.cogmap_score": _capped(_cogmap),
    "spatialscore.score_item": _capped(lambda t: spatialscore.score_item("open-ended", "VSI-Bench", t, "3")),
    "multihop.score_lmms": _capped(lambda t: multihop.score_lmms(t, "(a) chair", [10, 20, 30, 40], 640, 480)),
    "space10_stats.parse_json_objects": space10_stats.parse_json_objects,
    "space10_stats.predicted_options": space10_stats.predicted_options,
    "vsibench.mca_score": _capped(lambda t: vsibench.mca_score(t, "A")),
    "vsibench.na_score": _capped(lambda t: vsibench.na_score(t, "3")),
    "goal.score_goal_paper": lambda t: score_goal(t, _goal_reference(), "paper"),
    "goal.score_goal_lmms_eval": lambda t: score_goal(t, _goal_reference(), "lmms-eval"),
    "rewards.multihop_and_spatial": _rewards,
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
        return (
            (head + unit * (body // len(unit) + 1))[: n - len(tail)] + tail if body > 0 else (head + tail)[:n]
        )

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


def _padded(text: str, n: int, at: int = 0) -> str:
    """``text`` with spaces inserted at ``at`` to make ``n`` characters (cut to ``n`` when longer)."""
    return (text[:at] + " " * (n - len(text)) + text[at:])[:n]


def _separator_run(tail: str) -> Callable[[int], str]:
    """``1,000,000,...`` + ``tail``, the run as long as fits in ``n`` characters, spaces before it."""
    return lambda n: _padded("1" + ",000" * max((n - 1 - len(tail)) // 4, 0) + tail, n)


#: Labels the readers look for, each followed below by a run of spaces and no colon.
_LABELS = (
    "Bounding Box",
    "bbox_2d",
    "Answer",
    "answer is",
    "final answer",
    "The correct option is",
    "Option",
    "<Answer>",
    "My answer is",
    "x",
    "y",
    "roll",
    "pitch",
    "vfov",
    "output",
    "score",
    "scalar",
    "distance_unit",
    "step_1",
    "actions",
    "estimate",
)


def _labels_then_spaces(n: int) -> str:
    """Every label followed by its own run of spaces, then ``x`` (quadratic in each run where a regex lets
    two space runs compete around an optional colon)."""
    run = max(n // len(_LABELS), 1)
    text = "".join(label + " " * max(run - len(label) - 1, 1) + "x" for label in _LABELS)
    return _padded(text, n, at=len(text) - 1)  # the last run takes what is left


def _cognitive_map(n: int) -> str:
    """A valid cognitive map (objects ``o0``, ``o1``... in a grid) after the letter "A.", padded to ``n``."""
    entries, size = [], len("A. {}")
    for i in range(n):
        entry = f'"o{i}": {{"position": [{i % 97}, {i // 97}], "facing": "up"}}'
        if size + len(entry) + 2 > n:
            break
        entries.append(entry)
        size += len(entry) + 2
    return _padded("A. {" + ", ".join(entries) + "}", n, at=3)


def _huge_numbers(digits: int) -> str:
    """One number of ``digits`` digits in each form a reader takes a number from: a box, a point, ``x=``, a
    map position, a JSON field, a JSON record; then number words past the float range."""
    big = "1" + "0" * (digits - 1)
    return (
        f"Answer: (a) x\nBounding Box: [{big}, 2, 3, 4] ({big}, 2) x={big} y=1 "
        f'{{"o1": {{"position": [{big}, 0]}}, "roll": {big}}}{{"prediction": [{big}]}} three '
        + "hundred "
        * 140
    )


#: name -> input of (about) n characters. Each once took super-linear time or raised in some parser.
PATTERNS: dict[str, Callable[[int], str]] = {
    "exponent digits (about 1e999...)": _fill("about 1e", "9"),
    "huge exponent numbers (1e9999999 )": _fill("", "1e9999999 "),
    "answer + spaces": _fill("answer", " ", "x"),
    "unclosed fence + one long line": _fill(
        '```json\n{"step_1": {"actions": ["W"], "step_nums": [1]}, ', '"step_2": {"actions": ["W", "A"], '
    ),
    "unclosed fence + spaces": _fill("```", " ", "x"),
    "bare items ([W W ...] with commas)": _fill("[", "W, "),
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
    "Python-literal plan": _fill(
        "{'step_1': {'actions': ['W'], 'step_nums': [1]}, 'step_2': {'actions': [", "'W', "
    ),
    "separator run + trailing comma": _separator_run(","),
    "malformed separator run": _separator_run(",5"),
    "labels + spaces (no colon)": _labels_then_spaces,
    "huge cognitive map": _cognitive_map,
    "huge numbers in answer forms (400 digits)": _fill("", _huge_numbers(400)),  # past the float range
    "huge numbers in answer forms (5000 digits)": _fill("", _huge_numbers(5000)),  # past Python's int() limit
    "number words (hundred hundred ...)": _fill("three ", "hundred "),
}
