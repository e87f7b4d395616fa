"""The answer-key model's LIBERO plan source: the scripted expert's next action as SpatialTree primitives.

Fast: the conversion round-trips through the parser and LIBERO's OSC_POSE adapter (no simulator), and the
first answer for every goal type is a parseable plan the env turns into the expert's own first action (one
scene built without cameras, goals swapped in). Slow: a task solved end to end by ``--model answer-key``.
"""

import json

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from action_mapping import StepSizes, parse_plan, step_motion
from action_mapping.adapters import osc_pose_actions
from policies.experts.libero_plan import plan_step

SIZES = StepSizes(0.01, 0.05)  # LiberoEnv.plan_step_sizes
DOWN = np.diag([1.0, -1.0, -1.0])  # the hand pointing down (its z along -z of the base)
FACING = Rotation.from_euler("xyz", [0.0, np.pi / 2, 0.3]).as_matrix()  # turned toward a drawer
ONE_COUNT = np.sqrt(3) * 0.2  # one count along each hand axis, in OSC_POSE units along any base axis


def _answer_to_action(step, rotation, cap=10):
    """What the env runs for an answer: JSON text -> the parser -> LIBERO's adapter (one OSC action)."""
    text = json.dumps({"step_1": step.to_json()})
    plan = parse_plan(text, max_step_num=cap, max_steps=6)
    assert plan.errors == [] and len(plan.steps) == 1
    actions = osc_pose_actions(step_motion(plan.steps[0], SIZES), rotation)
    assert len(actions) == 1
    return actions[0]


@pytest.mark.parametrize("rotation", [DOWN, FACING], ids=["hand down", "hand facing a drawer"])
@pytest.mark.parametrize(
    "action",
    [
        [1.0, -1.0, 0.4, 0.0, 0.0, 0.0, -1.0],  # travel at full speed, fingers open
        [0.0, 0.0, -0.4, 0.0, 0.0, 0.0, -1.0],  # slow descent to a grasp
        [0.2, 0.1, 0.0, 0.0, 0.0, 0.6, 1.0],  # a knob twisted about the vertical, fingers closed
        [0.3, 0.0, 0.0, 0.2, -0.1, 0.1, 1.0],  # a drawer pulled while the hand turns
    ],
)
def test_a_step_runs_as_the_experts_action_in_one_control_step(action, rotation):
    action = np.array(action)
    run = _answer_to_action(plan_step(action, rotation, SIZES, 10), rotation)
    # half a count per hand axis: sqrt(3)/2 cm in any base direction (one count is 0.2 action units) ...
    half_counts = np.sqrt(3) / 2 * 0.2
    if np.abs(action[:3]).max() < 1.0 - half_counts:
        assert np.abs(run[:3] - action[:3]).max() <= half_counts + 1e-9
    else:  # ... or, at full speed, rounded up or down into one OSC action (at most 1 unit per axis)
        assert np.abs(run[:3]).max() <= 1.0 + 1e-9 and np.abs(run[:3] - action[:3]).max() <= ONE_COUNT
        assert run[:3] @ action[:3] / np.linalg.norm(run[:3]) / np.linalg.norm(action[:3]) > 0.97
    turn_error = Rotation.from_rotvec(run[3:6] * 0.5) * Rotation.from_rotvec(action[3:6] * 0.5).inv()
    assert turn_error.magnitude() <= np.sqrt(3) / 2 * SIZES.rotation + 1e-9
    assert run[6] == action[6]


def test_counts_are_capped_and_a_step_too_small_to_count_holds_with_the_gripper():
    big = np.array([1.0, 1.0, 1.0, 1.0, 1.0, 1.0, -1.0])
    step = plan_step(big, FACING, SIZES, cap=3)
    assert max(step.step_nums) == 3 and all(n <= 3 for n in step.step_nums)
    run = _answer_to_action(step, FACING, cap=3)
    assert run[:3] @ big[:3] > 0  # scaled down, not turned around
    tiny = plan_step(np.array([0.04, 0.0, -0.04, 0.0, 0.0, 0.02, 1.0]), DOWN, SIZES, 10)
    assert tiny.is_stop and tiny.gripper == 1  # one control step holding still, fingers closed
    assert np.allclose(_answer_to_action(tiny, DOWN), [0, 0, 0, 0, 0, 0, 1.0])


# ------------------------------------------------------------------------------------- on the simulator

STOVE_ON = 1.0  # rad: inside LIBERO's "on" range of the flat stove's knob (0.5..2.1)
DRAWER_OPEN = -0.15  # m: inside LIBERO's "open" range of the wooden cabinet's drawers (-0.16..-0.14)
GOALS = {  # as LIBERO parses them (lower case): the goals of libero_goal's tasks (one scene) and of libero_90 0 / 39 (the same fixtures)
    "In (bowl into the closed top drawer)": (
        [["in", "akita_black_bowl_1", "wooden_cabinet_1_top_region"]],
        {},
    ),
    "On (bowl on the plate)": ([["on", "akita_black_bowl_1", "plate_1"]], {}),
    "On, pushed (plate to the front of the stove)": (
        [["on", "plate_1", "main_table_stove_front_region"]],
        {},
    ),
    "Open (middle drawer)": ([["open", "wooden_cabinet_1_middle_region"]], {}),
    "Close (open top drawer)": (
        [["close", "wooden_cabinet_1_top_region"]],
        {"wooden_cabinet_1_top_level": DRAWER_OPEN},
    ),
    "TurnOn (stove)": ([["turnon", "flat_stove_1"]], {}),
    "TurnOff (stove on)": ([["turnoff", "flat_stove_1"]], {"flat_stove_1_button": STOVE_ON}),
}


@pytest.fixture(scope="module")
def goal_scene():
    pytest.importorskip("libero", reason="the libero extra is not installed")
    from envs.libero import make_libero_env

    env = make_libero_env("libero_goal", 7, image_size=16, cameras=False)  # "turn on the stove"
    yield env
    env.close()


def _start(env, joints):
    """Reset to initial state 0 and set the articulations ``joints`` (name -> qpos)."""
    obs, info = env.reset(seed=0, options={"init_state_index": 0})
    sim = env.raw_env.env.sim
    for joint, qpos in joints.items():
        sim.data.qpos[sim.model.get_joint_qpos_addr(joint)] = qpos
    sim.forward()
    return obs, info


@pytest.mark.parametrize("goal", list(GOALS))
def test_the_first_answer_for_every_goal_type_is_the_experts_first_action(goal_scene, goal, monkeypatch):
    from envs.wrappers import expand_plan_step
    from policies.base import EpisodeContext
    from policies.experts.libero import LiberoExpert
    from policies.registry import build_policy

    clauses, joints = GOALS[goal]
    monkeypatch.setitem(goal_scene.raw_env.env.parsed_problem, "goal_state", clauses)
    policy = build_policy("mllm", model="answer-key")  # the benchmark's prompt, parser and units
    policy.bind(goal_scene)
    expert = LiberoExpert()
    expert.bind(goal_scene)
    obs, info = _start(goal_scene, joints)
    context = EpisodeContext(instruction=goal, seed=0, info=info)
    expert.reset(context)
    policy.reset(context)
    wanted = expert.act(obs)
    plan = policy.act(obs)
    (call,) = policy.episode_calls()
    assert call["usable"] and call["errors"] == [], call
    assert not plan.steps[0].is_stop, f"{goal}: the first answer does not move: {call['text']}"
    (run,) = expand_plan_step(goal_scene, plan, 0)
    assert np.abs(run[:3] - wanted[:3]).max() <= ONE_COUNT and run[6] == wanted[6]


def test_a_goal_the_expert_does_not_know_is_refused_when_the_policy_binds(goal_scene, monkeypatch):
    from policies.registry import build_policy

    monkeypatch.setitem(goal_scene.raw_env.env.parsed_problem, "goal_state", [["Stack", "a_1", "b_1"]])
    with pytest.raises(ValueError, match="does not know the goal predicate 'Stack'"):
        build_policy("mllm", model="answer-key").bind(goal_scene)


@pytest.mark.slow  # one whole episode with both cameras: about half a minute on the shared 2-core machine
def test_answer_key_solves_a_libero_task_through_the_benchmark(tmp_path):
    """``--policy mllm --model answer-key`` on libero_goal task 7 (turn on the stove): the real prompt,
    parser, plan execution and LIBERO's goal check; one model call per control step, none unusable."""
    from benchmarks.libero import main

    summary = main(
        [
            *("--policy", "mllm", "--model", "answer-key", "--suite", "libero_goal", "--tasks", "7"),
            *("--trials-per-task", "1", "--image-size", "64", "--output", str(tmp_path), "--no-progress"),
        ]
    )
    assert summary.data["success_rate"] == 100.0
    calls = summary.data["model_calls"]
    assert calls["parse_errors"] == calls["fallbacks"] == 0 and calls["model_calls"] > 20
