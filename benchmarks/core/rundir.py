"""The output folder of one run: ``<output>/<benchmark>/<run-name>/``.

It holds ``manifest.json``, ``records.jsonl`` (appended as units finish), ``summary.json``,
``summary.md``, ``plots/``, ``videos/`` and any benchmark-native files. Only the parent process writes
here, so appends need no locking; each record is flushed and fsynced so an interruption loses at most
the unit in flight.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from benchmarks.core.work import RECORD_OK
from envs.files import atomic_write_text


class ResumeError(RuntimeError):
    """The folder holds a run that cannot be continued with this configuration."""


def write_json(path: Path, data: Any) -> None:
    """Write JSON atomically (a reader never sees half a file), readable like any file the run writes."""
    atomic_write_text(path, json.dumps(data, indent=2, sort_keys=False, default=_json_default) + "\n")


def _json_default(obj: Any) -> Any:
    if hasattr(obj, "tolist"):  # numpy arrays and scalars
        return obj.tolist()
    if isinstance(obj, (set, frozenset)):
        return sorted(obj)
    if isinstance(obj, Path):
        return str(obj)
    raise TypeError(f"{type(obj).__name__} is not JSON serialisable")


class RunDir:
    """Paths and I/O of one run's output folder."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.manifest = self.path / "manifest.json"
        self.records = self.path / "records.jsonl"
        self.summary_json = self.path / "summary.json"
        self.summary_md = self.path / "summary.md"
        self.plots = self.path / "plots"
        self.videos = self.path / "videos"

    def has_records(self) -> bool:
        return self.records.exists() and self.records.stat().st_size > 0

    def prepare(self, manifest: dict[str, Any], *, resume: bool, runtime_keys: set[str]) -> None:
        """Create the folder and its manifest; on resume check the configuration matches the old one."""
        if self.has_records() and not resume:
            raise ResumeError(
                f"{self.path} already holds results: pass --resume to continue that run, or choose another "
                f"--output/--run-name"
            )
        if resume and self.manifest.exists():
            old = json.loads(self.manifest.read_text())["config"]
            new = json.loads(json.dumps(manifest["config"], default=_json_default))
            diff = sorted(k for k in set(old) | set(new) if k not in runtime_keys and old.get(k) != new.get(k))
            if diff:
                changes = ", ".join(f"{k}: {old.get(k)!r} -> {new.get(k)!r}" for k in diff)
                raise ResumeError(f"cannot resume {self.path}: configuration changed ({changes})")
            previous = json.loads(self.manifest.read_text())
            manifest = {**manifest, "resumed_from": [*previous.get("resumed_from", []), previous["started_at"]]}
        self.path.mkdir(parents=True, exist_ok=True)
        if resume:
            self._drop_partial_line()
        write_json(self.manifest, manifest)

    def _drop_partial_line(self) -> None:
        """Cut a record line left unfinished by an interruption, so new records start on a fresh line."""
        if not self.records.exists():
            return
        data = self.records.read_bytes()
        if data and not data.endswith(b"\n"):
            with self.records.open("r+b") as f:
                f.truncate(data.rfind(b"\n") + 1)

    def append_record(self, record: dict[str, Any]) -> None:
        with self.records.open("a") as f:
            f.write(json.dumps(record, default=_json_default) + "\n")
            f.flush()
            os.fsync(f.fileno())

    def load_records(self) -> list[dict[str, Any]]:
        """Every complete record line; a line cut off by an interruption is ignored (its unit reruns)."""
        if not self.records.exists():
            return []
        out = []
        for line in self.records.read_text().splitlines():
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                continue
        return out

    def finished_keys(self, *, retry_errors: bool) -> set[str]:
        return {r["key"] for r in self.load_records() if r["status"] == RECORD_OK or not retry_errors}

    def merged_records(self) -> list[dict[str, Any]]:
        """One record per unit (the latest), sorted by unit index: independent of worker count and order."""
        latest: dict[str, dict[str, Any]] = {}
        for r in self.load_records():
            latest[r["key"]] = r
        return sorted(latest.values(), key=lambda r: r["index"])
