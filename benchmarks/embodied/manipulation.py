"""One EB-Manipulation episode as a pure-ish function of (env, policy, episode, seed) -> JSON-safe record.

The benchmark runner calls :func:`run_episode` once per work unit, with an env and a policy it built (and
bound) once per worker. Native actions go to ``env.step`` one per step; a policy's ``Plan`` runs through
the env's ``native_actions`` (``benchmarks.core.episode.ActionStream``). The record
(:class:`~benchmarks.core.episode_record.EpisodeRecord`) keeps EB's per-episode numbers (task success,
env steps, planner calls, the policy's own counters such as planner output errors) and, in ``extras``,
``episode_id``, ``family``, ``subset``, ``eb_task``, ``num_invalid_actions``, ``total_reward``,
``final_feedback`` and the final ``evaluation``.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from benchmarks.core.episode import DecisionHook, StepHook, episode_context, run_agent_loop
from benchmarks.core.episode_record import EpisodeRecord, episode_record
from benchmarks.core.jsonsafe import json_safe
from benchmarks.core.latency import Latency
from policies.base import Policy

if TYPE_CHECKING:
    import gymnasium as gym


def run_episode(
    env: gym.Env,
    policy: Policy,
    episode: dict[str, Any],
    seed: int = 0,
    *,
    on_step: StepHook | None = None,
    decisions: list[dict[str, Any]] | None = None,
    perturbation: dict[str, Any] | None = None,
    on_decision: DecisionHook | None = None,
    latency: Latency | None = None,
) -> EpisodeRecord:
    """Reset ``env`` to ``episode``, let ``policy`` act until success or EB's 15 steps; a JSON-safe record.

    A request for no motion (a STOP-only plan) spends one step of the budget without moving; a policy that
    has ``stopped`` ends the episode. ``on_step(obs, captions)`` sees every observation (for videos);
    the policy's model calls are appended to ``decisions``; ``on_decision(obs)`` hears each decision (state
    probes). ``latency`` (default none: EB's protocol) spends the steps each decision's inference took
    before its actions (:mod:`benchmarks.core.latency`) and adds the record's ``latency`` entry.
    ``perturbation`` (a spec dict) runs that robustness variant of the episode; the policy still gets only
    what the env shows it.
    """
    start = time.perf_counter()
    variant = {} if perturbation is None else {"perturbation": perturbation}
    obs, info = env.reset(seed=seed, options={"episode": episode, **variant})
    policy.reset(episode_context(obs, info, episode, seed, ("episode_id", "family", "subset")))
    loop = run_agent_loop(
        env, policy, obs, info, on_step=on_step, decisions=decisions, on_decision=on_decision, latency=latency
    )
    info = loop.info
    extras = {
        "episode_id": episode.get("episode_id"),
        "family": episode.get("family"),
        "subset": episode.get("subset"),
        "eb_task": episode.get("eb_task"),
        "num_invalid_actions": loop.invalid_actions,
        "total_reward": loop.total_reward,
        "final_feedback": info["feedback"],
        "evaluation": json_safe(info["evaluation"]),
    }
    return episode_record(
        success=info["is_success"],
        steps=loop.steps,
        stream=loop.stream,
        policy=policy,
        started=start,
        extras=extras,
    )
