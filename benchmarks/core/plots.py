"""Plots saved next to results (matplotlib, Agg backend: no display needed)."""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt


def line_plot(
    path: Path,
    x: Sequence[float],
    series: Mapping[str, Sequence[float | None]],
    *,
    xlabel: str,
    ylabel: str,
    title: str,
    ylim: tuple[float, float] | None = (0, 100),
) -> Path:
    fig, ax = plt.subplots(figsize=(5, 3.5), dpi=120)
    for label, ys in series.items():
        ax.plot(x, ys, marker="o", label=label)
    ax.set(xlabel=xlabel, ylabel=ylabel, title=title)
    if ylim:
        ax.set_ylim(*ylim)
    ax.grid(alpha=0.3)
    if len(series) > 1:
        ax.legend()
    return _save(fig, path)


def bar_plot(
    path: Path,
    labels: Sequence[str],
    values: Sequence[float | None],
    *,
    value_label: str,
    title: str,
    notes: Sequence[str] | None = None,
    limit: float = 100.0,
) -> Path:
    """One horizontal bar per label, so long names (a task's instruction) read in full, wrapped.

    Every bar is labelled with its value (and its entry of ``notes``, e.g. "2 errored"); a 0 bar is drawn as
    a marker on the axis, so it reads as measured 0 rather than missing. ``None`` is a row with no score
    (every unit errored): a hatched band labelled with its note, or "not scored". ``limit``: the value axis
    runs from 0 to at least this (100 for percentages).
    """
    notes = list(notes) if notes is not None else [""] * len(labels)
    rows = range(len(labels))
    upper = max([limit, *(v for v in values if v is not None)])
    fig, ax = plt.subplots(figsize=(8, 0.32 * sum(_lines(label) for label in labels) + 1.4), dpi=120)
    for i, value, note in zip(rows, values, notes):
        if value is None:
            ax.barh(i, upper, color="none", edgecolor="#aaaaaa", hatch="//", linewidth=0.8)
            ax.text(
                upper * 0.01,
                i,
                note or "not scored",
                va="center",
                fontsize=8,
                color="#333333",
                bbox={"facecolor": "white", "edgecolor": "none", "pad": 1},
            )
            continue
        ax.barh(i, value, color="#4477aa", edgecolor="#223355", linewidth=0.8)
        if value == 0:
            ax.plot(0, i, marker="|", markersize=14, markeredgewidth=3, color="#cc3311", clip_on=False)
        ax.text(
            value + upper * 0.01, i, f"{value:.1f}" + (f" ({note})" if note else ""), va="center", fontsize=8
        )
    ax.set_yticks(rows, [_wrapped(label) for label in labels], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlim(0, upper * 1.12)  # room for the value labels
    ax.set(xlabel=value_label, title=title)
    ax.grid(axis="x", alpha=0.3)
    return _save(fig, path)


LABEL_WIDTH = 48  # characters per line of a bar's label


def _wrapped(label: str) -> str:
    return "\n".join(textwrap.wrap(label, LABEL_WIDTH)) or label


def _lines(label: str) -> int:
    return max(1, len(textwrap.wrap(label, LABEL_WIDTH)))


def _save(fig: plt.Figure, path: Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path
