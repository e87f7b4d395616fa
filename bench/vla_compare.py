"""Backbone comparison (VLM4VLA's experiment): the same head, data, budget and evaluation for several backbones.

For every ``--backbones`` entry, in one run:

1. the same demonstrations (``vla.demos``: the scripted expert on one play-table task, CALVIN layout;
   generated once under ``OUT/data`` and reused, or ``--data DIR``);
2. the same recipe (``vla.train``: action token + FCDecoder head, Huber + 0.01 BCE, published
   normalisation), the same seed, batch, learning rate and a fixed budget of ``--steps`` optimizer steps
   (linear warm-up, then cosine to 1 %: the published schedule, planned over the budget);
3. the same closed-loop evaluation: held-out initial states drawn from ``--seed + 1000`` (the same
   episodes for every backbone), CALVIN's subtask rules (oracle success within ``--ep-len`` steps).

Writes ``OUT/comparison.md`` (one table: backbone, parameters, training time and loss, success with a
95 % Wilson interval, ms per policy query), ``OUT/comparison.json`` and ``OUT/comparison.png`` (success
rates with intervals, and the training-loss curves). Laptop scale (tiny random-weight backbones, CPU)::

    python bench/vla_compare.py --out outputs/vla_compare
    python bench/vla_compare.py --backbones tiny-qwen3-vl,tiny-kosmos2 --steps 200 --eval-episodes 10

GPU scale (the published setting; real checkpoints, see the backbone table in docs/guide/vla.md)::

    python bench/vla_compare.py --backbones /ckpt/Qwen3-VL-4B-Instruct,/ckpt/kosmos-2-patch14-224,... \\
        --train-episodes 1000 --steps 5000 --batch-size 128 --lr 2e-5 --image-size 224 --device cuda \\
        --eval-episodes 100 --ep-len 360
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

try:  # imported as bench.vla_compare (the tests), or run as a script with bench/ first on sys.path
    from bench.vla_learning import demonstrations, held_out_starts, train_config, wilson_interval
except ModuleNotFoundError:
    from vla_learning import demonstrations, held_out_starts, train_config, wilson_interval

TINY_DEFAULT = (
    "tiny-qwen2.5-vl,tiny-qwen3-vl,tiny-qwen3-vl-moe,tiny-paligemma,tiny-paligemma2,tiny-kosmos2,"
    "tiny-internvl,tiny-gemma3,tiny-smolvlm,tiny-llava-onevision"
)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument(
        "--backbones", default=TINY_DEFAULT, help="comma-separated backbones (names, directories, hub ids)"
    )
    p.add_argument("--task", default="open_drawer", help="play-table task demonstrated and evaluated")
    p.add_argument(
        "--data", default="", help="existing CALVIN-layout demonstrations (default: generate under OUT/data)"
    )
    p.add_argument("--train-episodes", type=int, default=10, help="demonstrations to generate")
    p.add_argument("--joint-noise", type=float, default=0.1)
    p.add_argument("--steps", type=int, default=60, help="optimizer steps per backbone (the fixed budget)")
    p.add_argument("--warmup-steps", type=int, default=5)
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--lr", type=float, default=5e-4)
    p.add_argument("--image-size", type=int, default=112)
    p.add_argument(
        "--cameras", default="rgb_static", help="dataset cameras (Kosmos-2 takes one image per sample)"
    )
    p.add_argument("--eval-episodes", type=int, default=5)
    p.add_argument("--ep-len", type=int, default=120, help="steps per evaluation episode (CALVIN: 360)")
    p.add_argument(
        "--execute-steps", type=int, default=5, help="actions executed per chunk before re-querying"
    )
    p.add_argument(
        "--seed",
        type=int,
        default=0,
        help="demos, initialisation and data order; held-out starts use seed + 1000",
    )
    p.add_argument("--device", default="cpu", help="evaluation device (training uses what accelerate finds)")
    p.add_argument("--threads", type=int, default=1, help="torch threads (the machine is shared)")
    p.add_argument("--out", default="outputs/vla_compare")
    args = p.parse_args(argv)
    if args.steps < 1 or args.eval_episodes < 1 or args.ep_len < 1:
        p.error("--steps, --eval-episodes and --ep-len must be >= 1")
    return args


def train_backbone(
    args: argparse.Namespace, backbone: str, data: Path, run: Path
) -> tuple[Path, list[dict], float]:
    """``vla.train`` for exactly ``--steps`` steps; returns the final checkpoint, the log and the wall time."""
    import shutil

    from vla.train import train

    shutil.rmtree(run, ignore_errors=True)
    config = train_config(
        args, backbone, data, run, max_steps=args.steps, num_workers=0, log_every=max(1, args.steps // 20)
    )
    began = time.perf_counter()
    final = train(config)
    wall = time.perf_counter() - began
    log = [json.loads(line) for line in (run / "train_log.jsonl").read_text().splitlines()]
    return Path(final), log, wall


def evaluate(model: Any, starts: list, args: argparse.Namespace) -> dict[str, Any]:
    """Closed-loop success on the shared held-out starts, and the median wall time of one policy query."""
    import numpy as np

    from benchmarks.calvin.chain import run_chain
    from envs.calvin.env import PlayTableEnv
    from envs.calvin.instructions import instruction_for
    from vla.policy import VLAPolicy

    cameras = tuple(c.removeprefix("rgb_") for c in model.config.cameras)
    env, policy = PlayTableEnv(cameras=cameras), VLAPolicy(model, execute_steps=args.execute_steps)
    query_ms: list[float] = []
    predict = model.predict

    def timed(*a: Any, **k: Any) -> Any:
        began = time.perf_counter()
        out = predict(*a, **k)
        query_ms.append(1000 * (time.perf_counter() - began))
        return out

    model.predict = timed
    instruction, episodes = instruction_for(args.task), []
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
            )
            sub = record["extras"]["subtasks"][0]
            episodes.append({"success": bool(sub["success"]), "steps": sub["steps"]})
    finally:
        del model.predict
        env.close()
    wins = sum(e["success"] for e in episodes)
    return {
        "success": wins,
        "episodes": len(episodes),
        "rate": wins / len(episodes),
        "ci95": list(wilson_interval(wins, len(episodes))),
        "query_ms": round(float(np.median(query_ms)), 2),
        "per_episode": episodes,
    }


def compare(args: argparse.Namespace) -> dict[str, Any]:
    """Train and evaluate every backbone; returns the comparison (also written under ``--out``)."""
    import torch

    from vla.model import VLAModel

    torch.set_num_threads(args.threads)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.data:
        data, demos = Path(args.data), None
    else:
        data = out / "data"
        summary = demonstrations(
            argparse.Namespace(
                task=args.task,
                train_episodes=args.train_episodes,
                seed=args.seed,
                joint_noise=args.joint_noise,
            ),
            data,
        )
        demos = {k: summary[k] for k in ("attempts", "kept", "frames")}
    starts = held_out_starts(
        argparse.Namespace(
            task=args.task, seed=args.seed, eval_episodes=args.eval_episodes, joint_noise=args.joint_noise
        )
    )
    if any(s.prefix for s in starts):
        raise SystemExit(f"{args.task} needs setup tasks before it; pick a task valid from initial states")
    rows = []
    for backbone in [b.strip() for b in args.backbones.split(",") if b.strip()]:
        tag = backbone.rstrip("/").split("/")[-1]
        final, log, wall = train_backbone(args, backbone, data, out / "runs" / tag)
        model = VLAModel.from_pretrained(final, device=args.device).eval()
        params = sum(p.numel() for p in model.backbone.parameters())
        result = evaluate(model, starts, args)
        rows.append(
            {
                "backbone": backbone,
                "model_type": model.config.model_type,
                "backbone_params": params,
                "train_s": round(wall, 1),
                "first_loss": log[0]["loss"],
                "final_loss": tail_loss(log),
                "loss_curve": [[r["step"], r["loss"]] for r in log],
                **result,
            }
        )
        print(
            f"[compare] {tag}: loss {log[0]['loss']:.4f} -> {tail_loss(log):.4f} in {wall:.0f} s; "
            f"{result['success']}/{result['episodes']} successes; {result['query_ms']} ms per query",
            flush=True,
        )
    comparison = {"args": vars(args), "demos": demos, "rows": rows}
    (out / "comparison.json").write_text(json.dumps(comparison, indent=1) + "\n")
    (out / "comparison.md").write_text(comparison_table(rows, args))
    plot_comparison(rows, out / "comparison.png", args)
    return comparison


def tail_loss(log: list[dict], fraction: float = 0.25) -> float:
    """Mean logged training loss over the last ``fraction`` of the run (one logged value is one noisy batch)."""
    tail = log[-max(1, round(fraction * len(log))) :]
    return round(sum(row["loss"] for row in tail) / len(tail), 5)


def comparison_table(rows: list[dict], args: argparse.Namespace) -> str:
    """The Markdown table of a comparison (one row per backbone)."""
    lines = [
        f"Task `{args.task}`, {args.steps} steps x batch {args.batch_size}, lr {args.lr}, {args.image_size} px, "
        f"{args.eval_episodes} held-out episodes of at most {args.ep_len} steps, seed {args.seed}.",
        "",
        "| backbone | model_type | backbone parameters | training (s) | loss: first -> last quarter | success | 95 % CI | ms / query |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        low, high = r["ci95"]
        lines.append(
            f"| `{r['backbone']}` | `{r['model_type']}` | {r['backbone_params']:,} | {r['train_s']} | "
            f"{r['first_loss']:.4f} -> {r['final_loss']:.4f} | {r['success']}/{r['episodes']} | "
            f"{100 * low:.0f}-{100 * high:.0f} % | {r['query_ms']} |"
        )
    return "\n".join(lines) + "\n"


def plot_comparison(rows: list[dict], path: Path, args: argparse.Namespace) -> None:
    """Success rate per backbone with its 95 % interval (left) and the training-loss curves (right)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from benchmarks.core.plots import _save

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4), dpi=120)
    labels = [r["backbone"].rstrip("/").split("/")[-1] for r in rows]
    rates = [100 * r["rate"] for r in rows]
    errors = [
        [100 * (r["rate"] - r["ci95"][0]) for r in rows],
        [100 * (r["ci95"][1] - r["rate"]) for r in rows],
    ]
    left.bar(range(len(rows)), rates, yerr=errors, capsize=3, color="#4477aa")
    left.set_xticks(range(len(rows)), labels, rotation=60, ha="right", fontsize=7)
    left.set(ylabel="success (%)", ylim=(0, 100), title=f"{args.task}: held-out success (95 % CI)")
    for label, r in zip(labels, rows):
        steps, losses = zip(*r["loss_curve"])
        right.plot(steps, losses, label=label)
    right.set(xlabel="optimizer step", ylabel="training loss", title=f"same data, {args.steps} steps each")
    right.legend(fontsize=6)
    for ax in (left, right):
        ax.grid(alpha=0.3)
    _save(fig, path)


def main(argv: list[str] | None = None) -> None:
    comparison = compare(parse_args(argv))
    print(comparison_table(comparison["rows"], argparse.Namespace(**comparison["args"])), end="")


if __name__ == "__main__":
    main()
