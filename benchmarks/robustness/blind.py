"""Blind baselines per robustness axis: what policies that look at nothing (uniform random, the best
constant action) score on each axis and level, read from ``bench/results/robustness_blind.json``
(``bench/robustness_blind.py`` measures them through the benchmarks' own ``--perturb`` runs). A variant
can change what blind play reaches (an object moved into the arm's path, a start nearer the target), so
each axis is read against its own floor. A missing or unreadable file adds nothing."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

BLIND_RESULTS = Path(__file__).resolve().parents[2] / "bench" / "results" / "robustness_blind.json"
FORMAT = "spatial-arena-robustness-blind/1"


def blind_entry(benchmark: str, path: Path = BLIND_RESULTS) -> dict[str, Any] | None:
    """The measured entry of ``benchmark`` (``embodied-nav``, ``embodied-manip``, ...), or ``None``."""
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        return None
    entry = data.get("benchmarks", {}).get(benchmark)
    return entry if isinstance(entry, dict) and isinstance(entry.get("policies"), dict) else None


def blind_by_axis(entry: Mapping[str, Any]) -> dict[str, dict[str, float]]:
    """``{axis: {level or "all": best blind success %}}``: the best of the measured blind policies."""
    best: dict[str, dict[str, float]] = {}
    for measured in entry["policies"].values():
        for axis, levels in measured.get("axes", {}).items():
            for level, rate in levels.items():
                if rate is not None:
                    cell = best.setdefault(axis, {})
                    cell[level] = max(cell.get(level, rate), rate)
    return best


def blind_note(entry: Mapping[str, Any]) -> str:
    """Where the blind column comes from (one line under the table)."""
    return (
        f"Blind: the best of {', '.join(entry['policies'])} on the same axes and levels "
        f"(`bench/robustness_blind.py`, {entry.get('scope')}, measured {entry.get('date')}); they look at "
        "no image, so a model must beat them."
    )


def blind_column(
    benchmark: str, path: Path = BLIND_RESULTS
) -> tuple[dict[str, dict[str, float]] | None, str | None]:
    """The blind column of ``benchmark``'s robustness table and its note, or ``(None, None)`` unmeasured."""
    entry = blind_entry(benchmark, path)
    return (blind_by_axis(entry), blind_note(entry)) if entry else (None, None)
