"""The privileged shortest-path expert reaches the target on a sample of every subset."""

import numpy as np
import pytest

from benchmarks.embodied.navigation import run_episode
from envs.navigation.env import EBNavigationEnv
from envs.navigation.episodes import SUBSETS, make_episode
from policies.base import EpisodeContext
from policies.experts.navigation import ShortestPathExpert
from tests.nav_scenes import empty_room, episode


@pytest.fixture(scope="module")
def env():
    e = EBNavigationEnv(width=32, height=32)
    yield e
    e.close()


def test_expert_identity():
    assert ShortestPathExpert.privileged and ShortestPathExpert().describe()["privileged"]


@pytest.mark.parametrize("subset", SUBSETS)
def test_expert_succeeds_on_a_sample(env, subset):
    expert = ShortestPathExpert()
    expert.bind(env)
    for index in (0, 4):
        ep = make_episode(subset, index)
        record = run_episode(env, expert, ep, seed=index)
        assert record["success"], record
        assert record["steps"] == record["extras"]["shortest_path_length"]  # optimal
        assert (
            record["extras"]["num_invalid_actions"] == 0 and record["policy_stats"]["expert_stuck_steps"] == 0
        )


def test_expert_in_the_continuous_variant_replans_off_lattice():
    e = EBNavigationEnv(action_mode="continuous", width=32, height=32)
    try:
        expert = ShortestPathExpert()
        expert.bind(e)
        ep = episode(empty_room(), 0.55, 0.6, 90.0)  # facing +y; the ball is at (3, 2)
        obs, _ = e.reset(options={"episode": ep})
        expert.reset(EpisodeContext(obs["instruction"], 0))
        obs = e.step(expert.act(obs))[0]  # plans on the lattice through the start pose
        obs = e.step(np.array([0.1, 0, 0, 0, 0, 0], np.float32))[0]  # a 0.1 m sidestep leaves that lattice
        done, steps = False, 2
        while not done:
            obs, _, terminated, truncated, info = e.step(expert.act(obs))
            done, steps = terminated or truncated, steps + 1
        assert info["is_success"] and steps <= 12  # 10 moves from the sidestepped pose, as worked out by hand
        assert expert.episode_stats()["expert_replans"] == 2
    finally:
        e.close()


def test_expert_needs_bind():
    with pytest.raises(RuntimeError, match="bind"):
        ShortestPathExpert().act({})
