"""The output folder of one run: ``<output>/<benchmark>/<run-name>/``.

It holds ``manifest.json``, ``records.jsonl`` (appended as units finish), ``decisions.jsonl`` (every
model call of every unit, written just before the unit's record), ``summary.json``, ``summary.md``,
``plots/``, ``videos/`` and any benchmark-native files. Only the parent process writes here, so appends
need no locking; each line is flushed and fsynced so an interruption loses at most the unit in flight.

``--resume`` trusts a folder only with its manifest (it says which configuration made the records), and
moves every line of ``records.jsonl`` / ``decisions.jsonl`` that is not a record (cut off by an
interruption, invalid UTF-8 or JSON, a field of the wrong type) to ``records.damaged.jsonl`` /
``decisions.damaged.jsonl`` next to it, so its unit runs again and nothing is silently lost.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.core.jsonsafe import json_default
from benchmarks.core.work import RECORD_ERROR, RECORD_OK
from envs.files import atomic_write_text
from policies.config_cli import InputError


class ResumeError(InputError):
    """The folder holds a run that cannot be continued with this configuration."""


def write_json(path: Path, data: object) -> None:
    """Write JSON atomically (a reader never sees half a file), readable like any file the run writes."""
    atomic_write_text(path, json.dumps(data, indent=2, sort_keys=False, default=json_default) + "\n")


def _is_record(value: object) -> bool:
    """A ``records.jsonl`` line as the runner writes it: an int ``index``, a str ``key``, a known ``status``."""
    return (
        isinstance(value, dict)
        and type(value.get("index")) is int
        and isinstance(value.get("key"), str)
        and value.get("status") in (RECORD_OK, RECORD_ERROR)
        and (value["status"] == RECORD_ERROR or isinstance(value.get("result"), dict))
    )


def _is_decision(value: object) -> bool:
    return isinstance(value, dict) and isinstance(value.get("key"), str)


def load_manifest(folder: Path) -> dict[str, Any]:
    """The manifest of a run folder about to be resumed, or a one-line :class:`ResumeError` saying how to go
    on without losing its results (restore the file, or start a new run)."""
    path = folder / "manifest.json"
    fix = (
        f"restore {path.name} (e.g. from a copy of the folder), or start a new run with another --run-name "
        f"or --output (the results in {folder} stay as they are)"
    )
    if not path.is_file():
        raise ResumeError(
            f"cannot resume {folder}: {path.name} is missing, so nothing says which configuration "
            f"wrote its results; {fix}"
        )
    try:
        manifest = json.loads(path.read_bytes().decode("utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as e:
        raise ResumeError(
            f"cannot resume {folder}: {path.name} is damaged ({type(e).__name__}: {str(e)[:120]}); {fix}"
        ) from None
    if not isinstance(manifest, dict) or not isinstance(manifest.get("config"), dict):
        raise ResumeError(
            f"cannot resume {folder}: {path.name} is not a run manifest (no 'config' object); {fix}"
        )
    return manifest


@dataclass(frozen=True)
class Quarantined:
    """Lines moved out of a JSONL file because they were not what it holds: their 1-based numbers."""

    path: Path
    damaged: Path
    lines: tuple[int, ...]

    def message(self, what: str) -> str:
        """One line for the user, e.g. ``records.jsonl: 2 damaged line(s) (3, 7) moved to ...``."""
        shown = ", ".join(map(str, self.lines[:10])) + (", ..." if len(self.lines) > 10 else "")
        return (
            f"warning: {self.path}: {len(self.lines)} damaged line(s) (line {shown}) moved to "
            f"{self.damaged.name}; {what}"
        )


def quarantine_lines(path: Path, valid: Callable[[Any], bool]) -> Quarantined | None:
    """Move every line of the JSONL file ``path`` that is not valid UTF-8 JSON accepted by ``valid`` (a line
    cut off by an interruption included) to ``<stem>.damaged.jsonl`` next to it, byte for byte, appended.

    Returns what was moved (``None`` when every line was good). The good lines are rewritten atomically,
    in their order; a reader of the file afterwards sees only lines ``valid`` accepts."""
    if not path.is_file():
        return None
    kept: list[bytes] = []
    bad: list[bytes] = []
    numbers: list[int] = []
    for number, line in enumerate(path.read_bytes().splitlines(), 1):
        if not line.strip():
            continue
        if _valid_line(line, valid):
            kept.append(line)
        else:
            bad.append(line)
            numbers.append(number)
    if not bad:
        return None
    damaged = path.with_name(f"{path.stem}.damaged{path.suffix}")
    with damaged.open("ab") as f:
        f.write(b"".join(line + b"\n" for line in bad))
        f.flush()
        os.fsync(f.fileno())
    atomic_write_text(path, "".join(line.decode("utf-8") + "\n" for line in kept))
    return Quarantined(path, damaged, tuple(numbers))


def _valid_line(line: bytes, valid: Callable[[Any], bool]) -> bool:
    try:
        return bool(valid(json.loads(line.decode("utf-8"))))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        return False


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

    def prepare(
        self,
        manifest: dict[str, Any],
        *,
        resume: bool,
        runtime_keys: set[str],
        defaults: Mapping[str, Any] | None = None,
    ) -> list[Quarantined]:
        """Create the folder and its manifest; on resume check the configuration matches the old one (a folder
        with records but no valid manifest cannot be resumed) and quarantine damaged record and decision
        lines. A setting the old run did not record (it predates it) matches at its default in ``defaults``.
        Returns what was quarantined (also listed in the manifest's ``damaged_lines``)."""
        if self.has_records() and not resume:
            raise ResumeError(
                f"{self.path} already holds results: pass --resume to continue that run, or choose another "
                f"--output/--run-name"
            )
        quarantined: list[Quarantined] = []
        if resume and (self.manifest.exists() or self.has_records()):
            previous = load_manifest(self.path)
            old = _settings(previous)
            new = _settings(json.loads(json.dumps(manifest, default=json_default)))
            born_later = {
                k
                for k, v in json.loads(json.dumps(dict(defaults or {}), default=json_default)).items()
                if k not in old and new.get(k) == v
            }
            diff = sorted(
                k
                for k in set(old) | set(new)
                if k not in runtime_keys | born_later and old.get(k) != new.get(k)
            )
            if diff:
                changes = ", ".join(
                    f"--{k.replace('_', '-')} ({old.get(k)!r} -> {new.get(k)!r})" for k in diff
                )
                raise ResumeError(
                    f"cannot resume {self.path}: {changes} changed since that run; resume with the "
                    f"same value, or start a new run with --run-name NAME"
                )
            manifest = {
                **manifest,
                "resumed_from": [*previous.get("resumed_from", []), previous.get("started_at")],
            }
            quarantined = [
                q
                for q in (
                    quarantine_lines(self.records, _is_record),
                    quarantine_lines(self.decisions, _is_decision),
                )
                if q is not None
            ]
            damaged = {**previous.get("damaged_lines", {})}
            for q in quarantined:
                damaged[q.path.name] = [*damaged.get(q.path.name, []), *q.lines]
            if damaged:
                manifest["damaged_lines"] = damaged
        self.path.mkdir(parents=True, exist_ok=True)
        write_json(self.manifest, manifest)
        return quarantined

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
        kept = [line for line in _read_jsonl(self.decisions) if _is_decision(line) and line["key"] in keys]
        atomic_write_text(
            self.decisions, "".join(json.dumps(line, default=json_default) + "\n" for line in kept)
        )

    def load_decisions(self) -> list[dict[str, Any]]:
        return [line for line in _read_jsonl(self.decisions) if _is_decision(line)]

    def load_records(self) -> list[dict[str, Any]]:
        """Every record line (a resumed run has moved its damaged lines out in :meth:`prepare`; any other
        line that is not a record is skipped here, and its unit counts as not run)."""
        return [r for r in _read_jsonl(self.records) if _is_record(r)]

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


def _read_jsonl(path: Path) -> list[Any]:
    """Every line of ``path`` that is valid UTF-8 JSON; any other line is skipped."""
    if not path.exists():
        return []
    out = []
    for line in path.read_bytes().splitlines():
        try:
            out.append(json.loads(line.decode("utf-8")))
        except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
            continue
    return out
