"""The paper's L4 scorers (SpatialTree Appendix C.3): hand-worked examples, decisions, properties."""

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from action_mapping import (
    NAVIGATION_STEP_SIZES,
    Plan,
    PlanStep,
    Primitive,
    StepSizes,
    parse_plan,
    step_motion,
)
from action_mapping.se3 import geodesic_angle, rotation_error_angles, rotation_from_axes, rotations_from_axes
from action_mapping.trajectory import step_counts
from benchmarks.scoring.goal import (
    GoalReference,
    ManipulationWeights,
    get_scorer,
    render_answer,
    score_goal,
    score_paper_batch,
    translation_step_scores,
)

D = NAVIGATION_STEP_SIZES.translation  # 0.019375 m per translation count
A = NAVIGATION_STEP_SIZES.rotation  # 0.4509 rad per rotation count


def plan(text_or_obj) -> Plan:
    text = text_or_obj if isinstance(text_or_obj, str) else json.dumps(text_or_obj, ensure_ascii=False)
    p = parse_plan(text)
    assert p.ok, p.errors
    return p


def nav_ref(obj, sizes=NAVIGATION_STEP_SIZES) -> GoalReference:
    return GoalReference("nav", plan(obj), sizes)


def manip_ref(obj) -> GoalReference:
    return GoalReference("manip", plan(obj), NAVIGATION_STEP_SIZES)


def answer(*steps) -> str:
    return json.dumps({f"step_{i + 1}": s for i, s in enumerate(steps)}, ensure_ascii=False)


# --------------------------------------------------------------------------------------------------------
# Hand-worked formula examples


def test_translation_formula_three_four_five_triangle():
    # gt = W4 + A3 = (-3D, 0, 4D), |gt| = 5D; pred = W4 = (0, 0, 4D); pred - gt = (3D, 0, 0), |.| = 3D.
    # s_d = 1 - 3D/5D = 0.4;  s_θ = (4D·4D) / (4D · 5D) = 0.8;  s_step = 0.4 · 0.8 = 0.32
    out = translation_step_scores(np.array([[0, 0, 4 * D]]), np.array([[-3 * D, 0, 4 * D]]))
    assert out["s_d"][0] == pytest.approx(0.4)
    assert out["s_theta"][0] == pytest.approx(0.8)
    assert out["s_step"][0] == pytest.approx(0.32)


@pytest.mark.parametrize(
    ("pred_counts", "s_d", "s_theta"),
    [
        (4, 1.0, 1.0),  # exact
        (2, 0.5, 1.0),  # undershoot: |2D - 4D| / 4D = 0.5 -> s_d = 0.5
        (6, 0.5, 1.0),  # overshoot by the same amount scores the same
        (9, 0.0, 1.0),  # |9D - 4D| / 4D = 1.25 > 1 -> clipped at 0
        (-4, 0.0, -1.0),  # reversed: |−8D| / 4D = 2 -> 0; cos = −1
    ],
)
def test_relative_distance_along_one_axis(pred_counts, s_d, s_theta):
    out = translation_step_scores(np.array([[0, 0, pred_counts * D]]), np.array([[0, 0, 4 * D]]))
    assert out["s_d"][0] == pytest.approx(s_d)
    assert out["s_theta"][0] == pytest.approx(s_theta)
    assert out["s_step"][0] == pytest.approx(s_d * max(0.0, s_theta))


def test_perpendicular_motion_scores_zero():
    # pred = D·x, gt = D·z: |pred - gt| = √2·D > |gt| -> s_d = 0; cos = 0
    out = translation_step_scores(np.array([[D, 0, 0]]), np.array([[0, 0, D]]))
    assert (out["s_d"][0], out["s_theta"][0], out["s_step"][0]) == (0.0, 0.0, 0.0)


def test_zero_ground_truth_translation_rules():
    still, move = np.zeros((1, 3)), np.array([[0, 0, D]])
    both_still = translation_step_scores(still, still)
    assert (both_still["s_d"][0], both_still["s_theta"][0], both_still["s_step"][0]) == (1.0, 1.0, 1.0)
    moves_when_still = translation_step_scores(move, still)
    assert (moves_when_still["s_d"][0], moves_when_still["s_theta"][0], moves_when_still["s_step"][0]) == (
        0,
        0,
        0,
    )
    still_when_moving = translation_step_scores(still, move)
    # s_d = 1 - |0 - D| / D = 0 by the formula; no direction -> s_θ = 0
    assert (still_when_moving["s_d"][0], still_when_moving["s_theta"][0]) == (0.0, 0.0)


def test_navigation_sample_with_padding_and_extra_step():
    gt = {
        "step_1": {"actions": ["W", "A"], "step_nums": [4, 3]},
        "step_2": {"actions": ["←"], "step_nums": [2]},
    }
    pred = answer(
        {"actions": ["W"], "step_nums": [4]},
        {"actions": ["←"], "step_nums": [2]},
        {"actions": ["W"], "step_nums": [1]},
    )
    s = score_goal(pred, nav_ref(gt))
    # step 1: 0.32 (the triangle above); step 2: both translate 0 -> 1; step 3: gt padded with STOP, pred
    # moves D -> 0. Mean over max(3, 2) = 3 steps: (0.32 + 1 + 0) / 3 = 0.44
    assert s.value == pytest.approx(0.44)
    assert [row["s_step"] for row in s.steps] == pytest.approx([0.32, 1.0, 0.0])
    assert s.metadata == {"steps_pred": 3, "steps_gt": 2, "format": "navigation"}
    assert "padded with 1 STOP" in s.explanation


def test_missing_step_scores_one_only_where_the_truth_stays_still():
    gt = {
        "step_1": {"actions": ["W"], "step_nums": [2]},
        "step_2": {"actions": ["→"], "step_nums": [1]},
        "step_3": {"actions": ["D"], "step_nums": [2]},
    }
    s = score_goal(answer({"actions": ["W"], "step_nums": [2]}), nav_ref(gt))
    # step 1 exact (1), step 2 pure rotation vs padded STOP (translation 0 = 0: 1), step 3 moves vs STOP (0)
    assert [row["s_step"] for row in s.steps] == [1.0, 1.0, 0.0]
    assert s.value == pytest.approx(2 / 3)


def test_navigation_ignores_rotation_but_reports_it():
    gt = {"step_1": {"actions": ["W", "←"], "step_nums": [3, 2]}}
    s = score_goal(answer({"actions": ["W", "→"], "step_nums": [3, 2]}), nav_ref(gt))
    assert s.value == 1.0  # the paper's navigation score is translation only
    assert s.steps[0]["rotation_error_deg"] == pytest.approx(math.degrees(4 * A))  # pan -2 vs +2 counts


def test_manipulation_step_combines_translation_rotation_gripper():
    gt = {
        "step_1": {"actions": ["W", "→"], "step_nums": [3, 2], "gripper": 1},
        "step_2": {"actions": ["shift"], "step_nums": [2]},
    }
    pred = answer(
        {"actions": ["W", "→"], "step_nums": [3, 1], "gripper": 1},
        {"actions": ["shift"], "step_nums": [2], "gripper": 0},
    )
    s = score_goal(pred, manip_ref(gt))
    # step 1: translation exact (1); pan 1 vs 2 counts -> θ = 0.4509 rad, s_rot = 1 - 0.4509/π = 0.856473;
    #         gripper 1 = 1 -> (1 + 0.856473 + 1) / 3 = 0.952158
    # step 2: translation exact, no rotation (1); the truth keeps gripper 1 (forward fill), pred says 0
    #         -> (1 + 1 + 0) / 3 = 0.666667.  Mean = 0.809412
    s_rot = 1 - A / math.pi
    assert s.steps[0]["s_rot"] == pytest.approx(s_rot)
    assert s.steps[0]["value"] == pytest.approx((2 + s_rot) / 3)
    assert s.steps[1]["gt_gripper"] == 1.0 and s.steps[1]["s_grip"] == 0.0
    assert s.value == pytest.approx(((2 + s_rot) / 3 + 2 / 3) / 2)


def test_gripper_unknown_in_truth_drops_the_term_and_unknown_prediction_scores_zero():
    gt_no_grip = {"step_1": {"actions": ["W"], "step_nums": [1]}}
    s = score_goal(answer({"actions": ["W", "↑"], "step_nums": [1, 1], "gripper": 1}), manip_ref(gt_no_grip))
    # no gripper in the truth: (s_step + s_rot) / 2 = (1 + (1 - A/π)) / 2
    assert s.steps[0]["s_grip"] is None
    assert s.value == pytest.approx((2 - A / math.pi) / 2)
    gt_grip = {"step_1": {"actions": ["W"], "step_nums": [1], "gripper": 0}}
    s = score_goal(answer({"actions": ["W"], "step_nums": [1]}), manip_ref(gt_grip))
    assert s.steps[0]["s_grip"] == 0.0 and s.value == pytest.approx(2 / 3)


def test_gripper_actions_g_and_h_set_the_state():
    gt = {"step_1": {"actions": ["W"], "step_nums": [1], "gripper": 1}}
    s = score_goal(answer({"actions": ["W", "H"], "step_nums": [1, 1]}), manip_ref(gt))
    assert s.steps[0]["pred_gripper"] == 1.0 and s.value == 1.0


def test_manipulation_weights_are_configurable_and_validated():
    gt = {"step_1": {"actions": ["W"], "step_nums": [1], "gripper": 1}}
    pred = answer({"actions": ["W"], "step_nums": [1], "gripper": 0})
    assert score_goal(pred, manip_ref(gt)).value == pytest.approx(2 / 3)
    only_motion = ManipulationWeights(translation=0.5, rotation=0.5, gripper=0.0)
    assert score_goal(pred, manip_ref(gt), weights=only_motion).value == 1.0
    with pytest.raises(ValueError, match="translation \\+ rotation > 0"):
        ManipulationWeights(0.0, 0.0, 1.0)
    with pytest.raises(ValueError, match="paper"):
        get_scorer("lmms-eval", weights=only_motion)
    with pytest.raises(ValueError, match="unknown goal scorer"):
        get_scorer("bleu")


def test_reference_validation():
    gt = plan({"step_1": {"actions": ["W"], "step_nums": [1]}})
    with pytest.raises(ValueError, match="kind must be one of"):
        GoalReference("drive", gt, NAVIGATION_STEP_SIZES)
    with pytest.raises(ValueError, match=r"needs a trajectory of shape \(2, 4, 4\)"):
        GoalReference("nav", gt, NAVIGATION_STEP_SIZES, trajectory=np.tile(np.eye(4), (3, 1, 1)))
    with pytest.raises(ValueError, match="got 2 predictions for 1 references"):
        score_paper_batch(["", ""], [GoalReference("nav", gt, NAVIGATION_STEP_SIZES)])


def test_parse_failure_scores_zero_and_is_flagged():
    ref = nav_ref({"step_1": {"actions": ["W"], "step_nums": [1]}})
    for text in ["I cannot tell.", "", '{"step_1": {"actions": ["fly"], "step_nums": [2]}}']:
        s = score_goal(text, ref)
        assert (s.value, s.parse_failed) == (0.0, True)
        assert s.explanation.startswith("parse failure")
    repaired = score_goal("```json\n{'step_1': {'actions': ['W'], 'step_nums': [1],},}\n```", ref)
    assert repaired.value == 1.0 and not repaired.parse_failed
    assert "repaired_json" in repaired.explanation  # repairs are kept visible


def test_score_json_is_strict_and_traceable():
    s = score_goal(
        answer({"actions": ["W"], "step_nums": [1]}),
        manip_ref({"step_1": {"actions": ["W"], "step_nums": [1]}}),
    )
    text = json.dumps(s.to_json(), allow_nan=False)  # the missing gripper score is null, not NaN
    back = json.loads(text)
    assert back["parsed"]["plan"] == {"step_1": {"actions": ["W"], "step_nums": [1]}}
    assert back["steps"][0]["s_grip"] is None and back["value"] == 1.0


def test_step_sizes_of_each_sample_are_used():
    # gt W2 at 0.05 m/step = 0.1 m; pred W1 -> 0.05 m: s_d = 0.5 whatever the sizes, but the recorded
    # vectors are metric, so a batch with two sizes must keep them apart
    gt = {"step_1": {"actions": ["W"], "step_nums": [2]}}
    refs = [nav_ref(gt, StepSizes(0.05, 0.1)), nav_ref(gt, StepSizes(0.5, 0.1))]
    scores = score_paper_batch([answer({"actions": ["W"], "step_nums": [1]})] * 2, refs)
    assert [s.value for s in scores] == pytest.approx([0.5, 0.5])
    assert scores[0].steps[0]["gt_translation"] == pytest.approx([0, 0, 0.1])
    assert scores[1].steps[0]["gt_translation"] == pytest.approx([0, 0, 1.0])


# --------------------------------------------------------------------------------------------------------
# The batched SE(3) helpers added to action_mapping agree with the scalar ones


@given(st.lists(st.floats(-3, 3), min_size=6, max_size=6))
@settings(max_examples=60, deadline=None)
def test_batched_rotation_helpers_match_scalar_ones(angles):
    a, b = np.array(angles[:3]), np.array(angles[3:])
    assert np.allclose(rotations_from_axes(a[None])[0], rotation_from_axes(a))
    expected = geodesic_angle(rotation_from_axes(a), rotation_from_axes(b))
    assert rotation_error_angles(a[None], b[None])[0] == pytest.approx(expected, abs=1e-6)
    assert rotation_error_angles(a[None], a[None])[0] == 0.0  # exact, unlike arccos of the trace


# --------------------------------------------------------------------------------------------------------
# Properties

MOTIONS = Primitive.camera_motions()
REVERSE = {
    p: next(q for q in MOTIONS if q.axis == p.axis and q.category is p.category and q.sign == -p.sign)
    for p in MOTIONS
}


@st.composite
def plans(draw, *, gripper: bool = False, max_steps: int = 6) -> Plan:
    steps = []
    for _ in range(draw(st.integers(1, max_steps))):
        actions = draw(st.lists(st.sampled_from((*MOTIONS, Primitive.STOP)), min_size=1, max_size=3))
        nums = [draw(st.integers(0, 10)) for _ in actions]
        steps.append(
            PlanStep(actions, nums, gripper=draw(st.sampled_from([0, 1, None])) if gripper else None)
        )
    return Plan(steps=steps, format="navigation")


@given(plans(gripper=True))
@settings(max_examples=60, deadline=None)
def test_step_counts_matches_step_motion(p):
    counts, grips = step_counts(p.steps)
    sizes = StepSizes(0.03, 0.2)
    for row, grip, step in zip(counts, grips, p.steps):
        motion = step_motion(step, sizes)
        assert np.allclose(row[:3] * sizes.translation, motion.translation)
        assert np.allclose(row[3:] * sizes.rotation, motion.angles)
        assert (np.isnan(grip) and motion.gripper is None) or grip == motion.gripper


@given(plans(gripper=True), st.sampled_from(["nav", "manip"]))
@settings(max_examples=60, deadline=None)
def test_a_perfect_prediction_scores_exactly_one(gt, kind):
    ref = GoalReference(kind, gt, NAVIGATION_STEP_SIZES)
    s = score_goal(render_answer(gt, kind), ref)
    assert s.value == 1.0 and not s.parse_failed


@given(plans(gripper=True), plans(gripper=True), st.sampled_from(["nav", "manip"]))
@settings(max_examples=80, deadline=None)
def test_scores_stay_in_unit_interval(gt, pred, kind):
    s = score_goal(render_answer(pred, kind), GoalReference(kind, gt, NAVIGATION_STEP_SIZES))
    assert 0.0 <= s.value <= 1.0
    table = s.step_table
    assert np.all((table["s_step"] >= 0) & (table["s_step"] <= 1))
    assert np.all((table["s_theta"] >= -1) & (table["s_theta"] <= 1))


@given(plans())
@settings(max_examples=60, deadline=None)
def test_a_reversed_motion_scores_zero_on_direction(gt):
    reversed_plan = Plan(
        [PlanStep([REVERSE.get(a, a) for a in s.actions], list(s.step_nums)) for s in gt.steps]
    )
    s = score_goal(render_answer(reversed_plan, "nav"), GoalReference("nav", gt, NAVIGATION_STEP_SIZES))
    moving = np.linalg.norm(s.step_table["gt_translation"], axis=1) > 0
    assert np.all(s.step_table["s_theta"][moving] == pytest.approx(-1.0))
    assert np.all(s.step_table["s_step"][moving] == 0.0)
    # only the steps where the truth does not translate can score, and there the reverse of nothing is nothing
    assert s.value == pytest.approx(float(np.mean(~moving)))


@given(plans(), plans(), st.floats(0.001, 1.0))
@settings(max_examples=60, deadline=None)
def test_navigation_score_does_not_depend_on_the_step_size(gt, pred, scale):
    # s_d and s_θ are ratios of lengths, and both plans are counted in the same unit
    text = render_answer(pred, "nav")
    base = score_goal(text, GoalReference("nav", gt, NAVIGATION_STEP_SIZES)).value
    scaled = score_goal(
        text, GoalReference("nav", gt, StepSizes(scale, NAVIGATION_STEP_SIZES.rotation))
    ).value
    assert scaled == pytest.approx(base, abs=1e-9)


@given(st.lists(st.floats(-1, 1), min_size=6, max_size=6), st.lists(st.floats(-3, 3), min_size=3, max_size=3))
@settings(max_examples=60, deadline=None)
def test_translation_scores_are_invariant_to_a_common_rotation(vectors, angles):
    # s_d and s_θ use only lengths and dot products, which a rotation of both vectors preserves
    pred, gt = np.array([vectors[:3]]), np.array([vectors[3:]])
    R = rotation_from_axes(np.array(angles))
    a, b = translation_step_scores(pred, gt), translation_step_scores(pred @ R.T, gt @ R.T)
    for key in ("s_d", "s_theta", "s_step"):
        assert b[key][0] == pytest.approx(a[key][0], abs=1e-9)


@given(st.lists(st.tuples(plans(max_steps=1), plans(max_steps=1)), min_size=2, max_size=5), st.randoms())
@settings(max_examples=40, deadline=None)
def test_navigation_mean_is_invariant_to_reordering_aligned_steps(pairs, rnd):
    # the sample score is a mean of per-step scores, so permuting gt and prediction steps together keeps it
    order = list(range(len(pairs)))
    rnd.shuffle(order)

    def score(idx):
        gt = Plan([pairs[i][0].steps[0] for i in idx])
        pred = Plan([pairs[i][1].steps[0] for i in idx])
        return score_goal(render_answer(pred, "nav"), GoalReference("nav", gt, NAVIGATION_STEP_SIZES)).value

    assert score(order) == pytest.approx(score(range(len(pairs))))


@given(
    st.lists(
        st.tuples(plans(gripper=True), plans(gripper=True), st.sampled_from(["nav", "manip"])),
        min_size=1,
        max_size=6,
    )
)
@settings(max_examples=30, deadline=None)
def test_batch_scores_equal_single_scores(items):
    refs = [GoalReference(k, gt, NAVIGATION_STEP_SIZES) for gt, _, k in items]
    texts = [render_answer(pred, k) for _, pred, k in items]
    batch = score_paper_batch(texts, refs)
    assert [s.value for s in batch] == [score_goal(t, r).value for t, r in zip(texts, refs)]
