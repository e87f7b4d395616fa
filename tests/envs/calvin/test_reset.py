"""The built-in play-table's reset reuses its PyBullet world: fast, and bit for bit a fresh world's episode."""

from __future__ import annotations

import statistics
import time

import numpy as np
import pytest

from benchmarks.calvin import evaluation_chains
from benchmarks.calvin.chain import run_chain
from envs.calvin.env import PlayTableEnv
from envs.calvin.sequences import initial_env_state
from policies.experts.calvin import ScriptedExpert

pytest.importorskip("pybullet")


def expert_observations(env: PlayTableEnv, chain: int, subtasks: int) -> tuple[list[np.ndarray], list]:
    """Every observation (robot_obs + scene_obs) of the expert on the first ``subtasks`` of ``chain``,
    and the (task, success, steps) of each subtask."""
    initial_state, tasks = evaluation_chains(chain + 1)[chain]
    robot_obs, scene_obs = initial_env_state(initial_state)
    seen: list[np.ndarray] = []
    policy = ScriptedExpert()
    policy.bind(env)
    record = run_chain(
        env,
        policy,
        robot_obs,
        scene_obs,
        list(tasks[:subtasks]),
        list(tasks[:subtasks]),
        on_step=lambda obs, _: seen.append(np.concatenate([obs["robot_obs"], obs["scene_obs"]])),
    )
    return seen, [(s["extras"]["task"], s["success"], s["steps"]) for s in record["extras"]["subtasks"]]


def assert_same_episode(a: tuple[list[np.ndarray], list], b: tuple[list[np.ndarray], list]) -> None:
    assert a[1] == b[1]
    assert len(a[0]) == len(b[0])
    for x, y in zip(*(episode[0] for episode in (a, b))):
        assert x.tobytes() == y.tobytes()


def test_an_episode_after_others_is_bit_identical_to_a_fresh_worlds():
    """Chain 0's grasp-and-rotate and slider subtasks, in a fresh env and after chain 3's first subtasks
    (other grasps and contacts) in a reused one; then once more after rebuilding that env's world."""
    fresh = PlayTableEnv(cameras=())
    reference = expert_observations(fresh, 0, 2)
    fresh.close()
    assert [success for _, success, _ in reference[1]] == [True, True]
    used = PlayTableEnv(cameras=())
    try:
        expert_observations(used, 3, 2)
        assert_same_episode(reference, expert_observations(used, 0, 2))
        used.sim.rebuild()
        assert_same_episode(reference, expert_observations(used, 0, 2))
    finally:
        used.close()


def test_dropping_contacts_keeps_the_loaders_collision_filters():
    """In a fresh world there is nothing to forget: re-creating the broadphase proxies with the filters
    reset passes must change nothing (a wrong group or mask would drop or add contacts)."""
    plain, refreshed = PlayTableEnv(cameras=()), PlayTableEnv(cameras=())
    try:
        plain.sim._forget_contacts = lambda: None  # the first reset of a fresh world, as a rebuild did it
        a, b = expert_observations(plain, 0, 1), expert_observations(refreshed, 0, 1)
        assert_same_episode(a, b)
        contacts = [env.sim.p.getContactPoints() for env in (plain, refreshed)]
        assert contacts[0] and contacts[0] == contacts[1]
    finally:
        plain.close()
        refreshed.close()


def test_reset_takes_under_five_milliseconds_without_cameras():
    env = PlayTableEnv(cameras=())
    starts = [initial_env_state(state) for state, _ in evaluation_chains(5)]
    times = []
    for i in range(50):
        robot_obs, scene_obs = starts[i % len(starts)]
        t = time.perf_counter()
        env.reset(options={"robot_obs": robot_obs, "scene_obs": scene_obs})
        times.append(time.perf_counter() - t)
    env.close()
    assert statistics.median(times) < 0.005


def test_a_movable_joint_that_no_reset_places_is_refused():
    env = PlayTableEnv(cameras=())
    try:
        env.sim.scene.parts.pop("switch")  # as if the table URDF had a movable joint the scene does not know
        with pytest.raises(ValueError, match=r"movable joint '[^']*switch[^']*' is not one the reset places"):
            env.sim._check_reset_covers_joints()
    finally:
        env.close()


# EGL on CPU: ~20 s
@pytest.mark.parametrize("renderer", ["tiny", pytest.param("egl", marks=pytest.mark.slow)])
def test_images_after_another_episode_match_a_fresh_envs(renderer):
    """Lights, blocks and arm are drawn where the reset put them, not where the last episode left them.
    The fresh env's first image is not the reference: PyBullet's EGL plugin draws a client's first frame
    differently from every later one (mean 3.4/255 here, with the world rebuilt at each reset too)."""
    (state0, _), (state3, _) = evaluation_chains(4)[0], evaluation_chains(4)[3]
    try:
        fresh, used = (PlayTableEnv(cameras=("static", "gripper"), renderer=renderer) for _ in range(2))
    except RuntimeError as err:
        pytest.skip(f"no EGL here: {err}")
    try:
        robot_obs, scene_obs = initial_env_state(state3)
        used.reset(options={"robot_obs": robot_obs, "scene_obs": scene_obs})
        for _ in range(10):
            used.step(np.array([0.5, -0.5, -0.5, 0, 0, 0.3, -1], dtype=np.float32))
        robot_obs, scene_obs = initial_env_state(state0)
        assert initial_env_state(state3)[1][4:6].tolist() != scene_obs[4:6].tolist()  # the lights differ
        fresh.reset(options={"robot_obs": robot_obs, "scene_obs": scene_obs})
        obs = [
            env.reset(options={"robot_obs": robot_obs, "scene_obs": scene_obs})[0] for env in (fresh, used)
        ]
        for key in ("rgb_static", "rgb_gripper"):
            assert obs[0][key].std() > 10 and np.array_equal(obs[0][key], obs[1][key])
    finally:
        fresh.close()
        used.close()
