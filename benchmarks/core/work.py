"""Work units and records: what gets sharded, retried and resumed, and what comes back.

A **unit** is a small JSON-safe description of one episode or chain. A **record** is one finished unit,
one JSON line in ``records.jsonl``. Timing and worker identity live under ``record["timing"]`` so that
everything else in a record is identical for any number of workers and any completion order.
"""

from __future__ import annotations

import hashlib
import traceback
from dataclasses import asdict, dataclass, field
from typing import Any

RECORD_OK = "ok"
RECORD_ERROR = "error"
#: Record field carrying a unit's model decisions from the worker to the runner, which moves them to
#: ``decisions.jsonl`` (they never reach ``records.jsonl``).
DECISIONS = "decisions"


@dataclass(frozen=True)
class WorkUnit:
    """One episode or chain. ``index`` orders results; ``key`` identifies the unit across resumes."""

    index: int
    key: str
    seed: int
    spec: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def unit_seed(base_seed: int, index: int) -> int:
    """A per-unit seed that depends only on the run's seed and the unit's index (not on the worker)."""
    digest = hashlib.sha256(f"{base_seed}:{index}".encode()).digest()
    return int.from_bytes(digest[:4], "little")


def ok_record(unit: WorkUnit, result: dict[str, Any], *, attempts: int, timing: dict[str, Any]) -> dict[str, Any]:
    return {"index": unit.index, "key": unit.key, "seed": unit.seed, "status": RECORD_OK, "result": result,
            "error": None, "attempts": attempts, "timing": timing}


def error_record(unit: WorkUnit, error: str, *, attempts: int, timing: dict[str, Any]) -> dict[str, Any]:
    return {"index": unit.index, "key": unit.key, "seed": unit.seed, "status": RECORD_ERROR, "result": None,
            "error": error, "attempts": attempts, "timing": timing}


def format_exception(exc: BaseException) -> str:
    """The exception and its traceback, for an error record."""
    return "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)).strip()


#: The episode record's wall-clock field (:mod:`benchmarks.core.episode_record`): it differs from run to run.
WALL_TIME = "wall_time_s"


def comparable(record: dict[str, Any]) -> dict[str, Any]:
    """A record without its timing, attempt count, decision log (which holds model latencies) and its
    episodes' wall times: what must match across worker counts and runs."""
    return without_wall_times({k: v for k, v in record.items() if k not in ("timing", "attempts", DECISIONS)})


def without_wall_times(value: Any) -> Any:
    """``value`` with every :data:`WALL_TIME` field removed, at any depth (a CALVIN chain's subtasks)."""
    if isinstance(value, dict):
        return {k: without_wall_times(v) for k, v in value.items() if k != WALL_TIME}
    if isinstance(value, list):
        return [without_wall_times(v) for v in value]
    return value
