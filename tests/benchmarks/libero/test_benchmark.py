"""``python -m benchmarks.libero`` end to end on one real LIBERO task (scene creation takes seconds)."""

import json

import h5py
import numpy as np
import pytest

from benchmarks.core import RunDir
from benchmarks.libero import LiberoConfig, main, task_table


def test_random_and_replayed_demonstrations(tmp_path):
    common = [
        "--suite",
        "libero_goal",
        "--tasks",
        "3",
        "--trials-per-task",
        "2",
        "--max-steps",
        "6",
        "--image-size",
        "64",
        "--no-progress",
        "--output",
        str(tmp_path),
    ]
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
    rows = [
        {"extras": {"task_index": 1, "instruction": "open it"}, "success": s}
        for s in (True, False, True, True)
    ]
    table = task_table(rows)
    # Wilson, 3 of 4 (issue 34): centre (0.75 + 0.4802) / 1.9604, half-width 0.6408 / 1.9604
    assert table[1].pop("success_ci") == pytest.approx([30.064, 95.441], abs=1e-3)
    assert table == {
        1: {"instruction": "open it", "trials": 4, "successes": 3, "success_rate": 75.0, "errored": 0}
    }


def test_protocol_defaults_and_bad_tasks():
    config = LiberoConfig(suite="libero_spatial")
    assert config.budget() == 220 and config.num_steps_wait == 10 and config.trials_per_task == 50
    assert (
        LiberoConfig(suite="libero_10").budget() == 520
        and len(LiberoConfig(suite="libero_90").task_indices()) == 90
    )
    with pytest.raises(ValueError, match=r"libero_goal has tasks 0\.\.9"):
        LiberoConfig(suite="libero_goal", tasks="12").task_indices()


def test_limit_takes_the_first_trials_and_bad_counts_are_one_line_errors(tmp_path, capsys):
    from benchmarks.core.policy_cli import PolicySpec
    from benchmarks.libero import LiberoBenchmark

    bench = LiberoBenchmark(
        LiberoConfig(suite="libero_goal", tasks="3,4", trials_per_task=2, limit=3), PolicySpec("random", {})
    )
    assert [u.key for u in bench.selected_units()] == [
        "libero_goal/03/00",
        "libero_goal/03/01",
        "libero_goal/04/00",
    ]
    for bad, message in [
        (["--limit", "0"], "--limit must be at least 1, got 0"),
        (["--trials-per-task", "0"], "--trials-per-task must be at least 1, got 0"),
        (["--tasks", "12", "--suite", "libero_goal"], "libero_goal has tasks 0..9"),
    ]:
        with pytest.raises(SystemExit) as exit_:
            main([*bad, "--output", str(tmp_path), "--no-progress"])
        err = capsys.readouterr().err.strip()
        assert exit_.value.code == 2 and message in err and len(err.splitlines()) == 1


def _episode(task: int, success: bool) -> dict:
    return {
        "success": success,
        "steps": 5,
        "policy_calls": 5,
        "idle_steps": 0,
        "wall_time_s": 0.1,
        "policy_stats": {},
        "extras": {"task_index": task, "instruction": INSTRUCTIONS[task]},
    }


INSTRUCTIONS = {
    3: "open the top drawer and put the bowl inside",
    4: "put the bowl on the stove",
    5: "turn on the stove",
}


def test_summary_names_tasks_draws_zero_bars_and_keeps_an_errored_task(tmp_path, monkeypatch):
    """Issue 29: the plot showed bare task indices and nothing for 0 %, and a task whose every trial errored
    vanished from the table. Here task 3 scores 50 %, task 4 every trial errored, task 5 scores 0 %."""
    from benchmarks.core import UnitTally, plots
    from benchmarks.core.policy_cli import PolicySpec
    from benchmarks.core.work import error_record, ok_record
    from benchmarks.libero import LiberoBenchmark

    bench = LiberoBenchmark(
        LiberoConfig(suite="libero_goal", tasks="3,4,5", trials_per_task=2, output=str(tmp_path)),
        PolicySpec("random", {}),
    )
    units = bench.units()
    outcomes = [True, False, None, None, False, False]  # None: the unit raised
    records = [
        error_record(u, "boom", attempts=1, timing={})
        if ok is None
        else ok_record(u, _episode(u.spec["task_index"], ok), attempts=1, timing={})
        for u, ok in zip(units, outcomes)
    ]
    summary = bench.summarize(records, RunDir(tmp_path / "run"), UnitTally.of(records, len(units)))

    # each rate with its 95 % Wilson interval (issue 34): 1 of 2 is [9.5, 90.5] %, 0 of 2 [0, 65.8] %
    assert (
        "| 3 | open the top drawer and put the bowl inside | 2 | 50.0 [9.5, 90.5] | 0 |" in summary.markdown
    )
    assert "| 4 | (every trial errored) | 0 | n/a | 2 |" in summary.markdown
    assert "| 5 | turn on the stove | 2 | 0.0 [0.0, 65.8] | 0 |" in summary.markdown
    assert "| **suite** | | 4 | **25.0 [4.6, 69.9]** | 2 / 6 |" in summary.markdown
    assert summary.data["tasks"]["4"] == {
        "instruction": None,
        "trials": 0,
        "successes": 0,
        "success_rate": None,
        "errored": 2,
        "success_ci": None,
    }
    # Wilson by hand for 1 of 4: centre (0.25 + 0.4802) / 1.9604, half-width 0.6408 / 1.9604
    assert summary.data["success_rate"] == 25.0
    assert summary.data["success_ci"] == pytest.approx([4.559, 69.936], abs=1e-3)

    figures = []
    monkeypatch.setattr(plots, "_save", lambda fig, path: figures.append(fig) or path)
    summary.files["plots/success_by_task.png"](tmp_path / "plot.png")
    ax = figures[0].axes[0]
    labels = [t.get_text().replace("\n", " ") for t in ax.get_yticklabels()]
    assert labels == [
        f"3: {INSTRUCTIONS[3]}",
        "4: (instruction unknown: every trial errored)",
        f"5: {INSTRUCTIONS[5]}",
    ]
    values = [t.get_text() for t in ax.texts]
    assert values == ["50.0", "all 2 trials errored", "0.0"]
    zero_marks = [
        line for line in ax.lines if list(line.get_xdata()) == [0] and list(line.get_ydata()) == [2]
    ]
    assert zero_marks and zero_marks[0].get_marker() == "|"  # the 0 % bar is drawn, not an empty slot


def test_the_plot_renders(tmp_path):
    from benchmarks.libero import task_plot

    table = task_table([_episode(3, True), _episode(5, False)], {4: 2, 5: 1})
    path = task_plot(tmp_path / "plot.png", table, "LIBERO libero_goal: random")
    assert path.stat().st_size > 5000
