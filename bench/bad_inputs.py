"""Run every row of the bad-input table (``tests/bad_inputs.py``) as ``python -m MODULE ARGS`` and count how
the commands answer: exit status 2 with one line, a traceback, a run that started anyway (cut at --timeout).

    python bench/bad_inputs.py                       # this checkout
    python bench/bad_inputs.py --code /path/to/old   # the same table against another checkout's code
    python bench/bad_inputs.py --json out.json       # every row's result too

Each row runs in a fresh interpreter in an empty folder (run folders land there), with ``PYTHONPATH`` set
to the checkout under test; the table itself always comes from this checkout.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.bad_inputs import BAD_INPUTS, MODULES, case_id, dead_endpoint, fill  # noqa: E402


def run_case(command: str, argv: list[str], named: str, code: Path, timeout: float) -> dict[str, object]:
    """One row in a fresh interpreter: exit status, stderr lines, traceback, seconds."""
    with tempfile.TemporaryDirectory() as folder:
        root, dead = Path(folder), dead_endpoint()
        args = [fill(a, root, dead) for a in argv]
        env = {**os.environ, "PYTHONPATH": str(code), "MUJOCO_GL": os.environ.get("MUJOCO_GL", "egl")}
        start = time.perf_counter()
        try:
            done = subprocess.run(
                [sys.executable, "-m", MODULES[command], *args],
                cwd=root,
                env=env,
                capture_output=True,
                text=True,
                timeout=timeout,
            )
            status, err = done.returncode, done.stderr
        except subprocess.TimeoutExpired as e:
            status, err = (
                None,
                (e.stderr or b"").decode(errors="replace")
                if isinstance(e.stderr, bytes)
                else (e.stderr or ""),
            )
        seconds = time.perf_counter() - start
        lines = [line for line in err.splitlines() if line.strip() and "%|" not in line]
        return {
            "case": case_id(command, argv),
            "status": status,
            "seconds": round(seconds, 2),
            "traceback": "Traceback" in err,
            "stderr_lines": len(lines),
            "last_line": lines[-1][:300] if lines else "",
            "names_input": bool(lines) and fill(named, root, dead) in lines[-1],
            "timed_out": status is None,
        }


def summary(rows: list[dict[str, object]]) -> dict[str, object]:
    """How many rows got each kind of answer."""
    good = [
        r
        for r in rows
        if r["status"] == 2 and r["stderr_lines"] == 1 and not r["traceback"] and r["names_input"]
    ]
    seconds = [float(r["seconds"]) for r in rows]  # type: ignore[arg-type]
    return {
        "cases": len(rows),
        "one_line_exit_2_naming_input": len(good),
        "traceback": sum(bool(r["traceback"]) for r in rows),
        "exit_1": sum(r["status"] == 1 for r in rows),
        "ran_until_timeout": sum(bool(r["timed_out"]) for r in rows),
        "median_s": round(statistics.median(seconds), 2),
        "max_s": round(max(seconds), 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--code", default=str(ROOT), help="checkout whose code answers (default: this one)")
    parser.add_argument(
        "--timeout", type=float, default=45.0, help="seconds before a row counts as 'ran anyway'"
    )
    parser.add_argument("--json", help="write every row's result and the summary here")
    args = parser.parse_args()
    rows = []
    for command, argv, named in BAD_INPUTS:
        row = run_case(command, argv, named, Path(args.code), args.timeout)
        rows.append(row)
        print(
            f"{row['status']!s:>4} {row['seconds']:6.1f}s tb={int(bool(row['traceback']))} "
            f"lines={row['stderr_lines']} {row['case']}",
            flush=True,
        )
    result = summary(rows)
    print(json.dumps(result, indent=1))
    if args.json:
        Path(args.json).write_text(
            json.dumps({"code": args.code, "summary": result, "rows": rows}, indent=1) + "\n"
        )


if __name__ == "__main__":
    main()
