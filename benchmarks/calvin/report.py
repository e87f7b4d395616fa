"""CALVIN's scores from chain records: ``avg_seq_len``, the success rate of reaching position i, per-task
counts, and the Markdown tables of a run's summary."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np

from benchmarks.calvin.config import CHAIN_LENGTH, REFERENCE
from benchmarks.core import UnitTally
from benchmarks.core.episode_record import EpisodeRecord, ok_results
from benchmarks.stats.intervals import BOOTSTRAP, WILSON, bootstrap_mean, cell, described, wilson


def chain_metrics(num_completed: Sequence[int], chain_length: int = CHAIN_LENGTH) -> dict[str, Any]:
    """CALVIN's headline numbers: average completed length and success rate of reaching position i.

    Without a completed chain there is no score: every number is ``None`` (JSON null), never 0."""
    completed = np.asarray(num_completed, dtype=float)
    if completed.size == 0:
        return {"avg_seq_len": None, "chain_sr": {str(i): None for i in range(1, chain_length + 1)}}
    return {
        "avg_seq_len": float(completed.mean()),
        "chain_sr": {str(i): float((completed >= i).mean()) for i in range(1, chain_length + 1)},
    }


def chain_intervals(num_completed: Sequence[int], chain_length: int = CHAIN_LENGTH) -> dict[str, Any]:
    """95 % intervals of :func:`chain_metrics`' numbers: ``avg_seq_len_ci`` (a percentile bootstrap over
    the chains) and ``chain_sr_ci`` (Wilson, per position), each ``[low, high]`` or ``None`` without chains."""
    completed = [int(x) for x in num_completed]
    return {
        "avg_seq_len_ci": bootstrap_mean(completed).bounds(),
        "chain_sr_ci": {
            str(i): wilson(sum(c >= i for c in completed), len(completed)).bounds()
            for i in range(1, chain_length + 1)
        },
        "intervals": described(avg_seq_len=BOOTSTRAP, chain_sr=WILSON, task=WILSON),
    }


def task_intervals(tasks: dict[str, dict[str, int]]) -> dict[str, list[float] | None]:
    """The Wilson interval of each task's success rate (successes of attempts)."""
    return {task: wilson(v["success"], v["total"]).bounds() for task, v in tasks.items()}


def _rate_cell(success: int, total: int) -> str:
    return cell(success / total, wilson(success, total).bounds(), ".0f", 100)


def task_info(chains: Sequence[EpisodeRecord]) -> dict[str, dict[str, int]]:
    """Per task: successes, and attempts (the successful subtasks plus the one that failed), as CALVIN counts."""
    success: Counter[str] = Counter()
    total: Counter[str] = Counter()
    for subtask in subtask_records(chains):
        total[subtask["extras"]["task"]] += 1
        success[subtask["extras"]["task"]] += int(subtask["success"])
    return {task: {"success": success[task], "total": total[task]} for task in sorted(total)}


def ok_chains(records: Sequence[dict[str, Any]]) -> list[EpisodeRecord]:
    """The completed chains' records, also those written before the shared schema."""
    from benchmarks.calvin.chain import read_chain

    return ok_results(records, read_chain)


def subtask_records(chains: Sequence[EpisodeRecord]) -> list[EpisodeRecord]:
    return [s for c in chains for s in c["extras"]["subtasks"]]


def percent_sr(metrics: dict[str, Any], chain_length: int = CHAIN_LENGTH) -> list[float | None]:
    return [
        None if v is None else 100 * v
        for v in (metrics["chain_sr"][str(i)] for i in range(1, chain_length + 1))
    ]


def _headline_cells(metrics: dict[str, Any], chain_length: int = CHAIN_LENGTH) -> list[str]:
    """Each position's rate (%) and avg. len, with their intervals when ``metrics`` has them."""
    bounds = metrics.get("chain_sr_ci") or {}
    rates = [
        cell(metrics["chain_sr"][str(i)], bounds.get(str(i)), scale=100) for i in range(1, chain_length + 1)
    ]
    return [*rates, cell(metrics["avg_seq_len"], metrics.get("avg_seq_len_ci"), ".2f")]


def chain_markdown(
    label: str, metrics: dict[str, Any], tasks: dict[str, dict[str, int]], tally: UnitTally, where: str
) -> str:
    """The run's tables; ``metrics`` with :func:`chain_intervals`' fields shows each cell's interval."""
    ref = REFERENCE
    lines = [
        f"## CALVIN long-horizon evaluation: {label} ({tally.completed} of {tally.total} chains completed, "
        f"{where})",
        "",
        "| policy | 1 | 2 | 3 | 4 | 5 | avg. len | chains errored |",
        "|---|---|---|---|---|---|---|---|",
        f"| {label} | " + " | ".join(_headline_cells(metrics)) + f" | {tally.errored_cell()} |",
        f"| {ref['label']} | "
        + " | ".join(f"{v:.1f}" for v in ref["chain_sr"])
        + f" | {ref['avg_seq_len']:.2f} | |",
        *_blind_rows(),
        "",
        "Success rate (%) of completing at least i subtasks in a row; avg. len = mean completed subtasks (0-5), "
        "over the chains that ran to their end (an errored chain is not scored; n/a: none did). "
        f"[95 % interval] over n = {tally.completed} chains: Wilson for the rates, a percentile bootstrap "
        "over chains for avg. len.",
        "",
        "| task | success | attempts | rate % [95 % Wilson interval] |",
        "|---|---|---|---|",
    ]
    lines += [
        f"| {t} | {v['success']} | {v['total']} | {_rate_cell(v['success'], v['total'])} |"
        for t, v in tasks.items()
    ]
    return "\n".join(lines)


def _blind_rows() -> list[str]:
    """Random and the best constant action (``bench/results/blind_baselines.json``), with their provenance."""
    from benchmarks.core.blind import blind_table_rows

    rows, note = blind_table_rows(
        "calvin", lambda v: [f"{x:.1f}" for x in v["chain_sr"]] + [f"{v['avg_seq_len']:.2f}", ""]
    )
    return [*rows, "", note] if note else rows


def task_markdown(
    label: str, metrics: dict[str, Any], tasks: dict[str, dict[str, int]], tally: UnitTally, where: str
) -> str:
    rate = metrics["chain_sr"]["1"]
    lines = [
        f"## CALVIN single-task episodes: {label} ({tally.completed} of {tally.total} episodes completed, "
        f"{where})",
        "",
        f"Success rate (%): {cell(rate, (metrics.get('chain_sr_ci') or {}).get('1'), scale=100)} over "
        f"n = {tally.completed} episodes [95 % Wilson interval] (one subtask per episode, from the "
        f"evaluation chains that start with it); episodes errored: {tally.errored_cell()}",
        "",
        "| task | success | episodes | rate % [95 % Wilson interval] |",
        "|---|---|---|---|",
    ]
    lines += [
        f"| {t} | {v['success']} | {v['total']} | {_rate_cell(v['success'], v['total'])} |"
        for t, v in tasks.items()
    ]
    return "\n".join(lines)
