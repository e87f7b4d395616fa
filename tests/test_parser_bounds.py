"""Every parser of model output is bounded: linear time, an input cap recorded as a parse error, no exception.

Regression cases replay each input that once took quadratic (or worse) time or raised, with a time bound
generous enough for a loaded 2-core machine and the parse result it must give. A bounded hypothesis fuzz
runs every parser of :mod:`benchmarks.scoring.parser_catalog` in the default run; the slow-marked fuzz feeds
each parser 100,000 generated inputs.
"""

from __future__ import annotations

import json
import math
import random
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from action_mapping import ERROR_CODES, NAVIGATION_STEP_SIZES, Plan, Primitive, parse_plan
from action_mapping import parsing as plan_parsing
from benchmarks.scoring import judge, parsers
from benchmarks.scoring.goal import GoalReference, score_goal
from benchmarks.scoring.official import multihop, spatialscore, spatialtree
from benchmarks.scoring.official.goal_lmms_eval import lmms_eval_decode
from benchmarks.scoring.parser_catalog import PARSERS, PATTERNS
from benchmarks.scoring.parsers import (
    ParseResult,
    parse_box,
    parse_number,
    parse_option,
    parse_option_set,
    parse_yes_no,
)
from benchmarks.scoring.result import JudgeScore, SampleScore, bounded_scorer

LIMIT_S = 2.0  # for 100-200 KB inputs; each takes well under 0.3 s on an idle machine
SIZE = 150_000  # under the static parsers' cap (parsers.MAX_RESPONSE_CHARS, 200,000)
PLAN_SIZE = 45_000  # under the plan cap (parsing.MAX_PLAN_CHARS, 50,000)


def timed(parse: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``parse(*args)``, asserting it took less than :data:`LIMIT_S`."""
    start = time.perf_counter()
    result = parse(*args, **kwargs)
    elapsed = time.perf_counter() - start
    assert elapsed < LIMIT_S, f"{getattr(parse, '__name__', parse)} took {elapsed:.2f} s"
    return result


# --------------------------------------------------------------------------------------------------------
# Numbers: magnitudes computed safely


@pytest.mark.parametrize("text", ["1e400", "Roughly 1e400 m", "about 1e999999999999999999999999999999", "1e9999999 meters", "9" * 400 + " m"])
def test_numbers_beyond_the_float_range_are_failed_parses(text):
    result = timed(parse_number, text)
    assert (result.ok, result.method) == (False, "number_out_of_range"), result


def test_huge_negative_exponents_and_normal_exponents_keep_their_values():
    assert parse_number("1e-400 m").value.value == 0.0
    assert parse_number("2.5e3 m").value.value == 2500.0 and parse_number("2.5e3 m").value.unit == "m"
    assert parse_number("4e-3").value.value == 4 * 10**-3  # the same float as before the rewrite
    assert timed(parse_number, "about 1e-" + "9" * SIZE).value.value == 0.0


def test_a_long_exponent_is_read_in_linear_time():
    result = timed(parse_number, "about 1e" + "9" * SIZE)
    assert result.method == "number_out_of_range"


def test_minus_chains_read_as_ranges_in_linear_time():
    result = timed(parse_number, "1-" * (SIZE // 2) + "3 m")
    assert (result.ok, result.method, result.value.value, result.value.unit) == (True, "range_max", 3.0, "m")


# --------------------------------------------------------------------------------------------------------
# Static parsers: each pathological pattern, with its correct result


def test_yes_no_after_a_long_run_of_spaces():
    result = timed(parse_yes_no, "The answer" + " " * SIZE + ": yes")
    assert (result.value, result.method) == ("yes", "answer_marker")
    assert timed(parse_yes_no, "answer" + " " * SIZE).method == "no_yes_no"


def test_unclosed_think_blocks_hide_what_follows():
    result = timed(parse_option, "The answer is B. " + "<think>" * (SIZE // 7), "ABCD")
    assert (result.value, result.method) == ("B", "answer_marker")
    assert timed(parse_option, "<think>" * (SIZE // 7), "ABCD").method == "empty"


def test_unclosed_answer_tags():
    assert timed(parse_option, "<answer>C</answer>" + "<answer>" * (SIZE // 8), "ABCD").value == "C"
    assert timed(parse_yes_no, "<answer>" * (SIZE // 8) + " no").value == "no"


def test_scalar_tags_without_closing_brace():
    result = timed(parse_number, "\\scalar{3.5} \\distance_unit{m}" + " scalar{" * (SIZE // 8))
    assert (result.method, result.value.value, result.value.unit) == ("scalar_tag", 3.5, "m")
    assert timed(parse_number, "scalar{" * (SIZE // 7)).method == "no_number"
    unit_open = timed(parse_number, "\\scalar{2}\\distance_unit{" + " " * SIZE)
    assert (unit_open.value.value, unit_open.value.unit) == (2.0, None)


def test_repeated_letters():
    assert timed(parse_option, "A " * (SIZE // 2), "ABCD").value == "A"
    assert timed(parse_option, "A B " * (SIZE // 4), "ABCD").method == "ambiguous"
    assert timed(parse_option_set, "A, C " * (SIZE // 5), "ABCD").value == ("A", "C")
    assert timed(parse_option, "Answer" + " " * SIZE + "x", "ABCD").method == "letter_out_of_range"  # X
    assert timed(parse_option, "A" + " " * SIZE + "x", "ABCD").method == "standalone_letter"


def test_boxes_among_many_brackets():
    result = timed(parse_box, "(" * SIZE + " [0.1, 0.2, 0.3, 0.4]")
    assert result.value == (0.1, 0.2, 0.3, 0.4)


# --------------------------------------------------------------------------------------------------------
# parse_plan: fences, bare items, de-duplication, huge integers


def _minified_steps(n: int) -> str:
    return ",".join(f'"step_{i}":{{"actions":["W","A"],"step_nums":[1,2]}}' for i in range(1, n + 1))


def test_unclosed_fence_followed_by_one_long_line():
    text = "```json\n{" + _minified_steps(2000)[:PLAN_SIZE]  # a minified plan cut off by the token limit
    plan = timed(parse_plan, text)
    assert len(plan.steps) > 800 and plan.format == "navigation"
    assert "repaired_json" in plan.error_codes and all(code in ERROR_CODES for code in plan.error_codes)
    assert timed(parse_plan, "```" + "a" * PLAN_SIZE).error_codes == ["no_json"]


def test_bare_item_repair():
    k = PLAN_SIZE // 6
    text = '{"step_1": {"actions": [' + ", ".join(["W"] * k) + '], "step_nums": [' + ", ".join(["1"] * k) + "]}}"
    plan = timed(parse_plan, text)
    assert plan.steps[0].actions == [Primitive.DOLLY_IN] * k and "repaired_json" in plan.error_codes
    spaced = timed(parse_plan, '{"step_1": {"actions": [W' + " " * PLAN_SIZE + '], "step_nums": [2]}}')
    assert (spaced.steps[0].actions, spaced.steps[0].step_nums) == ([Primitive.DOLLY_IN], [2])


def test_many_distinct_fenced_blocks_before_the_plan():
    blocks = "".join("```\n" + "x" * 300 + f"{i}\n```\n" for i in range(PLAN_SIZE // 320))
    plan = timed(parse_plan, blocks + '```json\n{"step_1": {"actions": ["D"], "step_nums": [3]}}\n```')
    assert (plan.steps[0].actions, plan.steps[0].step_nums, plan.errors) == ([Primitive.TRUCK_RIGHT], [3], [])


def test_unclosed_fences_and_braces():
    assert timed(parse_plan, "```json\n" + " " * PLAN_SIZE).error_codes == ["no_json"]
    assert "invalid_json" in timed(parse_plan, "{" * PLAN_SIZE).error_codes
    assert "invalid_json" in timed(parse_plan, "[a" + " " * PLAN_SIZE).error_codes


@pytest.mark.parametrize(
    "text, code",
    [
        ('{"step_1": {"actions": ["W"], "step_nums": [0x' + "f" * 5000 + "]}}", "step_num_capped"),
        ('{"step_1": {"actions": ["W"], "step_nums": [-0x' + "f" * 5000 + "]}}", "bad_step_num"),
        ('{"step_1": {"actions": ["W"], "step_nums": ["' + "1" * 400 + '"]}}', "bad_step_num"),
        ('{"step_1": {"actions": [0x' + "f" * 5000 + '], "step_nums": [1]}}', "unknown_action"),
        ('{"step_1": {"actions": ["W"], "step_nums": [1], "gripper": 0x' + "f" * 5000 + "}}", "bad_gripper"),
        ('{"executable_plan": [{"action_id": 0x' + "f" * 5000 + "}]}", "bad_action_id"),
        ('{"executable_plan": [{"action_id": "' + "1" * 5000 + '"}]}', "bad_action_id"),
        ('{"executable_plan": [{"action_id": "²"}, {"action_id": "--1"}]}', "bad_action_id"),
        ('{"executable_plan": [{"action": [0x' + "f" * 5000 + ", 0, 0, 0, 0, 0, 0]}]}", "bad_vector"),
        ('{"step_' + "1" * 5000 + '": {"actions": ["W"], "step_nums": [1]}}', "step_order"),
    ],
)
def test_plans_with_huge_integers_never_raise(text, code):
    plan = timed(parse_plan, text)
    assert code in plan.error_codes, plan.errors
    assert all(c in ERROR_CODES for c in plan.error_codes)
    json.dumps(plan.to_json())


def test_goal_scorers_score_huge_integers_zero_and_write_json():
    ref = GoalReference("nav", parse_plan('{"step_1": {"actions": ["W"], "step_nums": [2]}}'), NAVIGATION_STEP_SIZES)
    stepped = '{"step_1": {"actions": ["W"], "step_nums": [0x' + "f" * 5000 + "]}}"  # what the paper scorer reads
    top_level = '{"actions": ["W"], "step_nums": [0x' + "f" * 5000 + "]}"  # what lmms-eval's navigation reads
    for scorer in ("paper", "lmms-eval"):
        for text in (stepped, top_level):
            score = timed(score_goal, text, ref, scorer)
            json.dumps(score.to_json())  # a record can be written for it
            assert math.isfinite(score.value)
    paper = score_goal(stepped, ref, "paper")
    assert any(e.startswith("step_num_capped") for e in paper.parse_errors) and not paper.parse_failed  # read as 10
    lmms = score_goal(top_level, ref, "lmms-eval")
    assert (lmms.value, lmms.parse_failed, lmms.metadata["failure"]) == (0.0, True, "scorer_raises")


def test_goal_lmms_eval_fences():
    value, how = timed(lmms_eval_decode, "```json" + " " * (PLAN_SIZE // 2) + '{"a": 1}' + " " * 1000 + "```")
    assert (value, how) == ({"a": 1}, "```json block, json")
    value, how = timed(lmms_eval_decode, "```" + " x" * (PLAN_SIZE // 2))
    assert value is None and how.startswith("whole text")


# --------------------------------------------------------------------------------------------------------
# Official-compatible scorers and judges


def test_official_number_patterns_on_long_digit_runs():
    digits = "1" * SIZE
    assert timed(multihop.parse_box_lmms, "[" + digits) is None
    assert timed(multihop.parse_box_lmms, "[" + digits + ", 2, 3, 4]") == [v / 1000.0 for v in (float(digits), 2, 3, 4)]
    assert timed(spatialtree.find_number, "(" + digits + "x") == digits
    assert timed(spatialtree._last_point, digits + "!") is None
    assert timed(spatialtree._last_point, "-" + digits[:3] + ",2") == (-111.0, 2.0)
    assert timed(spatialscore.numeric_with_unit_correct, "**" + digits, "3 m")[0] is False
    assert timed(spatialscore.numeric_with_unit_correct, digits + "! about 3 m", "3 m") == (True, "3.0 m vs 3.0 m: ratio 1 (correct below 2.0)")
    assert timed(spatialscore.extract_option, "<conclusion>(b)\n" * (SIZE // 16) + "<conclusion>(c) x</conclusion>") == "C"


def test_official_json_blocks_and_huge_integers():
    hint = {"roll_unc": 1.0, "pitch_unc": 1.0, "vfov_unc": 1.0}
    truth = '{"roll": 1, "pitch": 1, "vfov": 1}'
    assert timed(spatialtree.gravity_score, "```json\n" * (SIZE // 8), truth, hint) == (0.0, "unparsable JSON")
    huge = '{"roll": 1' + "0" * 5000 + ', "pitch": 1, "vfov": 1}'
    assert spatialtree.gravity_score(huge, truth, hint) == (0.0, "unparsable JSON")  # over 4,300 digits
    big = '{"roll": 1' + "0" * 400 + ', "pitch": 1, "vfov": 1}'
    assert spatialtree.gravity_score(big, truth, hint)[1].startswith("scorer error: OverflowError")


def test_judges_never_raise():
    assert timed(judge.parse_json_score, "{" * SIZE).ok is False
    assert judge.parse_json_score('{"score": 1' + "0" * 5000 + "}").ok is False
    assert judge.parse_json_score('{"score": 1' + "0" * 400 + "}").ok is False
    assert judge.parse_json_score('{"score": 0.5, "reason": 0x' + "f" * 5000 + "}").ok is False
    assert judge.parse_json_score('x {"score": 0.5} y').score == 0.5
    assert judge.parse_output_line("output: " + "9" * 400).ok is False


def test_parse_parameters_huge_numbers():
    from benchmarks.static.spatialtree import parse_parameters

    result = timed(parse_parameters, "{" * SIZE + ' "pitch": 3.5', {"pitch": 1.0, "roll": 2.0})
    assert result.value == {"pitch": 3.5}
    result = parse_parameters('{"pitch": 1e400, "roll": 1' + "0" * 400 + "}", {"pitch": 1.0, "roll": 2.0})
    assert result.ok is False  # out of the float range: not read as 1 from the text either
    assert parse_parameters('{"pitch": 1' + "0" * 5000 + "}", {"pitch": 1.0}).ok is False


# --------------------------------------------------------------------------------------------------------
# Input caps


def test_static_parsers_cut_long_input_and_report_it():
    text = "The answer is B. " + "x " * parsers.MAX_RESPONSE_CHARS
    result = timed(parse_option, text, "ABCD")
    assert (result.ok, result.method, result.value) == (False, "input_truncated", "B")
    assert "answer_marker" in result.explanation and f"{len(text):,} characters" in result.explanation
    assert parse_option("The answer is B.", "ABCD").ok


def test_parse_plan_cuts_long_output_and_reports_it():
    text = '{"step_1": {"actions": ["W"], "step_nums": [2]}}' + " " * plan_parsing.MAX_PLAN_CHARS
    plan = timed(parse_plan, text)
    assert plan.error_codes == ["input_truncated"] and plan.steps[0].step_nums == [2]
    assert "input_truncated" in ERROR_CODES
    value, how = lmms_eval_decode(text)
    assert value is None and how.startswith("input_truncated")


def test_official_scorers_score_a_cut_response_zero():
    calls = []

    @bounded_scorer
    def always_right(item: Any, response: str) -> SampleScore:
        calls.append(len(response))
        return SampleScore(1.0, True, ParseResult("A", True, "rule", "read A"), "test")

    long = always_right(None, "A" * (parsers.MAX_RESPONSE_CHARS + 1))
    assert (long.score, long.correct, long.parse.ok, long.parse.method) == (0.0, False, False, "input_truncated")
    assert calls == [parsers.MAX_RESPONSE_CHARS]
    assert always_right(None, "A").score == 1.0


# --------------------------------------------------------------------------------------------------------
# Fuzzing: every parser, no exception, a well-formed result

_PLAN_FORMATS = ("navigation", "manipulation", "single_step", "executable_plan", "list", "none")


def check_well_formed(name: str, result: Any) -> None:
    """The result type each parser documents, JSON-serialisable where it is recorded."""
    if isinstance(result, ParseResult):
        assert isinstance(result.ok, bool) and result.method and isinstance(result.explanation, str)
        assert result.value is not None or not result.ok
        json.dumps(result.to_dict())
    elif isinstance(result, Plan):
        assert all(code in ERROR_CODES for code in result.error_codes), result.errors
        assert result.format in _PLAN_FORMATS and all(len(s.actions) == len(s.step_nums) for s in result.steps)
        json.dumps(result.to_json())
    elif isinstance(result, JudgeScore):
        assert result.score is None or 0.0 <= result.score <= 1.0
    elif name == "goal.lmms_eval_decode":
        assert isinstance(result, tuple) and isinstance(result[1], str)
    elif name in ("spatialtree.mean_relative_accuracy", "spatialtree.gravity_score"):
        assert 0.0 <= result[0] <= 1.0 and isinstance(result[1], str)
    elif name == "spatialtree.last_yes_no":
        assert result in ("yes", "no", "other")
    elif name == "spatialtree.parse_multiple_choice":
        assert result[0] in "ABCD" and isinstance(result[1], str)
    elif name.startswith("space10."):
        assert result[0] and result[1] in ("rule", "fallback")
    elif name.startswith("multihop.parse_box"):
        assert result is None or isinstance(result, str) or len(result) == 4
    elif name == "split_lettered_options":
        assert isinstance(result, dict)
    else:
        assert result is None or isinstance(result, str | tuple | list)


# Pieces of the syntax every parser looks for, so that generated text reaches their deeper branches.
TOKENS = [
    "```", "```json\n", "\n", " ", "{", "}", "[", "]", "(", ")", ",", ":", '"', "'", "-", ".", "0x", "e", "1", "9" * 30,
    "step_1", '"step_2":', "actions", "step_nums", "gripper", "executable_plan", "action_id", "W", "A", "B", "(c)",
    "<think>", "</think>", "<answer>", "</answer>", "<conclusion>", "</conclusion>", "answer", "Answer:", " is ",
    "final answer", "option", "yes", "no", "true", "not", "\\scalar{", "\\distance_unit{", "m", "feet", "1e400",
    "between", " and ", " to ", "bbox_2d", "Bounding Box:", "x=", "y:", "roll", "pitch", "output:", "score", "**",
    "cannot determine", "a dozen", "twenty-one", "²", "−", "İ", "\x00", "\ud7ff",
]  # fmt: skip
TEXTS = st.lists(st.sampled_from(TOKENS) | st.text(max_size=6), max_size=30).map("".join)


@pytest.mark.parametrize("name", sorted(PARSERS))
def test_fuzz_every_parser(name):
    parse = PARSERS[name]

    @settings(max_examples=300, deadline=2000, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
    @given(TEXTS)
    def run(text: str) -> None:
        check_well_formed(name, parse(text))

    run()


def generated_inputs(seed: int, count: int) -> Any:
    """``count`` texts: token soup, random Unicode, and corrupted copies of real answers."""
    rng = random.Random(seed)
    corpus = [json.loads(line)["text"] for line in Path(__file__).with_name("data").joinpath("parse_plan_corpus.jsonl").read_text().splitlines()]
    corpus += ["The answer is (B).", "Answer: yes", "About 2.5 meters.", "[0.1, 0.2, 0.5, 0.6]", "Answer: (a) chair\nBounding Box: [1, 2, 30, 40]",
               '```json\n{"roll": 1.5, "pitch": -2, "vfov": 60}\n```', "output: 0.7", '{"score": 0.5, "reason": "ok"}', "x=0.3, y=0.4"]  # fmt: skip
    for i in range(count):
        kind = i % 3
        if kind == 0:
            yield "".join(rng.choice(TOKENS) for _ in range(rng.randint(0, 40)))
        elif kind == 1:
            yield "".join(chr(rng.choice((rng.randint(32, 126), rng.randint(0, 0x2FFF)))) for _ in range(rng.randint(0, 60)))
        else:
            text = list(rng.choice(corpus))
            for _ in range(rng.randint(1, 6)):
                at = rng.randint(0, len(text))
                text[at:at + rng.randint(0, 3)] = rng.choice(TOKENS)
            yield "".join(text)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(PARSERS))
def test_fuzz_100k_inputs_per_parser(name):
    parse, failures = PARSERS[name], []
    for text in generated_inputs(seed=17, count=100_000):
        try:
            check_well_formed(name, parse(text))
        except Exception as error:  # collected: the count must be zero
            failures.append(f"{type(error).__name__}: {error} on {text[:80]!r}")
    assert not failures, f"{len(failures)} failures, first: {failures[:3]}"


def test_catalog_covers_every_pattern_size():
    for name, make in PATTERNS.items():
        assert len(make(1000)) == 1000, name
