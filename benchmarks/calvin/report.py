"""CALVIN's scores from chain records: ``avg_seq_len``, the success rate of reaching position i, per-task
counts, and the Markdown tables of a run's summary."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np

from benchmarks.calvin.config import CHAIN_LENGTH, REFERENCE
from benchmarks.core import UnitTally, score_cell
from benchmarks.core.episode_record import EpisodeRecord, ok_results


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


def task_info(chains: Sequence[EpisodeRecord]) -> dict[str, dict[str, int]]:
    """Per task: successes, and attempts (the successful subtasks plus the one that failed), as CALVIN counts."""
    success, total = Counter(), Counter()
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


def chain_markdown(
    label: str, metrics: dict[str, Any], tasks: dict[str, dict[str, int]], tally: UnitTally, where: str
) -> str:
    ref = REFERENCE
    lines = [
        f"## CALVIN long-horizon evaluation: {label} ({tally.completed} of {tally.total} chains completed, "
        f"{where})",
        "",
        "| policy | 1 | 2 | 3 | 4 | 5 | avg. len | chains errored |",
        "|---|---|---|---|---|---|---|---|",
        f"| {label} | "
        + " | ".join(score_cell(v) for v in percent_sr(metrics))
        + f" | {score_cell(metrics['avg_seq_len'], '.2f')} | {tally.errored_cell()} |",
        f"| {ref['label']} | "
        + " | ".join(f"{v:.1f}" for v in ref["chain_sr"])
        + f" | {ref['avg_seq_len']:.2f} | |",
        *_blind_rows(),
        "",
        "Success rate (%) of completing at least i subtasks in a row; avg. len = mean completed subtasks (0-5), "
        "over the chains that ran to their end (an errored chain is not scored; n/a: none did).",
        "",
        "| task | success | attempts | rate |",
        "|---|---|---|---|",
    ]
    lines += [
        f"| {t} | {v['success']} | {v['total']} | {100 * v['success'] / v['total']:.0f}% |"
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
        f"Success rate: {score_cell(None if rate is None else 100 * rate)}% (one subtask per episode, from the "
        f"evaluation chains that start with it); episodes errored: {tally.errored_cell()}",
        "",
        "| task | success | episodes | rate |",
        "|---|---|---|---|",
    ]
    lines += [
        f"| {t} | {v['success']} | {v['total']} | {100 * v['success'] / v['total']:.0f}% |"
        for t, v in tasks.items()
    ]
    return "\n".join(lines)
