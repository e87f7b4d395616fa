"""``python -m benchmarks.libero`` end to end on one real LIBERO task (scene creation takes seconds)."""

import json

import h5py
import numpy as np
import pytest

from benchmarks.core import RunDir
from benchmarks.libero import LiberoConfig, main, task_table


def test_random_and_replayed_demonstrations(tmp_path):
    common = ["--suite", "libero_goal", "--tasks", "3", "--trials-per-task", "2", "--max-steps", "6",
              "--image-size", "64", "--no-progress", "--output", str(tmp_path)]
    summary = main(["--policy", "random", *common])
    records = RunDir(tmp_path / "libero" / "libero_goal-random").merged_records()
    assert [r["key"] for r in records] == ["libero_goal/03/00", "libero_goal/03/01"]
    assert all(r["result"]["steps"] == 6 and r["result"]["extras"]["truncated"] for r in records)
    assert summary.data["episodes"] == 2 and summary.data["tasks"]["3"]["trials"] == 2
    manifest = json.loads((tmp_path / "libero" / "libero_goal-random" / "manifest.json").read_text())
    assert manifest["protocol"]["max_steps"] == 6 and manifest["protocol"]["num_steps_wait"] == 10

    demo = tmp_path / "demo.hdf5"  # LIBERO's demonstration layout: data/demo_i/actions
    with h5py.File(demo, "w") as f:
        for i, n in enumerate([2, 4]):
            f.create_dataset(f"data/demo_{i}/actions", data=np.zeros((n, 7)))
    main(["--policy", "replay", "--replay-file", str(demo), *common])
    replayed = RunDir(tmp_path / "libero" / "libero_goal-replay").merged_records()
    # demo i replays from initial state i, then the policy holds still for the rest of the budget
    assert [r["result"]["idle_steps"] for r in replayed] == [4, 2]


def test_task_table_by_hand():
    rows = [{"extras": {"task_index": 1, "instruction": "open it"}, "success": s} for s in (True, False, True, True)]
    assert task_table(rows) == {1: {"instruction": "open it", "trials": 4, "successes": 3, "success_rate": 75.0}}


def test_protocol_defaults_and_bad_tasks():
    config = LiberoConfig(suite="libero_spatial")
    assert config.budget() == 220 and config.num_steps_wait == 10 and config.trials_per_task == 50
    assert LiberoConfig(suite="libero_10").budget() == 520 and len(LiberoConfig(suite="libero_90").task_indices()) == 90
    with pytest.raises(ValueError, match=r"libero_goal has tasks 0\.\.9"):
        LiberoConfig(suite="libero_goal", tasks="12").task_indices()


def test_limit_takes_the_first_trials_and_bad_counts_are_one_line_errors(tmp_path, capsys):
    from benchmarks.core.policy_cli import PolicySpec
    from benchmarks.libero import LiberoBenchmark

    bench = LiberoBenchmark(LiberoConfig(suite="libero_goal", tasks="3,4", trials_per_task=2, limit=3),
                            PolicySpec("random", {}))
    assert [u.key for u in bench.selected_units()] == ["libero_goal/03/00", "libero_goal/03/01", "libero_goal/04/00"]
    for bad, message in [(["--limit", "0"], "--limit must be at least 1, got 0"),
                         (["--trials-per-task", "0"], "--trials-per-task must be at least 1, got 0"),
                         (["--tasks", "12", "--suite", "libero_goal"], "libero_goal has tasks 0..9")]:
        with pytest.raises(SystemExit) as exit_:
            main([*bad, "--output", str(tmp_path), "--no-progress"])
        err = capsys.readouterr().err.strip()
        assert exit_.value.code == 2 and message in err and len(err.splitlines()) == 1
