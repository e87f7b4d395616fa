"""CALVIN protocol throughput with the scripted expert: chains/hour at 1 and 2 workers, parallel efficiency.

Runs ``benchmarks.calvin`` (the real runner: the first N public evaluation chains, the built-in
play-table, the privileged expert) through the local process executor with 1 and then 2 worker
processes, without cameras and with both cameras rendered, alternating the worker counts in every
repeat so machine load hits both alike. Wall time covers the whole run, process start-up included.

    parallel efficiency = (chains/hour with 2 workers) / (2 x chains/hour with 1 worker)

The records of all runs are compared (wall-clock fields aside) and chains that differ are listed. The load average is
printed before each run, and the CPU cores the workers actually obtained (their CPU time / wall time): on
a shared 2-core machine other jobs take cores away from the second worker.

    python bench/calvin_throughput.py [--chains 12] [--camera-chains 4] [--repeats 3]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from benchmarks.calvin import CalvinBenchmark, CalvinConfig
from benchmarks.core import ProcessExecutor, RunDir, comparable, run_benchmark
from benchmarks.core.policy_cli import PolicySpec


@dataclass
class Timing:
    workers: int
    chains: int
    wall_s: float
    load: float
    records: list
    cpu_s: float  # CPU seconds the worker processes used (user + system)

    @property
    def per_hour(self) -> float:
        return 3600 * self.chains / self.wall_s

    @property
    def cores(self) -> float:
        """Cores the workers actually got on average: below ``workers`` when other jobs compete."""
        return self.cpu_s / self.wall_s


def run_once(chains: int, cameras: str, workers: int, root: Path) -> Timing:
    """One protocol run of ``chains`` chains on ``workers`` processes (a fresh run folder each time)."""
    config = CalvinConfig(
        num_sequences=chains,
        cameras=cameras,
        output=str(root),
        run_name=f"w{workers}-{time.time_ns()}",
        progress=False,
    )
    bench = CalvinBenchmark(config, PolicySpec("expert", {}))
    load, cpu = os.getloadavg()[0], _children_cpu_s()
    start = time.perf_counter()
    run_benchmark(bench, bench.run_path, executor=ProcessExecutor(workers), progress=False)
    wall = time.perf_counter() - start
    return Timing(
        workers, chains, wall, load, RunDir(bench.run_path).merged_records(), _children_cpu_s() - cpu
    )


def _children_cpu_s() -> float:
    """CPU time of finished child processes (the executor joins its workers before returning)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def measure(chains: int, cameras: str, repeats: int, root: Path) -> dict[int, list[Timing]]:
    timings: dict[int, list[Timing]] = {1: [], 2: []}
    for r in range(repeats):
        for workers in (1, 2) if r % 2 == 0 else (2, 1):
            t = run_once(chains, cameras, workers, root)
            timings[workers].append(t)
            print(
                f"  cameras={cameras:<14} workers={workers} chains={chains} wall={t.wall_s:6.1f} s "
                f"({t.per_hour:6.0f} chains/h) cores obtained={t.cores:.2f} load before={t.load:.1f}",
                flush=True,
            )
    return timings


def differing_chains(timings: dict[int, list[Timing]]) -> list[str]:
    """Keys of chains whose records (wall-clock fields aside) are not the same in every run."""
    runs = [{r["key"]: comparable(r) for r in t.records} for t in timings[1] + timings[2]]
    return sorted(k for k in runs[0] if any(run[k] != runs[0][k] for run in runs[1:]))


def report(label: str, timings: dict[int, list[Timing]]) -> None:
    one = statistics.median(t.per_hour for t in timings[1])
    two = statistics.median(t.per_hour for t in timings[2])
    paired = [b.per_hour / (2 * a.per_hour) for a, b in zip(timings[1], timings[2])]
    avg_len = statistics.mean(r["result"]["extras"]["num_completed"] for r in timings[1][0].records)
    cores = [statistics.median(t.cores for t in timings[w]) for w in (1, 2)]
    print(
        f"| {label} | {timings[1][0].chains} | {one:.0f} | {two:.0f} | {two / one:.2f}x | "
        f"{statistics.median(paired):.2f} ({min(paired):.2f}-{max(paired):.2f}) | {cores[0]:.2f} / {cores[1]:.2f} | "
        f"{avg_len:.2f} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--chains", type=int, default=12, help="chains per run without cameras")
    parser.add_argument(
        "--camera-chains", type=int, default=4, help="chains per run with both cameras (0: skip)"
    )
    parser.add_argument("--repeats", type=int, default=3, help="runs per worker count, alternated")
    args = parser.parse_args()
    print(f"CALVIN expert throughput on {os.cpu_count()} cores, {args.repeats} repeats (medians)", flush=True)
    results = {}
    with tempfile.TemporaryDirectory(prefix="calvin-throughput-") as tmp:
        results["no cameras"] = measure(args.chains, "none", args.repeats, Path(tmp))
        if args.camera_chains:
            results["both cameras"] = measure(args.camera_chains, "static,gripper", args.repeats, Path(tmp))
    print(
        "\n| configuration | chains/run | chains/h, 1 worker | chains/h, 2 workers | speed-up | "
        "parallel efficiency (paired runs) | cores obtained, 1 / 2 workers | expert avg. len |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for label, timings in results.items():
        report(label, timings)
    for label, timings in results.items():
        differing = differing_chains(timings)
        print(
            f"{label}: records identical in every run: "
            + ("yes" if not differing else f"NO, differing chains: {differing}")
        )
    print(f"load average now: {' / '.join(f'{x:.1f}' for x in os.getloadavg())} (1 / 5 / 15 min)")


if __name__ == "__main__":
    main()
