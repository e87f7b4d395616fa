"""The LIBERO scripted expert: goal parsing and grasp choice (no simulator), and slow closed-loop solves."""

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from policies.experts.libero_goals import Goal, choose_grasp, find_handle, goal_of_bddl, parse_goal

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
    # another drawer is closed before one is opened: opened first, it would stand out over the other
    goals = parse_goal([["Close", "c_1_bottom_region"], ["Open", "c_1_top_region"]])
    assert [str(g) for g in goals] == ["(close c_1_bottom_region)", "(open c_1_top_region)"]


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


# LIBERO's moka pot: its collision geoms in its own frame (body, spout at -y, handle at +y, lid knob)
MOKA_POT = [
    ((-0.025, -0.025, -0.066), (0.025, 0.025, 0.067)),
    ((-0.025, -0.031, -0.066), (0.025, -0.021, 0.067)),
    ((-0.025, 0.025, -0.066), (0.025, 0.035, 0.067)),
    ((0.02, -0.005, -0.066), (0.041, 0.03, 0.067)),
    ((-0.04, -0.032, -0.066), (-0.019, 0.003, 0.067)),
    ((0.018, -0.031, -0.066), (0.041, 0.003, 0.067)),
    ((-0.041, -0.002, -0.066), (-0.018, 0.032, 0.067)),
    ((-0.018, -0.042, 0.018), (0.018, -0.03, 0.067)),
    ((-0.008, -0.056, 0.032), (0.008, -0.042, 0.06)),
    ((-0.01, 0.034, 0.039), (0.01, 0.049, 0.066)),
    ((-0.007, 0.044, 0.053), (0.007, 0.072, 0.067)),
    ((-0.007, 0.06, 0.039), (0.007, 0.091, 0.068)),
    ((-0.007, 0.054, 0.0), (0.007, 0.091, 0.056)),
    ((-0.006, 0.046, -0.01), (0.007, 0.07, 0.014)),
    ((-0.005, -0.007, 0.063), (0.005, 0.005, 0.086)),
]


def _boxes(rows):
    return [(np.array(lo), np.array(hi)) for lo, hi in rows]


def test_a_handle_is_a_narrow_part_reaching_past_the_other_side_and_is_gripped_across():
    handle = find_handle(_boxes(MOKA_POT), (0, 1))
    assert handle is not None and handle.across == 0  # fingers close along x, across the 1.4 cm handle
    # halfway along the part past the spout's reach (5.6 cm) to the handle's end (9.1 cm), 2 cm below its top
    np.testing.assert_allclose(handle.point, (0.0, 0.0735, 0.048), atol=1e-9)
    # the moka pot (8.2 cm across, 15 cm tall) is taken by it; without a handle it would be a rim grasp
    assert choose_grasp(0.082, 0.147, 0.152, handle=handle).kind == "handle"
    assert choose_grasp(0.082, 0.147, 0.152).kind == "rim"
    # a box, and a mug whose ear reaches 1.5 cm past its body, have none; a short handled object keeps the rim
    assert find_handle(_boxes([((-0.04, -0.02, 0.0), (0.04, 0.02, 0.02))]), (0, 1)) is None
    mug = [((-0.04, -0.04, 0.0), (0.04, 0.04, 0.09)), ((-0.005, 0.04, 0.02), (0.005, 0.055, 0.07))]
    assert find_handle(_boxes(mug), (0, 1)) is None
    short = find_handle(_boxes([*mug[:1], ((-0.005, 0.04, 0.02), (0.005, 0.07, 0.07))]), (0, 1))
    assert short is not None and short.reach == pytest.approx(0.03)  # a 3 cm handle on a low cup: rim
    assert choose_grasp(0.08, 0.11, 0.09, handle=short).kind == "rim"
    # a pan: low, but its handle reaches 16 cm past the far rim; the pan's own walls are not part of it
    pan = [((-0.097, -0.1, 0.0), (0.111, 0.1, 0.042)), ((0.126, -0.013, 0.029), (0.259, 0.013, 0.059))]
    long = find_handle(_boxes(pan), (0, 1))
    assert long is not None and long.across == 1 and long.point[0] == pytest.approx((0.097 + 0.259) / 2)
    assert choose_grasp(0.356, 0.2, 0.059, handle=long).kind == "handle"


# LIBERO's microwave door, closed (libero_90 task 35, world boxes): handle bar, two standoffs, the panel
MICROWAVE_DOOR = [
    ((-0.071, -0.114, 0.941), (-0.051, -0.094, 1.091)),
    ((-0.071, -0.145, 1.071), (-0.051, -0.095, 1.091)),
    ((-0.071, -0.145, 0.941), (-0.051, -0.095, 0.961)),
    ((-0.083, -0.157, 0.924), (0.176, -0.133, 1.108)),
]
HINGE_ANCHOR, HINGE_AXIS = np.array([0.176, -0.158, 1.016]), np.array([0.0, 0.0, 1.0])
MICROWAVE = {"default_open_ranges": [-2.094, -1.3], "default_close_ranges": [-0.005, 0.0]}


def test_a_hinged_door_is_swung_past_libero_s_threshold_from_its_handle_round_the_hinge():
    from policies.experts.libero import DOOR_STEP, door_arc, door_goal, door_grasp

    limits = np.array([-2.094, 0.0])
    assert door_goal("open", MICROWAVE, limits) == pytest.approx(-1.55)  # "open" is below -1.3
    assert door_goal("close", MICROWAVE, limits) == pytest.approx(0.1)  # pressed past the closed end
    grasp, across = door_grasp(_boxes(MICROWAVE_DOOR), HINGE_AXIS, HINGE_ANCHOR, -1.55)
    # the handle is the bar reaching farthest the way the door opens; gripped 2.5 cm below its top
    np.testing.assert_allclose(grasp, (-0.061, -0.104, 1.066), atol=1e-9)
    assert abs(across[0]) > 0.99 and across[2] == 0.0  # fingers close across the bar, horizontally
    arc = door_arc(grasp, across, HINGE_AXIS, HINGE_ANCHOR, -1.55)
    assert len(arc) == int(np.ceil(1.55 / DOOR_STEP))
    radius = np.linalg.norm((grasp - HINGE_ANCHOR)[:2])
    for point, axis in arc:  # on the circle about the hinge, at the grasp's height
        assert np.linalg.norm((point - HINGE_ANCHOR)[:2]) == pytest.approx(radius)
        assert point[2] == pytest.approx(grasp[2]) and np.linalg.norm(axis) == pytest.approx(1.0)
    end = Rotation.from_rotvec(HINGE_AXIS * -1.55).apply(grasp - HINGE_ANCHOR) + HINGE_ANCHOR
    np.testing.assert_allclose(arc[-1][0], end, atol=1e-9)
    np.testing.assert_allclose(arc[-1][1], Rotation.from_rotvec(HINGE_AXIS * -1.55).apply(across), atol=1e-9)


def test_a_knob_is_twisted_as_many_times_as_its_threshold_needs():
    from policies.experts.libero import TWIST, knob_twists

    stove = {"default_turnon_ranges": [0.5, 2.1], "default_turnoff_ranges": [-0.005, 0.0]}
    assert knob_twists("turnon", stove, 0.0) == 1  # 0.5 rad and the margin fit one twist
    # off is the very end of the range: a knob left at 1.67 rad needs three
    assert knob_twists("turnoff", stove, 1.67) == 3 and 3 * TWIST > 1.67
    assert knob_twists("turnoff", stove, 0.3) == 1 and knob_twists("turnon", stove, 2.0) == 1


def test_the_rest_of_a_door_s_swing_is_pushed_from_behind_its_panel_near_the_free_edge():
    from policies.experts.libero import DOOR_EDGE_INSET, door_push_start

    turn = Rotation.from_rotvec(HINGE_AXIS * -1.0)  # the door pulled 1 rad open
    corners = [
        turn.apply(
            np.array(
                [
                    [(lo, hi)[i][0], (lo, hi)[j][1], (lo, hi)[k][2]]
                    for i in (0, 1)
                    for j in (0, 1)
                    for k in (0, 1)
                ]
            )
            - HINGE_ANCHOR
        )
        + HINGE_ANCHOR
        for lo, hi in _boxes(MICROWAVE_DOOR)
    ]
    start, along = door_push_start(corners, HINGE_AXIS, HINGE_ANCHOR, -0.55)
    panel = corners[3] - HINGE_ANCHOR
    edge = max(np.linalg.norm(panel[:, :2], axis=1))
    lever = (start - HINGE_ANCHOR)[:2]
    motion = np.cross(HINGE_AXIS, [*lever, 0.0])[:2] * -1.0  # the way the door turns on
    # behind the panel (no corner of it is farther back along the motion), near its free edge, mid height
    assert float(lever @ motion) < min(float(c[:2] @ motion) for c in panel)
    assert np.linalg.norm(lever) == pytest.approx(edge - DOOR_EDGE_INSET, abs=0.01)
    assert start[2] == pytest.approx((0.924 + 1.108) / 2)
    far = panel[np.argmax(np.linalg.norm(panel[:, :2], axis=1))]
    np.testing.assert_allclose(along, [*far[:2] / np.linalg.norm(far[:2]), 0.0], atol=1e-9)  # along the panel


def test_the_wrist_turns_the_other_way_round_when_the_nearer_turn_runs_it_into_its_limit():
    from policies.experts.libero import Wrist, rotation_toward

    hand = np.diag([1.0, -1.0, -1.0])  # pointing down
    fingers = hand @ np.array([0.0, 1.0, 0.0])
    want = Rotation.from_rotvec([0.0, 0.0, 0.5]).apply(fingers)  # 0.5 rad about +z away
    assert np.allclose(rotation_toward(hand, fingers, want), [0.0, 0.0, 0.5])
    # the last joint turns the hand about -z: +0.5 rad about z takes it from -2.8 to -3.3, past -2.9
    wrist = Wrist(np.array([0.0, 0.0, -1.0]), -2.8, -2.9, 2.9)
    turn = rotation_toward(hand, fingers, want, wrist=wrist)
    assert np.allclose(turn, [0.0, 0.0, 0.5 - np.pi])
    assert wrist.allows(turn, 0.05) and not wrist.allows(np.array([0.0, 0.0, 0.5]), 0.05)
    # a hand already near the limit may hold still or turn away from it, not on toward it
    near = Wrist(wrist.axis, 2.88, -2.9, 2.9)
    assert near.allows(np.zeros(3), 0.05) and near.allows(np.array([0.0, 0.0, 0.3]), 0.05)
    assert not near.allows(np.array([0.0, 0.0, -0.01]), 0.05)
    # with room to spare the nearer turn stands
    assert np.allclose(
        rotation_toward(hand, fingers, want, wrist=Wrist(wrist.axis, 0.0, -2.9, 2.9)), [0, 0, 0.5]
    )


def test_the_wrist_limit_counts_the_base_s_yaw_toward_the_target():
    from policies.experts.libero import Wrist, base_yaw, rotation_toward

    # the base turns the shorter way round its vertical axis, whichever side the hand is on
    base = np.array([-0.66, 0.0, 0.9])
    assert base_yaw(base, np.array([-0.16, 0.0, 1.0]), np.array([-0.16, 0.5, 1.1])) == pytest.approx(
        np.pi / 4
    )
    assert base_yaw(base, np.array([-0.16, 0.5, 1.0]), np.array([-0.16, 0.0, 1.0])) == pytest.approx(
        -np.pi / 4
    )
    assert base_yaw(base, np.array([-1.16, 0.01, 1.0]), np.array([-1.16, -0.01, 1.0])) == pytest.approx(
        0.04, abs=1e-3
    )
    hand = np.diag([1.0, -1.0, -1.0])  # pointing down
    fingers = hand @ np.array([0.0, 1.0, 0.0])
    want = Rotation.from_rotvec([0.0, 0.0, 0.5]).apply(fingers)
    # the last joint turns the hand about -z: +0.5 rad about z takes it from -2.3 to -2.8, inside -2.9
    wrist = Wrist(np.array([0.0, 0.0, -1.0]), -2.3, -2.9, 2.9)
    assert np.allclose(rotation_toward(hand, fingers, want, wrist=wrist), [0.0, 0.0, 0.5])
    # but the base turning 0.4 rad clockwise on the way turns the wrist back to -2.7, and the turn
    # would end at -3.2, past the limit: the hand turns the other way round
    there = wrist.after_yaw(-0.4)
    assert there.q == pytest.approx(-2.7)
    assert np.allclose(rotation_toward(hand, fingers, want, wrist=there), [0.0, 0.0, 0.5 - np.pi])
    # the base turning the other way leaves the wrist more room: the nearer turn stands
    assert np.allclose(rotation_toward(hand, fingers, want, wrist=wrist.after_yaw(0.4)), [0, 0, 0.5])


def test_a_grip_keeps_the_wrist_s_room_for_the_twists_to_come_on_their_side():
    from policies.experts.libero import TWIST, Wrist, rotation_toward

    # libero_90 task 39 state 2, traced: over the stove's knob the wrist (turning the hand about -z) stands
    # at 0.39 rad; the nearer turn (-1.53 rad about z) ends at 1.92, the other (+1.61) at -1.22
    hand = np.diag([1.0, -1.0, -1.0])
    fingers = hand @ np.array([0.0, 1.0, 0.0])
    want = Rotation.from_rotvec([0.0, 0.0, -1.53]).apply(fingers)
    wrist = Wrist(np.array([0.0, 0.0, -1.0]), 0.39, -2.9, 2.9)
    assert np.allclose(rotation_toward(hand, fingers, want, wrist=wrist), [0.0, 0.0, -1.53])
    # two twists to turn it off (-TWIST about z each) would take the nearer grip to 3.42, past 2.9:
    # the hand grips the other way round, from where the twists end at 0.28
    later = wrist.turned(np.array([0.0, 0.0, -2 * TWIST]))
    assert later.q == pytest.approx(0.39 + 2 * TWIST)
    assert np.allclose(rotation_toward(hand, fingers, want, wrist=later), [0.0, 0.0, np.pi - 1.53])
    # twists the other way leave the nearer grip room
    assert np.allclose(
        rotation_toward(hand, fingers, want, wrist=wrist.turned(np.array([0, 0, 2 * TWIST]))), [0, 0, -1.53]
    )


def test_a_hand_rises_where_the_wrist_keeps_room_and_a_turned_hand_is_drawn_in_first():
    from types import SimpleNamespace

    from policies.experts.libero import OPEN, WRIST_ABOVE, WRIST_REACH, draw_in, rise_point

    # libero_goal task 3 state 0, traced: after pulling the drawer the hand, facing it (-y), rose to
    # 1.23 m at x = 0.02 while turning to point down; the elbow straightened against its limit and the
    # hand, sent back toward the robot, drifted away from it for 80 steps
    shoulder = np.array([-0.66, 0.0, 1.245])
    up = rise_point(shoulder, np.array([0.021, 0.065]), 1.228)
    assert np.linalg.norm(up + np.array([0, 0, WRIST_ABOVE]) - shoulder) == pytest.approx(WRIST_REACH)
    assert up[2] == 1.228 and up[0] < 0.021 - 0.04  # drawn in toward the shoulder, on its line
    assert np.cross(up[:2] - shoulder[:2], np.array([0.021, 0.065]) - shoulder[:2]) == pytest.approx(0)
    near = rise_point(shoulder, np.array([-0.2, 0.0]), 1.228)
    assert np.allclose(near, [-0.2, 0.0, 1.228])  # within reach: straight up
    facing = Rotation.from_euler("x", -90, degrees=True).as_matrix() @ np.diag([1.0, -1.0, -1.0])
    assert np.allclose(facing[:, 2], [0.0, -1.0, 0.0])  # the site's z axis: the fingers point along -y
    scene = SimpleNamespace(
        hand=lambda: np.array([0.021, 0.065, 1.09]),
        hand_rotation=lambda: facing,
        shoulder=lambda: shoulder,
        finger_axis=lambda: np.array([0.0, 0.0, 1.0]),
    )
    (first,) = draw_in(scene, 1.228, OPEN)  # first in at its height, still facing the drawer
    assert np.allclose(first.pos, [*up[:2], 1.09]) and np.allclose(first.approach, [0.0, -1.0, 0.0])
    scene.hand_rotation = lambda: np.diag([1.0, -1.0, -1.0])  # pointing down already: nothing to do
    assert draw_in(scene, 1.228, OPEN) == []


def test_fingers_closing_are_waited_for_until_they_stop_not_the_whole_settle():
    from types import SimpleNamespace

    from policies.experts.libero import CLOSED, GRIP_STEPS, OPEN, Tracker, Waypoint, Wrist

    gaps = iter([0.08, 0.07, 0.06, 0.05, 0.045, 0.044, 0.044, 0.044, 0.044, 0.044, 0.044, 0.044] * 3)
    scene = SimpleNamespace(
        hand=lambda: np.zeros(3),
        hand_rotation=lambda: np.diag([1.0, -1.0, -1.0]),
        finger_axis=lambda: np.array([0.0, -1.0, 0.0]),
        wrist=lambda toward=None: Wrist(np.array([0.0, 0.0, -1.0]), 0.0, -2.9, 2.9),
        finger_gap=lambda: next(gaps),
    )
    axis = np.array([0.0, 1.0, 0.0])
    grip = Tracker([Waypoint(np.zeros(3), axis, CLOSED, settle=12)], gripper=OPEN)
    steps = 0
    while not grip.done:
        grip.action(scene, np.eye(3))
        steps += 1
    assert steps == max(GRIP_STEPS, 8)  # the gap stops at the 6th step, still 2 steps later: not 13
    # a hold that does not change the gripper (an object left to swing) keeps its whole settle
    hold = Tracker([Waypoint(np.zeros(3), axis, CLOSED, settle=12)], gripper=CLOSED)
    steps = 0
    while not hold.done:
        hold.action(scene, np.eye(3))
        steps += 1
    assert steps == 13


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
        ("libero_90", 39, 1, "TurnOff: the stove's knob twisted back"),
        ("libero_90", 8, 0, "Open, then In: the bowl nudged out of the opening drawer's way first"),
        ("libero_90", 5, 0, "In an open drawer overhanging the object: tucked part way in, put, closed"),
        ("libero_90", 45, 1, "On a cook region: the pan by its handle, put within the arm's reach; TurnOn"),
        ("libero_90", 0, 0, "Close: the top drawer pushed shut along the slide"),
        ("libero_90", 35, 0, "Open: the microwave door (handle carried round the hinge, then pushed)"),
        ("libero_90", 33, 0, "Close: the open microwave door carried shut round the hinge"),
        ("libero_10", 8, 0, "two On goals on one region, moka pots by their handles, and TurnOn"),
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
