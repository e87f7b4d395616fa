"""Turning a policy's outputs into one native action per env step.

Policies return either native actions or :class:`Plan`s. A plan runs open loop, step by step (each plan
step expanded with the env state at its start, see :func:`envs.wrappers.expand_plan_step`); the policy
is asked again when it is used up. Counting native steps keeps every protocol's step budget exact. A
:class:`Plan` becomes an :class:`ExecutablePlan` the moment the policy returns it, so a plan that moves
without units is refused there (``TypeError``), never half-way through an episode.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from action_mapping import ExecutablePlan, Plan
from benchmarks.core.latency import Latency, latency_stats
from envs.wrappers import HoldsStill
from policies.base import EpisodeContext, Policy

if TYPE_CHECKING:
    import gymnasium as gym

    from envs.manipulation.env import EBManipulationEnv
    from envs.navigation.env import EBNavigationEnv


class ActionStream:
    """One native action at a time from ``policy``.

    When the policy asks for no motion (an empty or STOP-only plan, an MLLM's no-op fallback) the step is
    still spent: the env's ``noop_action()`` (hold still) is returned where the env has one, else ``None``
    for the episode logic to count an idle step. ``idle_steps`` counts both.

    With a ``latency`` (:mod:`benchmarks.core.latency`; ``None`` = the published frozen-world protocol) each
    decision is followed by the control steps its inference took, spent before the decision's actions:
    the policy's ``pending_actions()`` (``continue``) and then holding still. A decision is a call that
    raised the policy's ``model_calls`` stat (a VLA pops queued chunk actions without one); a policy
    without that stat decides on every call. ``latencies_ms`` and ``latency_steps`` record them.

    ``on_decision(observation)`` (state probes, :mod:`benchmarks.attribution`) hears every decision, after
    the policy answered and before any of its actions ran, so the env still holds the state the policy saw;
    it must only read the env.
    """

    def __init__(
        self,
        env: gym.Env,
        policy: Policy,
        latency: Latency | None = None,
        on_decision: DecisionHook | None = None,
    ) -> None:
        self.env, self.policy, self.latency, self.on_decision = env, policy, latency, on_decision
        self._native: deque[Any] = deque()
        self._steps: deque[tuple[ExecutablePlan, int]] = deque()
        self._waiting: deque[Any] = deque()  # actions (or _HOLD) run while the last decision was computed
        self.policy_calls = 0
        self.idle_steps = 0
        self.latencies_ms: list[float] = []
        self.latency_steps = 0  # env steps spent while a decision was computed (continued + held)
        self.held_steps = 0

    def reset(self) -> None:
        self._native.clear()
        self._steps.clear()
        self._waiting.clear()

    def next_action(self, observation: Mapping[str, Any]) -> Any | None:
        action = self._next(observation)
        if action is None:
            self.idle_steps += 1
        if action is None or action is _HOLD:
            unwrapped = self.env.unwrapped
            return unwrapped.noop_action() if isinstance(unwrapped, HoldsStill) else None
        return action

    def latency_record(self) -> dict[str, Any]:
        """What a record keeps with a latency set: its setting, the distribution and the steps it cost."""
        if self.latency is None:
            return {}
        return {
            "latency": {
                **self.latency.describe(),
                **latency_stats(self.latencies_ms),
                "latencies_ms": [round(v, 3) for v in self.latencies_ms],
                "steps": self.latency_steps,
                "held_steps": self.held_steps,
            }
        }

    def _next(self, observation: Mapping[str, Any]) -> Any | None:
        from envs.wrappers import expand_plan_step  # gymnasium is an env-side dependency

        if self._waiting:  # the inference's steps come before its own actions
            return self._spend_waiting()
        while not self._native:
            if self._steps:
                plan, index = self._steps.popleft()
                self._native.extend(expand_plan_step(self.env, plan, index))
                if not self._native and not self._steps:
                    return None  # the plan ended with a STOP/empty step
                continue
            action = self._decide(observation)
            if isinstance(action, Plan):
                action = action.executable()
            if isinstance(action, ExecutablePlan):
                if not action.steps:
                    return None
                self._steps.extend((action, i) for i in range(len(action.steps)))
            else:
                self._native.append(action)
            if self._waiting:
                return self._spend_waiting()
        return self._native.popleft()

    def _heard(self, observation: Mapping[str, Any], calls_before: float | None) -> None:
        """Tell ``on_decision`` of a call that was a decision (one that raised ``model_calls``, or any call of
        a policy without that stat)."""
        if self.on_decision is None:
            return
        if calls_before is None or _model_calls(self.policy) != calls_before:
            self.on_decision(observation)

    def _spend_waiting(self) -> Any:
        """One env step of an inference in progress (counted when spent, not when charged)."""
        item = self._waiting.popleft()
        self.latency_steps += 1
        self.held_steps += item is _HOLD
        return item

    def _decide(self, observation: Mapping[str, Any]) -> Any:
        """One ``policy.act``; with a latency, queue the steps its inference took in ``_waiting``."""
        if self.latency is None:
            before = _model_calls(self.policy) if self.on_decision else None
            action = self.policy.act(observation)
            self.policy_calls += 1
            self._heard(observation, before)
            return action
        leftover = self.policy.pending_actions() if self.latency.mode == "continue" else []
        before = _model_calls(self.policy)
        began = time.perf_counter()
        action = self.policy.act(observation)
        elapsed_ms = 1000.0 * (time.perf_counter() - began)
        self.policy_calls += 1
        after = _model_calls(self.policy)
        if before is not None and after == before:
            return action  # served from the policy's queue: no inference happened
        self._heard(observation, before)
        ms = elapsed_ms if self.latency.fixed_ms is None else self.latency.fixed_ms
        steps = self.latency.steps(ms)
        self.latencies_ms.append(ms)
        continued = leftover[:steps]
        self._waiting.extend(continued)
        self._waiting.extend([_HOLD] * (steps - len(continued)))
        return action


_HOLD = object()  # a latency step without a pending action: the env holds still

#: ``on_step(observation, caption_lines)``: sees every observation of an episode (videos).
StepHook = Callable[[dict[str, Any], list[str]], None]
#: ``on_decision(observation)``: hears each decision with the observation the policy decided on (probes).
DecisionHook = Callable[[Mapping[str, Any]], None]


def _model_calls(policy: Policy) -> float | None:
    """The policy's ``model_calls`` stat (``None`` when it reports none: every call is then a decision)."""
    value = policy.episode_stats().get("model_calls")
    return None if value is None else float(value)


@dataclass
class AgentLoopResult:
    """What an EB-style step loop leaves for the family's record."""

    steps: int
    invalid_actions: int
    total_reward: float
    info: dict[str, Any]  # the last step's info (the reset's when no step ran)
    stream: ActionStream


def episode_context(
    obs: Mapping[str, Any], info: dict[str, Any], episode: Mapping[str, Any], seed: int, keys: tuple[str, ...]
) -> EpisodeContext:
    """What ``policy.reset`` gets for an episode given as a dict: the instruction of its first observation,
    the episode's ``keys`` (missing ones as None) as extras, and its ``episode_id`` as the replay key."""
    extras = {key: episode.get(key) for key in keys}
    return EpisodeContext(
        instruction=obs["instruction"],
        seed=seed,
        info=info,
        extras={**extras, "replay_key": episode.get("episode_id")},
    )


def run_agent_loop(
    env: gym.Env,
    policy: Policy,
    obs: dict[str, Any],
    info: dict[str, Any],
    *,
    on_step: StepHook | None = None,
    decisions: list[dict[str, Any]] | None = None,
    latency: Latency | None = None,
    on_decision: DecisionHook | None = None,
) -> AgentLoopResult:
    """EmbodiedBench's agent loop, after ``env.reset`` and ``policy.reset``: act until the env ends the
    episode, ``env.unwrapped.max_steps`` steps are spent, or the policy has ``stopped``.

    EB has no no-op action, so a request for no motion spends one step of the budget without moving, and
    so does each step a ``latency`` charges for a decision while nothing of an earlier plan is pending.
    Invalid actions are counted from ``info["last_action_success"]``; ``on_step(obs, captions)`` sees every
    step, idle ones included (for videos); the policy's model calls are appended to ``decisions``;
    ``on_decision`` hears each decision (:class:`ActionStream`)."""
    stream = ActionStream(env, policy, latency, on_decision=on_decision)
    max_steps = cast("EBNavigationEnv | EBManipulationEnv", env.unwrapped).max_steps  # EB's step budget
    steps = invalid = 0
    total_reward, done = 0.0, False
    if on_step:
        on_step(obs, [obs["instruction"], "start"])
    with logging_decisions(policy, decisions):
        while not done and steps < max_steps and not policy.stopped:
            action = stream.next_action(obs)
            steps += 1
            if action is None:  # the step is spent standing still; the video still gets its frame
                caption = f"step {steps}: no motion (idle)"
            else:
                obs, reward, terminated, truncated, info = env.step(action)
                invalid += int(not info["last_action_success"])
                total_reward += float(reward)
                done = terminated or truncated
                caption = f"step {steps}: {info['feedback']}"
            if on_step:
                on_step(obs, [obs["instruction"], caption])
    return AgentLoopResult(steps, invalid, total_reward, info, stream)


def policy_decisions(policy: Policy, **tags: Any) -> list[dict[str, Any]]:
    """The policy's model calls of the current episode (:meth:`Policy.episode_calls`), each with ``tags``
    (e.g. the CALVIN subtask) in front."""
    return [{**tags, **call} for call in policy.episode_calls()]


@contextmanager
def logging_decisions(policy: Policy, sink: list[dict[str, Any]] | None, **tags: Any) -> Iterator[None]:
    """Append the policy's decisions to ``sink`` when the block ends, also when it raised (the model's
    answers before a crash are what explains it). Enter only after ``policy.reset``, so that a failed reset
    never logs the previous episode's calls."""
    try:
        yield
    finally:
        if sink is not None:
            sink.extend(policy_decisions(policy, **tags))
