"""The one runner behind every closed-loop benchmark.

A benchmark module only defines its units, its worker (env + policy + episode logic), its summary and
its CLI flags. This module does the rest: output folder and manifest, resume, executors, progress,
merging records in unit order, and writing the summary.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from benchmarks.core.cli import arg
from benchmarks.core.executors import Executor, WorkerFactory, make_executor
from benchmarks.core.manifest import build_manifest
from benchmarks.core.progress import Progress
from benchmarks.core.rundir import RunDir, write_json
from benchmarks.core.work import RECORD_ERROR, WorkUnit

# Config fields that may change between an interrupted run and its resumption.
RUNTIME_KEYS = {"workers", "resume", "retry_errors", "output", "run_name", "progress", "ray", "ray_num_cpus",
                "ray_num_gpus", "unit_retries", "video"}


@dataclass
class ExecutionConfig:
    """Execution (workers, Ray, resume; never changes the results)

    Shared by every closed-loop benchmark config: how a run executes, not what it measures."""

    workers: int = arg(1, "parallel local worker processes (units are sharded; results do not depend on it)", minimum=1)
    ray: str | None = arg(None, "run workers as Ray actors: 'local', 'auto' or a cluster address")
    ray_num_cpus: float = arg(1.0, "with --ray: CPUs each worker actor declares (its simulator and renderer)", minimum=0)
    ray_num_gpus: float = arg(0.0, "with --ray: GPUs each worker actor declares (e.g. 1 for an in-process VLA "
                                   "on CUDA; 0 when the model is served by policies.serve)", minimum=0)
    resume: bool = arg(False, "continue an interrupted run in the same folder without redoing finished units")
    retry_errors: bool = arg(False, "with --resume, also rerun units that ended in an error")
    unit_retries: int = arg(2, "times a unit (chain or episode) is retried after its worker process crashed", minimum=0)
    progress: bool = arg(True, "show a progress bar")


@dataclass
class Summary:
    """A benchmark's aggregate: JSON data, a markdown report, and extra files (name -> writer)."""

    data: dict[str, Any]
    markdown: str
    files: dict[str, Any] = field(default_factory=dict)


class Benchmark(ABC):
    """A runnable protocol. Subclasses are small: units, a worker factory, a summary."""

    name: ClassVar[str]

    def __init__(self, config: Any) -> None:
        self.config = config

    @abstractmethod
    def units(self) -> list[WorkUnit]:
        """Every unit of the run, in result order."""

    @abstractmethod
    def worker_factory(self) -> WorkerFactory:
        """A picklable callable that builds a worker (env + policy) inside a worker process."""

    @abstractmethod
    def summarize(self, records: Sequence[dict[str, Any]], run_dir: RunDir) -> Summary:
        """Aggregate records (sorted by unit index, one per unit) into the run's summary."""

    def progress_stats(self, records: Sequence[dict[str, Any]]) -> dict[str, Any]:
        """Running statistics shown next to the progress bar."""
        return {}

    def manifest_extra(self) -> dict[str, Any]:
        """Extra provenance (policy identity, env ids, protocol constants) for the manifest."""
        return {}


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
) -> Summary:
    """Run every unit not yet finished in ``run_dir``, then summarise all records there.

    ``ray_resources`` (``num_cpus``, ``num_gpus``) is what each Ray worker actor declares."""
    out = RunDir(run_dir)
    manifest = build_manifest(benchmark.name, benchmark.config, benchmark.manifest_extra())
    out.prepare(manifest, resume=resume, runtime_keys=RUNTIME_KEYS)
    units = benchmark.units()
    finished = out.finished_keys(retry_errors=retry_errors) if resume else set()
    todo = [u for u in units if u.key not in finished]
    records = out.merged_records()
    bar = Progress(len(units), len(units) - len(todo), f"{benchmark.name}", enabled=progress)
    try:
        for record in (executor or make_executor(workers, ray=ray, max_retries=max_retries, **(ray_resources or {}))).run(
            benchmark.worker_factory(), todo
        ):
            out.append_record(record)
            records.append(record)
            bar.update(benchmark.progress_stats(records))
    finally:
        bar.close()
    return write_summary(benchmark, out, len(units))


def write_summary(benchmark: Benchmark, out: RunDir, total_units: int) -> Summary:
    """Merge records in unit order and write summary.json, summary.md and the benchmark's own files."""
    records = out.merged_records()
    summary = benchmark.summarize(records, out)
    errors = [r for r in records if r["status"] == RECORD_ERROR]
    summary.data["run"] = {"units_total": total_units, "units_done": len(records), "units_failed": len(errors),
                           "failed_keys": [r["key"] for r in errors]}
    write_json(out.summary_json, summary.data)
    notes = f"\n\n{len(errors)} unit(s) ended in an error; see records.jsonl.\n" if errors else "\n"
    out.summary_md.write_text(summary.markdown.rstrip() + notes)
    for name, writer in summary.files.items():
        writer(out.path / name)
    return summary


def run_command(benchmark: Benchmark, run_path: str | Path) -> Summary:
    """Run a benchmark from its CLI config (the fields every benchmark config shares) and print the summary."""
    c = benchmark.config
    summary = run_benchmark(benchmark, run_path, workers=c.workers, ray=c.ray, resume=c.resume,
                            ray_resources={"num_cpus": c.ray_num_cpus, "num_gpus": c.ray_num_gpus},
                            retry_errors=c.retry_errors, progress=c.progress, max_retries=c.unit_retries)
    print(Path(run_path, "summary.md").read_text())
    print(f"results: {run_path}")
    return summary
