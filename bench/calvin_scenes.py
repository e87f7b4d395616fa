"""One policy on CALVIN's scenes side by side (a benchmark, not a unit test): the same evaluation chains
run by ``python -m benchmarks.calvin --scene X`` in each scene, one summary.

Each scene is a normal run folder (``OUTPUT/calvin/scene-X``), so ``--resume`` semantics hold: a run that
stopped continues, and a finished one is only read back. Everything after ``--`` goes to
``benchmarks.calvin`` unchanged (the policy, ``--workers``, ``--backbone``, ...). It prints and writes
(``--json``) average length and chain success per scene and each task's success per scene; with a model
trained on scenes A, B and C, the D column against the others is the ABC->D generalisation gap.

    python bench/calvin_scenes.py --num-sequences 100 -- --policy expert --workers 2
    python bench/calvin_scenes.py --scenes A,D --num-sequences 20 -- --policy vla --backbone /ckpt/x
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
from pathlib import Path
from typing import Any

from benchmarks.calvin import main as calvin_main
from benchmarks.core.manifest import machine_line
from envs.calvin.scenes import SCENE_NAMES


def run_scene(scene: str, num_sequences: int, output: str, extra: list[str]) -> dict[str, Any]:
    """One scene's run (resumed when its folder exists): the summary's data."""
    argv = ["--scene", scene, "--num-sequences", str(num_sequences), "--output", output]
    argv += ["--run-name", f"scene-{scene}", "--resume", "--no-progress", *extra]
    return dict(calvin_main(argv).data)


def tables(results: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Per scene: n, first-subtask success and avg. len with 95 % intervals, chain success; per task:
    success/total in each scene."""
    scenes = list(results)
    headline = {
        "caption": "per scene: first-subtask success and avg. len with 95 % intervals (Wilson; percentile "
        "bootstrap over units), success (%) of completing at least k subtasks",
        "columns": ["scene", "n", "first subtask % [95 % CI]", "avg. len [95 % CI]", "1", "2", "3", "4", "5"],
        "rows": [[s, r["chains"], *_headline_cells(r)] for s, r in results.items()],
    }
    tasks = sorted(set().union(*(r["task_info"] for r in results.values())))
    per_task = {
        "caption": "success / attempts per task and scene",
        "columns": ["task", *scenes],
        "rows": [[t, *(_cell(results[s]["task_info"].get(t)) for s in scenes)] for t in tasks],
    }
    return [headline, per_task]


def _headline_cells(r: dict[str, Any]) -> list[Any]:
    from benchmarks.stats.intervals import cell

    rates = [r["chain_sr"].get(str(k)) for k in range(1, 6)]  # one-subtask runs (--tasks) have "1" only
    return [
        cell(rates[0], (r.get("chain_sr_ci") or {}).get("1"), scale=100),
        cell(r["avg_seq_len"], r.get("avg_seq_len_ci"), ".3f"),
        *("n/a" if v is None else round(100 * v, 1) for v in rates),
    ]


def paired_table(folder: Path, scenes: list[str], reference: str) -> dict[str, Any]:
    """Each scene against ``reference`` on the units both ran (``spatial-arena compare --across scene``):
    the reference minus the scene, first-subtask success (exact McNemar) and avg. len (paired bootstrap
    interval, sign-flip permutation p)."""
    from benchmarks.evidence.compare import compare_runs
    from benchmarks.evidence.runs import load_run

    ref, rows = load_run(folder / f"scene-{reference}"), []
    for scene in (s for s in scenes if s != reference):
        result = compare_runs(load_run(folder / f"scene-{scene}"), ref, across=("scene",))
        first, length = result["groups"]["reached 1"], result["overall"]["avg. len"]
        rows.append(
            [
                f"{reference} vs {scene}",
                first["n"],
                f"{100 * first['a']:.1f} / {100 * first['b']:.1f}",
                _difference(first, 100, ".1f"),
                _p(first["p_value"]),
                _difference(length, 1, ".3f"),
                _p(length["p_value"]),
            ]
        )
    return {
        "caption": f"{reference} against each other scene on the same units (chain i: the same symbolic state "
        "and subtasks in every scene); difference = reference - scene [95 % interval]",
        "columns": [
            "pair",
            "paired units",
            "first subtask % (scene / ref.)",
            "difference % [95 % CI]",
            "p (McNemar)",
            "avg. len difference [95 % CI]",
            "p (sign-flip)",
        ],
        "rows": rows,
    }


def _difference(row: dict[str, Any], scale: float, fmt: str) -> str:
    from benchmarks.stats.intervals import cell

    return cell(row["difference"], row["ci"], fmt, scale)


def _p(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2g}"


def run_data(folder: Path) -> dict[str, Any]:
    """A CALVIN run folder's numbers from its records, finished or not (a stopped run counts the units it
    completed): units, avg. len and chain success with their 95 % intervals, per-task counts."""
    from benchmarks.calvin.report import chain_intervals, chain_metrics, ok_chains, task_info
    from benchmarks.core.rundir import RunDir

    chains = ok_chains(RunDir(folder).merged_records())
    completed = [int(c["extras"]["num_completed"]) for c in chains]
    length = (len(chains[0]["extras"].get("tasks") or []) or 5) if chains else 5
    metrics = {**chain_metrics(completed, length), **chain_intervals(completed, length)}
    return {"chains": len(chains), **metrics, "task_info": task_info(chains)}


def scene_tables(folder: Path, scenes: list[str], reference: str = "D") -> list[dict[str, Any]]:
    """The side-by-side tables of the runs ``folder/scene-X`` (X in ``scenes``), from their records."""
    results = {s: run_data(folder / f"scene-{s}") for s in scenes}
    paired = [paired_table(folder, scenes, reference)] if reference in scenes and len(scenes) > 1 else []
    return [*tables(results), *paired]


def _cell(info: dict[str, int] | None) -> str:
    return "-" if not info else f"{info['success']}/{info['total']}"


def markdown(table: dict[str, Any]) -> str:
    lines = [f"**{table['caption']}**", "", "| " + " | ".join(table["columns"]) + " |"]
    lines.append("|" + "---|" * len(table["columns"]))
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in table["rows"]]
    return "\n".join(lines)


def main() -> None:
    argv = sys.argv[1:]
    extra = argv[argv.index("--") + 1 :] if "--" in argv else []
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenes", default=",".join(SCENE_NAMES), help="comma-separated scenes (A-D)")
    parser.add_argument("--num-sequences", type=int, default=100, help="the first N evaluation chains")
    parser.add_argument("--output", default="outputs", help="run folders go to OUTPUT/calvin/scene-X")
    parser.add_argument("--machine", default=machine_line(), help="machine description for the JSON")
    parser.add_argument("--json", default="", help="also write the results file here")
    args = parser.parse_args(argv[: argv.index("--")] if "--" in argv else argv)
    scenes = [s.strip().upper() for s in args.scenes.split(",") if s.strip()]
    bad = [s for s in scenes if s not in SCENE_NAMES]
    if bad or not scenes:
        raise SystemExit(
            f"--scenes {args.scenes!r}: unknown scene(s) {bad}; use some of {','.join(SCENE_NAMES)}"
        )
    results = {s: run_scene(s, args.num_sequences, args.output, extra) for s in scenes}
    label = next(iter(results.values()))["policy"]
    reference = "D" if "D" in scenes else scenes[-1]
    out = {
        "title": f"CALVIN scenes side by side: {label}, first {args.num_sequences} chains",
        "source": "bench/calvin_scenes.py",
        "command": " ".join(["python", *sys.argv]),
        "date": datetime.date.today().isoformat(),
        "machine": args.machine,
        "setup": f"built-in play-table unless the passed flags say otherwise; scenes {','.join(scenes)}",
        "metrics": {f"avg_seq_len_{s}": round(r["avg_seq_len"], 3) for s, r in results.items()},
        "tables": scene_tables(Path(args.output) / "calvin", scenes, reference),
    }
    print("\n\n".join(markdown(t) for t in out["tables"]))
    if args.json:
        with open(args.json, "w") as f:
            f.write(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
