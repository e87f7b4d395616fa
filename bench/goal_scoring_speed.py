"""Speed of the goal-image scorers: 10,000 samples from raw model text to scores.

Prints the median of several repeats for each scorer and its ratio to a trivial baseline measured in the
same run (``json.loads`` of every prediction in a Python loop: the least work any scorer must do), so
the numbers mean something on a shared, noisy machine. Target: under a second per 10,000 samples.

    python bench/goal_scoring_speed.py [--n 10000] [--repeats 5]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics

import numpy as np

from action_mapping import (
    NAVIGATION_STEP_SIZES,
    Plan,
    PlanStep,
    Primitive,
    parse_plan,
    plan_to_trajectory,
)
from benchmarks.core.timing import wall_and_cpu
from benchmarks.scoring.goal import GoalReference, render_answer, score_paper_batch
from benchmarks.scoring.official.goal_lmms_eval import lmms_eval_truths, score_lmms_eval_batch

MOTIONS = Primitive.camera_motions()


def random_plan(rng: np.random.Generator, manip: bool) -> Plan:
    steps = []
    for _ in range(int(rng.integers(1, 7))):
        k = int(rng.integers(1, 4))
        actions = [MOTIONS[i] for i in rng.choice(len(MOTIONS), size=k, replace=False)]
        steps.append(
            PlanStep(
                actions,
                [int(n) for n in rng.integers(1, 11, size=k)],
                int(rng.integers(0, 2)) if manip else None,
            )
        )
    return Plan(steps=steps)


def make_workload(n: int, seed: int = 0) -> tuple[list[str], list[GoalReference]]:
    """Half navigation, half manipulation; half the truths carry a C2W trajectory. Predictions: 40% exact,
    40% another random plan (wrapped in prose and a ```json fence), 10% navigation single steps, 10% garbage."""
    rng = np.random.default_rng(seed)
    texts, refs = [], []
    for i in range(n):
        kind = "manip" if i % 2 else "nav"
        gt = random_plan(rng, kind == "manip")
        traj = (
            plan_to_trajectory(gt, np.eye(4), *NAVIGATION_STEP_SIZES.__dict__.values()) if i % 4 < 2 else None
        )
        refs.append(GoalReference(kind, gt, NAVIGATION_STEP_SIZES, trajectory=traj))
        r = rng.random()
        if r < 0.4:
            texts.append(render_answer(gt, kind))
        elif r < 0.8:
            texts.append(
                "Here is my plan:\n```json\n"
                + render_answer(random_plan(rng, kind == "manip"), kind)
                + "\n```"
            )
        elif r < 0.9:
            texts.append(json.dumps(random_plan(rng, False).steps[0].to_json(), ensure_ascii=False))
        else:
            texts.append("The camera should move forward a bit and then turn left.")
    return texts, refs


def baseline(texts: list[str], refs: list[GoalReference]) -> None:
    for t in texts:
        with contextlib.suppress(ValueError):
            json.loads(t)


def fresh(refs: list[GoalReference]) -> list[GoalReference]:
    """The same references without cached ground-truth arrays, so every repeat pays for them."""
    return [GoalReference(r.kind, r.plan, r.step_sizes, r.trajectory, r.lmms_eval_extra_info) for r in refs]


def timed(fn, texts, refs) -> tuple[float, float]:
    """(wall seconds, CPU seconds of this process): on a shared machine the CPU time is the steadier one."""
    refs = fresh(refs)
    return wall_and_cpu(lambda: fn(texts, refs))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    texts, refs = make_workload(args.n)
    cases = {
        "baseline: json.loads loop": baseline,
        # GC left on, as callers run it
        "parse only: parse_plan loop": lambda t, r: [parse_plan(x) for x in t],
        "paper scorer (parse + score)": score_paper_batch,
        "lmms-eval truths (derived once per dataset)": lambda t, r: lmms_eval_truths(r),
        "lmms-eval scorer (truths + parse + score)": score_lmms_eval_batch,
    }
    runs = {name: [timed(fn, texts, refs) for _ in range(args.repeats)] for name, fn in cases.items()}
    wall = {name: statistics.median(w for w, _ in r) for name, r in runs.items()}
    cpu = {name: statistics.median(c for _, c in r) for name, r in runs.items()}
    base = "baseline: json.loads loop"
    print(f"{args.n} samples, median of {args.repeats} runs (wall time, and CPU time of this process)")
    for name in cases:
        print(
            f"  {name:45s} wall {wall[name] * 1e3:7.1f} ms ({wall[name] / wall[base]:5.1f}x baseline)   "
            f"cpu {cpu[name] * 1e3:7.1f} ms ({cpu[name] / cpu[base]:5.1f}x baseline)"
        )
    budget = args.n / 10_000  # seconds allowed: 1 s per 10,000 samples
    for name in ("paper scorer (parse + score)", "lmms-eval scorer (truths + parse + score)"):
        verdict = "OK" if cpu[name] < budget else "OVER"
        print(f"  target < {budget:g} s: {name}: cpu {cpu[name]:.2f} s {verdict}, wall {wall[name]:.2f} s")


if __name__ == "__main__":
    main()
