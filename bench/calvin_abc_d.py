"""CALVIN ABC->D on a CPU with one command: play data in scenes A, B and C, a small backbone trained on it
with ``vla.train``, evaluated in scene D through ``benchmarks.calvin --scene D`` against blind baselines
on the same units.

1. Play data: ``spatial-arena demos --env calvin --scenes A,B,C --frames N --tasks T --window W`` (the
   scripted expert's play, one continuous episode per scene, CALVIN's layout; reused when ``OUT/data`` was
   made with the same settings).
2. Training: ``vla.train`` on ``OUT/data/training`` for ``--max-steps`` optimizer steps (warm-up, then a
   cosine decay to ``--min-lr-ratio`` of the peak, as ``bench/vla_learning.py``; a checkpoint every 50 steps, and a rerun with the same settings resumes
   from the last, so the model is the same on any machine and after a stop); ``--max-steps 0 --budget-min M``
   trains for a wall-clock budget instead. Checkpoint in ``OUT/run-<backbone>/checkpoints/last``.
3. Evaluation with the benchmark's own command, ``benchmarks.calvin --scene D --tasks T
   --num-sequences N`` (one-subtask episodes: the first N public evaluation chains that start with one of
   T, CALVIN's initial states, ``--ep-len`` steps): the trained model (``--policy vla --checkpoint``), a
   uniform random policy and CALVIN's blind constant actions (``bench/blind_baselines.py``'s candidates),
   all on the same units. Each is a run folder under ``OUT/eval/calvin/`` (resumed when it exists); the
   trained model's is ``scene-D``, so ``bench/calvin_scenes.py --output OUT/eval`` reuses it.
4. Report: success (the first subtask; with one-subtask units also the avg. len) with n and 95 % intervals
   (Wilson), and the trained model against the best blind policy on the shared units (exact McNemar,
   two-sided from ``benchmarks.evidence.compare`` and one-sided: the trained model better).
   ``--scenes A,B,C,D`` also evaluates the checkpoint in the training scenes and adds the side-by-side
   table of ``bench/calvin_scenes.py`` (each scene paired with D).

Deviations from the protocol, for a CPU: play and evaluation are restricted to the drawer (``--tasks``,
default ``open_drawer,close_drawer``: D's drawer sits where B's does, A's and C's elsewhere), the
evaluation runs one-subtask episodes of 180 steps instead of 5-subtask chains of 360, and the annotation
windows cover whole subtasks (``--window``, default 360) instead of CALVIN's last 64 frames: the scripted
expert takes about 110 steps per drawer subtask, so 64-frame windows hold only the drawer move and never
the reach to the handle that every evaluation episode starts with; and the play rests at the neutral pose
before every subtask (``--rest``, default 1), where every evaluation episode starts (without rests only an
episode's first subtask starts there, and the model learned nothing, not even in a training scene). The
defaults are the recipe that beat the blind baselines on D (bench/results/calvin_abc_d.md): 14 / 100 against
random 1 / 100 and 0 / 100 for every constant.
The full protocol on a GPU: ``bench/calvin_abc_d_gpu.sh``.

    python bench/calvin_abc_d.py --out outputs/calvin_abc_d        # about 65 min on 2 cores
    python bench/calvin_abc_d.py --scenes B,D                       # also a training scene, paired with D
    python bench/calvin_abc_d.py --scenes A,B,C,D --json bench/results/calvin_abc_d.json
    python bench/calvin_abc_d.py --tiny --out /tmp/abcd            # a dry run of every step (minutes)
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

try:  # imported as bench.calvin_abc_d (the tests), or run as a script with bench/ first on sys.path
    from bench.calvin_scenes import run_data, scene_tables
    from bench.vla_learning import plot_curve, prepared_backbone, same_settings, train_for_budget
except ModuleNotFoundError:
    from calvin_scenes import run_data, scene_tables
    from vla_learning import plot_curve, prepared_backbone, same_settings, train_for_budget

DRAWER = "open_drawer,close_drawer"
#: The play expert's drawer subtasks take about 110 steps (reach the handle, grasp, move it); a window
#: this long covers a whole subtask (windows never reach back before it), CALVIN's 64 frames only the move.
WHOLE_SUBTASK = 360
#: ``--tiny``: every step at the smallest size (a dry run of the recipe, not a measurement).
TINY = {"frames": 150, "max_steps": 2, "num_sequences": 2, "ep_len": 8, "batch_size": 4}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default="outputs/calvin_abc_d", help="data, training run and evaluation runs")
    p.add_argument("--train-scenes", default="A,B,C", help="scenes of the play data")
    p.add_argument("--frames", type=int, default=12000, help="play frames per training scene")
    p.add_argument("--tasks", default=DRAWER, help="subtasks of the play data and of the evaluation")
    p.add_argument(
        "--window", type=int, default=WHOLE_SUBTASK, help="annotation window (frames; CALVIN's: 64)"
    )
    p.add_argument(
        "--rest",
        type=float,
        default=1.0,
        help="play: probability of a rest at the neutral pose (where evaluation starts) before each subtask",
    )
    p.add_argument("--seed", type=int, default=0, help="seed of the play data, training and evaluation")
    p.add_argument("--backbone", default="efficientnet-lite0-frozen")
    p.add_argument("--cameras", default="rgb_static,rgb_gripper")
    p.add_argument("--image-size", type=int, default=128)
    p.add_argument("--augment", default="none", help="training-image augmentation (vla.train --augment)")
    p.add_argument("--max-steps", type=int, default=2000, help="optimizer steps (0: --budget-min instead)")
    p.add_argument(
        "--budget-min", type=float, default=10.0, help="with --max-steps 0: wall-clock budget (min)"
    )
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--lr", type=float, default=3e-4)
    p.add_argument("--warmup-steps", type=int, default=50)
    p.add_argument(
        "--min-lr-ratio", type=float, default=0.05, help="cosine decay to this fraction of --lr (1: constant)"
    )
    p.add_argument("--num-workers", type=int, default=1, help="data-loader workers")
    p.add_argument(
        "--feature-cache",
        type=int,
        default=80000,
        help="frozen EfficientNet: cached images (about 82 kB each)",
    )
    p.add_argument("--threads", type=int, default=1, help="torch threads (the machine is shared)")
    p.add_argument("--num-sequences", type=int, default=100, help="evaluation units per scene (see 3.)")
    p.add_argument("--ep-len", type=int, default=180, help="step budget per subtask (the protocol: 360)")
    p.add_argument("--execute-steps", type=int, default=5, help="actions executed per predicted chunk")
    p.add_argument("--workers", type=int, default=1, help="processes per evaluation run (never the results)")
    p.add_argument("--scenes", default="D", help="evaluation scenes of the trained model (D: the protocol)")
    p.add_argument("--no-baselines", action="store_true", help="evaluate only the trained model")
    p.add_argument("--eval-only", action="store_true", help="evaluate OUT's last checkpoint, no training")
    p.add_argument(
        "--report-only",
        action="store_true",
        help="run nothing: the report of the run folders as they are (a stopped run: its finished units)",
    )
    p.add_argument("--json", default="", help="also write the results file here (bench/results/...)")
    p.add_argument("--tiny", action="store_true", help="dry run: every step at the smallest size")
    args = p.parse_args(argv)
    if args.tiny:
        for key, value in TINY.items():
            setattr(args, key, value)
    args.eval_only = args.eval_only or args.report_only
    return args


# ------------------------------------------------------------------------------------------------ data


def play_data(args: argparse.Namespace, root: Path) -> dict[str, Any]:
    """The play data in ``root`` (``spatial-arena demos --env calvin``), reused when made the same way."""
    from vla.calvin_play import PlayConfig, generate

    config = PlayConfig(
        scenes=args.train_scenes,
        frames=args.frames,
        out=str(root),
        seed=args.seed,
        format="calvin",
        tasks=args.tasks,
        window=args.window,
        rest=args.rest,
    )
    report = root / f"play_{config.split}.json"
    if report.is_file():
        old = json.loads(report.read_text())
        if not same_settings(old["config"], config, ignore=("out",)):
            raise SystemExit(
                f"{root} holds play data made with other settings; remove it or pick another --out"
            )
        print(f"[data] reusing {root} ({old['frames']} frames)", flush=True)
        return dict(old)
    summary = generate(config)
    print(f"[data] {summary['frames']} frames in {summary['seconds']} s", flush=True)
    return summary


# ------------------------------------------------------------------------------------------- evaluation


def run_benchmark(args: argparse.Namespace, scene: str, name: str, policy: list[str]) -> dict[str, Any]:
    """One ``benchmarks.calvin`` run (resumed when its folder exists): the summary's data."""
    from benchmarks.calvin import main as calvin_main

    argv = ["--scene", scene, "--tasks", args.tasks, "--num-sequences", str(args.num_sequences)]
    argv += ["--ep-len", str(args.ep_len), "--seed", str(args.seed), "--workers", str(args.workers)]
    argv += ["--output", str(Path(args.out) / "eval"), "--run-name", name, "--resume", "--no-progress"]
    began = time.perf_counter()
    data = dict(calvin_main([*argv, *policy]).data)
    print(f"[eval] {name}: {headline(data)} ({time.perf_counter() - began:.0f} s)", flush=True)
    return data


def trained_policy(args: argparse.Namespace, checkpoint: Path) -> list[str]:
    return ["--policy", "vla", "--checkpoint", str(checkpoint), "--execute-steps", str(args.execute_steps)]


def blind_policies() -> dict[str, list[str]]:
    """Random and the blind constant actions :mod:`bench.blind_baselines` tries on CALVIN (no cameras)."""
    try:
        from bench.blind_baselines import FAMILIES, _label
    except ModuleNotFoundError:
        from blind_baselines import FAMILIES, _label

    runs = {"random": ["--policy", "random"]}
    for action in FAMILIES["calvin"].constants:
        runs[_label(action)] = ["--policy", "constant", "--action", json.dumps(action)]
    return {name: [*argv, "--cameras", "none"] for name, argv in runs.items()}


def rate(data: dict[str, Any]) -> dict[str, Any]:
    """First-subtask success with its n and 95 % Wilson interval, and the avg. len with its interval."""
    n = int(data["chains"])
    first = data["chain_sr"]["1"]
    return {
        "n": n,
        "first_subtask": first,
        "first_subtask_successes": round(first * n) if first is not None else None,
        "first_subtask_ci95": data["chain_sr_ci"]["1"],
        "avg_seq_len": data["avg_seq_len"],
        "avg_seq_len_ci95": data["avg_seq_len_ci"],
    }


def headline(data: dict[str, Any]) -> str:
    r = rate(data)
    low, high = r["first_subtask_ci95"] or (0.0, 1.0)
    return (
        f"{r['first_subtask_successes']}/{r['n']} first subtasks (95 % CI {100 * low:.0f}-{100 * high:.0f} %)"
    )


def paired(args: argparse.Namespace, baseline: str, model: str) -> dict[str, Any]:
    """The trained model against a baseline on their shared units: exact McNemar, two-sided (the
    comparison's) and one-sided (the trained model better), with the discordant counts."""
    from benchmarks.evidence.compare import compare_runs, shared_units
    from benchmarks.evidence.runs import load_run
    from benchmarks.stats.paired import mcnemar_one_sided_p

    folder = Path(args.out) / "eval" / "calvin"
    a, b = load_run(folder / baseline), load_run(folder / model)
    result = compare_runs(a, b)
    keys, _ = shared_units(a, b)
    only_b = sum(bool(b.units[k].success) and not a.units[k].success for k in keys)
    only_a = sum(bool(a.units[k].success) and not b.units[k].success for k in keys)
    one_sided = {"trained_only": only_b, "baseline_only": only_a, "p": mcnemar_one_sided_p(only_a, only_b)}
    return {"baseline": baseline, "units": result["units"], **result["overall"], "one_sided": one_sided}


# ---------------------------------------------------------------------------------------------- report


def report_tables(results: dict[str, Any], versus: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The headline table (every policy in scene D) and the paired comparison."""
    rows = []
    for name, data in results.items():
        r = rate(data)
        low, high = r["first_subtask_ci95"] or (None, None)
        rows.append(
            [name, r["n"], r["first_subtask_successes"], _pct(r["first_subtask"], low, high), _len(r)]
        )
    tables = [
        {
            "caption": "scene D: first-subtask success with n and 95 % intervals (Wilson; avg. len: bootstrap)",
            "columns": ["policy", "n", "successes", "first subtask % [95 % CI]", "avg. len [95 % CI]"],
            "rows": rows,
        }
    ]
    if versus:
        s, one = versus["success"], versus["one_sided"]
        ci = s["ci"] or (None, None)
        row = [versus["baseline"], s["n"], _pct(s["difference"], *ci), f"{one['trained_only']} / "]
        row[-1] += str(one["baseline_only"])
        tables.append(
            {
                "caption": "trained vs the best blind policy on the same units (exact McNemar)",
                "columns": [
                    "baseline",
                    "paired units",
                    "difference % [95 % CI]",
                    "solved by trained only / baseline only",
                    "p (two-sided)",
                    "p (one-sided: trained better)",
                ],
                "rows": [[*row, _p(s["p_value"]), _p(one["p"])]],
            }
        )
    return tables


def _pct(value: float | None, low: float | None, high: float | None) -> str:
    if value is None:
        return "n/a"
    interval = "" if low is None or high is None else f" [{100 * low:.1f}, {100 * high:.1f}]"
    return f"{100 * value:.1f}{interval}"


def _len(r: dict[str, Any]) -> str:
    ci = r["avg_seq_len_ci95"]
    value = "n/a" if r["avg_seq_len"] is None else f"{r['avg_seq_len']:.3f}"
    return value if not ci else f"{value} [{ci[0]:.3f}, {ci[1]:.3f}]"


def _p(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2g}"


def markdown(table: dict[str, Any]) -> str:
    lines = [f"**{table['caption']}**", "", "| " + " | ".join(table["columns"]) + " |"]
    lines.append("|" + "---|" * len(table["columns"]))
    return "\n".join([*lines, *("| " + " | ".join(str(c) for c in row) + " |" for row in table["rows"])])


# ------------------------------------------------------------------------------------------------ main


def train(args: argparse.Namespace, out: Path) -> tuple[Path, dict[str, Any]]:
    """``vla.train`` on the play data for the budget (or the last checkpoint with ``--eval-only``)."""
    tag = args.backbone.rstrip("/").split("/")[-1]
    backbone = prepared_backbone(args, out)
    final, training = train_for_budget(args, backbone, out / "data" / "training", out / f"run-{tag}")
    final = final.resolve()  # checkpoints/last names the step, so a rerun resumes the same evaluations
    title = f"ABC->D play ({args.tasks}): {tag}, {training['steps']} steps"
    plot_curve(training["log"], out / f"loss_curve-{tag}.png", title)
    log = training.pop("log")
    return final, {**training, "first_loss": log[0]["loss"], "final_loss": log[-1]["loss"]}


def evaluate(args: argparse.Namespace, checkpoint: Path) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """The trained model and the blind policies in scene D; the paired comparison with the best blind."""
    results = {"trained": run_benchmark(args, "D", "scene-D", trained_policy(args, checkpoint))}
    if args.no_baselines:
        return results, None
    blind = {name: run_benchmark(args, "D", name, argv) for name, argv in blind_policies().items()}
    best = max(blind, key=lambda k: blind[k]["avg_seq_len"] or 0.0)  # first of equals: candidate order
    return {**results, **blind}, paired(args, best, "scene-D")


def collected(args: argparse.Namespace) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """``--report-only``: the scene-D runs as their folders hold them (finished or stopped), nothing run."""
    folder = Path(args.out) / "eval" / "calvin"
    names = [n for n in ["scene-D", *blind_policies()] if (folder / n / "records.jsonl").is_file()]
    results = {("trained" if n == "scene-D" else n): run_data(folder / n) for n in names}
    blind = {k: v for k, v in results.items() if k != "trained" and v["chains"]}
    if "trained" not in results or not blind:
        return results, None
    best = max(blind, key=lambda k: blind[k]["avg_seq_len"] or 0.0)
    return results, paired(args, best, "scene-D")


def scenes_summary(args: argparse.Namespace, checkpoint: Path) -> list[dict[str, Any]]:
    """The checkpoint in every ``--scenes`` scene, side by side, each paired with D."""
    folder = Path(args.out) / "eval" / "calvin"
    scenes = [s.strip().upper() for s in args.scenes.split(",") if s.strip()]
    if args.report_only:
        scenes = [s for s in scenes if (folder / f"scene-{s}" / "records.jsonl").is_file()]
    if len(scenes) < 2:
        return []
    for scene in [] if args.report_only else scenes:
        run_benchmark(args, scene, f"scene-{scene}", trained_policy(args, checkpoint))
    return scene_tables(folder, scenes, reference="D")


def main(argv: list[str] | None = None) -> dict[str, Any]:
    import torch

    from benchmarks.core.manifest import machine_line

    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    out = Path(args.out)
    began = time.perf_counter()
    data = play_data(args, out / "data")
    checkpoint, training = train(args, out)
    results, versus = collected(args) if args.report_only else evaluate(args, checkpoint)
    tables = report_tables(results, versus) + scenes_summary(args, checkpoint)
    summary = {
        "title": "CALVIN ABC->D on a CPU: play data A, B, C -> vla.train -> benchmarks.calvin --scene D",
        "source": "bench/calvin_abc_d.py",
        "command": " ".join(["python", "bench/calvin_abc_d.py", *(sys.argv[1:] if argv is None else argv)]),
        "date": datetime.date.today().isoformat(),
        "machine": machine_line(),
        "args": vars(args),
        "play": {k: data[k] for k in ("frames", "seconds", "scenes")},
        "training": training,
        "results": {k: rate(v) for k, v in results.items()},
        "versus_best_blind": versus,
        "wall_s": round(time.perf_counter() - began, 1),
        "load_average_at_end": [round(x, 2) for x in os.getloadavg()],  # the machine is shared
        "tables": tables,
    }
    text = json.dumps(summary, indent=1, default=str) + "\n"
    (out / "results.json").write_text(text)
    if args.json:
        Path(args.json).write_text(text)
    print("\n\n".join(markdown(t) for t in tables), flush=True)
    return summary


if __name__ == "__main__":
    main()
