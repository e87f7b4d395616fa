"""Success of the shortest-path expert and of a uniform random policy on the five EB-Navigation subsets.

Generates each subset's default episode set (``make_episode_set(subset, n, seed)``), runs both policies
on every episode through ``benchmarks.embodied.navigation.run_episode`` and prints success rates, mean steps and
the set's shortest-path lengths. Images are rendered small (success does not depend on them).

    python bench/nav_expert.py [--n 60] [--seed 0] [--size 64] [--json bench/results/NAME.json]

``--json`` writes the table with its provenance (date, machine, command) for the docs' results pages.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import sys
import time

os.environ.setdefault("MUJOCO_GL", "egl")

import gymnasium as gym
import numpy as np

import envs  # noqa: F401
from benchmarks.core.manifest import machine_line
from benchmarks.embodied.navigation import run_episode
from envs.navigation.episodes import SUBSETS, make_episode_set
from policies.baselines import RandomPolicy
from policies.experts.navigation import ShortestPathExpert


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n", type=int, default=60, help="episodes per subset")
    p.add_argument("--seed", type=int, default=0, help="episode-set seed")
    p.add_argument("--size", type=int, default=64, help="image size (does not change success)")
    p.add_argument("--json", default="", help="also write the results with their provenance to this file")
    args = p.parse_args()
    machine = machine_line()
    env = gym.make("SpatialArena/EBNavigation-v0", width=args.size, height=args.size)
    expert, random_policy = ShortestPathExpert(), RandomPolicy()
    expert.bind(env)
    random_policy.bind(env)
    print(
        f"{'subset':22s} {'expert':>8s} {'random':>8s} {'expert steps':>13s} {'random steps':>13s} "
        f"{'shortest path min/mean/max':>27s}"
    )
    totals = {"expert": [], "random": []}
    table: list[list] = []
    start = time.perf_counter()
    for subset in SUBSETS:
        episodes = make_episode_set(subset, args.n, args.seed)
        rows = {
            name: [run_episode(env, pol, ep, seed=i) for i, ep in enumerate(episodes)]
            for name, pol in (("expert", expert), ("random", random_policy))
        }
        lengths = np.array([len(ep["shortest_path"]) for ep in episodes])
        rate = {k: np.mean([r["success"] for r in v]) for k, v in rows.items()}
        steps = {k: np.mean([r["steps"] for r in v]) for k, v in rows.items()}
        for k in totals:
            totals[k] += [r["success"] for r in rows[k]]
        print(
            f"{subset:22s} {rate['expert']:8.1%} {rate['random']:8.1%} {steps['expert']:13.1f} "
            f"{steps['random']:13.1f} {lengths.min():>9d} / {lengths.mean():5.1f} / {lengths.max():3d}"
        )
        table.append(
            [
                subset,
                round(100 * rate["expert"], 1),
                round(100 * rate["random"], 1),
                f"{lengths.mean():.1f} ({lengths.min()}-{lengths.max()})",
            ]
        )
    wall = time.perf_counter() - start
    print(
        f"{'all':22s} {np.mean(totals['expert']):8.1%} {np.mean(totals['random']):8.1%}   "
        f"({len(totals['expert'])} episodes, {wall:.0f} s)"
    )
    env.close()
    table.append(
        [
            f"all {len(totals['expert'])}",
            round(100 * np.mean(totals["expert"]), 1),
            round(100 * np.mean(totals["random"]), 1),
            "",
        ]
    )
    if args.json:
        write_results(args, machine, table, wall)


def write_results(args: argparse.Namespace, machine: str, table: list[list], wall: float) -> None:
    """The results file the docs' results pages read (title, date, machine, source, command, tables)."""
    results = {
        "title": "EB-style navigation: scripted expert and random policy",
        "date": datetime.date.today().isoformat(),
        "machine": machine,
        "source": "bench/nav_expert.py",
        "command": " ".join(["python bench/nav_expert.py", *sys.argv[1:]]),
        "setup": f"{args.n} episodes per subset, seed {args.seed}; random draws one of the 8 action ids uniformly "
        f"per step (seeded by the episode); {wall:.0f} s wall",
        "metrics": {"expert_success_pct": table[-1][1], "random_success_pct": table[-1][2]},
        "tables": [
            {
                "caption": "success rate (%)",
                "columns": ["subset", "expert", "random", "mean shortest path (min-max)"],
                "rows": table,
            }
        ],
    }
    with open(args.json, "w") as f:
        json.dump(results, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
