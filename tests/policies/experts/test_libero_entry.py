"""The LIBERO expert's slots and roofed regions as geometry (no simulator): the turn that lays an object
along a slot, where its footprint clears the walls, and which side of a roofed region is open."""

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from policies.experts.libero_entry import entry_grip, footprint_spot, hand_front, is_slot, opening, slot_turn


def _boxes(rows):
    return [(np.array(lo, float), np.array(hi, float)) for lo, hi in rows]


# LIBERO's desk caddy, front compartment (libero_90 task 73, world boxes xy of the walls above its floor)
CADDY_WALLS = (
    np.array([[-0.404, -0.199], [-0.339, -0.342], [-0.473, -0.07], [-0.472, -0.206], [-0.339, -0.069]]),
    np.array([[-0.396, -0.065], [-0.331, 0.078], [-0.331, -0.058], [-0.332, -0.199], [-0.331, 0.084]]),
)
FRONT_CENTRE, FRONT_HALF = np.array([-0.371, -0.131, 0.928]), np.array([0.028, 0.062])


def test_a_slot_takes_an_object_lengthwise_either_way_round():
    # a book 2.9 x 11 cm is a slot's in the 5.6 x 12.4 cm front compartment and in the 12.4 cm square one
    book = np.array([0.0145, 0.055])
    assert is_slot(FRONT_HALF, book) and is_slot(np.array([0.062, 0.062]), book)
    assert not is_slot(np.array([0.1, 0.12]), book)  # a basket has room for it any way round
    # its long side along x, the slot's along y: a quarter turn, the nearer way round
    assert abs(slot_turn(np.array([1.0, 0.0]), FRONT_HALF)) == pytest.approx(np.pi / 2)
    assert slot_turn(np.array([np.cos(2.0), np.sin(2.0)]), FRONT_HALF) == pytest.approx(np.pi / 2 - 2.0)
    assert slot_turn(np.array([0.0, -1.0]), FRONT_HALF) == pytest.approx(0.0)  # already along it
    assert abs(slot_turn(np.array([np.cos(0.1), np.sin(0.1)]), np.array([0.1, 0.05]))) == pytest.approx(0.1)


def test_the_footprint_goes_where_it_clears_the_slot_s_walls_not_at_the_origin_s_centre():
    # the book's origin is 1.2 cm off its footprint's centre along its length (y): -6.7 .. +4.3 cm
    foot = (np.array([-0.0145, -0.067]), np.array([0.0145, 0.043]))
    spot = footprint_spot(FRONT_CENTRE, FRONT_HALF, foot, CADDY_WALLS)
    lo, hi = spot + foot[0], spot + foot[1]
    # inside the compartment's walls (x -0.396 .. -0.339, y -0.199 .. -0.07) with room on every side
    assert lo[0] > -0.396 and hi[0] < -0.339 and lo[1] > -0.199 and hi[1] < -0.07
    assert min(lo[0] + 0.396, -0.339 - hi[0], lo[1] + 0.199, -0.07 - hi[1]) > 0.005
    # and the origin stays inside LIBERO's region box
    assert np.all(np.abs(spot - FRONT_CENTRE[:2]) < FRONT_HALF)
    # put at the region's centre, the same footprint would touch the back wall (the failure traced)
    assert FRONT_CENTRE[1] + foot[0][1] < -0.197
    # no walls: the centre
    empty = (np.zeros((0, 2)), np.zeros((0, 2)))
    np.testing.assert_allclose(footprint_spot(FRONT_CENTRE, FRONT_HALF, foot, empty), FRONT_CENTRE[:2])


# LIBERO's microwave, door open (libero_10 task 9, world boxes): walls, back, roof, floor, panel, door
MICROWAVE = [
    ((-0.166, 0.271, 0.92), (-0.137, 0.47, 1.107)),
    ((0.07, 0.271, 0.92), (0.179, 0.47, 1.107)),
    ((-0.138, 0.44, 0.92), (0.069, 0.47, 1.107)),
    ((-0.137, 0.271, 1.088), (0.07, 0.44, 1.107)),
    ((-0.137, 0.271, 0.92), (0.07, 0.439, 0.944)),
    ((0.094, 0.249, 0.92), (0.179, 0.273, 1.107)),
    ((-0.193, 0.012, 0.924), (-0.167, 0.271, 1.108)),
]
TABLE = ((-0.6, -0.6, 0.8), (0.6, 0.6, 0.9))
HEATING = np.array([0.006, 0.369, 1.016])
ROBOT = np.array([-0.66, 0.0])


def _arrays(rows):
    return np.array([lo for lo, _ in rows], float), np.array([hi for _, hi in rows], float)


def test_a_roofed_region_opens_on_the_side_with_no_wall():
    op = opening(HEATING, _arrays([*MICROWAVE, TABLE]), _arrays(MICROWAVE), ROBOT - HEATING[:2])
    assert op is not None
    np.testing.assert_allclose(op.inward, [0.0, 1.0])  # in from the front (-y): the door swung aside
    assert op.face == pytest.approx(0.271) and op.back == pytest.approx(0.44)  # roof's edge, back wall
    assert (op.floor, op.roof) == (pytest.approx(0.944), pytest.approx(1.088))
    # side walls at x -0.137 and 0.07; lateral is -x here (the way in turned +90 degrees)
    np.testing.assert_allclose(op.lateral, [-1.0, 0.0])
    np.testing.assert_allclose(sorted(-np.array(op.sides)), [-0.137, 0.07], atol=1e-9)
    # the door closed (a wall across the front): no way in; no roof (a basket): nothing to do here
    shut = [*MICROWAVE, ((-0.167, 0.24, 0.924), (0.09, 0.27, 1.108))]
    assert opening(HEATING, _arrays([*shut, TABLE]), _arrays(shut), ROBOT - HEATING[:2]) is None
    open_top = MICROWAVE[:3] + MICROWAVE[4:]
    assert opening(HEATING, _arrays([*open_top, TABLE]), _arrays(open_top), ROBOT - HEATING[:2]) is None


# LIBERO's white and yellow mug (its frame, origin 1.8 cm off the body's axis toward the handle at +x):
# the body's base, two wall segments, and the handle's lower bar, outer bar and upper bar
MUG = [
    ((-0.059, -0.04, 0.0), (0.022, 0.041, 0.021)),
    ((-0.071, -0.053, 0.016), (-0.018, 0.053, 0.103)),
    ((-0.018, -0.053, 0.016), (0.034, 0.053, 0.103)),
    ((0.015, -0.009, 0.017), (0.065, 0.009, 0.035)),
    ((0.06, -0.009, 0.027), (0.068, 0.009, 0.085)),
    ((0.024, -0.009, 0.073), (0.068, 0.009, 0.086)),
]


def test_a_mug_is_gripped_on_its_handle_s_upper_bar_measured_from_its_base():
    turned = Rotation.from_euler("z", np.pi / 2).as_matrix()  # the handle pointing +y in the world
    grip = entry_grip(_boxes(MUG), turned)
    assert grip is not None
    point, across, out = grip
    # halfway along what protrudes past the body (3.4 .. 6.8 cm), in the upper bar's middle height
    np.testing.assert_allclose(point, [0.051, 0.0, 0.0795], atol=2e-3)
    np.testing.assert_allclose(out, [0.0, 1.0, 0.0], atol=1e-9)
    np.testing.assert_allclose(np.abs(across), [1.0, 0.0, 0.0], atol=1e-9)  # across the 1.8 cm bar
    # a bare cup (no handle) and a cup lying on its side give none
    assert entry_grip(_boxes(MUG[:3]), np.eye(3)) is None
    assert entry_grip(_boxes(MUG), Rotation.from_euler("x", np.pi / 2).as_matrix()) is None


def test_the_hand_s_reach_counts_only_its_parts_above_a_height():
    palm = [(np.array([-0.1, -0.03, -0.12]), np.array([0.1, 0.03, -0.03]))]  # site frame: behind the site
    down = np.diag([1.0, -1.0, -1.0])  # site z (where the fingers point) to world -z
    # pointing down, the palm reaches 3 cm either way along y, from 3 to 12 cm above the site
    assert hand_front(palm, down, np.array([0.0, 1.0, 0.0]), 0.05) == pytest.approx(0.03)
    assert hand_front(palm, down, np.array([0.0, 1.0, 0.0]), 0.2) == float("-inf")
    # tipped 0.6 rad toward +y (fingers down and forward), the palm leans back: less reach ahead
    tipped = Rotation.from_euler("x", 0.6).as_matrix() @ down
    assert hand_front(palm, tipped, np.array([0.0, 1.0, 0.0]), 0.05) < 0.0


@pytest.mark.slow
@pytest.mark.parametrize(
    ("suite", "task", "goal"),
    [
        ("libero_90", 73, "In a slot: the book turned along the caddy's narrow front compartment"),
        ("libero_10", 9, "In under a roof: the mug by its handle through the microwave's door, then Close"),
        ("libero_90", 42, "In under a roof: the frying pan by its handle under the shelf's board"),
        ("libero_90", 86, "In under a roof: a book held by its top edge, the hand level, onto the shelf"),
    ],
)
def test_expert_solves_slots_and_roofed_regions(suite, task, goal):
    from tests.policies.experts.test_libero import _solve

    record = _solve(suite, task, 0)
    assert record["success"], f"{suite} task {task} ({goal}) failed after {record['steps']} steps"
