"""Scripted-expert success per CALVIN task on the built-in play-table (a benchmark, not a unit test).

For every one of the 34 tasks it draws ``--starts`` valid evaluation-style scenes (12 block placements x
door x drawer x lights, block yaws pi/2 +- pi/8, seeded), builds the shortest valid chain ending in the
task (e.g. ``lift_red_block_table, place_in_drawer`` for ``place_in_drawer``) and runs it with
``benchmarks.calvin.chain.run_chain`` exactly as the protocol does. A task's rate counts the runs whose
prefix succeeded. ``--chains N`` instead runs the first N public evaluation chains, when
``envs.calvin.sequences`` (the protocol's module) is available.

    python bench/calvin_expert.py --starts 10            # per-task table
    python bench/calvin_expert.py --chains 100           # CALVIN's first 100 chains
"""

from __future__ import annotations

import argparse
import json
import time

import gymnasium as gym
import numpy as np

import envs  # noqa: F401 - registers the ids
from benchmarks.calvin.chain import run_chain
from envs.calvin import constants as C
from envs.calvin.scene import random_scene_state, scene_obs_for_state
from envs.calvin.tasks import TASKS
from policies.experts.calvin import ScriptedExpert


def requirement(task: str) -> tuple[dict, list[str]]:
    """(symbolic conditions on the start scene, prefix tasks) that make ``task`` valid."""
    parts = task.split("_")
    if parts[0] in ("rotate", "push") and parts[1] in C.BLOCK_COLORS:
        return {f"{parts[1]}_block": "table"}, []
    if parts[0] == "lift":
        color, where = parts[1], parts[3]
        if where == "table":
            return {f"{color}_block": "table"}, []
        if where == "drawer":
            return {f"{color}_block": "table", "drawer": "open"}, [
                f"lift_{color}_block_table",
                "place_in_drawer",
            ]
        return {f"{color}_block": "slider"}, []
    table = {
        "move_slider_left": ({"slider": "right"}, []),
        "move_slider_right": ({"slider": "left"}, []),
        "open_drawer": ({"drawer": "closed"}, []),
        "close_drawer": ({"drawer": "open"}, []),
        "turn_on_lightbulb": ({"lightbulb": 0}, []),
        "turn_off_lightbulb": ({"lightbulb": 1}, []),
        "turn_on_led": ({"led": 0}, []),
        "turn_off_led": ({"led": 1}, []),
        "push_into_drawer": ({"drawer": "open", "any_block": "table"}, []),
        "place_in_slider": ({"any_block": "table"}, ["lift_{b}_block_table"]),
        "place_in_drawer": ({"drawer": "open", "any_block": "table"}, ["lift_{b}_block_table"]),
        "stack_block": ({"two_blocks": "table"}, ["lift_{b}_block_table"]),
        "unstack_block": ({"two_blocks": "table"}, ["lift_{b}_block_table", "stack_block"]),
    }
    return table[task]


def satisfies(state: dict, conditions: dict) -> bool:
    on_table = [c for c in C.BLOCK_COLORS if state[f"{c}_block"] == "table"]
    for key, value in conditions.items():
        if key == "any_block" and not on_table:
            return False
        if key == "two_blocks" and len(on_table) < 2:
            return False
        if key.endswith("_block") and key != "any_block":
            if value == "slider":
                open_spot = "slider_left" if state["slider"] == "right" else "slider_right"
                if state[key] != open_spot:
                    return False
            elif state[key] != value:
                return False
        if key in ("slider", "drawer", "lightbulb", "led") and state[key] != value:
            return False
    return True


def draw_start(task: str, rng: np.random.Generator) -> tuple[dict, np.ndarray, list[str]]:
    conditions, prefix = requirement(task)
    while True:
        state = random_scene_state(rng)
        if satisfies(state, conditions):
            break
    on_table = [c for c in C.BLOCK_COLORS if state[f"{c}_block"] == "table"]
    block = on_table[int(rng.integers(len(on_table)))] if on_table else "red"
    chain = [t.format(b=block) for t in prefix] + [task]
    return state, scene_obs_for_state(state, rng), chain


def run_task(env, policy, task: str, starts: int, seed: int) -> dict:
    rng = np.random.default_rng([seed, TASKS.index(task)])
    ok = prefix_failed = 0
    steps = []
    for _ in range(starts):
        _, scene_obs, chain = draw_start(task, rng)
        record = run_chain(env, policy, C.NEUTRAL_ROBOT_OBS, scene_obs, chain, chain)
        last = record["extras"]["subtasks"][-1]
        if last["extras"]["task"] != task:
            prefix_failed += 1
            continue
        ok += int(last["success"])
        steps.append(last["steps"])
    runs = starts - prefix_failed
    return {
        "task": task,
        "success": ok,
        "runs": runs,
        "prefix_failed": prefix_failed,
        "rate": ok / runs if runs else float("nan"),
        "median_steps": float(np.median(steps)) if steps else None,
    }


def per_task(args: argparse.Namespace) -> None:
    env = gym.make("SpatialArena/CalvinPlayTable-State-v0")
    policy = ScriptedExpert()
    policy.bind(env)
    tasks = args.tasks.split(",") if args.tasks else TASKS
    rows = []
    start = time.perf_counter()
    for task in tasks:
        row = run_task(env, policy, task, args.starts, args.seed)
        rows.append(row)
        print(
            f"{task:28s} {row['success']:3d}/{row['runs']:<3d} {100 * row['rate']:6.1f}%  "
            f"prefix failed {row['prefix_failed']}  median steps {row['median_steps']}",
            flush=True,
        )
    rates = [r["rate"] for r in rows if r["runs"]]
    print(
        f"mean {100 * np.mean(rates):.1f}%  min {100 * np.min(rates):.1f}%  "
        f"({time.perf_counter() - start:.0f} s)"
    )
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    env.close()


def chains(args: argparse.Namespace) -> None:
    try:
        from envs.calvin.sequences import get_sequences, initial_env_state  # the protocol's module
    except ImportError as err:
        raise SystemExit(f"--chains needs envs.calvin.sequences (the protocol module): {err}") from err
    env = gym.make("SpatialArena/CalvinPlayTable-State-v0")
    policy = ScriptedExpert()
    policy.bind(env)
    lengths, per = [], {}
    for initial_state, tasks in get_sequences(args.chains):
        robot_obs, scene_obs = initial_env_state(initial_state)
        record = run_chain(env, policy, robot_obs, scene_obs, list(tasks), list(tasks))
        lengths.append(record["extras"]["num_completed"])
        for sub in record["extras"]["subtasks"]:
            s, t = per.get(sub["extras"]["task"], (0, 0))
            per[sub["extras"]["task"]] = (s + int(sub["success"]), t + 1)
    print(
        f"average length {np.mean(lengths):.2f} over {len(lengths)} chains; "
        + " ".join(f"{i}:{np.mean(np.array(lengths) >= i):.3f}" for i in range(1, 6))
    )
    for task, (s, t) in sorted(per.items()):
        print(f"{task:28s} {s:3d}/{t:<3d} {100 * s / t:6.1f}%")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--starts", type=int, default=10, help="scenes per task")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--tasks", default="", help="comma-separated subset of tasks")
    parser.add_argument("--chains", type=int, default=0, help="run the first N evaluation chains instead")
    parser.add_argument("--json", default="", help="also write the per-task rows to this file")
    args = parser.parse_args()
    chains(args) if args.chains else per_task(args)


if __name__ == "__main__":
    main()
