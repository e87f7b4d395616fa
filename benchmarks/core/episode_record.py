"""The one episode record of every closed-loop family (CALVIN, LIBERO, EB-Navigation, EB-Manipulation).

A closed-loop unit's ``result`` (the ``result`` of its line in ``records.jsonl``) is an
:class:`EpisodeRecord`. The fields every family has are at the top, under one name each; what only one
family has is in ``extras``. A CALVIN chain is an episode record too: its top-level fields total its
subtasks, and ``extras["subtasks"]`` holds one episode record per subtask (see
:mod:`benchmarks.calvin.chain`).

Writers build records with :func:`episode_record`; readers go through :func:`read_episode`, which also
reads records written before this schema (their field names are the :data:`READ_ALIASES`), so that an
old run folder still resumes and summarises.

Timing is not part of the result: :func:`episode_record` puts the episode's seconds (``episode_s``) and the
policy's model latency (``model_latency_s``, taken out of its stats) under ``timing``, which the runner
moves to the record's ``timing`` (:data:`benchmarks.core.work.RESULT_TIMING`), next to the unit's
``wall_s`` and ``worker``. So ``result`` is identical from run to run for the same seeds.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypedDict

from benchmarks.core.work import RECORD_OK, RESULT_TIMING

if TYPE_CHECKING:
    from benchmarks.core.episode import ActionStream
    from policies.base import Policy


class _OptionalFields(TypedDict, total=False):
    latency: dict[str, Any]
    video: str
    timing: dict[str, Any]


class EpisodeRecord(_OptionalFields):
    """One episode (one ``policy.reset`` to the episode's end) as every closed-loop family records it.

    Fields, each always present unless marked optional:

    - ``success`` (bool): the env's own success check passed before the episode ended (CALVIN: the
      subtask's oracle, ``info["is_success"]``; LIBERO: the goal check; EB: ``info["is_success"]``). A CALVIN
      chain succeeds when every one of its subtasks did.
    - ``steps`` (int): env steps the episode spent under the policy, idle and latency steps included,
      settle steps (LIBERO's ``num_steps_wait``) excluded. A chain: the sum over its subtasks.
    - ``policy_calls`` (int): ``policy.act`` calls (each call that returned an action or a plan). A chain:
      the sum.
    - ``idle_steps`` (int): steps on which the policy asked for no motion (an empty or STOP-only plan, an
      MLLM's no-op fallback); the step is spent holding still. A chain: the sum.
    - ``policy_stats`` (dict[str, float]): the policy's ``episode_stats()`` at the episode's end (model
      calls, parse errors, fallbacks, ...), less its timing (:data:`TIMING_STATS`). A chain: each counter
      summed over its subtasks.
    - ``extras`` (dict): the family's own fields, documented with the family's writer:
      CALVIN subtask ``task``, ``instruction``; CALVIN chain ``tasks``, ``num_completed``, ``subtasks``,
      ``initial_state``; LIBERO ``suite``, ``task_index``, ``instruction``, ``init_state_index``, ``seed``,
      ``max_steps``, ``num_steps_wait``, ``truncated``; EB-Navigation ``episode_id``, ``subset``,
      ``num_invalid_actions``, ``final_distance``, ``final_visibility``, ``shortest_path_length``;
      EB-Manipulation ``episode_id``, ``family``, ``subset``, ``eb_task``, ``num_invalid_actions``,
      ``total_reward``, ``final_feedback``, ``evaluation``.
    - ``latency`` (dict, optional): only when the run set ``--latency``: the setting, the per-decision
      latencies and the steps they cost (:meth:`ActionStream.latency_record`); on a CALVIN chain it is on
      each subtask.
    - ``video`` (str, optional): the episode's MP4, relative to the run folder, when one was written.
    - ``timing`` (dict): only until the runner moves it to the record's ``timing``: ``episode_s``
      (wall-clock seconds of the episode, reset included), ``model_latency_s`` when the policy reports it;
      a chain's adds ``subtasks`` (each subtask's). It differs from run to run; no metric uses it.
    """

    success: bool
    steps: int
    policy_calls: int
    idle_steps: int
    policy_stats: dict[str, float]
    extras: dict[str, Any]


#: The top-level fields of an :class:`EpisodeRecord`, required ones first.
REQUIRED_FIELDS = ("success", "steps", "policy_calls", "idle_steps", "policy_stats", "extras")
OPTIONAL_FIELDS = ("latency", "video")
#: ``episode_stats()`` counters that are timings: they go to ``timing``, not to ``policy_stats``.
TIMING_STATS = ("model_latency_s",)
#: Wall-clock fields results held before timing moved out of them (``wall_time_s``; CALVIN's ``time_s``,
#: EB's ``elapsed_s`` before that): dropped when an old record is read.
OLD_TIMING_FIELDS = ("wall_time_s", "time_s", "elapsed_s")

#: Names the families wrote before this schema, read as the field they stand for: EB's ``task_success``,
#: ``num_steps`` and ``num_idle_steps``, LIBERO's ``decisions``.
READ_ALIASES: dict[str, tuple[str, ...]] = {
    "success": ("task_success",),
    "steps": ("num_steps",),
    "policy_calls": ("decisions",),
    "idle_steps": ("num_idle_steps",),
}
_CANONICAL = {old: new for new, olds in READ_ALIASES.items() for old in olds}


def episode_record(
    *, success: bool, steps: int, stream: ActionStream, policy: Policy, started: float, extras: dict[str, Any]
) -> EpisodeRecord:
    """The record of an episode that began at ``started`` (``time.perf_counter()``) and has just ended:
    its counts from ``stream``, the policy's ``episode_stats()``, and the family's ``extras``; its seconds
    and model latency under ``timing``."""
    stats = {k: float(v) for k, v in policy.episode_stats().items()}
    timing = {
        "episode_s": round(time.perf_counter() - started, 3),
        **{k: round(stats.pop(k), 3) for k in TIMING_STATS if k in stats},
    }
    record = EpisodeRecord(
        success=bool(success),
        steps=int(steps),
        policy_calls=stream.policy_calls,
        idle_steps=stream.idle_steps,
        policy_stats=stats,
        extras=extras,
    )
    latency = stream.latency_record().get("latency")
    if latency is not None:
        record["latency"] = latency
    record[RESULT_TIMING] = timing  # type: ignore[literal-required]
    return record


def read_episode(raw: Mapping[str, Any]) -> EpisodeRecord:
    """An episode record as this schema names its fields, from a record of any version.

    A record written before the schema has its old names read through :data:`READ_ALIASES`, and every field
    the schema does not name moved to ``extras``; the wall times older records held (:data:`OLD_TIMING_FIELDS`)
    are dropped. A mapping that lacks a required field is a ``ValueError`` naming what is missing."""
    if "extras" in raw:
        record = {k: v for k, v in raw.items() if k not in OLD_TIMING_FIELDS}
    else:
        record, extras = {}, {}
        for key, value in raw.items():
            name = _CANONICAL.get(key, key)
            if name in OLD_TIMING_FIELDS:
                continue
            if name in REQUIRED_FIELDS or name in OPTIONAL_FIELDS:
                record[name] = value
            else:
                extras[key] = value
        record["extras"] = extras
    missing = [name for name in REQUIRED_FIELDS if name not in record]
    if missing:
        raise ValueError(f"not an episode record: no {', '.join(missing)} (fields: {', '.join(sorted(raw))})")
    return record  # type: ignore[return-value]


def summed_stats(stats: Iterable[Mapping[str, float]]) -> dict[str, float]:
    """Each ``policy_stats`` counter summed over several episodes (a CALVIN chain's subtasks)."""
    total: dict[str, float] = {}
    for one in stats:
        for key, value in one.items():
            total[key] = total.get(key, 0.0) + float(value)
    return total


def ok_results(
    records: Sequence[Mapping[str, Any]], read: Callable[[Mapping[str, Any]], EpisodeRecord] = read_episode
) -> list[EpisodeRecord]:
    """The results of the completed (``ok``) records, in order, each read through ``read``."""
    return [read(r["result"]) for r in records if r["status"] == RECORD_OK]
