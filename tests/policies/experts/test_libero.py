"""The LIBERO scripted expert: goal parsing and grasp choice (no simulator), and slow closed-loop solves."""

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from policies.experts.libero_goals import Goal, choose_grasp, goal_of_bddl, parse_goal

LIBERO_10_MICROWAVE = """(define (problem LIBERO_Kitchen_Tabletop_Manipulation)
  (:domain robosuite)
  (:language put the yellow and white mug in the microwave and close it)
  (:objects white_yellow_mug_1 - white_yellow_mug)
  (:goal
    (And (In white_yellow_mug_1 microwave_1_heating_region) (Close microwave_1))
  )
)
"""


def test_goal_of_bddl_reads_the_conjunction_and_parse_orders_it():
    clauses = goal_of_bddl(LIBERO_10_MICROWAVE)
    assert clauses == [["In", "white_yellow_mug_1", "microwave_1_heating_region"], ["Close", "microwave_1"]]
    # a single clause without And, and the order a person works in: open, put, close, switch
    assert goal_of_bddl("(:goal (On a_1 b_1))") == [["On", "a_1", "b_1"]]
    goals = parse_goal(
        [
            ["TurnOn", "stove_1"],
            ["Close", "d_1"],
            ["On", "a_1", "b_1"],
            ["Open", "d_1"],
            ["In", "c_1", "d_1_region"],
        ]
    )
    assert [g.predicate for g in goals] == ["open", "on", "in", "close", "turnon"]
    assert goals[1] == Goal("on", ("a_1", "b_1")) and str(goals[1]) == "(on a_1 b_1)"


@pytest.mark.parametrize(
    ("clauses", "message"),
    [
        ([["Stack", "a_1", "b_1"]], "does not know the goal predicate 'Stack'"),
        ([["In", "a_1"]], "In takes 2 argument(s), got 1"),
        ([["Open", "wooden_cabinet_1_middle_region"]], "cannot solve the goal predicate 'Open' yet"),
        ([["Up", "a_1"]], "does not know the goal predicate 'Up'"),
        ([], "the BDDL goal is empty"),
    ],
)
def test_bad_goals_are_one_line_errors_naming_the_predicate(clauses, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")) as error:
        parse_goal(clauses, solved=frozenset({"in", "on"}))
    assert "\n" not in str(error.value)


@pytest.mark.parametrize(
    "text", ["(:goal (And (In a b)", "(define (problem x))", "(:goal (And (In a (b c))))"]
)
def test_malformed_bddl_goals_are_refused(text):
    with pytest.raises(ValueError, match="goal"):
        goal_of_bddl(text)


@pytest.mark.parametrize(
    ("size", "kind"),
    [
        ((0.081, 0.043, 0.018), "top"),  # cream cheese box: across its 4.3 cm side
        ((0.065, 0.065, 0.072), "top"),  # alphabet soup can
        ((0.043, 0.044, 0.157), "upper"),  # wine bottle: around its top part
        ((0.060, 0.060, 0.140), "upper"),  # milk carton
        ((0.107, 0.107, 0.051), "rim"),  # akita black bowl, wider than the gripper
        ((0.137, 0.138, 0.019), "rim"),  # plate
    ],
)
def test_grasp_choice_follows_the_shape(size, kind):
    choice = choose_grasp(*size)
    assert choice.kind == kind
    assert 0 < choice.height < size[2]  # the grasp is within the object's height


def test_rotation_toward_turns_the_fingers_onto_the_axis_and_keeps_the_hand_down():
    from policies.experts.libero import rotation_toward

    # a hand pointing down (site z to world -z), fingers closing along its y axis, yawed by 0.4 rad
    hand = Rotation.from_euler("z", 0.4).as_matrix() @ np.diag([1.0, -1.0, -1.0])
    fingers = hand @ np.array([0.0, 1.0, 0.0])
    want = np.array([np.cos(1.2), np.sin(1.2), 0.0])
    turn = rotation_toward(hand, fingers, want)
    turned = Rotation.from_rotvec(turn).as_matrix() @ hand
    # the fingers start at -(pi/2 - 0.4) rad: -want (at 1.2 - pi) is the nearer way round, 0.77 rad, not 2.37
    assert np.allclose(turned @ np.array([0.0, 1.0, 0.0]), -want, atol=1e-9)
    assert np.linalg.norm(turn) == pytest.approx(np.pi - 1.2 - (np.pi / 2 - 0.4))
    assert np.allclose(turned @ np.array([0.0, 0.0, 1.0]), [0.0, 0.0, -1.0], atol=1e-9)
    # the closing axis the other way round is the same grasp: the same hand pose
    back = Rotation.from_rotvec(rotation_toward(hand, fingers, -want)).as_matrix() @ hand
    assert np.allclose(back, turned, atol=1e-9)
    # facing a drawer: fingers pointing along -y, closing up-down
    front = (
        Rotation.from_rotvec(
            rotation_toward(hand, fingers, np.array([0.0, 0.0, 1.0]), np.array([0.0, -1.0, 0.0]))
        ).as_matrix()
        @ hand
    )
    assert np.allclose(front @ np.array([0.0, 0.0, 1.0]), [0.0, -1.0, 0.0], atol=1e-9)
    assert np.allclose(np.abs(front @ np.array([0.0, 1.0, 0.0])), [0.0, 0.0, 1.0], atol=1e-9)


def test_the_handle_is_the_geom_reaching_farthest_along_the_opening_direction():
    from policies.experts.libero import handle_of

    # LIBERO's wooden cabinet middle drawer (world boxes): front face, a side wall, two standoffs, the bar
    face = (np.array([-0.091, -0.169, 0.984]), np.array([0.128, -0.164, 1.053]))
    wall = (np.array([-0.09, -0.334, 0.988]), np.array([-0.084, -0.172, 1.05]))
    standoffs = [(np.array([x, -0.169, 1.01]), np.array([x + 0.01, -0.148, 1.021])) for x in (-0.012, 0.052)]
    bar = (np.array([-0.02, -0.148, 1.007]), np.array([0.069, -0.133, 1.024]))
    centre, outer = handle_of([face, wall, *standoffs, bar], np.array([0.0, 1.0, 0.0]))
    np.testing.assert_allclose(centre, [0.0245, -0.1405, 1.0155])
    assert outer == pytest.approx(-0.133)


def test_expert_refuses_a_task_it_cannot_solve_before_any_episode(tmp_path, capsys, monkeypatch):
    import envs.libero.tasks
    from benchmarks.libero import main

    bddl = tmp_path / "stack.bddl"
    bddl.write_text("(define (problem p) (:goal (And (Stack a_1 b_1))))")
    task = envs.libero.tasks.LiberoTask("libero_goal", 0, "stack_it", "stack it", bddl, tmp_path / "init")
    monkeypatch.setattr(envs.libero.tasks, "load_task", lambda suite, index: task)
    with pytest.raises(SystemExit) as exit_:
        main(
            [
                "--policy",
                "expert",
                "--suite",
                "libero_goal",
                "--tasks",
                "0",
                "--output",
                str(tmp_path),
                "--no-progress",
            ]
        )
    err = capsys.readouterr().err.strip()
    assert exit_.value.code == 2 and len(err.splitlines()) == 1
    assert "libero_goal task 0 (stack_it)" in err and "goal predicate 'Stack'" in err


def _solve(suite: str, task: int, init_state: int) -> dict:
    from benchmarks.libero.episode import run_episode
    from envs.libero import MAX_STEPS, make_libero_env
    from policies.experts.libero import LiberoExpert

    env = make_libero_env(suite, task, cameras=False)
    try:
        expert = LiberoExpert()
        expert.bind(env)
        return run_episode(
            env,
            expert,
            init_state_index=init_state,
            max_steps=MAX_STEPS[suite],
            num_steps_wait=10,
            seed=init_state,
        )
    finally:
        env.close()


@pytest.mark.slow
@pytest.mark.parametrize(
    ("suite", "task", "init_state", "goal"),
    [
        ("libero_object", 0, 0, "In: the alphabet soup can in the basket (top grasp)"),
        ("libero_object", 7, 0, "In: the milk carton in the basket (upper grasp)"),
        ("libero_spatial", 2, 0, "On: the black bowl on the plate (rim grasp)"),
        (
            "libero_goal",
            5,
            0,
            "On a region at the object's level: the plate pushed to the front of the stove",
        ),
        ("libero_goal", 0, 0, "Open: the middle drawer (handle grasp, pulled along the slide)"),
        ("libero_goal", 3, 2, "In a closed drawer: opened first, then the bowl put in"),
        ("libero_goal", 7, 0, "TurnOn: the stove (knob grasped and twisted)"),
        ("libero_90", 0, 0, "Close: the top drawer pushed shut along the slide"),
        ("libero_10", 0, 0, "two In goals: the soup and the tomato sauce in the basket"),
    ],
)
def test_expert_solves_one_task_of_each_goal_type(suite, task, init_state, goal):
    record = _solve(suite, task, init_state)
    assert record["success"], f"{suite} task {task} ({goal}) failed after {record['steps']} steps"


@pytest.mark.slow
def test_expert_is_deterministic_for_a_seed():
    first, second = _solve("libero_goal", 7, 0), _solve("libero_goal", 7, 0)
    assert first["success"] and first["steps"] == second["steps"]
