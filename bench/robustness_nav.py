"""EB-Navigation robustness: certification rate per axis and level and the answer-key plan loop's drop from
the clean arm (the build cost per axis: ``bench/robustness_build.py``, for every family).

Both come from one run of the benchmark's own command (``benchmarks.embodied nav --policy mllm
--model answer-key --perturb all``: the expert certifies each variant, then the answer key runs it, next to
the clean arm). Resumable (``--resume`` on the same ``--output``). Writes
``bench/results/robustness_nav.{json,md}``.

    nice python bench/robustness_nav.py --episodes 2 --image-size 112
"""

from __future__ import annotations

import argparse
import datetime
import json
import platform
import time
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).parent / "results"


def suite(args: argparse.Namespace) -> dict[str, Any]:
    from benchmarks.embodied import main

    argv = ["nav", "--policy", "mllm", "--model", "answer-key", "--perturb", "all", "--no-progress"]
    argv += ["--episodes", str(args.episodes), "--image-size", str(args.image_size), "--output", args.output]
    argv += ["--resume"] if args.resume else []
    start = time.perf_counter()
    summary = main(argv)
    assert not isinstance(summary, int), f"the run ended with status {summary}"
    return {"seconds": round(time.perf_counter() - start, 1), **summary.data["robustness"]}


def markdown(result: dict[str, Any]) -> str:
    from benchmarks.robustness import robustness_markdown

    lines = [
        f"{result['episodes_per_subset']} episodes of each of the 5 subsets, every "
        "axis at levels 1-5; policy `mllm --model answer-key` (the EB plan loop with the answer key); "
        "certification by the shortest-path expert.",
        "",
        robustness_markdown(result["suite"]).replace(
            "## Robustness", "### Answer-key drop and certification"
        ),
        "What building a variant costs next to its episode, per axis: "
        "[build cost per axis](robustness_build.md) (`bench/robustness_build.py`).",
        "",
    ]
    return "\n".join(lines)


def run(args: argparse.Namespace) -> dict[str, Any]:
    return {
        "title": "EB-Navigation robustness: certification, answer-key drop",
        "source": "bench/robustness_nav.py",
        "command": f"python bench/robustness_nav.py --episodes {args.episodes} --image-size {args.image_size}",
        "date": datetime.date.today().isoformat(),
        "machine": f"{platform.machine()}, {args.machine}",
        "episodes_per_subset": args.episodes,
        "image_size": args.image_size,
        "suite": suite(args),
    }


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=2, help="episodes per subset")
    parser.add_argument("--image-size", type=int, default=112)
    parser.add_argument(
        "--output", default="outputs/bench_robustness_nav", help="the benchmark's run folder root"
    )
    parser.add_argument("--resume", action="store_true", help="continue an interrupted run in --output")
    parser.add_argument("--machine", default="2 shared cores", help="how to describe this machine")
    parser.add_argument("--note-only", action="store_true", help="rewrite the .md from the committed .json")
    return parser.parse_args(argv)


if __name__ == "__main__":
    arguments = parse()
    if arguments.note_only:
        outcome = json.loads((RESULTS / "robustness_nav.json").read_text())
    else:
        outcome = run(arguments)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "robustness_nav.json").write_text(json.dumps(outcome, indent=1) + "\n")
    (RESULTS / "robustness_nav.md").write_text(markdown(outcome))
    print(markdown(outcome))
