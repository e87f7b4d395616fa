"""Expert episodes per minute on LIBERO: physics only, with both cameras, and recording demonstrations.

Three cells on the same task, initial states and seeds, alternated over ``--rounds`` so machine load hits
them alike:

- ``physics``: the scripted expert with the env built without cameras (what certification runs);
- ``cameras``: the same with both cameras rendered at ``--image-size``, nothing kept (the baseline of
  recording: what any policy looking at the two images pays);
- ``demos``: ``spatial-arena demos --env libero`` itself (``vla.libero_demos.generate``: rendering,
  recording, writing LIBERO HDF5 and the LeRobot dataset), with ``--workers``.

Prints episodes per minute per cell (medians over rounds; building the env counts in every cell, as a user
pays it once per task) and the ratios demos / cameras and cameras / physics; ``--json`` writes them::

    python bench/libero_demos_speed.py --suite libero_goal --task 7 --episodes 2 --rounds 2

``--parallel N`` measures instead how the expert scales over processes: the physics and cameras cells run
once in 1 process and once in N (each process builds its env and runs ``--episodes`` episodes from its
own initial states), per round, and the rates (episodes of all processes per minute of wall clock) are
printed with the ratio N / 1 measured in the same run and the machine's load average::

    python bench/libero_demos_speed.py --suite libero_goal --task 7 --episodes 2 --rounds 2 --parallel 2
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import statistics
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path


def expert_episodes(args: argparse.Namespace, cameras: bool, first: int) -> float:
    """Seconds of ``--episodes`` expert episodes (attempts ``first ..``), building the env included."""
    from envs.libero.env import LiberoEnv
    from policies.base import EpisodeContext
    from policies.experts.libero import LiberoExpert

    began = time.perf_counter()  # building the env counts, as it does in the demos cell
    env = LiberoEnv(
        args.suite, args.task, image_size=args.image_size, image_orientation="raw", cameras=cameras
    )
    expert = LiberoExpert()
    expert.bind(env)
    try:
        for attempt in range(first, first + args.episodes):
            obs, info = env.reset(seed=attempt, options={"init_state_index": attempt % 50})
            expert.reset(EpisodeContext(instruction=env.instruction, seed=attempt, info=info))
            done = False
            while not done:
                obs, _, terminated, truncated, _ = env.step(expert.act(obs))
                done = terminated or truncated
        return time.perf_counter() - began
    finally:
        env.close()


def demos(args: argparse.Namespace, first: int) -> tuple[float, int]:
    """Seconds and kept episodes of ``generate`` for ``--episodes`` demonstrations from the same starts."""
    from vla.libero_demos import LiberoDemoConfig, generate

    with tempfile.TemporaryDirectory() as out:
        config = LiberoDemoConfig(
            suite=args.suite,
            tasks=str(args.task),
            episodes=args.episodes,
            out=str(Path(out) / "demos"),
            states=f"{first}-{first + args.episodes - 1}",
            seed=first,
            image_size=args.image_size,
            workers=args.workers,
        )
        began = time.perf_counter()
        summary = generate(config)
        return time.perf_counter() - began, summary["kept"]


def processes_rate(args: argparse.Namespace, cameras: bool, workers: int, first: int) -> float:
    """Expert episodes per minute of wall clock of ``workers`` processes, each building its env and
    running ``--episodes`` episodes from its own initial states (process start-up included)."""
    starts = [first + w * args.episodes for w in range(workers)]
    context = multiprocessing.get_context("spawn")
    began = time.perf_counter()
    with ProcessPoolExecutor(workers, mp_context=context) as pool:
        list(pool.map(expert_episodes, [args] * workers, [cameras] * workers, starts))
    return 60 * workers * args.episodes / (time.perf_counter() - began)


def parallel(args: argparse.Namespace) -> dict:
    """Rates of the physics and cameras cells in 1 and ``--parallel`` processes, alternated per round."""
    n = args.parallel
    cells = [(cameras, workers) for cameras in (False, True) for workers in (1, n)]
    rates: dict[str, list[float]] = {_cell(c, w): [] for c, w in cells}
    loads = [os.getloadavg()[0]]
    for r in range(args.rounds):
        for cameras, workers in cells:
            rate = processes_rate(args, cameras, workers, r * n * args.episodes)
            rates[_cell(cameras, workers)].append(rate)
            loads.append(os.getloadavg()[0])
        print({k: round(v[-1], 2) for k, v in rates.items()}, flush=True)
    medians = {k: round(statistics.median(v), 2) for k, v in rates.items()}
    speedup = {
        name: round(medians[_cell(cameras, n)] / medians[_cell(cameras, 1)], 2)
        for name, cameras in (("physics", False), ("cameras", True))
    }
    return {
        "episodes_per_minute": medians,
        "per_round": rates,
        "ratios": {f"{n} / 1 processes, {k}": v for k, v in speedup.items()},
        "load_average_1min": {"min": min(loads), "max": max(loads)},
        "cpu_count": os.cpu_count(),
        "args": vars(args),
    }


def _cell(cameras: bool, workers: int) -> str:
    return f"{'cameras' if cameras else 'physics'}, {workers} process{'es' if workers > 1 else ''}"


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--suite", default="libero_goal")
    p.add_argument("--task", type=int, default=7)
    p.add_argument("--episodes", type=int, default=2, help="episodes per cell and round")
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--image-size", type=int, default=128)
    p.add_argument("--workers", type=int, default=1, help="processes of the demos cell")
    p.add_argument("--json", default=None, help="write the results here")
    p.add_argument("--parallel", type=int, default=0, help="N: expert speed in 1 and in N processes instead")
    args = p.parse_args(argv)
    if args.parallel < 0:
        p.error(f"--parallel {args.parallel}: give 1 or more processes (0: the three cells)")
    if args.parallel:
        result = parallel(args)
        print(json.dumps(result["episodes_per_minute"]), json.dumps(result["ratios"]), flush=True)
        if args.json:
            Path(args.json).write_text(json.dumps(result, indent=1) + "\n")
        return result
    rates: dict[str, list[float]] = {"physics": [], "cameras": [], "demos": []}
    for r in range(args.rounds):
        first = r * args.episodes
        rates["physics"].append(60 * args.episodes / expert_episodes(args, False, first))
        rates["cameras"].append(60 * args.episodes / expert_episodes(args, True, first))
        seconds, kept = demos(args, first)
        rates["demos"].append(60 * kept / seconds)
        print({k: round(v[-1], 2) for k, v in rates.items()}, flush=True)
    medians = {k: round(statistics.median(v), 2) for k, v in rates.items()}
    result = {
        "episodes_per_minute": medians,
        "per_round": rates,
        "ratios": {
            "demos / cameras": round(medians["demos"] / medians["cameras"], 2),
            "cameras / physics": round(medians["cameras"] / medians["physics"], 2),
        },
        "args": vars(args),
    }
    print(json.dumps(result["episodes_per_minute"]), json.dumps(result["ratios"]), flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1) + "\n")
    return result


if __name__ == "__main__":
    main()
