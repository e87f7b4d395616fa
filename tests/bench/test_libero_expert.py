"""bench/libero_expert.py: argument parsing, resuming and the per-task table (fast), one real task (slow)."""

import argparse
import importlib.util
import json
from pathlib import Path

import pytest

from bench import libero_expert as bench


def _args(**kwargs: object) -> argparse.Namespace:
    return bench.build_parser().parse_args([f"--{k}={v}" for k, v in kwargs.items()])


def test_indices_take_ranges_lists_and_all_and_refuse_the_rest():
    assert bench.parse_indices("0-4,7", 10, "--tasks") == [0, 1, 2, 3, 4, 7]
    assert bench.parse_indices("3, 1-2,3", 10, "--tasks") == [1, 2, 3]
    assert bench.parse_indices("all", 3, "--tasks") == [0, 1, 2]
    for bad, said in (
        ("0-10", r"indices run 0\.\.9"),
        ("4-2", "low before high"),
        ("x", "e.g. 0-4,7"),
        ("", "e.g."),
    ):
        with pytest.raises(bench.BadInput, match=said):
            bench.parse_indices(bad, 10, "--tasks")
    with pytest.raises(bench.BadInput, match="unknown suite libero_100"):
        bench.parse_suites("libero_object,libero_100")


def test_jobs_skip_the_episodes_the_results_file_holds():
    args = _args(suites="libero_object,libero_10", tasks="0-1", states="0-2")
    done = ["libero_object/00/00", "libero_object/00/01", "libero_object/00/02", "libero_10/01/01"]
    assert bench.plan_jobs(args, done) == [
        ("libero_object", 1, [0, 1, 2]),
        ("libero_10", 0, [0, 1, 2]),
        ("libero_10", 1, [0, 2]),
    ]
    with pytest.raises(bench.BadInput, match="--workers 0"):
        bench.plan_jobs(_args(workers=0), [])
    with pytest.raises(bench.BadInput, match=r"indices run 0\.\.9"):
        bench.plan_jobs(_args(suites="libero_goal", tasks="10"), [])


def _episode(suite: str, task: int, state: int, success: bool, steps: int, reason: str = "") -> dict:
    row = {
        "key": bench.episode_key(suite, task, state),
        "suite": suite,
        "task": task,
        "state": state,
        "instruction": f"do task {task}",
        "success": success,
        "steps": steps,
    }
    return row if success else {**row, "reason": reason}


def test_the_table_has_a_row_per_task_with_every_miss_and_its_reason():
    episodes = [
        _episode("libero_10", 1, 1, False, 520, "unmet (in a b)"),
        _episode("libero_10", 1, 0, True, 200),
        _episode("libero_object", 0, 0, True, 100),
        _episode("libero_object", 0, 1, True, 120),
    ]
    assert bench.task_rows(episodes) == [
        ["libero_object", 0, "do task 0", "2 / 2", 110, "none"],
        ["libero_10", 1, "do task 1", "1 / 2", 200, "state 1: unmet (in a b)"],
    ]
    metrics = bench.suite_metrics(episodes)
    assert metrics["libero_10"] == "1 / 2 (50.0 %) over 1 of 10 tasks; below the 95% target: 1"
    assert metrics["libero_object"].endswith("target: none")
    assert bench.compact([0, 1, 2, 5, 7, 8]) == "0-2, 5, 7-8"
    reason = bench.miss_reason(["(In a b)"], plan_done=False, steps=520, retries=1)
    assert reason == "unmet (In a b); the budget ran out mid-plan (520 steps); grasp retries used: 1"


def test_the_results_file_states_its_provenance_and_keeps_every_slice_command(tmp_path):
    spec = importlib.util.spec_from_file_location(
        "gen_pages", Path(bench.__file__).parents[1] / "docs/_scripts/gen_pages.py"
    )
    gen_pages = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen_pages)
    data = {
        "episodes": {e["key"]: e for e in [_episode("libero_object", 0, 0, True, 100)]},
        "commands": ["python bench/libero_expert.py --states 0"],
    }
    path = tmp_path / "libero_expert.json"
    bench.save(path, data, "python bench/libero_expert.py --states 1")
    saved = json.loads(path.read_text())
    assert saved["commands"] == [
        "python bench/libero_expert.py --states 0",
        "python bench/libero_expert.py --states 1",
    ]
    assert bench.load(path)["episodes"] == data["episodes"]
    page = gen_pages.results_pages(tmp_path)["results/libero_expert.md"]
    assert "| libero_object | 0 | do task 0 | 1 / 1 | 100 | none |" in page


def test_bad_input_is_one_line_and_exit_status_2(tmp_path, capsys):
    assert bench.main(["--suites", "libero_100", "--out", str(tmp_path / "r.json")]) == 2
    assert capsys.readouterr().err.strip().count("\n") == 0
    other = tmp_path / "other.json"
    other.write_text('{"title": "not mine"}')
    assert bench.main(["--out", str(other)]) == 2
    assert "no episodes map" in capsys.readouterr().err


@pytest.mark.slow
def test_one_task_runs_is_recorded_and_a_rerun_skips_it(tmp_path, capsys):
    out = tmp_path / "r.json"
    assert bench.main(["--suites", "libero_object", "--tasks", "0", "--states", "0", "--out", str(out)]) == 0
    episode = json.loads(out.read_text())["episodes"]["libero_object/00/00"]
    assert episode["success"] and 0 < episode["steps"] <= 280
    assert bench.main(["--suites", "libero_object", "--tasks", "0", "--states", "0", "--out", str(out)]) == 0
    assert "0 task(s) to run" in capsys.readouterr().out
