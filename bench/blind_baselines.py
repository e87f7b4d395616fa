"""Blind baselines for every closed-loop family: uniform random and the best constant action.

Each policy runs through the benchmark's own command (``benchmarks.embodied nav|manip``,
``benchmarks.calvin``, ``benchmarks.libero``), so the numbers are what a user of that command gets.
"Best constant" is the best of the candidate constant actions measured: every action id for EB
navigation (``Discrete(8)``); for the 7-D spaces, which have too many constants to try them all, no
motion with the gripper open or closed (CALVIN, LIBERO; CALVIN also a full step along each translation
axis) or the gripper parked above the table's middle, high and open or low and closed (EB manipulation).
EB manipulation and LIBERO episodes are slow on a shared CPU, so their defaults are small (the base
subset; one trial of the first tasks). ``--reference`` also runs non-blind
policies (the expert, the oracle model) on the same units, for comparison. Results merge into
``bench/results/blind_baselines.json`` (date, machine, n, seeds) per family; the benchmarks' summaries
and the docs' results page read them from there.

    python bench/blind_baselines.py --families nav --n 60 --reference expert,oracle
    python bench/blind_baselines.py --families manip --n 1
    python bench/blind_baselines.py --families calvin --n 20
    python bench/blind_baselines.py --families libero --n 1
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import functools
import importlib
import json
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.core.blind import BLIND_RESULTS
from benchmarks.core.manifest import machine_line

Metrics = Callable[[dict[str, Any]], dict[str, Any]]


def _embodied_metrics(data: dict[str, Any]) -> dict[str, Any]:
    return {
        "score": data["average_success_rate"],
        "success_rate": data["average_success_rate"],
        "units": data["episodes"],
        "by_subset": {k: v["success_rate"] for k, v in data["subsets"].items()},
        **(
            {"by_family": {k: v["success_rate"] for k, v in data["families"].items()}}
            if data.get("families")
            else {}
        ),
    }


def _calvin_metrics(data: dict[str, Any]) -> dict[str, Any]:
    return {
        "score": data["avg_seq_len"],
        "avg_seq_len": data["avg_seq_len"],
        "units": data["chains"],
        "chain_sr": [100.0 * data["chain_sr"][str(i)] for i in range(1, 6)],
    }


def _libero_metrics(data: dict[str, Any]) -> dict[str, Any]:
    return {"score": data["success_rate"], "success_rate": data["success_rate"], "units": data["episodes"]}


@dataclass(frozen=True)
class FamilySpec:
    """How to run one family's benchmark command for a policy."""

    module: str
    base: tuple[str, ...]  # arguments every run gets (family, fast rendering)
    size: Callable[[int], list[str]]  # arguments choosing n units
    units: Callable[[int], int]  # how many units n gives
    unit_name: str
    scope: str
    constants: tuple[Any, ...]
    metrics: Metrics
    seed_flag: str
    extra: tuple[tuple[str, Any], ...] = ()  # recorded with the family's results
    subsets: tuple[str, ...] | None = None  # EB families: the subsets measured (None: all)


# Manipulation poses: [X, Y, Z] voxels (0-99) with the gripper pointing down (Roll, Pitch, Yaw = 0, 60, 90
# at 3-degree bins, as the prompt says), high above the table's middle and just above it.
_DOWN = [0, 60, 90]
FAMILIES: dict[str, FamilySpec] = {
    "nav": FamilySpec(
        "benchmarks.embodied",
        ("nav", "--image-size", "64"),
        lambda n: ["--episodes", str(n)],
        lambda n: 5 * n,
        "episodes",
        "5 subsets x {n} episodes of the default sets (episode seed 0)",
        tuple(range(8)),
        _embodied_metrics,
        "--seed",
    ),
    "manip": FamilySpec(
        "benchmarks.embodied",
        ("manip", "--image-size", "64"),
        lambda n: ["--episodes", str(n)],
        lambda n: 4 * n,
        "episodes",
        "the base subset, 4 task families x {n} episodes (episode seed 0)",
        tuple([50, 50, z, *_DOWN, g] for z, g in ((50, 1), (20, 0))),
        _embodied_metrics,
        "--seed",
        subsets=("base",),
    ),
    "calvin": FamilySpec(
        "benchmarks.calvin",
        ("--cameras", "none"),
        lambda n: ["--num-sequences", str(n)],
        lambda n: n,
        "chains",
        "the first {n} of the 1000 evaluation chains (built-in table)",
        tuple(
            [*move, 0, 0, 0, g]
            for move, g in (
                ((0, 0, 0), 1),
                ((0, 0, 0), -1),
                ((1, 0, 0), 1),
                ((-1, 0, 0), 1),
                ((0, 1, 0), 1),
                ((0, -1, 0), 1),
                ((0, 0, 1), 1),
                ((0, 0, -1), 1),
            )
        ),
        _calvin_metrics,
        "--seed",
    ),
    "libero": FamilySpec(
        "benchmarks.libero",
        ("--suite", "libero_spatial", "--trials-per-task", "1"),
        lambda n: ["--tasks", ",".join(str(t) for t in range(n))],
        lambda n: n,
        "episodes",
        "libero_spatial, the first {n} tasks x 1 trial (fixed initial state 0)",
        tuple([0, 0, 0, 0, 0, 0, g] for g in (-1, 1)),
        _libero_metrics,
        "--seed",
        (("suite", "libero_spatial"),),
    ),
}
REFERENCE_ARGS = {
    "expert": ["--policy", "expert"],
    "oracle": ["--policy", "mllm", "--model", "answer-key"],
    "oracle-errors-0.2": ["--policy", "mllm", "--model", "answer-key", "--answer-key-error-rate", "0.2"],
}


def _label(action: Any) -> str:
    """The run name of a constant action: the constant policy's own label (``constant-0_0_1_0_0_0_1``)."""
    from policies.builtins import ConstantConfig

    return ConstantConfig(action).label()


def run_policy(
    spec: FamilySpec, policy_args: list[str], n: int, seed: int, output: Path, name: str
) -> dict[str, Any]:
    """One benchmark command; its headline numbers, or the error (never a number) when it failed."""
    main = importlib.import_module(spec.module).main
    argv = [
        *spec.base,
        *spec.size(n),
        *policy_args,
        spec.seed_flag,
        str(seed),
        "--workers",
        "1",
        "--output",
        str(output),
        "--run-name",
        name,
        "--no-progress",
    ]
    start = time.perf_counter()
    try:
        summary = main(argv)
    except (Exception, SystemExit) as error:
        return {"error": f"{type(error).__name__}: {error}", "argv": argv}
    values = spec.metrics(summary.data)
    values["seconds"] = round(time.perf_counter() - start, 1)
    if values["units"] < spec.units(n):
        values["errored_units"] = spec.units(n) - values["units"]
    return values


def episodes_file(family: str, n: int, output: Path, subsets: tuple[str, ...] | None) -> Path:
    """EB families: the default episode sets (seed 0) written once, so every policy runs the same episodes
    without regenerating them (navigation scenes take a while to draw)."""
    from benchmarks.embodied import FAMILIES as EMBODIED
    from policies.entry_point import load_entry_point as _load

    fam = EMBODIED[family]
    make, save = _load(fam.make_episodes), _load(fam.load_episodes.replace("load_episodes", "save_episodes"))
    episodes = [e for subset in subsets or _load(fam.subsets) for e in make(subset, n=n, seed=0)]
    output.mkdir(parents=True, exist_ok=True)
    return save(episodes, output / f"{family}-episodes.jsonl")


def measure(family: str, n: int, seed: int, output: Path, reference: list[str]) -> dict[str, Any]:
    spec = FAMILIES[family]
    if spec.module == "benchmarks.embodied":
        path = episodes_file(family, n, output, spec.subsets)
        spec = dataclasses.replace(spec, size=lambda _: ["--episodes-file", str(path)])
    policies: dict[str, dict[str, Any]] = {}
    runs = [("random", ["--policy", "random"], None)]
    runs += [(_label(a), ["--policy", "constant", "--action", json.dumps(a)], a) for a in spec.constants]
    runs += [(r, REFERENCE_ARGS[r], None) for r in reference]
    for name, args, action in runs:
        print(f"[{family}] {name} ...", flush=True)
        policies[name] = run_policy(spec, args, n, seed, output / family, name)
        if action is not None:
            policies[name]["action"] = action
        policies[name]["blind"] = name not in REFERENCE_ARGS
        print(
            f"[{family}] {name}: {json.dumps({k: v for k, v in policies[name].items() if k != 'argv'})}",
            flush=True,
        )
    scored = [
        k
        for k, v in policies.items()
        if k.startswith("constant-") and "error" not in v and "errored_units" not in v
    ]
    best = max(scored, key=lambda k: policies[k]["score"], default=None)  # first of equals: candidate order
    return {
        **dict(spec.extra),
        "n": n,
        "units": spec.unit_name,
        "total_units": spec.units(n),
        "scope": spec.scope.format(n=n),
        "seed": seed,
        "command": f"python -m {spec.module}",
        "best_constant": best,
        "policies": policies,
    }


_METRIC = {
    "calvin": ("avg. len", "{:.2f}"),
    "nav": ("success %", "{:.1f}"),
    "manip": ("success %", "{:.1f}"),
    "libero": ("success %", "{:.1f}"),
}


def _cell(policies: dict[str, Any], fmt: str, key: str) -> str:
    v = policies.get(key, {})
    return "error" if "error" in v else fmt.format(v["score"]) if "score" in v else "-"


def markdown_table(results: dict[str, Any]) -> str:
    """The results table: per family, random, the best constant action and any reference policy."""
    lines = [
        "| family | units | metric | random | best constant action | reference | measured |",
        "|---|---|---|---|---|---|---|",
    ]
    for family, entry in sorted(results["families"].items(), key=lambda kv: list(FAMILIES).index(kv[0])):
        name, fmt = _METRIC[family]
        policies = entry["policies"]
        value = functools.partial(_cell, policies, fmt)
        best = entry.get("best_constant")
        constants = sum(k.startswith("constant-") for k in policies)
        best_cell = (
            f"{value(best)} (`{json.dumps(policies[best]['action'])}`, best of {constants})" if best else "-"
        )
        refs = ", ".join(f"{k} {value(k)}" for k, v in policies.items() if not v.get("blind", True)) or "-"
        lines.append(
            f"| {family} | {entry.get('total_units', '?')} {entry['units']}: {entry['scope']} | {name} | {value('random')} | {best_cell} | "
            f"{refs} | {entry['date']} |"
        )
    return "\n".join(lines)


def table_rows(results: dict[str, Any]) -> list[list[str]]:
    """The rows of :func:`markdown_table`, for the docs' results page."""
    return [
        [cell.strip() for cell in line.strip("|").split("|")]
        for line in markdown_table(results).splitlines()[2:]
    ]


def write_results(path: Path, results: dict[str, Any]) -> None:
    """Write the results file with the provenance and table the docs' results pages read."""
    results = {
        **results,
        "title": "Blind baselines: random and the best constant action per family",
        "source": "bench/blind_baselines.py (each family's date, machine and command are under families)",
        "command": "python bench/blind_baselines.py --families nav manip calvin libero",
        "tables": [
            {
                "caption": "blind baselines (and reference policies) per family",
                "columns": [
                    "family",
                    "units",
                    "metric",
                    "random",
                    "best constant action",
                    "reference",
                    "measured",
                ],
                "rows": table_rows(results),
            }
        ],
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(results, indent=1, sort_keys=True) + "\n")


def merge(target: Path, sources: list[Path]) -> None:
    """Copy each source file's families into ``target`` (the newest date and machine go on top)."""
    results = json.loads(target.read_text()) if target.exists() else {"families": {}}
    for source in sources:
        data = json.loads(source.read_text())
        for family, entry in data["families"].items():
            spec = FAMILIES[family]
            entry.setdefault("total_units", spec.units(entry["n"]))
            entry["scope"] = spec.scope.format(n=entry["n"])
            results["families"][family] = entry
            results["date"], results["machine"] = entry["date"], entry["machine"]
    write_results(target, results)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--families", nargs="+", choices=sorted(FAMILIES), default=["nav"])
    p.add_argument(
        "--n",
        type=int,
        default=None,
        help="episodes per subset (nav), per task family of the base subset (manip), chains (calvin), tasks "
        "with one trial each (libero); default 60 / 1 / 20 / 1",
    )
    p.add_argument("--seed", type=int, default=0, help="run seed of every command")
    p.add_argument(
        "--reference",
        default="",
        help="also run these non-blind policies: expert, oracle, oracle-errors-0.2 (comma-separated)",
    )
    p.add_argument(
        "--results", type=Path, default=BLIND_RESULTS, help="JSON file the families are merged into"
    )
    p.add_argument("--output", type=Path, default=None, help="run folders (default: a temporary folder)")
    p.add_argument("--table", action="store_true", help="print the results table of --results and exit")
    p.add_argument(
        "--merge",
        type=Path,
        nargs="+",
        default=[],
        help="merge the families of these results files (runs made in parallel) into --results and exit",
    )
    args = p.parse_args()
    if args.merge:
        merge(args.results, args.merge)
    if args.table or args.merge:
        print(markdown_table(json.loads(args.results.read_text())))
        return
    reference = [r for r in args.reference.split(",") if r]
    unknown = sorted(set(reference) - set(REFERENCE_ARGS))
    if unknown:
        p.error(f"--reference {','.join(unknown)}: choose from {sorted(REFERENCE_ARGS)}")
    defaults = {"nav": 60, "manip": 1, "calvin": 20, "libero": 1}
    output = args.output or Path(tempfile.mkdtemp(prefix="blind-baselines-"))
    results = json.loads(args.results.read_text()) if args.results.exists() else {"families": {}}
    for family in args.families:
        entry = measure(family, args.n or defaults[family], args.seed, output, reference)
        entry["date"] = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
        entry["machine"] = machine_line()
        results["families"][family] = entry
        results["date"], results["machine"] = entry["date"], entry["machine"]
        write_results(args.results, results)  # after each family
        print(f"[{family}] best constant: {entry['best_constant']}; written to {args.results}", flush=True)


if __name__ == "__main__":
    main()
