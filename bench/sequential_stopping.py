"""How many units ``--stop-when-decided`` needs against a fixed-n run, and its error rates by simulation.

On EB navigation (the cheapest closed-loop family, well under 1 s per episode) with the answer-key model:

1. a clean reference run and, per injected error rate, a fixed-n run of the same episodes;
2. per error rate, the same command with ``--stop-when-decided --against REFERENCE_RUN`` (paired by episode):
   the verdict, the units it ran, and a check that its records are the fixed-n run's first units;
3. the clean model against a claimed rate (``--against 0.9``);
4. by simulation (4,000 seeded streams of the planned length) with the discordance each pair of real runs
   showed: the sequential test's type-I error (both models alike, discordant pairs split evenly) and its power
   and mean units under the observed difference, beside the fixed-n exact McNemar test at the same level.

Runs are resumable: a run folder with a ``summary.json`` is reused.

    python bench/sequential_stopping.py [--episodes 60] [--rates 0.3 0.8 0.95] [--work outputs/sequential_stopping]
                                        [--json bench/results/sequential_stopping.json]
"""

from __future__ import annotations

import argparse
import datetime
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from benchmarks.core.episode_record import read_episode
from benchmarks.core.manifest import machine_line
from benchmarks.core.rundir import RunDir
from benchmarks.stats.paired import mcnemar_p
from benchmarks.stats.sequential import ALPHA, first_crossings, paired_values

MODEL = ["nav", "--policy", "mllm", "--model", "answer-key"]
STREAMS = 4000


def run(work: Path, name: str, episodes: int, *extra: str) -> tuple[Path, float]:
    """One CLI run into ``work/name`` (reused when finished); its run folder and wall seconds (0: reused)."""
    found = sorted((work / name).glob("embodied-nav/*/summary.json"))
    if found:
        return found[0].parent, 0.0
    command = [sys.executable, "-m", "benchmarks.embodied", *MODEL, "--episodes", str(episodes)]
    start = time.monotonic()
    subprocess.run(
        [*command, *extra, "--no-progress", "--output", str(work / name)], check=True, capture_output=True
    )
    return next((work / name).glob("embodied-nav/*/summary.json")).parent, time.monotonic() - start


def outcomes(folder: Path) -> dict[str, bool]:
    """Each completed episode's success, by key, in protocol order."""
    return {
        r["key"]: bool(read_episode(r["result"])["success"])
        for r in RunDir(folder).merged_records()
        if r["status"] == "ok"
    }


def simulate(b: float, c: float, n: int, seed: int = 0) -> dict[str, float]:
    """Sequential vs fixed-n on ``STREAMS`` simulated paired streams of ``n`` units with discordance shares b, c."""
    rng = np.random.default_rng(seed)
    draw = rng.random((STREAMS, n))
    model = (draw < c).astype(float)  # the model wins the pair (c) ...
    reference = ((draw >= c) & (draw < b + c)).astype(float)  # ... or the reference does (b)
    step, _ = first_crossings(paired_values(model, reference), 0.5, ALPHA)
    wins, losses = model.sum(axis=1).astype(int), reference.sum(axis=1).astype(int)
    fixed = np.array([mcnemar_p(int(lo), int(w)) < ALPHA for w, lo in zip(wins, losses)])
    return {
        "sequential_decided": round(float((step > 0).mean()), 4),
        "sequential_mean_units": round(float(np.where(step > 0, step, n).mean()), 1),
        "fixed_n_decided": round(float(fixed.mean()), 4),
    }


def compare(work: Path, episodes: int, rate: float, reference: Path) -> list[object]:
    """One error rate: the fixed-n run, the sequential run against the reference, and the simulation row."""
    fixed, fixed_wall = run(work, f"fixed-{rate}", episodes, "--answer-key-error-rate", str(rate))
    seq, seq_wall = run(
        work,
        f"seq-{rate}",
        episodes,
        "--answer-key-error-rate",
        str(rate),
        "--stop-when-decided",
        "--against",
        str(reference),
    )
    ref, ours = outcomes(reference), outcomes(fixed)
    n = len(ours)
    b = sum(ref[k] and not ours[k] for k in ours)  # the reference won the pair
    c = sum(ours[k] and not ref[k] for k in ours)
    stop = json.loads((seq / "summary.json").read_text())["sequential"]
    ran = outcomes(seq)
    prefix_ok = list(ran.items()) == list(ours.items())[: len(ran)]
    h0 = simulate((b + c) / (2 * n), (b + c) / (2 * n), n)
    h1 = simulate(b / n, c / n, n)
    return [
        rate,
        round(100 * sum(ours.values()) / n, 1),
        f"{b} / {c}",
        round(mcnemar_p(b, c), 4),
        stop["verdict"],
        f"{stop['units_used']} / {stop['units_planned']}",
        "yes" if prefix_ok else "NO",
        f"{seq_wall:.0f} / {fixed_wall:.0f}",
        h0["sequential_decided"],
        h0["fixed_n_decided"],
        h1["sequential_decided"],
        h1["sequential_mean_units"],
        h1["fixed_n_decided"],
    ]


COLUMNS = [
    "error rate",
    "success % (fixed n)",
    "pairs lost / won vs clean",
    "McNemar p (fixed n)",
    "sequential verdict",
    "units used / planned",
    "= fixed run's first units",
    "wall s (seq / fixed)",
    "sim. type-I (seq)",
    "sim. type-I (fixed n)",
    "sim. power (seq)",
    "sim. mean units (seq)",
    "sim. power (fixed n)",
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=60, help="episodes per subset (5 subsets)")
    parser.add_argument("--rates", type=float, nargs="+", default=[0.3, 0.8, 0.95])
    parser.add_argument("--work", default="outputs/sequential_stopping")
    parser.add_argument("--json")
    args = parser.parse_args()
    machine, work, start = machine_line(), Path(args.work), time.monotonic()
    reference, _ = run(work, "clean", args.episodes)
    rows = [compare(work, args.episodes, rate, reference) for rate in args.rates]
    claimed, _ = run(work, "clean-vs-0.9", args.episodes, "--stop-when-decided", "--against", "0.9")
    claim = json.loads((claimed / "summary.json").read_text())["sequential"]
    for row in rows:
        print(dict(zip(COLUMNS, row)))
    print("clean vs 0.9:", claim["verdict"], claim["units_used"], "/", claim["units_planned"])
    if args.json:
        write_results(args, machine, rows, claim, time.monotonic() - start)


def write_results(
    args: argparse.Namespace, machine: str, rows: list[list[object]], claim: dict, wall: float
) -> None:
    """The results file the docs' results pages read."""
    results = {
        "title": "Sequential stopping: units used against a fixed-n run",
        "date": datetime.date.today().isoformat(),
        "machine": machine,
        "source": "bench/sequential_stopping.py",
        "command": " ".join(["python bench/sequential_stopping.py", *sys.argv[1:]]),
        "setup": f"EB navigation, --policy mllm --model answer-key, {args.episodes} episodes per subset "
        f"({5 * args.episodes} planned units), episode seed 0, one worker; alpha {ALPHA}; simulation: "
        f"{STREAMS} seeded streams of the planned length with the discordance each real pair of runs showed; "
        f"{wall:.0f} s wall",
        "metrics": {
            "clean_vs_0.9_verdict": claim["verdict"],
            "clean_vs_0.9_units_used": claim["units_used"],
            "units_planned": claim["units_planned"],
        },
        "tables": [
            {
                "caption": "injected-error model vs the clean answer-key, paired by episode",
                "columns": COLUMNS,
                "rows": rows,
            }
        ],
    }
    with open(args.json, "w") as f:
        json.dump(results, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
