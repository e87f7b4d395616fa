"""Small run folders written with the project's own writers (manifest, RunDir, records), for the tests of
``spatial-arena compare`` and ``power``: no simulator runs."""

from __future__ import annotations

from pathlib import Path

from benchmarks.calvin.chain import chain_record
from benchmarks.core.episode_record import EpisodeRecord
from benchmarks.core.manifest import build_manifest
from benchmarks.core.rundir import RunDir
from benchmarks.core.work import WorkUnit, error_record, ok_record

TASKS = ["open_drawer", "turn_on_led", "move_slider_left", "lift_red_block_table", "push_into_drawer"]


def _episode(success: bool, **extras: object) -> EpisodeRecord:
    return EpisodeRecord(
        success=success, steps=10, policy_calls=10, idle_steps=0, policy_stats={}, extras=dict(extras)
    )


def _chain(completed: int) -> EpisodeRecord:
    subtasks = [
        _episode(i < completed, task=task, instruction=task)
        for i, task in enumerate(TASKS[: min(completed + 1, 5)])
    ]
    return chain_record(list(TASKS), subtasks)


def write_calvin_run(
    folder: Path, completed: list[int | None], policy: str = "vla", **config: object
) -> Path:
    """A CALVIN run folder whose chain i completed ``completed[i]`` subtasks (``None``: the chain errored)."""
    settings = {"policy": policy, "num_sequences": len(completed), "ep_len": 360, "seed": 0, **config}
    manifest = build_manifest("calvin", settings, {"policy": {"name": policy, "label": policy}})
    run = RunDir(folder)
    run.prepare(manifest, resume=False, runtime_keys=set())
    for i, done in enumerate(completed):
        unit = WorkUnit(i, f"chain-{i:04d}", seed=i)
        if done is None:
            run.append_record(error_record(unit, "RuntimeError: boom", attempts=1, timing={}))
        else:
            run.append_record(ok_record(unit, dict(_chain(done)), attempts=1, timing={}))
    return folder


def write_libero_run(folder: Path, outcomes: list[bool], policy: str = "vla", **config: object) -> Path:
    """A LIBERO run folder: episode i of task i % 2 succeeded when ``outcomes[i]``."""
    settings = {"policy": policy, "suite": "libero_goal", "seed": 7, "trials_per_task": 1, **config}
    run = RunDir(folder)
    run.prepare(
        build_manifest("libero", settings, {"policy": {"label": policy}}), resume=False, runtime_keys=set()
    )
    for i, ok in enumerate(outcomes):
        unit = WorkUnit(i, f"task{i % 2}-trial{i // 2}", seed=i)
        episode = _episode(ok, task_index=i % 2, instruction=f"task {i % 2}")
        run.append_record(ok_record(unit, dict(episode), attempts=1, timing={}))
    return folder
