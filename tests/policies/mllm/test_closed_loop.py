"""MLLM policies built through the registry, with tiny real models, on the real navigation env.

The tiny models have random weights, so success is not expected: these tests check the loop, the
accounting, the fallbacks and the cache with the same code a user runs against Qwen2.5-VL.
"""

import dataclasses
import json

import numpy as np
import pytest

from action_mapping import Plan
from policies.backends.cache import CachedBackend
from policies.base import EpisodeContext
from policies.mllm.config import MLLMPolicyConfig
from policies.mllm.embodied import EBAgentPolicy
from policies.mllm.spatial import SpatialPlanPolicy
from policies.registry import build_policy, policy_config, policy_config_class, registered_policies


@pytest.fixture(scope="module")
def nav_env():
    import gymnasium as gym

    import envs  # noqa: F401

    env = gym.make("SpatialArena/EBNavigation-v0", width=64, height=64)
    yield env
    env.close()


def run_episode(policy, env, steps, instruction=None, **extras):
    """The policy on the real navigation env; a Plan (the fallback "stay") leaves the world as it is."""
    obs, _ = env.reset(seed=0)
    policy.reset(
        EpisodeContext(
            instruction=obs["instruction"] if instruction is None else instruction, seed=0, extras=extras
        )
    )
    actions = []
    for _ in range(steps):
        action = policy.act(obs)
        actions.append(action)
        if not isinstance(action, Plan):
            obs, *_ = env.step(action)
    return actions, policy.episode_stats(), policy.episode_calls()


def test_registry_lists_and_validates():
    assert "mllm" in registered_policies()
    cls = policy_config_class("mllm")
    assert cls is MLLMPolicyConfig
    assert all(f.metadata.get("help") for f in dataclasses.fields(cls))  # every flag is documented
    with pytest.raises(TypeError, match=r"no option\(s\) \['modle'\]"):
        policy_config("mllm", modle="x")
    with pytest.raises(KeyError, match="unknown policy 'vlm'"):
        policy_config("vlm", model="x")
    http = policy_config("mllm", model="gpt-4o", api_base="http://127.0.0.1:9/v1", max_retries=1)
    assert (
        http.backend_options()["api_base"] == "http://127.0.0.1:9/v1"
        and "device" not in http.backend_options()
    )


def test_eb_navigation_loop_with_tiny_qwen2_5_vl(tiny_vlm, tmp_path, nav_env):
    config = policy_config(
        "mllm",
        model=str(tiny_vlm("qwen2_5_vl")),
        loop="eb",
        task="navigation",
        cache_path=str(tmp_path / "c.sqlite"),
        max_new_tokens=8,
        chat_history=True,
    )
    policy = build_policy("mllm", config)
    assert isinstance(policy, EBAgentPolicy) and isinstance(policy.backend, CachedBackend)
    actions, stats, calls = run_episode(policy, nav_env, steps=3)
    # Random weights write no JSON: every call is counted as a parse error and followed by a stay.
    assert all(isinstance(a, Plan) and a.format == "fallback" for a in actions)
    assert (stats["model_calls"], stats["parse_errors"], stats["fallbacks"], stats["cache_hits"]) == (
        3,
        3,
        3,
        0,
    )
    assert stats["prompt_tokens"] > 3 * 500 and 3 <= stats["completion_tokens"] <= 24
    assert all(c["errors"] and not c["usable"] for c in calls)
    _, again, again_calls = run_episode(policy, nav_env, steps=3)
    assert again["cache_hits"] == 3 and [c["text"] for c in again_calls] == [c["text"] for c in calls]
    assert {k: v for k, v in again.items() if k not in ("cache_hits", "model_latency_s")} == {
        k: v for k, v in stats.items() if k not in ("cache_hits", "model_latency_s")
    }
    json.dumps(policy.describe())  # the manifest entry is JSON-safe


def test_spatial_goal_image_loop_with_tiny_qwen3_vl(tiny_vlm, nav_env):
    policy = build_policy(
        "mllm",
        model=str(tiny_vlm("qwen3_vl")),
        loop="spatial",
        task="navigation",
        cache=False,
        max_new_tokens=8,
        fallback="stop",
    )
    assert isinstance(policy, SpatialPlanPolicy)
    goal = nav_env.reset(seed=5)[0]["rgb"]
    actions, stats, _ = run_episode(policy, nav_env, steps=4, instruction="", goal_image=goal)
    assert all(a.format == "fallback" for a in actions)
    assert (stats["model_calls"], stats["parse_errors"], stats["fallbacks"], stats["stopped"]) == (1, 1, 1, 1)
    assert stats["prompt_tokens"] > 2 * 16  # two 64x64 images at 16 tokens each, plus the prompt


def test_spatial_instruction_loop_on_calvin_style_observations(tiny_vlm):
    policy = build_policy(
        "mllm", model=str(tiny_vlm("qwen2_5_vl")), cache=False, max_new_tokens=6, image_keys=("rgb_static",)
    )
    rng = np.random.default_rng(3)
    obs = {
        "rgb_static": rng.integers(0, 256, (200, 200, 3), dtype=np.uint8),
        "rgb_gripper": rng.integers(0, 256, (84, 84, 3), dtype=np.uint8),
        "robot_obs": np.zeros(15, np.float32),
    }
    policy.reset(EpisodeContext(instruction="open the drawer", seed=0))
    for _ in range(2):
        assert isinstance(policy.act(obs), Plan)
    stats = policy.episode_stats()
    assert (stats["model_calls"], stats["fallbacks"]) == (2, 2)  # noop: asks again every step


def test_cpu_run_at_the_default_budget_gets_a_one_line_hint(tmp_path, capsys):
    """The default budget stays the protocols' 1,024 tokens; a local CPU run at it is told, once, how to smoke-test."""
    (tmp_path / "tiny").mkdir()
    (tmp_path / "tiny" / "config.json").write_text("{}")
    local = MLLMPolicyConfig(model=str(tmp_path / "tiny"))
    local.check_inputs()
    assert capsys.readouterr().err == ""  # printed once every check passed: by the preflight, not before it
    local.preflight()
    err = capsys.readouterr().err.strip()
    assert err == local.budget_hint() and "--max-new-tokens 16" in err and len(err.splitlines()) == 1
    for quiet in (
        dataclasses.replace(local, max_new_tokens=16),
        dataclasses.replace(local, device="cuda"),
        MLLMPolicyConfig(model=str(tmp_path / "missing")),  # left to the model check's one-line error
        MLLMPolicyConfig(model="answer-key"),
        MLLMPolicyConfig(model="m", api_base="http://127.0.0.1:9/v1"),
    ):
        quiet.check_inputs()
        assert quiet.budget_hint() is None and capsys.readouterr().err == ""
