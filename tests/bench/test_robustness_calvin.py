"""CALVIN robustness bench (bench/robustness_calvin.py): the certification sweep into the benchmark's own
certificate cache, its table, and collecting a run folder with the run's own command."""

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import benchmarks.calvin as calvin_pkg
from bench import robustness_calvin as rc
from benchmarks.calvin import main as calvin_main
from benchmarks.core import RunDir


def test_sweep_table_reads_rates_per_axis_and_level():
    cell = {"certified": 19, "variants": 20, "rate": 95.0, "ci": [76.4, 99.1]}
    sweep = {"chains": 20, "rates": {"scene": {"1": cell, "2": {**cell, "certified": 20, "rate": 100.0}}}}
    lines = rc._sweep_lines({"certification_sweep": sweep})
    assert "| axis | level 1 | level 2 |" in lines
    assert "| scene | 95 [76, 99] (19/20) | 100 [76, 99] (20/20) |" in lines
    assert rc._sweep_lines({}) == []


def test_collect_names_the_runs_own_command(tmp_path, monkeypatch):
    run = ["--policy", "expert", "--cameras", "none", "--num-sequences", "1", "--tasks", "open_drawer"]
    run += ["--perturb", "robot_joints:1", "--output", str(tmp_path), "--no-progress"]
    monkeypatch.setattr(sys, "argv", [str(Path(calvin_pkg.__file__).with_name("__main__.py")), *run])
    calvin_main()  # as `spatial-arena calvin ...` starts it: the manifest records this command line
    args = rc.parse(["collect", "--policy", "expert", "--output", str(tmp_path)])
    part = rc.collect(args)
    assert part["command"].startswith("spatial-arena calvin --policy expert --cameras none")
    assert str(tmp_path) not in part["command"] and "--perturb robot_joints:1" in part["command"]
    assert part["units_finished"] == "2 of 2 (the run finished)"
    assert part["axes"]["robot_joints"]["1"]["certification_rate"] == 100.0
    other = RunDir(tmp_path / "other")  # a run started from another script records that script's command
    other.path.mkdir()
    other.manifest.write_text(
        json.dumps({"command": ["python", "bench/robustness_blind.py", "--episodes", "1"]})
    )
    assert rc._run_command(other) is None


@pytest.mark.slow
def test_certify_sweep_fills_the_cache_a_perturb_run_reads(tmp_path):
    cache = tmp_path / "certificates.json"
    sweep = rc.certify_chains(rc.parse(["certify", "--num-sequences", "1", "--certificates", str(cache)]))
    assert sweep["expert_runs_this_time"] == 26  # the clean chain stands for the 7 same_physics axes
    assert all(c["variants"] == 1 for levels in sweep["rates"].values() for c in levels.values())
    again = rc.certify_chains(rc.parse(["certify", "--num-sequences", "1", "--certificates", str(cache)]))
    assert again["expert_runs_this_time"] == 0 and again["rates"] == sweep["rates"]
    # a --perturb run over the same chain finds every certificate: its records say "cached"
    run = ["--policy", "random", "--num-sequences", "1", "--perturb", "scene:2,textures:1"]
    calvin_main([*run, "--certificates", str(cache), "--output", str(tmp_path), "--no-progress"])
    records = [json.loads(line) for line in (tmp_path / "calvin" / "random" / "records.jsonl").open()]
    certificates = [r["result"]["extras"]["certificate"] for r in records if "~" in r["key"]]
    assert len(certificates) == 2 and all(c["cached"] for c in certificates)
