"""Parity of the built-in CALVIN play-table with the official calvin_env (a benchmark, not a unit test).

Three envs run the same things: the built-in table (``builtin``), the built-in table loading CALVIN's own
URDFs and meshes (``assets``, ``--calvin-assets``) and calvin_env itself (``official``, composed for
``--scene`` (default D) from the checkout's own configuration), all in the same scene. It reports

- the scripted expert on the first ``--chains`` of the 1000 public evaluation chains (the chains
  ``python -m benchmarks.calvin --num-sequences N`` runs): avg. len, per-task success, and
  the chains whose completed length differs from calvin_env's;
- the largest difference of ``robot_obs`` and ``scene_obs`` from calvin_env's over a fixed random action
  sequence from chain 0's initial state;
- the mean absolute difference (0-255) of the static and gripper images from calvin_env's, on the initial
  states of the first ``--image-chains`` chains;
- env steps/s with both cameras, the static camera only and none, and each env's ratio to calvin_env's,
  and the mean reset time without cameras,

and ends with one JSON line (``--json`` also writes it to a file). ``--only`` runs some of the four parts
(``expert``, ``trajectory``, ``images``, ``speed``); the JSON line then holds their numbers only.

    python bench/calvin_parity.py --calvin-env /path/to/calvin_env --chains 20
    python bench/calvin_parity.py --calvin-env /path/to/calvin_env --only images,speed
    python bench/calvin_parity.py --calvin-env /path/to/calvin_env --scene B --chains 20
"""

from __future__ import annotations

import argparse
import datetime
import json
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from benchmarks.calvin import evaluation_chains
from benchmarks.calvin.chain import run_chain
from benchmarks.core.manifest import machine_line
from envs.calvin.env import PlayTableEnv
from envs.calvin.official import OfficialPlayTableEnv, calvin_env_sources
from envs.calvin.scenes import SCENE_NAMES
from envs.calvin.sequences import initial_env_state
from policies.experts.calvin import ScriptedExpert

ENVS = ("builtin", "assets", "official")
PARTS = ("expert", "trajectory", "images", "speed")
#: The JSON line's headline numbers, repeated under "metrics" for the docs' results pages.
HEADLINE = (
    "avg_len_builtin",
    "avg_len_assets",
    "avg_len_official",
    "static_mad_builtin",
    "gripper_mad_builtin",
    "static_mad_assets",
    "speed_ratio_both_cameras",
    "speed_ratio_static",
    "speed_ratio_no_camera",
)
Factory = Callable[[Sequence[str]], Any]


def factories(calvin_env: str, scene: str = "D") -> dict[str, Factory]:
    """How to build each compared env, in ``scene``, with a given camera set."""
    return {
        "builtin": lambda cams: PlayTableEnv(cameras=tuple(cams), scene=scene),
        "assets": lambda cams: PlayTableEnv(cameras=tuple(cams), calvin_assets=calvin_env, scene=scene),
        "official": lambda cams: OfficialPlayTableEnv(
            calvin_env_path=calvin_env, cameras=tuple(cams), scene=scene
        ),
    }


def fixed_actions(n: int, seed: int = 0) -> np.ndarray:
    """Small random relative motions (the arm stays over the table), the gripper toggling every 20 steps."""
    rng = np.random.default_rng(seed)
    a = rng.uniform(-0.3, 0.3, (n, 7)).astype(np.float32)
    a[:, 6] = np.where((np.arange(n) // 20) % 2 == 0, 1.0, -1.0)
    return a


def expert_chains(make: Factory, chains: list[tuple[dict, list[str]]], scene: str) -> dict[str, Any]:
    """The expert on each chain (no cameras) in ``scene``: completed lengths, per-task (success, total),
    seconds."""
    env = make(())
    policy = ScriptedExpert()
    policy.bind(env)
    lengths, per_task = [], {}
    start = time.perf_counter()
    for initial_state, tasks in chains:
        robot_obs, scene_obs = initial_env_state(initial_state, scene)
        record = run_chain(env, policy, robot_obs, scene_obs, list(tasks), list(tasks))
        lengths.append(int(record["extras"]["num_completed"]))
        for sub in record["extras"]["subtasks"]:
            s, t = per_task.get(sub["extras"]["task"], (0, 0))
            per_task[sub["extras"]["task"]] = (s + int(sub["success"]), t + 1)
    seconds = time.perf_counter() - start
    env.close()
    return {"lengths": lengths, "per_task": per_task, "seconds": seconds}


def trajectory(
    make: Factory, start: tuple[np.ndarray, np.ndarray], actions: np.ndarray
) -> dict[str, np.ndarray]:
    """robot_obs and scene_obs after every action of a fixed sequence, from one initial state."""
    env = make(())
    obs, _ = env.reset(options={"robot_obs": start[0], "scene_obs": start[1]})
    robot, scene = [], []
    for a in actions:
        obs, *_ = env.step(a)
        robot.append(obs["robot_obs"].copy())
        scene.append(obs["scene_obs"].copy())
    env.close()
    return {"robot_obs": np.array(robot), "scene_obs": np.array(scene)}


def initial_images(make: Factory, starts: list[tuple[np.ndarray, np.ndarray]]) -> dict[str, list[np.ndarray]]:
    """Static and gripper images right after reset to each initial state."""
    env = make(("static", "gripper"))
    images: dict[str, list[np.ndarray]] = {"rgb_static": [], "rgb_gripper": []}
    for robot_obs, scene_obs in starts:
        obs, _ = env.reset(options={"robot_obs": robot_obs, "scene_obs": scene_obs})
        for key in images:
            images[key].append(np.asarray(obs[key], dtype=np.float64))
    env.close()
    return images


def step_rates(
    makes: dict[str, Factory],
    camera_sets: dict[str, tuple[str, ...]],
    start: tuple[np.ndarray, np.ndarray],
    actions: np.ndarray,
    repeats: int,
) -> dict[str, dict[str, float]]:
    """Median env steps/s over ``repeats`` runs of the fixed action sequence, per env and camera set; the
    configurations are timed in alternation so that load from other processes hits all alike."""
    built = {(name, k): make(cams) for name, make in makes.items() for k, cams in camera_sets.items()}
    rates: dict[tuple[str, str], list[float]] = {key: [] for key in built}
    for _ in range(repeats):
        for key, env in built.items():
            env.reset(options={"robot_obs": start[0], "scene_obs": start[1]})
            t = time.perf_counter()
            for a in actions:
                env.step(a)
            rates[key].append(len(actions) / (time.perf_counter() - t))
    for env in built.values():
        env.close()
    return {name: {k: statistics.median(rates[(name, k)]) for k in camera_sets} for name in makes}


def reset_ms(make: Factory, starts: list[tuple[np.ndarray, np.ndarray]]) -> float:
    """Mean milliseconds of one reset without cameras."""
    env = make(())
    env.reset(options={"robot_obs": starts[0][0], "scene_obs": starts[0][1]})
    t = time.perf_counter()
    for robot_obs, scene_obs in starts:
        env.reset(options={"robot_obs": robot_obs, "scene_obs": scene_obs})
    ms = 1000 * (time.perf_counter() - t) / len(starts)
    env.close()
    return ms


def avg_len(lengths: list[int]) -> float:
    return float(np.mean(lengths)) if lengths else float("nan")


def print_expert(results: dict[str, dict[str, Any]], chains: int) -> list[int]:
    """Avg. len and per-task success per env; returns the chains whose length differs from calvin_env's."""
    print(f"\n## Expert on the first {chains} evaluation chains (no cameras)\n")
    print("| env | avg. len | chains/min |\n|---|---|---|")
    for name, r in results.items():
        print(f"| {name} | {avg_len(r['lengths']):.2f} | {60 * chains / r['seconds']:.1f} |")
    tasks = sorted(set().union(*(r["per_task"] for r in results.values())))
    print("\n| task | " + " | ".join(results) + " |\n|---|" + "---|" * len(results))
    for task in tasks:
        cells = [
            "{}/{}".format(*r["per_task"][task]) if task in r["per_task"] else "-" for r in results.values()
        ]
        print(f"| {task} | " + " | ".join(cells) + " |")
    official = results["official"]["lengths"]
    differ = [i for i in range(chains) if results["builtin"]["lengths"][i] != official[i]]
    print(
        f"\nchains where builtin and official differ: {differ} "
        f"(lengths builtin {[results['builtin']['lengths'][i] for i in differ]}, "
        f"official {[official[i] for i in differ]})"
    )
    differ_assets = [i for i in range(chains) if results["assets"]["lengths"][i] != official[i]]
    print(f"chains where assets and official differ: {differ_assets}")
    return differ


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calvin-env", required=True, help="a mees/calvin_env git checkout")
    parser.add_argument(
        "--scene", default="D", choices=SCENE_NAMES, help="CALVIN scene, the same on all three envs"
    )
    parser.add_argument(
        "--chains", type=int, default=20, help="first N public evaluation chains for the expert"
    )
    parser.add_argument("--image-chains", type=int, default=10, help="initial states compared as images")
    parser.add_argument("--steps", type=int, default=120, help="length of the fixed action sequence")
    parser.add_argument("--repeats", type=int, default=5, help="timings per env and camera set (median)")
    parser.add_argument("--machine", default=machine_line(), help="machine description for the JSON line")
    parser.add_argument("--json", default="", help="also write the JSON line to this file")
    parser.add_argument(
        "--only", default=",".join(PARTS), help=f"comma-separated parts to run, of {','.join(PARTS)}"
    )
    args = parser.parse_args()
    parts = parse_parts(args.only)
    make = factories(args.calvin_env, args.scene)
    sources = calvin_env_sources(args.calvin_env, args.scene)
    print(f"calvin_env {sources['path']} commit {sources['commit']}, scene {args.scene}")
    # the first N of the 1000 published chains, as `python -m benchmarks.calvin --num-sequences N` runs them
    sequences = [(s, list(t)) for s, t in evaluation_chains(args.chains)]
    starts = [initial_env_state(s, args.scene) for s, _ in evaluation_chains(max(args.image_chains, 1))]
    scope = f"{args.chains} chains" if "expert" in parts else ", ".join(parts)
    out: dict[str, Any] = {
        "title": f"CALVIN parity: built-in table vs calvin_env, scene {args.scene} ({scope})",
        "source": "bench/calvin_parity.py",
        "command": " ".join(["python", *sys.argv]),
        "chains": args.chains,
        "scene": args.scene,
        "calvin_env_commit": sources["commit"],
        "date": datetime.date.today().isoformat(),
        "machine": args.machine,
        "parts": parts,
    }

    if "expert" in parts:
        out.update(expert_part(make, sequences, args.chains, args.scene))
    actions = fixed_actions(args.steps)
    if "trajectory" in parts:
        out.update(trajectory_part(make, starts[0], actions))
    if "images" in parts:
        out.update(images_part(make, starts[: args.image_chains]))
    if "speed" in parts:
        out.update(speed_part(make, starts, actions, args.repeats))
    out["metrics"] = {k: out[k] for k in HEADLINE if k in out}
    line = json.dumps(out)
    if args.json:
        with open(args.json, "w") as f:
            f.write(line + "\n")
    print(line)


def parse_parts(text: str) -> list[str]:
    """The ``--only`` list; a one-line error names an unknown part."""
    parts = [p.strip() for p in text.split(",") if p.strip()]
    unknown = [p for p in parts if p not in PARTS]
    if unknown or not parts:
        raise SystemExit(f"--only {text!r}: unknown part(s) {unknown}; choose from {','.join(PARTS)}")
    return parts


def expert_part(
    make: dict[str, Factory], sequences: list[tuple[dict, list[str]]], chains: int, scene: str
) -> dict[str, Any]:
    """The expert on the first ``chains`` chains in every env."""
    out: dict[str, Any] = {}
    results = {name: expert_chains(make[name], sequences, scene) for name in ENVS}
    differ = print_expert(results, chains)
    for name, r in results.items():
        out[f"avg_len_{name}"] = round(avg_len(r["lengths"]), 4)
        out[f"lengths_{name}"] = r["lengths"]
        out[f"task_success_{name}"] = {t: list(v) for t, v in sorted(r["per_task"].items())}
    out["chains_differ_builtin_official"] = differ
    return out


def trajectory_part(
    make: dict[str, Factory], start: tuple[np.ndarray, np.ndarray], actions: np.ndarray
) -> dict[str, Any]:
    """Largest differences from calvin_env over the fixed action sequence."""
    out: dict[str, Any] = {}
    trajs = {name: trajectory(make[name], start, actions) for name in ENVS}
    print(f"\n## Fixed action sequence ({len(actions)} steps from chain 0): max |difference| from official\n")
    print("| env | robot_obs TCP xyz (m) | robot_obs joints (rad) | scene_obs |\n|---|---|---|---|")
    for name in ("builtin", "assets"):
        d_robot = np.abs(trajs[name]["robot_obs"] - trajs["official"]["robot_obs"])
        d_scene = float(np.abs(trajs[name]["scene_obs"] - trajs["official"]["scene_obs"]).max())
        tcp, joints = float(d_robot[:, :3].max()), float(d_robot[:, 7:14].max())
        print(f"| {name} | {tcp:.2e} | {joints:.2e} | {d_scene:.2e} |")
        out[f"traj_tcp_max_{name}"], out[f"traj_joints_max_{name}"], out[f"traj_scene_max_{name}"] = (
            tcp,
            joints,
            d_scene,
        )
    return out


def images_part(make: dict[str, Factory], starts: list[tuple[np.ndarray, np.ndarray]]) -> dict[str, Any]:
    """Mean absolute image differences from calvin_env at the given initial states."""
    out: dict[str, Any] = {}
    images = {name: initial_images(make[name], starts) for name in ENVS}
    print(
        f"\n## Images at the initial states of the first {len(starts)} chains: mean |difference| from "
        "official (0-255)\n"
    )
    print("| env | static | gripper |\n|---|---|---|")
    for name in ("builtin", "assets"):
        mads = {
            cam: float(
                np.mean(
                    [
                        np.abs(a - b).mean()
                        for a, b in zip(images[name][f"rgb_{cam}"], images["official"][f"rgb_{cam}"])
                    ]
                )
            )
            for cam in ("static", "gripper")
        }
        print(f"| {name} | {mads['static']:.2f} | {mads['gripper']:.2f} |")
        out[f"static_mad_{name}"], out[f"gripper_mad_{name}"] = (
            round(mads["static"], 3),
            round(mads["gripper"], 3),
        )
    return out


def speed_part(
    make: dict[str, Factory], starts: list[tuple[np.ndarray, np.ndarray]], actions: np.ndarray, repeats: int
) -> dict[str, Any]:
    """Steps/s per camera set and reset time, each env against calvin_env."""
    out: dict[str, Any] = {}
    camera_sets = {"both_cameras": ("static", "gripper"), "static": ("static",), "no_camera": ()}
    rates = step_rates({name: make[name] for name in ENVS}, camera_sets, starts[0], actions, repeats)
    resets = {name: reset_ms(make[name], starts) for name in ENVS}
    print("\n## Speed: env steps/s (ratio to official), reset ms without cameras\n")
    print("| env | " + " | ".join(camera_sets) + " | reset ms |\n|---|" + "---|" * (len(camera_sets) + 1))
    for name in ENVS:
        cells = [f"{rates[name][k]:.1f} ({rates[name][k] / rates['official'][k]:.2f}x)" for k in camera_sets]
        print(f"| {name} | " + " | ".join(cells) + f" | {resets[name]:.1f} |")
        out[f"reset_ms_{name}"] = round(resets[name], 2)
        for k in camera_sets:
            out[f"steps_per_s_{k}_{name}"] = round(rates[name][k], 2)
    for k in camera_sets:
        out[f"speed_ratio_{k}"] = round(rates["builtin"][k] / rates["official"][k], 3)
        out[f"speed_ratio_{k}_assets"] = round(rates["assets"][k] / rates["official"][k], 3)
    return out


if __name__ == "__main__":
    main()
