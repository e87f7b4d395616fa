"""Blind baselines next to model rows: what random and the best constant action score, per benchmark family.

``bench/blind_baselines.py`` measures them through each benchmark's own command and writes
``bench/results/blind_baselines.json`` (committed, with date, machine, n and seeds); summaries read it
here and add the rows under their headline, so a model's number is never read without the floor that
needs no image at all. A missing or unreadable file adds nothing (summaries must not fail over it).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

BLIND_RESULTS = Path(__file__).resolve().parents[2] / "bench" / "results" / "blind_baselines.json"


def blind_baselines(family: str, path: Path = BLIND_RESULTS) -> dict[str, Any] | None:
    """The measured blind baselines of ``family`` (``nav``, ``manip``, ``calvin``, ``libero``), or ``None``."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    entry = data.get("families", {}).get(family) if isinstance(data, dict) else None
    if not isinstance(entry, dict) or not isinstance(entry.get("policies"), dict):
        return None
    return {"date": data.get("date"), "machine": data.get("machine"), **entry}


def blind_policies(entry: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """``(row label, measured values)`` for random and the best constant action, in that order."""
    rows = []
    policies = entry["policies"]
    if "random" in policies and "error" not in policies["random"]:
        rows.append(("blind: random", policies["random"]))
    best = entry.get("best_constant")
    if best in policies and "error" not in policies[best]:
        action = policies[best].get("action")
        rows.append((f"blind: best constant action ({json.dumps(action)})", policies[best]))
    return rows


def blind_note(entry: dict[str, Any]) -> str:
    """Where the blind rows come from (one line under the table)."""
    constants = [k for k in entry["policies"] if k.startswith("constant-")]
    return (
        f"Blind rows: `bench/blind_baselines.py`, {entry.get('total_units')} {entry.get('units', 'episodes')} "
        f"each ({entry.get('scope')}), seed {entry.get('seed')}, measured {entry.get('date')}; "
        f"best of {len(constants)} constant actions. They look at no image: a model must beat them."
    )


def blind_table_rows(
    family: str, cells: Callable[[dict[str, Any]], list[str]], path: Path = BLIND_RESULTS
) -> tuple[list[str], str | None]:
    """Markdown rows ``| label | cells... |`` for the blind baselines of ``family``, and the note on their
    provenance; no rows and ``None`` when nothing was measured. ``cells(values)`` fills the other columns."""
    entry = blind_baselines(family, path)
    if entry is None:
        return [], None
    rows = [f"| {label} | " + " | ".join(cells(values)) + " |" for label, values in blind_policies(entry)]
    return rows, blind_note(entry) if rows else None
