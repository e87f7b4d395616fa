"""Certification of the scripted LIBERO expert: successes, steps and a failure reason per task (no cameras).

Runs ``policies.experts.libero.LiberoExpert`` through ``benchmarks.libero.episode.run_episode`` (the
benchmark's own episode: OpenVLA step budgets, 10 settle steps, seed = initial state) on the chosen
suites, tasks and fixed initial states, with the env built without cameras. Every miss keeps a reason:
the goal predicates still unmet when the episode ended, whether the expert had finished its plan or the
budget ran out first, and the grasp retries used; an episode that raised is recorded with its error.

Results go to ``--out`` (default ``bench/results/libero_expert.json``, shown on the docs' Results page)
after every task, keyed by suite, task and initial state: a rerun skips what the file already holds,
so a long certification can be run in slices::

    python bench/libero_expert.py --suites libero_object,libero_spatial --states 0-4
    python bench/libero_expert.py --suites libero_10 --tasks 1,2 --states 0-9 --workers 2
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import subprocess
import sys
import time
import traceback
from collections.abc import Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

from envs.libero import protocol

DEFAULT_OUT = Path(__file__).resolve().parent / "results" / "libero_expert.json"
MACHINE = "the project's shared 2-core development machine (no GPU)"
TITLE = "LIBERO: scripted expert certification per task (no cameras)"
SETUP = (
    "LiberoExpert through benchmarks.libero.episode.run_episode, env without cameras, OpenVLA step budgets "
    "(spatial 220, object 280, goal 300, libero_10 520, libero_90 400), 10 settle steps, seed = initial state"
)
TARGET = {"libero_90": 0.90}  # the per-suite target; 0.95 elsewhere


class BadInput(ValueError):
    """A command-line value the bench cannot use (exit status 2)."""


# ------------------------------------------------------------------------------------------- arguments


def parse_indices(text: str, count: int, what: str) -> list[int]:
    """``"0-4,7"`` -> ``[0, 1, 2, 3, 4, 7]`` (sorted, unique), each in ``0..count-1``; ``"all"`` -> all."""
    try:
        return protocol.parse_indices(text, count, what)
    except ValueError as error:
        raise BadInput(str(error)) from None


def parse_suites(text: str) -> list[str]:
    """Comma-separated LIBERO suite names, each known."""
    suites = [s.strip() for s in text.split(",") if s.strip()]
    unknown = [s for s in suites if s not in protocol.TASK_COUNTS]
    if unknown or not suites:
        raise BadInput(
            f"--suites {text!r}: unknown suite {', '.join(unknown) or '(none)'}; choose from "
            f"{', '.join(protocol.SUITES)}"
        )
    return suites


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--suites", default="libero_object", help="comma-separated suites")
    parser.add_argument("--tasks", default="all", help="task indices per suite, e.g. 0-4,7, or all")
    parser.add_argument("--states", default="0-9", help="fixed initial states, e.g. 0-9")
    parser.add_argument("--workers", type=int, default=1, help="parallel processes, one task each")
    parser.add_argument(
        "--out", type=Path, default=DEFAULT_OUT, help="results JSON (read first: done runs skip)"
    )
    return parser


def plan_jobs(args: argparse.Namespace, done: Iterable[str]) -> list[tuple[str, int, list[int]]]:
    """(suite, task, initial states not yet in ``done``) per task with work left."""
    if args.workers < 1:
        raise BadInput(f"--workers {args.workers}: give 1 or more")
    finished = set(done)
    jobs = []
    for suite in parse_suites(args.suites):
        states = parse_indices(args.states, protocol.NUM_INIT_STATES, "--states")
        for task in parse_indices(args.tasks, protocol.TASK_COUNTS[suite], "--tasks"):
            todo = [k for k in states if episode_key(suite, task, k) not in finished]
            if todo:
                jobs.append((suite, task, todo))
    return jobs


def episode_key(suite: str, task: int, state: int) -> str:
    return f"{suite}/{task:02d}/{state:02d}"


# ------------------------------------------------------------------------------------------- episodes


def unmet_goals(env: Any) -> list[str]:
    """The BDDL goal clauses LIBERO's own checker finds false now, e.g. ``["(In bowl_1 basket_1_contain_region)"]``."""
    domain = env.unwrapped.raw_env.env
    return [
        f"({' '.join(clause)})"
        for clause in domain.parsed_problem["goal_state"]
        if not domain._eval_predicate(clause)
    ]


def miss_reason(unmet: Sequence[str], plan_done: bool, steps: int, retries: float) -> str:
    """One line on why an episode missed: what is unmet, and how the episode ended."""
    ended = "the expert finished its plan" if plan_done else f"the budget ran out mid-plan ({steps} steps)"
    retried = f"; grasp retries used: {retries:.0f}" if retries else ""
    return f"unmet {' '.join(unmet) or '(none: success came too late)'}; {ended}{retried}"


def run_task(suite: str, task: int, states: Sequence[int]) -> list[dict[str, Any]]:
    """Episodes of one task on ``states``; a raising episode is recorded with its error, not raised."""
    from benchmarks.libero.episode import run_episode
    from envs.libero import make_libero_env
    from policies.experts.libero import LiberoExpert

    env = make_libero_env(suite, task, cameras=False)
    policy = LiberoExpert()
    policy.bind(env)
    budget = protocol.MAX_STEPS[suite]
    rows = []
    try:
        for state in states:
            start = time.perf_counter()
            row: dict[str, Any] = {
                "key": episode_key(suite, task, state),
                "suite": suite,
                "task": task,
                "state": state,
                "instruction": env.unwrapped.instruction,
            }
            try:
                record = run_episode(
                    env,
                    policy,
                    init_state_index=state,
                    max_steps=budget,
                    num_steps_wait=protocol.NUM_STEPS_WAIT,
                    seed=state,
                )
            except Exception as error:  # recorded as the miss's reason, never hidden
                last = traceback.extract_tb(error.__traceback__)[-1]
                row.update(
                    success=False,
                    steps=None,
                    reason=f"errored: {error} ({Path(last.filename).name}:{last.lineno})",
                )
            else:
                row.update(success=bool(record["success"]), steps=int(record["steps"]))
                if not row["success"]:
                    stats = policy.episode_stats()
                    row["reason"] = miss_reason(
                        unmet_goals(env), policy.plan_done, row["steps"], stats["retries"]
                    )
            row["seconds"] = round(time.perf_counter() - start, 2)
            rows.append(row)
    finally:
        env.close()
    return rows


# ------------------------------------------------------------------------------------------- results


def load(path: Path) -> dict[str, Any]:
    """The results file, or an empty one; its ``episodes`` map keys to episode rows."""
    if not path.is_file():
        return {"episodes": {}}
    data = json.loads(path.read_text())
    if not isinstance(data.get("episodes"), dict):
        raise BadInput(f"--out {path}: not a file this bench wrote (no episodes map); choose another --out")
    return data


def task_rows(episodes: Iterable[dict[str, Any]]) -> list[list[Any]]:
    """One table row per (suite, task): suite, task, instruction, successes / runs, mean steps of successes,
    misses (``state k: reason``), in suite and task order."""
    grouped: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for row in episodes:
        grouped.setdefault((row["suite"], row["task"]), []).append(row)
    order = {suite: i for i, suite in enumerate(protocol.SUITES)}
    rows = []
    for (suite, task), runs in sorted(grouped.items(), key=lambda item: (order[item[0][0]], item[0][1])):
        runs.sort(key=lambda r: r["state"])
        wins = [r["steps"] for r in runs if r["success"]]
        misses = "; ".join(f"state {r['state']}: {r['reason']}" for r in runs if not r["success"]) or "none"
        mean = round(sum(wins) / len(wins)) if wins else "-"
        rows.append([suite, task, runs[0]["instruction"], f"{len(wins)} / {len(runs)}", mean, misses])
    return rows


def suite_metrics(episodes: Iterable[dict[str, Any]]) -> dict[str, str]:
    """Per suite: ``"successes / runs (rate %), states a-b, tasks below target: ..."``."""
    per: dict[str, dict[int, list[bool]]] = {}
    for row in episodes:
        per.setdefault(row["suite"], {}).setdefault(row["task"], []).append(bool(row["success"]))
    metrics = {}
    for suite in sorted(per, key=protocol.SUITES.index):
        tasks = per[suite]
        wins, runs = sum(sum(v) for v in tasks.values()), sum(len(v) for v in tasks.values())
        target = TARGET.get(suite, 0.95)
        low = [str(t) for t, v in sorted(tasks.items()) if sum(v) / len(v) < target]
        metrics[suite] = (
            f"{wins} / {runs} ({100 * wins / runs:.1f} %) over {len(tasks)} of "
            f"{protocol.TASK_COUNTS[suite]} tasks; below the {target:.0%} target: {', '.join(low) or 'none'}"
        )
    return metrics


def results(data: dict[str, Any], command: str) -> dict[str, Any]:
    """The results file's content from its episodes: provenance (every slice's command), per-suite metrics,
    the per-task table."""
    episodes = list(data["episodes"].values())
    commands = [c for c in data.get("commands", []) if c != command] + [command]
    states = sorted({r["state"] for r in episodes})
    return {
        "title": TITLE,
        "date": time.strftime("%Y-%m-%d", time.gmtime()),
        "machine": MACHINE,
        "source": "bench/libero_expert.py",
        "command": " ; ".join(commands),
        "commands": commands,
        "setup": SETUP,
        "metrics": suite_metrics(episodes),
        "tables": [
            {
                "caption": f"Per task (initial states {compact(states)})",
                "columns": ["suite", "task", "instruction", "successes", "mean steps of successes", "misses"],
                "rows": task_rows(episodes),
            }
        ],
        "episodes": data["episodes"],
    }


def compact(values: Sequence[int]) -> str:
    """``[0, 1, 2, 5]`` -> ``"0-2, 5"``."""
    parts: list[str] = []
    for v in values:
        if parts and parts[-1].split("-")[-1] == str(v - 1):
            parts[-1] = f"{parts[-1].split('-')[0]}-{v}"
        else:
            parts.append(str(v))
    return ", ".join(parts)


def code_version() -> str:
    """``git describe --always --dirty`` of this checkout, or ``unknown`` outside git."""
    try:
        done = subprocess.run(
            ["git", "describe", "--always", "--dirty"],
            capture_output=True,
            text=True,
            cwd=Path(__file__).parent,
            timeout=10,
            check=True,
        )
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return done.stdout.strip() or "unknown"


def save(path: Path, data: dict[str, Any], command: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(results(data, command), indent=1) + "\n")
    tmp.replace(path)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        data = load(args.out)
        jobs = plan_jobs(args, data["episodes"])
    except (BadInput, json.JSONDecodeError) as error:
        print(f"libero_expert: {error}", file=sys.stderr)
        return 2
    command = "python bench/libero_expert.py " + " ".join(sys.argv[1:] if argv is None else argv)
    command += f" (code at {code_version()})"
    print(f"{len(jobs)} task(s) to run, {sum(len(j[2]) for j in jobs)} episode(s)", flush=True)
    with ProcessPoolExecutor(args.workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        for rows in pool.map(run_task, *zip(*jobs, strict=True)) if jobs else []:
            for row in rows:
                data["episodes"][row["key"]] = row
            save(args.out, data, command)
            wins = sum(r["success"] for r in rows)
            print(
                f"{rows[0]['suite']} task {rows[0]['task']}: {wins} / {len(rows)}  "
                f"{sum(r['seconds'] for r in rows):.0f} s",
                flush=True,
            )
            for r in rows:
                if not r["success"]:
                    print(f"  state {r['state']}: {r['reason']}", flush=True)
    if not jobs and data["episodes"]:
        save(args.out, data, command)
    for suite, line in results(data, command)["metrics"].items():
        print(f"{suite}: {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
