"""Create, reset and settle every LIBERO task; record how far objects move during the settle steps.

Two uses: a smoke check that all 130 tasks build, reset and step on this install, and a fidelity probe
for MuJoCo versions (LIBERO's initial states are not at rest; how objects settle depends on the
contact code). Run it under two MuJoCo versions and compare the JSON files::

    python bench/libero_settle_check.py --out settle_mj39.json
    PYTHONPATH=/path/to/mujoco330 python bench/libero_settle_check.py --out settle_mj330.json
    python bench/libero_settle_check.py --compare settle_mj39.json settle_mj330.json
"""

from __future__ import annotations

import argparse
import json
import time

import mujoco
import numpy as np

from envs.libero import protocol


def free_joint_positions(sim) -> dict[str, np.ndarray]:
    """World positions of every free-jointed (movable) object, by joint name."""
    model = sim.model._model
    out = {}
    for j in range(model.njnt):
        if model.jnt_type[j] == mujoco.mjtJoint.mjJNT_FREE:
            adr = model.jnt_qposadr[j]
            out[mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_JOINT, j)] = sim.data.qpos[adr : adr + 3].copy()
    return out


def settle_record(suite: str, task_index: int, init_state_index: int, image_size: int) -> dict:
    from envs.libero import make_libero_env

    start = time.perf_counter()
    env = make_libero_env(suite, task_index, image_size=image_size, num_steps_wait=0)
    try:
        env.reset(seed=0, options={"init_state_index": init_state_index})
        sim = env.raw_env.sim
        before = free_joint_positions(sim)
        peak = {k: v[2] for k, v in before.items()}
        for _ in range(protocol.NUM_STEPS_WAIT):
            env.raw_env.step(protocol.settle_action().astype(np.float64))
            for k, v in free_joint_positions(sim).items():
                peak[k] = max(peak[k], v[2])
        after = free_joint_positions(sim)
        success = env.evaluate()["success"]
    finally:
        env.close()
    return {
        "suite": suite,
        "task_index": task_index,
        "objects": {
            k: {"start": before[k].tolist(), "settled": after[k].tolist(), "peak_z": float(peak[k])}
            for k in before
        },
        "success_after_settle": success,
        "seconds": round(time.perf_counter() - start, 2),
    }


def _records(path: str) -> dict[tuple[str, int], dict]:
    with open(path) as f:
        return {(r["suite"], r["task_index"]): r for r in json.load(f)["records"]}


def compare(path_a: str, path_b: str, threshold_m: float) -> None:
    a, b = _records(path_a), _records(path_b)
    differing = []
    for key in sorted(set(a) & set(b)):
        gaps = {
            name: float(np.linalg.norm(np.subtract(obj["settled"], b[key]["objects"][name]["settled"])))
            for name, obj in a[key]["objects"].items()
        }
        worst = max(gaps, key=gaps.get)
        if gaps[worst] > threshold_m:
            differing.append((key, worst, gaps[worst]))
    print(
        f"{len(differing)} of {len(set(a) & set(b))} tasks differ by > {threshold_m * 100:.1f} cm after settling"
    )
    for (suite, index), name, gap in differing:
        print(f"  {suite} {index}: {name} {gap * 100:.1f} cm")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", help="write per-task records here (JSON)")
    parser.add_argument("--suites", nargs="*", default=list(protocol.SUITES))
    parser.add_argument("--init-state-index", type=int, default=0)
    parser.add_argument("--image-size", type=int, default=64)
    parser.add_argument("--compare", nargs=2, metavar=("A", "B"))
    parser.add_argument("--threshold-cm", type=float, default=1.0)
    args = parser.parse_args()
    if args.compare:
        compare(*args.compare, threshold_m=args.threshold_cm / 100)
        return
    records = []
    for suite in args.suites:
        for index in range(protocol.TASK_COUNTS[suite]):
            records.append(settle_record(suite, index, args.init_state_index, args.image_size))
            jump = max(o["peak_z"] - o["start"][2] for o in records[-1]["objects"].values())
            print(
                f"{suite} {index}: ok in {records[-1]['seconds']} s, highest rise {jump * 100:.1f} cm",
                flush=True,
            )
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"mujoco": mujoco.__version__, "records": records}, f)


if __name__ == "__main__":
    main()
