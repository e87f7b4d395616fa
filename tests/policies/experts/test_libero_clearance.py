"""Room for the LIBERO expert's hand: rim side, region inset, drawer clearance (plane geometry, no simulator)."""

import numpy as np
import pytest

from policies.experts.libero_clearance import (
    DRAWER_MARGIN,
    PALM_HALF,
    REGION_INSET,
    drawer_clearance,
    hand_blocked,
    inner_half,
    palm_blocked,
    palm_reach,
    push_point,
    rect_meets_boxes,
    rim_side,
)

TABLE = (np.array([-1.0, -1.0, 0.85]), np.array([1.0, 1.0, 0.90]))


def _boxes(*boxes):
    return np.array([b[0] for b in boxes], float), np.array([b[1] for b in boxes], float)


def test_a_turned_rectangle_meets_a_box_only_where_it_reaches():
    lows, highs = _boxes(([0.10, -0.01, 0], [0.12, 0.01, 1]))
    # 20 cm long along x reaches the box 10 cm away; turned 90 degrees it is only 4 cm wide there
    assert rect_meets_boxes(np.zeros(2), np.array([1.0, 0.0]), (0.11, 0.02), lows, highs)[0]
    assert not rect_meets_boxes(np.zeros(2), np.array([0.0, 1.0]), (0.11, 0.02), lows, highs)[0]
    # on the diagonal the corner stays short of a box beside the axis
    diagonal = np.array([1.0, 1.0]) / np.sqrt(2)
    assert not rect_meets_boxes(np.zeros(2), diagonal, (0.11, 0.02), lows, highs)[0]


def test_the_hand_is_blocked_by_what_stands_above_the_palm_not_by_the_table():
    lows, highs = _boxes(TABLE)
    site = np.array([0.0, 0.0, 0.94])
    assert not hand_blocked(site, np.array([1.0, 0.0]), lows, highs)
    # a bottle 6 cm to the side stands above the palm's underside: the palm, 22 x 10 cm with margins,
    # meets it lying along y, not along x
    bottle = ([-0.02, 0.06, 0.90], [0.02, 0.10, 1.05])
    lows, highs = _boxes(TABLE, bottle)
    assert hand_blocked(site, np.array([0.0, 1.0]), lows, highs, outer=-1.0)
    assert not hand_blocked(site, np.array([1.0, 0.0]), lows, highs)
    # a low plate under the outer finger blocks it, under the palm only it does not
    plate = ([0.04, -0.02, 0.90], [0.08, 0.02, 0.935])
    lows, highs = _boxes(TABLE, plate)
    assert hand_blocked(site, np.array([1.0, 0.0]), lows, highs, outer=1.0)
    assert not hand_blocked(site, np.array([1.0, 0.0]), lows, highs, outer=-1.0)


def test_the_rim_side_turns_away_from_a_bottle_beside_the_bowl():
    centre, grasp_z = np.array([0.0, 0.0]), 0.936
    lows, highs = _boxes(TABLE)
    prefer = np.array([-1.0, 0.0])
    np.testing.assert_allclose(rim_side(centre, 0.04, grasp_z, lows, highs, prefer), prefer, atol=1e-9)
    # a ketchup bottle just behind-left of the bowl: the palm along x would meet it, so turn
    bottle = ([-0.10, -0.09, 0.90], [-0.065, -0.035, 1.046])
    lows, highs = _boxes(TABLE, bottle)
    side = rim_side(centre, 0.04, grasp_z, lows, highs, prefer)
    assert not np.allclose(side, prefer)
    site = np.array([*(side * 0.04), grasp_z])
    assert not hand_blocked(site, side, lows, highs) and hand_blocked(
        np.array([-0.04, 0, grasp_z]), prefer, lows, highs
    )
    # hemmed in on every side: the preferred side, as before
    wall = ([-0.3, -0.3, 0.9], [0.3, 0.3, 1.2])
    lows, highs = _boxes(wall)
    np.testing.assert_allclose(rim_side(centre, 0.04, grasp_z, lows, highs, prefer), prefer, atol=1e-9)


@pytest.mark.parametrize(
    ("half", "inner"),
    [
        ([0.075, 0.075], [0.075 - REGION_INSET, 0.075 - REGION_INSET]),
        ([0.01, 0.2], [0.005, 0.2 - REGION_INSET]),  # a narrow region keeps half its size
    ],
)
def test_a_place_aims_inside_the_region_s_edge(half, inner):
    np.testing.assert_allclose(inner_half(np.array(half)), inner)


def test_an_object_under_an_opening_drawer_is_moved_clear_of_its_front_and_the_palm():
    out = np.array([0.0, 1.0])
    # libero_90 task 8: the top drawer opens along +y to y = -0.032; the bowl spans y -0.074..0.033
    bowl_lo, bowl_hi = np.array([-0.048, -0.074]), np.array([0.059, 0.033])
    shift = drawer_clearance(bowl_lo, bowl_hi, (-0.184, -0.032), out, (-0.118, 0.101))
    centre_y = (bowl_lo[1] + bowl_hi[1]) / 2
    assert shift == pytest.approx(-0.032 + DRAWER_MARGIN - (centre_y - PALM_HALF[0]))
    # beside the drawer's span, behind its front, or already beyond its reach: nothing to do
    for move in ([0.4, 0.0], [0.0, -0.4], [0.0, 0.3]):
        away = np.array(move)
        assert drawer_clearance(bowl_lo + away, bowl_hi + away, (-0.184, -0.032), out, (-0.118, 0.101)) == 0


def test_the_palm_reaches_along_the_drawer_only_when_the_fingers_close_along_it():
    out = np.array([0.0, 1.0, 0.0])
    # a pudding box 8 x 4.6 cm: fingers across its narrow side, along y, so the palm lies along y
    assert palm_reach(np.array([0.08, 0.046, 0.027]), out, rim=False) == PALM_HALF[0]
    assert palm_reach(np.array([0.046, 0.08, 0.027]), out, rim=False) == PALM_HALF[1]
    # a bowl: the hand takes a rim side clear of the drawer, the palm across
    assert palm_reach(np.array([0.107, 0.107, 0.051]), out, rim=True) == PALM_HALF[1]


def test_a_push_comes_down_off_centre_where_a_neighbour_stands_beside_its_start():
    # libero_goal task 3 state 1, traced: a bowl (10.7 cm wide) pushed along +y, the fingertips coming
    # down 2 cm behind it; the wine bottle stands 7 cm to the -x side of that point, under the palm
    start, push = np.array([-0.097, -0.063, 0.925]), np.array([0.0, 1.0])
    bottle = ([-0.208, -0.065, 0.90], [-0.166, -0.021, 1.057])
    lows, highs = _boxes(TABLE, bottle)
    site, axis = push_point(start, push, 0.0535, lows, highs)
    # moved along the bowl's side away from the bottle, the push still on the bowl (within 85 % of its
    # half width), the palm clear; straight behind the middle it was not
    assert 0 < site[0] - start[0] <= 0.85 * 0.0535 and site[1:] == pytest.approx(start[1:])
    assert palm_blocked(start, np.array([1.0, 0.0, 0.0]), lows, highs)
    assert not palm_blocked(site, axis, lows, highs) and abs(axis[0]) > np.cos(np.radians(31))
    # nothing beside it: straight behind the middle; nowhere clear: straight behind the middle too
    site, axis = push_point(start, push, 0.0535, *_boxes(TABLE))
    assert np.allclose(site, start) and np.allclose(np.abs(axis), [1.0, 0.0, 0.0])
    wall = ([-0.4, -0.2, 0.9], [0.4, -0.05, 1.2])
    assert np.allclose(push_point(start, push, 0.0535, *_boxes(TABLE, wall))[0], start)
