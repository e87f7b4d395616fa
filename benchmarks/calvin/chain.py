"""One CALVIN long-horizon chain: reset once, then up to five subtasks, stopping at the first failure.

A chain's record is an :class:`benchmarks.core.episode_record.EpisodeRecord` whose top-level fields total
its subtasks, with ``extras``: ``tasks`` (the chain's task names), ``num_completed`` (subtasks completed
in a row, CALVIN's score) and ``subtasks`` (one episode record per subtask run, each with ``extras``
``task`` and ``instruction``); the benchmark's worker adds ``initial_state``."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from benchmarks.core.episode import ActionStream, DecisionHook, StepHook, logging_decisions
from benchmarks.core.episode_record import (
    TIMING_STATS,
    EpisodeRecord,
    episode_record,
    read_episode,
    summed_stats,
)
from benchmarks.core.latency import Latency
from benchmarks.core.work import RESULT_TIMING
from policies.base import EpisodeContext, Policy

if TYPE_CHECKING:
    import gymnasium as gym

    from envs.calvin.env import PlayTableInterface

EP_LEN = 360  # CALVIN's step budget per subtask


def _reset_chain(
    env: gym.Env,
    initial_robot_obs: Sequence[float],
    initial_scene_obs: Sequence[float],
    seed: int,
    on_step: StepHook | None,
    instructions: Sequence[str],
    perturbation: Mapping[str, Any] | None = None,
) -> tuple[Any, dict[str, Any]]:
    """Reset the robot and scene to the chain's initial state (once per chain), as the robustness variant
    ``perturbation`` when one is given; the first observation."""
    options: dict[str, Any] = {
        "robot_obs": np.asarray(initial_robot_obs, float),
        "scene_obs": np.asarray(initial_scene_obs, float),
    }
    if perturbation is not None:
        options["perturbation"] = dict(perturbation)
    obs, info = env.reset(seed=seed, options=options)
    if on_step:
        on_step(obs, [f"subtask 1: {instructions[0]}" if instructions else "", "start"])
    return obs, info


def _subtask_context(
    task: str, instruction: str, index: int, seed: int, info: dict[str, Any], replay_key: str | None
) -> EpisodeContext:
    """What ``policy.reset`` gets for subtask ``index`` of a chain."""
    key = None if replay_key is None else f"{replay_key}/{index}"
    return EpisodeContext(
        instruction=instruction,
        seed=seed + index,
        info=info,
        extras={"task": task, "subtask_index": index, "replay_key": key},
    )


def run_chain(
    env: gym.Env,
    policy: Policy,
    initial_robot_obs: Sequence[float],
    initial_scene_obs: Sequence[float],
    tasks: Sequence[str],
    instructions: Sequence[str],
    ep_len: int = EP_LEN,
    seed: int = 0,
    *,
    replay_key: str | None = None,
    on_step: StepHook | None = None,
    decisions: list[dict[str, Any]] | None = None,
    latency: Latency | None = None,
    on_decision: DecisionHook | None = None,
    perturbation: Mapping[str, Any] | None = None,
) -> EpisodeRecord:
    """Run one chain as the CALVIN protocol does and return its JSON-safe record (see the module).

    The robot and scene are reset once (not between subtasks). Each subtask gets ``policy.reset`` with its
    instruction (task name in ``extras["task"]``) and at most ``ep_len`` env steps; it succeeds when the
    env's oracle (subtask-start snapshot vs current snapshot, ``info["is_success"]``) reports the task.
    The chain stops at the first failed subtask. Policies may return native actions or plans (run through
    the env's ``native_actions``); "no motion" holds still for one step. Privileged policies must already
    be bound to ``env``. ``on_step(obs, caption_lines)`` sees every observation, the reset's first (videos).
    The policy's model calls are appended to ``decisions``, each tagged with its subtask and task.
    ``latency`` (default none: the published protocol) lets the env run on while the policy thinks, see
    :mod:`benchmarks.core.latency`; each subtask then records its per-decision latencies. ``on_decision(obs)``
    hears each decision (state probes, :class:`~benchmarks.core.episode.ActionStream`); ``perturbation``
    (a robustness variant's spec dict) goes to the reset."""
    if len(tasks) != len(instructions):
        raise ValueError(f"run_chain: {len(tasks)} tasks but {len(instructions)} instructions")
    started = time.perf_counter()
    base = cast("PlayTableInterface", env.unwrapped)  # the built-in table or the official-env bridge
    obs, info = _reset_chain(
        env, initial_robot_obs, initial_scene_obs, seed, on_step, instructions, perturbation
    )
    subtasks: list[EpisodeRecord] = []
    for index, (task, instruction) in enumerate(zip(tasks, instructions)):
        base.begin_subtask(task)
        policy.reset(_subtask_context(task, instruction, index, seed, info, replay_key))
        caption, labels = _captioner(on_step, index, instruction), {"task": task, "instruction": instruction}
        with logging_decisions(policy, decisions, subtask=index, task=task):
            record, obs, info = _run_subtask(
                env, policy, obs, info, ep_len, caption, (latency, on_decision), labels
            )
        subtasks.append(record)
        if not record["success"]:
            break
    return chain_record(list(tasks), subtasks, round(time.perf_counter() - started, 3))


def chain_record(
    tasks: list[str], subtasks: list[EpisodeRecord], episode_s: float | None = None
) -> EpisodeRecord:
    """A chain's record from its subtasks' records: top-level fields totalled, CALVIN's own in ``extras``.

    With ``episode_s`` (the chain's seconds) the record's ``timing`` holds it, the subtasks' model latency
    summed, and each subtask's own timing (``subtasks``), taken out of the subtask records."""
    completed = sum(1 for s in subtasks if s["success"])
    sub_timing = [s.pop(RESULT_TIMING, {}) for s in subtasks]  # type: ignore[misc]
    record = EpisodeRecord(
        success=completed == len(tasks),
        steps=sum(s["steps"] for s in subtasks),
        policy_calls=sum(s["policy_calls"] for s in subtasks),
        idle_steps=sum(s["idle_steps"] for s in subtasks),
        policy_stats=summed_stats(s["policy_stats"] for s in subtasks),
        extras={"tasks": tasks, "num_completed": completed, "subtasks": subtasks},
    )
    if episode_s is not None:
        latency = {
            k: round(sum(t[k] for t in sub_timing if k in t), 3)
            for k in TIMING_STATS
            if any(k in t for t in sub_timing)
        }
        record[RESULT_TIMING] = {"episode_s": episode_s, **latency, "subtasks": sub_timing}  # type: ignore[literal-required]
    return record


def read_chain(raw: Mapping[str, Any]) -> EpisodeRecord:
    """A chain record of any version as the schema names it. One written before the schema
    (``{"tasks", "num_completed", "subtasks", ...}``, subtasks with ``time_s``) gets its totals from its
    subtasks and its other fields (``initial_state``) in ``extras``; old wall times are dropped."""
    if "extras" in raw:
        record = read_episode(raw)
        record["extras"] = {
            **record["extras"],
            "subtasks": [read_episode(s) for s in record["extras"]["subtasks"]],
        }
        return record
    subtasks = [read_episode(s) for s in raw["subtasks"]]
    record = chain_record(list(raw["tasks"]), subtasks)
    record["extras"].update(
        {k: v for k, v in raw.items() if k not in ("tasks", "num_completed", "subtasks", "video")}
    )
    if "video" in raw:
        record["video"] = raw["video"]
    return record


def _captioner(on_step: StepHook | None, index: int, instruction: str) -> Callable[[Any, int], None] | None:
    if on_step is None:
        return None
    return lambda obs, step: on_step(obs, [f"subtask {index + 1}: {instruction}", f"step {step}"])


def _run_subtask(
    env: gym.Env,
    policy: Policy,
    obs: dict[str, Any],
    info: dict,
    ep_len: int,
    show: Callable[[Any, int], None] | None,
    stream_options: tuple[Latency | None, DecisionHook | None],
    extras: dict[str, Any],
) -> tuple[EpisodeRecord, Any, dict]:
    start, steps, success = time.perf_counter(), 0, False
    stream = ActionStream(env, policy, *stream_options)
    while steps < ep_len and not success and not policy.stopped:
        obs, _, _, _, info = env.step(stream.next_action(obs))
        steps += 1
        success = bool(info.get("is_success", False))
        if show:
            show(obs, steps)
    return (
        episode_record(
            success=success, steps=steps, stream=stream, policy=policy, started=start, extras=extras
        ),
        obs,
        info,
    )
