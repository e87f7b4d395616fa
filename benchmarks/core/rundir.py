"""The output folder of one run: ``<output>/<benchmark>/<run-name>/``.

It holds ``manifest.json``, ``records.jsonl`` (appended as units finish), ``decisions.jsonl`` (every
model call of every unit, written just before the unit's record), ``summary.json``, ``summary.md``,
``plots/``, ``videos/`` and any benchmark-native files. Only the parent process writes here, so appends
need no locking; each line is flushed and fsynced so an interruption loses at most the unit in flight.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from benchmarks.core.jsonsafe import json_default
from benchmarks.core.work import RECORD_OK
from envs.files import atomic_write_text
from policies.cli import InputError


class ResumeError(InputError):
    """The folder holds a run that cannot be continued with this configuration."""


def write_json(path: Path, data: Any) -> None:
    """Write JSON atomically (a reader never sees half a file), readable like any file the run writes."""
    atomic_write_text(path, json.dumps(data, indent=2, sort_keys=False, default=json_default) + "\n")


_RECORD_KEYS = ("index", "key", "status")


def _is_record(value: Any) -> bool:
    return isinstance(value, dict) and all(k in value for k in _RECORD_KEYS) and isinstance(value["index"], int)


class RunDir:
    """Paths and I/O of one run's output folder."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.manifest = self.path / "manifest.json"
        self.records = self.path / "records.jsonl"
        self.decisions = self.path / "decisions.jsonl"
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
            previous = self._previous_manifest()
            old = _settings(previous)
            new = _settings(json.loads(json.dumps(manifest, default=json_default)))
            diff = sorted(k for k in set(old) | set(new) if k not in runtime_keys and old.get(k) != new.get(k))
            if diff:
                changes = ", ".join(f"--{k.replace('_', '-')} ({old.get(k)!r} -> {new.get(k)!r})" for k in diff)
                raise ResumeError(f"cannot resume {self.path}: {changes} changed since that run; resume with the "
                                  f"same value, or start a new run with --run-name NAME")
            manifest = {**manifest, "resumed_from": [*previous.get("resumed_from", []), previous.get("started_at")]}
        self.path.mkdir(parents=True, exist_ok=True)
        if resume:
            self._drop_partial_line()
        write_json(self.manifest, manifest)

    def _previous_manifest(self) -> dict[str, Any]:
        try:
            previous = json.loads(self.manifest.read_text())
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise ResumeError(f"{self.manifest} is damaged ({e}); delete it to resume with the configuration you "
                              f"pass now, or choose another --run-name") from None
        if not isinstance(previous, dict) or not isinstance(previous.get("config"), dict):
            raise ResumeError(f"{self.manifest} is not a run manifest (no 'config'); delete it to resume with the "
                              f"configuration you pass now, or choose another --run-name")
        return previous

    def _drop_partial_line(self) -> None:
        """Cut a record line left unfinished by an interruption, so new records start on a fresh line."""
        if not self.records.exists():
            return
        data = self.records.read_bytes()
        if data and not data.endswith(b"\n"):
            with self.records.open("r+b") as f:
                f.truncate(data.rfind(b"\n") + 1)

    def append_record(self, record: dict[str, Any]) -> None:
        _append_lines(self.records, [record])

    def append_decisions(self, lines: list[dict[str, Any]]) -> None:
        if lines:
            _append_lines(self.decisions, lines)

    def keep_decisions(self, keys: set[str]) -> None:
        """Keep only the decision lines of units in ``keys`` (the finished ones): a unit that runs again
        writes its lines afresh, so the file never holds two runs of one unit."""
        if not self.decisions.exists():
            return
        kept = [line for line in _read_jsonl(self.decisions) if line.get("key") in keys]
        atomic_write_text(self.decisions, "".join(json.dumps(line, default=json_default) + "\n" for line in kept))

    def load_decisions(self) -> list[dict[str, Any]]:
        return _read_jsonl(self.decisions)

    def load_records(self) -> list[dict[str, Any]]:
        """Every complete record line; a line cut off by an interruption is ignored (its unit reruns)."""
        return [r for r in _read_jsonl(self.records) if _is_record(r)]  # a damaged or foreign line: its unit reruns

    def finished_keys(self, *, retry_errors: bool) -> set[str]:
        return {r["key"] for r in self.load_records() if r["status"] == RECORD_OK or not retry_errors}

    def merged_records(self) -> list[dict[str, Any]]:
        """One record per unit (the latest), sorted by unit index: independent of worker count and order."""
        latest: dict[str, dict[str, Any]] = {}
        for r in self.load_records():
            latest[r["key"]] = r
        return sorted(latest.values(), key=lambda r: r["index"])


def _settings(manifest: dict[str, Any]) -> dict[str, Any]:
    """What must match to resume: the command's configuration and the policy's options (flat, as flags)."""
    options = (manifest.get("policy") or {}).get("options") or {}
    return {**options, **manifest["config"]}


def _append_lines(path: Path, items: list[dict[str, Any]]) -> None:
    with path.open("a") as f:
        f.write("".join(json.dumps(item, default=json_default) + "\n" for item in items))
        f.flush()
        os.fsync(f.fileno())


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    """Every complete JSON line of ``path``; a line cut off by an interruption is skipped."""
    if not path.exists():
        return []
    out = []
    for line in path.read_text().splitlines():
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return out
