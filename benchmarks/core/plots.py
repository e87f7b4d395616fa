"""Plots saved next to results (matplotlib, Agg backend: no display needed)."""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import matplotlib
import numpy as np

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
    bands: Mapping[str, tuple[Sequence[float | None], Sequence[float | None]]] | None = None,
    dashed: Sequence[str] = (),
) -> Path:
    """One line per series; ``bands[label]`` (low, high per x: an interval) is shaded in the line's colour;
    the series named in ``dashed`` are drawn dashed (one that coincides with another stays visible)."""
    fig, ax = plt.subplots(figsize=(5, 3.5), dpi=120)
    for i, (label, ys) in enumerate(series.items()):
        style = "--" if label in dashed else "-"
        ax.plot(x, _nan(ys), marker="o", label=label, color=f"C{i}", linestyle=style)
        if bands and label in bands:
            low, high = bands[label]
            ax.fill_between(x, _nan(low), _nan(high), alpha=0.15, color=f"C{i}", linewidth=0)
    ax.set(xlabel=xlabel, ylabel=ylabel, title=title)
    if ylim:
        ax.set_ylim(*ylim)
    ax.grid(alpha=0.3)
    if len(series) > 1:  # below the axes: inside, it can hide the points a reader looks for
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2, fontsize=8, frameon=False)
    return _save(fig, path)


@dataclass(frozen=True)
class Panel:
    """One small plot of :func:`panel_plot`: a measured series (with an optional interval band) and
    reference lines (``label -> y``: a constant, or one value per x)."""

    title: str
    x: Sequence[float]
    y: Sequence[float | None]
    band: tuple[Sequence[float | None], Sequence[float | None]] | None = None
    references: Mapping[str, float | Sequence[float | None]] = field(default_factory=dict)


def panel_plot(
    path: Path,
    panels: Sequence[Panel],
    *,
    series: str,
    xlabel: str,
    ylabel: str,
    title: str,
    columns: int = 4,
) -> Path:
    """Small multiples (one panel per entry, shared axes, 0-100 y range), one legend for the figure."""
    columns = max(1, min(columns, len(panels)))
    rows = -(-len(panels) // columns)
    fig, grid = plt.subplots(
        rows,
        columns,
        figsize=(2.9 * columns, 2.3 * rows + 1.0),
        dpi=110,
        sharex=True,
        sharey=True,
        squeeze=False,
    )
    for ax, panel in zip(grid.flat, panels):
        _draw_panel(ax, panel, series)
    for ax in list(grid.flat)[len(panels) :]:
        ax.set_visible(False)
    handles, labels = grid.flat[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=len(labels), fontsize=8, frameon=False)
    fig.supxlabel(xlabel, y=0.1)
    fig.supylabel(ylabel)
    fig.suptitle(title)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout(rect=(0, 0.1, 1, 1))
    fig.savefig(path)
    plt.close(fig)
    return path


def _nan(values: Sequence[float | None]) -> list[float]:
    return [np.nan if v is None else v for v in values]


def _draw_panel(ax: plt.Axes, panel: Panel, series: str) -> None:
    if panel.band is not None:
        ax.fill_between(panel.x, _nan(panel.band[0]), _nan(panel.band[1]), alpha=0.2, color="C0", linewidth=0)
    ax.plot(panel.x, _nan(panel.y), marker="o", color="C0", label=series)
    for i, (label, ref) in enumerate(panel.references.items()):
        refs = [float(ref)] * len(panel.x) if isinstance(ref, (int, float)) else _nan(ref)
        ax.plot(panel.x, refs, linestyle=("--", ":", "-.")[i % 3], color=f"C{i + 1}", label=label)
    ax.set_title(panel.title, fontsize=9)
    ax.set_ylim(-5, 105)
    ax.set_xticks(list(panel.x))
    ax.xaxis.set_tick_params(labelbottom=True)  # (a panel above an empty cell shows its own)
    ax.grid(alpha=0.3)


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
