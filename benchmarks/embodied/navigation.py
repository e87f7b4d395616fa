"""One EB-Navigation episode as a pure-ish function, for the shared benchmark runner and the bench scripts."""

from __future__ import annotations

import time
from typing import Any

import gymnasium as gym

from benchmarks.core.episode import DecisionHook, StepHook, episode_context, run_agent_loop
from benchmarks.core.episode_record import EpisodeRecord, episode_record
from benchmarks.core.latency import Latency
from policies.base import Policy


def run_episode(
    env: gym.Env,
    policy: Policy,
    episode: dict[str, Any],
    *,
    seed: int = 0,
    on_step: StepHook | None = None,
    decisions: list[dict[str, Any]] | None = None,
    on_decision: DecisionHook | None = None,
    perturbation: dict[str, Any] | None = None,
    latency: Latency | None = None,
) -> EpisodeRecord:
    """Reset ``env`` to ``episode``, let ``policy`` act until success or the step budget; a JSON-safe record.

    Native actions go to ``env.step`` one per step; a policy's ``Plan`` runs through the env's
    ``native_actions`` (see ``benchmarks.core.episode.ActionStream``). A request for no motion (a STOP-only
    plan, an MLLM's no-op fallback) spends one step of the budget without moving; a policy that has
    ``stopped`` ends the episode. The record (:class:`~benchmarks.core.episode_record.EpisodeRecord`) has
    EmbodiedBench's per-episode numbers (task success as ``success``, steps as ``steps``) and ``extras``:
    ``episode_id``, ``subset``, ``num_invalid_actions``, ``final_distance``, ``final_visibility`` (of the
    target) and ``shortest_path_length``. ``on_step(obs, caption)`` sees every observation; the policy's model
    calls are appended to ``decisions``; ``on_decision(obs)`` hears each decision (state probes).
    ``perturbation`` (a spec dict) runs that robustness variant; the policy gets only what the env shows it;
    ``latency`` (:mod:`benchmarks.core.latency`) adds the record's ``latency`` entry.
    """
    start = time.perf_counter()
    variant = {} if perturbation is None else {"perturbation": perturbation}
    obs, info = env.reset(seed=seed, options={"episode": episode, **variant})
    policy.reset(episode_context(obs, info, episode, seed, ("episode_id", "subset")))
    loop = run_agent_loop(
        env, policy, obs, info, on_step=on_step, decisions=decisions, on_decision=on_decision, latency=latency
    )
    info = loop.info
    extras = {
        "episode_id": episode.get("episode_id"),
        "subset": episode.get("subset"),
        "num_invalid_actions": loop.invalid_actions,
        "final_distance": round(float(info["distance"]), 4),
        "final_visibility": int(info["visibility"]),
        "shortest_path_length": len(episode.get("shortest_path", [])),
    }
    return episode_record(
        success=info["is_success"],
        steps=loop.steps,
        stream=loop.stream,
        policy=policy,
        started=start,
        extras=extras,
    )
