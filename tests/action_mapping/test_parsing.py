import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from action_mapping import ERROR_CODES, Plan, PlanStep, Primitive, parse_plan

CORPUS = [
    json.loads(line) for line in (Path(__file__).parents[1] / "data" / "parse_plan_corpus.jsonl").open()
]
MOTIONS = [p for p in Primitive if p.is_motion] + [Primitive.STOP]


def test_corpus_is_large_enough():
    assert len(CORPUS) >= 30
    assert sum(1 for c in CORPUS if c["error_codes"]) >= 30  # malformed outputs, each with expected errors


@pytest.mark.parametrize("case", CORPUS, ids=[c["id"] for c in CORPUS])
def test_corpus(case):
    plan = parse_plan(case["text"], max_steps=6)
    assert plan.format == case["format"]
    assert len(plan.steps) == case["num_steps"]
    assert sorted(plan.error_codes) == case["error_codes"], plan.errors
    if case["first_step"] is not None:
        first = plan.steps[0]
        assert [a.symbol for a in first.actions] == case["first_step"]["actions"]
        assert first.step_nums == case["first_step"]["step_nums"]


def test_error_messages_name_where_and_what():
    plan = parse_plan('{"step_1": {"actions": ["W", "fly"], "step_nums": [1, 2]}}')
    assert plan.errors == ["unknown_action: step_1: 'fly'"]


def test_gripper_and_executable_plan_fields():
    plan = parse_plan('{"step_1": {"actions": ["H"], "step_nums": [1], "gripper": 1}}')
    assert plan.steps[0].gripper == 1 and plan.format == "manipulation"
    plan = parse_plan('{"executable_plan": [{"action_id": 5, "action_name": "RotateLeft"}]}')
    assert plan.steps[0].action_id == 5 and plan.steps[0].actions == [Primitive.PAN_LEFT]
    plan = parse_plan('{"executable_plan": [{"action": "[1, 2, 3, 60, 60, 60, 1]"}]}')
    assert plan.steps[0].vector == [1.0, 2.0, 3.0, 60.0, 60.0, 60.0, 1.0]


def test_executable_plan_without_action_table_keeps_ids():
    plan = parse_plan('{"executable_plan": [{"action_id": 42}]}', action_table=None)
    assert plan.steps[0].action_id == 42 and plan.steps[0].actions == []


def test_cap_is_a_parameter():
    plan = parse_plan('{"step_1": {"actions": ["W"], "step_nums": [12]}}', max_step_num=20)
    assert plan.ok and plan.steps[0].step_nums == [12]


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_never_raises_on_arbitrary_text(text):
    plan = parse_plan(text)
    assert isinstance(plan, Plan)
    assert all(code in ERROR_CODES for code in plan.error_codes)
    assert plan.usable or plan.errors or plan.format == "executable_plan"


JSONISH = st.text(
    alphabet=list("{}[]\",:' \n`0123456789-.step_actionsnumsgripperWASD←↑→↓RLSTOPexcutabl"), max_size=120
)


@settings(max_examples=300, deadline=None)
@given(JSONISH)
def test_never_raises_on_json_like_text(text):
    plan = parse_plan(text)
    assert all(code in ERROR_CODES for code in plan.error_codes)


step_strategy = st.builds(
    lambda pairs, g: PlanStep([p for p, _ in pairs], [n for _, n in pairs], g),
    st.lists(st.tuples(st.sampled_from(MOTIONS), st.integers(1, 10)), min_size=1, max_size=4),
    st.sampled_from([None, 0, 1]),
)


@settings(max_examples=150, deadline=None)
@given(st.lists(step_strategy, min_size=1, max_size=6))
def test_valid_plans_round_trip_without_errors(steps):
    text = json.dumps(Plan(steps=steps).to_json(), ensure_ascii=False)
    plan = parse_plan(text)
    assert plan.ok, plan.errors
    assert [(s.actions, s.step_nums, s.gripper) for s in plan.steps] == [
        (s.actions, s.step_nums, s.gripper) for s in steps
    ]


CORRUPTIONS = {
    "trailing_comma": lambda d: json.dumps(d)[:-1] + ",}",
    "single_quotes": lambda d: json.dumps(d).replace('"', "'"),
    "truncated": lambda d: json.dumps(d)[:-2],
    "unknown_symbol": lambda d: json.dumps(d).replace('"actions": ["', '"actions": ["teleport", "', 1),
    "count_over_cap": lambda d: (
        json.dumps(d)
        .replace('"step_nums": [', '"step_nums": [99, ', 1)
        .replace('"actions": [', '"actions": ["W", ', 1)
    ),
    "dropped_counts": lambda d: json.dumps({k: {"actions": v["actions"]} for k, v in d.items()}),
    "extra_count": lambda d: json.dumps(d).replace('"step_nums": [', '"step_nums": [1, ', 1),
    "string_count": lambda d: (
        json.dumps(d)
        .replace('"step_nums": [', '"step_nums": ["2", ', 1)
        .replace('"actions": [', '"actions": ["W", ', 1)
    ),
}


@settings(max_examples=150, deadline=None)
@given(st.lists(step_strategy, min_size=1, max_size=4), st.sampled_from(sorted(CORRUPTIONS)))
def test_every_corruption_is_flagged(steps, corruption):
    text = CORRUPTIONS[corruption](Plan(steps=steps).to_json())
    plan = parse_plan(text)
    assert plan.errors, f"{corruption} not flagged: {text}"
