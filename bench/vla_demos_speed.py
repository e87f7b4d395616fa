"""Cost of recording demonstrations (``vla.demos``) against the bare expert rollout it records.

Baseline, measured in the same run: the scripted expert driving the play-table with the same cameras on
the same starts, nothing written. Then ``vla.demos.generate`` for the same episodes (rollout + CALVIN frame
files). Prints the time per frame of each and the ratio, medians over ``--rounds`` alternated rounds.

    python bench/vla_demos_speed.py --episodes 2 --rounds 3
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time


def bare_rollouts(config) -> tuple[float, int]:
    """Seconds and steps of the expert's attempts on the starts ``generate`` would use, nothing written."""
    from envs.calvin.env import PlayTableEnv
    from policies.experts.calvin import ScriptedExpert
    from vla.demos import attempt_rng, camera_list, run_attempt, sample_start

    env = PlayTableEnv(cameras=camera_list(config.cameras))
    expert = ScriptedExpert()
    expert.bind(env)
    began, steps = time.perf_counter(), 0
    for attempt in range(config.episodes):
        start = sample_start(config.task, attempt_rng(config.seed, 0, attempt), config.joint_noise)
        steps += len(run_attempt(env, expert, config.task, start, config).frames)
    seconds = time.perf_counter() - began
    env.close()
    return seconds, steps


def recorded(config) -> tuple[float, int]:
    from vla.demos import generate

    with tempfile.TemporaryDirectory() as tmp:
        config.out = tmp
        began = time.perf_counter()
        summary = generate(config)
        return time.perf_counter() - began, summary["frames"]


def main() -> None:
    from vla.demos import DemoConfig

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--task", default="open_drawer")
    p.add_argument("--episodes", type=int, default=2)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--cameras", default="static,gripper")
    args = p.parse_args()
    config = DemoConfig(task=args.task, episodes=args.episodes, out="unused", cameras=args.cameras)
    bare, rec = [], []
    for _ in range(args.rounds):
        seconds, steps = bare_rollouts(config)
        bare.append(seconds / steps)
        seconds, frames = recorded(config)
        rec.append(seconds / frames)
    b, r = statistics.median(bare), statistics.median(rec)
    print(f"expert rollout, nothing written : {1000 * b:7.1f} ms/step   (baseline)")
    print(f"vla.demos (rollout + frames)     : {1000 * r:7.1f} ms/frame  {r / b:.2f}x baseline")


if __name__ == "__main__":
    main()
