"""Executors run work units on workers and yield records as units finish.

A worker is built once per process by a picklable factory (it owns its env and policy) and reused for
every unit that process runs. Records carry everything needed to merge them in unit order, so results
do not depend on the executor, the number of workers or the completion order.

- :class:`InProcessExecutor`: one worker in this process (tests, debugging, ``--workers 1``).
- :class:`ProcessExecutor`: N local processes. A process that dies (segfault, out of memory) loses only
  the unit it was running; that unit is retried up to ``max_retries`` times on a fresh process and then
  recorded as an error, never dropped. A worker process dies with its parent (``kill -9`` included):
  on Linux the kernel kills it (``PR_SET_PDEATHSIG``), and everywhere a watchdog thread waiting on the
  parent's sentinel ends it, so no worker goes on calling a model for a run nobody collects. Each
  process gets its share of the cores for torch and OpenMP (:func:`threads_per_worker`).
"""

from __future__ import annotations

import contextlib
import ctypes
import multiprocessing as mp
import os
import signal
import sys
import threading
import time
from collections import deque
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from typing import Any

from benchmarks.core.work import WorkUnit, error_record, format_exception
from benchmarks.core.worker import (
    Executor,
    Worker,
    WorkerFactory,
    WorkerInitError,
    attach_progress,
    execute_unit,
)


class InProcessExecutor(Executor):
    """All units in this process, one after another, on one reused worker."""

    def run(self, factory: WorkerFactory, units: Sequence[WorkUnit]) -> Iterator[dict[str, Any]]:
        if not units:
            return
        worker = _build(factory)
        try:
            for unit in units:
                attach_progress(worker, self.unit_progress)
                record, raised = execute_unit(worker, unit, attempt=1, worker_id="main")
                if raised:  # do not let a half-finished episode leak into the next unit
                    worker.close()
                    worker = _build(factory)
                yield record
        finally:
            worker.close()


def _build(factory: WorkerFactory) -> Worker:
    try:
        return factory()
    except Exception as exc:
        raise WorkerInitError(f"could not build the worker: {exc}") from exc


# ------------------------------------------------------------------------------------------ processes


_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def die_with_parent() -> None:
    """End this (worker) process as soon as the process that started it dies.

    On Linux the kernel sends SIGKILL when the parent exits (``prctl(PR_SET_PDEATHSIG)``; strictly, when
    the thread that started this process ends: start workers from a thread that lives as long as the run).
    Everywhere, a daemon thread waits on the parent's sentinel (a pipe that closes when the parent dies)
    and exits the process, between two model calls or in the middle of one."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):  # no prctl in this libc: the watchdog still works
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    parent = mp.parent_process()
    if parent is None:
        return
    if not parent.is_alive():  # the parent died before the line above took effect
        os._exit(1)
    threading.Thread(
        target=_exit_when_gone, args=(parent.sentinel,), name="parent-watchdog", daemon=True
    ).start()


def _exit_when_gone(sentinel: int) -> None:
    wait([sentinel])
    os._exit(1)


def threads_per_worker(workers: int, environ: Mapping[str, str] = os.environ) -> int | None:
    """Threads for torch and OpenMP in each of ``workers`` processes: an equal share of the usable cores,
    or None where the user chose (``OMP_NUM_THREADS`` set). Left to their default, N processes each start
    a thread per core: measured on 2 cores, two workers each holding a tiny VLA gave 8.6 decisions/s
    together against 40 with one thread each (bench/results/throughput.md)."""
    if environ.get("OMP_NUM_THREADS"):
        return None
    return max(1, usable_cores() // workers)


def usable_cores() -> int:
    """Cores this process may run on (its affinity where the OS has one, as on Linux; else every core)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def _share_cores(threads: int | None) -> None:
    """Before the worker is built; torch may already be imported (unpickling the factory can import it)."""
    if threads is None:
        return
    os.environ["OMP_NUM_THREADS"] = str(threads)
    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(threads)


def _worker_main(
    conn: Connection,
    factory: WorkerFactory,
    worker_id: str,
    report: bool = False,
    threads: int | None = None,
) -> None:
    """Entry point of a worker process: build once, then run units sent by the parent until told to stop
    (with ``report``, sending the running unit's progress lines too)."""
    die_with_parent()
    _share_cores(threads)
    try:
        worker = factory()
    except Exception as exc:
        conn.send(("init_error", format_exception(exc)))
        return
    conn.send(("ready", None))

    def progress(text: str) -> None:
        conn.send(("progress", text))

    try:
        while True:
            message = conn.recv()
            if message is None:
                break
            unit, attempt = message
            attach_progress(worker, progress if report else None)
            record, raised = execute_unit(worker, unit, attempt=attempt, worker_id=worker_id)
            if raised:
                worker.close()
                worker = factory()
            conn.send(("record", record))
    finally:
        worker.close()


@dataclass
class _Slot:
    process: Any
    conn: Connection
    worker_id: str
    ready: bool = False
    unit: WorkUnit | None = None
    started: float = field(default_factory=time.perf_counter)


class ProcessExecutor(Executor):
    """Units sharded dynamically over ``workers`` local processes, with bounded retries after crashes."""

    def __init__(self, workers: int, *, max_retries: int = 2, start_method: str = "spawn") -> None:
        if workers < 1:
            raise ValueError(f"--workers must be at least 1, got {workers}")
        self.workers, self.max_retries = workers, max_retries
        self._ctx = mp.get_context(start_method)
        self._spawned = 0

    def _spawn(self, factory: WorkerFactory) -> _Slot:
        parent, child = self._ctx.Pipe()
        worker_id = f"p{self._spawned}"
        self._spawned += 1
        report, threads = self.unit_progress is not None, threads_per_worker(self.workers)
        process = self._ctx.Process(  # type: ignore[attr-defined]  # typeshed: on the concrete contexts only
            target=_worker_main, args=(child, factory, worker_id, report, threads), daemon=True
        )
        process.start()
        child.close()
        return _Slot(process, parent, worker_id)

    def run(self, factory: WorkerFactory, units: Sequence[WorkUnit]) -> Iterator[dict[str, Any]]:
        pending: deque[WorkUnit] = deque(units)
        attempts: dict[str, int] = {}
        slots = [self._spawn(factory) for _ in range(min(self.workers, len(units)))]
        startup_deaths = 0
        try:
            while pending or any(s.unit for s in slots):
                self._assign(slots, pending, attempts)
                ready = set(wait([s.conn for s in slots] + [s.process.sentinel for s in slots]))
                for i, slot in enumerate(slots):
                    dead = slot.process.sentinel in ready
                    if slot.conn in ready or dead:
                        yield from self._drain(slot)
                    if dead:
                        record = self._crashed(slot, pending, attempts)
                        if record is not None:
                            yield record
                        startup_deaths += 0 if slot.ready else 1
                        if startup_deaths > self.max_retries + self.workers:
                            raise WorkerInitError("worker processes keep dying while starting up")
                        slots[i] = self._spawn(factory)
        except GeneratorExit:  # the runner stopped early (a streak of errors): end the units in flight now
            self._terminate(slots)
            raise
        finally:
            self._shutdown(slots)

    @staticmethod
    def _assign(slots: list[_Slot], pending: deque[WorkUnit], attempts: dict[str, int]) -> None:
        for slot in slots:
            if slot.ready and slot.unit is None and pending:
                unit = pending.popleft()
                attempts[unit.key] = attempts.get(unit.key, 0) + 1
                slot.unit, slot.started = unit, time.perf_counter()
                slot.conn.send((unit, attempts[unit.key]))

    def _drain(self, slot: _Slot) -> Iterator[dict[str, Any]]:
        """Handle every message the worker sent (a dead worker may have sent a record before dying)."""
        while True:
            try:
                if not slot.conn.poll():
                    return
                kind, payload = slot.conn.recv()
            except (EOFError, OSError):
                return
            if kind == "init_error":
                raise WorkerInitError(f"could not build the worker:\n{payload}")
            if kind == "ready":
                slot.ready = True
            elif kind == "progress":
                if self.unit_progress is not None:
                    self.unit_progress(payload)
            elif kind == "record":
                slot.unit = None
                yield payload

    def _crashed(
        self, slot: _Slot, pending: deque[WorkUnit], attempts: dict[str, int]
    ) -> dict[str, Any] | None:
        slot.process.join(timeout=5)
        slot.conn.close()
        unit, slot.unit = slot.unit, None
        if unit is None:
            return None
        if attempts[unit.key] <= self.max_retries:
            pending.appendleft(unit)
            return None
        timing = {"wall_s": round(time.perf_counter() - slot.started, 4), "worker": slot.worker_id}
        message = (
            f"worker process died (exit code {slot.process.exitcode}) on each of "
            f"{attempts[unit.key]} attempts at this unit"
        )
        return error_record(unit, message, attempts=attempts[unit.key], timing=timing)

    @staticmethod
    def _terminate(slots: list[_Slot]) -> None:
        for slot in slots:
            if slot.unit is not None and slot.process.is_alive():
                slot.process.terminate()

    @staticmethod
    def _shutdown(slots: list[_Slot]) -> None:
        for slot in slots:
            try:
                if slot.process.is_alive():
                    slot.conn.send(None)
            except (BrokenPipeError, OSError):
                pass
        deadline = time.monotonic() + 10
        for slot in slots:
            slot.process.join(timeout=max(0.0, deadline - time.monotonic()))
            if slot.process.is_alive():
                slot.process.terminate()
                slot.process.join(timeout=5)


def make_executor(
    workers: int,
    *,
    ray: str | None = None,
    max_retries: int = 2,
    num_cpus: float = 1.0,
    num_gpus: float = 0.0,
) -> Executor:
    """``--ray ADDRESS`` uses Ray actors (each declaring ``num_cpus``/``num_gpus``); otherwise ``workers == 1``
    runs in-process, more uses processes."""
    if ray:
        from benchmarks.core.ray_executor import RayExecutor

        return RayExecutor(
            ray,
            workers if workers > 1 else None,
            max_retries=max_retries,
            num_cpus=num_cpus,
            num_gpus=num_gpus,
        )
    return InProcessExecutor() if workers == 1 else ProcessExecutor(workers, max_retries=max_retries)
