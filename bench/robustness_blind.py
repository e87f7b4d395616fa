"""Blind baselines per robustness axis: uniform random and the best constant action of
``bench/results/blind_baselines.json``, each run through the benchmark's own ``--perturb all`` (the same
episodes, axes and levels a model faces; variants certified by the family's expert, certificates shared
between the runs). Writes ``bench/results/robustness_blind.json``, which every robustness summary reads
for its blind column and plot line (:mod:`benchmarks.robustness.blind`).

    nice python bench/robustness_blind.py --families nav --episodes 2
    nice python bench/robustness_blind.py --families calvin --episodes 20 --workers 2 \\
        --seed-certificates outputs/calvin/certificates.json      # the answer-key suite's certificates
    nice python bench/robustness_blind.py --families libero --episodes 1

``--episodes`` is what each family's runs are sized by: episodes per subset (nav, manip), evaluation
chains (calvin), tasks per suite with one trial each, initial state 0 (libero, on its four main suites:
one run per suite, pooled). An errored unit stops the script (rerun with ``--resume``): a blind floor
with holes in it would read as a measurement.
"""

from __future__ import annotations

import argparse
import datetime
import importlib
import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.core import RunDir
from benchmarks.core.blind import blind_baselines
from benchmarks.core.episode_record import ok_results
from benchmarks.core.manifest import machine_line
from benchmarks.core.work import RECORD_OK
from benchmarks.robustness import robustness_table
from benchmarks.robustness.blind import BLIND_RESULTS, FORMAT

IMAGE_SIZE = 64  # blind policies look at no image
LIBERO_SUITES = ("libero_spatial", "libero_object", "libero_goal", "libero_10")
Parts = Callable[[argparse.Namespace], list[tuple[str, list[str]]]]


@dataclass(frozen=True)
class Family:
    """How one family's blind runs are made: ``parts`` gives (part name, flags) per benchmark run of a
    policy (several for LIBERO's suites, pooled into one table)."""

    benchmark: str  # the summary's benchmark name: its run folder and its key in the results file
    module: str
    base: tuple[str, ...]
    parts: Parts
    scope: Callable[[argparse.Namespace], str]


def _subset(args: argparse.Namespace) -> list[str]:
    return ["--subset", args.subset] if args.subset else []


def _eb_scope(args: argparse.Namespace) -> str:
    return f"{args.episodes} episodes per subset" + (f" of {args.subset}" if args.subset else "")


def _eb(kind: str) -> Family:
    return Family(
        f"embodied-{kind}",
        "benchmarks.embodied",
        (kind, "--image-size", str(IMAGE_SIZE)),
        lambda a: [("", ["--episodes", str(a.episodes), *_subset(a)])],
        _eb_scope,
    )


FAMILIES: dict[str, Family] = {
    "nav": _eb("nav"),
    "manip": _eb("manip"),
    "calvin": Family(
        "calvin",
        "benchmarks.calvin",
        ("--cameras", "none"),
        lambda a: [("", ["--num-sequences", str(a.episodes)])],
        lambda a: f"the first {a.episodes} evaluation chains, whole chains",
    ),
    "libero": Family(
        "libero",
        "benchmarks.libero",
        ("--image-size", str(IMAGE_SIZE), "--trials-per-task", "1", "--seed", "7"),
        lambda a: [
            (suite, ["--suite", suite, "--tasks", ",".join(str(t) for t in range(a.episodes))])
            for suite in LIBERO_SUITES
        ],
        lambda a: f"the first {a.episodes} task(s) of each of the four main suites, initial state 0",
    ),
}


def _policies(family: str) -> dict[str, list[str]]:
    """``name -> policy arguments``: random and the measured best constant action."""
    entry = blind_baselines(family)
    out = {"random": ["--policy", "random"]}
    if entry and entry.get("best_constant") in entry["policies"]:
        action = entry["policies"][entry["best_constant"]]["action"]
        out[entry["best_constant"]] = ["--policy", "constant", "--action", json.dumps(action)]
    return out


def _run(family: Family, flags: list[str], run_name: str, args: argparse.Namespace) -> list[dict[str, Any]]:
    """One benchmark run; its records (every unit ``ok``, or the script stops)."""
    output = Path(args.output)
    argv = [*family.base, *flags, "--perturb", args.perturb, "--no-progress", "--output", str(output)]
    argv += ["--certificates", str(certificates(output, family)), "--workers", str(args.workers)]
    argv += ["--run-name", run_name, *(["--resume"] if args.resume else [])]
    summary = importlib.import_module(family.module).main(argv)
    records = RunDir(output / family.benchmark / run_name).merged_records()
    errored = [r["key"] for r in records if r["status"] != RECORD_OK]
    if isinstance(summary, int) or errored:
        raise SystemExit(
            f"{family.benchmark} {run_name}: {len(errored)} errored unit(s) (status {summary}); "
            "fix the cause and rerun with --resume"
        )
    return records


def certificates(output: Path, family: Family) -> Path:
    """The certificate cache every policy of ``family`` shares."""
    return output / f"certificates-{family.benchmark}.json"


def measure(name: str, args: argparse.Namespace) -> dict[str, Any]:
    family = FAMILIES[name]
    cache = certificates(Path(args.output), family)
    if args.seed_certificates and not cache.exists():  # variants an earlier run certified: not again
        cache.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(args.seed_certificates, cache)
    policies = {}
    for label, policy in _policies(name).items():
        records = []
        for part, flags in family.parts(args):
            records += _run(family, [*flags, *policy], "-".join(filter(None, (label, part))), args)
        table = robustness_table(ok_results(records))
        policies[label] = {
            "clean": table["clean"]["success_rate"],
            "units": len(records),
            "axes": {
                axis: {level: cell["success_rate"] for level, cell in cells.items()}
                for axis, cells in table["axes"].items()
            },
        }
    command = f"python bench/robustness_blind.py --families {name} --episodes {args.episodes}"
    command += f" --subset {args.subset}" if args.subset else ""
    command += f" --perturb {args.perturb}" if args.perturb != "all" else ""
    return {
        "date": datetime.date.today().isoformat(),
        "scope": family.scope(args),
        "command": command,
        "policies": policies,
    }


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--families", nargs="+", default=["nav"], choices=list(FAMILIES))
    parser.add_argument(
        "--episodes",
        type=int,
        default=2,
        help="episodes per subset, chains (calvin), tasks per suite (libero)",
    )
    parser.add_argument("--subset", default=None, help="EB families: one subset only (default: all)")
    parser.add_argument(
        "--perturb", default="all", help="the runs' --perturb (default: every axis, levels 1-5)"
    )
    parser.add_argument("--workers", type=int, default=1, help="the runs' --workers")
    parser.add_argument(
        "--seed-certificates",
        default=None,
        help="a certificate cache to start from (e.g. a model run's on the same units): no variant twice",
    )
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


def main(argv: list[str] | None = None, results: Path = BLIND_RESULTS) -> dict[str, Any]:
    """Measure the families asked for and merge them into ``results`` (other families' entries kept; the
    file is read after measuring, so a run of another family that ended meanwhile is kept too)."""
    args = parse(argv)
    measured = {FAMILIES[name].benchmark: measure(name, args) for name in args.families}
    try:
        data = json.loads(results.read_text())
    except (OSError, ValueError):
        data = {}
    if data.get("format") != FORMAT:
        data = {"format": FORMAT, "source": "bench/robustness_blind.py", "benchmarks": {}}
    data["title"] = "Blind baselines per robustness axis (random, best constant action)"
    data["date"], data["machine"] = datetime.date.today().isoformat(), machine_line()
    data["benchmarks"].update(measured)
    data["command"] = "; ".join(
        entry["command"] for entry in data["benchmarks"].values() if "command" in entry
    )
    data["tables"] = tables(data)
    results.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    return data


if __name__ == "__main__":
    measured = main()
    print(json.dumps({k: len(v["policies"]) for k, v in measured["benchmarks"].items()}))
