"""What ``spatial-arena report`` shows of one run folder, read once: the units (:func:`.runs.load_run`),
the run's own ``summary.md`` and plots, a drill-down view per unit with every model call, the provenance
from ``manifest.json`` and the throughput from the records' timing fields.

Closed-loop units come from ``records.jsonl`` and ``decisions.jsonl`` (one line per model call); static
items from ``samples.jsonl`` (one model call each). Everything read here is run text: the renderer
(:mod:`.report_html`) escapes all of it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.core.episode_record import read_episode
from benchmarks.core.rundir import RunDir
from benchmarks.core.work import RECORD_OK
from benchmarks.evidence.runs import Run, load_run


@dataclass(frozen=True)
class Call:
    """One model call as the drill-down shows it."""

    prompt_id: str | None
    text: str | None
    parsed: object
    errors: Sequence[str]
    latency_s: float | None
    prompt_tokens: int | None
    completion_tokens: int | None
    where: str = ""
    injected: str | None = None


@dataclass(frozen=True)
class UnitView:
    """One unit for the drill-down: ``outcome`` is ``None`` when the unit errored (never a result);
    ``succeeded``: the unit succeeded (a static item: full score)."""

    key: str
    instructions: Sequence[str]
    outcome: str | None
    error: str | None
    succeeded: bool = False
    video: Path | None = None
    calls: Sequence[Call] = field(default_factory=list)
    facts: Mapping[str, object] = field(default_factory=dict)


@dataclass(frozen=True)
class Throughput:
    """Work per second of unit wall time (summed over units, so per worker when several ran at once)."""

    units: int
    wall_s: float
    steps: int | None
    decisions: int

    def rate(self, count: int | None) -> float | None:
        return None if count is None or self.wall_s <= 0 else count / self.wall_s


@dataclass(frozen=True)
class ReportRun:
    run: Run
    manifest: Mapping[str, Any]
    summary_md: str
    plots: Sequence[Path]
    units: Sequence[UnitView]
    throughput: Throughput


def read_report_run(path: str | Path) -> ReportRun:
    """Read a finished run folder for the report; one-line ``InputError`` when it is not one."""
    run = load_run(path)
    folder = run.path
    manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    summary = folder / "summary.md"
    summary_md = summary.read_text(encoding="utf-8") if summary.is_file() else ""
    plots = sorted(p for p in (folder / "plots").glob("*") if p.suffix in (".png", ".svg"))
    if run.family == "static":
        units, throughput = _static_units(folder)
    else:
        units, throughput = _closed_loop_units(folder)
    return ReportRun(run, manifest, summary_md, plots, units, throughput)


def _closed_loop_units(folder: Path) -> tuple[list[UnitView], Throughput]:
    rundir = RunDir(folder)
    calls: dict[str, list[Call]] = {}
    decisions = rundir.load_decisions()
    for line in decisions:
        calls.setdefault(str(line.get("key")), []).append(_decision_call(line))
    records = rundir.merged_records()
    views = [_closed_loop_view(folder, r, calls.get(r["key"], [])) for r in records]
    steps = sum(int(r["result"].get("steps") or 0) for r in records if r["status"] == RECORD_OK)
    wall = sum(float((r.get("timing") or {}).get("wall_s") or 0.0) for r in records)
    return views, Throughput(len(records), wall, steps, len(decisions))


def _decision_call(line: Mapping[str, Any]) -> Call:
    where = ", ".join(f"{k} {line[k]}" for k in ("subtask", "task", "step") if line.get(k) is not None)
    return Call(
        prompt_id=_str(line.get("prompt_id")),
        text=_str(line.get("text")),
        parsed=line.get("parsed"),
        errors=[str(e) for e in line.get("errors") or []],
        latency_s=_float(line.get("latency_s")),
        prompt_tokens=_int(line.get("prompt_tokens")),
        completion_tokens=_int(line.get("completion_tokens")),
        where=where,
        injected=_str(line.get("injected_error")),
    )


def _closed_loop_view(folder: Path, record: Mapping[str, Any], calls: list[Call]) -> UnitView:
    key = str(record["key"])
    if record["status"] != RECORD_OK:
        return UnitView(key, [], None, str(record.get("error") or "errored"), calls=calls)
    episode = read_episode(record["result"])
    extras = episode["extras"]
    subtasks = extras.get("subtasks") or []
    instructions = [str(s["extras"].get("instruction", "")) for s in subtasks] or [
        str(extras.get("instruction", ""))
    ]
    outcome = "success" if episode["success"] else "failure"
    if "num_completed" in extras:
        outcome += (
            f" ({extras['num_completed']} of {len(extras.get('tasks') or subtasks)} subtasks completed)"
        )
    video = record["result"].get("video")
    timing = record.get("timing") or {}
    facts = {"steps": episode["steps"], "wall s": timing.get("wall_s"), "seed": record.get("seed")}
    path = folder / video if video else None
    return UnitView(key, instructions, outcome, None, bool(episode["success"]), path, calls, facts)


def _static_units(folder: Path) -> tuple[list[UnitView], Throughput]:
    from benchmarks.static.sample_record import read_sample

    views: list[UnitView] = []
    latency = 0.0
    for line in (folder / "samples.jsonl").read_text(encoding="utf-8").splitlines():
        if line.strip():
            sample = read_sample(json.loads(line))
            views.append(_static_view(sample))
            latency += float((sample.get("generation") or {}).get("latency_s") or 0.0)
    return views, Throughput(len(views), latency, None, sum(len(v.calls) for v in views))


def _static_view(sample: Mapping[str, Any]) -> UnitView:
    key = str(sample["item_id"])
    what = [
        f"{sample.get('category') or ''} ({sample.get('task') or ''}); answer key: {sample.get('answer')}"
    ]
    generation = sample.get("generation") or {}
    parse = sample.get("parse") or {}
    call = Call(
        prompt_id=None,
        text=_str(sample.get("response")),
        parsed=parse.get("value"),
        errors=[] if parse.get("ok", True) else [str(parse.get("explanation", "unparsed"))],
        latency_s=_float(generation.get("latency_s")),
        prompt_tokens=_int(generation.get("prompt_tokens")),
        completion_tokens=_int(generation.get("completion_tokens")),
    )
    calls = [call] if generation else []
    if sample.get("error") is not None:
        return UnitView(key, what, None, str(sample["error"]), calls=calls)
    if sample.get("score") is None:
        return UnitView(key, what, None, "unscored (the rules could not score it)", calls=calls)
    score = float(sample["score"])
    return UnitView(key, what, f"score {score:g}", None, score == 1.0, calls=calls)


def _str(value: object) -> str | None:
    return None if value is None else str(value)


def _float(value: object) -> float | None:
    return float(value) if isinstance(value, (int, float)) else None


def _int(value: object) -> int | None:
    return int(value) if isinstance(value, (int, float)) else None
