"""The stopper behind ``--stop-when-decided --against RATE_OR_RUN``: the betting test of
:mod:`benchmarks.stats.sequential` applied to a run's units in protocol order.

Each completed unit gives a value in [0, 1] (:meth:`benchmarks.core.runner.Benchmark.unit_value`: success,
CALVIN's completed length / 5). Against a rate the values are tested against it; against a reference run
folder of the same benchmark the units are paired by key (units the reference lacks or that errored in either
run are skipped) and the paired values are tested against 1/2. Errored units never enter the test.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from benchmarks.core.rundir import RunDir
from benchmarks.core.runner import Benchmark
from benchmarks.core.stopping import StopStatus, parse_rate
from benchmarks.core.work import RECORD_OK
from benchmarks.stats.sequential import paired_values, sequential_test
from policies.config_cli import InputError

METHOD = (
    "betting test, hedged capital with aGRAPA bets (Waudby-Smith & Ramdas 2024, JRSS-B 86:1-27); "
    "stop when max(K+, K-) >= 2/alpha"
)


class SequentialStopper:
    """Tests the completed units of a protocol-order prefix against a rate or a reference run's units."""

    def __init__(
        self,
        value: Callable[[dict[str, Any]], float],
        reference: float | Mapping[str, float],
        alpha: float,
        against: str,
    ) -> None:
        self.value, self.reference, self.alpha, self.against = value, reference, alpha, against

    def _stream(self, prefix: Sequence[dict[str, Any]]) -> tuple[list[int], list[float], list[float]]:
        """Positions in the prefix of the units that enter the test, the model's values and the reference's."""
        positions: list[int] = []
        model: list[float] = []
        reference: list[float] = []
        for i, record in enumerate(prefix):
            if record["status"] != RECORD_OK:
                continue
            ref = self.reference if isinstance(self.reference, float) else self.reference.get(record["key"])
            if ref is None:
                continue
            positions.append(i)
            model.append(self.value(record))
            reference.append(ref)
        return positions, model, reference

    def status(self, prefix: Sequence[dict[str, Any]]) -> StopStatus:
        positions, model, reference = self._stream(prefix)
        paired = not isinstance(self.reference, float)
        if paired:
            result = sequential_test(list(paired_values(model, reference)), 0.5, self.alpha)
        else:
            result = sequential_test(model, reference[0] if reference else 0.5, self.alpha)
        decided = result.verdict != "undecided"
        used = positions[result.n - 1] + 1 if decided else len(prefix)
        mean = sum(model[: result.n]) / result.n if result.n else None
        ref_mean = sum(reference[: result.n]) / result.n if result.n else None
        data = {
            "method": METHOD,
            "against": self.against,
            "paired": paired,
            "alpha": self.alpha,
            "verdict": result.verdict,
            "units_tested": result.n,
            "model_mean": None if mean is None else round(mean, 6),
            "reference_mean": None if ref_mean is None else round(ref_mean, 6),
            "log10_capital_above": result.log10_capital_above,
            "log10_capital_below": result.log10_capital_below,
            "log10_threshold": result.threshold,
        }
        return StopStatus(decided, used, data, _line(result.verdict, used, len(prefix), data))


def _line(verdict: str, used: int, finished: int, data: Mapping[str, Any]) -> str:
    what = f"model mean {data['model_mean']} vs reference {data['reference_mean']} over {data['units_tested']} unit(s)"
    if verdict == "undecided":
        return (
            f"undecided after {finished} unit(s) in protocol order ({what}; no capital reached 2/alpha, "
            f"alpha = {data['alpha']}); the planned units all ran"
        )
    return (
        f"stopped after {used} unit(s): the model is {verdict} than the reference ({what}; "
        f"capital 10^{max(data['log10_capital_above'], data['log10_capital_below'])} >= 2/alpha = "
        f"10^{data['log10_threshold']}, alpha = {data['alpha']}); the units after it did not run and are not counted"
    )


def reference_values(benchmark: Benchmark, folder: Path) -> dict[str, float]:
    """A reference run's completed units (key -> value), read with ``benchmark``'s own unit value."""
    try:
        manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    except (FileNotFoundError, json.JSONDecodeError, UnicodeDecodeError):
        raise InputError(
            f"--against {folder} has no readable manifest.json; pass a run folder a benchmark wrote"
        ) from None
    if not isinstance(manifest, dict) or manifest.get("benchmark") != benchmark.name:
        found = manifest.get("benchmark") if isinstance(manifest, dict) else None
        raise InputError(
            f"--against {folder} is a {found} run, not {benchmark.name}; pass a run of the same benchmark"
        )
    records = RunDir(folder).merged_records()
    return {r["key"]: benchmark.unit_value(r) for r in records if r["status"] == RECORD_OK}


def stopper_for(benchmark: Benchmark) -> SequentialStopper | None:
    """The stopper ``--stop-when-decided --against`` asks for (``None`` without it); one-line errors when the
    reference run shares no unit with this run."""
    config = benchmark.config
    if not getattr(config, "stop_when_decided", False):
        return None
    against = str(config.against)
    rate = parse_rate(against)
    if rate is not None:
        return SequentialStopper(benchmark.unit_value, rate, config.stop_alpha, against)
    reference = reference_values(benchmark, Path(against))
    if not any(u.key in reference for u in benchmark.selected_units()):
        raise InputError(
            f"--against {against} shares no completed unit with this run; pass a run of the same units (chains, episodes)"
        )
    return SequentialStopper(benchmark.unit_value, reference, config.stop_alpha, against)
