import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.spatial.transform import Rotation

from action_mapping import PlanStep, Primitive, StepMotion, StepSizes, step_motion
from action_mapping.adapters import (
    CALVIN_ORIENTATION_SCALE,
    CALVIN_POSITION_SCALE,
    EB_MANIP_BOUNDS,
    OSC_POSITION_SCALE,
    OSC_ROTATION_SCALE,
    calvin_relative_actions,
    eb_manipulation_decode,
    eb_manipulation_encode,
    eb_manipulation_from_motion,
    eb_navigation_actions,
    osc_pose_actions,
)
from action_mapping.se3 import geodesic_angle

P = Primitive
# CALVIN's neutral TCP orientation (robot_obs[3:6]): the gripper points down.
CALVIN_TCP_EULER = np.array([3.09045411, -0.02908596, 1.50013585])

motions = st.builds(
    lambda t, a, g: StepMotion(np.array(t), np.array(a), g),
    st.lists(st.floats(-0.3, 0.3), min_size=3, max_size=3),
    st.lists(st.floats(-0.6, 0.6), min_size=3, max_size=3),
    st.sampled_from([None, 0, 1]),
)


def test_calvin_hand_worked_dolly_in():
    # Dolly in 0.1 m along the TCP's +Z (pointing down) = 5 units of 0.02 m, split into 5 actions of 1.
    motion = step_motion(PlanStep([P.DOLLY_IN], [5]), StepSizes(0.02, 0.05))
    actions = calvin_relative_actions(motion, CALVIN_TCP_EULER)
    assert actions.shape == (5, 7)
    R = Rotation.from_euler("xyz", CALVIN_TCP_EULER).as_matrix()
    np.testing.assert_allclose(
        actions[:, :3].sum(axis=0) * CALVIN_POSITION_SCALE, R @ [0, 0, 0.1], atol=1e-12
    )
    assert actions[:, :3].sum(axis=0)[2] < -4.9  # mostly world -z: down toward the table
    np.testing.assert_allclose(actions[:, 3:6], 0, atol=1e-9)
    assert np.all(actions[:, 6] == 1.0)  # no gripper change: CALVIN's open (1) is kept


def test_calvin_gripper_mapping():
    close = StepMotion(np.zeros(3), np.zeros(3), gripper=1)
    assert calvin_relative_actions(close, CALVIN_TCP_EULER)[0, 6] == -1.0  # CALVIN: -1 closes
    assert calvin_relative_actions(StepMotion(np.zeros(3), np.zeros(3), 0), CALVIN_TCP_EULER)[0, 6] == 1.0


@settings(max_examples=150, deadline=None)
@given(motions, st.integers(0, 1000))
def test_calvin_actions_reproduce_the_motion(motion, seed):
    R_tcp = Rotation.random(random_state=seed).as_matrix()
    actions = calvin_relative_actions(motion, R_tcp)
    assert np.all(np.abs(actions[:, :6]) <= 1 + 1e-9)
    np.testing.assert_allclose(
        actions[:, :3].sum(0) * CALVIN_POSITION_SCALE, R_tcp @ motion.translation, atol=1e-9
    )
    euler = Rotation.from_matrix(R_tcp).as_euler("xyz") + actions[:, 3:6].sum(0) * CALVIN_ORIENTATION_SCALE
    reached = Rotation.from_euler("xyz", euler).as_matrix()
    assert geodesic_angle(reached, R_tcp @ motion.rotation) < 1e-6


@settings(max_examples=150, deadline=None)
@given(motions, st.integers(0, 1000))
def test_osc_actions_reproduce_the_motion(motion, seed):
    F = Rotation.random(random_state=seed).as_matrix()
    actions = osc_pose_actions(motion, F)
    assert np.all(np.abs(actions[:, :6]) <= 1 + 1e-9)
    np.testing.assert_allclose(actions[:, :3].sum(0) * OSC_POSITION_SCALE, F @ motion.translation, atol=1e-9)
    composed = np.eye(3)
    for a in actions:
        composed = Rotation.from_rotvec(a[3:6] * OSC_ROTATION_SCALE).as_matrix() @ composed
    assert geodesic_angle(composed, F @ motion.rotation @ F.T) < 1e-9
    expected_gripper = {None: -1.0, 0: -1.0, 1: 1.0}[motion.gripper]
    assert np.all(actions[:, 6] == expected_gripper)


def test_eb_navigation_hand_worked():
    # 0.5 m forward, 0.25 m left, 90 deg right, 60 deg up -> ahead x2, left, rotate right, look up x2.
    motion = StepMotion(np.array([-0.25, 0, 0.5]), np.array([math.radians(60), math.pi / 2, 0]))
    conv = eb_navigation_actions(motion)
    assert conv.action_ids == [0, 0, 3, 4, 6, 6]
    assert conv.unsupported == []


def test_eb_navigation_reports_what_it_cannot_do():
    conv = eb_navigation_actions(StepMotion(np.array([0, -0.2, 0]), np.array([0, 0, 0.3]), gripper=1))
    assert conv.action_ids == []
    assert len(conv.unsupported) == 3 and "pedestal" in conv.unsupported[0]


@settings(max_examples=150, deadline=None)
@given(st.floats(-2, 2), st.floats(-2, 2), st.floats(-math.pi, math.pi), st.floats(-1.2, 1.2))
def test_eb_navigation_within_one_quantisation_step(x, z, yaw, pitch):
    conv = eb_navigation_actions(StepMotion(np.array([x, 0, z]), np.array([pitch, yaw, 0])))
    ids = np.array(conv.action_ids, dtype=int)
    done_z = 0.25 * (np.sum(ids == 0) - np.sum(ids == 1))
    done_x = 0.25 * (np.sum(ids == 2) - np.sum(ids == 3))
    done_yaw = math.pi / 2 * (np.sum(ids == 4) - np.sum(ids == 5))
    done_pitch = math.radians(30) * (np.sum(ids == 6) - np.sum(ids == 7))
    assert abs(done_z - z) <= 0.125 + 1e-9 and abs(done_x - x) <= 0.125 + 1e-9
    assert abs(done_yaw - yaw) <= math.pi / 4 + 1e-9 and abs(done_pitch - pitch) <= math.radians(15) + 1e-9


def test_eb_manipulation_hand_worked():
    # Workspace x from -0.3 to 0.7 in 100 voxels of 1 cm: x = 0.2 is voxel 50; Euler 0 deg is bin 60.
    action = eb_manipulation_encode(np.array([0.2, 0.0, 1.1]), np.eye(3), gripper_closed=False)
    assert action.tolist() == [50, 50, 50, 60, 60, 60, 1]
    position, rotation, closed = eb_manipulation_decode(action)
    np.testing.assert_allclose(position, [0.205, 0.005, 1.105])  # voxel centre
    np.testing.assert_allclose(rotation, np.eye(3), atol=1e-12)
    assert closed is False


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(0.0, 1.0), min_size=3, max_size=3), st.integers(0, 1000), st.booleans())
def test_eb_manipulation_round_trip_within_one_bin(frac, seed, closed):
    lo, hi = EB_MANIP_BOUNDS
    pos = lo + np.array(frac) * (hi - lo) * 0.999
    R = Rotation.random(random_state=seed).as_matrix()
    position, rotation, was_closed = eb_manipulation_decode(eb_manipulation_encode(pos, R, closed))
    assert np.all(np.abs(position - pos) <= 0.005 + 1e-9)
    # Each extrinsic-xyz Euler angle is within half a 3-degree bin (the geodesic error can be larger near
    # gimbal lock, so the guarantee is per angle).
    deg_in = Rotation.from_matrix(R).as_euler("xyz", degrees=True)
    deg_out = eb_manipulation_encode(pos, R, closed)[3:6] * 3.0 - 180.0
    assert np.all(np.abs((deg_out - deg_in + 180) % 360 - 180) <= 1.5 + 1e-6), deg_out
    assert geodesic_angle(Rotation.from_euler("xyz", deg_out, degrees=True).as_matrix(), rotation) < 1e-9
    assert was_closed is closed


def test_eb_manipulation_from_motion_moves_the_end_effector():
    ee_pos, ee_rot = np.array([0.2, 0.0, 1.1]), np.eye(3)
    motion = step_motion(PlanStep([P.TRUCK_RIGHT], [5], gripper=1), StepSizes(0.02, 0.1))
    action = eb_manipulation_from_motion(motion, ee_pos, ee_rot)
    position, _, closed = eb_manipulation_decode(action)
    np.testing.assert_allclose(position, [0.305, 0.005, 1.105])
    assert closed is True
