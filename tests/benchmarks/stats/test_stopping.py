import json
import random
from collections.abc import Iterator

import pytest

from benchmarks.core import InProcessExecutor, ProcessExecutor, RunDir, run_benchmark
from benchmarks.stats.stopping import SequentialStopper, reference_values
from policies.config_cli import InputError
from tests.runner_fixtures import CartPoleBenchmark, CartPoleConfig


class BalanceBenchmark(CartPoleBenchmark):
    """CartPole episodes whose unit value is success: the pole stayed up for 20 steps."""

    def unit_value(self, record):
        return float(record["result"]["return"] >= 20)


class ShuffledExecutor(InProcessExecutor):
    """Runs every unit, then hands the records over in a seeded random order (as workers finishing out of order)."""

    def __init__(self, seed):
        self.seed = seed

    def run(self, factory, units) -> Iterator[dict]:
        records = list(super().run(factory, units))
        random.Random(self.seed).shuffle(records)
        yield from records


def _run(tmp_path, name, stopper, executor=None, episodes=40, resume=False):
    bench = BalanceBenchmark(CartPoleConfig(marker_dir=str(tmp_path), episodes=episodes))
    run_benchmark(
        bench,
        tmp_path / name,
        executor=executor or InProcessExecutor(),
        progress=False,
        stopper=stopper,
        resume=resume,
    )
    return json.loads((tmp_path / name / "summary.json").read_text()), (
        tmp_path / name / "summary.md"
    ).read_text()


def _rate(rate):
    return SequentialStopper(BalanceBenchmark(CartPoleConfig()).unit_value, rate, 0.05, str(rate))


def test_a_run_stops_once_decided_and_counts_only_the_units_it_used(tmp_path):
    data, md = _run(tmp_path, "run", _rate(0.95))
    seq = data["sequential"]
    assert seq["verdict"] == "worse" and seq["units_planned"] == 40 and seq["units_used"] < 40
    assert data["episodes"] == seq["units_used"] == data["run"]["units_total"] == seq["units_tested"]
    assert data["run"]["complete"] and data["run"]["units_errored"] == 0
    assert "Waudby-Smith" in seq["method"] and f"stopped after {seq['units_used']} unit(s)" in md
    assert "worse than the reference" in md


def test_the_decision_does_not_depend_on_the_order_units_finish_in(tmp_path):
    one, _ = _run(tmp_path, "one", _rate(0.95))
    for seed in (0, 1, 2):
        shuffled, _ = _run(tmp_path, f"s{seed}", _rate(0.95), ShuffledExecutor(seed))
        assert shuffled == one
    two, _ = _run(tmp_path, "two", _rate(0.95), ProcessExecutor(2, max_retries=1))
    assert two == one


def test_undecided_runs_every_planned_unit(tmp_path):
    data, md = _run(tmp_path, "run", _rate(0.45), episodes=8)
    assert data["sequential"]["verdict"] == "undecided" and data["run"]["units_total"] == 8
    assert data["sequential"]["units_used"] == 8 and "undecided after 8 unit(s)" in md


def test_resuming_a_decided_run_runs_nothing_more(tmp_path):
    first, _ = _run(tmp_path, "run", _rate(0.95))
    (tmp_path / "runs.log").unlink()
    again, _ = _run(tmp_path, "run", _rate(0.95), resume=True)
    assert again == first and not (tmp_path / "runs.log").exists()


def test_against_a_reference_run_pairs_units_by_key(tmp_path):
    _run(tmp_path, "ref", None, episodes=5)
    bench = BalanceBenchmark(CartPoleConfig())
    reference = reference_values(bench, tmp_path / "ref")
    assert sorted(reference) == [f"ep-{i:03d}" for i in range(5)]
    stopper = SequentialStopper(bench.unit_value, reference, 0.05, "ref")
    data, _ = _run(tmp_path, "run", stopper, episodes=8)
    seq = data["sequential"]  # the same episodes: every pair ties; units the reference lacks are skipped
    assert seq["paired"] and seq["verdict"] == "undecided" and seq["units_tested"] == 5
    assert seq["model_mean"] == seq["reference_mean"] and data["run"]["units_total"] == 8


def _record(key, status, value):
    return {"key": key, "status": status, "result": {"value": value}}


def test_errored_and_unpaired_units_stay_out_of_the_test():
    records = [_record(f"u{i}", "ok", 1.0) for i in range(20)]
    records[0]["status"] = "error"
    reference = {f"u{i}": 0.0 for i in range(1, 20) if i != 2}
    stopper = SequentialStopper(lambda r: r["result"]["value"], reference, 0.05, "ref")
    status = stopper.status(records)
    assert status.decided and status.data["verdict"] == "better"
    # units u0 (errored) and u2 (not in the reference) sit in the prefix but were not tested
    assert status.used == status.data["units_tested"] + 2


def test_a_reference_of_another_benchmark_is_refused(tmp_path):
    _run(tmp_path, "ref", None, episodes=2)
    manifest = tmp_path / "ref" / "manifest.json"
    manifest.write_text(json.dumps({**json.loads(manifest.read_text()), "benchmark": "calvin"}))
    with pytest.raises(InputError, match="is a calvin run, not cartpole"):
        reference_values(BalanceBenchmark(CartPoleConfig()), tmp_path / "ref")
    assert RunDir(tmp_path / "ref").merged_records()
