"""LIBERO's scores from episode records: success per task (errored trials counted apart), the per-task plot
and the blind baselines' rows of a run's summary."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.core import UnitTally
from benchmarks.core.episode_record import EpisodeRecord
from benchmarks.core.plots import bar_plot
from benchmarks.stats.intervals import cell, wilson


def task_table(
    results: Sequence[EpisodeRecord], errored: Mapping[int, int] | None = None
) -> dict[int, dict[str, Any]]:
    """Per task: instruction, completed trials, successes, success rate (%), its 95 % Wilson interval
    (``success_ci``, in %) and errored trials (``errored``: task index -> count). A task whose every trial
    errored keeps its row, with no instruction (it comes from the episodes), success rate ``None``."""
    by_task: dict[int, list[EpisodeRecord]] = defaultdict(list)
    for r in results:
        by_task[r["extras"]["task_index"]].append(r)
    errored = errored or {}
    table = {}
    for t in sorted({*by_task, *errored}):
        rows = by_task.get(t, [])
        table[t] = {
            "instruction": rows[0]["extras"]["instruction"] if rows else None,
            "trials": len(rows),
            "successes": sum(r["success"] for r in rows),
            "success_rate": 100.0 * float(np.mean([r["success"] for r in rows])) if rows else None,
            "errored": errored.get(t, 0),
            "success_ci": wilson(sum(r["success"] for r in rows), len(rows)).scaled(100).bounds(),
        }
    return table


def task_rows(
    table: Mapping[int, Mapping[str, Any]],
    overall: float | None,
    overall_ci: list[float] | None,
    tally: UnitTally,
) -> list[str]:
    """The summary table's rows: one per task, then the suite's, each rate with its interval."""
    lines = [
        f"| {t} | {row['instruction'] or '(every trial errored)'} | {row['trials']} | "
        f"{cell(row['success_rate'], row['success_ci'])} | {row['errored']} |"
        for t, row in table.items()
    ]
    lines.append(
        f"| **suite** | | {tally.completed} | **{cell(overall, overall_ci)}** | {tally.errored_cell()} |"
    )
    return lines


def task_label(task: int, row: Mapping[str, Any]) -> str:
    """A task as a person reads it: its index and instruction."""
    return f"{task}: {row['instruction'] or '(instruction unknown: every trial errored)'}"


def task_plot(path: Path, table: Mapping[int, Mapping[str, Any]], title: str) -> Path:
    """Success per task as bars named by instruction; an errored task is a hatched row saying so."""
    notes = [
        (f"{row['errored']} errored" if row["trials"] else f"all {row['errored']} trials errored")
        if row["errored"]
        else ""
        for row in table.values()
    ]
    return bar_plot(
        path,
        [task_label(t, row) for t, row in table.items()],
        [row["success_rate"] for row in table.values()],
        value_label="success rate (%)",
        title=title,
        notes=notes,
    )


def blind_rows(suite: str) -> list[str]:
    """Random and the best constant action (``bench/results/blind_baselines.json``) when measured on ``suite``."""
    from benchmarks.core.blind import blind_baselines, blind_table_rows

    entry = blind_baselines("libero")
    if entry is None or entry.get("suite") != suite:
        return []
    rows, note = blind_table_rows("libero", lambda v: ["", str(v["units"]), f"{v['success_rate']:.1f}", ""])
    return [*rows, "", note] if note else rows
