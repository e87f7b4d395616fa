"""Blind baselines per robustness axis: uniform random and the best constant action of
``bench/results/blind_baselines.json``, each run through the benchmark's own ``--perturb all`` (the same
episodes, axes and levels a model faces; variants certified by the family's expert, certificates shared
between the runs). Writes ``bench/results/robustness_blind.json``, which every robustness summary reads
for its blind column and plot line (:mod:`benchmarks.robustness.blind`).

    nice python bench/robustness_blind.py --families nav --episodes 2
"""

from __future__ import annotations

import argparse
import datetime
import json
from pathlib import Path
from typing import Any

from benchmarks.core.blind import blind_baselines
from benchmarks.core.manifest import machine_line
from benchmarks.robustness.blind import BLIND_RESULTS, FORMAT

IMAGE_SIZE = 64  # blind policies look at no image


def _policies(family: str) -> dict[str, list[str]]:
    """``name -> policy arguments``: random and the measured best constant action."""
    entry = blind_baselines(family)
    out = {"random": ["--policy", "random"]}
    if entry and entry.get("best_constant") in entry["policies"]:
        action = entry["policies"][entry["best_constant"]]["action"]
        out[entry["best_constant"]] = ["--policy", "constant", "--action", json.dumps(action)]
    return out


def measure(family: str, args: argparse.Namespace) -> dict[str, Any]:
    from benchmarks.embodied import main

    output = Path(args.output)
    common = [family, "--perturb", "all", "--no-progress", "--episodes", str(args.episodes)]
    common += ["--image-size", str(IMAGE_SIZE), "--output", str(output)]
    common += ["--certificates", str(output / f"certificates-{family}.json")]
    common += ["--subset", args.subset] if args.subset else []
    policies = {}
    for name, policy in _policies(family).items():
        summary = main([*common, *policy, "--run-name", name, *(["--resume"] if args.resume else [])])
        assert not isinstance(summary, int), f"{family} {name}: the run ended with status {summary}"
        table = summary.data["robustness"]
        policies[name] = {
            "clean": table["clean"]["success_rate"],
            "axes": {
                axis: {level: cell["success_rate"] for level, cell in cells.items()}
                for axis, cells in table["axes"].items()
            },
        }
    scope = f"{args.episodes} episodes per subset" + (f" of {args.subset}" if args.subset else "")
    command = f"python bench/robustness_blind.py --families {family} --episodes {args.episodes}"
    command += f" --subset {args.subset}" if args.subset else ""
    return {
        "date": datetime.date.today().isoformat(),
        "scope": scope,
        "command": command,
        "policies": policies,
    }


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--families", nargs="+", default=["nav"], choices=["nav", "manip"])
    parser.add_argument("--episodes", type=int, default=2, help="episodes per subset")
    parser.add_argument("--subset", default=None, help="one subset only (default: all)")
    parser.add_argument("--output", default="outputs/bench_robustness_blind")
    parser.add_argument("--resume", action="store_true", help="continue interrupted runs in --output")
    return parser.parse_args(argv)


def tables(data: dict[str, Any]) -> list[dict[str, Any]]:
    """One table per benchmark: each blind policy's success % over all levels of each axis, and clean."""
    out = []
    for benchmark, entry in data["benchmarks"].items():
        names = list(entry["policies"])
        axes = list(next(iter(entry["policies"].values()))["axes"])
        rows = [["clean arm", *(_pct(entry["policies"][n]["clean"]) for n in names)]]
        rows += [
            [axis, *(_pct(entry["policies"][n]["axes"][axis].get("all")) for n in names)] for axis in axes
        ]
        caption = f"{benchmark}: success % of blind policies, all levels of each axis ({entry['scope']})"
        out.append({"caption": caption, "columns": ["axis", *names], "rows": rows})
    return out


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1f}"


if __name__ == "__main__":
    arguments = parse()
    try:
        data = json.loads(BLIND_RESULTS.read_text())
    except (OSError, ValueError):
        data = {}
    if data.get("format") != FORMAT:
        data = {"format": FORMAT, "source": "bench/robustness_blind.py", "benchmarks": {}}
    data["title"] = "Blind baselines per robustness axis (random, best constant action)"
    data["date"], data["machine"] = datetime.date.today().isoformat(), machine_line()
    for fam in arguments.families:
        data["benchmarks"][f"embodied-{fam}"] = measure(fam, arguments)
    data["command"] = "; ".join(
        entry["command"] for entry in data["benchmarks"].values() if "command" in entry
    )
    data["tables"] = tables(data)
    BLIND_RESULTS.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    print(json.dumps({k: v["policies"].keys().__len__() for k, v in data["benchmarks"].items()}))
