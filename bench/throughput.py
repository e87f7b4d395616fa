"""Throughput of closed-loop VLA evaluation on CALVIN: env-side demand, model-side supply, and end-to-end
chains/hour of the batched server (``--serve batched``) against the current per-worker models, all measured
in one invocation so machine load hits every figure alike.

- **demand**: observations/s that ``N`` env shards produce with an instant policy (``random``, the static
  camera rendered as a VLA needs it): the most decisions/s the envs could ask of a model.
- **supply**: decisions/s the model gives at batch ``B`` (``VLAModel.predict`` on ``B`` observations).
- **end to end**: chains/hour of ``--policy vla`` with ``W`` worker processes, each holding its own model
  (the route before batching), and with ``W`` workers feeding one batched server; the records of the two
  are compared (they must be identical) and the ratio is printed.

Wall times cover whole runs, process start-up and model loading included. The load average is printed.

    python bench/throughput.py [--backbone tiny-qwen2.5-vl] [--shards 1,2] [--batches 1,2,4,8]
        [--chains 4] [--ep-len 60] [--execute-steps 5] [--out bench/results/throughput]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
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
    server); its wall seconds, env steps, model calls and records."""
    bench = CalvinBenchmark(config, spec)
    load, start = os.getloadavg()[0], time.perf_counter()
    with policy_serving(bench, spec, POLICY_DEFAULTS):
        run_benchmark(bench, bench.run_path, executor=make_executor(config.workers), progress=False)
    wall = time.perf_counter() - start
    records = RunDir(bench.run_path).merged_records()
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
    """Decisions/s of the model at each batch size (repeated for about ``seconds`` each)."""
    import torch

    from vla.model import VLAModel

    model = VLAModel.build(backbone, dtype=dtype or torch.float32).to(device).eval()
    image = np.random.default_rng(0).integers(0, 256, (224, 224, 3), dtype=np.uint8)
    rows = []
    for b in batches:
        observations, instructions = [[image]] * b, ["open the drawer"] * b
        model.predict(observations, instructions)  # warm-up
        calls, start = 0, time.perf_counter()
        while calls < 2 or time.perf_counter() - start < seconds:
            model.predict(observations, instructions)
            calls += 1
        wall = time.perf_counter() - start
        rows.append(
            {"batch": b, "decisions_per_s": round(b * calls / wall, 1), "load": round(os.getloadavg()[0], 2)}
        )
        print(f"supply  batch {b:2d}: {rows[-1]['decisions_per_s']:8.1f} decisions/s", flush=True)
    return rows


def end_to_end(args: argparse.Namespace, root: Path) -> dict[str, Any]:
    """Chains/hour of W workers with their own models vs W workers feeding one batched server."""
    spec = PolicySpec("vla", {"backbone": args.backbone, "execute_steps": args.execute_steps})
    w = args.workers
    own = timed_run(_config(root, "own", args.chains, args.ep_len, workers=w, cameras="auto"), spec)
    served_config = _config(
        root, "served", args.chains, args.ep_len, workers=w, cameras="auto", serve="batched"
    )
    served = timed_run(served_config, spec)
    rows = {"own_models": _brief(own), "batched_server": _brief(served)}
    for name, run in (("own_models", own), ("batched_server", served)):
        rows[name]["chains_per_hour"] = round(3600 * run["chains"] / run["wall_s"], 1)
        rows[name]["decisions_per_s"] = round(run["model_calls"] / run["wall_s"], 2)
        print(
            f"e2e     {name:15s} {w} workers: {rows[name]['chains_per_hour']:8.1f} chains/h  "
            f"{rows[name]['decisions_per_s']:6.2f} decisions/s  (load {run['load']})",
            flush=True,
        )
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
    parser.add_argument("--out", default=None, help="write OUT.json (and print the table for OUT.md)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        result = {
            "title": f"Throughput: batched VLA server vs per-worker models ({args.backbone}, CPU)",
            "date": time.strftime("%Y-%m-%d"),
            "machine": f"{os.cpu_count()} CPUs, shared; load average {os.getloadavg()[0]:.1f} at start",
            "source": "bench/throughput.py",
            "command": "python bench/throughput.py " + " ".join(argv if argv is not None else sys.argv[1:]),
            "backbone": args.backbone,
            "settings": {k: v for k, v in vars(args).items() if k != "out"},
            "cpus": os.cpu_count(),
            "load_at_start": round(os.getloadavg()[0], 2),
            "demand": demand([int(s) for s in args.shards.split(",")], args.chains, args.ep_len, root),
            "supply": supply(args.backbone, [int(b) for b in args.batches.split(",")], args.seconds),
            "end_to_end": end_to_end(args, root),
        }
    if args.out:
        Path(args.out + ".json").write_text(json.dumps(result, indent=2) + "\n")
    return result


if __name__ == "__main__":
    main()
