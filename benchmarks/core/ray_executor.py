"""Ray executor: the same units on Ray actors, locally or on an existing cluster (``--ray ADDRESS|auto``).

Each actor builds one worker (env + policy) and runs units one at a time, with the resources it declares
(CPUs, GPUs). An actor that dies (segfault, out of memory, node loss) loses only its current unit, which
is retried on a fresh actor up to ``max_retries`` times and then recorded as an error. Records are the
same as with local processes, so the merged results do not depend on the executor.

On a cluster every node needs this project installed (``pip install -c constraints.txt spatial-arena[...]``);
for a local Ray instance the project root is put on the actors' ``PYTHONPATH``.
"""

from __future__ import annotations

import os
import time
from collections import deque
from collections.abc import Iterator, Sequence
from types import ModuleType
from typing import Any

from benchmarks.core.work import WorkUnit, error_record, format_exception
from benchmarks.core.worker import Executor, Worker, WorkerFactory, WorkerInitError, execute_unit
from policies.serve.ray_cluster import connect, import_ray


class _ActorWorker:
    """Body of a Ray actor. Construction errors are reported by ``run`` so they stop the whole run."""

    def __init__(self, factory: WorkerFactory, worker_id: str) -> None:
        self.factory, self.worker_id = factory, worker_id
        self.worker: Worker | None = None
        self.init_error: str | None = None
        try:
            self.worker = factory()
        except Exception as exc:
            self.init_error = format_exception(exc)

    def run(self, unit: WorkUnit, attempt: int) -> tuple[str, Any]:
        if self.worker is None:
            return "init_error", self.init_error
        record, raised = execute_unit(self.worker, unit, attempt=attempt, worker_id=self.worker_id)
        if raised:  # a fresh env after an exception, as in the other executors
            self.worker.close()
            self.worker = self.factory()
        return "record", record

    def pid(self) -> int:
        return os.getpid()


class RayExecutor(Executor):
    """Units sharded over Ray actors with bounded retries after actor deaths.

    Args:
        address: ``None`` or ``"local"`` starts a private local instance; ``"auto"`` or ``"ray://…"`` /
            ``"host:port"`` joins an existing cluster.
        workers: number of actors (default: as many as the cluster's CPUs allow).
        num_cpus, num_gpus: resources each actor declares.
    """

    def __init__(
        self,
        address: str | None = None,
        workers: int | None = None,
        *,
        num_cpus: float = 1.0,
        num_gpus: float = 0.0,
        max_retries: int = 2,
    ) -> None:
        self.address = None if address in (None, "", "local") else address
        self.workers, self.num_cpus, self.num_gpus, self.max_retries = (
            workers,
            num_cpus,
            num_gpus,
            max_retries,
        )
        self.actor_pids: list[int] = []

    def run(self, factory: WorkerFactory, units: Sequence[WorkUnit]) -> Iterator[dict[str, Any]]:
        if not units:
            return
        ray = import_ray()
        started_here = connect(self.address)
        try:
            yield from self._run(ray, factory, units)
        finally:
            if started_here:
                ray.shutdown()

    def _run(
        self, ray: ModuleType, factory: WorkerFactory, units: Sequence[WorkUnit]
    ) -> Iterator[dict[str, Any]]:
        actor_cls = ray.remote(num_cpus=self.num_cpus, num_gpus=self.num_gpus, max_restarts=0)(_ActorWorker)
        n = self.workers or self._actors_that_fit(ray.cluster_resources())
        spawned = 0

        def spawn() -> Any:
            nonlocal spawned
            spawned += 1
            return actor_cls.remote(factory, f"r{spawned - 1}")

        idle = deque(spawn() for _ in range(min(n, len(units))))
        self.actor_pids = ray.get([a.pid.remote() for a in idle])
        pending = deque(units)
        attempts: dict[str, int] = {}
        in_flight: dict[Any, tuple[Any, WorkUnit, float]] = {}
        try:
            while pending or in_flight:
                while idle and pending:
                    actor, unit = idle.popleft(), pending.popleft()
                    attempts[unit.key] = attempts.get(unit.key, 0) + 1
                    in_flight[actor.run.remote(unit, attempts[unit.key])] = (actor, unit, time.perf_counter())
                (ref,), _ = ray.wait(list(in_flight), num_returns=1)
                actor, unit, started = in_flight.pop(ref)
                try:
                    kind, payload = ray.get(ref)
                except ray.exceptions.RayActorError as exc:
                    idle.append(spawn())
                    if attempts[unit.key] <= self.max_retries:
                        pending.appendleft(unit)
                        continue
                    timing = {"wall_s": round(time.perf_counter() - started, 4), "worker": "ray"}
                    yield error_record(
                        unit,
                        f"Ray actor died on each of {attempts[unit.key]} attempts: {type(exc).__name__}",
                        attempts=attempts[unit.key],
                        timing=timing,
                    )
                    continue
                if kind == "init_error":
                    raise WorkerInitError(f"could not build the worker on a Ray actor:\n{payload}")
                idle.append(actor)
                yield payload
        finally:
            for actor in [*idle, *(a for a, _, _ in in_flight.values())]:
                ray.kill(actor, no_restart=True)

    def _actors_that_fit(self, cluster: dict[str, float]) -> int:
        """How many actors the cluster holds at once; a clear error when not even one fits (Ray would wait
        for the resources forever)."""
        fits = []
        for name, need, flag in (
            ("CPU", self.num_cpus, "--ray-num-cpus"),
            ("GPU", self.num_gpus, "--ray-num-gpus"),
        ):
            have = cluster.get(name, 0.0)
            if need > have:
                raise ValueError(
                    f"each Ray worker asks for {need:g} {name}(s) ({flag}) but the cluster has {have:g}; "
                    f"lower {flag} or join a cluster with more (--ray auto / ADDRESS)"
                )
            if need > 0:
                fits.append(int(have // need))
        return max(1, min(fits, default=1))
