"""Conformance tests over the env registry: every SpatialArena family must pass these.

The default run checks the first registered id of each family (creating some scenes takes seconds);
``-m slow`` checks every id.
"""

from __future__ import annotations

import importlib.util
import json
import math
from collections import defaultdict

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import envs

ALL_IDS = envs.registered_ids()


def _family(env_id: str) -> str:
    return env_id.split("/")[1].split("-")[0]


_BY_FAMILY: dict[str, list[str]] = defaultdict(list)
for _id in ALL_IDS:
    _BY_FAMILY[_family(_id)].append(_id)
FIRST_OF_EACH = [ids[0] for ids in _BY_FAMILY.values()]
# The official CALVIN bridge needs a user's calvin_env checkout (not on any package registry).
_NO_CALVIN_ENV = pytest.mark.skipif(
    importlib.util.find_spec("calvin_env") is None,
    reason="the official CALVIN env needs a calvin_env checkout installed",
)


def _marks(env_id: str) -> list:
    official = gym.spec(env_id).entry_point == "envs.calvin.official:OfficialPlayTableEnv"
    return [pytest.mark.slow, *([_NO_CALVIN_ENV] if official else [])]


CHECKED = [pytest.param(i, id=i) for i in FIRST_OF_EACH] + [
    pytest.param(i, id=i, marks=_marks(i)) for i in ALL_IDS if i not in FIRST_OF_EACH
]


def test_registry_is_not_empty():
    if not ALL_IDS:
        pytest.skip("no env family is registered in this checkout yet")
    assert all(i.startswith("SpatialArena/") for i in ALL_IDS)


def _rollout(env_id: str, seed: int, steps: int = 5, *, warm_up_seed: int | None = None) -> list:
    """Observations, rewards and flags of a seeded random rollout (after another episode, if asked)."""
    env = gym.make(env_id)
    try:
        seeds = [warm_up_seed, seed] if warm_up_seed is not None else [seed]
        for s in seeds:
            env.action_space.seed(s)
            obs, _ = env.reset(seed=s)
            trace = [_digest(obs)]
            for _ in range(steps):
                obs, reward, terminated, truncated, _ = env.step(env.action_space.sample())
                trace.append((_digest(obs), float(reward), terminated, truncated))
                if terminated or truncated:
                    break
        return trace
    finally:
        env.close()


def _digest(obs) -> object:
    if isinstance(obs, dict):
        return tuple((k, _digest(v)) for k, v in sorted(obs.items()))
    if isinstance(obs, np.ndarray):
        return obs.tobytes()
    return obs


@pytest.mark.parametrize("env_id", CHECKED)
def test_check_env(env_id):
    env = gym.make(env_id)
    try:
        check_env(env.unwrapped, skip_render_check=True)
    finally:
        env.close()


@pytest.mark.parametrize("env_id", CHECKED)
def test_same_seed_same_rollout(env_id):
    assert _rollout(env_id, seed=7) == _rollout(env_id, seed=7)


@pytest.mark.parametrize("env_id", CHECKED)
def test_reset_fully_determines_the_episode(env_id):
    # Results must not depend on which episodes a worker ran before (workers reuse their env).
    assert _rollout(env_id, seed=7, warm_up_seed=3) == _rollout(env_id, seed=7)


@pytest.mark.parametrize("env_id", CHECKED)
def test_nan_actions_are_rejected(env_id):
    env = gym.make(env_id)
    try:
        env.reset(seed=0)
        if not isinstance(env.action_space, gym.spaces.Box):
            pytest.skip("discrete action space: NaN cannot be expressed")
        bad = np.full(env.action_space.shape, math.nan, dtype=env.action_space.dtype)
        with pytest.raises(ValueError, match=r"(?i)nan|finite"):
            env.step(bad)
    finally:
        env.close()


@pytest.mark.parametrize("env_id", CHECKED)
def test_info_is_json_safe_and_reports_success(env_id):
    env = gym.make(env_id)
    try:
        _, info = env.reset(seed=0)
        env.action_space.seed(0)
        _, _, _, _, info = env.step(env.action_space.sample())
        assert isinstance(info["is_success"], (bool, np.bool_))
        if "snapshot" in info:
            json.dumps(info["snapshot"])
    finally:
        env.close()
