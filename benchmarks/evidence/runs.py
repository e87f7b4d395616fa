"""A finished run folder as the units a comparison pairs: each unit's key, outcome and breakdown.

Closed-loop runs (CALVIN, LIBERO, EB) are read from ``records.jsonl`` through
:meth:`benchmarks.core.rundir.RunDir.merged_records` and the families' episode readers; static runs from
``samples.jsonl`` through :func:`benchmarks.static.sample_record.read_sample`. Units are keyed as their
runs key them: the unit key (``chain-0000``, a LIBERO or EB episode key) or the static item id.

An errored unit (the unit raised; a static item the model gave no answer to) keeps its key and error and
is never a result; a static item the rules could not score is counted apart too.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.core.episode_record import read_episode
from benchmarks.core.rundir import RunDir
from benchmarks.core.runner import POLICY_RUNTIME_KEYS, RUNTIME_KEYS
from benchmarks.core.stopping import STOPPING_KEYS
from benchmarks.core.work import RECORD_OK
from policies.config_cli import InputError

#: Closed-loop config fields that name the model under test, not the protocol: they may differ. ``cameras``
#: chooses what the policy sees, never the physics (a blind baseline runs without rendering).
POLICY_KEYS = frozenset({"policy", "policy_kwargs", "replay_file", "latency", "latency_mode", "cameras"})
#: Closed-loop config fields that only choose how many of the protocol's units ran (units are matched).
PREFIX_KEYS = frozenset({"limit", "num_sequences", "trials_per_task", "episodes"}) | STOPPING_KEYS
#: What must match between two static runs: the data, the benchmark, its scoring mode and prompt style.
STATIC_PROTOCOL = ("benchmark", "mode", "prompt_style", "data_sha256", "video_frames", "weights")


@dataclass(frozen=True)
class Unit:
    """One unit of a run.

    ``success``: right/wrong (a CALVIN chain: all five subtasks; ``None`` for a graded static score).
    ``score``: a graded value (CALVIN: completed subtasks 0-5; static: the item's score in [0, 1], also for
    right/wrong items; LIBERO and EB: ``None``). ``breakdown``: the unit's outcome per task, category or chain position."""

    key: str
    success: bool | None = None
    score: float | None = None
    breakdown: Mapping[str, bool | float] = field(default_factory=dict)
    error: str | None = None

    @property
    def is_result(self) -> bool:
        return self.error is None and (self.success is not None or self.score is not None)


@dataclass(frozen=True)
class Run:
    """A run folder read for comparison: its family, protocol options, policy label and units by key."""

    path: Path
    family: str
    label: str
    protocol: Mapping[str, Any]
    units: Mapping[str, Unit]
    #: what the headline compares: ``success`` (rates) or ``score`` (means).
    headline: str
    breakdown_name: str


def load_run(path: str | Path) -> Run:
    """Read a finished run folder; one-line :class:`InputError` when it is not one."""
    folder = Path(path)
    if not folder.is_dir():
        raise InputError(
            f"run folder {folder} does not exist; pass the folder a benchmark wrote (with manifest.json)"
        )
    manifest = _manifest(folder)
    if (folder / "samples.jsonl").is_file():
        return _static_run(folder, manifest)
    if (folder / "records.jsonl").is_file():
        return _closed_loop_run(folder, manifest)
    raise InputError(
        f"{folder} holds no records.jsonl (closed-loop run) or samples.jsonl (static run); pass a finished "
        "run folder"
    )


def _manifest(folder: Path) -> dict[str, Any]:
    path = folder / "manifest.json"
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(f"{folder} has no manifest.json; pass a run folder a benchmark wrote") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise InputError(f"{path} is not valid JSON ({error}); restore it from a copy of the run") from None
    if not isinstance(manifest, dict) or not isinstance(manifest.get("config"), dict):
        raise InputError(f"{path} is not a run manifest (no 'config' object)")
    return manifest


def _closed_loop_run(folder: Path, manifest: Mapping[str, Any]) -> Run:
    family = str(manifest.get("benchmark"))
    ignored = RUNTIME_KEYS | POLICY_RUNTIME_KEYS | POLICY_KEYS | PREFIX_KEYS
    protocol = {"benchmark": family, **{k: v for k, v in manifest["config"].items() if k not in ignored}}
    records = RunDir(folder).merged_records()[: _decided_units(folder)]
    units = {r["key"]: _closed_loop_unit(family, r) for r in records}
    label = str((manifest.get("policy") or {}).get("label") or manifest["config"].get("policy"))
    if family == "calvin":
        return Run(folder, family, label, protocol, units, "score", "chain position")
    return Run(folder, family, label, protocol, units, "success", "task" if family == "libero" else "subset")


def _decided_units(folder: Path) -> int | None:
    """A run stopped by ``--stop-when-decided``: how many units (in protocol order) its verdict rests on; units
    other workers finished after it are in records.jsonl but, as in its summary, not results (``None``: all)."""
    try:
        summary = json.loads((folder / "summary.json").read_text(encoding="utf-8"))
    except (FileNotFoundError, json.JSONDecodeError, UnicodeDecodeError):
        return None
    stop = summary.get("sequential") if isinstance(summary, dict) else None
    if not isinstance(stop, dict) or stop.get("verdict") not in ("better", "worse"):
        return None
    return int(stop["units_used"])


def _closed_loop_unit(family: str, record: Mapping[str, Any]) -> Unit:
    if record["status"] != RECORD_OK:
        return Unit(record["key"], error=str(record.get("error") or "errored"))
    episode = read_episode(record["result"])
    extras = episode["extras"]
    if family == "calvin":
        done = int(extras["num_completed"])
        length = len(extras.get("tasks") or []) or 5
        positions = {f"reached {i}": done >= i for i in range(1, length + 1)}
        return Unit(record["key"], bool(episode["success"]), float(done), positions)
    group = f"task {extras['task_index']}" if family == "libero" else str(extras.get("subset", "all"))
    return Unit(record["key"], bool(episode["success"]), None, {group: bool(episode["success"])})


def _static_run(folder: Path, manifest: Mapping[str, Any]) -> Run:
    from benchmarks.static.sample_record import read_sample

    config = manifest["config"]
    protocol = {
        "benchmark": manifest.get("benchmark"),
        "mode": manifest.get("mode"),
        "prompt_style": manifest.get("prompt_style"),
        "data_sha256": (manifest.get("data") or {}).get("sha256"),
        "video_frames": config.get("video_frames"),
        "weights": config.get("weights"),
    }
    units: dict[str, Unit] = {}
    for line in (folder / "samples.jsonl").read_text(encoding="utf-8").splitlines():
        if line.strip():
            unit = _static_unit(read_sample(json.loads(line)))
            units[unit.key] = unit
    graded = any(u.is_result and u.success is None for u in units.values())
    label = str(config.get("model") or config.get("score_only") or folder.name)
    return Run(folder, "static", label, protocol, units, "score" if graded else "success", "category")


def _static_unit(sample: Mapping[str, Any]) -> Unit:
    key, score = str(sample["item_id"]), sample["score"]
    if sample["error"] is not None:
        return Unit(key, error=str(sample["error"]))
    if score is None:
        return Unit(key, error="unscored (the rules could not score it)")
    category = str(sample["category"] or "all")
    right_wrong = score in (0, 1) and sample["correct"] is not None
    outcome: bool | float = bool(score) if right_wrong else float(score)
    return Unit(key, bool(score) if right_wrong else None, float(score), {category: outcome})
