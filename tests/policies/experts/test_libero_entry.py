"""The LIBERO expert's slots and roofed regions as geometry (no simulator): the turn that lays an object
along a slot, where its footprint clears the walls, and which side of a roofed region is open."""

import numpy as np
import pytest

from policies.experts.libero_entry import footprint_spot, is_slot, slot_turn

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
