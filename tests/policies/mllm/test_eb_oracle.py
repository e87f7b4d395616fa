"""The EB agent loop driven by the oracle model, next to the blind baselines, on EB navigation and manipulation.

The matrix: {navigation, manipulation} x {oracle, oracle with injected errors}. The oracle goes through the
real prompt, parser, feedback, history, env and success check; it must beat every blind baseline on the
same episodes, and the parse errors the policy records must equal the injected "unusable" answers exactly.
"""

from collections.abc import Sequence

import gymnasium as gym
import numpy as np
import pytest

import envs  # noqa: F401  (registers the ids)
from benchmarks.core.blind import blind_baselines
from benchmarks.embodied import subset_table
from benchmarks.embodied.manipulation import run_episode as run_manip_episode
from benchmarks.embodied.navigation import run_episode as run_nav_episode
from envs.manipulation.episodes import make_episode as make_manip_episode
from envs.navigation.episodes import make_episode_set
from policies.backends.answer_key import AnswerKeyBackend
from policies.backends.base import Backend, Generation, Message
from policies.backends.injection import expected_effect
from policies.baselines import ConstantPolicy, RandomPolicy
from policies.mllm.answer_key_eb import actions_left, asked_fields, eb_truth
from policies.mllm.eb_prompts import system_text, turn_text
from policies.mllm.embodied import EBAgentPolicy

SIZE = 32  # success does not depend on the image; small images keep rendering cheap


class Recording(Backend):
    """Passes calls to the oracle and keeps the kind of error injected into each answer."""

    def __init__(self, inner: AnswerKeyBackend) -> None:
        self.inner, self.model_id, self.config = inner, inner.model_id, inner.config
        self.kinds: list[str | None] = []

    def bind(self, env) -> None:
        self.inner.bind(env)

    def start_episode(self, context) -> None:
        self.inner.start_episode(context)

    def generate(self, messages: Sequence[Message]) -> Generation:
        generation = self.inner.generate(messages)
        self.kinds.append(generation.injected_error)
        return generation


def oracle_policy(task: str, env, error_rate: float, error_seed: int) -> tuple[EBAgentPolicy, Recording]:
    backend = Recording(AnswerKeyBackend(truth=eb_truth(task), error_rate=error_rate, error_seed=error_seed))
    image_key = "rgb" if task == "navigation" else "front_rgb"
    policy = EBAgentPolicy(backend, task=task, image_keys=(image_key,))
    policy.bind(env)
    return policy, backend


def check_error_accounting(records: list[dict], backend: Recording, error_rate: float) -> None:
    """Recorded parse errors are exactly the injected unusable answers; every call was counted."""
    stats = [r["policy_stats"] for r in records]
    unusable = sum(expected_effect(k) == "unusable" for k in backend.kinds)
    assert sum(s["parse_errors"] for s in stats) == unusable
    assert sum(s["injected_errors"] for s in stats) == sum(k is not None for k in backend.kinds)
    assert sum(s["model_calls"] for s in stats) == len(backend.kinds)
    # The summary's "avg. planner calls" is the model calls made, not the env actions (policy_calls).
    table = subset_table(records)
    assert sum(row["avg_planner_calls"] * row["episodes"] for row in table.values()) == pytest.approx(
        len(backend.kinds)
    )
    if error_rate == 0:
        assert unusable == 0 and all(s["parse_repairs"] == 0 for s in stats)
    else:
        assert unusable >= 1  # the case must exercise the accounting


# ------------------------------------------------------------------------------------------ navigation


@pytest.fixture(scope="module")
def nav_env():
    env = gym.make("SpatialArena/EBNavigation-v0", width=SIZE, height=SIZE)
    yield env
    env.close()


@pytest.fixture(scope="module")
def nav_episodes():
    """Three episodes of the default base set whose shortest path leaves room for a few wasted steps."""
    return [e for e in make_episode_set("base", 9) if len(e["shortest_path"]) <= 14][:3]


@pytest.fixture(scope="module")
def nav_blind(nav_env, nav_episodes):
    """Success rate of random and of every constant action on the test episodes."""
    rates = {}
    for name, policy in [
        ("random", RandomPolicy()),
        *((f"constant-{a}", ConstantPolicy(a)) for a in range(8)),
    ]:
        policy.bind(nav_env)
        rates[name] = np.mean(
            [run_nav_episode(nav_env, policy, e, seed=i)["success"] for i, e in enumerate(nav_episodes)]
        )
    return rates


@pytest.mark.parametrize("error_rate", [0.0, 0.4])
def test_navigation_oracle_beats_blind_baselines_and_errors_are_counted(
    nav_env, nav_episodes, nav_blind, error_rate
):
    assert len(nav_episodes) == 3
    policy, backend = oracle_policy("navigation", nav_env, error_rate, error_seed=5)
    records = [run_nav_episode(nav_env, policy, e, seed=i) for i, e in enumerate(nav_episodes)]
    success = np.mean([r["success"] for r in records])
    assert success > max(nav_blind.values())
    if error_rate == 0:  # a perfect model takes the shortest path in one model call
        assert success == 1.0
        assert [r["steps"] for r in records] == [len(e["shortest_path"]) for e in nav_episodes]
        assert all(r["policy_stats"]["model_calls"] == 1 for r in records)
    check_error_accounting(records, backend, error_rate)


def test_constant_actions_never_solve_the_revised_navigation_sets(nav_blind):
    """The sampling rule: no start from which one repeated action reaches the target."""
    assert all(rate == 0.0 for name, rate in nav_blind.items() if name.startswith("constant-"))


# ---------------------------------------------------------------------------------------- manipulation


@pytest.fixture(scope="module")
def manip_env():
    env = gym.make("SpatialArena/EBManipulation-pick-v0", image_size=SIZE)
    yield env
    env.close()


@pytest.fixture(scope="module")
def manip_episode():
    return make_manip_episode("pick", "base", 0)


@pytest.fixture(scope="module")
def manip_random(manip_episode):
    """The random baseline runs on EB manipulation (a MultiDiscrete space), here with a 3-action budget."""
    env = gym.make("SpatialArena/EBManipulation-pick-v0", image_size=SIZE, max_steps=3)
    policy = RandomPolicy()
    policy.bind(env)
    record = run_manip_episode(env, policy, manip_episode, seed=0)
    env.close()
    return record


def test_manipulation_random_baseline_runs(manip_random):
    assert manip_random["steps"] == manip_random["policy_calls"] == 3 and not manip_random["success"]


def manip_blind_rates() -> dict[str, float]:
    """Random and constant actions on EB manipulation as measured by bench/blind_baselines.py (committed)."""
    entry = blind_baselines("manip")
    assert entry is not None, (
        "bench/results/blind_baselines.json has no manip entry: run bench/blind_baselines.py"
    )
    return {k: v["success_rate"] for k, v in entry["policies"].items() if v.get("blind") and "error" not in v}


@pytest.mark.parametrize("error_rate", [0.0, 0.5])
def test_manipulation_oracle_beats_blind_baselines_and_errors_are_counted(
    manip_env, manip_episode, manip_random, error_rate
):
    # Draws depend on the conversation, images included; with seed 0 the first answer here is truncated.
    policy, backend = oracle_policy("manipulation", manip_env, error_rate, error_seed=0)
    record = run_manip_episode(manip_env, policy, manip_episode, seed=0)
    blind = manip_blind_rates()
    assert {"random", "constant-50_50_50_0_60_90_1"} <= set(blind)
    assert record["success"] and max(blind.values()) < 100.0
    assert record["extras"]["num_invalid_actions"] == 0
    check_error_accounting([record], backend, error_rate)


# ------------------------------------------------------------------------------------- answer format


def test_oracle_answer_reads_the_prompt_format_and_budget():
    system = system_text("navigation", 20, 3)
    assert asked_fields(system) == (
        "visual_state_description",
        "reasoning_and_reflection",
        "language_plan",
        "executable_plan",
    )
    history = [f"Step {i + 1}, action id 0, MoveAhead, env feedback: ok" for i in range(7)]
    assert actions_left(turn_text(system, "go to the sofa", [])) == 20
    assert actions_left(turn_text(system, "go to the sofa", history)) == 13
    assert actions_left("no budget stated") is None
