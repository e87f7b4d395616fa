"""Snapshot files for text that must not drift (prompts, instructions).

A test compares rendered text with ``tests/snapshots/<name>``. To accept an intended change, run the
tests with ``UPDATE_SNAPSHOTS=1`` and review the diff of the snapshot file in the commit.
"""

from __future__ import annotations

import os
from pathlib import Path

SNAPSHOT_DIR = Path(__file__).parent / "snapshots"


def assert_matches_snapshot(name: str, text: str) -> None:
    path = SNAPSHOT_DIR / name
    if os.environ.get("UPDATE_SNAPSHOTS") == "1":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return
    if not path.exists():
        raise AssertionError(
            f"snapshot {path} is missing: run the tests with UPDATE_SNAPSHOTS=1 to create it"
        )
    expected = path.read_text(encoding="utf-8")
    assert text == expected, f"text differs from snapshot {path}; if intended, rerun with UPDATE_SNAPSHOTS=1"
