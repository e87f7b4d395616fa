"""EB's scores from episode records: success per subset (and per task family), planner calls and output
errors, and the Markdown tables of a run's summary."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any, TypedDict

import numpy as np

from benchmarks.core import UnitTally
from benchmarks.core.episode_record import EpisodeRecord
from benchmarks.stats.intervals import Interval, cell, macro_mean, wilson


def _planner_errors(stats: dict[str, float]) -> float:
    return stats.get("planner_output_error", stats.get("parse_errors", 0.0))


def planner_calls(record: EpisodeRecord) -> float:
    """The episode's planner (model) calls: the policy's own count, ``policy_stats["model_calls"]`` (the
    number CALVIN's and LIBERO's model-call totals add up); a policy that calls no model (the expert, the
    baselines) plans on every ``act`` (``policy_calls``). ``policy_calls`` alone counts env actions for a
    policy that returns a plan's actions one by one."""
    return float(record["policy_stats"].get("model_calls", record["policy_calls"]))


class SubsetRow(TypedDict):
    """One subset's row of :func:`subset_table`."""

    episodes: int
    success_rate: float
    avg_steps: float
    avg_planner_calls: float
    avg_invalid_actions: float
    planner_output_errors: float
    success_ci: list[float] | None


def subset_table(results: Sequence[EpisodeRecord], key: str = "subset") -> dict[str, SubsetRow]:
    """EB's numbers per subset (or per another ``extras`` field, ``key``): success rate (%) and its 95 %
    Wilson interval (``success_ci``, in %), mean steps, planner calls, invalid actions, output errors."""
    by_subset: dict[str, list[EpisodeRecord]] = defaultdict(list)
    for r in results:
        by_subset[r["extras"][key]].append(r)
    table: dict[str, SubsetRow] = {}
    for subset, rows in by_subset.items():
        stats = [r["policy_stats"] for r in rows]
        table[subset] = {
            "episodes": len(rows),
            "success_rate": 100.0 * float(np.mean([r["success"] for r in rows])),
            "avg_steps": float(np.mean([r["steps"] for r in rows])),
            "avg_planner_calls": float(np.mean([planner_calls(r) for r in rows])),
            "avg_invalid_actions": float(np.mean([r["extras"]["num_invalid_actions"] for r in rows])),
            "planner_output_errors": float(np.sum([_planner_errors(s) for s in stats])),
            "success_ci": _rate(rows).scaled(100).bounds(),
        }
    return table


def _rate(rows: Sequence[EpisodeRecord]) -> Interval:
    return wilson(sum(bool(r["success"]) for r in rows), len(rows))


def average_interval(results: Sequence[EpisodeRecord], key: str = "subset") -> list[float] | None:
    """The 95 % interval (in %) of the average of the subsets' success rates: the subsets' Wilson intervals
    combined as independent estimates (:func:`benchmarks.stats.intervals.macro_mean`)."""
    by_subset: dict[str, list[EpisodeRecord]] = defaultdict(list)
    for r in results:
        by_subset[r["extras"][key]].append(r)
    return macro_mean([_rate(rows) for rows in by_subset.values()], bounds=(0.0, 1.0)).scaled(100).bounds()


def _rows(table: dict[str, SubsetRow], heading: str) -> list[str]:
    lines = [
        f"| {heading} | episodes | success % [95 % interval] | avg. steps | avg. planner calls | avg. invalid actions | "
        "planner output errors |",
        "|---|---|---|---|---|---|---|",
    ]
    for subset, row in table.items():
        lines.append(
            f"| {subset} | {row['episodes']} | {cell(row['success_rate'], row.get('success_ci'))} | {row['avg_steps']:.1f} | "
            f"{row['avg_planner_calls']:.1f} | {row['avg_invalid_actions']:.1f} | "
            f"{row['planner_output_errors']:.0f} |"
        )
    return lines


def subset_markdown(
    title: str,
    label: str,
    table: dict[str, SubsetRow],
    average: float | None,
    tally: UnitTally,
    families: dict[str, SubsetRow] | None = None,
    family: str | None = None,
    average_ci: list[float] | None = None,
) -> str:
    lines = [
        f"## {title}: {label}",
        "",
        f"{tally.completed} of {tally.total} episodes completed; success is over "
        "completed episodes (errored ones are counted, never scored). [95 % interval]: Wilson per row; the "
        "average's combines the subsets' as independent estimates.",
        "",
        *_rows(table, "subset"),
    ]
    lines += [
        f"| **average over subsets** | {tally.completed} | **{cell(average, average_ci)}** | | | | |",
        f"| **episodes errored** | {tally.errored_cell()} | | | | | |",
    ]
    blind, note = _blind_rows(family, list(table)) if family else ([], None)
    lines += [*blind, "", *([note, ""] if note else [])]
    if families:
        lines += [*_rows(families, "task family"), ""]
    lines.append(
        "Planner calls are model calls (a policy without a model: its act calls). Planner output errors "
        "are model answers that could not be parsed into an action (counted, and handled by the policy's "
        "recorded fallback)."
    )
    return "\n".join(lines)


def _blind_rows(family: str, subsets: list[str]) -> tuple[list[str], str | None]:
    """Random and the best constant action (``bench/results/blind_baselines.json``), averaged over the
    subsets this run has, as rows under the run's average."""
    from benchmarks.core.blind import blind_table_rows

    def cells(values: dict[str, Any]) -> list[str]:
        measured = [s for s in subsets if s in values.get("by_subset", {})]
        rate = f"{np.mean([values['by_subset'][s] for s in measured]):.1f}" if measured else "-"
        if measured and len(measured) < len(subsets):
            rate += f" ({', '.join(measured)} only)"
        return ["", rate, "", "", "", ""]

    return blind_table_rows(family, cells)
