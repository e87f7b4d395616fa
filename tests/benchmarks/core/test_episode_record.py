"""The one episode-record schema (benchmarks.core.episode_record): every family writes it, and records in the
shape written before it (per-family field names) are still read, by the summaries and on --resume."""

import json

import pytest

from benchmarks.calvin.chain import read_chain
from benchmarks.core import RunDir
from benchmarks.core.episode_record import READ_ALIASES, REQUIRED_FIELDS, ok_results, read_episode

# Records as each family wrote them before the shared schema (field names and values as written then).
OLD_LIBERO = {
    "suite": "libero_goal",
    "task_index": 3,
    "instruction": "open it",
    "init_state_index": 1,
    "seed": 5,
    "max_steps": 6,
    "num_steps_wait": 10,
    "success": False,
    "truncated": True,
    "steps": 6,
    "decisions": 6,
    "idle_steps": 0,
    "policy_stats": {"calls": 6.0},
    "wall_time_s": 0.5,
}
OLD_NAV = {
    "episode_id": "base/0",
    "subset": "base",
    "task_success": True,
    "num_steps": 7,
    "policy_calls": 3,
    "num_invalid_actions": 1,
    "num_idle_steps": 2,
    "final_distance": 0.4,
    "final_visibility": 1,
    "shortest_path_length": 6,
    "elapsed_s": 1.25,
    "policy_stats": {"model_calls": 3.0},
}
OLD_SUBTASK = {
    "task": "open_drawer",
    "instruction": "open the drawer",
    "success": True,
    "steps": 40,
    "time_s": 0.25,
    "policy_calls": 40,
    "idle_steps": 0,
    "policy_stats": {"attempts": 1.0},
}
OLD_CHAIN = {
    "tasks": ["open_drawer", "turn_on_led"],
    "num_completed": 1,
    "subtasks": [
        OLD_SUBTASK,
        {
            **OLD_SUBTASK,
            "task": "turn_on_led",
            "success": False,
            "steps": 360,
            "time_s": 1.5,
            "policy_calls": 360,
            "idle_steps": 2,
        },
    ],
    "initial_state": {"slider": "left"},
}


def test_old_names_are_read_through_the_aliases():
    libero, nav = read_episode(OLD_LIBERO), read_episode(OLD_NAV)
    assert (libero["policy_calls"], libero["steps"]) == (6, 6)
    assert libero["extras"]["truncated"] and libero["extras"]["task_index"] == 3 and "decisions" not in libero
    assert (nav["success"], nav["steps"], nav["idle_steps"]) == (True, 7, 2)
    # old wall times go
    assert not {"wall_time_s", "elapsed_s"} & {
        *libero,
        *libero["extras"],
        *nav,
        *nav["extras"],
    }
    assert nav["extras"] == {
        "episode_id": "base/0",
        "subset": "base",
        "num_invalid_actions": 1,
        "final_distance": 0.4,
        "final_visibility": 1,
        "shortest_path_length": 6,
    }
    assert all(set(REQUIRED_FIELDS) <= set(r) for r in (libero, nav))
    assert read_episode(libero) == libero  # a record in the schema reads as it is
    assert {old for olds in READ_ALIASES.values() for old in olds} == {
        "task_success",
        "num_steps",
        "decisions",
        "num_idle_steps",
    }


def test_an_old_chain_gets_its_totals_from_its_subtasks():
    chain = read_chain(OLD_CHAIN)
    assert (chain["success"], chain["steps"], chain["policy_calls"], chain["idle_steps"]) == (
        False,
        400,
        400,
        2,
    )
    assert "wall_time_s" not in chain and "timing" not in chain and chain["policy_stats"] == {"attempts": 2.0}
    assert chain["extras"]["num_completed"] == 1 and chain["extras"]["initial_state"] == {"slider": "left"}
    assert [s["extras"]["task"] for s in chain["extras"]["subtasks"]] == ["open_drawer", "turn_on_led"]
    assert read_chain(json.loads(json.dumps(chain))) == chain


def test_a_mapping_that_is_no_record_is_one_clear_error():
    with pytest.raises(ValueError, match="not an episode record: no success, steps"):
        read_episode({"reward": 1.0})
    records = [{"status": "error", "result": None}, {"status": "ok", "result": OLD_NAV}]
    assert [r["steps"] for r in ok_results(records)] == [7]


def _rewrite_results(run_dir: RunDir, old_shape) -> None:
    """Rewrite every record's result into the pre-schema shape, as an older version of the project left it."""
    lines = [json.loads(line) for line in run_dir.records.read_text().splitlines()]
    run_dir.records.write_text(
        "".join(json.dumps({**r, "result": old_shape(r["result"])}) + "\n" for r in lines)
    )


def _old_nav(result):
    e = result["extras"]
    return {
        "episode_id": e["episode_id"],
        "subset": e["subset"],
        "task_success": result["success"],
        "num_steps": result["steps"],
        "policy_calls": result["policy_calls"],
        "num_invalid_actions": e["num_invalid_actions"],
        "num_idle_steps": result["idle_steps"],
        "final_distance": e["final_distance"],
        "final_visibility": e["final_visibility"],
        "shortest_path_length": e["shortest_path_length"],
        "elapsed_s": 1.5,
        "policy_stats": result["policy_stats"],
    }


def _old_chain(result):
    subtasks = [
        {
            "task": s["extras"]["task"],
            "instruction": s["extras"]["instruction"],
            "success": s["success"],
            "steps": s["steps"],
            "time_s": 0.25,
            "policy_calls": s["policy_calls"],
            "idle_steps": s["idle_steps"],
            "policy_stats": s["policy_stats"],
        }
        for s in result["extras"]["subtasks"]
    ]
    e = result["extras"]
    return {
        "tasks": e["tasks"],
        "num_completed": e["num_completed"],
        "subtasks": subtasks,
        "initial_state": e["initial_state"],
    }


def test_eb_navigation_resumes_a_folder_of_old_records(tmp_path):
    from benchmarks.embodied import main

    common = [
        "nav",
        "--no-progress",
        "--image-size",
        "64",
        "--episodes",
        "1",
        "--subset",
        "base,long_horizon",
        "--policy",
        "random",
    ]
    fresh = main([*common, "--output", str(tmp_path / "fresh")])
    main([*common, "--output", str(tmp_path / "old"), "--limit", "1"])
    old = RunDir(tmp_path / "old" / "embodied-nav" / "random")
    _rewrite_results(old, _old_nav)
    assert "task_success" in old.records.read_text()
    resumed = main([*common, "--output", str(tmp_path / "old"), "--resume"])
    assert resumed.data == fresh.data and resumed.data["subsets"]["base"]["avg_steps"] > 0
    (first, second) = old.merged_records()
    assert "task_success" in first["result"] and second["result"]["extras"]["subset"] == "long_horizon"


def test_calvin_resumes_a_folder_of_old_chain_records(tmp_path):
    from benchmarks.calvin import main

    common = ["--no-progress", "--policy", "random", "--ep-len", "3", "--cameras", "none"]
    fresh = main([*common, "--output", str(tmp_path / "fresh"), "--num-sequences", "2"])
    main([*common, "--output", str(tmp_path / "old"), "--num-sequences", "1"])
    old = RunDir(tmp_path / "old" / "calvin" / "random")
    _rewrite_results(old, _old_chain)
    assert '"time_s"' in old.records.read_text()
    resumed = main([*common, "--output", str(tmp_path / "old"), "--num-sequences", "2", "--resume"])
    assert resumed.data == fresh.data and sum(v["total"] for v in resumed.data["task_info"].values()) == 2
    assert json.loads((old.path / "results.json").read_text()) == json.loads(
        (tmp_path / "fresh" / "calvin" / "random" / "results.json").read_text()
    )


def _keys_at_any_depth(value) -> set[str]:
    if isinstance(value, dict):
        return set(value) | {k for v in value.values() for k in _keys_at_any_depth(v)}
    if isinstance(value, list):
        return {k for v in value for k in _keys_at_any_depth(v)}
    return set()


def test_timing_lives_under_the_records_timing_never_in_its_result(tmp_path):
    """As the run-folder docs say: wall times and model latency sit in the record's `timing` (with the unit's
    wall_s and worker); `result` holds what the episode did, identical from run to run."""
    from benchmarks.calvin import main

    args = [
        "--no-progress",
        "--policy",
        "mllm",
        "--model",
        "answer-key",
        "--tasks",
        "open_drawer",
        "--num-sequences",
        "1",
        "--ep-len",
        "2",
    ]
    main([*args, "--output", str(tmp_path / "a")])
    (record,) = RunDir(next((tmp_path / "a" / "calvin").iterdir())).merged_records()
    assert record["status"] == "ok", record["error"]
    assert not {"wall_time_s", "time_s", "elapsed_s", "model_latency_s", "timing"} & _keys_at_any_depth(
        record["result"]
    )
    timing = record["timing"]
    assert {"wall_s", "worker", "episode_s", "model_latency_s", "subtasks"} <= set(timing)
    assert [set(t) for t in timing["subtasks"]] == [{"episode_s", "model_latency_s"}]
    assert (
        timing["episode_s"] >= timing["subtasks"][0]["episode_s"] >= timing["subtasks"][0]["model_latency_s"]
    )
