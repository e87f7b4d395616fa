"""Model-in-the-loop throughput: N navigation workers asking one tiny VLM, with and without batching.

Every mode runs the same EB-navigation episodes (``benchmarks.embodied``'s own worker: env + EB agent
loop, ``--policy mllm``) on ``--workers`` simulator processes; only where the model runs changes:

- ``in-process``: each worker loads its own copy of the model (transformers, one thread), no server;
- ``served, max-batch 1``: one ``python -m policies.serve`` process answers every worker, one request
  per forward pass;
- ``served, max-batch 8``: the same server batching concurrent requests (``--max-wait-ms``).

The tiny Qwen2.5-VL (``policies.tiny``, random weights) writes no valid plan, so every step is one model
call (a *decision*) followed by the recorded no-op fallback. Workers build their env and policy, then
start together after one warm-up call; the clock covers the episodes only (start-up excluded). Modes alternate in every round;
medians over rounds, ratios from the same round. Records must match across modes (greedy decoding,
batched = unbatched), which is checked.

    python bench/model_in_loop.py [--workers 4] [--episodes 2] [--steps 10] [--rounds 3]
    python bench/model_in_loop.py --policy-args "--n-examples 0 --no-chat-history"   # short prompts
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

os.environ.setdefault("MUJOCO_GL", "egl")
os.environ.setdefault("LP_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")  # one torch thread per process: workers and server alike
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
ROOT = Path(__file__).resolve().parents[1]

from benchmarks.core.policy_cli import parse_benchmark_args  # noqa: E402
from benchmarks.embodied import FAMILIES, EmbodiedBenchmark, EmbodiedConfig, EmbodiedWorker  # noqa: E402


def benchmark_args(model: str, args: argparse.Namespace, api_base: str | None) -> list[str]:
    """The ``python -m benchmarks.embodied nav`` flags of one mode (the server mode adds ``--api-base``)."""
    argv = [
        "--policy",
        "mllm",
        "--model",
        model,
        "--no-cache",
        "--max-new-tokens",
        str(args.max_new_tokens),
        "--subset",
        "base",
        "--episodes",
        str(args.workers * args.episodes),
        "--image-size",
        str(args.size),
        "--env-kwargs",
        json.dumps({"max_steps": args.steps}),
        "--no-progress",
        *args.policy_args.split(),
    ]
    return argv + (["--api-base", api_base] if api_base else [])


def _worker(
    config: EmbodiedConfig, spec: object, units: list, run_path: str, barrier: object, out: object
) -> None:
    """A simulator process: build env + policy, wait for the others, run its episodes, report."""
    worker = EmbodiedWorker(config, spec, run_path)
    _warm_up(worker.policy.backend, config.image_size or 224)
    barrier.wait()
    records = []
    for unit in units:
        result = worker.run(unit)
        stats = result["policy_stats"]
        records.append(
            {
                "key": unit.key,
                "steps": result["steps"],
                "calls": stats["model_calls"],
                "prompt_tokens": stats["prompt_tokens"],
                "completion_tokens": stats["completion_tokens"],
            }
        )
    out.put(records)
    worker.close()


def _warm_up(backend: object, size: int) -> None:
    """One call before the clock starts: a model's (or server's) first forward pass is much slower."""
    import numpy as np

    image = np.zeros((size, size, 3), np.uint8)
    backend.generate(
        [
            {
                "role": "user",
                "content": [{"type": "image", "image": image}, {"type": "text", "text": "warm up"}],
            }
        ]
    )


def run_mode(
    model: str, args: argparse.Namespace, api_base: str | None, tmp: Path
) -> tuple[float, list[dict]]:
    """Seconds for all workers to finish their episodes, and the episode records (sorted by key)."""
    config, spec = parse_benchmark_args(
        EmbodiedConfig,
        benchmark_args(model, args, api_base),
        policy_defaults={"mllm": FAMILIES["nav"].mllm_defaults},
    )
    config.family = "nav"
    units = EmbodiedBenchmark(config, spec).units()
    ctx = mp.get_context("spawn")
    barrier, out = ctx.Barrier(args.workers + 1), ctx.Queue()
    processes = [
        ctx.Process(target=_worker, args=(config, spec, units[i :: args.workers], str(tmp), barrier, out))
        for i in range(args.workers)
    ]
    for p in processes:
        p.start()
    barrier.wait(timeout=600)
    start = time.perf_counter()
    records = [r for _ in processes for r in out.get(timeout=1800)]
    seconds = time.perf_counter() - start
    for p in processes:
        p.join(timeout=60)
    return seconds, sorted(records, key=lambda r: r["key"])


class Server:
    """``python -m policies.serve`` in its own process on a free loopback port."""

    def __init__(self, model: str, max_batch: int, max_wait_ms: float, threads: int) -> None:
        command = [
            sys.executable,
            "-m",
            "policies.serve",
            "--model",
            model,
            "--port",
            "0",
            "--device",
            "cpu",
            "--max-batch",
            str(max_batch),
            "--max-wait-ms",
            str(max_wait_ms),
            "--threads",
            str(threads),
        ]
        self.process = subprocess.Popen(
            command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
        )
        line = self.process.stdout.readline()
        if " at http" not in line:
            self.process.kill()
            raise RuntimeError(f"the model server did not start: {line!r}")
        self.url = line.split(" at ", 1)[1].split()[0]

    def stats(self) -> dict:
        with urllib.request.urlopen(self.url.removesuffix("/v1") + "/stats", timeout=10) as response:
            return json.loads(response.read())

    def stop(self) -> None:
        self.process.send_signal(2)  # SIGINT: the server stops cleanly
        self.process.wait(timeout=30)


def measure(model: str, args: argparse.Namespace, mode: str, tmp: Path) -> dict:
    if mode == "in-process":
        seconds, records = run_mode(model, args, None, tmp)
        return {"seconds": seconds, "records": records, "batch": None}
    server = Server(
        model, 1 if mode.endswith("max-batch 1") else args.max_batch, args.max_wait_ms, args.server_threads
    )
    try:
        seconds, records = run_mode(model, args, server.url, tmp)
        stats = server.stats()
    finally:
        server.stop()
    return {"seconds": seconds, "records": records, "batch": stats["mean_batch_size"]}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--workers", type=int, default=4, help="simulator processes")
    parser.add_argument("--episodes", type=int, default=2, help="episodes per worker")
    parser.add_argument(
        "--steps", type=int, default=10, help="env step budget per episode (one decision per step)"
    )
    parser.add_argument("--size", type=int, default=224, help="camera image size (EB navigation default)")
    parser.add_argument("--max-new-tokens", type=int, default=16, help="tokens per decision")
    parser.add_argument("--max-batch", type=int, default=8)
    parser.add_argument("--max-wait-ms", type=float, default=20.0)
    parser.add_argument("--server-threads", type=int, default=1, help="torch threads of the server")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--policy-args", default="", help="extra --policy mllm flags, e.g. '--n-examples 0 --no-chat-history'"
    )
    args = parser.parse_args()
    from policies.tiny import cached_tiny_vlm

    model = str(cached_tiny_vlm("qwen2_5_vl", 0, Path(tempfile.gettempdir()) / "spatial_arena_bench_tiny"))
    modes = ["in-process", "served, max-batch 1", f"served, max-batch {args.max_batch}"]
    results: dict[str, list[dict]] = {m: [] for m in modes}
    with tempfile.TemporaryDirectory(prefix="model-in-loop-") as tmp:
        for r in range(args.rounds):
            for mode in modes[r % 3 :] + modes[: r % 3]:
                load = os.getloadavg()[0]
                results[mode].append(measure(model, args, mode, Path(tmp)))
                m = results[mode][-1]
                decisions = sum(x["calls"] for x in m["records"])
                print(
                    f"round {r + 1} {mode:<22} {decisions / m['seconds']:6.2f} decisions/s "
                    f"({decisions} in {m['seconds']:.1f} s, load before {load:.1f})",
                    flush=True,
                )
    report(args, results, modes)


def report(args: argparse.Namespace, results: dict[str, list[dict]], modes: list[str]) -> None:
    reference = results[modes[0]][0]["records"]
    same = all(m["records"] == reference for runs in results.values() for m in runs)
    rate = {
        mode: [sum(x["calls"] for x in m["records"]) / m["seconds"] for m in runs]
        for mode, runs in results.items()
    }
    base = rate[modes[1]]
    tokens = statistics.mean(x["prompt_tokens"] / x["calls"] for x in reference)
    print(
        f"\n{args.workers} EB-navigation workers, {args.size}x{args.size} RGB, tiny Qwen2.5-VL, policy flags "
        f"{args.policy_args or '(EB defaults)'}: {tokens:.0f} prompt + {args.max_new_tokens} new tokens per decision; "
        f"{args.rounds} rounds (medians), {os.cpu_count()} cores, load average now {os.getloadavg()[0]:.1f}"
    )
    print("| model placement | decisions/s | vs served, max-batch 1 | mean batch size |")
    print("|---|---|---|---|")
    for mode in modes:
        ratios = [a / b for a, b in zip(rate[mode], base)]
        batch = [m["batch"] for m in results[mode] if m["batch"] is not None]
        shown = f"{statistics.median(batch):.2f}" if batch else "-"
        print(
            f"| {mode} | {statistics.median(rate[mode]):.2f} | {statistics.median(ratios):.2f}x | {shown} |"
        )
    print(
        f"records identical across modes: {'yes' if same else 'NO'} "
        f"({len(reference)} episodes, {sum(x['calls'] for x in reference)} decisions each)"
    )


if __name__ == "__main__":
    main()
