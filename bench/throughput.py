"""Throughput of closed-loop VLA evaluation on CALVIN: env-side demand, model-side supply, and end-to-end
chains/hour of the batched server (``--serve batched``) against the current per-worker models, all measured
in one invocation so machine load hits every figure alike.

- **demand**: observations/s that ``N`` env shards produce with an instant policy (``random``, the static
  camera rendered as a VLA needs it): the most decisions/s the envs could ask of a model.
- **supply**: decisions/s the model gives at batch ``B`` (``VLAModel.predict`` on ``B`` observations).
- **end to end**: chains/hour of ``--policy vla`` with ``W`` worker processes, each holding its own model
  (the route before batching), and with ``W`` workers feeding one batched server; the records of the two
  are compared (they must be identical) and the ratio is printed.

Wall times cover whole runs, process start-up and model loading included. The load average is printed,
and so is how full the server's batches were (a histogram of batch sizes and the mean wait).

``--autotune`` picks the shard count and ``--max-batch`` for this machine from the measured points
(:func:`choose_point`: the point where demand meets supply, shards bounded by the CPU cores, batches by the
memory measured at each batch size), prints the choice and the numbers it rests on, writes it into the JSON
and (unless ``--no-run``) runs end to end with it.

    python bench/throughput.py [--backbone tiny-qwen2.5-vl] [--shards 1,2] [--batches 1,2,4,8]
        [--chains 4] [--ep-len 60] [--execute-steps 5] [--device cpu] [--dtype auto]
        [--autotune [--no-run]] [--out bench/results/throughput]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from benchmarks.calvin import CalvinBenchmark, CalvinConfig
from benchmarks.calvin.config import POLICY_DEFAULTS
from benchmarks.core import RunDir, comparable, run_benchmark
from benchmarks.core.executors import make_executor
from benchmarks.core.policy_cli import PolicySpec
from benchmarks.core.policy_server import policy_serving

if TYPE_CHECKING:
    import torch


def timed_run(config: CalvinConfig, spec: PolicySpec) -> dict[str, Any]:
    """One CALVIN run (a fresh run folder; with ``config.serve == "batched"`` around the batched policy
    server); its wall seconds, env steps, model calls, records and the server's batch statistics."""
    bench = CalvinBenchmark(config, spec)
    load, start = os.getloadavg()[0], time.perf_counter()
    with policy_serving(bench, spec, POLICY_DEFAULTS):
        run_benchmark(bench, bench.run_path, executor=make_executor(config.workers), progress=False)
    wall = time.perf_counter() - start
    out = RunDir(bench.run_path)
    stats = json.loads(out.summary_json.read_text()).get("serving") if out.summary_json.is_file() else None
    records = out.merged_records()
    ok = [r for r in records if r["status"] == "ok"]
    return {
        "workers": config.workers,
        "chains": len(records),
        "errored": len(records) - len(ok),
        "wall_s": round(wall, 2),
        "load": round(load, 2),
        "steps": sum(r["result"]["steps"] for r in ok),
        "model_calls": sum(r["result"]["policy_stats"].get("model_calls", 0) for r in ok),
        "records": [comparable(r) for r in records],
        **({"serving": stats} if stats is not None else {}),
    }


def demand(shards: list[int], chains: int, ep_len: int, root: Path) -> list[dict[str, Any]]:
    """Observations/s from each shard count with an instant policy (the static camera rendered)."""
    rows = []
    for n in shards:
        config = _config(root, f"demand-{n}", chains, ep_len, workers=n, cameras="static")
        run = timed_run(config, PolicySpec("random", {}))
        rows.append({"shards": n, "obs_per_s": round(run["steps"] / run["wall_s"], 1), **_brief(run)})
        print(f"demand  {n} shard(s): {rows[-1]['obs_per_s']:8.1f} obs/s  (load {run['load']})", flush=True)
    return rows


def supply(
    backbone: str, batches: list[int], seconds: float, device: str = "cpu", dtype: torch.dtype | None = None
) -> list[dict[str, Any]]:
    """Decisions/s of the model at each batch size (repeated for about ``seconds`` each), and the peak
    memory (GiB) the model took at that batch (the process's peak RSS on CPU, allocated memory on CUDA)."""
    import torch

    from vla.model import VLAModel

    model = VLAModel.build(backbone, dtype=dtype or torch.float32).to(device).eval()
    image = np.random.default_rng(0).integers(0, 256, (224, 224, 3), dtype=np.uint8)
    rows = []
    for b in sorted(batches):
        observations, instructions = [[image]] * b, ["open the drawer"] * b
        reset_peak_memory(device)
        model.predict(observations, instructions)  # warm-up
        calls, start = 0, time.perf_counter()
        while calls < 2 or time.perf_counter() - start < seconds:
            model.predict(observations, instructions)
            calls += 1
        wall = time.perf_counter() - start
        rows.append(
            {
                "batch": b,
                "decisions_per_s": round(b * calls / wall, 1),
                "memory_gib": peak_memory_gib(device),
                "load": round(os.getloadavg()[0], 2),
            }
        )
        print(
            f"supply  batch {b:2d}: {rows[-1]['decisions_per_s']:8.1f} decisions/s  "
            f"(peak memory {rows[-1]['memory_gib']} GiB)",
            flush=True,
        )
    return rows


# ------------------------------------------------------------------------------------------ memory

GIB = 2**30
HEADROOM = 0.9  # the share of the free memory a batch may take: the envs and the allocator need the rest


def reset_peak_memory(device: str) -> None:
    """Start a new peak: CUDA's allocator counter, or on Linux the process's peak RSS (``clear_refs`` 5)."""
    import torch

    if device.startswith("cuda"):
        torch.cuda.reset_peak_memory_stats(device)
        return
    # not Linux (or not allowed): the peak keeps rising from the earlier, smaller batches
    with contextlib.suppress(OSError):
        Path("/proc/self/clear_refs").write_text("5")


def peak_memory_gib(device: str) -> float | None:
    """The peak since :func:`reset_peak_memory` in GiB (``None`` where the platform does not say)."""
    import torch

    if device.startswith("cuda"):
        return round(torch.cuda.max_memory_allocated(device) / GIB, 3)
    kib = _proc_kib("/proc/self/status", "VmHWM")
    return None if kib is None else round(kib * 1024 / GIB, 3)


def memory_budget_gib(device: str) -> float | None:
    """What a batch may take: :data:`HEADROOM` of the memory free now plus what the model already holds
    (CUDA: free + reserved; CPU: MemAvailable + this process's RSS)."""
    import torch

    if device.startswith("cuda"):
        free, _ = torch.cuda.mem_get_info(device)
        return round(HEADROOM * (free + torch.cuda.memory_reserved(device)) / GIB, 3)
    available, rss = _proc_kib("/proc/meminfo", "MemAvailable"), _proc_kib("/proc/self/status", "VmRSS")
    if available is None or rss is None:
        return None
    return round(HEADROOM * (available + rss) * 1024 / GIB, 3)


def _proc_kib(path: str, field: str) -> int | None:
    try:
        for line in Path(path).read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return None


# ------------------------------------------------------------------------------------------ autotune

NEAR_BEST = 0.95  # a shard count within 5 % of the best rate is as good: measurements are that noisy


@dataclass(frozen=True)
class Choice:
    """The set-up :func:`choose_point` picks: shard count, ``--max-batch``, the rate it expects
    (decisions/s, the lesser of demand and supply there), what bounds it, and why in two lines."""

    shards: int
    max_batch: int
    rate: float
    bound: str  # "model", "env" or "memory"
    why: str


def choose_point(
    demand: Sequence[dict[str, Any]],
    supply: Sequence[dict[str, Any]],
    cpus: int,
    memory_budget_gib: float | None = None,
) -> Choice:
    """The shard count and batch where env-side demand meets model-side supply, from measured points only.

    Shards are bounded by ``cpus`` (each shard is a process stepping its simulator) and batches by
    ``memory_budget_gib`` (a batch whose measured peak memory exceeds it is out). A server batch holds at
    most one observation per shard, so with ``n`` shards the model runs the measured batch ``<= n`` it
    answers fastest at; ``n`` shards then get ``min(demand(n), supply(batch))`` decisions/s. The fewest
    shards within :data:`NEAR_BEST` of the best rate win (more shards only cost cores and memory)."""
    shards = sorted((d for d in demand if d["shards"] <= cpus), key=lambda d: d["shards"])
    shards = shards or sorted(demand, key=lambda d: d["shards"])[:1]
    fits = [s for s in supply if _fits(s, memory_budget_gib)]
    if not fits:
        smallest = min(supply, key=lambda s: s["batch"])
        raise ValueError(
            f"autotune: even batch {smallest['batch']} needs {smallest['memory_gib']} GiB, more than the "
            f"{memory_budget_gib} GiB budget; use a smaller backbone or a device with more memory"
        )
    options = _options(shards, fits)
    if not options:
        raise ValueError(f"autotune: no measured batch is <= any measured shard count ({_counts(shards)})")
    best = max(p["rate"] for p in options)
    pick = next(p for p in options if p["rate"] >= NEAR_BEST * best)
    if max(p["rate"] for p in _options(shards, supply)) > best:  # more memory would have gone faster
        pick["bound"] = "memory"
    why = _why(pick, options, demand, supply, cpus, memory_budget_gib)
    return Choice(pick["shards"], pick["batch"], pick["rate"], pick["bound"], why)


def _options(shards: Sequence[dict[str, Any]], batches: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each shard count with the measured batch ``<=`` it that the model answers fastest at (ties: the
    smaller batch), its expected rate and which side bounds it."""
    options = []
    for d in shards:
        usable = [s for s in batches if s["batch"] <= d["shards"]]
        if not usable:
            continue
        s = max(usable, key=lambda r: (r["decisions_per_s"], -r["batch"]))
        bound = "env" if d["obs_per_s"] < s["decisions_per_s"] else "model"
        rate = min(d["obs_per_s"], s["decisions_per_s"])
        options.append(
            {
                "shards": d["shards"],
                "batch": s["batch"],
                "rate": rate,
                "bound": bound,
                "demand": d,
                "supply": s,
            }
        )
    return options


def _fits(row: dict[str, Any], budget: float | None) -> bool:
    return budget is None or row.get("memory_gib") is None or row["memory_gib"] <= budget


def _why(
    pick: dict[str, Any],
    options: Sequence[dict[str, Any]],
    demand: Sequence[dict[str, Any]],
    supply: Sequence[dict[str, Any]],
    cpus: int,
    budget: float | None,
) -> str:
    """Two lines: the choice with the two measured rates it rests on, then what ruled out the rest."""
    d, s = pick["demand"], pick["supply"]
    head = {
        "model": "model-bound: the envs ask more than the model answers",
        "env": "env-bound: the model answers more than the envs ask",
        "memory": "memory-bound: a larger batch would answer faster but does not fit",
    }[pick["bound"]]
    first = (
        f"autotune: {pick['shards']} shard(s), --max-batch {pick['batch']} ({head}): demand "
        f"{d['obs_per_s']} obs/s at {d['shards']} shard(s), supply {s['decisions_per_s']} decisions/s at "
        f"batch {s['batch']}; expect about {pick['rate']:.1f} decisions/s"
    )
    others = [f"{p['shards']} shard(s) {p['rate']:.1f}/s" for p in options if p is not pick]
    limits = [f"other shard counts: {', '.join(others)}"] if others else []
    if any(r["shards"] > cpus for r in demand):
        limits.append(f"shards <= {cpus} CPU cores ({_counts(demand)} measured)")
    unfit = [r for r in supply if not _fits(r, budget)]
    if unfit:
        over = ", ".join(f"batch {r['batch']} {r['memory_gib']} GiB" for r in unfit)
        limits.append(f"memory budget {budget} GiB rules out {over}")
    return first + "\n  " + ("; ".join(limits) or "only one measured point")


def _counts(rows: Sequence[dict[str, Any]]) -> str:
    return ",".join(str(r["shards"]) for r in rows)


def autotune(result: dict[str, Any], device: str = "cpu") -> Choice:
    """:func:`choose_point` on ``result``'s measurements, printed and written into ``result["autotune"]``."""
    budget = memory_budget_gib(device)
    choice = choose_point(result["demand"], result["supply"], int(result["cpus"]), budget)
    result["autotune"] = {**asdict(choice), "cpus": result["cpus"], "memory_budget_gib": budget}
    print(choice.why, flush=True)
    return choice


# ------------------------------------------------------------------------------------------ end to end


def end_to_end(args: argparse.Namespace, root: Path, workers: int, max_batch: int) -> dict[str, Any]:
    """Chains/hour of ``workers`` workers with their own models (the route before batching) vs as many
    workers feeding one batched server of ``max_batch``; the server's batch statistics are printed."""
    options = {"backbone": args.backbone, "execute_steps": args.execute_steps}
    spec = PolicySpec("vla", {**options, "device": args.device, "dtype": args.dtype})
    own = timed_run(_config(root, "own", args.chains, args.ep_len, workers=workers, cameras="auto"), spec)
    served_config = _config(
        root,
        "served",
        args.chains,
        args.ep_len,
        workers=workers,
        cameras="auto",
        serve="batched",
        max_batch=max_batch,
    )
    served = timed_run(served_config, spec)
    rows: dict[str, Any] = {"own_models": _brief(own), "batched_server": _brief(served)}
    for name, run in (("own_models", own), ("batched_server", served)):
        rows[name]["chains_per_hour"] = round(3600 * run["chains"] / run["wall_s"], 1)
        rows[name]["decisions_per_s"] = round(run["model_calls"] / run["wall_s"], 2)
        print(
            f"e2e     {name:15s} {workers} workers: {rows[name]['chains_per_hour']:8.1f} chains/h  "
            f"{rows[name]['decisions_per_s']:6.2f} decisions/s  (load {run['load']})",
            flush=True,
        )
    if "serving" not in served:
        print("e2e     batched server: no statistics (it did not answer)")
    rows["speedup"] = round(
        rows["batched_server"]["chains_per_hour"] / rows["own_models"]["chains_per_hour"], 3
    )
    rows["records_identical"] = own["records"] == served["records"]
    print(
        f"e2e     speed-up batched/own: {rows['speedup']:.2f}x; records identical: {rows['records_identical']}"
    )
    return rows


def _config(root: Path, name: str, chains: int, ep_len: int, **options: Any) -> CalvinConfig:
    return CalvinConfig(
        num_sequences=chains,
        ep_len=ep_len,
        output=str(root),
        run_name=f"{name}-{time.time_ns()}",
        progress=False,
        allow_errors=True,
        **options,
    )


def _brief(run: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in run.items() if k != "records"}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = _parser().parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        result = {
            "title": f"Throughput: batched VLA server vs per-worker models ({args.backbone}, {args.device})",
            "date": time.strftime("%Y-%m-%d"),
            "machine": f"{os.cpu_count()} CPUs, shared; load average {os.getloadavg()[0]:.1f} at start",
            "source": "bench/throughput.py",
            "command": "python bench/throughput.py " + " ".join(argv if argv is not None else sys.argv[1:]),
            "backbone": args.backbone,
            "settings": {k: v for k, v in vars(args).items() if k != "out"},
            "cpus": os.cpu_count(),
            "load_at_start": round(os.getloadavg()[0], 2),
            "demand": demand(_ints(args.shards), args.chains, args.ep_len, root),
            "supply": supply(args.backbone, _ints(args.batches), args.seconds, args.device, _dtype(args)),
        }
        workers, max_batch = args.workers, args.workers
        if args.autotune:
            choice = autotune(result, args.device)
            workers, max_batch = choice.shards, choice.max_batch
        if not args.no_run:
            result["end_to_end"] = end_to_end(args, root, workers, max_batch)
    if args.out:
        Path(args.out + ".json").write_text(json.dumps(result, indent=2) + "\n")
    print(markdown_table(result))
    return result


def markdown_table(result: dict[str, Any]) -> str:
    """The measurements as the Markdown table of ``bench/results/throughput.md``."""
    lines = ["| side | setting | rate |", "|---|---|---|"]
    for d in result["demand"]:
        lines.append(f"| env demand (instant policy) | {d['shards']} shard(s) | {d['obs_per_s']} obs/s |")
    for s in result["supply"]:
        memory = f", peak {s['memory_gib']} GiB" if s.get("memory_gib") is not None else ""
        lines.append(f"| model supply | batch {s['batch']} | {s['decisions_per_s']} decisions/s{memory} |")
    if "autotune" in result:
        a = result["autotune"]
        lines.append(
            f"| autotune | {a['shards']} shard(s), --max-batch {a['max_batch']} | {a['rate']} decisions/s expected ({a['bound']}-bound) |"
        )
    for name, label in (
        ("own_models", "each worker its own model"),
        ("batched_server", "one batched server"),
    ):
        run = result.get("end_to_end", {}).get(name)
        if run:
            lines.append(
                f"| end to end, {label} | {run['workers']} workers, {run['chains']} chains | "
                f"{run['chains_per_hour']} chains/h ({run['wall_s']} s) |"
            )
    return "\n".join(lines)


def _dtype(args: argparse.Namespace) -> torch.dtype:
    from vla.backbones import torch_dtype

    return torch_dtype(args.dtype, args.device)


def _ints(text: str) -> list[int]:
    return [int(s) for s in text.split(",")]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--backbone", default="tiny-qwen2.5-vl")
    parser.add_argument("--shards", default="1,2", help="env shard counts for the demand side")
    parser.add_argument("--batches", default="1,2,4,8", help="batch sizes for the supply side")
    parser.add_argument("--workers", type=int, default=2, help="worker processes end to end")
    parser.add_argument("--chains", type=int, default=4)
    parser.add_argument("--ep-len", type=int, default=60, help="steps per subtask (the protocol: 360)")
    parser.add_argument("--execute-steps", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=5.0, help="seconds per supply measurement")
    parser.add_argument("--device", default="cpu", help="where the model runs: cpu, cuda, cuda:N")
    parser.add_argument(
        "--dtype",
        default="auto",
        choices=["auto", "float32", "bfloat16", "float16"],
        help="the model's dtype",
    )
    parser.add_argument(
        "--autotune",
        action="store_true",
        help="pick shards and --max-batch from the measurements (printed with why); end to end uses them",
    )
    parser.add_argument(
        "--no-run", action="store_true", help="measure (and autotune) only: no end-to-end runs"
    )
    parser.add_argument("--out", default=None, help="write OUT.json (and print the table for OUT.md)")
    return parser


if __name__ == "__main__":
    main()
