"""The executor interface: what a worker is, how one unit runs on it, and the executor base class.

Every executor (in-process, local processes in :mod:`benchmarks.core.executors`, Ray actors in
:mod:`benchmarks.core.ray_executor`) builds on this module, so neither executor module imports the other's
internals (``make_executor`` picks among them).
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Protocol

from benchmarks.core.work import DECISIONS, WorkUnit, error_record, format_exception, ok_record


class Worker(Protocol):
    """Runs units in one process; built by a factory, closed when the executor is done with it.

    A worker may also define ``unit_decisions() -> list[dict]``: the model decisions of the unit it ran
    last (also when that unit raised), which the runner writes to ``decisions.jsonl``."""

    def run(self, unit: WorkUnit) -> dict[str, Any]: ...

    def close(self) -> None: ...


WorkerFactory = Callable[[], Worker]


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
