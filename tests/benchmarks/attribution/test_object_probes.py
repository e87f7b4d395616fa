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


def _pinhole(env, points):
    """An independent pinhole model of the front camera (MuJoCo's pose and vertical fov): (column, row)."""
    model, data = env.scene.mj_model, env.scene.mj_data
    cam = model.camera("eb_front").id
    rel = (np.atleast_2d(points) - data.cam_xpos[cam]) @ data.cam_xmat[cam].reshape(3, 3)
    size = env.observation_space["front_rgb"].shape[0]
    f = (size / 2) / np.tan(np.radians(model.cam_fovy[cam]) / 2)
    return np.c_[size / 2 + f * rel[:, 0] / -rel[:, 2], size / 2 - f * rel[:, 1] / -rel[:, 2]] * 1000 / size


def test_the_object_box_is_where_the_object_is_in_the_front_image():
    from benchmarks.attribution.manipulation import manip_state
    from envs.manipulation.env import EBManipulationEnv

    env = EBManipulationEnv("pick", image_size=64)
    try:
        env.reset(seed=0)
        state = manip_state(env)
        target = state["objects"][0]
        x1, y1, x2, y2 = state["boxes_1000"][target["name"]]
        slot = next(
            s for s in env.task.goal().values() if isinstance(s, str) and s in env.task.snapshot()["objects"]
        )
        lo, hi = env.task.bounds(slot)
        corners = np.array(
            [[a, b, c] for a in (lo[0], hi[0]) for b in (lo[1], hi[1]) for c in (lo[2], hi[2])]
        )
        hull = _pinhole(env, corners)
        cell = 1000 / 64  # the box's pixel edges vs the corners' exact bounds
        assert hull[:, 0].min() - cell <= x1 < x2 <= hull[:, 0].max() + cell
        assert hull[:, 1].min() - cell <= y1 < y2 <= hull[:, 1].max() + cell
        (u, v) = _pinhole(env, target["position"])[0]
        assert x1 <= u <= x2 and y1 <= v <= y2  # the object's centre projects inside its box
        (question,) = [q for q in manip_questions(state, np.random.default_rng(0)) if q.kind == "object_box"]
        assert question.key == (x1, y1, x2, y2) and target["name"] in question.text
    finally:
        env.close()
