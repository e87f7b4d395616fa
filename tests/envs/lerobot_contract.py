"""LeRobot's env-hub contract as its documentation and evaluation loop state it, checked on our envs.

LeRobot cannot be installed beside the pinned torch, so this restates what its ``make_env`` loader and
``lerobot_eval`` rollout require of a hub env, and checks one vector env against it:

- ``make_env(n_envs, use_async_envs)`` returns ``{suite: {task_id: gym.vector.VectorEnv}}``;
- ``env.call("_max_episode_steps")[0]`` is the rollout's step budget (a positive int);
- ``env.call("task_description")`` gives one string per sub-env (``env.call("task")`` the fallback);
- ``reset(seed=[...], options={...})`` accepts LeRobot's own reset option;
- every reset and step ``info`` holds ``is_success`` (one bool per sub-env), or ``final_info`` does;
- observations: ``pixels`` (H x W x C uint8, channel last, C < H and W; a dict of cameras maps to
  ``observation.images.<camera>``), ``agent_pos`` -> ``observation.state``, ``environment_state`` ->
  ``observation.environment_state``, float arrays with a batch dimension;
- actions: a batch of float vectors, ``(num_envs, action_dim)``;
- ``render()`` of a sub-env gives an H x W x 3 frame (``env.call("render")``, for videos).
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

# The reset option LeRobot's rollout passes to mark a new rollout (lerobot.envs.utils).
LEROBOT_NEW_ROLLOUT = "lerobot_new_rollout"
IMAGES, STATE, ENV_STATE = "observation.images", "observation.state", "observation.environment_state"


def check_hub_result(result: object) -> list[tuple[str, int, gym.vector.VectorEnv]]:
    """``{suite: {task_id: VectorEnv}}`` with str suites and int task ids; returns the triples."""
    assert isinstance(result, dict) and result, f"make_env must return a non-empty dict, got {type(result)}"
    found = []
    for suite, tasks in result.items():
        assert isinstance(suite, str) and isinstance(tasks, dict) and tasks, (suite, type(tasks))
        for task_id, env in tasks.items():
            assert isinstance(task_id, int) and not isinstance(task_id, bool), (suite, task_id)
            assert isinstance(env, gym.vector.VectorEnv), (suite, task_id, type(env))
            found.append((suite, task_id, env))
    return found


def policy_keys(observation: dict[str, Any], num_envs: int) -> dict[str, tuple[int, ...]]:
    """LeRobot's renaming of a batched observation (``preprocess_observation``): key -> shape."""
    out: dict[str, tuple[int, ...]] = {}
    pixels = observation.get("pixels")
    images = pixels if isinstance(pixels, dict) else ({"": pixels} if pixels is not None else {})
    for camera, image in images.items():
        assert isinstance(image, np.ndarray) and image.dtype == np.uint8, (camera, type(image))
        batch, height, width, channels = image.shape
        assert batch == num_envs and channels < height and channels < width, (camera, image.shape)
        out[f"{IMAGES}.{camera}" if camera else "observation.image"] = image.shape
    for key, name in (("agent_pos", STATE), ("environment_state", ENV_STATE)):
        if key in observation:
            value = np.asarray(observation[key])
            assert value.dtype.kind == "f" and value.ndim == 2 and value.shape[0] == num_envs, (key, value)
            assert np.all(np.isfinite(value)), (key, value)
            out[name] = value.shape
    return out


def successes(info: dict[str, Any], num_envs: int) -> list[bool]:
    """``is_success`` per sub-env, where LeRobot's rollout reads it (``final_info`` first)."""
    source = info.get("final_info", info)
    assert "is_success" in source, f"info has no is_success: {sorted(info)}"
    flags = np.asarray(source["is_success"])
    assert flags.shape == (num_envs,) and flags.dtype == np.bool_, flags
    return flags.tolist()


def check_vector_env(env: gym.vector.VectorEnv, steps: int = 3, seed: int = 0) -> dict[str, Any]:
    """Run one task's vector env as LeRobot's rollout does; returns what it saw (for the callers)."""
    n = env.num_envs
    obs, info = env.reset(seed=list(range(seed, seed + n)), options={LEROBOT_NEW_ROLLOUT: True})
    keys = policy_keys(obs, n)
    assert STATE in keys and any(k.startswith(IMAGES) for k in keys), keys
    seen: dict[str, Any] = {"keys": keys, "reset_success": successes(info, n)}
    budget = env.call("_max_episode_steps")[0]
    assert isinstance(budget, int) and budget > 0, budget
    descriptions = list(env.call("task_description"))
    assert len(descriptions) == n and all(isinstance(d, str) and d for d in descriptions), descriptions
    assert isinstance(env.single_action_space, gym.spaces.Box), env.single_action_space
    env.action_space.seed(seed)
    for _ in range(steps):
        action = env.action_space.sample().astype(np.float32)
        assert action.ndim == 2 and action.shape[0] == n, action.shape
        obs, reward, terminated, truncated, info = env.step(action)
        assert policy_keys(obs, n) == keys
        flags = np.asarray(terminated) | np.asarray(truncated)
        assert np.asarray(reward).shape == flags.shape == (n,) and flags.dtype == np.bool_
        successes(info, n)
    frames = env.call("render")
    assert len(frames) == n and all(np.asarray(f).ndim == 3 for f in frames), [np.shape(f) for f in frames]
    seen.update(budget=budget, descriptions=descriptions, last_obs=obs)
    return seen
