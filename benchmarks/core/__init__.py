"""Shared machinery of the closed-loop benchmarks: units, records, executors, runner, output folders."""

from benchmarks.core.episode_record import EpisodeRecord, read_episode
from benchmarks.core.executors import InProcessExecutor, ProcessExecutor, make_executor
from benchmarks.core.rundir import ResumeError, RunDir
from benchmarks.core.runner import (
    EXIT_UNITS_ERRORED,
    Benchmark,
    Summary,
    UnitTally,
    run_benchmark,
    score_cell,
    write_summary,
)
from benchmarks.core.work import WorkUnit, comparable, unit_seed
from benchmarks.core.worker import EpisodeWorker, Worker, WorkerInitError

__all__ = [
    "EXIT_UNITS_ERRORED",
    "Benchmark",
    "EpisodeRecord",
    "EpisodeWorker",
    "InProcessExecutor",
    "ProcessExecutor",
    "ResumeError",
    "RunDir",
    "Summary",
    "UnitTally",
    "WorkUnit",
    "Worker",
    "WorkerInitError",
    "comparable",
    "make_executor",
    "read_episode",
    "run_benchmark",
    "score_cell",
    "unit_seed",
    "write_summary",
]
