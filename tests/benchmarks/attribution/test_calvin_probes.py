"""CALVIN state probes: questions about what the subtask names, from the play table's state, and a chain
whose records are the same with probes on and off."""

from __future__ import annotations

import gymnasium as gym
import numpy as np

import envs  # noqa: F401  (registers the envs)
from benchmarks.attribution import probe_lines
from benchmarks.attribution.calvin import calvin_questions, calvin_state
from benchmarks.attribution.questions import ProbeQuestion, score
from benchmarks.calvin import main
from benchmarks.core import RunDir, comparable
from benchmarks.datagen.corpus_format import box_1000
from benchmarks.scoring.metrics import iou
from envs.calvin import constants as C
from policies.backends.injection import ERROR_KINDS


def state(task, scene_obs=(0.0, 0.0, 0.0, 0.0, 0.0, 0.0), tcp=(0.0, -0.1, 0.6), columns=None, boxes=None):
    return {
        "boxes_1000": boxes or {},
        "task": task,
        "scene_obs": list(scene_obs),
        "tcp": list(tcp),
        "blocks": {"red": [0.2, -0.1, 0.46], "blue": [-0.1, 0.05, 0.46], "pink": [0.3, -0.12, 0.46]},
        "columns_px": columns or {"gripper": 100.0, "red": 140.0, "blue": 60.0, "pink": 150.0},
    }


def answers(questions):
    out = {}
    for q in questions:
        out[q.kind] = q.options[ord(q.key) - 65] if q.task == "mcq" else q.key
    return out


def _segmented(table, color):
    """The block's own pixels in the static image (PyBullet's segmentation, independent of the projection)."""
    cameras, spec = table.sim.cameras, C.STATIC_CAMERA
    _, _, _, _, seg = cameras.p.getCameraImage(
        spec.width, spec.height, cameras._static_view, cameras._projection["static"], renderer=cameras.flag
    )
    return np.asarray(seg).reshape(spec.height, spec.width) == table.sim.scene.blocks[color]


def test_the_block_box_is_where_the_block_is_in_the_rendered_image():
    env = gym.make("SpatialArena/CalvinPlayTable-v0")
    try:
        env.reset(seed=3)
        table = env.unwrapped
        seen = 0
        for color in ("red", "blue", "pink"):
            # the state boxes the block the task names
            table.evaluate = lambda color=color: {"task": f"lift_{color}_block_table"}
            box = calvin_state(env)["boxes_1000"].get(color)
            pixels = box_1000(_segmented(table, color))
            if box is None:  # hidden (behind the cabinet's door) or out of view
                continue
            seen += 1
            cell = (
                1000 // C.STATIC_CAMERA.width
            )  # the rasteriser's pixel centres vs the corners' exact bounds
            assert all(box[i] <= pixels[i] + cell for i in (0, 1)) and all(
                box[i] >= pixels[i] - cell for i in (2, 3)
            )
            assert iou(np.divide(box, 1000), np.divide(pixels, 1000)) >= 0.5
        assert seen >= 1
    finally:
        env.close()


def test_a_box_probe_scores_the_gold_box_one_and_a_corrupted_one_low():
    (question,) = [
        q
        for q in calvin_questions(
            state("lift_red_block_table", boxes={"red": [520, 610, 600, 700]}), np.random.default_rng(0)
        )
        if q.kind == "block_box"
    ]
    assert (
        isinstance(question, ProbeQuestion)
        and question.task == "box"
        and question.key == (520, 610, 600, 700)
    )
    item = question.item("0.0")
    assert (
        "Bounding Box: [x1, y1, x2, y2]" in item.question
        and item.answer == "Bounding Box: [520, 610, 600, 700]"
    )
    assert score(item, item.answer).score == 1.0
    corrupt, _ = ERROR_KINDS["wrong_answer"]
    for seed in range(5):
        assert score(item, corrupt(item.answer, np.random.default_rng(seed))).score < 0.5
    assert score(item, "I cannot tell.").score == 0.0


def test_questions_ask_about_what_the_task_names_from_the_state():
    rng = np.random.default_rng(0)
    red = answers(calvin_questions(state("lift_red_block_table"), rng))
    assert red["block_side"] == "right" and red["block_in_cabinet"] == "no"
    assert red["block_distance"].value == round(float(np.linalg.norm([0.2, 0.0, -0.14])), 2)
    assert set(red) == {
        "block_distance",
        "block_side",
        "block_in_cabinet",
    }  # no box: the block is not visible
    boxed = answers(calvin_questions(state("lift_red_block_table", boxes={"red": [500, 600, 580, 690]}), rng))
    assert boxed["block_box"] == (500, 600, 580, 690)  # nothing about the drawer
    blue = answers(calvin_questions(state("push_blue_block_left"), rng))
    assert blue["block_side"] == "left" and blue["block_in_cabinet"] == "yes"
    assert answers(calvin_questions(state("open_drawer", (0, 0.22, 0, 0, 0, 0)), rng)) == {
        "drawer_open": "yes"
    }
    assert answers(calvin_questions(state("close_drawer", (0, 0.06, 0, 0, 0, 0)), rng)) == {}  # half open
    assert answers(calvin_questions(state("move_slider_right", (0.27, 0, 0, 0, 1, 0)), rng)) == {
        "slider_left": "yes"
    }
    assert answers(calvin_questions(state("turn_on_lightbulb", (0, 0, 0, 0, 1, 0)), rng)) == {
        "light_on": "yes"
    }
    assert answers(calvin_questions(state("turn_off_led", (0, 0, 0, 0, 1, 0)), rng)) == {"light_on": "no"}
    near_red = state("stack_block", tcp=(0.2, -0.1, 0.55))
    assert answers(calvin_questions(near_red, rng)) == {"nearest_block": "the red block"}
    assert (
        answers(calvin_questions(state("stack_block"), rng)) == {}
    )  # blue 1.6 cm nearer than red: too close


def test_a_probed_chain_keeps_its_record_and_probes_its_subtask(tmp_path):
    args = ["--output", str(tmp_path), "--no-progress", "--policy", "mllm", "--model", "answer-key"]
    args += ["--num-sequences", "1", "--ep-len", "4"]
    main([*args, "--run-name", "off"])
    summary = main([*args, "--run-name", "on", "--probe", "decisions"])
    off, on = RunDir(tmp_path / "calvin" / "off"), RunDir(tmp_path / "calvin" / "on")
    assert [comparable(r) for r in on.merged_records()] == [comparable(r) for r in off.merged_records()]
    assert [d for d in on.load_decisions() if "probe" not in d] == off.load_decisions()
    (record,) = on.merged_records()
    lines = probe_lines(on.load_decisions())
    assert (
        lines and {line["subtask"] for line in lines} == {0} and all(line["score"] == 1.0 for line in lines)
    )
    task = record["result"]["extras"]["subtasks"][0]["extras"]["task"]
    group = summary.data["attribution"]["groups"][task]
    assert group["episodes"] == 1 and group["probe_accuracy"]["estimate"] == 1.0
