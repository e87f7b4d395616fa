"""The one runner behind every closed-loop benchmark.

A benchmark module only defines its units, its worker (env + policy + episode logic), its summary and
its CLI flags. This module does the rest: output folder and manifest, resume, executors, progress,
merging records in unit order, and writing the summary.
"""

from __future__ import annotations

import dataclasses
import sys
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from benchmarks.core.episode_record import read_episode
from benchmarks.core.executors import make_executor
from benchmarks.core.manifest import build_manifest
from benchmarks.core.progress import Progress
from benchmarks.core.rundir import ResumeError, RunDir, write_json
from benchmarks.core.serving import SERVE_KEYS, ServedPolicy, ServingConfig
from benchmarks.core.stopping import STOPPING_KEYS, ProtocolPrefix, Stopper, StoppingConfig, StopStatus
from benchmarks.core.streak import (
    DEFAULT_MAX_CONSECUTIVE_ERRORS,
    ErrorStreak,
    ErrorStreakStop,
    describe_endpoint,
)
from benchmarks.core.work import DECISIONS, RECORD_ERROR, RECORD_OK, WorkUnit
from benchmarks.core.worker import Executor, WorkerFactory
from policies.config_cli import EXIT_UNITS_ERRORED, arg

# Config fields that may change between an interrupted run and its resumption.
RUNTIME_KEYS = {
    "workers",
    "resume",
    "retry_errors",
    "output",
    "run_name",
    "progress",
    "ray",
    "ray_num_cpus",
    "ray_num_gpus",
    "unit_retries",
    "video",
    "allow_errors",
    "max_consecutive_errors",
}
# Policy options that change how the model is reached, never what it answers (a moved server, a new cache).
POLICY_RUNTIME_KEYS = {
    "api_base",
    "api_key_env",
    "cache",
    "cache_path",
    "timeout_s",
    "max_retries",
    "max_concurrency",
    "price_prompt_per_mtok",
    "price_completion_per_mtok",
}
#: Exit status of a benchmark command when some unit ended in an error (``--allow-errors``: 0). Distinct
#: from 1 (a crash) and 2 (bad command-line input), so scripts can tell "ran, but incomplete" apart.


def require_count(flag: str, value: int | None, *, minimum: int = 1) -> None:
    """A count option must be at least ``minimum`` (``None`` means its default)."""
    if value is not None and value < minimum:
        raise ValueError(f"{flag} must be at least {minimum}, got {value}")


@dataclass
class ExecutionConfig(StoppingConfig, ServingConfig):
    """Execution (workers, Ray, resume; never changes the results)

    Shared by every closed-loop benchmark config: how a run executes, not what it measures; with it, when a
    run may stop early (:class:`~benchmarks.core.stopping.StoppingConfig`) and whether one process serves
    the model to every worker (:class:`~benchmarks.core.serving.ServingConfig`)."""

    workers: int = arg(
        1, "parallel local worker processes (units are sharded; results do not depend on it)", minimum=1
    )
    ray: str | None = arg(None, "run workers as Ray actors: 'local', 'auto' or a cluster address")
    ray_num_cpus: float = arg(
        1.0, "with --ray: CPUs each worker actor declares (its simulator and renderer)", minimum=0
    )
    ray_num_gpus: float = arg(
        0.0,
        "with --ray: GPUs each worker actor declares (e.g. 1 for an in-process VLA "
        "on CUDA; 0 when the model is served by policies.serve)",
        minimum=0,
    )
    resume: bool = arg(
        False,
        "continue a run in the same folder without redoing finished units; with a larger "
        "--limit it extends a finished run",
    )
    retry_errors: bool = arg(False, "with --resume, also rerun units that ended in an error")
    unit_retries: int = arg(
        2, "times a unit (chain or episode) is retried after its worker process crashed", minimum=0
    )
    limit: int | None = arg(
        None, "run only the first N units (chains, trials, episodes) in the protocol's order", minimum=1
    )
    allow_errors: bool = arg(
        False,
        f"exit 0 even when some units ended in an error (default: exit status "
        f"{EXIT_UNITS_ERRORED}; errored units are never scored either way)",
    )
    max_consecutive_errors: int = arg(
        DEFAULT_MAX_CONSECUTIVE_ERRORS,
        f"stop the run (exit status {EXIT_UNITS_ERRORED}) after this many units in a "
        f"row ended in an error, e.g. a dead model server; --resume continues; 0: "
        f"never stop",
        minimum=0,
    )
    progress: bool = arg(True, "show a progress bar")

    def __post_init__(self) -> None:
        require_count("--workers", self.workers)
        require_count("--unit-retries", self.unit_retries, minimum=0)
        require_count("--limit", self.limit)
        self.check_stopping()
        self.check_serving(self.workers, self.ray)


@dataclass(frozen=True)
class UnitTally:
    """How many of a run's units completed, errored, or have not run (an interrupted run)."""

    total: int
    completed: int
    errored: int

    @classmethod
    def of(cls, records: Sequence[dict[str, Any]], total: int) -> UnitTally:
        return cls(
            total,
            sum(r["status"] == RECORD_OK for r in records),
            sum(r["status"] == RECORD_ERROR for r in records),
        )

    @property
    def complete(self) -> bool:
        return self.completed == self.total

    def errored_cell(self) -> str:
        """The headline table's cell, e.g. ``3 / 20``: errored units of all units."""
        return f"{self.errored} / {self.total}"


def score_cell(value: float | None, fmt: str = ".1f") -> str:
    """A metric in a table; ``None`` (no completed unit to compute it from) shows as ``n/a``, never as 0."""
    return "n/a" if value is None else format(value, fmt)


@dataclass
class Summary:
    """A benchmark's aggregate: JSON data, a markdown report, and extra files (name -> writer)."""

    data: dict[str, Any]
    markdown: str
    files: dict[str, Any] = field(default_factory=dict)


class Benchmark(ABC):
    """A runnable protocol. Subclasses are small: units, a worker factory, a summary."""

    name: str  # set on the class, or per instance where the config names the run (embodied-nav)
    run_path: str  # the run folder, set by each benchmark from its config
    #: The policy around the run's server, for the workers (set while ``--serve batched`` serves it).
    served: ServedPolicy | None = None

    def __init__(self, config: Any) -> None:
        self.config = config

    @abstractmethod
    def units(self) -> list[WorkUnit]:
        """Every unit of the run, in result order."""

    @abstractmethod
    def worker_factory(self) -> WorkerFactory:
        """A picklable callable that builds a worker (env + policy) inside a worker process."""

    #: Config fields that only choose how long a prefix of the protocol's units runs: ``--resume`` may
    #: change them (4 -> 6 chains reuses the 4).
    prefix_keys: ClassVar[frozenset[str]] = frozenset({"limit"})

    @abstractmethod
    def summarize(self, records: Sequence[dict[str, Any]], run_dir: RunDir, tally: UnitTally) -> Summary:
        """Aggregate records (sorted by unit index, one per unit) into the run's summary.

        Metrics come from the completed (``ok``) records only; the headline table shows
        ``tally.errored_cell()`` (errored of all units), and a metric with no completed unit is ``None``."""

    def selected_units(self) -> list[WorkUnit]:
        """The units this run covers: :meth:`units`, cut to ``--limit``."""
        limit = getattr(self.config, "limit", None)
        units = self.units()
        return units if limit is None else units[:limit]

    def progress_stats(self, records: Sequence[dict[str, Any]]) -> dict[str, Any]:
        """Running statistics shown next to the progress bar."""
        return {}

    def unit_value(self, record: dict[str, Any]) -> float:
        """A completed unit's value in [0, 1] for sequential stopping: its success (CALVIN: avg. len / 5)."""
        return float(bool(read_episode(record["result"])["success"]))

    def manifest_extra(self) -> dict[str, Any]:
        """Extra provenance (policy identity, env ids, protocol constants) for the manifest."""
        return {}


def config_defaults(config: object) -> dict[str, Any]:
    """The defaults of a dataclass config's settings (``{}`` for anything else)."""
    if not dataclasses.is_dataclass(config):
        return {}
    return {f.name: f.default for f in dataclasses.fields(config) if f.default is not dataclasses.MISSING}


def _prepare(out: RunDir, manifest: dict[str, Any], benchmark: Benchmark, *, resume: bool) -> None:
    """Check ``out`` against the manifest (or start it), saying on stderr which files were moved aside."""
    for moved in out.prepare(
        manifest,
        resume=resume,
        runtime_keys=RUNTIME_KEYS | POLICY_RUNTIME_KEYS | benchmark.prefix_keys | STOPPING_KEYS | SERVE_KEYS,
        defaults=config_defaults(benchmark.config),
    ):
        print(
            moved.message("their units run again" if moved.path == out.records else "kept there, unread"),
            file=sys.stderr,
        )


def _record_units(
    benchmark: Benchmark,
    out: RunDir,
    finished_units: Iterable[dict[str, Any]],
    records: list[dict[str, Any]],
    bar: Progress,
    streak: ErrorStreak,
    decided: Callable[[dict[str, Any]], bool] | None = None,
) -> ErrorStreakStop | None:
    """Write each finished unit's decisions and record as it arrives; the error streak that stopped the run,
    if one did. The units still in flight are stopped then, or once ``decided`` (a sequential stopper fed
    each record) says the run has its answer."""
    stopped: ErrorStreakStop | None = None
    try:
        for record in finished_units:
            # Decisions first: a unit whose record is missing after an interruption runs again, and
            # keep_decisions then drops its orphaned lines.
            out.append_decisions(decision_lines(record))
            out.append_record(record)
            records.append(record)
            bar.update(benchmark.progress_stats(records))
            streak.add(record["error"] if record["status"] == RECORD_ERROR else None)
            if decided is not None and decided(record):
                break
            try:
                streak.check()
            except ErrorStreakStop as stop:
                stopped = stop
                break
    finally:
        close = getattr(finished_units, "close", None)
        if close is not None:  # an executor's generator: stops the units still in flight
            close()
        bar.close()
    return stopped


def run_benchmark(
    benchmark: Benchmark,
    run_dir: str | Path,
    *,
    workers: int = 1,
    resume: bool = False,
    retry_errors: bool = False,
    executor: Executor | None = None,
    ray: str | None = None,
    ray_resources: dict[str, float] | None = None,
    progress: bool = True,
    max_retries: int = 2,
    units: Sequence[WorkUnit] | None = None,
    max_consecutive_errors: int = DEFAULT_MAX_CONSECUTIVE_ERRORS,
    stopper: Stopper | None = None,
) -> Summary:
    """Run every unit not yet finished in ``run_dir``, then summarise the records of this run's units.

    ``ray_resources`` (``num_cpus``, ``num_gpus``) is what each Ray worker actor declares; ``units``
    (default: ``benchmark.selected_units()``) saves building them twice. After ``max_consecutive_errors``
    units in a row ended in an error (0: never), the units in flight are stopped, the summary of what
    finished is written, and :class:`ErrorStreakStop` is raised (one line naming the policy's endpoint).
    With a ``stopper`` the run ends once it decides on the units finished in protocol order; the summary then
    covers the units its verdict rests on."""
    out = RunDir(run_dir)
    units = list(benchmark.selected_units() if units is None else units)
    manifest = build_manifest(benchmark.name, benchmark.config, benchmark.manifest_extra())
    _prepare(out, manifest, benchmark, resume=resume)
    finished = out.finished_keys(retry_errors=retry_errors) if resume else set()
    out.keep_decisions(finished)  # lines of units about to run (again) go; theirs are written afresh
    records = out.merged_records()
    sequential = _Sequential(stopper, units, records) if stopper is not None else None
    todo = [] if sequential and sequential.done else [u for u in units if u.key not in finished]
    bar = Progress(len(units), len(units) - len(todo), f"{benchmark.name}", enabled=progress)
    policy = manifest.get("policy") or {}
    streak = ErrorStreak(
        max_consecutive_errors, endpoint=describe_endpoint(policy.get("options") or {}, policy.get("name"))
    )
    executor = executor or make_executor(workers, ray=ray, max_retries=max_retries, **(ray_resources or {}))
    executor.unit_progress = bar.unit if bar.enabled else None
    finished_units = executor.run(benchmark.worker_factory(), todo)
    decided = sequential.add if sequential is not None else None
    stopped = _record_units(benchmark, out, finished_units, records, bar, streak, decided)
    summary = _summarize(benchmark, out, units, sequential)
    if stopped is not None:
        raise stopped
    return summary


def _summarize(
    benchmark: Benchmark, out: RunDir, units: Sequence[WorkUnit], sequential: _Sequential | None
) -> Summary:
    """The run's summary; a decided sequential run's covers only the units its verdict rests on."""
    if sequential is None:
        return write_summary(benchmark, out, units)
    status = sequential.status
    used = units[: status.used] if status.decided else units
    return write_summary(benchmark, out, used, status, len(units))


class _Sequential:
    """A stopper fed the protocol-order prefix of finished units; ``done`` once it decided."""

    def __init__(
        self, stopper: Stopper, units: Sequence[WorkUnit], records: Sequence[dict[str, Any]]
    ) -> None:
        self.stopper = stopper
        self.prefix = ProtocolPrefix(units, records)
        self.status = stopper.status(self.prefix.records)

    @property
    def done(self) -> bool:
        return self.status.decided

    def add(self, record: dict[str, Any]) -> bool:
        if self.prefix.add(record):
            self.status = self.stopper.status(self.prefix.records)
        return self.status.decided


def decision_lines(record: dict[str, Any]) -> list[dict[str, Any]]:
    """Take the unit's model decisions out of ``record`` as ``decisions.jsonl`` lines (unit key, index and
    status first, then the call number within the unit and the policy's fields)."""
    calls = record.pop(DECISIONS, None) or []
    head = {"key": record["key"], "index": record["index"], "unit_status": record["status"]}
    return [{**head, "call": i, **call} for i, call in enumerate(calls)]


def write_summary(
    benchmark: Benchmark,
    out: RunDir,
    units: Sequence[WorkUnit],
    stop: StopStatus | None = None,
    planned: int | None = None,
) -> Summary:
    """Merge the records of ``units`` in unit order and write summary.json, summary.md and the benchmark's
    own files. Errored units are counted, never scored; ``run.complete`` is false unless every unit completed.
    A sequential run's ``stop`` (of ``planned`` units) goes into ``sequential`` and a line of summary.md; units
    it did not need are not errors and are not counted."""
    keys = {u.key for u in units}
    records = [r for r in out.merged_records() if r["key"] in keys]
    tally = UnitTally.of(records, len(units))
    summary = benchmark.summarize(records, out, tally)
    errors = [r for r in records if r["status"] == RECORD_ERROR]
    summary.data["run"] = {
        "complete": tally.complete,
        "units_total": tally.total,
        "units_completed": tally.completed,
        "units_errored": tally.errored,
        "errored_keys": [r["key"] for r in errors],
    }
    if stop is not None:
        summary.data["sequential"] = {**stop.data, "units_used": stop.used, "units_planned": planned}
    write_json(out.summary_json, summary.data)
    notes = "\n"
    if errors:
        notes = (
            f"\n\n**Incomplete run**: {tally.errored} of {tally.total} unit(s) ended in an error and are not "
            f"scored ({', '.join(r['key'] for r in errors[:5])}{', ...' if len(errors) > 5 else ''}); "
            f"the causes are in records.jsonl.\n"
        )
    if stop is not None:
        notes = f"\n\n**Sequential stopping**: {stop.line}" + notes
    out.summary_md.write_text(summary.markdown.rstrip() + notes)
    for name, writer in summary.files.items():
        writer(out.path / name)
    return summary


def run_command(benchmark: Benchmark, run_path: str | Path, stopper: Stopper | None = None) -> Summary:
    """Run a benchmark from its CLI config (the fields every benchmark config shares) and print the summary.

    Exits with :data:`EXIT_UNITS_ERRORED` when a unit ended in an error (unless ``--allow-errors``), and
    with a one-line message (status 2) when the run's settings are unusable or cannot resume the folder."""
    c = benchmark.config
    try:
        units = benchmark.selected_units()
    except ValueError as exc:  # a bad --subset, --tasks, --num-sequences: one line, not a traceback
        print(f"error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    try:
        summary = run_benchmark(
            benchmark,
            run_path,
            workers=c.workers,
            ray=c.ray,
            resume=c.resume,
            ray_resources={"num_cpus": c.ray_num_cpus, "num_gpus": c.ray_num_gpus},
            retry_errors=c.retry_errors,
            progress=c.progress,
            max_retries=c.unit_retries,
            units=units,
            max_consecutive_errors=c.max_consecutive_errors,
            stopper=stopper,
        )
    except ResumeError as exc:
        print(f"error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    print(Path(run_path, "summary.md").read_text())
    print(f"results: {run_path}")
    run = summary.data["run"]
    if run["units_errored"] and not c.allow_errors:
        print(
            f"error: {run['units_errored']} of {run['units_total']} units ended in an error (see "
            f"{Path(run_path, 'records.jsonl')}); exit status {EXIT_UNITS_ERRORED} (--allow-errors exits 0)",
            file=sys.stderr,
        )
        raise SystemExit(EXIT_UNITS_ERRORED)
    return summary
