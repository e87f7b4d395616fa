"""Reset time of the built-in CALVIN play-table, and proof that its results do not depend on chain order.

Two parts, one run:

- **time**: median and mean milliseconds of ``env.reset`` without cameras over ``--resets`` resets to the
  initial states of the first 10 evaluation chains, for the reused world (what ``reset`` does) and for a
  world rebuilt before each reset (``PlayTableSim.rebuild``: ``resetSimulation`` and a reload of the
  cached URDFs, which is what ``reset`` did before) and, with ``--baseline DIR`` (a checkout of an earlier
  commit, e.g. ``git worktree add /tmp/base 3cc941a``), for that checkout's own ``env.reset``, timed in a
  subprocess in the same run;
- **order**: the scripted expert on the first ``--chains`` evaluation chains, each in a freshly built env
  (the reference), then in one reused env forward, reversed, and shuffled after ``--warmup`` other chains.
  A chain's record (every subtask's success and step count) and the SHA-256 of every observation's
  ``robot_obs`` and ``scene_obs`` bytes along it must equal the reference's, bit for bit.

It prints a table per part and ends with one JSON line (``--json`` also writes it to a file); it exits 1
when any chain differs.

    python bench/calvin_reset.py --resets 200 --chains 10 [--baseline /tmp/base] [--calvin-assets PATH]

``--calvin-assets`` runs both parts on the table built from CALVIN's own URDFs and meshes instead.
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import os
import random
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from benchmarks.calvin import evaluation_chains
from benchmarks.calvin.chain import run_chain
from benchmarks.core.manifest import machine_line
from envs.calvin.env import PlayTableEnv
from envs.calvin.sequences import initial_env_state
from policies.experts.calvin import ScriptedExpert

Start = tuple[np.ndarray, np.ndarray]


def reset_times(env: PlayTableEnv, starts: list[Start], resets: int, rebuild: bool) -> list[float]:
    """Milliseconds of each of ``resets`` resets (cycling over ``starts``), each after a rebuild if asked."""
    times = []
    for i in range(resets):
        robot_obs, scene_obs = starts[i % len(starts)]
        t = time.perf_counter()
        if rebuild:
            env.sim.rebuild()
        env.reset(options={"robot_obs": robot_obs, "scene_obs": scene_obs})
        times.append(1000 * (time.perf_counter() - t))
    return times


_BASELINE_TIMER = """
import json, sys, time
from benchmarks.calvin import evaluation_chains
from envs.calvin.env import PlayTableEnv
from envs.calvin.sequences import initial_env_state
starts = [initial_env_state(state) for state, _ in evaluation_chains(10)]
env, times = PlayTableEnv(cameras=(), calvin_assets=sys.argv[2] or None), []
for i in range(10 + int(sys.argv[1])):
    robot_obs, scene_obs = starts[i % len(starts)]
    t = time.perf_counter()
    env.reset(options={"robot_obs": robot_obs, "scene_obs": scene_obs})
    times.append(1000 * (time.perf_counter() - t))
print(json.dumps(times[10:]))
"""


def baseline_times(checkout: str, resets: int, calvin_assets: str | None) -> list[float]:
    """``env.reset`` milliseconds of another checkout of this project (its own code, in a subprocess)."""
    command = [sys.executable, "-c", _BASELINE_TIMER, str(resets), calvin_assets or ""]
    done = subprocess.run(
        command,
        cwd=checkout,
        check=True,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": checkout},
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def chain_fingerprint(env: PlayTableEnv, chain: tuple[dict, tuple[str, ...]]) -> dict[str, Any]:
    """The expert's record of one chain (timings dropped) and the SHA-256 of its observations."""
    digest = hashlib.sha256()

    def on_step(obs: dict[str, Any], _caption: list[str]) -> None:
        digest.update(obs["robot_obs"].tobytes())
        digest.update(obs["scene_obs"].tobytes())

    policy = ScriptedExpert()
    policy.bind(env)
    initial_state, tasks = chain
    robot_obs, scene_obs = initial_env_state(initial_state)
    record = run_chain(env, policy, robot_obs, scene_obs, list(tasks), list(tasks), on_step=on_step)
    steps = [(s["extras"]["task"], s["success"], s["steps"]) for s in record["extras"]["subtasks"]]
    return {"completed": record["extras"]["num_completed"], "subtasks": steps, "sha256": digest.hexdigest()}


def run_order(
    order: list[int], chains: list[tuple[dict, tuple[str, ...]]], fresh: Callable[[], PlayTableEnv]
) -> dict[int, dict[str, Any]]:
    """Fingerprints of the chains ``order`` names, all in one env (built once)."""
    env = fresh()
    prints = {i: chain_fingerprint(env, chains[i]) for i in order}
    env.close()
    return prints


def time_resets(args: argparse.Namespace, fresh: Callable[[], PlayTableEnv]) -> dict[str, Any]:
    """Median and mean reset times of a reused and a rebuilt world (and ``--baseline``'s), printed as a table."""
    out: dict[str, Any] = {}
    starts = [initial_env_state(state) for state, _ in evaluation_chains(10)]
    env = fresh()
    reset_times(env, starts, 10, rebuild=False)  # warm caches before timing either variant
    timed = {
        "reused": reset_times(env, starts, args.resets, rebuild=False),
        "rebuilt": reset_times(env, starts, args.resets, rebuild=True),
    }
    env.close()
    if args.baseline:
        timed["baseline"] = baseline_times(args.baseline, args.resets, args.calvin_assets)
        out["baseline"] = args.baseline
    print(f"## env.reset without cameras, {args.resets} resets each (ms)\n")
    print("| world | median | mean | max |\n|---|---|---|---|")
    for name, times in timed.items():
        median, mean = statistics.median(times), statistics.fmean(times)
        print(f"| {name} | {median:.3f} | {mean:.3f} | {max(times):.3f} |")
        out[f"reset_ms_median_{name}"], out[f"reset_ms_mean_{name}"] = round(median, 4), round(mean, 4)
    return out


def check_orders(args: argparse.Namespace, fresh: Callable[[], PlayTableEnv]) -> dict[str, Any]:
    """The expert's first ``--chains`` chains in one reused env, in three orders, against a fresh env each."""
    chains = evaluation_chains(args.chains + args.warmup)
    indices = list(range(args.chains))
    reference: dict[int, dict[str, Any]] = {}
    for i in indices:
        reference.update(run_order([i], chains, fresh))
    warmup = list(range(args.chains, args.chains + args.warmup))
    orders = {
        "forward": indices,
        "reversed": indices[::-1],
        "warm-up then shuffled": warmup + random.Random(0).sample(indices, len(indices)),
    }
    print(f"\n## Expert on the first {args.chains} chains: one reused env vs a fresh env per chain\n")
    print("| order | chains run | chains differing from fresh |\n|---|---|---|")
    differing: dict[str, list[int]] = {}
    for name, order in orders.items():
        prints = run_order(order, chains, fresh)
        differing[name] = [i for i in indices if prints[i] != reference[i]]
        print(f"| {name} | {order} | {differing[name] or 'none'} |")
    return {
        "chains": args.chains,
        "warmup_chains": args.warmup,
        "orders": orders,
        "chains_differing": differing,
        "reference_completed": [reference[i]["completed"] for i in indices],
        "reference_sha256": [reference[i]["sha256"][:16] for i in indices],
    }


def title(calvin_assets: str | None) -> str:
    """The results page's title: a run on CALVIN's own meshes says so (the results pages' titles are unique)."""
    meshes = " with CALVIN's meshes (--calvin-assets)" if calvin_assets else ""
    return f"CALVIN built-in play-table{meshes}: reset time and chain-order independence"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--resets", type=int, default=200, help="timed resets per variant (median reported)")
    parser.add_argument(
        "--chains", type=int, default=10, help="first N evaluation chains for the order check"
    )
    parser.add_argument("--warmup", type=int, default=3, help="other chains run before the shuffled order")
    parser.add_argument("--baseline", default="", help="a checkout of an earlier commit to time as well")
    parser.add_argument("--calvin-assets", default=None, help="CALVIN's data/ folder or calvin_env checkout")
    parser.add_argument("--machine", default=machine_line(), help="machine description for the JSON line")
    parser.add_argument("--json", default="", help="also write the JSON line to this file")
    args = parser.parse_args()
    if args.resets < 1 or args.chains < 1 or args.warmup < 0:
        parser.error("--resets and --chains must be >= 1 and --warmup >= 0")
    out: dict[str, Any] = {
        "title": title(args.calvin_assets),
        "source": "bench/calvin_reset.py",
        "command": " ".join(["python", *sys.argv]),
        "date": datetime.date.today().isoformat(),
        "machine": args.machine,
        "calvin_assets": args.calvin_assets,
    }
    fresh = lambda: PlayTableEnv(cameras=(), calvin_assets=args.calvin_assets)  # noqa: E731
    out.update(time_resets(args, fresh))
    out.update(check_orders(args, fresh))
    out["metrics"] = {k: out[k] for k in ("reset_ms_median_reused", "reset_ms_median_rebuilt")}
    out["metrics"]["chains_differing"] = sum(len(v) for v in out["chains_differing"].values())
    line = json.dumps(out)
    if args.json:
        with open(args.json, "w") as f:
            f.write(line + "\n")
    print(line)
    sys.exit(1 if out["metrics"]["chains_differing"] else 0)


if __name__ == "__main__":
    main()
