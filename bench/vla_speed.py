"""Speed of every registered VLA backbone on CPU, as ratios against a baseline measured in the same run.

    python bench/vla_speed.py [--repeats 5] [--batches 1 8] [--backbones tiny-qwen2.5-vl tiny-paligemma]

For each tiny backbone of ``vla.backbones.TINY_BACKBONES`` (one torch thread, one 224x224 image per sample,
chunk 10, medians of repeats after one warm-up):
- decision: one policy decision at each batch size (processor, backbone forward, head, un-normalised chunk),
  reported as ms per decision (the batch's time / batch size) and decisions per second;
- step: one full fine-tuning step at the largest batch (forward, backward, Adam).
Ratios are against the first backbone's (Qwen2.5-VL's) time for the same column, so they carry across
machines while absolute times do not.
"""

from __future__ import annotations

import argparse
import functools
import json
from collections.abc import Callable
from typing import Any

import numpy as np

from benchmarks.core.timing import median_time


def batch(n: int, seed: int = 0) -> tuple[list, list[str], np.ndarray]:
    """``n`` random single-image samples with one instruction and a random (chunk 10, 7) action target."""
    rng = np.random.default_rng(seed)
    images = [[rng.integers(0, 256, (224, 224, 3), dtype=np.uint8)] for _ in range(n)]
    return images, ["pull the handle to open the drawer"] * n, rng.uniform(-1, 1, (n, 10, 7))


def step_fn(model: Any, inputs: Any, arm: Any, gripper: Any) -> Callable[[], None]:
    """One full fine-tuning step (forward, backward, Adam) on fixed inputs."""
    import torch

    optimizer = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=1e-5)

    def step() -> None:
        model(inputs, arm, gripper)["loss"].backward()
        optimizer.step()
        optimizer.zero_grad()

    return step


def bench_backbone(name: str, sizes: list[int], repeats: int) -> dict[str, float]:
    """Seconds per decision at each batch size and per training step at the largest, for one tiny backbone."""
    import torch

    from vla.model import VLAModel

    model = VLAModel.build(name, chunk_size=10, seed=0).eval()
    result: dict[str, float] = {}
    for size in sizes:
        images, texts, _ = batch(size)
        with torch.no_grad():
            decide = functools.partial(model.predict, images, texts)
            result[f"decision_b{size}_s"] = median_time(decide, repeats, warmup=1) / size
    images, texts, actions = batch(max(sizes))
    inputs = model.input_builder()(images, texts)
    arm, gripper = (torch.from_numpy(t) for t in model.normalizer.targets(actions))
    result["step_s"] = median_time(step_fn(model.train(), inputs, arm, gripper), repeats, warmup=1)
    return result


def table(results: dict[str, dict[str, float]], sizes: list[int]) -> str:
    """Markdown table: ms per decision, decisions/s and ratio vs the first backbone, per batch size."""
    base_name = next(iter(results))
    base = results[base_name]
    head = (
        "| backbone |"
        + "".join(f" ms/decision b{s} | decisions/s b{s} |" for s in sizes)
        + f" train step b{max(sizes)} |"
    )
    lines = [head, "|---|" + "---:|" * (2 * len(sizes) + 1)]
    for name, r in results.items():
        cells = []
        for s in sizes:
            t = r[f"decision_b{s}_s"]
            cells += [f"{1e3 * t:.1f} ({t / base[f'decision_b{s}_s']:.2f}x)", f"{1 / t:.1f}"]
        cells.append(f"{r['step_s']:.3f} s ({r['step_s'] / base['step_s']:.2f}x)")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    from vla.backbones import TINY_BACKBONES

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--batches", type=int, nargs="+", default=[1, 8])
    parser.add_argument(
        "--backbones",
        nargs="+",
        default=list(TINY_BACKBONES),
        help="tiny backbone names; the first is the ratios' baseline",
    )
    args = parser.parse_args()
    unknown = sorted(set(args.backbones) - set(TINY_BACKBONES))
    if unknown:
        parser.error(f"--backbones: unknown {unknown}; choose from {sorted(TINY_BACKBONES)}")
    import torch

    torch.set_num_threads(1)
    sizes = sorted(set(args.batches))
    results = {name: bench_backbone(name, sizes, args.repeats) for name in args.backbones}
    print(f"CPU, 1 thread, medians of {args.repeats}; ratios vs {args.backbones[0]} in the same run")
    print(table(results, sizes))
    print(json.dumps(results))


if __name__ == "__main__":
    main()
