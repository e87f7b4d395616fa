"""The built-in table's gripped parts and robot_obs timing against calvin_env (mees/calvin_env 797142c).

Numbers marked CALVIN are read from calvin_env's ``data/`` files (named at each); the table is loaded there
with global scaling 0.8 (``OFFICIAL_SCALING``), the robot unscaled. Where ``$CALVIN_ENV`` names a checkout,
the built-in shapes are also probed side by side with CALVIN's own files.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

from envs.calvin import constants as C
from envs.calvin.assets import OFFICIAL_SCALING, finger_rings, gel_rings
from envs.calvin.bullet import pb
from envs.calvin.env import PlayTableEnv

S = OFFICIAL_SCALING
SCENE = np.array(
    [
        0.0,
        0.0,
        0.0,
        0.0,
        0,
        0,
        0.05,
        -0.12,
        0.46,
        0,
        0,
        1.57,
        0.23,
        -0.12,
        0.46,
        0,
        0,
        1.57,
        -0.24,
        0.09,
        0.46,
        0,
        0,
        1.57,
    ]
)
# Bullet gives each convex mesh a 1 mm collision margin (CALVIN's meshes get the same); distances between
# two meshes come out 2 mm short of their geometry.
MESH_MARGIN = 0.001


@pytest.fixture(scope="module")
def env():
    e = PlayTableEnv(cameras=())
    e.reset(options={"scene_obs": SCENE})
    yield e
    e.close()


def _box_bounds(env: PlayTableEnv, link: str, keep=lambda lo, hi: True) -> tuple[np.ndarray, np.ndarray]:
    """Union of a table link's collision boxes in its link frame (boxes ``keep(lo, hi)`` selects)."""
    sim = env.sim
    los, his = [], []
    for shape in sim.p.getCollisionShapeData(sim.scene.table, sim.scene.links[link]):
        assert shape[2] == pb.GEOM_BOX and np.allclose(shape[6], (0, 0, 0, 1))
        centre, half = np.asarray(shape[5]), np.asarray(shape[3]) / 2
        if keep(centre - half, centre + half):
            los.append(centre - half)
            his.append(centre + half)
    return np.min(los, axis=0), np.max(his, axis=0)


def _probe(env: PlayTableEnv, link: str, local: tuple[float, float, float]) -> float:
    """Signed distance (m) from a 1 mm sphere at ``local`` in a table link's frame to that link's shapes."""
    sim = env.sim
    p = sim.p
    body = p.createMultiBody(0, p.createCollisionShape(pb.GEOM_SPHERE, radius=0.001), -1, [0, 0, 5])
    pos, rot = env.link_pose(link)
    p.resetBasePositionAndOrientation(body, (pos + rot @ np.asarray(local)).tolist(), [0, 0, 0, 1])
    points = p.getClosestPoints(body, sim.scene.table, 0.1, -1, sim.scene.links[link])
    p.removeBody(body)
    return min(c[8] for c in points) - 0.001


def test_switch_is_calvins_wide_bar(env):
    lo, hi = _box_bounds(env, "switch_link")
    # CALVIN calvin_table_D/meshes/switch_link_vhacd2.obj (switch_link's collision): x -0.0753..0.0753,
    # y -0.0003..0.0804 (out of the panel), z -0.0303..0.01 (along the slope)
    np.testing.assert_allclose(lo, np.array([-0.0753, 0.0, -0.0303]) * S, atol=5e-4)
    np.testing.assert_allclose(hi, np.array([0.0753, 0.0804, 0.01]) * S, atol=5e-4)
    assert _probe(env, "switch_link", (0.0, 0.055, -0.008)) < 0  # the bar spans the middle...
    assert _probe(env, "switch_link", (0.0, 0.02, -0.008)) > 0.01  # ...on legs at its ends, open between them


def test_drawer_grip_is_calvins_long_bar(env):
    # CALVIN calvin_table_D/meshes/drawer_link_vhacd2.obj, drawer frame turned -90 deg about x into ours
    # (our y = -CALVIN z, our z = CALVIN y): front panel (convex_0) z 0.1967..0.2275, x +-0.2761,
    # y -0.0261..0.1015; grip (convex_6/7 posts, convex_8 bar) x +-0.1507, y 0.0245..0.0773, z out to 0.3265
    lo, hi = _box_bounds(env, "drawer_link", keep=lambda lo, hi: hi[1] <= -0.2275 * S + 1e-6)
    np.testing.assert_allclose(lo, np.array([-0.1507, -0.3265, 0.0245]) * S, atol=5e-4)
    np.testing.assert_allclose(hi, np.array([0.1507, -0.2275, 0.0773]) * S, atol=5e-4)
    lo, hi = _box_bounds(env, "drawer_link")
    np.testing.assert_allclose(
        [lo[0], hi[0], lo[2], hi[2]], np.array([-0.2761, 0.2761, -0.0261, 0.1015]) * S, atol=5e-4
    )
    assert _probe(env, "drawer_link", (0.0, -0.25, 0.04)) < 0  # the bar...
    assert _probe(env, "drawer_link", (0.0, -0.21, 0.04)) > 0.02  # ...stands 5.6 cm off the panel


def test_sliding_door_has_calvins_arched_handle(env):
    # CALVIN calvin_table_D/meshes/slide_link_vhacd2.obj (slide_link's collision, same frame as ours):
    # door (convex_0) x -0.0007..0.3507, y -0.1507..0.1503, z -0.0007..0.0274; handle (convex_1-4)
    # x 0.1491..0.201, y -0.1003..0.1014, z 0.0274..0.1001 (out of the door)
    lo, hi = _box_bounds(env, "slide_link")
    np.testing.assert_allclose(lo, np.array([-0.0007, -0.1507, -0.0007]) * S, atol=5e-4)
    np.testing.assert_allclose(hi, np.array([0.3507, 0.1503, 0.1001]) * S, atol=5e-4)
    lo, hi = _box_bounds(env, "slide_link", keep=lambda lo, hi: lo[2] > 0.02)
    np.testing.assert_allclose(lo, np.array([0.1491, -0.1003, 0.0274]) * S, atol=5e-4)
    np.testing.assert_allclose(hi, np.array([0.201, 0.1014, 0.1001]) * S, atol=5e-4)
    assert _probe(env, "slide_link", (0.14, 0.0, 0.07)) < 0  # the bar spans the middle...
    assert _probe(env, "slide_link", (0.14, 0.0, 0.035)) > 0.01  # ...on legs at its ends, open below it


def test_finger_and_gel_pad_meshes_have_calvins_dimensions():
    finger = np.array([v for ring in finger_rings() for v in ring])
    # CALVIN franka_panda/meshes/collision/longer_finger_v2.obj: x -0.0105..0.0105, y 0.0039..0.027, z to
    # 0.0964
    np.testing.assert_allclose(finger.min(axis=0), [-0.0105, 0.0039, 0.0002], atol=2e-4)
    np.testing.assert_allclose(finger.max(axis=0), [0.0105, 0.027, 0.0964], atol=2e-4)
    gel = np.array([v for ring in gel_rings() for v in ring])
    # CALVIN franka_panda/meshes/visual/digit_gel_only.STL (x 0.0161..0.0201, y -0.0092..0.0093, z
    # 0.0047..0.0297) at panda_longer_finger.urdf's joint_finger_tip_left (xyz 0.0009 0.021 0.066, rpy 0 0
    # -1.57)
    np.testing.assert_allclose(gel.min(axis=0), [-0.0083, 0.021 - 0.0201, 0.066 + 0.0047], atol=2e-4)
    np.testing.assert_allclose(gel.max(axis=0), [0.0102, 0.021 - 0.0161, 0.066 + 0.0297], atol=2e-4)


def test_gel_pads_are_what_the_fingers_close_with(env):
    sim = env.sim
    p, robot = sim.p, sim.robot
    tips = robot.links["finger_left_tip"], robot.links["finger_right_tip"]
    fingers = robot.links["panda_leftfinger"], robot.links["panda_rightfinger"]
    for tip in tips:  # CALVIN panda_longer_finger.urdf, finger_*_tip: mass 0.0001, lateral_friction 1,
        info = p.getDynamicsInfo(robot.uid, tip)  # spinning_friction 0.001
        assert (
            info[0] == pytest.approx(1e-4)
            and info[1] == pytest.approx(1.0)
            and info[7] == pytest.approx(0.001)
        )
    # the gripper camera's box is visual only (CALVIN's gripper_cam link has no <collision>)
    assert p.getCollisionShapeData(robot.uid, robot.camera_link) == ()

    def gap(a: int, b: int) -> float:
        return min(c[8] for c in p.getClosestPoints(robot.uid, robot.uid, 0.2, a, b))

    for q in (0.0, 0.01, 0.02):
        for j in robot.finger_joints:
            p.resetJointState(robot.uid, j, q)
        # gel apex 0.0009 m and finger face 0.0039 m inside the joint axis (see the mesh test above)
        assert gap(*tips) == pytest.approx(2 * (q + 0.0009) - 2 * MESH_MARGIN, abs=2e-4)
        assert gap(*fingers) == pytest.approx(2 * (q + 0.0039) - 2 * MESH_MARGIN, abs=2e-4)
    env.reset(options={"scene_obs": SCENE})


def test_robot_obs_tcp_is_from_before_the_last_substep():
    """calvin_env's Robot.get_observation reads getLinkState(robot, tcp) without forward kinematics: the
    pose Bullet cached when the 8th sub-step began. Joint angles are current."""
    action = np.array([1.0, 0.6, -0.6, 0.0, 0.0, 0.3, -1.0], np.float32)
    observed, replay = PlayTableEnv(cameras=("gripper",)), PlayTableEnv(cameras=())
    observed.reset(options={"scene_obs": SCENE})
    replay.reset(options={"scene_obs": SCENE})
    for _ in range(3):
        obs, *_ = observed.step(action)
        sim = replay.sim
        sim.robot.apply_relative(action.astype(np.float64))  # as the env validates it
        for _ in range(C.SUBSTEPS - 1):
            sim.p.stepSimulation()
        before_last, _ = sim.robot.tcp_pose()
        sim.p.stepSimulation()
        sim.scene.update_lights()
        after_last, _ = sim.robot.tcp_pose()
        assert np.abs(before_last - after_last).max() > 5e-4  # the arm moves within one sub-step
        np.testing.assert_allclose(obs["robot_obs"][:3], before_last, atol=1e-9)
        joints = [s[0] for s in sim.p.getJointStates(sim.robot.uid, sim.robot.arm_joints)]
        np.testing.assert_allclose(obs["robot_obs"][7:14], joints, atol=1e-9)
    observed.close()
    replay.close()


@pytest.mark.skipif(
    not os.environ.get("CALVIN_ENV"),
    reason="set CALVIN_ENV to a calvin_env checkout to probe the built-in shapes against CALVIN's own files",
)
def test_shapes_probe_like_calvins_files(env):
    """Signed distances from probe points around the switch, drawer grip and door handle to the built-in
    boxes and to CALVIN's hulls agree (median within 1.5 mm; hull margins and rounded corners differ
    slightly); the gel pads close to the same gap."""
    calvin = PlayTableEnv(cameras=(), calvin_assets=os.environ["CALVIN_ENV"])
    calvin.reset(options={"scene_obs": SCENE})
    rng = np.random.default_rng(0)
    for link, lo, hi in (
        ("switch_link", (-0.09, -0.01, -0.05), (0.09, 0.09, 0.03)),
        ("drawer_link", (-0.16, -0.29, -0.01), (0.16, -0.17, 0.09)),
        ("slide_link", (0.09, -0.1, 0.0), (0.19, 0.1, 0.1)),
    ):
        points = [tuple(q) for q in rng.uniform(lo, hi, (60, 3))]
        ours = np.array([_probe(env, link, q) for q in points])
        theirs = np.array([_probe(calvin, link, q) for q in points])
        near = np.minimum(ours, theirs) < 0.02
        assert near.sum() > 20 and np.median(np.abs(ours - theirs)[near]) < 1.5e-3, link
    for e in (env, calvin):
        robot = e.sim.robot
        for j in robot.finger_joints:
            e.sim.p.resetJointState(robot.uid, j, 0.02)
    gaps = [
        min(
            c[8]
            for c in e.sim.p.getClosestPoints(
                e.sim.robot.uid,
                e.sim.robot.uid,
                0.2,
                e.sim.robot.links["finger_left_tip"],
                e.sim.robot.links["finger_right_tip"],
            )
        )
        for e in (env, calvin)
    ]
    assert gaps[0] == pytest.approx(gaps[1], abs=3e-4)
    calvin.close()
    env.reset(options={"scene_obs": SCENE})
