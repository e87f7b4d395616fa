"""Steps per second of the navigation env against raw MuJoCo on the same scene, measured in one run.

Raw MuJoCo = ``mj_step`` + ``mujoco.Renderer`` RGB render of the same compiled scene from the agent camera
(shadows and reflections off, as in the env). The env does more per step: collision check, camera pose,
an RGB pass and a segmentation pass (target visibility for ``info``), plus depth/mask when asked.
Rounds are interleaved and medians reported, because the machine is shared.

    python bench/nav_env_speed.py [--size 224] [--steps 200] [--rounds 5] [--threads 1]
"""

from __future__ import annotations

import argparse
import os
import time


def _parse() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--size", type=int, default=224, help="square image size in pixels")
    p.add_argument("--steps", type=int, default=200, help="steps per measurement")
    p.add_argument("--rounds", type=int, default=5, help="interleaved rounds; medians are reported")
    p.add_argument(
        "--threads", type=int, default=1, help="llvmpipe render threads (LP_NUM_THREADS); 1 = one core"
    )
    return p.parse_args()


os.environ.setdefault("MUJOCO_GL", "egl")

import gymnasium as gym  # noqa: E402
import mujoco  # noqa: E402
import numpy as np  # noqa: E402

import envs  # noqa: E402, F401  (registers the ids)
from envs.navigation.episodes import make_episode  # noqa: E402
from envs.navigation.mjcf import scene_to_mjcf  # noqa: E402
from envs.navigation.world import AgentPose, World  # noqa: E402


def env_rate(env: gym.Env, episode: dict, actions: np.ndarray) -> float:
    env.reset(options={"episode": episode})
    start = time.perf_counter()
    for a in actions:
        _, _, terminated, truncated, _ = env.step(int(a))
        if terminated or truncated:
            env.reset(options={"episode": episode})
    return len(actions) / (time.perf_counter() - start)


def raw_rate(model: mujoco.MjModel, data: mujoco.MjData, renderer: mujoco.Renderer, n: int) -> float:
    start = time.perf_counter()
    for _ in range(n):
        mujoco.mj_step(model, data)
        renderer.update_scene(data, camera="agent")
        renderer.render()
    return n / (time.perf_counter() - start)


def raw_setup(episode: dict, size: int) -> tuple[mujoco.MjModel, mujoco.MjData, mujoco.Renderer]:
    model = mujoco.MjModel.from_xml_string(scene_to_mjcf(episode["scene"]))
    data = mujoco.MjData(model)
    world = World(episode["scene"])  # same camera pose as the env's start
    world.place_camera(AgentPose.from_json(episode["agent"]), 100.0)
    model.cam_pos[:], model.cam_quat[:] = world.model.cam_pos, world.model.cam_quat
    renderer = mujoco.Renderer(model, size, size)
    for flag in (mujoco.mjtRndFlag.mjRND_SHADOW, mujoco.mjtRndFlag.mjRND_REFLECTION):
        renderer.scene.flags[flag] = False
    return model, data, renderer


def main() -> None:
    args = _parse()  # parsed here, not at import, so that bench/env_speed.py can import the timing functions
    # must precede the first GL context (made by the envs below)
    os.environ["LP_NUM_THREADS"] = str(args.threads)
    episode = make_episode("base", 0)
    actions = np.random.default_rng(0).integers(0, 8, args.steps)
    rgb = gym.make("SpatialArena/EBNavigation-v0", width=args.size, height=args.size).unwrapped
    rgbd = gym.make("SpatialArena/EBNavigation-RGBD-v0", width=args.size, height=args.size).unwrapped
    model, data, renderer = raw_setup(episode, args.size)
    rates: dict[str, list[float]] = {"raw": [], "env_rgb": [], "env_rgb_depth_mask": []}
    for _ in range(args.rounds):
        rates["raw"].append(raw_rate(model, data, renderer, args.steps))
        rates["env_rgb"].append(env_rate(rgb, episode, actions))
        rates["env_rgb_depth_mask"].append(env_rate(rgbd, episode, actions))
    renderer.close()
    rgb.close()
    rgbd.close()
    raw = np.array(rates["raw"])
    print(
        f"navigation env speed, {args.size}x{args.size}, LP_NUM_THREADS={args.threads}, "
        f"{args.rounds} rounds x {args.steps} steps (medians)"
    )
    for name, values in rates.items():
        v = np.array(values)
        print(f"  {name:22s} {np.median(v):7.1f} steps/s   ratio to raw MuJoCo {np.median(v / raw):.2f}")


if __name__ == "__main__":
    main()
