"""The executor interface: what a worker is, how one unit runs on it, and the executor base class.

Every executor (in-process, local processes in :mod:`benchmarks.core.executors`, Ray actors in
:mod:`benchmarks.core.ray_executor`) builds on this module, so neither executor module imports the other's
internals (``make_executor`` picks among them). :class:`EpisodeWorker` is the shared base of the
closed-loop families' workers.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from benchmarks.core.rundir import RunDir
from benchmarks.core.work import DECISIONS, WorkUnit, error_record, format_exception, ok_record

if TYPE_CHECKING:  # the executors import this module: no action-mapping or policy imports at run time
    from benchmarks.core.episode import StepHook
    from benchmarks.core.episode_record import EpisodeRecord


class Worker(Protocol):
    """Runs units in one process; built by a factory, closed when the executor is done with it.

    A worker may also define ``unit_decisions() -> list[dict]``: the model decisions of the unit it ran
    last (also when that unit raised), which the runner writes to ``decisions.jsonl``."""

    def run(self, unit: WorkUnit) -> dict[str, Any]: ...

    def close(self) -> None: ...


WorkerFactory = Callable[[], Worker]


class EpisodeWorker(ABC):
    """What every closed-loop worker shares: the run folder, the unit's model decisions, an optional MP4
    of the first ``video_units`` units, and an env to close.

    A family's worker sets ``env`` (``None`` until it has one), ``video_keys``, ``video_fps`` and
    ``video_height``, and implements :meth:`run_unit`, which runs one unit with ``on_step`` as its frame
    hook and appends the policy's model calls to ``self.decisions``."""

    video_keys: Sequence[str] = ()
    video_fps: int = 15
    video_height: int = 200

    def __init__(self, run_path: str, video_units: int) -> None:
        self.run_dir, self.video_units = RunDir(run_path), video_units
        self.env: Any = None
        self.decisions: list[dict[str, Any]] = []

    @abstractmethod
    def run_unit(self, unit: WorkUnit, on_step: StepHook | None) -> EpisodeRecord:
        """Run ``unit`` and return its result."""

    def run(self, unit: WorkUnit) -> EpisodeRecord:
        """:meth:`run_unit` with a fresh decision log, recorded to video when the unit is one of the first
        ``video_units`` (the video is written also when the unit raises)."""
        # PIL and imageio are imported only where a worker runs
        from benchmarks.core.video import VideoRecorder, run_recorded

        self.decisions = []
        video = None
        if unit.index < self.video_units:
            video = VideoRecorder(self.run_dir.videos / f"{unit.key}.mp4", self.video_keys, fps=self.video_fps,
                                  height=self.video_height)
        return run_recorded(lambda on_step: self.run_unit(unit, on_step), video, self.run_dir.path)

    @staticmethod
    def make_env(env_id: str, **kwargs: Any) -> Any:
        """``gym.make`` of a registered id (``SpatialArena/...``): the one way a worker builds its env."""
        import gymnasium as gym

        import envs  # noqa: F401  (registers the ids)

        return gym.make(env_id, **kwargs)

    def unit_decisions(self) -> list[dict[str, Any]]:
        """The model calls of the unit run last (also when it raised)."""
        return self.decisions

    def close(self) -> None:
        if self.env is not None:
            self.env.close()


class WorkerInitError(RuntimeError):
    """A worker could not be built (bad configuration, missing model files, ...): the run cannot start."""


def execute_unit(worker: Worker, unit: WorkUnit, *, attempt: int, worker_id: str) -> tuple[dict[str, Any], bool]:
    """Run one unit; returns (record, raised). An exception becomes an error record with its traceback."""
    start = time.perf_counter()
    try:
        result = worker.run(unit)
        raised = False
    except Exception as exc:  # a unit's failure is recorded, the run goes on
        result, raised = {"exception": format_exception(exc)}, True
    timing = {"wall_s": round(time.perf_counter() - start, 4), "worker": worker_id}
    if raised:
        record = error_record(unit, result["exception"], attempts=attempt, timing=timing)
    else:
        record = ok_record(unit, result, attempts=attempt, timing=timing)
    decisions = getattr(worker, "unit_decisions", None)
    record[DECISIONS] = list(decisions()) if decisions is not None else []
    return record, raised


class Executor(ABC):
    @abstractmethod
    def run(self, factory: WorkerFactory, units: Sequence[WorkUnit]) -> Iterator[dict[str, Any]]:
        """Yield one record per unit, in completion order."""
