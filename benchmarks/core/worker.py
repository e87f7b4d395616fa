"""The executor interface: what a worker is, how one unit runs on it, and the executor base class.

Every executor (in-process, local processes in :mod:`benchmarks.core.executors`, Ray actors in
:mod:`benchmarks.core.ray_executor`) builds on this module, so neither executor module imports the other's
internals (``make_executor`` picks among them). :class:`EpisodeWorker` is the shared base of the
closed-loop families' workers.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from benchmarks.core.rundir import RunDir
from benchmarks.core.work import DECISIONS, WorkUnit, error_record, format_exception, ok_record

if TYPE_CHECKING:  # the executors import this module: no action-mapping or policy imports at run time
    import gymnasium as gym

    from benchmarks.core.episode import StepHook
    from benchmarks.core.episode_record import EpisodeRecord


class Worker(Protocol):
    """Runs units in one process; built by a factory, closed when the executor is done with it.

    A worker may also define ``unit_decisions() -> list[dict]``: the model decisions of the unit it ran
    last (also when that unit raised), which the runner writes to ``decisions.jsonl``."""

    def run(self, unit: WorkUnit) -> Mapping[str, Any]: ...

    def close(self) -> None: ...


WorkerFactory = Callable[[], Worker]


class EpisodeWorker(ABC):
    """What every closed-loop worker shares: the run folder, the unit's model decisions, an optional MP4
    of the first ``video_units`` units, and an env to close.

    A family's worker sets ``env`` (``None`` until it has one), ``video_keys``, ``video_fps`` and
    ``video_height``, and implements :meth:`run_unit`, which runs one unit with ``on_step`` as its frame
    hook and appends the policy's model calls to ``self.decisions``. An executor that shows progress sets
    ``progress`` (:func:`attach_progress`): the unit's steps then reach the progress line as they happen."""

    video_keys: Sequence[str] = ()
    video_fps: int = 15
    video_height: int = 200

    def __init__(self, run_path: str, video_units: int) -> None:
        self.run_dir, self.video_units = RunDir(run_path), video_units
        self.env: gym.Env | None = None
        self.decisions: list[dict[str, Any]] = []
        self.progress: Callable[[str], None] | None = None

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
            video = VideoRecorder(
                self.run_dir.videos / f"{unit.key}.mp4",
                self.video_keys,
                fps=self.video_fps,
                height=self.video_height,
            )
        steps = StepProgress(unit.key, self.progress) if self.progress is not None else None
        return run_recorded(
            lambda on_step: self.run_unit(unit, chain_hooks(on_step, steps)), video, self.run_dir.path
        )

    @staticmethod
    def make_env(env_id: str, **kwargs: Any) -> gym.Env:
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


#: Seconds between two progress reports of one unit (a unit shorter than this reports nothing).
PROGRESS_INTERVAL_S = 2.0


class StepProgress:
    """A step hook that counts a unit's steps and reports ``"<key>: step N, <caption>"`` through ``report``
    at most once per ``interval_s`` (the caption: the frame's first line, e.g. CALVIN's current subtask)."""

    def __init__(
        self,
        key: str,
        report: Callable[[str], None],
        interval_s: float = PROGRESS_INTERVAL_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.key, self.report, self.interval_s, self.clock = key, report, interval_s, clock
        self.steps = -1  # the first call shows the reset's observation
        self._due = clock() + interval_s

    def __call__(self, observation: Any, captions: list[str]) -> None:
        self.steps += 1
        now = self.clock()
        if now < self._due:
            return
        self._due = now + self.interval_s
        caption = captions[0] if captions and captions[0] else ""
        self.report(f"{self.key}: step {self.steps}" + (f", {_shorten(caption, 40)}" if caption else ""))


def chain_hooks(*hooks: StepHook | None) -> StepHook | None:
    """One step hook that calls each given hook in turn (``None`` when none is given)."""
    given = [h for h in hooks if h is not None]
    if len(given) <= 1:
        return given[0] if given else None

    def each(observation: dict[str, Any], captions: list[str]) -> None:
        for hook in given:
            hook(observation, captions)

    return each


def _shorten(text: str, chars: int) -> str:
    return text if len(text) <= chars else text[: chars - 3] + "..."


def attach_progress(worker: Worker, report: Callable[[str], None] | None) -> None:
    """Let ``worker`` report progress inside its units (closed-loop workers do; other workers ignore it)."""
    if isinstance(worker, EpisodeWorker):
        worker.progress = report


class WorkerInitError(RuntimeError):
    """A worker could not be built (bad configuration, missing model files, ...): the run cannot start."""


def execute_unit(
    worker: Worker, unit: WorkUnit, *, attempt: int, worker_id: str
) -> tuple[dict[str, Any], bool]:
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
        record = ok_record(unit, dict(result), attempts=attempt, timing=timing)
    decisions = getattr(worker, "unit_decisions", None)
    record[DECISIONS] = list(decisions()) if decisions is not None else []
    return record, raised


class Executor(ABC):
    #: Called with a running unit's progress line (``"<key>: step N, ..."``) when set (by the runner, when
    #: it shows progress); the in-process and local-process executors pass their workers' reports on.
    unit_progress: Callable[[str], None] | None = None

    @abstractmethod
    def run(self, factory: WorkerFactory, units: Sequence[WorkUnit]) -> Iterator[dict[str, Any]]:
        """Yield one record per unit, in completion order."""
