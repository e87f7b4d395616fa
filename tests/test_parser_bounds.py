"""Every parser of model output is bounded: linear time, an input cap recorded as a parse error, no exception.

Regression cases replay each input that once took quadratic (or worse) time or raised, with a time bound
generous enough for a loaded 2-core machine and the parse result it must give. A bounded hypothesis fuzz
runs every parser of :mod:`benchmarks.parser_catalog` in the default run; slow-marked, each parser
reads every pattern of the catalogue at 150 KB under the same bound, and 100,000 generated inputs.
"""

from __future__ import annotations

import json
import math
import random
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from action_mapping import ERROR_CODES, NAVIGATION_STEP_SIZES, Plan, Primitive, parse_plan
from action_mapping import parsing as plan_parsing
from benchmarks.parser_catalog import PARSERS, PATTERNS, _mask
from benchmarks.posttrain import multihop_rewards, spatial_rewards
from benchmarks.scoring import judge, parsers
from benchmarks.scoring.goal import GoalReference, GoalScore, score_goal
from benchmarks.scoring.official import cogmap, multihop, space10_stats, spatialscore, spatialtree, vsibench
from benchmarks.scoring.official.goal_lmms_eval import lmms_eval_decode
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


@pytest.mark.parametrize(
    "text",
    [
        "1e400",
        "Roughly 1e400 m",
        "about 1e999999999999999999999999999999",
        "1e9999999 meters",
        "9" * 400 + " m",
    ],
)
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
    text = (
        '{"step_1": {"actions": [' + ", ".join(["W"] * k) + '], "step_nums": [' + ", ".join(["1"] * k) + "]}}"
    )
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
    ref = GoalReference(
        "nav", parse_plan('{"step_1": {"actions": ["W"], "step_nums": [2]}}'), NAVIGATION_STEP_SIZES
    )
    # what the paper scorer reads
    stepped = '{"step_1": {"actions": ["W"], "step_nums": [0x' + "f" * 5000 + "]}}"
    top_level = '{"actions": ["W"], "step_nums": [0x' + "f" * 5000 + "]}"  # what lmms-eval's navigation reads
    for scorer in ("paper", "lmms-eval"):
        for text in (stepped, top_level):
            score = timed(score_goal, text, ref, scorer)
            json.dumps(score.to_json())  # a record can be written for it
            assert math.isfinite(score.value)
    paper = score_goal(stepped, ref, "paper")
    # read as 10
    assert any(e.startswith("step_num_capped") for e in paper.parse_errors) and not paper.parse_failed
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
    assert timed(multihop.parse_box_lmms, "[" + digits + ", 2, 3, 4]") == [
        v / 1000.0 for v in (float(digits), 2, 3, 4)
    ]
    assert timed(spatialtree.find_number, "(" + digits + "x") == digits
    assert timed(spatialtree._last_point, digits + "!") is None
    assert timed(spatialtree._last_point, "-" + digits[:3] + ",2") == (-111.0, 2.0)
    assert timed(spatialscore.numeric_with_unit_correct, "**" + digits, "3 m")[0] is False
    assert timed(spatialscore.numeric_with_unit_correct, digits + "! about 3 m", "3 m") == (
        True,
        "3.0 m vs 3.0 m: ratio 1 (correct below 2.0)",
    )
    assert (
        timed(
            spatialscore.extract_option, "<conclusion>(b)\n" * (SIZE // 16) + "<conclusion>(c) x</conclusion>"
        )
        == "C"
    )


def test_official_json_blocks_and_huge_integers():
    hint = {"roll_unc": 1.0, "pitch_unc": 1.0, "vfov_unc": 1.0}
    truth = '{"roll": 1, "pitch": 1, "vfov": 1}'
    assert timed(spatialtree.gravity_score, "```json\n" * (SIZE // 8), truth, hint) == (
        0.0,
        "unparsable JSON",
    )
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
# Thousands separators, spaces before a missing colon, huge maps, huge numbers


def test_a_long_thousands_separator_run_is_one_number_read_in_linear_time():
    run = "1" + ",000" * (SIZE // 4)
    result = timed(parse_number, run + ",")  # a trailing comma is punctuation: one number of 112,501 digits
    assert (result.ok, result.method) == (False, "number_out_of_range"), result
    malformed = timed(parse_number, run + ",5")  # a group of one digit: the run is a list of numbers
    assert (malformed.method, malformed.value.value) == ("last_number", 5.0)
    assert malformed.explanation.startswith("37502 numbers")  # 1, 37,500 groups of 000, then 5
    assert timed(parse_number, "1" + ",000" * 102 + ",").value.value == 1e306  # the largest run a float holds


def test_a_box_label_followed_by_spaces_without_a_colon():
    assert timed(parse_box, "Bounding Box" + " " * SIZE + "x").method == "no_box"
    labelled = timed(parse_box, "(0.5, 0.5, 0.9, 0.9) Bounding Box" + " " * SIZE + "[0.1, 0.2, 0.3, 0.4]")
    assert labelled.value == (0.1, 0.2, 0.3, 0.4) and labelled.explanation.startswith("labelled box")


_COGMAP_HINT = {
    "id_type": "among",
    "cogmap": {
        "o1": {"position": [0, 0], "facing": "up"},
        "o2": {"position": [3, 1]},
        "o3": {"position": [1, 5], "facing": "left"},
    },
}


def test_cognitive_map_scorer_is_linear_in_the_objects_of_the_map():
    text = PATTERNS["huge cognitive map"](SIZE)  # ~3,300 objects, three of them in the reference
    result = timed(cogmap.score, text, "A", _COGMAP_HINT)
    assert result.answer_correct and result.similarity.valid_graph and result.similarity.coverage == 1.0
    assert result.similarity.common_objects == ["o1", "o2", "o3"]


def _old_similarity(generated: Any, reference: Any) -> cogmap.Similarity:
    """The cognitive-map similarity as it was before it became linear (every pair of generated objects)."""
    result = cogmap.Similarity()
    if not generated or not reference or not isinstance(generated, dict) or not isinstance(reference, dict):
        return result
    result.parsable_json = True
    if not cogmap._is_complex(generated):
        generated = cogmap._first_of_lists(generated)
    result.valid_format = cogmap.valid_format(generated) and cogmap.valid_format(reference)
    if not result.valid_format:
        return result
    gen, ref = cogmap._objects(generated), cogmap._objects(reference)
    if not gen or not ref:
        return result
    result.valid_graph = True
    ref_names = set(ref)
    if "views" not in generated and "objects" in reference:
        ref_names = {o["name"] for o in reference.get("objects", []) if "name" in o}
    common = ref_names & set(gen)
    result.coverage = len(common) / len(ref_names) if ref_names else 0
    result.common_objects = sorted(common)
    if not common:
        return result
    ref_rel = cogmap._relations(ref, list(ref_names))
    for name, matrix, turn in cogmap._rotations():
        rotated = {
            k: {"position": (matrix @ np.append(v["position"], 0.0))[:2], "facing": turn(v["facing"])}
            for k, v in gen.items()
        }
        gen_rel = cogmap._relations(rotated, list(gen))
        pairs = [
            (a, b)
            for a in ref_names
            if a in gen
            for b in ref_names
            if b in gen and a != b and ref_rel[a][b] is not None
        ]
        directional = sum(1 for a, b in pairs if gen_rel[a][b] == ref_rel[a][b]) / len(pairs) if pairs else 0
        faced = [o for o in ref_names if o in gen and ref[o]["facing"]]
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
            result.isomorphic = all(
                a in gen_rel and b in gen_rel[a] and gen_rel[a][b] == rel
                for a, row in ref_rel.items()
                for b, rel in row.items()
            )
    return result


_FACING_CHOICES = [
    None,
    "up",
    "down",
    "left",
    "right",
    "inner",
    "outer",
    "north",
    "front",
    "Back ",
    ["left"],
    [],
    "sideways",
]


def _random_map(rng: random.Random, names: list[str]) -> dict[str, Any]:
    """A small map: a few of ``names`` on a coarse grid (ties, and pairs closer than 0.5), random facings,
    in the simple format (sometimes as one-element lists) or the complex one (sometimes with views)."""
    entries = {}
    for name in rng.sample(names, rng.randint(0, len(names))):
        entry: dict[str, Any] = {
            "position": [rng.choice([-1, 0, 0.1, 0.3, 1, 2]), rng.choice([-1, 0, 0.2, 1, 2])]
        }
        facing = rng.choice(_FACING_CHOICES)
        if facing is not None:
            entry["facing"] = facing
        entries[name] = entry
    if rng.random() < 0.5:
        return {k: [v] if rng.random() < 0.2 else v for k, v in entries.items()}
    objects = [{"name": k, **v} for k, v in entries.items()]
    cut = rng.randint(0, len(objects))
    return {"objects": objects[:cut], "views": objects[cut:]} if rng.random() < 0.3 else {"objects": objects}


def test_cognitive_map_similarity_as_before_on_random_small_maps():
    rng, compared = random.Random(29), 0
    for _ in range(1500):
        names = [f"n{i}" for i in range(rng.randint(1, 6))]
        generated, reference = _random_map(rng, [*names, "extra"]), _random_map(rng, names)
        assert asdict(cogmap.similarity(generated, reference)) == asdict(
            _old_similarity(generated, reference)
        ), (generated, reference)
        compared += cogmap.similarity(generated, reference).valid_graph
    assert compared > 300  # most pairs reach the rotations, not only the early exits


def test_cognitive_maps_with_huge_numbers_score_the_answer():
    hint = {"id_type": "among", "cogmap": {"a": {"position": [0, 0]}, "b": {"position": [1, 0]}}}
    for number, parsable in (
        ("1" + "0" * 400, True),
        ("1" + "0" * 5000, False),
        ("1e400", True),
        ("NaN", True),
    ):
        result = cogmap.score(
            'A. {"a": {"position": [' + number + ', 0]}, "b": {"position": [1, 0]}}', "A", hint
        )
        assert (
            result.score,
            result.answer_correct,
            result.similarity.parsable_json,
            result.similarity.valid_format,
        ) == (0.2, True, parsable, False)
    named = cogmap.score(
        'A. {"objects": [{"name": ["a"], "position": [0, 0]}, {"name": "b", "position": [1, 0]}]}', "A", hint
    )
    # a list as a name: upstream raises TypeError
    assert (named.score, named.similarity.valid_format) == (
        0.2,
        False,
    )


def test_vsibench_huge_numbers_are_failed_reads():
    assert vsibench.read_number("9" * 400) == (None, "number_out_of_range")  # float() reads inf
    # float() raised
    assert vsibench.read_number("three " + "hundred " * (SIZE // 8)) == (
        None,
        "number_out_of_range",
    )
    assert vsibench.read_number("three hundred and twenty") == (320.0, "first_number")
    numeric = timed(vsibench.na_score, "hundred " * (SIZE // 8), "3")
    assert (numeric.score, numeric.prediction, numeric.read) == (0.0, None, "number_out_of_range")
    from benchmarks.static import vsibench as static_vsibench
    from benchmarks.static.items import StaticItem

    item = StaticItem(
        benchmark="vsibench",
        item_id="1",
        index=0,
        question="How far?",
        answer="3",
        task="numeric",
        options={},
        media=(),
        modality="video",
        category="object_abs_distance",
        tags={},
        meta={"value": 3.0, "unit": "m"},
    )
    for score in (static_vsibench.score_official, static_vsibench.score_project):
        sample = score(item, "1" + "0" * 400 + " m")
        assert (sample.score, sample.parse.ok, sample.parse.method) == (0.0, False, "number_out_of_range"), (
            sample
        )
        json.dumps(sample.to_dict(), allow_nan=False)


def test_spatialtree_affordance_point_beyond_the_float_range():
    assert spatialtree.affordance_score("(" + "9" * 400 + ", 0.5)", _mask())[0] == 0.0
    assert "beyond the float range" in spatialtree.affordance_score("x=0.5, y=" + "9" * 400, _mask())[1]
    assert spatialtree.affordance_score("(1.0, 1.0)", _mask()) == (240 / 255, "mask value at column 3, row 3")


def test_grpo_rewards_with_huge_box_coordinates():
    def box(first: object) -> str:
        return f"Answer: (a) chair\nBounding Box: [{first}, 200, 300, 400]"

    for digits in (17, 400, 5000):  # past 2**53, past the float range, past Python's int() limit
        text = box("1" + "0" * (digits - 1))
        assert multihop_rewards.int_box(text) is None
        # format, letter; no box
        assert multihop_rewards.total_reward(text, "(a) chair", [100.5, 200, 300, 400]) == 2.0
        assert spatial_rewards.format_score(text, None, [100, 200, 300, 400]) == 0.0
    assert multihop_rewards.int_box(box(2**53)) == (2**53, 200, 300, 400)
    assert space10_stats.parse_json_objects('{"x": 1' + "0" * 5000 + '}{"prediction": ["A."]}') == [
        {"prediction": ["A."]}
    ]


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
    assert (long.score, long.correct, long.parse.ok, long.parse.method) == (
        0.0,
        False,
        False,
        "input_truncated",
    )
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
        assert result.format in _PLAN_FORMATS and all(
            len(s.actions) == len(s.step_nums) for s in result.steps
        )
        json.dumps(result.to_json())
    elif isinstance(result, JudgeScore):
        assert result.score is None or 0.0 <= result.score <= 1.0
    elif isinstance(result, cogmap.CogmapScore):
        assert 0.0 <= result.score <= 1.0 and result.answer in (None, *"ABCDE")
    elif isinstance(result, vsibench.NumericScore):
        assert 0.0 <= result.score <= 1.0 and (result.prediction is None or math.isfinite(result.prediction))
    elif isinstance(result, spatialscore.RepoScore):
        assert 0.0 <= result.score <= 1.0 and isinstance(result.read, str)
    elif isinstance(result, multihop.HopRecord):
        assert result.iou is None or 0.0 <= result.iou <= 1.0
    elif isinstance(result, GoalScore):
        assert math.isfinite(result.value)
        json.dumps(result.to_json())
    elif name in ("vsibench.mca_score", "rewards.multihop_and_spatial"):
        assert all(
            isinstance(v, float) and -1.0 <= v <= 3.0
            for v in (result if isinstance(result, tuple) else (result,))
        )
    elif name == "spatialtree.affordance_score":
        assert 0.0 <= result[0] <= 1.0 and isinstance(result[1], str)
    elif name.startswith("space10_stats."):
        assert isinstance(result, list)
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
    "```",
    "```json\n",
    "\n",
    " ",
    "{",
    "}",
    "[",
    "]",
    "(",
    ")",
    ",",
    ":",
    '"',
    "'",
    "-",
    ".",
    "0x",
    "e",
    "1",
    "9" * 30,
    "step_1",
    '"step_2":',
    "actions",
    "step_nums",
    "gripper",
    "executable_plan",
    "action_id",
    "W",
    "A",
    "B",
    "(c)",
    "<think>",
    "</think>",
    "<answer>",
    "</answer>",
    "<conclusion>",
    "</conclusion>",
    "answer",
    "Answer:",
    " is ",
    "final answer",
    "option",
    "yes",
    "no",
    "true",
    "not",
    "\\scalar{",
    "\\distance_unit{",
    "m",
    "feet",
    "1e400",
    "between",
    " and ",
    " to ",
    "bbox_2d",
    "Bounding Box:",
    "x=",
    "y:",
    "roll",
    "pitch",
    "output:",
    "score",
    "**",
    "cannot determine",
    "a dozen",
    "twenty-one",
    "²",
    "−",
    "İ",
    "\x00",
    "\ud7ff",
]
TEXTS = st.lists(st.sampled_from(TOKENS) | st.text(max_size=6), max_size=30).map("".join)


@pytest.mark.parametrize("name", sorted(PARSERS))
def test_fuzz_every_parser(name):
    parse = PARSERS[name]

    @settings(max_examples=200, deadline=2000, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
    @given(TEXTS)
    def run(text: str) -> None:
        check_well_formed(name, parse(text))

    run()


def generated_inputs(seed: int, count: int) -> Any:
    """``count`` texts: token soup, random Unicode, and corrupted copies of real answers."""
    rng = random.Random(seed)
    corpus = [
        json.loads(line)["text"]
        for line in Path(__file__)
        .with_name("data")
        .joinpath("parse_plan_corpus.jsonl")
        .read_text()
        .splitlines()
    ]
    corpus += [
        "The answer is (B).",
        "Answer: yes",
        "About 2.5 meters.",
        "[0.1, 0.2, 0.5, 0.6]",
        "Answer: (a) chair\nBounding Box: [1, 2, 30, 40]",
        '```json\n{"roll": 1.5, "pitch": -2, "vfov": 60}\n```',
        "output: 0.7",
        '{"score": 0.5, "reason": "ok"}',
        "x=0.3, y=0.4",
    ]
    for i in range(count):
        kind = i % 3
        if kind == 0:
            yield "".join(rng.choice(TOKENS) for _ in range(rng.randint(0, 40)))
        elif kind == 1:
            yield "".join(
                chr(rng.choice((rng.randint(32, 126), rng.randint(0, 0x2FFF))))
                for _ in range(rng.randint(0, 60))
            )
        else:
            text = list(rng.choice(corpus))
            for _ in range(rng.randint(1, 6)):
                at = rng.randint(0, len(text))
                text[at : at + rng.randint(0, 3)] = rng.choice(TOKENS)
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
        assert "," not in name, f"{name!r}: bench/parser_speed.py --patterns takes a comma-separated list"
    assert not [name for name in PARSERS if "," in name]


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(PARSERS))
def test_every_pattern_at_150k_per_parser(name):
    for pattern, make in PATTERNS.items():
        start = time.perf_counter()
        result = PARSERS[name](make(SIZE))
        assert time.perf_counter() - start < LIMIT_S, pattern
        check_well_formed(name, result)
