"""EB-Manipulation and LIBERO state probes: questions about the goal's (the task's) objects from the state, and
probed episodes whose records are the same as without probes."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks.attribution import probe_lines
from benchmarks.attribution.manipulation import manip_questions
from benchmarks.core import RunDir, comparable
from benchmarks.embodied import main


def answers(questions):
    return {q.kind: q.options[ord(q.key) - 65] if q.task == "mcq" else q.key for q in questions}


def test_questions_ask_about_the_goals_objects_from_the_state():
    state = {
        "objects": [
            {"name": "the black moon", "position": [0.1, 0.0, 0.8]},
            {"name": "the orange container", "position": [0.3, 0.2, 0.8]},
        ],
        "grip_position": [0.1, 0.0, 1.0],
        "gripper_closed": False,
    }
    got = answers(manip_questions(state, np.random.default_rng(0)))
    assert got == {
        "object_distance": got["object_distance"],
        "closer_to_gripper": "the black moon",
        "gripper_closed": "no",
    }
    assert (got["object_distance"].value, got["object_distance"].unit) == (0.2, "m")
    state["grip_position"] = [0.2, 0.1, 0.8]  # 14 cm from each: no clear answer
    assert "closer_to_gripper" not in answers(manip_questions(state, np.random.default_rng(0)))


@pytest.mark.slow
def test_a_probed_manipulation_episode_keeps_its_record(tmp_path):
    from envs.manipulation.episodes import make_episodes, save_episodes

    save_episodes(make_episodes("pick", "base", 1, 0), tmp_path / "one.jsonl")
    args = ["manip", "--output", str(tmp_path), "--no-progress", "--image-size", "64"]
    args += ["--episodes-file", str(tmp_path / "one.jsonl"), "--policy", "mllm", "--model", "answer-key"]
    main([*args, "--run-name", "off"])
    summary = main([*args, "--run-name", "on", "--probe", "decisions"])
    off, on = RunDir(tmp_path / "embodied-manip" / "off"), RunDir(tmp_path / "embodied-manip" / "on")
    assert [comparable(r) for r in on.merged_records()] == [comparable(r) for r in off.merged_records()]
    lines = probe_lines(on.load_decisions())
    assert lines and all(line["score"] == 1.0 for line in lines)
    assert summary.data["attribution"]["groups"]["all"]["probe_accuracy"]["estimate"] == 1.0


def test_libero_names_objects_and_regions_as_words():
    from benchmarks.attribution.libero import object_name

    assert object_name("akita_black_bowl_1") == "the akita black bowl"
    assert object_name("wooden_cabinet_1_top_region") == "the wooden cabinet top region"


@pytest.mark.slow
def test_a_probed_libero_episode_keeps_its_record(tmp_path):
    from benchmarks.libero import main as libero

    args = ["--suite", "libero_goal", "--tasks", "3", "--trials-per-task", "1", "--max-steps", "8"]
    args += ["--image-size", "64", "--no-progress", "--output", str(tmp_path), "--policy", "mllm"]
    args += ["--model", "answer-key"]
    libero([*args, "--run-name", "off"])
    summary = libero([*args, "--run-name", "on", "--probe", "every:4"])
    off, on = RunDir(tmp_path / "libero" / "off"), RunDir(tmp_path / "libero" / "on")
    assert [comparable(r) for r in on.merged_records()] == [comparable(r) for r in off.merged_records()]
    lines = probe_lines(on.load_decisions())
    assert sorted({line["decision"] for line in lines}) == [0, 4]  # every:4 of 8 one-step decisions
    assert {line["kind"] for line in lines} == {"object_distance", "closer_to_gripper"}
    assert summary.data["attribution"]["groups"]["3"]["probe_accuracy"]["estimate"] == 1.0
