"""``python -m benchmarks.calvin`` on the built-in play-table: protocol bookkeeping, results files, policies."""

import json
from collections.abc import Iterator

import pytest

from benchmarks.calvin import (
    CalvinBenchmark,
    CalvinConfig,
    chain_markdown,
    chain_metrics,
    evaluation_chains,
    main,
    task_info,
)
from benchmarks.core import EXIT_UNITS_ERRORED, InProcessExecutor, RunDir, comparable, run_benchmark
from benchmarks.core.policy_cli import PolicySpec


def run(tmp_path, *args):
    return main(["--output", str(tmp_path), "--no-progress", *args])


def records_of(tmp_path, label):
    return RunDir(tmp_path / "calvin" / label).merged_records()


def test_chain_metrics_by_hand():
    # 4 chains completing 5, 2, 0 and 3 subtasks: avg 10/4; position i reached by #chains with >= i.
    metrics = chain_metrics([5, 2, 0, 3])
    assert metrics == {"avg_seq_len": 2.5, "chain_sr": {"1": 0.75, "2": 0.75, "3": 0.5, "4": 0.25, "5": 0.25}}


def test_chain_intervals_by_hand():
    """Issue 34: Wilson per position (3 of 4 chains reach position 1: [30.06, 95.44] %), a seeded bootstrap
    over chains around avg. len, and both in the headline row."""
    from benchmarks.calvin.report import chain_intervals
    from benchmarks.core import UnitTally

    intervals = chain_intervals([5, 2, 0, 3])
    assert intervals["chain_sr_ci"]["1"] == pytest.approx([0.300642, 0.954413], abs=1e-6)
    assert intervals["chain_sr_ci"]["5"] == pytest.approx([0.045587, 0.699358], abs=1e-6)
    low, high = intervals["avg_seq_len_ci"]
    assert low < 2.5 < high and intervals == chain_intervals([5, 2, 0, 3])
    metrics = {**chain_metrics([5, 2, 0, 3]), **intervals}
    text = chain_markdown(
        "m", metrics, {"open_drawer": {"success": 3, "total": 4}}, UnitTally(4, 4, 0), "builtin"
    )
    assert "| m | 75.0 [30.1, 95.4] | 75.0 [30.1, 95.4] | 50.0 [15.0, 85.0] |" in text
    assert f"| 2.50 [{low:.2f}, {high:.2f}] | 0 / 4 |" in text
    assert "| open_drawer | 3 | 4 | 75 [30, 95] |" in text


def test_task_info_counts_successes_and_the_failed_subtask():
    chains = [
        {
            "extras": {
                "subtasks": [
                    {"extras": {"task": "open_drawer"}, "success": True},
                    {"extras": {"task": "turn_on_led"}, "success": False},
                ]
            }
        },
        {"extras": {"subtasks": [{"extras": {"task": "open_drawer"}, "success": False}]}},
    ]
    assert task_info(chains) == {
        "open_drawer": {"success": 1, "total": 2},
        "turn_on_led": {"success": 0, "total": 1},
    }


def test_short_runs_are_prefixes_of_the_public_1000():
    assert evaluation_chains(3) == evaluation_chains(1000)[:3]
    assert evaluation_chains(1)[0][1] == (
        "rotate_blue_block_right",
        "move_slider_right",
        "lift_red_block_slider",
        "place_in_slider",
        "turn_off_lightbulb",
    )


def test_expert_chain_and_results_layout(tmp_path):
    summary = run(tmp_path, "--num-sequences", "1")
    results = json.loads((tmp_path / "calvin" / "expert" / "results.json").read_text())
    assert set(results["expert"]) == {"avg_seq_len", "chain_sr", "task_info", "spatial_arena_run"}
    assert results["expert"]["spatial_arena_run"] == {
        "chains_total": 1,
        "chains_completed": 1,
        "chains_errored": 0,
        "complete": True,
    }
    assert list(results["expert"]["chain_sr"]) == ["1", "2", "3", "4", "5"]
    (record,) = records_of(tmp_path, "expert")
    chain = record["result"]
    assert chain["extras"]["tasks"] == list(evaluation_chains(1)[0][1])
    assert chain["extras"]["initial_state"]["slider"] == "left" and len(chain["extras"]["subtasks"]) >= 1
    # the expert solves the first chain
    assert summary.data["avg_seq_len"] == chain["extras"]["num_completed"] >= 3
    assert all(0 < s["steps"] <= 360 for s in chain["extras"]["subtasks"])
    manifest = json.loads((tmp_path / "calvin" / "expert" / "manifest.json").read_text())
    assert manifest["protocol"] == {
        "num_sequences": 1,
        "chain_length": 5,
        "ep_len": 360,
        "backend": "builtin",
        "scene": "D",
    }
    assert manifest["policy"]["privileged"] is True
    assert (tmp_path / "calvin" / "expert" / "plots" / "chain_success.png").exists()


def test_two_workers_give_the_single_worker_results(tmp_path):
    args = ["--policy", "random", "--num-sequences", "4", "--ep-len", "15"]
    run(tmp_path / "one", *args)
    run(tmp_path / "two", *args, "--workers", "2")
    one, two = records_of(tmp_path / "one", "random"), records_of(tmp_path / "two", "random")
    assert [comparable(r) for r in one] == [comparable(r) for r in two]
    assert all(
        len(r["result"]["extras"]["subtasks"]) == 1 and r["result"]["extras"]["subtasks"][0]["steps"] == 15
        for r in one
    )


class Interrupted(Exception):
    pass


class StopAfter(InProcessExecutor):
    def run(self, factory, units) -> Iterator[dict]:
        for i, record in enumerate(super().run(factory, units)):
            if i == 1:
                raise Interrupted
            yield record


def test_interrupted_run_resumes(tmp_path):
    config = CalvinConfig(policy="random", num_sequences=3, ep_len=5, output=str(tmp_path), progress=False)
    spec = PolicySpec("random", {})
    bench = CalvinBenchmark(config, spec)
    with pytest.raises(Interrupted):
        run_benchmark(bench, bench.run_path, executor=StopAfter(), progress=False)
    assert len(RunDir(bench.run_path).merged_records()) == 1
    config.resume = True
    run_benchmark(CalvinBenchmark(config, spec), bench.run_path, resume=True, progress=False)
    records = RunDir(bench.run_path).merged_records()
    assert [r["key"] for r in records] == ["chain-0000", "chain-0001", "chain-0002"]
    assert json.loads((tmp_path / "calvin" / "random" / "summary.json").read_text())["chains"] == 3


def test_video_of_the_first_chain(tmp_path):
    run(tmp_path, "--policy", "random", "--num-sequences", "2", "--ep-len", "4", "--video", "1")
    first, second = records_of(tmp_path, "random")
    assert first["result"]["video"] == "videos/chain-0000.mp4" and "video" not in second["result"]
    assert (tmp_path / "calvin" / "random" / "videos" / "chain-0000.mp4").stat().st_size > 1000


def test_replay_and_user_policies(tmp_path):
    actions = tmp_path / "actions.jsonl"
    actions.write_text(json.dumps({"key": "chain-0000/0", "actions": [[0, 0, -1, 0, 0, 0, 1]] * 3}) + "\n")
    run(
        tmp_path, "--policy", "replay", "--replay-file", str(actions), "--num-sequences", "1", "--ep-len", "6"
    )
    (record,) = records_of(tmp_path, "replay")
    subtask = record["result"]["extras"]["subtasks"][0]
    assert subtask["steps"] == 6 and subtask["idle_steps"] == 3  # 3 replayed actions, then holding still
    run(
        tmp_path,
        "--policy",
        "tests.user_policy_example:ConstantModel",
        "--policy-kwargs",
        '{"value": 0.1}',
        "--num-sequences",
        "1",
        "--ep-len",
        "3",
    )
    (record,) = records_of(tmp_path, "ConstantModel")
    assert record["status"] == "ok" and record["result"]["extras"]["subtasks"][0]["steps"] == 3


def test_tiny_mllm_on_the_play_table(tmp_path, tiny_vlm):
    model = str(tiny_vlm("qwen2_5_vl"))
    run(
        tmp_path,
        "--policy",
        "mllm",
        "--model",
        model,
        "--num-sequences",
        "1",
        "--ep-len",
        "3",
        "--max-new-tokens",
        "8",
        "--no-cache",
    )
    (record,) = records_of(tmp_path, f"mllm-{model.rstrip('/').split('/')[-1]}")
    subtask = record["result"]["extras"]["subtasks"][0]
    # Random weights write no plan: every step asks the model, counts a parse error and holds still.
    assert subtask["policy_stats"]["parse_errors"] == subtask["policy_stats"]["model_calls"] == 3
    assert subtask["idle_steps"] == 3 and subtask["success"] is False
    # What the model said is in the run folder, per subtask, readable without the response cache.
    decisions = RunDir(tmp_path / "calvin" / f"mllm-{model.rstrip('/').split('/')[-1]}").load_decisions()
    assert [(d["key"], d["subtask"], d["task"], d["call"]) for d in decisions] == [
        ("chain-0000", 0, subtask["extras"]["task"], i) for i in range(3)
    ]
    assert all(
        len(d["prompt_id"]) == 64
        and d["completion_tokens"]
        and d["errors"]
        and not d["usable"]
        and d["parsed"] == {"format": "none", "steps": {}}
        for d in decisions
    )


def test_tiny_vla_backbone_on_the_play_table(tmp_path):
    run(
        tmp_path,
        "--backbone",
        "tiny-qwen2.5-vl",
        "--num-sequences",
        "1",
        "--ep-len",
        "12",
        "--execute-steps",
        "5",
    )
    (record,) = records_of(tmp_path, "vla-tiny-qwen2.5-vl")
    subtask = record["result"]["extras"]["subtasks"][0]
    assert record["status"] == "ok" and subtask["steps"] == 12
    assert subtask["policy_calls"] == 12 and subtask["idle_steps"] == 0


def test_backbone_conflicts_with_another_policy(tmp_path):
    from policies.config_cli import InputError

    with pytest.raises(InputError, match="--backbone"):
        run(tmp_path, "--backbone", "tiny-qwen2.5-vl", "--policy", "random")


def test_a_chain_does_not_depend_on_the_chains_run_before_it(tmp_path):
    """Regression: restoring a saved PyBullet state kept the contact order of the previous episode, so the
    same chain took one step more or less depending on which chains its worker had run before."""
    from benchmarks.calvin import CalvinBenchmark, CalvinConfig, CalvinWorker
    from benchmarks.core.policy_cli import PolicySpec
    from envs.calvin import initial_env_state

    config = CalvinConfig(num_sequences=4, cameras="none", output=str(tmp_path))
    spec = PolicySpec("expert", {})
    units = CalvinBenchmark(config, spec).units()
    fresh, used = CalvinWorker(config, spec, str(tmp_path)), CalvinWorker(config, spec, str(tmp_path))
    try:
        used.run(units[0])
        robot_obs, scene_obs = initial_env_state(units[3].spec["initial_state"])
        contacts = []
        for worker in (fresh, used):
            worker.env.reset(options={"robot_obs": robot_obs, "scene_obs": scene_obs})
            contacts.append([c[1:10] for c in worker.env.unwrapped.sim.p.getContactPoints()])
        assert contacts[0] and contacts[0] == contacts[1]
        subtasks = [w.run(units[3])["extras"]["subtasks"] for w in (fresh, used)]  # their timing is apart
        assert subtasks[0] == subtasks[1]
    finally:
        fresh.close()
        used.close()


def test_a_run_whose_every_chain_fails_exits_non_zero_and_shows_no_score(tmp_path, capsys):
    failing = ["--policy", "tests.closed_loop_policies:FailingModel", "--num-sequences", "2", "--ep-len", "3"]
    with pytest.raises(SystemExit) as exit_:
        run(tmp_path, *failing)
    assert exit_.value.code == EXIT_UNITS_ERRORED == 3
    assert "2 of 2 units ended in an error" in capsys.readouterr().err
    folder = tmp_path / "calvin" / "FailingModel"
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["avg_seq_len"] is None and summary["run"]["complete"] is False
    assert summary["run"]["units_errored"] == 2 and summary["run"]["errored_keys"] == [
        "chain-0000",
        "chain-0001",
    ]
    results = json.loads((folder / "results.json").read_text())["FailingModel"]
    assert results["avg_seq_len"] is None and results["spatial_arena_run"]["chains_errored"] == 2
    headline = (folder / "summary.md").read_text()
    assert "| FailingModel | n/a | n/a | n/a | n/a | n/a | n/a | 2 / 2 |" in headline
    assert "(0 of 2 chains completed" in headline and "0.0" not in headline.split("| blind:")[0]
    assert all("RuntimeError: the model crashed" in r["error"] for r in records_of(tmp_path, "FailingModel"))
    summary = run(tmp_path, *failing, "--run-name", "allowed", "--allow-errors", "--video", "1")
    assert summary.data["run"]["units_errored"] == 2
    # the video of a chain that raised is kept up to the error (here: the reset's frame)
    assert (tmp_path / "calvin" / "allowed" / "videos" / "chain-0000.mp4").stat().st_size > 1000


def test_limit_is_num_sequences_and_resume_extends_a_finished_run(tmp_path, capsys):
    from benchmarks.core.policy_cli import parse_benchmark_args

    config, _ = parse_benchmark_args(CalvinConfig, ["--limit", "2"])
    assert config.num_sequences == 2 and config.limit is None
    base = ["--policy", "random", "--ep-len", "3"]
    run(tmp_path, *base, "--limit", "2")
    first = records_of(tmp_path, "random")
    run(tmp_path, *base, "--num-sequences", "3", "--resume")
    extended = records_of(tmp_path, "random")
    assert [r["key"] for r in extended] == ["chain-0000", "chain-0001", "chain-0002"]
    assert extended[:2] == first  # reused as they were (timing included), not run again
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_:
        run(tmp_path, *base, "--num-sequences", "3", "--resume", "--seed", "1")
    err = capsys.readouterr().err.strip()
    assert exit_.value.code == 2 and len(err.splitlines()) == 1
    assert "--seed (0 -> 1) changed since that run" in err and "--run-name" in err
    for bad in (["--num-sequences", "0"], ["--limit", "-1"], ["--ep-len", "0"], ["--workers", "0"]):
        with pytest.raises(SystemExit) as exit_:
            run(tmp_path, *bad)
        err = capsys.readouterr().err.strip()
        assert exit_.value.code == 2 and len(err.splitlines()) == 1 and "must be at least" in err


def test_a_chain_enters_sequential_stopping_as_its_completed_share():
    from benchmarks.calvin import CalvinBenchmark, CalvinConfig

    bench = CalvinBenchmark(CalvinConfig(num_sequences=1, cameras="none"), PolicySpec("expert", {}))
    base = {"steps": 9, "policy_calls": 0, "idle_steps": 0, "policy_stats": {}}
    chain = {**base, "success": False, "extras": {"tasks": ["a", "b", "c", "d", "e"], "num_completed": 3}}
    assert bench.unit_value({"result": chain}) == 0.6  # avg. len / 5, in [0, 1]
    one_task = {**base, "success": True, "extras": {"tasks": ["a"], "num_completed": 1}}
    assert bench.unit_value({"result": one_task}) == 1.0
