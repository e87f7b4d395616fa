"""Expert and random success on EB-Manipulation (robosuite), per task family and subset.

    python bench/manip_expert.py                       # expert: 12 episodes x 4 families x 5 subsets
    python bench/manip_expert.py --random-episodes 3   # also the uniform random policy, 3 per cell
    python bench/manip_expert.py --families pick --subsets base spatial --episodes 4 --workers 2

The expert reads simulator state (privileged) and sends the same discrete actions a planner would; the
random policy samples the action space uniformly (seeded). Both run through ``run_episode``, the function
the benchmark runner calls. Prints a table and, with ``--output``, writes every record as JSON.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

import envs.manipulation  # noqa: F401  (sets the headless GL backend before MuJoCo loads)
from benchmarks.embodied.manipulation import run_episode
from envs.manipulation.episodes import make_episodes
from envs.manipulation.tasks import FAMILIES, SUBSETS
from policies.base import EpisodeContext, Policy


class UniformRandomPolicy(Policy):
    """Samples EB's discrete action space uniformly, seeded by the episode seed."""

    name = "uniform_random"

    def __init__(self, nvec: np.ndarray) -> None:
        self.nvec = np.asarray(nvec)
        self._rng = np.random.default_rng(0)

    def reset(self, context: EpisodeContext) -> None:
        self._rng = np.random.default_rng(context.seed)

    def act(self, observation):
        return self._rng.integers(0, self.nvec)


def run_family(job: tuple[str, str, list[str], int, int, int]) -> list[dict]:
    """All episodes of one family for one policy, in one process (the env is built once)."""
    from envs.manipulation.env import EBManipulationEnv
    from policies.experts.manipulation import EBManipulationExpert

    family, policy_name, subsets, n, image_size, episode_seed = job
    env = EBManipulationEnv(family, image_size=image_size)
    policy = EBManipulationExpert() if policy_name == "expert" else UniformRandomPolicy(env.action_space.nvec)
    policy.bind(env)
    records = []
    try:
        for subset in subsets:
            for episode in make_episodes(family, subset, n, seed=episode_seed):
                record = run_episode(env, policy, episode, seed=1000 + episode["index"])
                records.append(record | {"policy_name": policy_name})
                print(
                    f"{policy_name:7s} {family:5s} {subset:12s} #{episode['index']:2d} "
                    f"{'ok ' if record['success'] else 'FAIL'} steps={record['steps']:2d} "
                    f"invalid={record['extras']['num_invalid_actions']:2d} {record['timing']['episode_s']:5.1f}s",
                    flush=True,
                )
    finally:
        env.close()
    return records


def table(records: list[dict], policy_name: str, subsets: list[str], families: list[str]) -> str:
    """Markdown table: success rate (%) per family (rows) and subset (columns), with means."""
    cells = defaultdict(list)
    for r in records:
        if r["policy_name"] == policy_name:
            cells[(r["extras"]["family"], r["extras"]["subset"])].append(r["success"])
    head = f"| {policy_name} | " + " | ".join(subsets) + " | mean |"
    lines = [head, "|" + "---|" * (len(subsets) + 2)]
    for family in families:
        rates = [100 * np.mean(cells[(family, s)]) for s in subsets if cells[(family, s)]]
        lines.append(f"| {family} | " + " | ".join(f"{v:.0f}" for v in rates) + f" | {np.mean(rates):.1f} |")
    overall = [100 * np.mean(cells[(f, s)]) for f in families for s in subsets if cells[(f, s)]]
    lines.append("| all | " + " | ".join(" " for _ in subsets) + f" | {np.mean(overall):.1f} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--families", nargs="+", default=list(FAMILIES), choices=FAMILIES)
    parser.add_argument("--subsets", nargs="+", default=list(SUBSETS), choices=SUBSETS)
    parser.add_argument("--episodes", type=int, default=12, help="expert episodes per family and subset")
    parser.add_argument("--random-episodes", type=int, default=0, help="random-policy episodes per cell")
    parser.add_argument("--image-size", type=int, default=128)
    parser.add_argument(
        "--episode-seed", type=int, default=0, help="seed of the episode sets (0: the default sets)"
    )
    parser.add_argument("--workers", type=int, default=1, help="processes (one family each at a time)")
    parser.add_argument("--output", type=Path, help="write all records to this JSON file")
    args = parser.parse_args()

    common = (args.image_size, args.episode_seed)
    jobs = [(f, "expert", args.subsets, args.episodes, *common) for f in args.families if args.episodes]
    jobs += [
        (f, "random", args.subsets, args.random_episodes, *common)
        for f in args.families
        if args.random_episodes
    ]
    start = time.perf_counter()
    if args.workers > 1:
        with mp.get_context("spawn").Pool(args.workers) as pool:
            results = pool.map(run_family, jobs)
    else:
        results = [run_family(job) for job in jobs]
    records = [r for batch in results for r in batch]
    print(f"\n{len(records)} episodes in {time.perf_counter() - start:.0f} s")
    for policy_name in ("expert", "random"):
        if any(r["policy_name"] == policy_name for r in records):
            print("\nsuccess rate (%)\n" + table(records, policy_name, args.subsets, args.families))
    if args.output:
        args.output.write_text(json.dumps(records, indent=1))


if __name__ == "__main__":
    main()
