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
    """Per scene: avg. len and chain success; per task: success/total in each scene."""
    scenes = list(results)
    headline = {
        "caption": "average length and chain success (% of chains completing at least k subtasks) per scene",
        "columns": ["scene", "avg. len", "1", "2", "3", "4", "5", "chains"],
        "rows": [
            [
                s,
                round(r["avg_seq_len"], 3),
                *(round(100 * r["chain_sr"][str(k)], 1) for k in range(1, 6)),
                r["chains"],
            ]
            for s, r in results.items()
        ],
    }
    tasks = sorted(set().union(*(r["task_info"] for r in results.values())))
    per_task = {
        "caption": "success / attempts per task and scene",
        "columns": ["task", *scenes],
        "rows": [[t, *(_cell(results[s]["task_info"].get(t)) for s in scenes)] for t in tasks],
    }
    return [headline, per_task]


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
    out = {
        "title": f"CALVIN scenes side by side: {label}, first {args.num_sequences} chains",
        "source": "bench/calvin_scenes.py",
        "command": " ".join(["python", *sys.argv]),
        "date": datetime.date.today().isoformat(),
        "machine": args.machine,
        "setup": f"built-in play-table unless the passed flags say otherwise; scenes {','.join(scenes)}",
        "metrics": {f"avg_seq_len_{s}": round(r["avg_seq_len"], 3) for s, r in results.items()},
        "tables": tables(results),
    }
    print("\n\n".join(markdown(t) for t in out["tables"]))
    if args.json:
        with open(args.json, "w") as f:
            f.write(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
