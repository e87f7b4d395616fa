"""Learning evidence for the VLA recipe: expert demos -> bounded CPU training -> closed-loop success.

1. Demonstrations: ``vla.demos`` records the scripted expert on one play-table task from varied initial
   states (evaluation-style scenes, start joints + Gaussian noise), CALVIN layout, successes only.
2. Training: ``vla.train`` (the same code as ``python -m vla.train``) for a wall-clock budget (or a fixed
   number of optimizer steps, ``--max-steps``: reproducible, and resumed when interrupted): linear warm-up,
   then a constant learning rate until the budget is spent.
3. Evaluation in closed loop on the play-table, on held-out initial states drawn from another seed with
   the same distribution, with CALVIN's subtask rules (``benchmarks.calvin.chain.run_chain``: oracle success,
   ``--ep-len`` steps): the trained model, the same architecture untrained (fresh head, same seed), an
   open-loop replay of the training demonstrations (blind: what memorising the motion gets) and the
   expert itself (the ceiling).

Outputs under ``--out``: ``data/`` (reused when its settings match), ``run-<backbone>/`` (checkpoints,
``train_log.jsonl``), ``<backbone>/loss_curve.png`` + ``loss_curve.jsonl``, ``<backbone>/results.json``.

    python bench/vla_learning.py --backbone efficientnet-lite0-frozen --budget-min 20
    python bench/vla_learning.py --backbone tiny-qwen2.5-vl --image-size 224 --lr 5e-4 --batch-size 16

``--env libero`` does the same on one LIBERO task: demonstrations from ``spatial-arena demos --env libero``
(the scripted LIBERO expert, both cameras, LeRobotDataset v3, from the fixed initial states
``--train-states``), training on that LeRobot dataset, and evaluation with the benchmark's own episode
(``benchmarks.libero.episode.run_episode``: 10 settle steps, the suite's step budget) from the held-out
initial states ``--eval-states`` (each ``--eval-repeats`` times, with different reset seeds) for the
trained model, a random policy, a constant policy (the settle action: hold still, gripper open) and the
expert (the ceiling). Baselines that do not look run without cameras.

    python bench/vla_learning.py --env libero --suite libero_goal --task-index 7 --train-episodes 30 \
        --budget-min 20 --out outputs/vla_learning_libero
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from benchmarks.core.latency import Latency

if TYPE_CHECKING:
    from _typeshed import DataclassInstance


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--env", choices=("calvin", "libero"), default="calvin")
    p.add_argument("--task", default="open_drawer", help="CALVIN task (--env calvin)")
    p.add_argument("--suite", default="libero_goal", help="LIBERO suite (--env libero)")
    p.add_argument(
        "--task-index", type=int, default=7, help="LIBERO task (default: libero_goal 7, turn on the stove)"
    )
    p.add_argument(
        "--train-states", default="0-39", help="LIBERO: fixed initial states of the demonstrations"
    )
    p.add_argument("--eval-states", default="40-49", help="LIBERO: held-out fixed initial states")
    p.add_argument("--eval-repeats", type=int, default=2, help="LIBERO: episodes per held-out state (seeds)")
    p.add_argument("--demo-workers", type=int, default=1, help="LIBERO: processes recording demonstrations")
    p.add_argument("--train-episodes", type=int, default=80)
    p.add_argument("--eval-episodes", type=int, default=30)
    p.add_argument(
        "--seed", type=int, default=0, help="training demos use it; held-out starts use seed + 1000"
    )
    p.add_argument("--joint-noise", type=float, default=0.1)
    p.add_argument("--backbone", default="efficientnet-lite0-frozen")
    p.add_argument(
        "--cameras", default=None, help="default: rgb_static,rgb_gripper / agentview_rgb,eye_in_hand_rgb"
    )
    p.add_argument("--image-size", type=int, default=128)
    p.add_argument("--augment", default="none", help="training-image augmentation (vla.train --augment)")
    p.add_argument("--budget-min", type=float, default=20.0, help="training wall-clock budget (minutes)")
    p.add_argument(
        "--max-steps",
        type=int,
        default=None,
        help="train for exactly this many optimizer steps instead of --budget-min (reproducible; a run "
        "interrupted with the same settings continues from its last checkpoint)",
    )
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--lr", type=float, default=3e-4)
    p.add_argument("--warmup-steps", type=int, default=50)
    p.add_argument(
        "--min-lr-ratio",
        type=float,
        default=1.0,
        help="with --max-steps: cosine decay to this fraction of --lr (1: constant, as a wall-clock budget)",
    )
    p.add_argument("--num-workers", type=int, default=1)
    p.add_argument(
        "--feature-cache",
        type=int,
        default=40000,
        help="efficientnet-lite0-frozen: cache up to N training images' features (0: off)",
    )
    p.add_argument("--threads", type=int, default=1, help="torch threads (the machine is shared)")
    p.add_argument("--execute-steps", type=int, default=None, help="default: 5 (CALVIN), 4 (LIBERO: a chunk)")
    p.add_argument("--ep-len", type=int, default=360, help="steps per evaluation episode (CALVIN: 360)")
    p.add_argument("--skip-baselines", action="store_true", help="evaluate only the trained model")
    p.add_argument(
        "--eval-only",
        action="store_true",
        help="skip training: evaluate the newest checkpoint of an earlier run in OUT/run-<backbone>",
    )
    p.add_argument("--out", default="outputs/vla_learning")
    args = p.parse_args(argv)
    libero = args.env == "libero"
    if args.cameras is None:
        args.cameras = "agentview_rgb,eye_in_hand_rgb" if libero else "rgb_static,rgb_gripper"
    if args.execute_steps is None:
        args.execute_steps = 4 if libero else 5
    return args


# ------------------------------------------------------------------------------------------- data


def same_settings(saved: dict, config: DataclassInstance, ignore: tuple[str, ...] = ()) -> bool:
    """Whether ``saved`` (a dataclass ``config`` as written to JSON earlier) describes ``config``; a field
    added since it was saved counts at its default, so older data and runs stay reusable."""
    defaults = {f.name: f.default for f in dataclasses.fields(config) if f.default is not dataclasses.MISSING}
    theirs = {**json.loads(json.dumps(defaults)), **saved}
    mine = json.loads(json.dumps(dataclasses.asdict(config)))
    return {k: v for k, v in theirs.items() if k not in ignore} == {
        k: v for k, v in mine.items() if k not in ignore
    }


def demonstrations(args: argparse.Namespace, root: Path) -> dict:
    """Generate the training demos, or reuse ``root`` when it was made with the same settings."""
    from vla.demos import DemoConfig, generate

    config = DemoConfig(
        task=args.task,
        episodes=args.train_episodes,
        out=str(root),
        seed=args.seed,
        cameras="static,gripper",
        joint_noise=args.joint_noise,
    )
    manifest = root / "demos_training.json"
    if manifest.is_file():
        old = json.loads(manifest.read_text())
        if same_settings(old["config"], config, ignore=("out",)):  # the folder may have moved
            print(f"[data] reusing {root} ({old['kept']} demos, {old['frames']} frames)", flush=True)
            return old
        raise SystemExit(f"{root} holds demos made with other settings; remove it or pick another --out")
    summary = generate(config)
    print(
        f"[data] {summary['kept']}/{summary['attempts']} kept, {summary['frames']} frames, "
        f"{summary['seconds']} s",
        flush=True,
    )
    return summary


# ------------------------------------------------------------------------------------------- training


def train_config(args: argparse.Namespace, backbone: str, data: Path, output: Path, **overrides: object):
    from vla.train import TrainConfig

    values = dict(
        backbone=backbone,
        data=str(data),
        output=str(output),
        cameras=tuple(args.cameras.split(",")),
        image_size=args.image_size,
        batch_size=args.batch_size,
        lr=args.lr,
        warmup_steps=args.warmup_steps,
        num_workers=getattr(args, "num_workers", 0),  # vla_compare trains in-process
        log_every=10,
        save_every=10**9,
        keep_checkpoints=1,
        seed=args.seed,
        augment=getattr(args, "augment", "none"),  # vla_compare has no --augment
    )
    values.update(overrides)
    return TrainConfig(**values)


def train_for_budget(args: argparse.Namespace, backbone: str, data: Path, run: Path) -> tuple[Path, dict]:
    """Warm-up, then a constant learning rate until the wall-clock budget (or ``--max-steps``) is spent.

    How many steps fit a budget on a shared machine is not known in advance (and with a feature cache the
    first epoch is far slower than the rest), so there is no step-planned cosine decay here."""
    from vla.train import train

    wall = None  # not measured in this invocation
    if args.eval_only:
        final = run / "checkpoints" / "last"
        if not final.exists():
            raise SystemExit(f"--eval-only: no checkpoint at {final}; run once without --eval-only to train")
    else:
        began = time.perf_counter()
        final = train(train_config(args, backbone, data, run, **budget_settings(args, backbone, data, run)))
        wall = round(time.perf_counter() - began, 1)
    log = [json.loads(line) for line in (run / "train_log.jsonl").read_text().splitlines()]
    return final, {
        "steps": log[-1]["step"],
        "samples": log[-1]["step"] * args.batch_size,
        "epochs": log[-1]["epoch"],
        "wall_s": wall,
        "train_s": log[-1]["elapsed_s"],
        "log": log,
    }


def budget_settings(args: argparse.Namespace, backbone: str, data: Path, run: Path) -> dict[str, object]:
    """The training config's budget: ``--budget-min`` of wall clock from scratch, or ``--max-steps`` optimizer
    steps, resumed from ``run``'s last checkpoint when ``run`` was started with the same settings (a
    finished one is then reused as it is)."""
    import shutil

    from vla.train import TRAIN_CONFIG_FILE

    if not getattr(args, "max_steps", None):  # None or 0: the wall clock
        shutil.rmtree(run, ignore_errors=True)
        return dict(max_steps=10**7, time_budget_s=60.0 * args.budget_min, min_lr_ratio=1.0)
    settings: dict[str, object] = dict(
        max_steps=args.max_steps, time_budget_s=None, min_lr_ratio=args.min_lr_ratio, save_every=50
    )
    wanted = train_config(args, backbone, data, run, **settings)
    saved = run / TRAIN_CONFIG_FILE
    old = json.loads(saved.read_text()) if saved.is_file() else None
    if (
        old is not None
        and same_settings({**old, "resume": False}, wanted)
        and (run / "checkpoints" / "last").exists()
    ):
        print(f"[train] continuing {run} (same settings) to step {args.max_steps}", flush=True)
        return {**settings, "resume": True}
    shutil.rmtree(run, ignore_errors=True)
    return settings


def prepared_backbone(args: argparse.Namespace, out: Path) -> str:
    """The backbone to train: ``--backbone`` itself, or for a frozen EfficientNet with ``--feature-cache``
    a saved copy whose config turns the training feature cache on."""
    if args.backbone != "efficientnet-lite0-frozen" or args.feature_cache <= 0:
        return args.backbone
    from vla.vision_backbones import NAMED_CONFIGS, EfficientNetLiteBackbone, EfficientNetVLAConfig

    target = out / "backbones" / f"{args.backbone}-cache"
    config = EfficientNetVLAConfig(**NAMED_CONFIGS[args.backbone], feature_cache=args.feature_cache)
    EfficientNetLiteBackbone(config, pretrained=True).save(target)
    return str(target)


def plot_curve(log: list[dict], path: Path, title: str) -> None:
    from benchmarks.core.plots import line_plot

    steps = [row["step"] for row in log]
    series = {
        "loss": [row["loss"] for row in log],
        "arm (Huber)": [row["loss_arm"] for row in log],
        "gripper (BCE x 0.01)": [0.01 * row["loss_gripper"] for row in log],
    }
    line_plot(path, steps, series, xlabel="optimizer step", ylabel="training loss", title=title, ylim=None)


# ----------------------------------------------------------------------------------------- evaluation


def held_out_starts(args: argparse.Namespace) -> list:
    from vla.demos import attempt_rng, sample_start

    return [
        sample_start(args.task, attempt_rng(args.seed + 1000, 0, i), args.joint_noise)
        for i in range(args.eval_episodes)
    ]


def evaluate(
    policy,
    starts: list,
    args: argparse.Namespace,
    cameras: tuple[str, ...],
    label: str,
    latency: Latency | None = None,
) -> dict:
    """Closed-loop success of ``policy`` on each start (one subtask, CALVIN's rules; the world waits for the
    policy unless a ``latency`` is given, :mod:`benchmarks.core.latency`)."""
    from benchmarks.calvin.chain import run_chain
    from envs.calvin.env import PlayTableEnv
    from envs.calvin.instructions import instruction_for

    if any(s.prefix for s in starts):
        raise SystemExit(f"{args.task} needs setup tasks before it; pick a task valid from initial states")
    env = PlayTableEnv(cameras=cameras)
    policy.bind(env)
    instruction, results, began = instruction_for(args.task), [], time.perf_counter()
    try:
        for i, start in enumerate(starts):
            record = run_chain(
                env,
                policy,
                start.robot_obs,
                start.scene_obs,
                [args.task],
                [instruction],
                ep_len=args.ep_len,
                seed=i,
                replay_key=f"ep-{i}",
                latency=latency,
            )
            sub = record["extras"]["subtasks"][0]
            results.append({"success": sub["success"], "steps": sub["steps"]})
    finally:
        env.close()
    return _rate(results, label, time.perf_counter() - began)


def wilson_interval(successes: int, trials: int) -> tuple[float, float]:
    """The 95 % Wilson score interval of a success rate (:func:`benchmarks.stats.intervals.wilson`), to
    4 places as the results files hold it."""
    from benchmarks.stats.intervals import wilson

    low, high = wilson(successes, trials).bounds(4) or (0.0, 1.0)
    return low, high


def vla_policy(model, args: argparse.Namespace):
    from vla.policy import VLAPolicy

    return VLAPolicy(model, execute_steps=args.execute_steps)


def replay_policy(data: Path, count: int):
    """Open-loop replay of training demonstration ``i mod n`` in held-out episode ``i``."""
    from policies.baselines import ReplayPolicy
    from vla.data.calvin import EPISODES_FILE, frame_path

    root = data / "training"
    episodes = np.load(root / EPISODES_FILE)
    sequences = {}
    for i in range(count):
        first, last = episodes[i % len(episodes)]
        sequences[f"ep-{i}/0"] = [np.load(frame_path(root, t))["rel_actions"] for t in range(first, last + 1)]
    return ReplayPolicy(sequences)


def env_cameras(model_cameras: list[str]) -> tuple[str, ...]:
    return tuple(c.removeprefix("rgb_") for c in model_cameras)


def main(argv: list[str] | None = None) -> None:
    import torch

    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    if args.env == "libero":
        run_libero(args)
    else:
        run_calvin(args)


def run_calvin(args: argparse.Namespace) -> None:
    from vla.model import VLAModel

    out = Path(args.out)
    data = out / "data"
    demo_summary = demonstrations(args, data)
    tag = args.backbone.rstrip("/").split("/")[-1]
    report_dir = out / tag
    report_dir.mkdir(parents=True, exist_ok=True)

    backbone = prepared_backbone(args, out)
    final, training = train_for_budget(args, backbone, data, out / f"run-{tag}")
    (report_dir / "loss_curve.jsonl").write_text("".join(json.dumps(r) + "\n" for r in training["log"]))
    plot_curve(
        training["log"],
        report_dir / "loss_curve.png",
        f"{args.task}: {tag}, {training['steps']} steps, {training['train_s'] / 60:.0f} min CPU",
    )

    starts = held_out_starts(args)
    trained = VLAModel.from_pretrained(final)
    cameras = env_cameras(trained.config.cameras)
    results = {"trained": evaluate(vla_policy(trained, args), starts, args, cameras, "trained")}
    if not args.skip_baselines:
        c = trained.config
        untrained = VLAModel.build(
            backbone,
            normalizer=trained.normalizer,
            seed=args.seed,
            chunk_size=c.chunk_size,
            cameras=list(c.cameras),
            image_size=c.image_size,
        ).eval()
        results["untrained"] = evaluate(vla_policy(untrained, args), starts, args, cameras, "untrained")
        results["replay_demos_open_loop"] = evaluate(
            replay_policy(data, len(starts)), starts, args, (), "replay"
        )
        from policies.experts.calvin import ScriptedExpert

        results["expert"] = evaluate(ScriptedExpert(), starts, args, (), "expert")
    summary = {
        "args": vars(args),
        "demos": {k: demo_summary[k] for k in ("attempts", "kept", "kept_fraction", "frames")},
        "training": {k: v for k, v in training.items() if k != "log"},
        "final_loss": training["log"][-1]["loss"],
        "first_loss": training["log"][0]["loss"],
        "checkpoint": str(final),
        "results": results,
    }
    (report_dir / "results.json").write_text(json.dumps(summary, indent=1) + "\n")
    print(json.dumps({k: (v["success"], v["episodes"]) for k, v in results.items()}), flush=True)
    print(json.dumps(summary["training"]), flush=True)


# --------------------------------------------------------------------------------------------- LIBERO


def libero_demonstrations(args: argparse.Namespace, root: Path) -> dict:
    """The training demos (LeRobot v3), recorded or continued with ``spatial-arena demos --env libero``."""
    from vla.libero_demos import SUMMARY, LiberoDemoConfig, generate

    config = LiberoDemoConfig(
        suite=args.suite,
        tasks=str(args.task_index),
        episodes=args.train_episodes,
        out=str(root),
        format="lerobot",
        states=args.train_states,
        seed=args.seed,
        image_size=args.image_size,
        workers=args.demo_workers,
        resume=(root / SUMMARY).is_file(),
    )
    summary = generate(config)
    print(
        f"[data] {summary['kept']} kept, {summary['discarded']} discarded, {summary['frames']} frames, "
        f"{summary['seconds']} s ({summary['episodes_per_minute']} episodes/min)",
        flush=True,
    )
    return summary


def libero_units(args: argparse.Namespace) -> list[tuple[int, int]]:
    """(held-out initial state, reset seed) of each evaluation episode."""
    from envs.libero.protocol import NUM_INIT_STATES, parse_indices

    states = parse_indices(args.eval_states, NUM_INIT_STATES, "--eval-states")
    return [(s, 1000 + args.seed + r * NUM_INIT_STATES + s) for r in range(args.eval_repeats) for s in states]


def libero_evaluate(policy, args: argparse.Namespace, label: str, cameras: bool) -> dict:
    """Closed-loop success of ``policy`` on the held-out units (the benchmark's episode and budget)."""
    from benchmarks.libero.episode import run_episode
    from envs.libero.env import LiberoEnv
    from envs.libero.protocol import MAX_STEPS, NUM_STEPS_WAIT

    env = LiberoEnv(args.suite, args.task_index, image_size=args.image_size, cameras=cameras)
    policy.bind(env)
    results, began = [], time.perf_counter()
    try:
        for state, seed in libero_units(args):
            record = run_episode(
                env,
                policy,
                init_state_index=state,
                max_steps=MAX_STEPS[args.suite],
                num_steps_wait=NUM_STEPS_WAIT,
                seed=seed,
            )
            results.append(
                {"state": state, "seed": seed, "success": bool(record["success"]), "steps": record["steps"]}
            )
            print(f"[eval] {label}: {results[-1]}", flush=True)
    finally:
        env.close()
    return _rate(results, label, time.perf_counter() - began)


def _rate(results: list[dict], label: str, seconds: float) -> dict:
    rate = success_rate(results)
    low, high = rate["ci95"]
    print(
        f"[eval] {label}: {rate['success']}/{rate['episodes']} (95% CI {100 * low:.0f}-{100 * high:.0f} %, "
        f"{seconds:.0f} s)",
        flush=True,
    )
    return {**rate, "seconds": round(seconds, 1)}


def success_rate(results: list[dict]) -> dict:
    """Successes, episodes, rate and 95 % Wilson interval of per-episode ``results`` (kept beside them)."""
    wins = sum(r["success"] for r in results)
    low, high = wilson_interval(wins, len(results))
    return {
        "success": wins,
        "episodes": len(results),
        "rate": wins / len(results),
        "ci95": [low, high],
        "per_episode": results,
    }


def run_libero(args: argparse.Namespace) -> None:
    from policies.baselines import ConstantPolicy, RandomPolicy
    from policies.experts.libero import LiberoExpert
    from vla.model import VLAModel

    out = Path(args.out)
    demo_summary = libero_demonstrations(args, out / "data")
    tag = args.backbone.rstrip("/").split("/")[-1]
    report_dir = out / tag
    report_dir.mkdir(parents=True, exist_ok=True)
    backbone = prepared_backbone(args, out)
    final, training = train_for_budget(args, backbone, out / "data" / "lerobot", out / f"run-{tag}")
    (report_dir / "loss_curve.jsonl").write_text("".join(json.dumps(r) + "\n" for r in training["log"]))
    title = f"{args.suite} task {args.task_index}: {tag}, {training['steps']} steps"
    plot_curve(training["log"], report_dir / "loss_curve.png", title)
    results = {}
    if not args.skip_baselines:  # the blind ones first: they are cheap (no cameras)
        results["random"] = libero_evaluate(RandomPolicy(), args, "random", cameras=False)
        hold = [0, 0, 0, 0, 0, 0, -1]  # the settle action: hold still, gripper open
        results["constant"] = libero_evaluate(ConstantPolicy(hold), args, "constant", cameras=False)
        results["expert"] = libero_evaluate(LiberoExpert(), args, "expert", cameras=False)
    trained = VLAModel.from_pretrained(final)
    results["trained"] = libero_evaluate(vla_policy(trained, args), args, "trained", cameras=True)
    summary = {
        "args": vars(args),
        "demos": {k: demo_summary[k] for k in ("attempts", "kept", "discarded", "frames", "seconds")},
        "training": {k: v for k, v in training.items() if k != "log"},
        "final_loss": training["log"][-1]["loss"],
        "first_loss": training["log"][0]["loss"],
        "checkpoint": str(final),
        "results": results,
    }
    (report_dir / "results.json").write_text(json.dumps(summary, indent=1) + "\n")
    print(json.dumps({k: (v["success"], v["episodes"]) for k, v in results.items()}), flush=True)


if __name__ == "__main__":
    main()
