"""One LIBERO evaluation episode as a function, for the shared benchmark runner.

The protocol (OpenVLA's LIBERO evaluation): reset to fixed initial state ``init_state_index``, run
``num_steps_wait`` no-op settle steps, then let the policy act for at most ``max_steps`` steps; the
episode is a success as soon as LIBERO's goal check passes.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, cast

import gymnasium as gym

from benchmarks.core.episode import ActionStream, DecisionHook, StepHook, logging_decisions
from benchmarks.core.episode_record import EpisodeRecord, episode_record
from benchmarks.core.latency import Latency
from policies.base import EpisodeContext, Policy

if TYPE_CHECKING:
    from envs.libero.env import LiberoEnv


def run_episode(
    env: gym.Env,
    policy: Policy,
    *,
    init_state_index: int,
    max_steps: int,
    num_steps_wait: int,
    seed: int,
    replay_key: str | None = None,
    on_step: StepHook | None = None,
    decisions: list[dict[str, Any]] | None = None,
    latency: Latency | None = None,
    on_decision: DecisionHook | None = None,
    perturbation: dict[str, Any] | None = None,
) -> EpisodeRecord:
    """Run one episode of a LIBERO env; the policy must already be bound to ``env``.

    ``env`` must unwrap to :class:`envs.libero.env.LiberoEnv`. Policies return native actions or plans
    (run through the env's ``native_actions``); "no motion" holds still for one step. Returns the JSON-safe
    :class:`~benchmarks.core.episode_record.EpisodeRecord` (``steps``: native policy steps, settle steps
    excluded) with ``extras``: ``suite``, ``task_index``, ``instruction``, ``init_state_index``, ``seed``,
    ``max_steps``, ``num_steps_wait`` and ``truncated`` (the budget ran out before success).
    ``on_step(obs, caption_lines)`` sees every observation, the first after the settle steps included
    (videos); the policy's model calls are appended to ``decisions``; ``on_decision(obs)`` hears each decision
    (state probes). ``latency`` (default none: the protocol) lets the env run on while the policy thinks
    (:mod:`benchmarks.core.latency`) and adds the record's ``latency`` entry. ``perturbation`` (a spec dict)
    runs that robustness variant.
    """
    start = time.perf_counter()
    libero = cast("LiberoEnv", env.unwrapped)
    settings = {
        "init_state_index": init_state_index,
        "max_steps": max_steps,
        "num_steps_wait": num_steps_wait,
    }
    variant = {} if perturbation is None else {"perturbation": perturbation}
    observation, info = env.reset(seed=seed, options={**settings, **variant})
    policy.reset(_context(libero, seed, info, replay_key, init_state_index))
    stream = ActionStream(env, policy, latency, on_decision)
    terminated = truncated = False
    if on_step:
        on_step(observation, [libero.instruction, "start"])
    with logging_decisions(policy, decisions):
        while not (terminated or truncated or policy.stopped):
            observation, _, terminated, truncated, info = env.step(stream.next_action(observation))
            if on_step:
                on_step(observation, [libero.instruction, f"step {libero.elapsed_steps}"])
    extras = {
        "suite": libero.suite,
        "task_index": libero.task_index,
        "instruction": libero.instruction,
        **{k: int(v) for k, v in settings.items()},
        "seed": int(seed),
        "truncated": bool(truncated and not info["is_success"]),
    }
    return episode_record(
        success=info["is_success"],
        steps=libero.elapsed_steps,
        stream=stream,
        policy=policy,
        started=start,
        extras=extras,
    )


def _context(
    libero: LiberoEnv, seed: int, info: dict[str, Any], replay_key: str | None, state: int
) -> EpisodeContext:
    """What the policy is told at the start: the instruction (a paraphrase variant's wording), the seed,
    the reset info and the task (never a variant's spec)."""
    extras = {**_extras(libero), "replay_key": replay_key, "init_state_index": int(state)}
    return EpisodeContext(instruction=libero.instruction, seed=seed, info=info, extras=extras)


def _extras(libero: LiberoEnv) -> dict[str, Any]:
    return {"suite": libero.suite, "task_index": libero.task_index, "task_name": libero.task.name}
