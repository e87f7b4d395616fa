"""Success against level, one panel per axis, from a robustness table (any family): the perturbed success
with its 95 % band, the clean control arm, the expert's certification rate and, where measured, the best
blind baseline of the axis."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from benchmarks.core.plots import Panel, panel_plot

PLOT = "plots/robustness_by_level.png"


def _panel(
    axis: str, cells: Mapping[str, Any], clean: float | None, blind: Mapping[str, float] | None
) -> Panel:
    levels = sorted(int(level) for level in cells if level != "all")
    rows = [cells[str(level)] for level in levels]
    references: dict[str, Any] = {}
    if clean is not None:
        references["clean arm"] = clean
    references["certified %"] = [row["certification_rate"] for row in rows]
    if blind:
        references["blind (best)"] = [blind.get(str(level)) for level in levels]
    return Panel(
        axis,
        levels,
        [row["success_rate"] for row in rows],
        band=(
            [row["success_ci"][0] if row["success_ci"] else None for row in rows],
            [row["success_ci"][1] if row["success_ci"] else None for row in rows],
        ),
        references=references,
    )


def robustness_plot(
    path: Path, table: Mapping[str, Any], title: str, blind: Mapping[str, Mapping[str, float]] | None = None
) -> Path:
    """The table's axes as panels of success (%) against perturbation level; ``blind`` is
    ``{axis: {level: success %}}`` (:func:`benchmarks.robustness.blind.blind_by_axis`)."""
    clean = table["clean"]["success_rate"]
    panels = [_panel(axis, cells, clean, (blind or {}).get(axis)) for axis, cells in table["axes"].items()]
    return panel_plot(
        path, panels, series="success %", xlabel="perturbation level", ylabel="success (%)", title=title
    )
