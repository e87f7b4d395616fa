"""The EB-Manipulation Gymnasium env on robosuite: spaces, success and failure, invalid actions, determinism."""

import json
import re

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import envs
import envs.manipulation.registration
from action_mapping import Plan, PlanStep, Primitive, StepMotion
from action_mapping.adapters import eb_manipulation_decode, eb_manipulation_encode
from benchmarks.embodied.manipulation import run_episode
from envs.manipulation import workspace
from envs.manipulation.env import EBManipulationEnv
from envs.manipulation.episodes import make_episode
from envs.manipulation.render import draw_boxes, object_boxes
from envs.manipulation.tasks.place import SORTER_HEIGHT
from envs.manipulation.tasks.wipe import AREA_LENGTH
from policies.experts.manipulation import EBManipulationExpert

SIZE = 64  # small images keep software rendering cheap
GRID = {"bounds": workspace.WORKSPACE_BOUNDS}
OBJECT_LIST = re.compile(r"^\{'object 1': \[\d+, \d+, \d+\](, 'object \d+': \[\d+, \d+, \d+\])*\}$")


@pytest.fixture(scope="module")
def wrapped():
    """One env per family through ``gym.make``, built once (robosuite takes seconds to compile a scene)."""
    built = {
        f: gym.make(f"SpatialArena/EBManipulation-{f}-v0", image_size=SIZE)
        for f in ("pick", "stack", "place", "wipe")
    }
    yield built
    for env in built.values():
        env.close()


@pytest.fixture(scope="module")
def made(wrapped):
    return {family: env.unwrapped for family, env in wrapped.items()}


def hold_action(env):
    """The EB action for staying where the gripper is, with its current gripper state."""
    position, rotation = env.scene.grip_pose()
    return eb_manipulation_encode(position, rotation, env.scene.gripper_closed, **GRID)


def test_every_family_is_registered_and_makes_through_gymnasium(wrapped):
    ids = envs.registered_ids()
    for family, env in wrapped.items():
        assert f"SpatialArena/EBManipulation-{family}-v0" in ids
        assert isinstance(env.unwrapped, EBManipulationEnv) and env.unwrapped.family == family
    obs, info = wrapped["place"].reset(seed=3, options={"subset": "visual"})
    assert info["episode"]["subset"] == "visual" and info["episode"]["index"] is None
    assert obs["instruction"].startswith("Put the ") and info["is_success"] is False


@pytest.mark.parametrize("family", ["pick", "stack", "place", "wipe"])
def test_reset_and_step_stay_in_the_spaces(made, family):
    env = made[family]
    obs, info = env.reset(seed=0, options={"subset": "spatial", "index": 1})
    assert env.observation_space.contains(obs)
    assert obs["feedback"] == "" and info["is_success"] is False
    assert OBJECT_LIST.match(obs["object_list"])
    assert len(re.findall("object", obs["object_list"])) == len(env.task.objects_in_episode())
    ys = [int(v[1]) for v in re.findall(r"\[(\d+), (\d+), \d+\]", obs["object_list"])]
    assert ys == sorted(ys)  # EB numbers objects by ascending Y
    obs, reward, terminated, truncated, info = env.step(hold_action(env))
    assert env.observation_space.contains(obs)
    assert (reward, terminated, truncated) == (0.0, False, False)
    assert obs["feedback"] == "Last action executed successfully."
    json.dumps(info["snapshot"])  # JSON-safe


def test_action_space_is_eb_discrete_grid(made):
    space = made["pick"].action_space
    assert isinstance(space, gym.spaces.MultiDiscrete)
    assert space.nvec.tolist() == [100, 100, 100, 121, 121, 121, 2]


def test_check_env_passes(made):
    check_env(made["place"], skip_render_check=True)


def expert_for(env):
    expert = EBManipulationExpert()
    expert.bind(env)
    return expert


def test_expert_solves_pick_through_run_episode(made):
    episode = make_episode("pick", "spatial", 0)
    captions = []
    record = run_episode(
        made["pick"],
        expert_for(made["pick"]),
        episode,
        seed=0,
        on_step=lambda obs, text: captions.append(text[-1]),
    )
    json.dumps(record)
    assert record["success"] and record["extras"]["episode_id"] == "pick/spatial/00"
    assert (
        record["steps"] <= 15 and record["extras"]["num_invalid_actions"] == 0 and record["idle_steps"] == 0
    )
    assert record["extras"]["evaluation"]["inside_container"] and record["extras"]["total_reward"] == 1.0
    assert record["policy_calls"] == record["steps"] and record["policy_stats"]["expert_plans"] >= 2
    assert captions[0] == "start" and len(captions) == record["steps"] + 1


def test_expert_solves_wipe_and_wiped_cells_accumulate(made):
    env = made["wipe"]
    record = run_episode(env, expert_for(env), make_episode("wipe", "base", 0), seed=0)
    assert record["success"], record
    assert record["extras"]["evaluation"]["wiped_fraction"] >= 0.7
    target = env.task.episode["goal"]["target"]
    faded = env.scene.mj_model.geom_rgba[env.task.visual_geoms(target), 3]
    assert np.sum(faded < 1.0) == round(record["extras"]["evaluation"]["wiped_fraction"] * len(faded))


def test_stack_success_needs_contact_and_release(made):
    env = made["stack"]
    env.reset(seed=0, options={"subset": "base", "index": 2})
    goal = env.task.episode["goal"]
    bottom, _ = env.task.body_pose(goal["bottom"])
    assert not env.task.evaluate()["success"]
    env.scene.place_free_body(goal["top"], bottom + np.array([0.0, 0.0, 0.0405]), 0.0)
    _, reward, terminated, _, info = env.step(hold_action(env))
    assert terminated and reward == 1.0 and info["is_success"]
    assert info["evaluation"]["touching"] and info["evaluation"]["released"]


def test_place_success_is_inside_the_sorter_and_a_star_on_top_is_not(made):
    env = made["place"]
    env.reset(seed=0, options={"subset": "base", "index": 0})
    target = env.task.episode["goal"]["target"]
    sorter, _ = env.task.body_pose("sorter")
    env.scene.place_free_body(target, sorter + np.array([0.0, 0.045, SORTER_HEIGHT + 0.021]), 0.0)
    _, _, terminated, _, info = env.step(hold_action(env))
    assert not terminated and not info["evaluation"]["inside_sorter"]  # resting on the lid
    env.scene.place_free_body(target, sorter + np.array([0.0, 0.0, 0.03]), 0.0)
    _, reward, terminated, _, info = env.step(hold_action(env))
    assert terminated and reward == 1.0 and info["evaluation"]["inside_sorter"]


def test_failure_runs_out_of_steps_without_success(made):
    env = made["place"]
    env.reset(seed=0, options={"subset": "complex", "index": 1})
    for step in range(1, 16):
        _, reward, terminated, truncated, info = env.step(hold_action(env))
        assert not terminated and reward == 0.0 and not info["is_success"]
        assert truncated == (step == 15)
    with pytest.raises(RuntimeError, match="reset"):
        env.step(hold_action(env))


@pytest.mark.parametrize(
    ("action", "reason"),
    [
        ([99, 99, 99, 60, 60, 60, 1], "out of the arm's reach"),
        ([50, 50, 3, 0, 60, 90, 1], "below the table"),
        ([100, 50, 50, 0, 60, 90, 1], "X index 100 is outside 0..99"),
        ([50, 50, 30, 0, 60, 90, 2], "Gripper index 2 is outside 0..1"),
        ([50.5, 50, 30, 0, 60, 90, 1], "X index 50.5 is not an integer"),
    ],
)
def test_invalid_actions_cost_minus_one_and_leave_the_arm(made, action, reason):
    env = made["pick"]
    env.reset(seed=0, options={"subset": "base", "index": 0})
    before = env.scene.mj_data.qpos.copy()
    obs, reward, terminated, _, info = env.step(action)
    assert reward == -1.0 and not info["last_action_success"] and not terminated
    assert obs["feedback"].startswith("Last action is invalid. ") and reason in obs["feedback"]
    assert np.array_equal(env.scene.mj_data.qpos, before)


@pytest.mark.parametrize(
    ("action", "message"),
    [
        ([50, 50, np.nan, 0, 60, 90, 1], "NaN"),
        ([50, 50, 30, 0, 60, 90], "shape"),
        ("open the gripper", "7-D action"),
        (Plan(steps=[PlanStep([Primitive.DOLLY_IN], [2])]), "SpatialActionWrapper"),
    ],
)
def test_malformed_actions_raise_clear_errors(made, action, message):
    env = made["pick"]
    env.reset(seed=0, options={"subset": "base", "index": 0})
    with pytest.raises(ValueError, match=message):
        env.step(action)


def test_reached_pose_encodes_back_to_the_action(made):
    env = made["pick"]
    env.reset(seed=0, options={"subset": "base", "index": 0})
    action = np.array([45, 60, 30, 0, 60, 75, 1])
    _, _, _, _, info = env.step(action)
    assert info["last_action_success"]
    position, rotation = env.scene.grip_pose()
    target, _, _ = eb_manipulation_decode(action, **GRID)
    assert np.linalg.norm(position - target) < 0.012
    encoded = eb_manipulation_encode(position, rotation, False, **GRID)
    assert np.all(np.abs(encoded[:3] - action[:3]) <= 1) and encoded[6] == 1
    assert np.all(np.abs(encoded[3:6] - action[3:6]) <= 1)


def test_native_actions_follow_the_wrist_camera(made):
    env = made["pick"]
    env.reset(seed=0, options={"subset": "base", "index": 0})
    here = hold_action(env)
    [still] = env.native_actions(StepMotion(np.zeros(3), np.zeros(3)))
    assert np.array_equal(still, here)
    [closer] = env.native_actions(StepMotion(np.array([0.0, 0.0, 0.10]), np.zeros(3), gripper=1))
    forward = env.wrist_camera_frame()[:, 2]
    assert forward[2] < -0.9  # at home the wrist camera looks down at the table
    assert closer[2] - here[2] == pytest.approx(100 * 0.10 * forward[2], abs=1.5)
    assert closer[6] == 0  # SpatialTree gripper 1 (closed) is EB gripper 0


def test_same_seed_same_rollout_and_no_leak_between_episodes(made):
    episode = make_episode("stack", "base", 3)
    actions = [[45, 39, 20, 0, 60, 90, 0]]

    def rollout(env):
        obs, _ = env.reset(seed=0, options={"episode": episode})
        frames = [obs["front_rgb"]]
        for a in actions:
            obs, *_ = env.step(a)
            frames.append(obs["front_rgb"])
        return frames, env.scene.mj_data.qpos.copy(), env.snapshot()

    reused = made["stack"]
    reused.reset(seed=0, options={"subset": "visual", "index": 5})  # an unrelated episode first
    reused.step([40, 40, 30, 0, 60, 90, 0])
    fresh = EBManipulationEnv("stack", image_size=SIZE)
    try:
        a, b = rollout(fresh), rollout(reused)
    finally:
        fresh.close()
    assert all(np.array_equal(x, y) for x, y in zip(a[0], b[0]))
    assert np.array_equal(a[1], b[1]) and a[2] == b[2]
    with pytest.raises(RuntimeError, match="closed"):  # close() released the renderer
        fresh.cameras.rgb(fresh.scene.mj_data, "eb_front")


def test_front_image_boxes_come_from_segmentation(made):
    env = made["pick"]
    obs, _ = env.reset(seed=0, options={"subset": "base", "index": 0})
    seg = env.cameras.segmentation(env.scene.mj_data, "eb_front")
    geoms = {i + 1: env.task.visual_geoms(slot) for i, slot in enumerate(env._labels)}
    boxes = object_boxes(seg, geoms)
    assert set(boxes) == set(range(1, len(geoms) + 1))  # every object visible at the start
    plain = env.cameras.rgb(env.scene.mj_data, "eb_front")
    assert not np.array_equal(plain, obs["front_rgb"])
    x0, y0, x1, _ = boxes[1]
    top_edge = obs["front_rgb"][y0 - 1, x0 : x1 + 1]  # the box's top line, one pixel above the object
    assert np.any(np.all(top_edge == (255, 0, 0), axis=-1))


def test_object_boxes_and_drawing_on_a_hand_made_mask():
    seg = np.full((20, 20), -1)
    seg[3:6, 4:9] = 7
    seg[10:12, 10:11] = 8
    assert object_boxes(seg, {1: [7], 2: [8, 9], 3: [5]}) == {1: (4, 3, 8, 5), 2: (10, 10, 10, 11)}
    image = draw_boxes(np.zeros((20, 20, 3), np.uint8), {1: (4, 3, 8, 5)})
    assert image.shape == (20, 20, 3) and tuple(image[2, 6]) == (255, 0, 0)


def test_wipe_area_lengths_and_directions(made):
    env = made["wipe"]
    env.reset(seed=0, options={"subset": "base", "index": 1})
    goal = env.task.episode["goal"]
    lo, hi = env.task.bounds(goal["target"])
    extent = hi - lo
    long_axis = 1 if goal["direction"] == "horizontal" else 0  # horizontal in the image: along world y
    assert extent[long_axis] == pytest.approx(AREA_LENGTH - 0.002, abs=1e-3)
    assert extent[1 - long_axis] < 0.07


def test_suite_env_switches_family_by_episode_and_serves_the_expert():
    env = gym.make(envs.manipulation.registration.SUITE_ID, image_size=SIZE, families=["place"])
    try:
        with pytest.raises(RuntimeError, match="reset"):
            env.unwrapped.native_actions(StepMotion(np.zeros(3), np.zeros(3)))
        obs, info = env.reset(seed=0)  # no options: a place episode of the base subset
        assert env.unwrapped.family == "place" and info["episode"]["subset"] == "base"
        episode = make_episode("place", "spatial", 2)
        record = run_episode(env, expert_for(env), episode, seed=4)
        assert record["success"] and record["extras"]["family"] == "place"
        assert env.observation_space.contains(obs)
    finally:
        env.close()
