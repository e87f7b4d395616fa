"""Sequential stopping in the runner: the flags, the stopper's contract, and the protocol-order prefix it reads.

With ``--stop-when-decided --against RATE_OR_RUN`` a closed-loop run stops once a sequential test has decided
whether the model differs from the reference. The test (``benchmarks.stats.sequential``) and the stopper
that applies it (``benchmarks.stats.stopping``) live above this room; the runner only feeds a stopper the
records of the longest run of units finished *in protocol order* (:class:`ProtocolPrefix`). A unit that
finished early on another worker waits until every unit before it has finished, so the decision, the unit
it stopped at and the summary are the same for any number of workers and any completion order.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from benchmarks.core.work import WorkUnit
from policies.config_cli import arg

#: Config fields of sequential stopping: like ``--limit`` they only choose how long a prefix of the units runs.
STOPPING_KEYS = frozenset({"stop_when_decided", "against", "stop_alpha"})


def parse_rate(text: str) -> float | None:
    """``--against`` as a rate (``None``: it is not a number, so it names a run folder)."""
    try:
        return float(text)
    except ValueError:
        return None


@dataclass
class StoppingConfig:
    """Sequential stopping (stop once the model is decided better or worse than a reference)"""

    stop_when_decided: bool = arg(
        False,
        "run units in protocol order and stop once an anytime-valid test (a betting test, "
        "docs/guide/statistics.md) decides the model's success rate differs from --against",
    )
    against: str | None = arg(
        None,
        "with --stop-when-decided: a reference success rate in [0, 1] (CALVIN: avg. len / 5), or the "
        "folder of a reference run of the same benchmark (units paired by key)",
        metavar="RATE_OR_RUN",
    )
    stop_alpha: float = arg(
        0.05,
        "with --stop-when-decided: the test's level (chance of a wrong decision)",
        minimum=1e-6,
        maximum=0.5,
    )

    def check_stopping(self) -> None:
        """One-line errors for a stopping request that cannot run (raised while parsing the flags)."""
        if self.stop_when_decided and self.against is None:
            raise ValueError(
                "--stop-when-decided needs --against RATE_OR_RUN: a reference rate in [0, 1] or a run folder"
            )
        if self.against is None:
            return
        if not self.stop_when_decided:
            raise ValueError("--against only applies with --stop-when-decided: add it, or drop --against")
        rate = parse_rate(self.against)
        if rate is not None and not 0.0 <= rate <= 1.0:
            raise ValueError(f"--against rate must be in [0, 1] (a success rate), got {self.against}")
        if rate is None and not Path(self.against).is_dir():
            raise ValueError(
                f"--against {self.against} is neither a rate in [0, 1] nor an existing run folder; pass "
                "a rate like 0.6 or the folder of a finished run"
            )


@dataclass(frozen=True)
class StopStatus:
    """Where a sequential test stands on a prefix of the units: ``decided``, the number of units of the prefix
    the verdict rests on (``used``; all of them while undecided), its JSON for ``summary.json`` and its line
    for ``summary.md``."""

    decided: bool
    used: int
    data: dict[str, Any] = field(default_factory=dict)
    line: str = ""


class Stopper(Protocol):
    """Decides from the records of units finished in protocol order (oldest first) whether to stop."""

    def status(self, prefix: Sequence[dict[str, Any]]) -> StopStatus: ...


class ProtocolPrefix:
    """The records of the longest run of units, from the first in protocol order, that have all finished."""

    def __init__(self, units: Sequence[WorkUnit], records: Sequence[dict[str, Any]] = ()) -> None:
        self._keys = [u.key for u in units]
        self._waiting: dict[str, dict[str, Any]] = {}
        self.records: list[dict[str, Any]] = []
        for record in records:
            self.add(record)

    def add(self, record: dict[str, Any]) -> bool:
        """Take a finished unit's record; ``True`` when the prefix grew."""
        self._waiting[record["key"]] = record
        before = len(self.records)
        while len(self.records) < len(self._keys) and self._keys[len(self.records)] in self._waiting:
            self.records.append(self._waiting.pop(self._keys[len(self.records)]))
        return len(self.records) > before
