"""The navigation env: spaces, feedback, collisions, success threshold, determinism, snapshots, actions."""

import json
import math
import subprocess
import sys

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import envs
from action_mapping import Plan, StepMotion
from envs.navigation.env import ACTION_NAMES, EBNavigationEnv
from envs.navigation.episodes import make_episode
from tests.nav_scenes import empty_room, episode

NAV_IDS = [i for i in envs.registered_ids() if i.startswith("SpatialArena/EBNavigation")]


@pytest.fixture(scope="module")
def env():
    e = EBNavigationEnv(width=64, height=64, depth=True, mask=True)
    yield e
    e.close()


@pytest.fixture(scope="module")
def cont():
    e = EBNavigationEnv(action_mode="continuous", width=64, height=64)
    yield e
    e.close()


def _feedbacks(e, actions):
    return [e.step(a)[4]["feedback"] for a in actions]


def test_registered_ids_and_cheap_registration():
    assert set(NAV_IDS) == {
        "SpatialArena/EBNavigation-v0",
        "SpatialArena/EBNavigation-Continuous-v0",
        "SpatialArena/EBNavigation-RGBD-v0",
        "SpatialArena/EBNavigation-500px-v0",
    }
    code = "import sys, envs; assert 'mujoco' not in sys.modules, 'import envs loaded mujoco'"
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize(
    "env_id",
    [
        "SpatialArena/EBNavigation-v0",
        "SpatialArena/EBNavigation-Continuous-v0",
        "SpatialArena/EBNavigation-RGBD-v0",
    ],
)
def test_check_env(env_id):
    e = gym.make(env_id, width=48, height=48).unwrapped
    try:
        check_env(e, skip_render_check=True)
    finally:
        e.close()


def test_spaces(env, cont):
    assert env.action_space == gym.spaces.Discrete(8)
    assert cont.action_space.shape == (6,) and cont.action_space.dtype == np.float32
    obs, info = env.reset(options={"episode": episode(empty_room(), 2.0, 2.0, 0.0)})
    assert set(obs) == {"rgb", "depth", "object_ids", "instruction", "feedback"}
    assert obs["rgb"].shape == (64, 64, 3) and obs["rgb"].dtype == np.uint8
    assert obs["depth"].dtype == np.float32 and obs["object_ids"].dtype == np.int32
    assert env.observation_space.contains(obs)
    assert obs["feedback"] == "" and obs["instruction"] == "navigate to the ball in the room"
    assert info["mask_labels"] == ["none", "ball_0"]
    json.dumps(info)  # every info value is JSON-safe


def test_depth_and_mask_hand_worked(env):
    # Facing the west wall from x = 2.0: its face is at x = 0.06, so the optical axis meets it 1.94 m away.
    obs, info = env.reset(options={"episode": episode(empty_room(), 2.0, 2.0, 180.0)})
    h, w = obs["depth"].shape
    assert obs["depth"][h // 2, w // 2] == pytest.approx(1.94, abs=0.01)
    assert info["visibility"] == 0 and not (obs["object_ids"] == 1).any()
    # facing the ball, 2 m away
    obs, info = env.reset(options={"episode": episode(empty_room(), 1.0, 2.0, 0.0)})
    assert info["visibility"] == int((obs["object_ids"] == 1).sum()) > 0
    assert info["distance"] == pytest.approx(2.0)


def test_collision_blocks_and_feedback_strings(env):
    env.reset(options={"episode": episode(empty_room(), 0.5, 2.0, 180.0)})  # facing the west wall
    first, second = _feedbacks(env, [0, 0])
    assert first == "Last action Move forward by 0.25 executed successfully."
    assert second == "Last action Move forward by 0.25 is invalid. The move is blocked by the wall."
    assert env.agent_pose.x == pytest.approx(0.25)  # x = 0.0 would put the 0.18 m disc into the wall
    assert _feedbacks(env, [6, 6]) == [
        "Last action Tilt the camera upward by 30 degrees. executed successfully.",
        "Last action Tilt the camera upward by 30 degrees. is invalid. The camera cannot tilt further up (limit +30 degrees).",
    ]
    _, _, _, _, info = env.step(9)
    assert info["feedback"] == "Last action 9 is invalid. Action id must be an integer from 0 to 7."
    assert not info["last_action_success"] and info["steps"] == 5


def test_success_threshold_both_sides(env):
    ep = episode(empty_room(), 1.75, 2.0, 0.0)  # 1.25 m from the ball at (3, 2)
    _, info = env.reset(options={"episode": ep})
    assert not info["is_success"] and info["distance"] == pytest.approx(1.25)
    _, reward, terminated, truncated, info = env.step(0)  # 1.00 m: success (<= 1.0)
    assert info["is_success"] and terminated and not truncated and reward == 1.0
    assert info["distance"] == pytest.approx(1.0)
    env.reset(options={"episode": episode(empty_room(), 1.74, 2.0, 0.0)})
    _, reward, terminated, _, info = env.step(0)  # 1.01 m: not yet
    assert not terminated and reward == 0.0 and info["distance"] == pytest.approx(1.01)
    with pytest.raises(RuntimeError, match="reset"):
        env.reset(options={"episode": ep})
        env.step(0)
        env.step(0)


def test_step_budget_truncates_at_twenty(env):
    env.reset(options={"episode": episode(empty_room(), 0.5, 0.5, 0.0)})
    for i in range(20):
        _, _, terminated, truncated, info = env.step(4)
        assert not terminated and truncated == (i == 19)
    assert info["steps"] == 20


def test_bad_actions_raise_clear_errors(env, cont):
    env.reset(options={"episode": episode(empty_room(), 2.0, 2.0, 0.0)})
    with pytest.raises(ValueError, match="NaN"):
        env.step(float("nan"))
    with pytest.raises(ValueError, match="integer id"):
        env.step(2.5)
    cont.reset(options={"episode": episode(empty_room(), 2.0, 2.0, 0.0)})
    with pytest.raises(ValueError, match="NaN"):
        cont.step(np.array([np.nan, 0, 0, 0, 0, 0]))
    with pytest.raises(ValueError, match="native_actions"):
        cont.step(np.array([0, 0, 3.0, 0, 0, 0]))
    with pytest.raises(TypeError, match="spatial-action wrapper"):
        env.step(Plan())
    with pytest.raises(ValueError, match="unknown reset options"):
        env.reset(options={"scene": {}})


def test_continuous_moves_clip_at_obstacles_and_turn(cont):
    cont.reset(options={"episode": episode(empty_room(), 1.0, 2.0, 180.0)})  # facing the west wall
    _, _, _, _, info = cont.step(np.array([0, 0, 1.0, 0, 0, 0], np.float32))
    assert cont.agent_pose.x == pytest.approx(0.06 + 0.18, abs=1e-4)  # stopped one radius from the wall face
    assert "cut short by the wall" in info["feedback"] and "is invalid" in info["feedback"]
    _, _, _, _, info = cont.step(np.array([0, 0, 0, 0, math.pi / 2, 0], np.float32))  # pan right 90 deg
    assert cont.agent_pose.heading_deg == pytest.approx(90.0)  # from west (180) to north (90)
    assert info["feedback"] == "Last action [pan +90.00 deg] executed successfully."


def test_native_actions_for_both_spaces(env, cont):
    env.reset(options={"episode": episode(empty_room(), 1.0, 2.0, 0.0)})
    motion = StepMotion(np.array([0.0, 0.0, 0.5]), np.array([0.0, math.pi / 2, 0.0]))
    assert env.native_actions(motion) == [0, 0, 4]  # dolly 0.5 m = 2 x MoveAhead, pan right = RotateRight
    assert env.native_actions(StepMotion(np.array([0.0, -0.2, 0.0]), np.zeros(3))) == []
    _, _, _, _, info = env.step(4)
    assert info["unsupported_motion"] == ["pedestal +0.200 m (EB-Navigation cannot move vertically)"]
    assert env.step(4)[4]["unsupported_motion"] == []  # reported once
    cont.reset(options={"episode": episode(empty_room(), 1.0, 2.0, 0.0)})
    chunks = cont.native_actions(StepMotion(np.array([0.0, 0.0, 2.5]), np.array([0.0, 0.3, 0.0])))
    assert len(chunks) == 4 and all(cont.action_space.contains(c) for c in chunks)
    np.testing.assert_allclose(np.sum(chunks, axis=0), [0, 0, 2.5, 0, 0.3, 0], atol=1e-6)


def test_same_seed_same_rollout_and_default_set_sampling():
    actions = [0, 4, 0, 7, 2, 5, 0, 1]
    runs = []
    for _ in range(2):
        e = EBNavigationEnv(width=48, height=48)
        obs, info = e.reset(seed=3)
        trace = [(obs["rgb"].copy(), info["episode_id"])]
        for a in actions:
            obs, r, term, trunc, info = e.step(a)
            trace.append((obs["rgb"].copy(), json.dumps(info["snapshot"]), r, term, trunc))
            if term or trunc:
                break
        e.close()
        runs.append(trace)
    assert runs[0][0][1] == runs[1][0][1] and runs[0][0][1].startswith("base/")
    for a, b in zip(*runs):
        np.testing.assert_array_equal(a[0], b[0])
        assert a[1:] == b[1:]


def test_world_needs_a_reset():
    fresh = EBNavigationEnv(width=32, height=32)
    with pytest.raises(RuntimeError, match="no scene loaded; call reset"):
        _ = fresh.world  # nothing is compiled before the first reset
    fresh.close()


def test_scene_reuse_and_no_state_leak(env):
    first, second = make_episode("base", 0), make_episode("base", 1)  # same scene group
    assert first["scene"] == second["scene"]
    obs_a, _ = env.reset(options={"episode": first})
    world = env.world
    env.step(0)
    env.reset(options={"episode": second})
    assert env.world is world  # compiled model reused
    obs_again, info = env.reset(options={"episode": first})
    np.testing.assert_array_equal(obs_a["rgb"], obs_again["rgb"])
    assert info["steps"] == 0 and obs_again["feedback"] == ""
    env.reset(options={"episode": episode(empty_room(), 2.0, 2.0, 0.0)})
    assert env.world is not world


def test_snapshot_restore_round_trip(env):
    env.reset(options={"episode": episode(empty_room(), 1.0, 1.0, 0.0)})
    for a in (0, 5, 0):
        obs = env.step(a)[0]
    snap = json.loads(json.dumps(env.snapshot()))
    for a in (0, 4, 7):
        env.step(a)
    restored = env.restore(snap)
    np.testing.assert_array_equal(restored["rgb"], obs["rgb"])
    assert env.snapshot() == snap
    with pytest.raises(ValueError, match="does not belong"):
        env.restore({**snap, "episode_id": "other"})


def test_action_names_are_ebs():
    assert (
        ACTION_NAMES[0] == "Move forward by 0.25"
        and ACTION_NAMES[7] == "Tilt the camera downward by 30 degrees."
    )


def test_continuous_roll_and_pedestal_follow_the_camera_frame():
    e = EBNavigationEnv(action_mode="continuous", width=32, height=32, depth=True)
    try:
        obs, _ = e.reset(options={"episode": episode(empty_room(), 1.0, 1.0, 90.0)})  # 2.2 m from the ball
        # Level view: the ceiling (1.2 m above the camera) is nearer than the floor (1.5 m below).
        assert obs["depth"][0].mean() < obs["depth"][-1].mean()
        obs = e.step(np.array([0, 0, 0, 0, 0, math.pi / 2], np.float32))[0]
        # Roll clockwise (seen from behind) by 90 deg: camera +x turns to world down, the floor is on the
        # right.
        assert obs["depth"][:, -1].mean() > obs["depth"][:, 0].mean()
        e.step(np.array([0, -0.5, 0, 0, 0, 0], np.float32))  # pedestal up: camera y points down
        assert e.agent_pose.height == pytest.approx(2.0)
    finally:
        e.close()
