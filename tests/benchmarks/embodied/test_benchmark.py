"""``python -m benchmarks.embodied nav`` end to end on the real navigation env."""

import json

import pytest

from benchmarks.core import RunDir, comparable
from benchmarks.embodied import main, subset_table


def run(tmp_path, *args):
    return main(["nav", "--output", str(tmp_path), "--no-progress", "--image-size", "64", *args])


def test_expert_run_writes_eb_style_results(tmp_path):
    summary = run(tmp_path, "--episodes", "1", "--video", "1")
    out = RunDir(tmp_path / "embodied-nav" / "expert")
    records = out.merged_records()
    assert len(records) == 5 and all(r["status"] == "ok" for r in records)
    assert [r["result"]["extras"]["subset"] for r in records] == [
        "base",
        "common_sense",
        "complex_instruction",
        "visual_appearance",
        "long_horizon",
    ]
    assert summary.data["average_success_rate"] == 100.0
    assert (out.path / "plots" / "success_by_subset.png").exists()
    assert (out.path / records[0]["result"]["video"]).stat().st_size > 1000
    manifest = json.loads(out.manifest.read_text())
    assert manifest["policy"]["privileged"] is True and manifest["env"]["kwargs"] == {
        "width": 64,
        "height": 64,
    }


def test_two_workers_match_one(tmp_path):
    run(tmp_path / "a", "--episodes", "2", "--subset", "base,long_horizon", "--policy", "random")
    run(
        tmp_path / "b",
        "--episodes",
        "2",
        "--subset",
        "base,long_horizon",
        "--policy",
        "random",
        "--workers",
        "2",
    )
    one = RunDir(tmp_path / "a" / "embodied-nav" / "random").merged_records()
    two = RunDir(tmp_path / "b" / "embodied-nav" / "random").merged_records()
    assert [comparable(r) for r in one] == [comparable(r) for r in two]


def test_tiny_mllm_in_the_eb_loop_counts_unparsable_output(tmp_path, tiny_vlm):
    model = str(tiny_vlm("qwen2_5_vl"))
    summary = run(
        tmp_path,
        "--episodes",
        "1",
        "--subset",
        "base",
        "--policy",
        "mllm",
        "--model",
        model,
        "--max-new-tokens",
        "8",
        "--cache-path",
        str(tmp_path / "cache.sqlite"),
    )
    (record,) = RunDir(
        tmp_path / "embodied-nav" / f"mllm-{model.rstrip('/').split('/')[-1]}"
    ).merged_records()
    result = record["result"]
    # Random weights write no JSON: each call is a planner output error, followed by the recorded no-op
    # fallback, which spends a step without moving, until the 20-step budget is used up.
    assert result["policy_stats"]["planner_output_error"] == result["policy_stats"]["model_calls"] == 20
    assert result["idle_steps"] == 20 and result["steps"] == 20 and not result["success"]
    assert summary.data["subsets"]["base"]["planner_output_errors"] == 20


def test_subset_table_by_hand():
    rows = [
        {
            "success": True,
            "steps": 4,
            "policy_calls": 2,
            "policy_stats": {"planner_output_error": 1.0},
            "extras": {"subset": "base", "num_invalid_actions": 0},
        },
        {
            "success": False,
            "steps": 20,
            "policy_calls": 6,
            "policy_stats": {},
            "extras": {"subset": "base", "num_invalid_actions": 3},
        },
    ]
    table = subset_table(rows)["base"]
    assert table == {
        "episodes": 2,
        "success_rate": 50.0,
        "avg_steps": 12.0,
        "avg_planner_calls": 4.0,
        "avg_invalid_actions": 1.5,
        "planner_output_errors": 1.0,
        "success_ci": pytest.approx([9.453, 90.547], abs=1e-3),  # Wilson, 1 of 2 (issue 34)
    }


def test_unknown_subset_and_bad_counts_are_one_line_errors(tmp_path, capsys):
    for args, message in [
        (["--subset", "kitchen"], "--subset kitchen: unknown"),
        (["--limit", "0"], "--limit must be at least 1, got 0"),
        (["--episodes", "-2"], "--episodes must be at least 1, got -2"),
    ]:
        with pytest.raises(SystemExit) as exit_:
            run(tmp_path, *args)
        err = capsys.readouterr().err.strip()
        assert exit_.value.code == 2 and message in err and len(err.splitlines()) == 1
    assert not (tmp_path / "embodied-nav").exists()


SCRIPTED = "tests.closed_loop_policies:ScriptedEBNavigator"


def test_decisions_jsonl_holds_every_model_call_across_resume(tmp_path):
    run(tmp_path, "--episodes", "1", "--policy", SCRIPTED, "--limit", "1")
    out = RunDir(tmp_path / "embodied-nav" / "ScriptedEBNavigator")
    first = out.load_decisions()
    (record,) = out.merged_records()
    stats = record["result"]["policy_stats"]
    assert len(first) == stats["model_calls"] and stats["parse_errors"] == len(first) // 2
    plan, prose = first[0], first[1]
    assert (plan["key"], plan["index"], plan["call"], plan["unit_status"]) == (record["key"], 0, 0, "ok")
    assert plan["parsed"] == ["action id 4, RotateRight", "action id 0, MoveAhead"] and plan["usable"]
    assert (plan["prompt_tokens"], plan["latency_s"], plan["injected_error"]) == (101, 0.25, None)
    assert len(plan["prompt_id"]) == 64 and plan["prompt_id"] != prose["prompt_id"]
    assert prose["text"] == "I would walk towards it." and prose["parsed"] == [] and not prose["usable"]
    assert prose["errors"] and "decisions" not in out.records.read_text()

    # Extend to 2 episodes: the first unit's lines stay as they were, no unit appears twice (2 worker
    # processes: tests/benchmarks/core/test_runner.py).
    run(tmp_path, "--episodes", "1", "--policy", SCRIPTED, "--limit", "2", "--resume")
    lines = out.load_decisions()
    records = out.merged_records()
    assert [r["index"] for r in records] == [0, 1] and records[0] == record
    assert lines[: len(first)] == first
    for r in records:
        mine = [d for d in lines if d["key"] == r["key"]]
        assert [d["call"] for d in mine] == list(range(int(r["result"]["policy_stats"]["model_calls"])))


def test_idle_steps_reach_the_video(tmp_path):
    import gymnasium as gym

    import envs  # noqa: F401  (registers the ids)
    from benchmarks.embodied.navigation import run_episode
    from envs.navigation.episodes import make_episode_set
    from tests.closed_loop_policies import IdlePolicy

    env = gym.make("SpatialArena/EBNavigation-v0", width=32, height=32)
    frames = []
    result = run_episode(
        env,
        IdlePolicy(),
        make_episode_set("base", n=1, seed=0)[0],
        on_step=lambda obs, caption: frames.append(caption[-1]),
    )
    env.close()
    assert result["idle_steps"] == result["steps"] == 20
    assert frames == ["start"] + [f"step {i}: no motion (idle)" for i in range(1, 21)]


def test_manipulation_expert_per_family(tmp_path):
    summary = main(
        [
            "manip",
            "--output",
            str(tmp_path),
            "--no-progress",
            "--image-size",
            "64",
            "--episodes",
            "1",
            "--subset",
            "base",
        ]
    )
    assert summary.data["episodes"] == 4 and set(summary.data["families"]) == {
        "pick",
        "stack",
        "place",
        "wipe",
    }
    assert summary.data["average_success_rate"] == 100.0
    records = RunDir(tmp_path / "embodied-manip" / "expert").merged_records()
    assert all(
        r["result"]["steps"] <= 15 and r["result"]["extras"]["num_invalid_actions"] == 0 for r in records
    )


def test_tiny_mllm_in_the_eb_manipulation_loop(tmp_path, tiny_vlm):
    from envs.manipulation.episodes import make_episodes, save_episodes

    model = str(tiny_vlm("qwen3_vl"))
    save_episodes(make_episodes("pick", "base", 1, 0), tmp_path / "one.jsonl")
    main(
        [
            "manip",
            "--output",
            str(tmp_path),
            "--no-progress",
            "--image-size",
            "64",
            "--episodes-file",
            str(tmp_path / "one.jsonl"),
            "--policy",
            "mllm",
            "--model",
            model,
            "--max-new-tokens",
            "8",
            "--no-cache",
        ]
    )
    records = RunDir(
        tmp_path / "embodied-manip" / f"mllm-{model.rstrip('/').split('/')[-1]}"
    ).merged_records()
    assert len(records) == 1 and records[0]["status"] == "ok"
    for r in records:  # random weights: every answer is a planner output error, then a counted no-op
        stats = r["result"]["policy_stats"]
        assert stats["planner_output_error"] == stats["model_calls"] == r["result"]["idle_steps"] == 15


def test_stop_when_decided_against_a_rate_and_against_a_run(tmp_path):
    expert = run(tmp_path, "--episodes", "3", "--stop-when-decided", "--against", "0.3").data
    assert expert["sequential"]["verdict"] == "better" and expert["sequential"]["units_planned"] == 15
    assert expert["run"]["units_total"] == expert["sequential"]["units_used"] < 15
    reference = tmp_path / "ref"
    main(["nav", "--output", str(reference), "--no-progress", "--image-size", "64", "--episodes", "3"])
    against = str(reference / "embodied-nav" / "expert")
    random = run(
        tmp_path, "--policy", "random", "--episodes", "3", "--stop-when-decided", "--against", against
    )
    seq = random.data["sequential"]
    assert (
        seq["paired"]
        and seq["verdict"] == "worse"
        and seq["units_used"] < 15
        and seq["reference_mean"] == 1.0
    )


def test_latency_spends_eb_steps_while_the_policy_thinks(tmp_path):
    """``--latency fixed:500 --latency-mode hold`` at EB-Navigation's 4 actions per second: each decision
    first spends 2 of the 20 steps standing still. The expert, which reaches this target in 7 moves
    without latency, gets 6 moves in (H H A x 6, then H H) and fails; the record and summary say why."""
    base = ["--episodes", "1", "--subset", "base"]
    plain = run(tmp_path / "plain", *base)
    slow = run(tmp_path / "slow", *base, "--latency", "fixed:500", "--latency-mode", "hold")
    (fast,) = RunDir(tmp_path / "plain" / "embodied-nav" / "expert").merged_records()
    (late,) = RunDir(tmp_path / "slow" / "embodied-nav" / "expert").merged_records()
    assert (fast["result"]["success"], fast["result"]["steps"]) == (True, 7) and "latency" not in fast[
        "result"
    ]
    assert (late["result"]["success"], late["result"]["steps"], late["result"]["policy_calls"]) == (
        False,
        20,
        7,
    )
    lat = late["result"]["latency"]
    assert (lat["control_hz"], lat["steps"], lat["held_steps"], lat["latencies_ms"]) == (
        4.0,
        14,
        14,
        [500.0] * 7,
    )
    assert "latency" not in plain.data and slow.data["latency"]["decisions"] == 7
    assert "Latency fixed:500 (hold, 4 Hz): 7 decisions" in slow.markdown
    manifest = json.loads(RunDir(tmp_path / "slow" / "embodied-nav" / "expert").manifest.read_text())
    assert manifest["latency"] == {"latency": "fixed:500", "mode": "hold", "control_hz": 4.0}


@pytest.mark.slow
def test_manipulation_latency_at_two_actions_per_second(tmp_path):
    """At EB-Manipulation's 2 actions per second a 500 ms decision costs one step of the 15."""
    options = ["--image-size", "32", "--episodes", "1", "--subset", "base"]
    latency = ["--latency", "fixed:500", "--latency-mode", "continue"]
    main(["manip", "--output", str(tmp_path), "--no-progress", *options, *latency])
    records = RunDir(tmp_path / "embodied-manip" / "expert").merged_records()
    assert len(records) == 4
    for record in records:
        result, lat = record["result"], record["result"]["latency"]
        assert lat["control_hz"] == 2.0 and lat["latencies_ms"] == [500.0] * result["policy_calls"]
        assert lat["held_steps"] == lat["steps"] <= result["policy_calls"] and result["steps"] <= 15


def test_each_family_s_latency_rate_is_its_env_s_action_rate():
    from benchmarks.embodied.config import FAMILIES
    from envs.manipulation.suite import EBManipulationSuiteEnv
    from envs.navigation.env import EBNavigationEnv

    assert FAMILIES["nav"].control_hz == EBNavigationEnv.metadata["render_fps"] == 4
    assert FAMILIES["manip"].control_hz == EBManipulationSuiteEnv.metadata["render_fps"] == 2
