"""Simulator data generators: generation speed, and a full tiny-model run over a generated QA set.

1. ``goal_scoring generate --source nav``: seconds per start/goal pair, and that time over one RGB + depth
   + entity-mask render of a home view measured in the same run (the baseline).
2. ``goal_scoring generate --source manip``: seconds per pair, against one play-table control step
   (relative action, 8 physics sub-steps, no camera) plus one static-camera render, measured in the same run.
3. ``benchmarks.static generate``: seconds per question, against the RGBD render baseline.
4. The static runner over the generated set (default 200 items, as issue 11 asks): the answer key through
   a scripted backend (runner overhead, must score 100), then the tiny random-weight Qwen2.5-VL from
   ``policies.tiny`` (the whole loop with a real transformers model; random weights, so its score is
   whatever its parsed answers happen to hit). Wall times, scores per category and counts are printed.

    python bench/simdata.py [--nav 50] [--manip 30] [--qa 200] [--tiny/--no-tiny] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("MUJOCO_GL", "egl")

import numpy as np
from PIL import Image

from benchmarks.core.timing import median_time, timed_call
from benchmarks.datagen.generate import GenerateConfig, generate
from benchmarks.goal_scoring.manip_source import PlayTableManipSource
from benchmarks.goal_scoring.nav_source import NavigationPairSource
from benchmarks.goal_scoring.sources import generate_dataset
from benchmarks.static.config import RunConfig
from benchmarks.static.runner import run
from envs.navigation.scene import generate_scene
from envs.navigation.views import HomeRenderer, sample_view
from policies.backends.base import Backend, Generation, GenerationConfig


def render_baseline(repeats: int = 60) -> float:
    """Median seconds of one RGB + depth + mask render of a home view."""
    with HomeRenderer() as renderer:
        renderer.load(generate_scene(0))
        pose, _ = sample_view(renderer, np.random.default_rng(0))
        return median_time(lambda: renderer.render(pose), repeats)


def play_table_baseline(repeats: int = 60) -> float:
    """Median seconds of one play-table control step plus one static-camera render."""
    from envs.calvin.env import PlayTableEnv

    env = PlayTableEnv(cameras=(), render_mode="rgb_array")
    try:
        env.reset(seed=0)
        return median_time(lambda: (env.step(env.noop_action()), env.render()), repeats)
    finally:
        env.close()


class AnswerKey(Backend):
    """Answers every item with its ground truth, found by the item's first image."""

    def __init__(self, data: Path) -> None:
        self.model_id, self.config = "answer-key", GenerationConfig()
        items = json.loads(data.read_text(encoding="utf-8"))
        self.answers = {
            np.asarray(Image.open(data.parent / i["img_paths"][0]).convert("RGB")).tobytes(): i["answer"]
            for i in items
        }

    def generate(self, messages: Any) -> Generation:
        image = next(p["image"] for p in messages[-1]["content"] if p.get("type") == "image")
        return Generation(text=self.answers[np.asarray(image).tobytes()], latency_s=0.0)


def timed(label: str, fn: Any, per: int, baseline: float, unit: str = "one RGBD+mask render") -> Any:
    seconds, result = timed_call(fn)
    print(
        f"{label}: {seconds:.1f} s, {seconds / per:.3f} s per item = {seconds / per / baseline:.1f}x {unit}"
    )
    return result


def report(label: str, summary: dict[str, Any], seconds: float, n: int) -> None:
    rows = summary["tables"]["by_category"]["rows"]
    print(
        f"\n{label}: {seconds:.1f} s wall ({seconds / n:.2f} s per item), overall {summary['headline']['overall']:.2f}"
    )
    for row in rows:
        print(f"  {row}")
    print(f"  counts: {summary['counts']}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nav", type=int, default=50, help="navigation pairs to generate")
    parser.add_argument("--manip", type=int, default=30, help="play-table pairs to generate (0: skip)")
    parser.add_argument("--qa", type=int, default=200, help="questions to generate and run")
    parser.add_argument(
        "--tiny", action=argparse.BooleanOptionalAction, default=True, help="run the tiny model"
    )
    parser.add_argument("--out", type=Path, default=None, help="keep the generated data and runs here")
    args = parser.parse_args()
    root = args.out or Path(tempfile.mkdtemp(prefix="simdata-bench-"))
    baseline = render_baseline()
    print(f"baseline: one RGB + depth + mask render of a 224x224 home view: {baseline * 1000:.1f} ms")
    source = NavigationPairSource()
    try:
        timed(
            f"nav pairs ({args.nav})",
            lambda: generate_dataset(source, args.nav, 0, root / "nav"),
            args.nav,
            baseline,
        )
    finally:
        source.close()
    if args.manip:
        step = play_table_baseline()
        print(f"baseline: one play-table control step + static render: {step * 1000:.1f} ms")
        source = PlayTableManipSource()
        try:
            timed(
                f"manip pairs ({args.manip})",
                lambda: generate_dataset(source, args.manip, 0, root / "manip"),
                args.manip,
                step,
                "one control step + static render",
            )
        finally:
            source.close()
    data = timed(
        f"QA items ({args.qa})",
        lambda: generate(GenerateConfig(out=root / "qa", n=args.qa, seed=0)),
        args.qa,
        baseline,
    )
    seconds, key = timed_call(
        lambda: run(
            RunConfig(bench="spatialscore", data=data, output=root / "runs", model="answer-key"),
            backend=AnswerKey(data),
        )
    )
    report("answer key (scripted backend)", key.summary, seconds, args.qa)
    if args.tiny:
        from policies.tiny import cached_tiny_vlm

        model = cached_tiny_vlm(
            "qwen2_5_vl", 0, Path(__file__).resolve().parents[1] / ".cache" / "tiny_models"
        )
        began = time.perf_counter()
        tiny = run(
            RunConfig(
                bench="spatialscore",
                data=data,
                output=root / "runs",
                model=str(model),
                cache=root / "responses.sqlite",
            )
        )
        report("tiny qwen2_5_vl (random weights)", tiny.summary, time.perf_counter() - began, args.qa)
    print(f"\noutputs: {root}")


if __name__ == "__main__":
    main()
