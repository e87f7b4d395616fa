"""Blind baselines per robustness axis (bench/robustness_blind.py): the families' runs, the pooled table
that every robustness summary reads for its blind column, and that an errored run never becomes a floor."""

import argparse
import json
import sys
import types
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench import robustness_blind as rb
from benchmarks.core import RunDir
from benchmarks.core.episode_record import ok_results
from benchmarks.robustness import robustness_markdown, robustness_table
from benchmarks.robustness.blind import FORMAT, blind_by_axis, blind_column, blind_entry


def test_libero_runs_each_main_suite_and_pools_them():
    parts = rb.FAMILIES["libero"].parts(argparse.Namespace(episodes=2))
    assert [name for name, _ in parts] == list(rb.LIBERO_SUITES)
    assert all(flags[-2:] == ["--tasks", "0,1"] for _, flags in parts)
    assert {f.benchmark for f in rb.FAMILIES.values()} == {
        "embodied-nav",
        "embodied-manip",
        "calvin",
        "libero",
    }


def test_calvin_floor_per_axis_lands_next_to_the_other_families(tmp_path):
    results = tmp_path / "robustness_blind.json"
    kept = {
        "date": "2026-11-01",
        "scope": "s",
        "command": "c",
        "policies": {"random": {"clean": 0.0, "axes": {}}},
    }
    results.write_text(json.dumps({"format": FORMAT, "benchmarks": {"embodied-nav": kept}}))
    argv = ["--families", "calvin", "--episodes", "1", "--perturb", "robot_joints:2"]
    data = rb.main([*argv, "--output", str(tmp_path / "runs")], results)

    assert data["benchmarks"]["embodied-nav"] == kept  # other families' entries stay
    entry = blind_entry("calvin", results)
    assert entry is not None and set(entry["policies"]) == {"random", "constant-0_0_0_0_0_0_1"}
    for measured in entry["policies"].values():
        assert measured["units"] == 2  # the clean chain and its one variant
        assert measured["axes"] == {"robot_joints": {"2": 0.0, "all": 0.0}}  # blind play finishes no chain
    assert blind_by_axis(entry) == {"robot_joints": {"2": 0.0, "all": 0.0}}
    blind, note = blind_column("calvin", results)
    assert blind == blind_by_axis(entry) and "random" in note
    assert blind_column("libero", results) == (None, None)  # not measured: no column
    records = RunDir(tmp_path / "runs" / "calvin" / "random").merged_records()
    table = robustness_table(ok_results(records))
    shown = robustness_markdown(table, blind, note)
    assert "| blind % |" in shown and "| robot_joints | 2 |" in shown and shown.rstrip().endswith(note)
    assert "--perturb robot_joints:2" in entry["command"]
    # both policies' variants were certified once, in the family's shared cache
    cache = json.loads((tmp_path / "runs" / "certificates-calvin.json").read_text())
    assert [c["axis"] for c in cache["certificates"].values()].count("robot_joints") == 1


def test_an_errored_run_stops_the_script(tmp_path, monkeypatch):
    fake = types.SimpleNamespace(main=lambda argv: 1)  # the benchmark's status for errored units
    monkeypatch.setattr(rb.importlib, "import_module", lambda name: fake)
    args = rb.parse(["--families", "calvin", "--output", str(tmp_path)])
    with pytest.raises(SystemExit, match="errored unit"):
        rb.measure("calvin", args)
