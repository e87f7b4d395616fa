"""The CALVIN ABC->D recipes: bench/calvin_abc_d.py (CPU), bench/calvin_abc_d_gpu.sh (GPU) and the scenes
side by side (bench/calvin_scenes.py)."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench.calvin_abc_d import blind_policies, main, parse_args, report_tables  # noqa: E402
from bench.calvin_scenes import scene_tables  # noqa: E402
from benchmarks.calvin.report import chain_intervals, chain_metrics  # noqa: E402
from tests.run_folders import write_calvin_run  # noqa: E402


def test_scenes_side_by_side_with_intervals_and_pairs_against_d(tmp_path):
    """Read from the records, so a run stopped early shows the units it finished (D's last one errored)."""
    write_calvin_run(tmp_path / "scene-A", [1, 1, 1, 0, 1, 1], scene="A")
    write_calvin_run(tmp_path / "scene-D", [0, 1, 0, 0, 0, 1, None], scene="D")
    headline, per_task, paired = scene_tables(tmp_path, ["A", "D"], reference="D")
    assert [row[:3] for row in headline["rows"]] == [
        ["A", 6, "83.3 [43.6, 97.0]"],
        ["D", 6, "33.3 [9.7, 70.0]"],
    ]
    assert per_task["rows"][0] == ["open_drawer", "5/6", "2/6"]
    (row,) = paired["rows"]
    assert row[:3] == ["D vs A", 6, "83.3 / 33.3"] and row[3].startswith("-50.0 [")
    assert row[4] == "0.25"  # exact McNemar, 3 discordant pairs all one way


def test_parse_args_tiny_and_the_blind_policies():
    args = parse_args(["--tiny"])
    assert (args.frames, args.num_sequences, args.ep_len) == (150, 2, 8)
    default = parse_args([])
    recipe = (default.tasks, default.window, default.max_steps, default.frames, default.rest)
    assert recipe == ("open_drawer,close_drawer", 360, 2000, 12000, 1.0)  # the run that beat blind on D
    assert (default.min_lr_ratio, default.num_sequences, default.feature_cache) == (0.05, 100, 80000)
    blind = blind_policies()
    assert list(blind)[:2] == ["random", "constant-0_0_0_0_0_0_1"] and len(blind) == 9
    assert all(argv[-2:] == ["--cameras", "none"] for argv in blind.values())


def test_a_step_budget_resumes_and_a_wall_clock_budget_starts_afresh(tmp_path):
    from bench.vla_learning import budget_settings

    run, data = tmp_path / "run", tmp_path / "data"
    steps = parse_args(["--max-steps", "300"])
    first = budget_settings(steps, "b", data, run)
    assert first["max_steps"] == 300 and first["time_budget_s"] is None and "resume" not in first
    clock = budget_settings(parse_args(["--max-steps", "0", "--budget-min", "2"]), "b", data, run)
    assert clock["time_budget_s"] == 120.0 and "resume" not in clock and not run.exists()


def test_augment_reaches_the_training_config(tmp_path):
    from bench.vla_learning import train_config

    augmented = train_config(parse_args(["--augment", "shift,color"]), "b", tmp_path, tmp_path / "run")
    assert augmented.augment == "shift,color"
    assert train_config(parse_args([]), "b", tmp_path, tmp_path / "run").augment == "none"


def test_report_tables_show_n_successes_and_intervals():
    completed = [1, 0, 0, 1]
    data = {"chains": 4, **chain_metrics(completed), **chain_intervals(completed)}
    success = {"n": 4, "difference": 0.5, "ci": [0.0, 1.0], "p_value": 0.5}
    one_sided = {"trained_only": 2, "baseline_only": 0, "p": 0.25}
    versus = {"baseline": "random", "success": success, "one_sided": one_sided}
    head, pair = report_tables({"trained": data}, versus)
    assert head["rows"][0][:4] == ["trained", 4, 2, "50.0 [15.0, 85.0]"]
    assert pair["rows"] == [["random", 4, "50.0 [0.0, 100.0]", "2 / 0", "0.5", "0.25"]]


def test_gpu_script_parses():
    assert subprocess.run(["bash", "-n", str(ROOT / "bench" / "calvin_abc_d_gpu.sh")]).returncode == 0


@pytest.mark.slow
def test_cpu_recipe_dry_run(tmp_path):
    """Every step of the CPU recipe at the smallest size: play, training, D and the blind policies, C."""
    pytest.importorskip("efficientnet_lite_pytorch")
    summary = main(["--tiny", "--out", str(tmp_path), "--scenes", "C,D"])
    assert summary["play"]["frames"] == 450 and summary["training"]["steps"] >= 1
    assert summary["results"]["trained"]["n"] == 2 and len(summary["results"]) == 10
    assert [t["caption"].split(":")[0] for t in summary["tables"]][:1] == ["scene D"]
    assert (tmp_path / "eval" / "calvin" / "scene-C" / "summary.json").is_file()


@pytest.mark.slow
def test_gpu_script_dry_run_on_cpu(tmp_path):
    """TINY=1: the GPU recipe's every step on a CPU with a tiny backbone."""
    env = {**os.environ, "TINY": "1", "OUT": str(tmp_path), "PYTHONPATH": str(ROOT)}
    script = ROOT / "bench" / "calvin_abc_d_gpu.sh"
    done = subprocess.run(
        ["bash", str(script), "tiny-qwen2.5-vl", sys.executable], cwd=ROOT, env=env, capture_output=True
    )
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    assert json.loads((tmp_path / "summary_d.json").read_text())["chains"] == 2
    assert json.loads((tmp_path / "calvin_abc_d_scenes.json").read_text())["tables"]
    shutil.rmtree(tmp_path / "data")
