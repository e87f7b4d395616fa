"""EB-Manipulation robustness: certification rate per axis and level (the scripted expert) and the
answer-key plan loop's drop from the clean arm, from one run of the benchmark's own command
(``benchmarks.embodied manip --policy mllm --model answer-key --perturb all``). Resumable (``--resume``
on the same ``--output``); ``--summarize-only`` reads the run's records as they stand (an interrupted
run: the episodes whose variants all ran are reported, the note says how many). Writes
``bench/results/robustness_manip.{json,md}`` and the plot ``docs/guide/img/robustness/manip_by_level.png``.

    nice python bench/robustness_manip.py --subset base --episodes 1 --workers 2
"""

from __future__ import annotations

import argparse
import datetime
import json
from collections import Counter
from pathlib import Path
from typing import Any

from benchmarks.core import RunDir
from benchmarks.core.manifest import machine_line
from benchmarks.robustness.plots import robustness_plot
from benchmarks.robustness.report import robustness_markdown, robustness_table
from envs.manipulation.perturbations import AXES

RESULTS = Path(__file__).parent / "results"
PLOT = Path(__file__).parents[1] / "docs" / "guide" / "img" / "robustness" / "manip_by_level.png"
RUN_NAME = "mllm-answer-key"


def _argv(args: argparse.Namespace) -> list[str]:
    argv = ["manip", "--policy", "mllm", "--model", "answer-key", "--perturb", "all", "--no-progress"]
    argv += ["--subset", args.subset, "--episodes", str(args.episodes), "--image-size", str(args.image_size)]
    return [*argv, "--workers", str(args.workers), "--output", args.output, "--run-name", RUN_NAME]


def complete_episodes(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The records of the episodes whose clean unit and every variant (all axes, levels 1-5) ran."""
    expected = 1 + 5 * len(AXES)
    counts = Counter(str(r["extras"]["episode_id"]) for r in results)
    return [r for r in results if counts[str(r["extras"]["episode_id"])] == expected]


def summarize(args: argparse.Namespace) -> dict[str, Any]:
    run = RunDir(Path(args.output) / "embodied-manip" / RUN_NAME)
    results = [r["result"] for r in run.merged_records() if r["status"] == "ok"]
    done = complete_episodes(results)
    episodes = sorted({str(r["extras"]["episode_id"]) for r in done})
    return {
        "title": "EB-Manipulation robustness: certification, answer-key drop",
        "source": "bench/robustness_manip.py",
        "command": "python bench/robustness_manip.py " + " ".join(_argv(args)[8:]),
        "date": datetime.date.today().isoformat(),
        "machine": machine_line(),
        "episodes": episodes,
        "units_ok": len(results),
        "suite": robustness_table(done),
    }


def markdown(result: dict[str, Any]) -> str:
    table = robustness_markdown(result["suite"]).replace(
        "## Robustness", "### Answer-key drop and certification"
    )
    return "\n".join(
        [
            f"`{result['command']}` ({result['date']}; {result['machine']}).",
            "",
            f"Episodes with every axis at levels 1-5 run: {', '.join(result['episodes'])} "
            f"({result['units_ok']} units ran in all). Policy `mllm --model answer-key` (the EB plan loop with "
            "the answer key); certification by the scripted expert (`policies/experts/manipulation.py`).",
            "",
            table,
            "![success against level per axis](../guide/img/robustness/manip_by_level.png)",
            "",
        ]
    )


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--subset", default="base")
    parser.add_argument("--episodes", type=int, default=1, help="episodes per subset and task family")
    parser.add_argument("--image-size", type=int, default=64)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--output", default="outputs/bench_robustness_manip")
    parser.add_argument("--resume", action="store_true", help="continue an interrupted run in --output")
    parser.add_argument("--summarize-only", action="store_true", help="report the run's records as they are")
    return parser.parse_args(argv)


if __name__ == "__main__":
    arguments = parse()
    if not arguments.summarize_only:
        from benchmarks.embodied import main

        main(_argv(arguments) + (["--resume"] if arguments.resume else []))
    outcome = summarize(arguments)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "robustness_manip.json").write_text(json.dumps(outcome, indent=1) + "\n")
    (RESULTS / "robustness_manip.md").write_text(markdown(outcome))
    if outcome["suite"]["axes"]:
        robustness_plot(PLOT, outcome["suite"], "EB-Manipulation: answer key")
    print(markdown(outcome))
