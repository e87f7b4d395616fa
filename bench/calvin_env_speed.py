"""Speed of the built-in CALVIN play-table: env steps/s with both cameras, one camera and none, against
PyBullet physics alone (the 8 sub-steps of one env step) measured in the same run.

Each configuration is timed ``--repeats`` times in alternation (so machine load hits all alike) and the
median is reported, with its ratio to the physics-only baseline. One process, one thread: pass ``--pin``
to pin it to a single CPU core.

    python bench/calvin_env_speed.py                       # TinyRenderer, convex arm meshes (default)
    python bench/calvin_env_speed.py --robot-detail visual # the detailed Panda meshes
    python bench/calvin_env_speed.py --renderer egl        # PyBullet's EGL plugin (fast only with a GPU)
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np

from envs.calvin import constants as C
from envs.calvin.env import PlayTableEnv

CONFIGS = {
    "both cameras": ("static", "gripper"),
    "static only": ("static",),
    "gripper only": ("gripper",),
    "no camera": (),
}


def actions(n: int, seed: int = 0) -> np.ndarray:
    """Small random relative motions (the arm stays over the table), gripper toggling now and then."""
    rng = np.random.default_rng(seed)
    a = rng.uniform(-0.3, 0.3, (n, 7)).astype(np.float32)
    a[:, 6] = np.where((np.arange(n) // 20) % 2 == 0, 1.0, -1.0)
    return a


def env_rate(env: PlayTableEnv, steps: int) -> float:
    env.reset(seed=0)
    batch = actions(steps)
    start = time.perf_counter()
    for a in batch:
        env.step(a)
    return steps / (time.perf_counter() - start)


def physics_rate(env: PlayTableEnv, steps: int) -> float:
    env.reset(seed=0)
    start = time.perf_counter()
    for _ in range(steps):
        env.sim.physics_only(C.SUBSTEPS)
    return steps / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=150, help="env steps per timing")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--renderer", default="tiny", choices=["tiny", "egl"])
    parser.add_argument("--robot-detail", default="collision", choices=["collision", "visual"])
    parser.add_argument("--pin", action="store_true", help="pin the process to one CPU core")
    args = parser.parse_args()
    if args.pin:
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    envs = {
        name: PlayTableEnv(cameras=cams, renderer=args.renderer, robot_detail=args.robot_detail)
        for name, cams in CONFIGS.items()
    }
    rates: dict[str, list[float]] = {"physics only": [], **{name: [] for name in envs}}
    for _ in range(args.repeats):
        rates["physics only"].append(physics_rate(envs["no camera"], args.steps * 4))
        for name, env in envs.items():
            rates[name].append(env_rate(env, args.steps))
    baseline = statistics.median(rates["physics only"])
    print(
        f"renderer={args.renderer} robot_detail={args.robot_detail} steps={args.steps} repeats={args.repeats} "
        f"cores={len(os.sched_getaffinity(0))}"
    )
    print(f"{'configuration':16s} {'steps/s':>9s} {'ms/step':>8s} {'vs physics':>11s}")
    for name, values in rates.items():
        rate = statistics.median(values)
        print(f"{name:16s} {rate:9.1f} {1000 / rate:8.2f} {rate / baseline:11.4f}")
    for env in envs.values():
        env.close()


if __name__ == "__main__":
    main()
