"""Writing a run's results: per-sample JSONL, summary JSON and Markdown, CSV tables, a bar chart.

Everything written here is a function of the records and the summary only (no clock, no host), so scoring
the same predictions twice gives byte-identical files.
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any


def write_jsonl(path: Path, rows: Iterable[Mapping[str, Any]]) -> None:
    """One JSON object per line, keys in a stable order."""
    with path.open("w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n")


def write_json(path: Path, data: Mapping[str, Any]) -> None:
    """Indented JSON (non-finite floats become null)."""
    path.write_text(
        json.dumps(_finite(data), indent=2, ensure_ascii=False, sort_keys=True) + "\n", encoding="utf-8"
    )


def _finite(value: object) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, Mapping):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


def _cell(value: object) -> str:
    if value is None:
        return "N/A"
    if isinstance(value, float):
        return f"{value:.2f}"
    if isinstance(value, list) and len(value) == 2 and all(isinstance(v, float) for v in value):
        return f"[{value[0]:.2f}, {value[1]:.2f}]"  # an interval
    return str(value)


def markdown_table(table: Mapping[str, Any]) -> str:
    """A GitHub-style Markdown table (floats to 2 decimals, missing values as N/A)."""
    columns = table["columns"]
    lines = ["| " + " | ".join(columns) + " |", "|" + "|".join("---" for _ in columns) + "|"]
    lines += ["| " + " | ".join(_cell(row.get(c)) for c in columns) + " |" for row in table["rows"]]
    return "\n".join(lines)


def write_csv(path: Path, table: Mapping[str, Any]) -> None:
    """A table as CSV (full precision, empty cells for missing values)."""
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(
            handle, fieldnames=table["columns"], extrasaction="ignore", lineterminator="\n"
        )
        writer.writeheader()
        for row in table["rows"]:
            writer.writerow({c: ("" if row.get(c) is None else row.get(c)) for c in table["columns"]})


def summary_markdown(title: str, summary: Mapping[str, Any], context: Mapping[str, Any]) -> str:
    """The human-readable summary: headline numbers, counts, judge, tables, notes."""
    counts = summary["counts"]
    coverage = {
        "status": summary.get("status", "complete"),
        "items": counts.get("items"),
        "completed": counts.get("completed"),
        "errored": counts.get("errors"),
    }
    parts = [
        f"# {title}",
        "",
        _key_values(context),
        "",
        "## Headline (%) [95 % interval]",
        "",
        _key_values({**headline_cells(summary), **coverage}),
    ]
    if summary.get("headline_note"):
        parts += ["", f"Why this headline differs from the project's: {summary['headline_note']}"]
    parts += ["", "## Counts", "", _key_values(summary["counts"])]
    if summary.get("judge"):
        parts += ["", "## LLM judge (separate from the rule-based score)", "", _key_values(summary["judge"])]
    for name, table in summary["tables"].items():
        parts += ["", f"## {name.replace('_', ' ')}", "", markdown_table(table)]
    if summary.get("missing_leaves"):
        parts += ["", "## Leaves without data", "", ", ".join(summary["missing_leaves"])]
    if summary.get("notes"):
        parts += ["", "## Notes", "", *[f"- {n}" for n in summary["notes"]]]
    return "\n".join(parts) + "\n"


def headline_cells(summary: Mapping[str, Any]) -> dict[str, str]:
    """Each headline number as shown: ``72.00 [65.10, 78.90]``, the value alone where it has no interval."""
    bounds = summary.get("headline_ci") or {}
    return {
        name: _cell(value) if bounds.get(name) is None else f"{_cell(value)} {_cell(bounds[name])}"
        for name, value in summary["headline"].items()
    }


def _key_values(values: Mapping[str, Any]) -> str:
    return "\n".join(
        f"- **{k}**: {_cell(v) if not isinstance(v, Mapping) else json.dumps(v, sort_keys=True)}"
        for k, v in values.items()
    )


def write_tables(folder: Path, tables: Mapping[str, Mapping[str, Any]]) -> list[Path]:
    """Every summary table as ``folder/<name>.csv``."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, table in tables.items():
        path = folder / f"{name}.csv"
        write_csv(path, table)
        paths.append(path)
    return paths


def bar_chart(path: Path, table: Mapping[str, Any], label: str, value: str, title: str) -> Path | None:
    """A horizontal bar chart of one table column (matplotlib, Agg backend); ``None`` when nothing to plot."""
    rows = [r for r in table["rows"] if r.get(value) is not None]
    if not rows:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels, values = [str(r[label]) for r in rows], [float(r[value]) for r in rows]
    figure, axes = plt.subplots(figsize=(8, 0.4 * len(rows) + 1.2))
    try:
        axes.barh(range(len(rows)), values, color="#4c72b0")
        axes.set_yticks(range(len(rows)), labels)
        axes.invert_yaxis()
        axes.set_xlabel(f"{value} (%)")
        axes.set_xlim(0, max(100.0, max(values)))
        axes.set_title(title)
        for i, v in enumerate(values):
            axes.text(v + 0.5, i, f"{v:.1f}", va="center", fontsize=8)
        figure.tight_layout()
        path.parent.mkdir(parents=True, exist_ok=True)
        figure.savefig(path, dpi=100, metadata={"Software": None})
    finally:
        plt.close(figure)
    return path


def records_in_order(records: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """Records sorted by their item's position in the data file."""
    return sorted(records, key=lambda r: r["index"])
