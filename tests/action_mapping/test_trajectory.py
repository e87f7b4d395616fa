import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.spatial.transform import Rotation

from action_mapping import (
    Plan,
    PlanStep,
    Primitive,
    StepSizes,
    plan_to_trajectory,
    step_motion,
    trajectory_to_plan,
    trajectory_to_plan_by_velocity,
)
from action_mapping.se3 import (
    axes_from_rotation,
    body_motion,
    geodesic_angle,
    invert,
    pose,
    rotation_from_axes,
)
from action_mapping.trajectory import step_count_rows, step_from_counts

P = Primitive
T_STEP, R_STEP = 0.02, math.pi / 2


def test_hand_worked_trajectory():
    # W x5 moves 0.1 m along camera +Z; a right pan of 90 deg turns +Z onto world +X; W x5 then moves along
    # +X.
    plan = Plan(
        steps=[PlanStep([P.DOLLY_IN], [5]), PlanStep([P.PAN_RIGHT], [1]), PlanStep([P.DOLLY_IN], [5])]
    )
    poses = plan_to_trajectory(plan, np.eye(4), T_STEP, R_STEP)
    assert poses.shape == (4, 4, 4)
    np.testing.assert_allclose(poses[1][:3, 3], [0, 0, 0.1], atol=1e-12)
    np.testing.assert_allclose(poses[2][:3, 2], [1, 0, 0], atol=1e-12)  # optical axis now world +X
    np.testing.assert_allclose(poses[3][:3, 3], [0.1, 0, 0.1], atol=1e-12)


def test_pedestal_up_moves_against_camera_y_and_tilt_up_looks_up():
    plan = Plan(steps=[PlanStep([P.PEDESTAL_UP, P.TILT_UP], [3, 1])])
    poses = plan_to_trajectory(plan, np.eye(4), 0.1, math.radians(30))
    np.testing.assert_allclose(poses[1][:3, 3], [0, -0.3, 0], atol=1e-12)  # -Y is up
    forward = poses[1][:3, 2]
    assert forward[1] < 0 and forward[2] > 0  # looks up (toward -Y) and still forward
    assert math.isclose(math.degrees(math.atan2(-forward[1], forward[2])), 30.0)


def test_euler_order_is_yaw_then_pitch_then_roll():
    angles = np.array([0.2, -0.4, 0.1])  # about X (tilt), Y (pan), Z (roll)
    expected = (
        Rotation.from_rotvec([0, -0.4, 0])
        * Rotation.from_rotvec([0.2, 0, 0])
        * Rotation.from_rotvec([0, 0, 0.1])
    ).as_matrix()
    np.testing.assert_allclose(rotation_from_axes(angles), expected, atol=1e-12)
    np.testing.assert_allclose(axes_from_rotation(expected), angles, atol=1e-12)


def test_body_motion_is_the_papers_world_delta_in_camera_frame():
    rng = np.random.default_rng(0)
    T_i = pose(Rotation.random(random_state=1).as_matrix(), rng.normal(size=3))
    T_j = pose(Rotation.random(random_state=2).as_matrix(), rng.normal(size=3))
    world_delta = T_j @ invert(T_i)  # the paper's T_{i+1} T_i^{-1}
    np.testing.assert_allclose(body_motion(T_i, T_j), invert(T_i) @ world_delta @ T_i, atol=1e-12)


def test_geodesic_angle():
    R = Rotation.from_rotvec([0, 0, 0.7]).as_matrix()
    assert math.isclose(geodesic_angle(R, np.eye(3)), 0.7, rel_tol=1e-9)


def random_pose(seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return pose(Rotation.random(random_state=seed).as_matrix(), rng.uniform(-2, 2, size=3))


MOTION_PRIMS = Primitive.camera_motions()


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(MOTION_PRIMS), st.integers(1, 10), st.integers(0, 10_000), st.floats(-0.49, 0.49))
def test_single_axis_round_trip_within_half_a_step(prim, count, seed, jitter):
    sizes = StepSizes(0.02, math.radians(5))
    size = sizes.translation if prim.category.value == "translation" else sizes.rotation
    # A motion of (count + jitter) steps along one axis must come back as `count` steps.
    step = PlanStep([prim], [1])
    unit = step_motion(step, sizes)
    scale = count + jitter
    D = pose(rotation_from_axes(unit.angles * scale), unit.translation * scale)
    start = random_pose(seed)
    plan = trajectory_to_plan(np.stack([start, start @ D]), sizes.translation, sizes.rotation)
    assert plan.ok
    assert plan.steps[0].actions == [prim] and plan.steps[0].step_nums == [count]
    assert size > 0


combo = st.lists(
    st.tuples(st.sampled_from(MOTION_PRIMS), st.integers(1, 10)),
    min_size=1,
    max_size=6,
    unique_by=lambda t: (t[0].category, t[0].axis),
)


@settings(max_examples=150, deadline=None)
@given(st.lists(combo, min_size=1, max_size=6), st.integers(0, 10_000))
def test_multi_primitive_plans_round_trip_exactly(steps, seed):
    sizes = StepSizes(0.02, math.radians(4))  # 10 counts stay far from the +-90 deg pitch singularity
    plan = Plan(steps=[PlanStep([p for p, _ in s], [n for _, n in s]) for s in steps])
    poses = plan_to_trajectory(plan, random_pose(seed), sizes.translation, sizes.rotation)
    back = trajectory_to_plan(poses, sizes.translation, sizes.rotation)
    assert back.ok
    for original, recovered in zip(plan.steps, back.steps):
        assert dict(zip(original.actions, original.step_nums)) == dict(
            zip(recovered.actions, recovered.step_nums)
        )


def test_counts_above_the_cap_are_clipped_and_flagged():
    plan = Plan(steps=[PlanStep([P.TRUCK_LEFT], [15])])
    poses = plan_to_trajectory(plan, np.eye(4), 0.02, 0.1)
    back = trajectory_to_plan(poses, 0.02, 0.1, max_count=10)
    assert back.steps[0].actions == [P.TRUCK_LEFT] and back.steps[0].step_nums == [10]
    assert back.error_codes == ["step_num_capped"]


def test_no_motion_is_a_stop_step():
    back = trajectory_to_plan(np.stack([np.eye(4), np.eye(4)]), 0.02, 0.1)
    assert back.steps[0].actions == [P.STOP]


def test_step_from_counts_inverts_the_count_rows_and_rounds():
    step = step_from_counts(np.array([2.4, -0.6, 0.0, 0.0, 1.5, -3.0]), gripper=1)
    assert step.gripper == 1 and [p.symbol for p in step.actions] == ["D", "space", "→", "L"]
    assert step_count_rows([step])[0] == [[2.0, -1.0, 0.0, 0.0, 2.0, -3.0]]
    assert step_from_counts(np.array([0.4, -0.49, 0.0, 0.2, 0.0, 0.0])) is None  # every count rounds to 0


def test_trajectory_shape_is_checked():
    with pytest.raises(ValueError, match="c2w_poses must have shape"):
        trajectory_to_plan(np.eye(4), 0.02, 0.1)


def test_velocity_variant_hand_worked():
    fps = 10
    # 10 frame intervals at 0.05 m/s forward (above 0.01 m/s), then 10 intervals at 0.005 m/s (below).
    z = np.concatenate([[0.0], np.cumsum([0.005] * 10 + [0.0005] * 10)])
    poses = np.stack([pose(translation=[0, 0, zi]) for zi in z])
    plan = trajectory_to_plan_by_velocity(poses, fps)
    assert [(s.actions, s.step_nums) for s in plan.steps] == [([P.DOLLY_IN], [10]), ([P.STOP], [1])]


def test_velocity_variant_rotation_threshold():
    fps = 5
    slow = math.radians(0.4) / fps  # 0.4 deg/s: below 0.5 deg/s
    fast = math.radians(2.0) / fps  # 2 deg/s: above, turning left (negative about +Y)
    yaws = np.concatenate([[0.0], np.cumsum([slow] * 5 + [-fast] * 3 + [0.0] * 2)])
    poses = np.stack([pose(rotation_from_axes([0, y, 0])) for y in yaws])
    plan = trajectory_to_plan_by_velocity(poses, fps)
    assert [(s.actions, s.step_nums) for s in plan.steps] == [([P.STOP], [1]), ([P.PAN_LEFT], [3])]


def test_step_vector_orders_roll_pitch_yaw():
    step = PlanStep([P.DOLLY_IN, P.TILT_UP, P.PAN_LEFT, P.ROLL_CW], [2, 1, 3, 4], gripper=1)
    vec = step_motion(step, StepSizes(0.01, 0.1)).vector()
    np.testing.assert_allclose(vec, [0, 0, 0.02, 0.4, 0.1, -0.3, 1])
