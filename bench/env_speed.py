"""Environment steps/s of every env family against its raw simulator, measured in one run.

Each family is timed by its own bench script's code (imported, not copied): ``calvin_env_speed``
(play-table vs PyBullet physics alone), ``nav_env_speed`` (EB navigation vs ``mj_step`` + a MuJoCo RGB
render of the same scene), ``libero_speed`` (the Gymnasium env vs the LIBERO env inside it), ``manip_speed``
(EB manipulation under its scripted expert vs robosuite's own Lift env, with and without cameras). Env and raw
simulator are timed in alternation within each round, so machine load hits both alike; the table shows
median rates and the median of the per-round (LIBERO: per-step) ratios. One process, one render thread.

    python bench/env_speed.py                        # every family that is installed
    python bench/env_speed.py --families calvin,nav --rounds 7
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
from collections.abc import Callable
from dataclasses import dataclass

os.environ.setdefault("MUJOCO_GL", "egl")
os.environ.setdefault("LP_NUM_THREADS", "1")  # one llvmpipe thread: one core, like the other bench scripts

import numpy as np


@dataclass
class Row:
    family: str
    config: str
    env_rate: float  # median steps/s
    raw_rate: float
    ratio: float  # median of paired env/raw ratios
    raw_label: str


def _paired(family: str, config: str, env: list[float], raw: list[float], raw_label: str) -> Row:
    ratios = [e / r for e, r in zip(env, raw)]
    return Row(
        family, config, statistics.median(env), statistics.median(raw), statistics.median(ratios), raw_label
    )


def calvin_rows(rounds: int, steps: int) -> list[Row]:
    """CALVIN play-table (TinyRenderer) with both cameras and with none, vs PyBullet physics alone."""
    from calvin_env_speed import env_rate, physics_rate

    from envs.calvin.env import PlayTableEnv

    envs = {
        "both cameras": PlayTableEnv(cameras=("static", "gripper")),
        "no camera": PlayTableEnv(cameras=()),
    }
    env_rates: dict[str, list[float]] = {name: [] for name in envs}
    raw: list[float] = []
    try:
        for _ in range(rounds):
            raw.append(physics_rate(envs["no camera"], steps * 2))
            for name, env in envs.items():
                env_rates[name].append(env_rate(env, steps if envs[name].cameras else steps * 2))
    finally:
        for env in envs.values():
            env.close()
    return [
        _paired("CALVIN play-table", name, rates, raw, "PyBullet physics (8 sub-steps)")
        for name, rates in env_rates.items()
    ]


def nav_rows(rounds: int, steps: int, size: int = 224) -> list[Row]:
    """EB navigation, RGB only at ``size``, vs ``mj_step`` + MuJoCo RGB render of the same scene."""
    import gymnasium as gym
    from nav_env_speed import env_rate, make_episode, raw_rate, raw_setup

    episode = make_episode("base", 0)
    actions = np.random.default_rng(0).integers(0, 8, steps)
    env = gym.make("SpatialArena/EBNavigation-v0", width=size, height=size).unwrapped
    model, data, renderer = raw_setup(episode, size)
    env_rates, raw = [], []
    try:
        for _ in range(rounds):
            raw.append(raw_rate(model, data, renderer, steps))
            env_rates.append(env_rate(env, episode, actions))
    finally:
        renderer.close()
        env.close()
    return [_paired("EB navigation", f"{size}x{size} RGB", env_rates, raw, "mj_step + MuJoCo RGB render")]


def libero_rows(rounds: int, steps: int, suite: str = "libero_10", task: int = 0) -> list[Row]:
    """One LIBERO task with fast rendering (two 256x256 cameras) vs the LIBERO env stepped directly."""
    from libero_speed import time_round

    from envs.libero import make_libero_env

    env = make_libero_env(suite, task, fast_render=True)
    rng = np.random.default_rng(0)
    gym_s, raw_s = [], []
    try:
        for r in range(rounds):
            seconds = time_round({True: env}, rng.uniform(-1, 1, (steps, 7)).astype(np.float32), seed=r)
            gym_s += seconds[(True, "gym")]
            raw_s += seconds[(True, "raw")]
    finally:
        env.close()
    ratio = float(np.median(np.asarray(raw_s) / np.asarray(gym_s)))  # per-step pairs, robust to load spikes
    return [
        Row(
            "LIBERO",
            f"{suite} task {task}, fast render",
            1 / float(np.median(gym_s)),
            1 / float(np.median(raw_s)),
            ratio,
            "LIBERO OffScreenRenderEnv.step",
        )
    ]


def manipulation_rows(rounds: int, steps: int, family: str = "pick", size: int = 256) -> list[Row]:
    """EB manipulation (the scripted expert's EB actions) vs robosuite's own Lift env, both on robosuite."""
    from manip_speed import ours, raw_robosuite

    from envs.manipulation.env import EBManipulationEnv

    env = EBManipulationEnv(family, image_size=size)
    control, raw, observations, raw_cams = [], [], [], []
    try:
        for _ in range(rounds):
            raw.append(raw_robosuite(steps, size, cameras=False))
            raw_cams.append(raw_robosuite(max(1, steps // 4), size, cameras=True))
            timings = ours(env, 12)
            control.append(timings["control"])
            observations.append(timings["obs"])
    finally:
        env.close()
    return [
        _paired(
            "EB manipulation",
            f"{family}: control steps in EB actions",
            control,
            raw,
            "robosuite Lift env.step, no cameras",
        ),
        _paired(
            "EB manipulation",
            f"{family}: observations, 3x{size}px",
            observations,
            raw_cams,
            "robosuite Lift env.step + 3 cameras",
        ),
    ]


FAMILIES: dict[str, tuple[Callable[[int, int], list[Row]], int, str]] = {
    # name: (rows, default steps per round, module that must be importable)
    "calvin": (calvin_rows, 100, "pybullet"),
    "nav": (nav_rows, 150, "mujoco"),
    "libero": (libero_rows, 12, "libero"),
    "manip": (manipulation_rows, 200, "robosuite"),
}


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        return False


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--families", default=",".join(FAMILIES), help="comma-separated subset of " + ",".join(FAMILIES)
    )
    parser.add_argument(
        "--rounds", type=int, default=5, help="alternated rounds per family; medians are reported"
    )
    parser.add_argument(
        "--steps-scale", type=float, default=1.0, help="multiply every family's steps per round"
    )
    args = parser.parse_args()
    rows: list[Row] = []
    for name in args.families.split(","):
        rows_of, steps, needs = FAMILIES[name]
        if not _installed(needs):
            print(f"{name}: skipped, {needs} is not installed", flush=True)
            continue
        rows += rows_of(args.rounds, max(1, round(steps * args.steps_scale)))
        print(f"{name}: done", flush=True)
    print(
        f"\nenv steps/s vs raw simulator, {args.rounds} rounds, one process, LP_NUM_THREADS="
        f"{os.environ['LP_NUM_THREADS']}, load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"
    )
    print(
        f"| {'env':<18} | {'configuration':<30} | {'env steps/s':>11} | {'raw steps/s':>11} | {'env/raw':>7} | raw baseline |"
    )
    print(f"|{'-' * 20}|{'-' * 32}|{'-' * 13}|{'-' * 13}|{'-' * 9}|---|")
    for r in rows:
        print(
            f"| {r.family:<18} | {r.config:<30} | {r.env_rate:>11.1f} | {r.raw_rate:>11.1f} | {r.ratio:>7.2f} | {r.raw_label} |"
        )


if __name__ == "__main__":
    main()
