"""Learning evidence for spatial post-training on CPU: corpus -> SFT -> GRPO, each for a bounded time.

1. Corpus: ``benchmarks.datagen.corpus`` (homes disjoint from every test set; checked against the test set of
   step 4 with ``check_disjoint``).
2. SFT: ``benchmarks.posttrain sft`` on the tiny Qwen2.5-VL for ``--sft-min`` minutes, evaluated on the corpus's
   held-out ``validation`` split from step 0 (loss and token accuracy of the answers: the untrained model
   is step 0).
3. GRPO: ``benchmarks.posttrain grpo`` from the SFT checkpoint on the multi-hop items for ``--grpo-min`` minutes,
   with MultihopSpatial's rewards; the mean reward per step is the curve.
4. The loop closed: a SpatialScore-format test set from ``python -m benchmarks.static generate`` (default
   seed 0, the project's test homes) scored with ``python -m benchmarks.static`` for the untrained, the
   SFT and the GRPO checkpoints.

Outputs under ``--out``: ``corpus/``, ``testset/``, ``sft/`` and ``grpo/`` (run folders with
``metrics.jsonl``), ``static-<model>/`` (benchmark outputs), ``curves.png`` and ``results.json``.

    python bench/posttrain_learning.py --out outputs/posttrain_learning --corpus-n 180 --test-n 42 --sft-min 4 --grpo-min 3
    python bench/posttrain_learning.py --out outputs/posttrain_learning_mh --corpus-kinds multihop --corpus-n 150 \
        --corpus-seed 1 --test-n 42 --sft-min 4 --grpo-min 4
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, default=Path("outputs/posttrain_learning"))
    p.add_argument("--corpus-n", type=int, default=400, help="corpus items (5 %% held out)")
    p.add_argument("--corpus-kinds", default="", help="corpus question kinds (default: all nine)")
    p.add_argument("--corpus-seed", type=int, default=0)
    p.add_argument("--test-n", type=int, default=63, help="items of the static test set (seed 0)")
    p.add_argument("--sft-min", type=float, default=5.0)
    p.add_argument("--grpo-min", type=float, default=3.0)
    p.add_argument("--lr", type=float, default=5e-4)
    p.add_argument("--grpo-lr", type=float, default=1e-4)
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--threads", type=int, default=1, help="torch threads (the machine is shared)")
    return p.parse_args(argv)


def _python(*args: str, threads: int) -> None:
    """Run ``python ARGS`` from the checkout with ``threads`` torch/OpenMP threads; fail loudly."""
    env = {"OMP_NUM_THREADS": str(threads), "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    import os

    subprocess.run([sys.executable, *args], check=True, env={**os.environ, **env})


def _static_accuracy(model: Path, testset: Path, out: Path, threads: int) -> dict[str, object]:
    """Score ``model`` on the generated SpatialScore-format set (32-token answers: every gold answer is
    shorter); returns the summary's headline numbers."""
    _python(
        "-m",
        "benchmarks.static",
        "--bench",
        "spatialscore",
        "--data",
        str(testset / "SpatialScore.json"),
        "--model",
        str(model),
        "--output",
        str(out),
        "--max-new-tokens",
        "32",
        threads=threads,
    )
    summary = json.loads(next(out.rglob("summary.json")).read_text())
    return {
        **summary["headline"],
        "parse_failures": summary["counts"]["parse_failures"],
        "items": summary["counts"]["items"],
    }


def _plot(sft: list[dict], grpo: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(13, 3.6))
    train = [(e["step"], e["loss"]) for e in sft if "loss" in e]
    held = [(e["step"], e["eval_loss"]) for e in sft if "eval_loss" in e]
    acc = [(e["step"], e["eval_mean_token_accuracy"]) for e in sft if "eval_mean_token_accuracy" in e]
    axes[0].plot(*zip(*train), label="train loss")
    axes[0].plot(*zip(*held), "o-", label="held-out loss")
    axes[0].set(title="SFT loss", xlabel="step")
    axes[0].legend()
    axes[1].plot(*zip(*acc), "o-")
    axes[1].set(title="SFT held-out answer-token accuracy", xlabel="step")
    reward = [(e["step"], e["reward"]) for e in grpo if "reward" in e]
    axes[2].plot(*zip(*reward), alpha=0.4, label="mean reward")
    if len(reward) >= 5:
        import numpy as np

        r = np.array([v for _, v in reward])
        k = max(1, len(r) // 8)
        axes[2].plot(
            [s for s, _ in reward][k - 1 :],
            np.convolve(r, np.ones(k) / k, "valid"),
            label=f"running mean ({k})",
        )
    axes[2].set(title="GRPO reward (format + mcq + bbox)", xlabel="step")
    axes[2].legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    from benchmarks.datagen.corpus import check_disjoint, dataset_homes, truth_file_homes
    from benchmarks.posttrain import read_metrics
    from policies.tiny import cached_tiny_vlm, default_cache_root

    out, t = args.out, args.threads
    out.mkdir(parents=True, exist_ok=True)
    model = cached_tiny_vlm("qwen2_5_vl", 0, default_cache_root())
    corpus, testset = out / "corpus", out / "testset"
    if not (corpus / "corpus.json").exists():
        kinds = ["--kinds", args.corpus_kinds] if args.corpus_kinds else []
        # --families nav: the navigation corpus the learning numbers of docs/guide/post-training.md were
        # measured on
        _python(
            "-m",
            "benchmarks.datagen.corpus",
            "--out",
            str(corpus),
            "--n",
            str(args.corpus_n),
            "--families",
            "nav",
            "--seed",
            str(args.corpus_seed),
            *kinds,
            threads=t,
        )
    if not (testset / "SpatialScore.json").exists():
        _python(
            "-m", "benchmarks.static", "generate", "--out", str(testset), "--n", str(args.test_n), threads=t
        )
    disjoint = check_disjoint(dataset_homes(corpus), truth_file_homes(testset / "ground_truth.jsonl"))
    common = [
        "--model",
        str(model),
        "--data",
        str(corpus),
        "--batch-size",
        str(args.batch_size),
        "--save-steps",
        "100000",
    ]
    _python(
        "-m",
        "benchmarks.posttrain",
        "sft",
        *common,
        "--output",
        str(out / "sft"),
        "--lr",
        str(args.lr),
        "--epochs",
        "1000",
        "--time-budget-s",
        str(60 * args.sft_min),
        "--eval-steps",
        "25",
        "--logging-steps",
        "5",
        threads=t,
    )
    sft_final = out / "sft" / "final"
    grpo_common = [
        "--model",
        str(sft_final),
        "--data",
        str(corpus),
        "--batch-size",
        "8",
        "--num-generations",
        "4",
        "--max-completion-length",
        "40",
        "--save-steps",
        "100000",
        "--lr",
        str(args.grpo_lr),
    ]
    _python(
        "-m",
        "benchmarks.posttrain",
        "grpo",
        *grpo_common,
        "--output",
        str(out / "grpo"),
        "--epochs",
        "1000",
        "--time-budget-s",
        str(60 * args.grpo_min),
        threads=t,
    )
    sft_logs, grpo_logs = read_metrics(out / "sft"), read_metrics(out / "grpo")
    static = {
        name: _static_accuracy(path, testset, out / f"static-{name}", t)
        for name, path in {"untrained": model, "sft": sft_final, "grpo": out / "grpo" / "final"}.items()
    }
    rewards = [e["reward"] for e in grpo_logs if "reward" in e]
    evals = [e for e in sft_logs if "eval_loss" in e]
    third = max(1, len(rewards) // 3)
    results = {
        "corpus": json.loads((corpus / "corpus.json").read_text()),
        "disjoint_corpus_items": disjoint,
        "sft": {
            "steps": max(e["step"] for e in sft_logs),
            "eval": [{k: e[k] for k in ("step", "eval_loss", "eval_mean_token_accuracy")} for e in evals],
        },
        "grpo": {
            "steps": len(rewards),
            "reward_first_third": sum(rewards[:third]) / third,
            "reward_last_third": sum(rewards[-third:]) / third,
        },
        "static_spatialscore_seed0": static,
    }
    (out / "results.json").write_text(json.dumps(results, indent=2) + "\n")
    _plot(sft_logs, grpo_logs, out / "curves.png")
    print(json.dumps({k: v for k, v in results.items() if k != "corpus"}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
