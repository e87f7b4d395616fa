"""LIBERO Gymnasium envs on the real simulator. Scenes take seconds to build: one env per suite, reused."""

import json
import warnings

import gymnasium as gym
import mujoco
import numpy as np
import pytest

pytest.importorskip("libero", reason="the libero extra is not installed")

from gymnasium.utils.env_checker import check_env

from action_mapping import StepMotion, StepSizes
from benchmarks.libero.episode import run_episode
from envs.libero import make_libero_env, protocol
from envs.libero.rendering import is_fast
from policies.base import EpisodeContext, Policy

SIZE = 64  # small frames keep the tests fast; the protocol renders 256
TASK_PER_SUITE = {"libero_spatial": 0, "libero_object": 0, "libero_goal": 7, "libero_10": 0, "libero_90": 0}
NOOP = protocol.settle_action()


@pytest.fixture(scope="module")
def suite_envs():
    made = {}
    yield made
    for env in made.values():
        env.close()


@pytest.fixture
def env_of(suite_envs):
    """The shared env of a suite's test task; libero_goal's goes through gym.make (registration)."""

    def get(suite):
        if suite not in suite_envs:
            if suite == "libero_goal":
                env_id = protocol.env_id(suite, TASK_PER_SUITE[suite])
                suite_envs[suite] = gym.make(env_id, image_size=SIZE, render_mode="rgb_array").unwrapped
            else:
                suite_envs[suite] = make_libero_env(suite, TASK_PER_SUITE[suite], image_size=SIZE)
        return suite_envs[suite]

    return get


def rollout(env, seed, init_state_index, actions):
    obs, _ = env.reset(seed=seed, options={"init_state_index": init_state_index})
    frames = [obs]
    for action in actions:
        frames.append(env.step(action)[0])
    return frames


def assert_same_observations(a, b):
    for obs_a, obs_b in zip(a, b, strict=True):
        assert obs_a.keys() == obs_b.keys()
        for key in obs_a:
            np.testing.assert_array_equal(obs_a[key], obs_b[key], err_msg=key)


# ------------------------------------------------------------------------------------------ every suite


@pytest.mark.parametrize("suite", protocol.SUITES)
def test_every_suite_creates_resets_and_steps(env_of, suite):
    env = env_of(suite)
    obs, info = env.reset(seed=0, options={"init_state_index": 1})
    assert env.observation_space.contains(obs)
    assert obs["agentview_image"].shape == (SIZE, SIZE, 3) and obs["agentview_image"].dtype == np.uint8
    assert obs["instruction"] == env.task.instruction and obs["instruction"]
    assert info == {"is_success": False, "init_state_index": 1, "elapsed_steps": 0}
    for _ in range(3):
        obs, reward, terminated, truncated, info = env.step(env.action_space.sample())
    assert env.observation_space.contains(obs)
    assert (reward, terminated, truncated, info["elapsed_steps"]) == (0.0, False, False, 3)
    assert obs["agentview_image"].std() > 5  # a rendered scene, not a blank frame
    np.testing.assert_allclose(obs["state"][:3], obs["eef_pos"])
    np.testing.assert_allclose(obs["state"][6:], obs["gripper_qpos"])
    settings = json.loads(json.dumps(env.describe()))
    assert (settings["suite"], settings["image_size"], settings["fast_render"]) == (suite, SIZE, True)
    assert settings["max_steps"] == protocol.MAX_STEPS[suite]


def test_check_env_is_clean(env_of):
    env = env_of("libero_goal")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(env, skip_render_check=True, skip_close_check=True)
    assert [str(w.message) for w in caught] == []


def test_render_returns_the_last_agentview_image(env_of):
    env = env_of("libero_goal")
    obs, _ = env.reset(seed=0, options={"init_state_index": 0})
    np.testing.assert_array_equal(env.render(), obs["agentview_image"])


# ------------------------------------------------------------------------------------------ determinism


def test_reset_fully_determines_the_episode(env_of):
    env = env_of("libero_goal")
    actions = [np.random.default_rng(5).uniform(-1, 1, 7).astype(np.float32) for _ in range(3)]
    first = rollout(env, seed=3, init_state_index=5, actions=actions)
    fresh = make_libero_env("libero_goal", TASK_PER_SUITE["libero_goal"], image_size=SIZE)
    try:  # a second env in the process: each must render with its own GL context
        assert_same_observations(first, rollout(fresh, seed=3, init_state_index=5, actions=actions))
    finally:
        fresh.close()
    fresh.close()  # closing twice is allowed
    rollout(env, seed=4, init_state_index=9, actions=actions[::-1])  # another episode in between
    assert_same_observations(first, rollout(env, seed=3, init_state_index=5, actions=actions))


def test_init_states_are_libero_fixed_states(env_of):
    env = env_of("libero_spatial")
    qpos_size = env.raw_env.sim.model.nq
    for index in (0, 7):
        env.reset(seed=0, options={"init_state_index": index, "num_steps_wait": 0})
        np.testing.assert_allclose(env.raw_env.sim.data.qpos, env.init_states[index][1 : 1 + qpos_size])
    assert not np.allclose(env.init_states[0], env.init_states[7])


# ---------------------------------------------------------------------------------------------- success


def test_turning_the_stove_on_succeeds(env_of):
    env = env_of("libero_goal")
    assert env.instruction == "turn on the stove"
    env.reset(seed=0, options={"init_state_index": 0})
    assert env.evaluate() == {"success": False}
    sim = env.raw_env.sim
    button = env.raw_env.env.get_object("flat_stove_1").joints[0]
    sim.data.set_joint_qpos(button, 1.0)  # LIBERO's stove is on for a button joint in [0.5, 2.1]
    sim.forward()
    _, reward, terminated, truncated, info = env.step(NOOP)
    assert (reward, terminated, truncated, info["is_success"]) == (1.0, True, False, True)
    with pytest.raises(RuntimeError, match="episode has ended"):
        env.step(NOOP)


def test_soup_dropped_into_the_basket_succeeds(env_of):
    env = env_of("libero_object")
    assert env.instruction == "pick up the alphabet soup and place it in the basket"
    env.reset(seed=0, options={"init_state_index": 0})
    raw, sim = env.raw_env.env, env.raw_env.sim
    basket_region = sim.data.site_xpos[sim.model.site_name2id("basket_1_contain_region")].copy()
    soup_joint = raw.get_object("alphabet_soup_1").joints[-1]
    pose = sim.data.get_joint_qpos(soup_joint).copy()
    pose[:3] = basket_region + np.array([0.0, 0.0, 0.05])  # 5 cm above the basket floor, upright as it stood
    sim.data.set_joint_qpos(soup_joint, pose)
    sim.forward()
    for _ in range(20):
        _, reward, terminated, _, info = env.step(NOOP)
        if terminated:
            break
    assert terminated and reward == 1.0 and info["is_success"]
    np.testing.assert_allclose(sim.data.get_joint_qpos(soup_joint)[:2], basket_region[:2], atol=0.02)


# ---------------------------------------------------------------------------------- episode boundaries


def test_truncates_at_max_steps(env_of):
    env = env_of("libero_10")
    env.reset(seed=0, options={"init_state_index": 0, "max_steps": 3, "num_steps_wait": 0})
    ends = [env.step(NOOP)[3] for _ in range(3)]
    assert ends == [False, False, True]
    with pytest.raises(RuntimeError, match="call reset"):
        env.step(NOOP)
    assert env.max_steps == protocol.MAX_STEPS["libero_10"] == 520  # options last one episode


def test_bad_actions_and_options_are_rejected(env_of):
    env = env_of("libero_10")
    env.reset(seed=0, options={"init_state_index": 0, "num_steps_wait": 0})
    with pytest.raises(ValueError, match="NaN or inf"):
        env.step(np.array([0, 0, np.nan, 0, 0, 0, -1.0]))
    with pytest.raises(ValueError, match="shape"):
        env.step(np.zeros(6))
    with pytest.raises(ValueError, match="SpatialActionWrapper"):
        env.step(object())
    with pytest.raises(ValueError, match="unknown reset options"):
        env.reset(options={"init_state": 0})
    with pytest.raises(ValueError, match=r"init_state_index must be in 0\.\.49"):
        env.reset(options={"init_state_index": 50})


# ------------------------------------------------------------------------------------ rendering, frames


def test_hard_reset_rebuilds_a_fast_renderer_and_the_same_robot_state(env_of):
    env = env_of("libero_90")
    options = {"init_state_index": 0, "num_steps_wait": 2}
    soft, _ = env.reset(seed=0, options=options)
    before = env.raw_env.sim._render_context_offscreen
    assert is_fast(before)
    hard, _ = env.reset(seed=0, options=options | {"hard_reset": True})
    after = env.raw_env.sim._render_context_offscreen
    assert after is not before and is_fast(after)
    assert env.raw_env.env.hard_reset is False  # the hard reset was for that one reset only
    # Fixture jitter may differ: each LIBERO hard reset registers its articulated-object samplers once
    # more, which shifts the random draws. The robot and the init state are the same.
    for key in ("joint_pos", "eef_pos", "eef_quat", "gripper_qpos"):
        np.testing.assert_array_equal(soft[key], hard[key])


def _pixel_of(sim, camera, point, size):
    """Hand-worked pinhole projection: (column, row from the top) of a world point in an upright image."""
    model, data = sim.model._model, sim.data._data
    cam = model.camera(camera).id
    local = data.cam_xmat[cam].reshape(3, 3).T @ (point - data.cam_xpos[cam])  # x right, y up, z backwards
    focal = size / (2 * np.tan(np.radians(model.cam_fovy[cam]) / 2))
    return int(size / 2 + focal * local[0] / -local[2]), int(size / 2 - focal * local[1] / -local[2])


def test_images_are_right_side_up_and_not_mirrored(env_of):
    env = env_of("libero_object")
    env.reset(seed=0, options={"init_state_index": 0})
    sim = env.raw_env.sim
    model = sim.model._model
    env._make_render_context_current()
    segmentation = env._orient(sim.render(SIZE, SIZE, camera_name="agentview", segmentation=True))
    for body in ("basket_1_main", "cream_cheese_1_main", "alphabet_soup_1_main"):
        column, row = _pixel_of(sim, "agentview", sim.data._data.xpos[model.body(body).id], SIZE)
        kind, geom = segmentation[row, column]
        assert kind == mujoco.mjtObj.mjOBJ_GEOM and model.body(model.geom_bodyid[geom]).name == body


# ---------------------------------------------------------------------------------------- spatial actions


def test_native_actions_move_along_the_end_effector_axis(env_of):
    env = env_of("libero_spatial")
    obs, _ = env.reset(seed=0, options={"init_state_index": 0})
    sim = env.raw_env.sim
    grip_site = sim.model.site_name2id("gripper0_right_grip_site")
    approach = np.asarray(sim.data.site_xmat[grip_site]).reshape(3, 3)[:, 2]  # end-effector +z, in the world
    actions = env.native_actions(StepMotion(np.array([0.0, 0.0, 0.08]), np.zeros(3), gripper=None))
    assert len(actions) == 2  # 0.08 m at 0.05 m per action
    np.testing.assert_allclose(np.linalg.norm(actions[0][:3]), 0.8, atol=1e-6)
    assert all(a[6] == -1.0 and a.dtype == np.float32 for a in actions)  # gripper stays open
    start = obs["eef_pos"]
    for action in actions:
        obs = env.step(action)[0]
    moved = obs["eef_pos"] - start  # OSC only starts towards each 4 cm target within one 50 ms step
    assert np.linalg.norm(moved) > 0.005 and moved @ approach / np.linalg.norm(moved) > 0.95


# ------------------------------------------------------------------------------------------ run_episode


class _RandomPolicy(Policy):
    name = "random"

    def reset(self, context: EpisodeContext) -> None:
        self.rng = np.random.default_rng(context.seed)
        self.calls = 0

    def act(self, observation):
        self.calls += 1
        return self.rng.uniform(-1, 1, 7).astype(np.float32)

    def episode_stats(self):
        return {"calls": self.calls}


class _StoveSwitchingPolicy(Policy):
    """Privileged test policy: switches the stove on through the simulator, then waits."""

    name = "stove_switch"
    privileged = True

    def bind(self, env):
        self.env = env.unwrapped

    def reset(self, context: EpisodeContext) -> None:
        assert context.instruction == "turn on the stove"

    def act(self, observation):
        button = self.env.raw_env.env.get_object("flat_stove_1").joints[0]
        self.env.raw_env.sim.data.set_joint_qpos(button, 1.0)
        return NOOP


def test_run_episode_records_a_truncated_random_episode(env_of):
    env = env_of("libero_goal")
    kwargs = {"init_state_index": 2, "max_steps": 4, "num_steps_wait": 1, "seed": 11}
    record = run_episode(env, _RandomPolicy(), **kwargs)
    assert json.loads(json.dumps(record)) == record
    expected = {"success": False, "steps": 4, "policy_calls": 4, "policy_stats": {"calls": 4.0}}
    assert {k: record[k] for k in expected} == expected
    extras = record["extras"]
    assert extras["truncated"] and extras["suite"] == "libero_goal" and extras["task_index"] == 7
    assert extras["init_state_index"] == 2
    again = run_episode(env, _RandomPolicy(), **kwargs)
    # timing travels apart from the result (the runner moves it)
    assert set(record["timing"]) == {"episode_s"}
    assert {k: v for k, v in again.items() if k != "timing"} == {
        k: v for k, v in record.items() if k != "timing"
    }


def test_run_episode_stops_at_success(env_of):
    env = env_of("libero_goal")
    policy = _StoveSwitchingPolicy()
    policy.bind(env)
    record = run_episode(env, policy, init_state_index=0, max_steps=300, num_steps_wait=10, seed=0)
    assert (record["success"], record["extras"]["truncated"], record["steps"], record["policy_calls"]) == (
        True,
        False,
        1,
        1,
    )


def test_spatial_action_wrapper_moves_the_end_effector(env_of):
    """A SpatialTree plan through the generic wrapper: dolly in along the gripper's approach axis."""
    from envs.wrappers import SpatialActionWrapper

    env = env_of("libero_goal")
    obs, _ = env.reset(seed=0, options={"init_state_index": 0, "num_steps_wait": 0})
    start = obs["eef_pos"].copy()
    approach = env.end_effector_rotation()[:, 2]  # the gripper frame's +Z in the base frame
    wrapped = SpatialActionWrapper(env, StepSizes(0.01, 0.05))
    obs, _, _, _, info = wrapped.step('{"step_1": {"actions": ["W"], "step_nums": [6]}}')
    assert info["native_steps"] == 2 and info["plan_errors"] == []  # 6 cm = two OSC steps of at most 5 cm
    moved = obs["eef_pos"] - start
    # OSC_POSE deltas re-target from the current pose every step, so the hand lags the command: two 3 cm
    # steps move it about 1.5 cm, along the commanded axis.
    assert 0.005 < moved @ approach < 0.06
    assert np.linalg.norm(moved - (moved @ approach) * approach) < 0.2 * (moved @ approach)


def test_a_parseable_spatial_plan_runs_in_the_envs_units(env_of):
    """Regression (issue 16): a parseable SpatialTree plan died with "no step sizes". The policy now takes
    the env's units."""
    from policies.backends.scripted import ScriptedBackend
    from policies.mllm.spatial import SpatialPlanPolicy

    env = env_of("libero_goal")
    answer = '{"step_1": {"actions": ["space"], "step_nums": [4], "gripper": 0}}'
    backend = ScriptedBackend(lambda messages: answer)
    policy = SpatialPlanPolicy(backend)
    policy.bind(env)
    assert policy.step_sizes == env.plan_step_sizes == StepSizes(0.01, 0.05)
    result = run_episode(env, policy, init_state_index=0, max_steps=2, num_steps_wait=2, seed=0)
    assert result["steps"] == 2 and result["idle_steps"] == 0 and result["policy_stats"]["parse_errors"] == 0
    assert "0.01 m per step" in backend.calls[0][0]["content"]


@pytest.mark.slow  # a whole pick-and-place: about a minute on the shared 2-core machine
def test_oracle_pick_and_place_with_injected_errors(env_of):
    """The spatial loop with the answer-key model (the scripted expert's next action as primitives) and
    injected errors: it still succeeds, and every unusable injected answer is one parse error."""
    from policies.registry import build_policy

    env = env_of("libero_object")  # task 0: pick up the alphabet soup and place it in the basket
    policy = build_policy("mllm", model="answer-key", answer_key_error_rate=0.2, answer_key_error_seed=0)
    policy.bind(env)
    result = run_episode(
        env,
        policy,
        init_state_index=0,
        max_steps=protocol.MAX_STEPS["libero_object"],
        num_steps_wait=protocol.NUM_STEPS_WAIT,
        seed=0,
    )
    stats = result["policy_stats"]
    assert result["success"] and stats["injected_unusable"] >= 1
    assert stats["parse_errors"] == stats["fallbacks"] == stats["injected_unusable"]


def test_without_cameras_the_env_steps_physics_only():
    env = make_libero_env("libero_goal", 7, image_size=32, cameras=False)
    try:
        obs, _ = env.reset(seed=0, options={"init_state_index": 0})
        obs, *_ = env.step(np.zeros(7))
        assert env.observation_space.contains(obs) and env.describe()["cameras"] is False
        assert not obs["agentview_image"].any() and not obs["eye_in_hand_image"].any()  # black, not rendered
        assert env._render_context() is None  # no renderer was built
    finally:
        env.close()
