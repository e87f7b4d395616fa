"""Speed of the EB-Manipulation env against raw robosuite, measured in the same run, reported as ratios.

    python bench/manip_speed.py [--repeats 3] [--image-size 256] [--actions 12]

Baselines (robosuite 1.5 ``Lift`` with a Panda and OSC_POSE, as shipped):
  raw        ``env.step`` with no cameras: physics + controller only (control steps/s)
  raw+cams   the same with three 128..image-size cameras rendered by robosuite at every control step
Ours, per family:
  scene      the family's scene (its objects, parked ones included) stepped by robosuite alone
and driven by the scripted expert:
  control    control steps/s while executing EB actions (robosuite stepping + our per-step task hooks)
  action     EB actions/s (``env.step``: motion, then three camera images, segmentation, boxes)
  obs        observations/s (rendering three cameras + segmentation + box overlay alone)
Every number is the median over ``--repeats`` alternating rounds; the machine is shared, so compare ratios.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import envs.manipulation  # noqa: F401  (headless GL backend before MuJoCo loads)
from envs.manipulation.episodes import make_episodes
from policies.base import EpisodeContext


def raw_robosuite(steps: int, image_size: int, cameras: bool) -> float:
    """Control steps per second of robosuite's own Lift env (built outside the timing)."""
    import robosuite
    from robosuite.controllers import load_composite_controller_config

    env = robosuite.make(
        "Lift",
        robots="Panda",
        controller_configs=load_composite_controller_config(controller="BASIC", robot="Panda"),
        has_renderer=False,
        has_offscreen_renderer=cameras,
        use_camera_obs=cameras,
        camera_names=["frontview", "birdview", "robot0_eye_in_hand"],
        camera_heights=image_size,
        camera_widths=image_size,
        hard_reset=False,
        ignore_done=True,
        initialization_noise=None,
    )
    env.reset()
    action = np.zeros(env.action_dim)
    start = time.perf_counter()
    for _ in range(steps):
        env.step(action)
    rate = steps / (time.perf_counter() - start)
    env.close()
    return rate


def scene_only(env, steps: int) -> float:
    """Control steps/s of our family scene stepped by robosuite alone (arm holding still, no task hooks)."""
    from scipy.spatial.transform import Rotation

    env.reset(seed=0, options={"subset": "base", "index": 0})
    position, rotation = env.scene.grip_pose()
    action = np.concatenate([position, Rotation.from_matrix(rotation).as_rotvec(), [-1.0]])
    start = time.perf_counter()
    for _ in range(steps):
        env.scene.step(action)
    return steps / (time.perf_counter() - start)


class Timed:
    """Wraps a bound method and accumulates its wall time."""

    def __init__(self, fn) -> None:
        self.fn, self.seconds, self.calls = fn, 0.0, 0

    def __call__(self, *args, **kwargs):
        start = time.perf_counter()
        try:
            return self.fn(*args, **kwargs)
        finally:
            self.seconds += time.perf_counter() - start
            self.calls += 1


def ours(env, actions: int) -> dict[str, float]:
    """Control steps/s, actions/s and observations/s of our env under the expert."""
    from policies.experts.manipulation import EBManipulationExpert

    policy = EBManipulationExpert()
    policy.bind(env)
    execute, observe = Timed(env.motion.execute), Timed(env._observe)
    env.motion.execute, env._observe = execute, observe
    control_steps, done_actions, step_seconds = 0, 0, 0.0
    episodes = iter(make_episodes(env.family, "base", 12))
    try:
        while done_actions < actions:
            episode = next(episodes)
            obs, info = env.reset(seed=0, options={"episode": episode})
            policy.reset(EpisodeContext(obs["instruction"], 0, info))
            done = False
            while not done and done_actions < actions:
                action = policy.act(obs)
                start = time.perf_counter()
                obs, _, terminated, truncated, info = env.step(action)
                step_seconds += time.perf_counter() - start
                control_steps += info.get("control_steps", 0)
                done_actions += 1
                done = terminated or truncated
    finally:
        del env.motion.execute, env._observe  # back to the class methods
    return {
        "control": control_steps / execute.seconds,
        "action": done_actions / step_seconds,
        "obs": observe.calls / observe.seconds,
        "ctrl_per_action": control_steps / done_actions,
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--image-size", type=int, default=256)
    parser.add_argument("--raw-steps", type=int, default=200)
    parser.add_argument("--actions", type=int, default=12, help="EB actions per family and round")
    parser.add_argument("--families", nargs="+", default=["pick", "stack", "place", "wipe"])
    args = parser.parse_args()

    from envs.manipulation.env import EBManipulationEnv

    built = {f: EBManipulationEnv(f, image_size=args.image_size) for f in args.families}
    rows: dict[str, list[float]] = {}
    for _ in range(args.repeats):
        rows.setdefault("raw", []).append(raw_robosuite(args.raw_steps, args.image_size, cameras=False))
        rows.setdefault("raw+cams", []).append(
            raw_robosuite(args.raw_steps // 4, args.image_size, cameras=True)
        )
        for family, env in built.items():
            rows.setdefault(f"{family}.scene", []).append(scene_only(env, args.raw_steps))
            for key, value in ours(env, args.actions).items():
                rows.setdefault(f"{family}.{key}", []).append(value)
    for env in built.values():
        env.close()
    med = {k: statistics.median(v) for k, v in rows.items()}
    raw = med["raw"]
    print(f"\nimage size {args.image_size}, medians of {args.repeats} rounds\n")
    print("| measure | per second | ratio to raw robosuite control steps/s |\n|---|---|---|")
    print(f"| raw robosuite Lift, control steps (no cameras) | {raw:.1f} | 1.00 |")
    print(
        f"| raw robosuite Lift, control steps (3 cameras every step) | {med['raw+cams']:.1f} | "
        f"{med['raw+cams'] / raw:.2f} |"
    )
    for family in args.families:
        c, a, o = med[f"{family}.control"], med[f"{family}.action"], med[f"{family}.obs"]
        k, sc = med[f"{family}.ctrl_per_action"], med[f"{family}.scene"]
        print(f"| {family}: our scene stepped by robosuite alone (no cameras) | {sc:.1f} | {sc / raw:.2f} |")
        print(f"| {family}: control steps inside EB actions | {c:.1f} | {c / raw:.2f} |")
        print(f"| {family}: EB actions (env.step, {k:.0f} control steps each) | {a:.2f} | {a / raw:.4f} |")
        print(f"| {family}: observations (3 cameras + boxes) | {o:.1f} | {o / raw:.2f} |")


if __name__ == "__main__":
    main()
