"""The lmms-eval variant: every documented convention of the public spatialtreebench scorer, pinned."""

import itertools
import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.spatial.transform import Rotation

from action_mapping import (
    NAVIGATION_STEP_SIZES,
    Plan,
    PlanStep,
    Primitive,
    StepSizes,
    parse_plan,
    plan_to_trajectory,
)
from benchmarks.scoring.goal import GoalReference, render_answer, score_goal
from benchmarks.scoring.official.goal_lmms_eval import (
    lmms_eval_answer,
    lmms_eval_decode,
    lmms_eval_reference,
    lmms_eval_truths,
    score_lmms_eval_batch,
)

IDENTITY = [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0]


def pose(xyz=(0, 0, 0), rotvec=(0, 0, 0)):
    return [*map(float, xyz), *Rotation.from_rotvec(rotvec).as_quat()]


def extra(poses, sizes=None):
    """A raw lmms-eval ground truth: poses and one '<i>-><i+1>' segment per pose pair."""
    info = {"optimal_rel_pose": [list(p) for p in poses]}
    for i in range(len(poses) - 1):
        info[f"{i}->{i + 1}"] = {} if sizes is None else dict(sizes[i])
    return info


def ref(poses, kind="manip", sizes=None) -> GoalReference:
    gt = Plan([PlanStep([Primitive.STOP], [1]) for _ in range(len(poses) - 1)])
    return GoalReference(kind, gt, NAVIGATION_STEP_SIZES, lmms_eval_extra_info=extra(poses, sizes))


def lmms(obj, reference):
    text = obj if isinstance(obj, str) else json.dumps(obj, ensure_ascii=False)
    return score_goal(text, reference, "lmms-eval")


def final_pose(score):
    return np.asarray(score.step_table["pose_after"])[-1]


# --------------------------------------------------------------------------------------------------------
# Sub-scores, penalties, success: hand-worked


def test_subscores_hand_worked():
    # truth moves 0.10 m forward; prediction W×4 at the default 0.02 m = 0.08 m forward.
    # direction = cos 0 = 1; position error 0.02 m -> exp(-13.863·0.02) = exp(-0.27726) = 0.757858;
    # no rotation -> rotation = 1. score = 0.4 + 0.35·0.757858 + 0.25 = 0.915250 (no penalty: 0.08 m ≥ 0.03)
    s = lmms({"step_1": {"actions": ["W"], "step_nums": [4]}}, ref([IDENTITY, pose((0, 0, 0.1))]))
    assert s.components["direction"] == 1.0
    assert s.components["position_error_m"] == pytest.approx(0.02)
    assert s.components["position"] == pytest.approx(math.exp(-0.27726))
    assert s.value == pytest.approx(0.4 + 0.35 * math.exp(-13.863 * 0.02) + 0.25)
    assert s.metadata["binary_success"] is True  # 1 of 1 segments, 0.02 m < 0.2 m, 0° < 10°


def test_rotation_subscore_hand_worked():
    # truth turns 10° about Z; prediction pans right 10 units of 0.5° = 5° about Z -> error 5°:
    # rotation = exp(-0.0154·(5/5)²) = exp(-0.0154) = 0.984718; direction: both still -> 1; position 1
    s = lmms(
        {"step_1": {"actions": ["→"], "step_nums": [10]}},
        ref([IDENTITY, pose(rotvec=(0, 0, math.radians(10)))]),
    )
    assert s.components["rotation_error_deg"] == pytest.approx(5.0)
    assert s.components["rotation"] == pytest.approx(math.exp(-0.0154))
    assert s.components["direction"] == 1.0
    assert s.value == pytest.approx(0.4 + 0.35 + 0.25 * math.exp(-0.0154))


def test_movement_penalty():
    # truth moves 0.2 m, prediction 0.02 m (< 0.03): (0.4·1 + 0.35·exp(-13.863·0.18) + 0.25) × 0.7
    s = lmms({"step_1": {"actions": ["W"], "step_nums": [1]}}, ref([IDENTITY, pose((0, 0, 0.2))]))
    assert s.metadata["penalty"] == 0.7
    assert s.value == pytest.approx((0.4 + 0.35 * math.exp(-13.863 * 0.18) + 0.25) * 0.7)
    assert s.metadata["binary_success"] is True  # 0.18 m < 0.2 m


def test_rotation_penalty_uses_the_summed_truth_rotation_and_predicted_rotation_up_to_two_degrees():
    # truth: three segments of 2° each about Z = 6° in total (> 5°), even though no segment exceeds 5°
    poses = [pose(rotvec=(0, 0, math.radians(2 * i))) for i in range(4)]
    # 4 × 0.5° = 2°: not > 2°
    no_turn = {f"step_{i}": {"actions": ["→"], "step_nums": [1]} for i in (1, 2, 3, 4)}
    assert lmms(no_turn, ref(poses)).metadata["penalty"] == 0.5
    turn = {f"step_{i}": {"actions": ["→"], "step_nums": [2]} for i in (1, 2, 3)}  # 3° > 2°
    assert lmms(turn, ref(poses)).metadata["penalty"] == 1.0


def test_binary_success_needs_every_segment():
    poses = [IDENTITY, pose((0, 0, 0.02)), pose((0, 0, 0.04))]
    one = lmms({"step_1": {"actions": ["W"], "step_nums": [1]}}, ref(poses))
    assert one.value == 1.0  # a short plan is compared with the matching prefix of the truth ...
    assert one.metadata["binary_success"] is False  # ... but success needs all segments
    both = lmms(
        {"step_1": {"actions": ["W"], "step_nums": [1]}, "step_2": {"actions": ["W"], "step_nums": [1]}},
        ref(poses),
    )
    assert both.metadata["binary_success"] is True


def test_empty_answer_quirk_is_reproduced():
    # lmms-eval compares a plan of k steps with truth pose k; with no steps that is the start pose, so `{}`
    # scores 1.0 (or 0.5 when the truth rotates > 5°): we reproduce it and say so in the README
    assert lmms({}, ref([IDENTITY, pose((0, 0, 0.3))])).value == 1.0
    assert lmms({}, ref([IDENTITY, pose(rotvec=(0, 0, 0.5))])).value == 0.5


# --------------------------------------------------------------------------------------------------------
# Symbols, counts, step sizes


def test_symbols_are_exact_and_unknown_ones_keep_their_count_index():
    r = ref([IDENTITY, pose((0, 0, 0.1))])
    # 'w' (lowercase), 'left_arrow', 'Q', 'R' are not its symbols: skipped, yet each consumes a step_num,
    # so 'W' takes the 5th count (3) and 'D' has no count left and defaults to 1
    s = lmms(
        {"step_1": {"actions": ["w", "left_arrow", "Q", "R", "W", "D"], "step_nums": [9, 9, 9, 9, 3]}}, r
    )
    assert final_pose(s)[:3] == pytest.approx([0.02, 0, 0.06])
    assert len(s.metadata["notes"]) == 4 and s.metadata["notes"][0].startswith("unknown_symbol: step_1: 'w'")


def test_every_symbol_moves_along_its_documented_axis():
    d, rad = 0.02, math.radians(0.5)
    expected = {
        "W": ([0, 0, d], None),
        "S": ([0, 0, -d], None),
        "D": ([d, 0, 0], None),
        "A": ([-d, 0, 0], None),
        "space": ([0, -d, 0], None),
        "shift": ([0, d, 0], None),
        "→": ([0, 0, 0], "z"),
        "←": ([0, 0, 0], "-z"),
        "↑": ([0, 0, 0], "y"),
        "↓": ([0, 0, 0], "-y"),
        "↻": ([0, 0, 0], "x"),
        "↺": ([0, 0, 0], "-x"),
        "STOP": ([0, 0, 0], None),
    }
    r = ref([IDENTITY, pose((0, 0, 0.1))])
    for symbol, (move, axis) in expected.items():
        p = final_pose(lmms({"step_1": {"actions": [symbol], "step_nums": [1]}}, r))
        assert p[:3] == pytest.approx(move, abs=1e-12), symbol
        rotvec = Rotation.from_quat(p[3:]).as_rotvec()
        want = np.zeros(3)
        if axis:
            want["xyz".index(axis[-1])] = rad * (-1 if axis.startswith("-") else 1)
        assert rotvec == pytest.approx(want, abs=1e-12), symbol


def test_counts_are_not_clipped_floats_and_negatives_are_used_as_written():
    r = ref([IDENTITY, pose((0, 0, 0.1))])
    assert final_pose(lmms({"step_1": {"actions": ["W"], "step_nums": [15]}}, r))[2] == pytest.approx(0.3)
    assert final_pose(lmms({"step_1": {"actions": ["W"], "step_nums": [-2]}}, r))[2] == pytest.approx(-0.04)
    assert final_pose(lmms({"step_1": {"actions": ["W"], "step_nums": [2.5]}}, r))[2] == pytest.approx(0.05)
    assert final_pose(lmms({"step_1": {"actions": ["W"]}}, r))[2] == pytest.approx(0.02)  # missing -> 1


def test_a_count_the_public_code_cannot_multiply_is_a_failure_with_the_reason():
    s = lmms({"step_1": {"actions": ["W"], "step_nums": ["3"]}}, ref([IDENTITY, pose((0, 0, 0.1))]))
    assert s.parse_failed and s.value == 0.0 and "TypeError" in s.explanation


def test_each_predicted_step_uses_its_segment_step_sizes():
    sizes = [{"translation_step_size": 0.01}, {"translation_step_size": 0.1, "rotation_step_size": 0.2}]
    poses = [IDENTITY, pose((0, 0, 0.01)), pose((0, 0, 0.11))]
    s = lmms(
        {"step_1": {"actions": ["W"], "step_nums": [1]}, "step_2": {"actions": ["W"], "step_nums": [1]}},
        ref(poses, sizes=sizes),
    )
    assert np.allclose([row["step_sizes"] for row in s.steps], [[0.01, math.radians(0.5)], [0.1, 0.2]])
    assert s.value == 1.0


# --------------------------------------------------------------------------------------------------------
# Kinematics: zyx extrinsic rotation, pre-multiplied; translation in the reference frame


def test_rotation_is_zyx_extrinsic_and_left_multiplied():
    start = pose(rotvec=(0.3, -0.2, 0.1))
    r = ref([start, start])
    s = lmms({"step_1": {"actions": ["→", "↑", "↻"], "step_nums": [4, 6, 8]}}, r)
    yaw, pitch, roll = 4 * math.radians(0.5), 6 * math.radians(0.5), 8 * math.radians(0.5)
    expected = Rotation.from_euler("zyx", [yaw, pitch, roll]) * Rotation.from_quat(start[3:])
    assert Rotation.from_quat(final_pose(s)[3:]).approx_equal(expected, atol=1e-12)
    # as matrices: Rx(roll) Ry(pitch) Rz(yaw) R_start (all about fixed axes)
    rx, ry, rz = (
        Rotation.from_rotvec(np.eye(3)[i] * a).as_matrix() for i, a in enumerate((roll, pitch, yaw))
    )
    assert Rotation.from_quat(final_pose(s)[3:]).as_matrix() == pytest.approx(
        rx @ ry @ rz @ Rotation.from_quat(start[3:]).as_matrix()
    )


def test_translation_is_added_in_the_reference_frame_not_the_current_heading():
    start = pose((1, 2, 3), rotvec=(0, math.pi / 2, 0))  # turned 90°: its own forward axis is world +X
    s = lmms({"step_1": {"actions": ["W"], "step_nums": [5]}}, ref([start, start]))
    assert final_pose(s)[:3] == pytest.approx([1, 2, 3.1])  # +Z of the reference frame, not +X


def test_quaternions_are_divided_by_norm_plus_epsilon_and_not_canonicalised():
    start = [0, 0, 0, 0.0, 0.0, -0.6, -0.8]  # w < 0 on purpose
    s = lmms({"step_1": {"actions": ["→"], "step_nums": [1]}}, ref([start, start]))
    q = (Rotation.from_euler("zyx", [math.radians(0.5), 0, 0]) * Rotation.from_quat(start[3:])).as_quat()
    assert final_pose(s)[3:] == pytest.approx(q / (np.linalg.norm(q) + 1e-12), abs=1e-15)


# --------------------------------------------------------------------------------------------------------
# Alignment and navigation


def test_keys_are_sorted_by_first_integer_else_alphabetically():
    sizes = [{"translation_step_size": 0.01}, {"translation_step_size": 0.1}]
    poses = [IDENTITY, pose((0, 0, 0.01)), pose((0.1, 0, 0.01))]
    # step_10 comes after step_2 numerically (alphabetically it would come first)
    s = lmms(
        {"step_10": {"actions": ["D"], "step_nums": [1]}, "step_2": {"actions": ["W"], "step_nums": [1]}},
        ref(poses, sizes=sizes),
    )
    assert s.value == 1.0
    # without digits: alphabetical ("first" < "second")
    s = lmms(
        {"second": {"actions": ["D"], "step_nums": [1]}, "first": {"actions": ["W"], "step_nums": [1]}},
        ref(poses, sizes=sizes),
    )
    assert s.value == 1.0


def test_extra_steps_are_dropped_and_a_non_object_step_consumes_its_segment():
    poses = [IDENTITY, pose((0, 0, 0.02)), pose((0, 0, 0.04))]
    extra_step = {f"step_{i}": {"actions": ["W"], "step_nums": [1]} for i in (1, 2, 3)}
    s = lmms(extra_step, ref(poses))
    assert (
        s.value == 1.0
        and s.metadata["predicted_segments"] == 2
        and s.metadata["notes"][0].startswith("extra_steps: 3 steps for 2 segments")
    )
    sizes = [{"translation_step_size": 0.5}, {"translation_step_size": 0.02}]
    s = lmms({"step_1": "W", "step_2": {"actions": ["W"], "step_nums": [1]}}, ref(poses, sizes=sizes))
    # step_1 is skipped but uses up segment 0's sizes: step_2 moves 0.02 (segment 1), compared with pose 1
    assert s.metadata["predicted_segments"] == 1
    assert final_pose(s)[2] == pytest.approx(0.02) and s.value == 1.0


def test_navigation_reads_one_top_level_step_from_the_second_to_last_pose():
    poses = [pose((0, 0, z)) for z in (0.0, 0.5, 0.9, 1.0)]
    r = ref(poses, kind="nav")
    s = lmms({"actions": ["W"], "step_nums": [5]}, r)  # 5 × 0.02 = 0.1 m from pose 2 (z 0.9) -> z 1.0
    assert final_pose(s)[2] == pytest.approx(1.0) and s.value == 1.0
    numbered = lmms({"step_1": {"actions": ["W"], "step_nums": [5]}}, r)  # numbered steps are not read
    assert final_pose(numbered)[2] == pytest.approx(0.9)
    assert numbered.metadata["notes"][0].startswith("steps_ignored:")
    assert "binary_success" not in s.metadata and s.metadata["penalty"] == 1.0


def test_navigation_compares_with_pose_six_at_most():
    poses = [pose((0, 0, 0.1 * i)) for i in range(9)]  # N = 9: start at pose 7, target pose min(6, 8) = 6
    s = lmms({"actions": ["S"], "step_nums": [5]}, ref(poses, kind="nav"))  # 0.7 - 0.1 = 0.6 = pose 6
    assert s.value == 1.0


def test_navigation_step_sizes_come_from_the_last_segment():
    sizes = [{"translation_step_size": 1.0}, {"translation_step_size": 0.05}]
    s = lmms(
        {"actions": ["W"], "step_nums": [2]},
        ref([IDENTITY, pose((0, 0, 1)), pose((0, 0, 1.1))], "nav", sizes),
    )
    assert s.value == 1.0


# --------------------------------------------------------------------------------------------------------
# Parse cascade


@pytest.mark.parametrize(
    ("text", "where", "value"),
    [
        ('x ```json\n{"a": 1}\n``` and {"b": 2}', "```json block, json", {"a": 1}),
        ('```\n{"a": 1}\n```', "fenced block, json", {"a": 1}),
        ('Plan: {"a": 1} done', "outermost braces, json", {"a": 1}),
        ('{"a": [1, 2,],}', "outermost braces, json after removing trailing commas", {"a": [1, 2]}),
        ("{'a': 1}", "outermost braces, Python literal", {"a": 1}),
        ("no braces at all", "whole text, undecodable", None),
    ],
)
def test_parse_cascade_order(text, where, value):
    assert lmms_eval_decode(text) == (value, where)


def test_literal_eval_runs_on_the_unrepaired_text_and_a_non_object_scores_zero():
    # trailing commas + single quotes: json fails twice, literal_eval accepts both -> decoded
    assert lmms_eval_decode("{'a': [1,],}")[0] == {"a": [1]}
    s = lmms("[1, 2]", ref([IDENTITY, pose((0, 0, 0.1))]))
    assert s.parse_failed and s.value == 0.0 and "list" in s.explanation


# --------------------------------------------------------------------------------------------------------
# Ground truth derived from our datasets, oracle, and agreement with a literal reference implementation


def test_truth_from_a_trajectory_is_relative_to_the_first_camera():
    gt = parse_plan('{"step_1": {"actions": ["W"], "step_nums": [3]}}')
    start = np.eye(4)
    start[:3, :3] = Rotation.from_rotvec([0, 1.0, 0]).as_matrix()
    start[:3, 3] = [5, 0, 0]
    traj = plan_to_trajectory(gt, start, 0.02, 0.1)
    truth = lmms_eval_truths([GoalReference("manip", gt, StepSizes(0.02, 0.1), trajectory=traj)])[0]
    assert truth.origin == "trajectory"
    assert truth.poses[0] == pytest.approx(IDENTITY)
    assert truth.poses[1] == pytest.approx([0, 0, 0.06, 0, 0, 0, 1])


def test_oracle_scores_one_when_the_truth_is_a_plan():
    gt = parse_plan(
        '{"step_1": {"actions": ["W", "→", "↑"], "step_nums": [3, 2, 1]}, "step_2": {"actions": ["R", "A"], "step_nums": [4, 2]}}'
    )
    for kind in ("nav", "manip"):
        reference = GoalReference(kind, gt, NAVIGATION_STEP_SIZES)
        assert lmms_eval_truths([reference])[0].origin == "plan"
        s = score_goal(render_answer(gt, kind, "lmms-eval"), reference, "lmms-eval")
        # 1 up to rounding: like the public code, the cosine of two equal vectors may land 1 ulp below 1
        assert s.value == pytest.approx(1.0, abs=1e-12), s.explanation
        assert s.components["position_error_m"] == 0.0 and s.components["rotation_error_deg"] == 0.0
    assert lmms_eval_answer(gt, "manip")["step_2"]["actions"] == ["↻", "A"]  # roll is written ↻/↺


def test_paper_style_answers_lose_roll_under_lmms_eval():
    gt = parse_plan('{"step_1": {"actions": ["R"], "step_nums": [10]}}')
    reference = GoalReference("manip", gt, NAVIGATION_STEP_SIZES)
    s = score_goal(render_answer(gt, "manip", "paper"), reference, "lmms-eval")
    assert s.metadata["notes"][0].startswith("unknown_symbol: step_1: 'R'") and s.value < 1.0


_TABLE = {
    "W": (2, 1),
    "S": (2, -1),
    "D": (0, 1),
    "A": (0, -1),
    "space": (1, -1),
    "shift": (1, 1),
    "→": (3, 1),
    "←": (3, -1),
    "↑": (4, 1),
    "↓": (4, -1),
    "↻": (5, 1),
    "↺": (5, -1),
    "STOP": None,
}


def _literal_lmms(answer: dict, info: dict, kind: str) -> tuple[float, bool | None]:
    """The documented conventions, written out one sample at a time with scipy (a second implementation)."""
    poses = np.array(info["optimal_rel_pose"], dtype=float)
    segments = sorted((k for k in info if "->" in k), key=lambda k: int(k.split("->")[0]))

    def move(p, step, seg):
        t = info[seg].get("translation_step_size", 0.02)
        r = info[seg].get("rotation_step_size", np.deg2rad(0.5))
        d = np.zeros(6)
        nums = step.get("step_nums", [])
        for j, sym in enumerate(step.get("actions", [])):
            if sym in _TABLE and _TABLE[sym] is not None:
                n = nums[j] if j < len(nums) else 1
                d[_TABLE[sym][0]] += _TABLE[sym][1] * (t if _TABLE[sym][0] < 3 else r) * n
        q = (Rotation.from_euler("zyx", d[3:]) * Rotation.from_quat(p[3:])).as_quat()
        return np.concatenate([p[:3] + d[:3], q / (np.linalg.norm(q) + 1e-12)])

    if kind == "nav":
        start = poses[-2]
        path = [start, move(start, answer, segments[-1])]
        target = poses[:7][-1]
    else:
        start, path = poses[0], [poses[0]]
        keys = sorted(answer, key=lambda k: int(k.split("_")[1]))
        for i, key in enumerate(keys[: len(segments)]):
            if isinstance(answer[key], dict):
                path.append(move(path[-1], answer[key], segments[i]))
        target = poses[: len(path)][-1]
    final = path[-1]
    g, p = target[:3] - start[:3], final[:3] - start[:3]
    ng, np_ = np.linalg.norm(g), np.linalg.norm(p)
    direction = (
        1.0 if ng < 1e-6 and np_ < 1e-6 else max(0.0, g @ p / (ng * np_)) if ng > 1e-6 and np_ > 1e-6 else 0.0
    )
    err = np.linalg.norm(final[:3] - target[:3])
    deg = np.degrees((Rotation.from_quat(final[3:]).inv() * Rotation.from_quat(target[3:])).magnitude())
    penalty = 1.0
    if kind == "manip":

        def turn(ps: list) -> float:
            return sum(
                (Rotation.from_quat(a[3:]).inv() * Rotation.from_quat(b[3:])).magnitude()
                for a, b in itertools.pairwise(ps)
            )

        penalty *= 0.7 if ng > 0.1 and np_ < 0.03 else 1.0
        penalty *= 0.5 if turn(poses) > np.deg2rad(5) and not turn(path) > np.deg2rad(2) else 1.0
    score = max(
        0.0,
        min(
            1.0,
            (0.4 * direction + 0.35 * math.exp(-13.863 * err) + 0.25 * math.exp(-0.0154 * (deg / 5) ** 2))
            * penalty,
        ),
    )
    success = None if kind == "nav" else (len(path) - 1 == len(segments) and err < 0.2 and deg < 10)
    return score, success


_SYMBOLS = [*list(_TABLE), "w", "Q", "R", "left"]
_steps = st.fixed_dictionaries(
    {
        "actions": st.lists(st.sampled_from(_SYMBOLS), min_size=0, max_size=4),
        "step_nums": st.lists(st.one_of(st.integers(-3, 15), st.floats(-2, 12, allow_nan=False)), max_size=4),
    }
)
_pose = st.builds(
    lambda xyz, rv: pose(xyz, rv),
    st.lists(st.floats(-0.3, 0.3), min_size=3, max_size=3),
    st.lists(st.floats(-0.4, 0.4), min_size=3, max_size=3),
)


@given(
    st.lists(_pose, min_size=2, max_size=5),
    st.lists(st.one_of(_steps, st.just("not a step")), min_size=0, max_size=6),
    st.lists(
        st.fixed_dictionaries(
            {},
            optional={
                "translation_step_size": st.floats(0.005, 0.1),
                "rotation_step_size": st.floats(0.001, 0.2),
            },
        ),
        min_size=4,
        max_size=4,
    ),
    st.sampled_from(["nav", "manip"]),
)
@settings(max_examples=120, deadline=None)
def test_batched_scorer_agrees_with_a_literal_implementation(poses, steps, sizes, kind):
    answer = (
        steps[0]
        if kind == "nav" and steps and isinstance(steps[0], dict)
        else {f"step_{i + 1}": s for i, s in enumerate(steps)}
    )
    reference = ref(poses, kind, sizes[: len(poses) - 1])
    s = lmms(answer, reference)
    expected, success = _literal_lmms(answer, reference.lmms_eval_extra_info, kind)
    assert s.value == pytest.approx(expected, abs=1e-9)
    assert s.metadata.get("binary_success") == success


def test_an_item_with_only_the_raw_lmms_eval_truth():
    # what a SpatialTree-Bench L4 item carries: its extra_info, no plan
    info = extra([IDENTITY, pose((0, 0, 0.1))])
    item = lmms_eval_reference("manip", {**info, "metricfunc": "manipulateeval"})
    assert lmms({"step_1": {"actions": ["W"], "step_nums": [5]}}, item).value == pytest.approx(1.0)
    with pytest.raises(ValueError, match="score it with scorer='lmms-eval'"):
        score_goal("{}", item)
    with pytest.raises(ValueError, match=r"not an lmms-eval L4 ground truth: .*optimal_rel_pose"):
        lmms_eval_reference("nav", {"poses": []})


def test_batch_equals_one_by_one():
    poses = [IDENTITY, pose((0, 0.05, 0.1), (0, 0.2, 0)), pose((0.1, 0, 0.2), (0.1, 0, 0))]
    answers = [
        {"step_1": {"actions": ["W", "→"], "step_nums": [3, 4]}},
        {"actions": ["D"], "step_nums": [2]},
        "oops",
    ]
    refs = [ref(poses, "manip"), ref(poses, "nav"), ref(poses, "manip")]
    texts = [json.dumps(a) if not isinstance(a, str) else a for a in answers]
    assert [s.value for s in score_lmms_eval_batch(texts, refs)] == [
        lmms(t, r).value for t, r in zip(texts, refs)
    ]
