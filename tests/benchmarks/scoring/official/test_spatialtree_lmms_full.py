"""SpatialTree-Bench's lmms-eval mode on every item type upstream scores: cognitive maps (``cogmapeval``, hand-made
maps), L4 trajectories (through the goal scorer), and annotations upstream scores although they are odd
(a navigation truth without segments, a gravity uncertainty of 0)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.scoring import goal
from benchmarks.scoring.official import cogmap
from benchmarks.scoring.official.goal_lmms_eval import lmms_eval_reference
from benchmarks.static.registry import LoadOptions, get_benchmark

SPEC = get_benchmark("spatialtree")
LMMS, PROJECT = SPEC.mode("spatialtree-lmms-eval"), SPEC.mode("project")

# Reference: chair at the origin facing up, table 2 to its right, lamp 3 below (y grows downwards).
REF = {
    "chair": {"position": [0, 0], "facing": "up"},
    "table": {"position": [2, 0]},
    "lamp": {"position": [0, 3]},
}
# The same map turned so that upstream's z_rot_90, (x, y) -> (-y, x) with facings turned, brings it back.
TURNED = {
    "chair": {"position": [0, 0], "facing": "left"},
    "table": {"position": [0, -2]},
    "lamp": {"position": [3, 0]},
}
IDENTITY = [0, 0, 0, 0, 0, 0, 1.0]


def extra(metric: str, *tags: str) -> str:
    return json.dumps({"metricfunc": metric, **{f"spatree{i}": t for i, t in enumerate(tags)}})


def rows() -> list[dict]:
    cog_hint = json.dumps({"id_type": "among_001", "cogmap": json.dumps(REF)})
    nav_hint = json.dumps({"optimal_rel_pose": [IDENTITY, [0, 0, 0.1, 0, 0, 0, 1.0]], "0->1": {}})
    return [
        {
            "session_id": "cog-1",
            "question": "Which object is right of the chair?",
            "option": [],
            "answer": "A",
            "question_type": "open",
            "hint": cog_hint,
            "extra_info": extra("cogmapeval", "L2", "Memory", "CognitiveMap"),
        },
        {
            "session_id": "cog-2",
            "question": "Same, no id_type.",
            "option": [],
            "answer": "A",
            "question_type": "open",
            "hint": json.dumps({"cogmap": REF}),
            "extra_info": extra("cogmapeval", "L2", "Memory", "CognitiveMap"),
        },
        {
            "session_id": "nav-1",
            "question": "Go to the door.",
            "option": [],
            "answer": "",
            "question_type": "open",
            "hint": nav_hint,
            "extra_info": extra("agenticnaveval", "L4", "Goal-Driven Execution", "AgenticNavigation"),
        },
        {
            "session_id": "nav-2",
            "question": "Go to the window.",
            "option": [],
            "answer": "",
            "question_type": "open",
            "hint": json.dumps({"optimal_rel_pose": [IDENTITY, IDENTITY]}),
            "extra_info": extra("agenticnaveval", "L4", "Goal-Driven Execution", "AgenticNavigation"),
        },
        {
            "session_id": "grav-0",
            "question": "Estimate roll, pitch and vfov.",
            "option": [],
            "answer": json.dumps({"roll": 2.0, "pitch": -5.0, "vfov": 60.0}),
            "question_type": "open",
            "hint": json.dumps({"roll_unc": 0, "pitch_unc": 2.0, "vfov_unc": 5.0}),
            "extra_info": extra("gravityeval", "L1", "Orientation", "Gravity"),
        },
    ]


@pytest.fixture
def items(tmp_path: Path):
    path = tmp_path / "tree.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows()))
    return {i.item_id: i for i in SPEC.load(path, LoadOptions(check_media=False))}


@pytest.mark.parametrize(
    ("text", "letter"),
    [
        ("B.", "B"),
        ("The answer is C", "C"),
        ("IT IS ON THE SIDE.", "E"),
        ("<Answer> my answer is B", "B"),
        ("x\nI pick D\nthanks", "D"),
        ("**C**", "C"),
        ("Answer: D", "D"),
        ("none here", None),
        ("", None),
    ],
)
def test_answer_reader_as_upstream(text, letter):
    assert cogmap.extract_answer(text) == letter


def test_map_similarity_hand_worked():
    same = cogmap.similarity(REF, REF)
    assert (same.overall, same.isomorphic, same.best_rotation, same.coverage) == (1.0, True, "identity", 1.0)
    turned = cogmap.similarity(TURNED, REF)
    assert (turned.overall, turned.isomorphic, turned.best_rotation) == (1.0, True, "z_rot_90")
    # Lamp moved left of the chair: chair-lamp and lamp-chair (2 of 6 relations) and table-lamp change.
    moved = cogmap.similarity({**REF, "lamp": {"position": [-3, 0]}}, REF)
    assert moved.directional == pytest.approx(2 / 6) and not moved.isomorphic
    assert moved.overall == pytest.approx(0.7 * 2 / 6 + 0.3 * 1.0)
    # Invalid facing word: the format check fails, nothing is compared.
    bad = cogmap.similarity({**REF, "chair": {"position": [0, 0], "facing": "sideways"}}, REF)
    assert bad.parsable_json and not bad.valid_format and bad.overall == 0.0
    with pytest.raises(cogmap.CogmapError, match="empty list"):
        cogmap.similarity({**REF, "table": []}, REF)


def test_json_repair_and_pairs():
    bare = '{chair: {position: [0, 0], facing: "up",}, table: {position: [2, 0]}, lamp: {position: [0, 3]}}'
    assert cogmap.extract_json(bare) == REF
    broken = (
        '{"chair": {"position": [0, 0]}, "table": {"position": [2, 0] "x"}, "lamp": {"position": [0, 3]}}'
    )
    assert cogmap.extract_json(broken) == {"chair": {"position": [0, 0]}, "lamp": {"position": [0, 3]}}
    assert cogmap.extract_json("} no map {") is None
    assert cogmap.extract_json("{" * 20000) is None  # linear: no quadratic rescans


def test_cogmap_items_scored(items):
    cog = items["cog-1"]
    assert LMMS.score(cog, SPEC.gold_answer(cog, "paper")).score == pytest.approx(1.0)
    assert LMMS.score(cog, json.dumps(TURNED) + "\nB.").score == pytest.approx(0.6 + 0.2)  # wrong letter
    assert LMMS.score(cog, "I think A.").score == pytest.approx(0.2)  # right letter, no map
    missing = LMMS.score(items["cog-2"], json.dumps(REF) + "\nA.")
    assert missing.score == 0.0 and "id_type" in missing.metrics["problem"]
    assert PROJECT.score(cog, "A.").score is None  # the project's mode does not score maps


def test_l4_items_through_the_goal_scorer(items):
    nav = items["nav-1"]
    answer = json.dumps({"actions": ["W"], "step_nums": [5]})  # 5 x 0.02 m forward: the target
    scored = LMMS.score(nav, answer)
    direct = goal.score_goal(answer, lmms_eval_reference("nav", nav.meta["hint"]), scorer="lmms-eval")
    assert scored.score == direct.value == pytest.approx(1.0)
    assert LMMS.score(nav, json.dumps({"actions": ["S"], "step_nums": [5]})).score < 0.5
    no_segments = LMMS.score(items["nav-2"], answer)
    assert no_segments.score == 0.0 and "segment" in no_segments.metrics["problem"]


def test_gravity_with_zero_uncertainty_is_scored(items):
    grav = items["grav-0"]
    assert "'roll_unc' is 0 (not > 0)" in grav.meta["key"]["problems"]
    exact = json.dumps({"roll": 2.0, "pitch": -5.0, "vfov": 60.0})
    # upstream: roll's kernel gives 0 for sigma 0
    assert LMMS.score(grav, exact).score == pytest.approx(2 / 3)
    assert PROJECT.score(grav, exact).score == pytest.approx(1.0)  # project: sigma 0 is the exact-match limit
    assert PROJECT.score(grav, json.dumps({"roll": 2.5, "pitch": -5.0, "vfov": 60.0})).score == pytest.approx(
        2 / 3
    )


def test_level_tables_count_the_new_items(items):
    answers = {
        "cog-1": SPEC.gold_answer(items["cog-1"], "paper"),
        "cog-2": "",
        "nav-1": json.dumps({"actions": ["W"], "step_nums": [5]}),
        "nav-2": "{}",
        "grav-0": json.dumps({"roll": 2.0, "pitch": -5.0, "vfov": 60.0}),
    }
    records = [
        {"tags": dict(i.tags), "category": i.category, "task": i.task, **LMMS.score(i, answers[k]).to_dict()}
        for k, i in items.items()
    ]
    head = LMMS.summarize(list(items.values()), records, {})["headline"]
    # L2: Memory (1) and Underst. (1); Memory = 0.7 x Cognitive Map (mean of 1 and 0) + 0.3 x 0 -> L2 = 0.35 /
    # 2.
    assert head["level_L2"] == pytest.approx(100 * 0.7 * 0.5 / 2)
    # L4: Goal-Driven Execution (0.5) = 0.5 x Agentic Navigation (mean of 1 and 0); Open-world Exploration 0.
    assert head["level_L4"] == pytest.approx(100 * 0.5 * 0.5 * 0.5)
