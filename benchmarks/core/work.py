"""Work units and records: what gets sharded, retried and resumed, and what comes back.

A **unit** is a small JSON-safe description of one episode or chain. A **record** is one finished unit,
one JSON line in ``records.jsonl``. Timing and worker identity live under ``record["timing"]`` so that
everything else in a record is identical for any number of workers and any completion order: the unit's
``wall_s`` and ``worker``, and whatever timing the result carried under :data:`RESULT_TIMING` (an
episode's ``episode_s`` and ``model_latency_s``, a CALVIN chain's ``subtasks``), moved out of ``result``.
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
#: Result field carrying the unit's own timing (seconds of the episode, of model calls) from the worker;
#: :func:`ok_record` moves it into the record's ``timing`` (it never stays in ``result``).
RESULT_TIMING = "timing"


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


def ok_record(
    unit: WorkUnit, result: dict[str, Any], *, attempts: int, timing: dict[str, Any]
) -> dict[str, Any]:
    """The record of a unit that finished; the result's own :data:`RESULT_TIMING` joins ``timing``."""
    own = result.pop(RESULT_TIMING, None) or {}
    return {
        "index": unit.index,
        "key": unit.key,
        "seed": unit.seed,
        "status": RECORD_OK,
        "result": result,
        "error": None,
        "attempts": attempts,
        "timing": {**timing, **own},
    }


def error_record(unit: WorkUnit, error: str, *, attempts: int, timing: dict[str, Any]) -> dict[str, Any]:
    return {
        "index": unit.index,
        "key": unit.key,
        "seed": unit.seed,
        "status": RECORD_ERROR,
        "result": None,
        "error": error,
        "attempts": attempts,
        "timing": timing,
    }


def format_exception(exc: BaseException) -> str:
    """The exception and its traceback, for an error record."""
    return "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)).strip()


def comparable(record: dict[str, Any]) -> dict[str, Any]:
    """A record without its timing, attempt count and decision log (which holds model latencies): what must
    match across worker counts and runs."""
    return {k: v for k, v in record.items() if k not in ("timing", "attempts", DECISIONS)}
