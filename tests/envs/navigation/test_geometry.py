"""Collision geometry and the lattice planner of the navigation env: hand-worked cases and properties."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from envs.navigation import geometry
from envs.navigation.geometry import AGENT_RADIUS, Obstacles, house_bounds, segment_rect_distance
from envs.navigation.planner import UNREACHABLE, Lattice
from envs.navigation.scene import scene_obstacles
from tests.nav_scenes import empty_room


def _dist(p0, p1, rect):
    return float(
        segment_rect_distance(np.array([p0], float), np.array([p1], float), np.array([rect], float))[0, 0]
    )


def test_segment_rect_distance_hand_worked():
    assert _dist((0, 0), (1, 0), (2, -1, 3, 1)) == pytest.approx(1.0)  # end point to the left edge
    assert _dist((0, 2), (4, 2), (1, 0, 3, 1)) == pytest.approx(1.0)  # passing over the top edge
    assert _dist((0, 0), (0, 1), (1, 2, 2, 3)) == pytest.approx(math.sqrt(2))  # end point to a corner
    assert _dist((-1, 0.5), (5, 0.5), (1, 0, 2, 1)) == 0.0  # crossing straight through
    # corner (2, 1.5) to the line y = x - 1
    assert _dist((0, -1), (3, 2), (1, 1.5, 2, 3)) == pytest.approx(math.sqrt(2) / 4)


coord = st.floats(-3, 3, allow_nan=False)


@settings(max_examples=60, deadline=None)
@given(coord, coord, coord, coord, coord, coord, st.floats(0.05, 2), st.floats(0.05, 2))
def test_segment_rect_distance_matches_dense_sampling(x0, y0, x1, y1, rx, ry, w, h):
    rect = (rx, ry, rx + w, ry + h)
    t = np.linspace(0, 1, 4001)[:, None]
    pts = np.array([x0, y0]) + t * (np.array([x1, y1]) - np.array([x0, y0]))
    dx = np.maximum(np.maximum(rect[0] - pts[:, 0], 0), pts[:, 0] - rect[2])
    dy = np.maximum(np.maximum(rect[1] - pts[:, 1], 0), pts[:, 1] - rect[3])
    sampled = np.hypot(dx, dy).min()
    step = math.hypot(x1 - x0, y1 - y0) / 4000
    exact = _dist((x0, y0), (x1, y1), rect)
    assert exact <= sampled + 1e-9
    assert exact >= sampled - step - 1e-9


@settings(max_examples=60, deadline=None)
@given(coord, coord, st.floats(-1, 1), st.booleans(), coord, coord, st.floats(0.05, 2), st.floats(0.05, 2))
def test_axis_aligned_segments_take_the_box_form_and_agree_with_the_oblique_one(
    x0, y0, length, along_x, rx, ry, w, h
):
    p0 = np.array([[x0, y0]])
    p1 = p0 + (np.array([[length, 0.0]]) if along_x else np.array([[0.0, length]]))
    rects = np.array([[rx, ry, rx + w, ry + h]])
    oblique = geometry._oblique_segment_rect_distance(p0, p1, rects)
    assert segment_rect_distance(p0, p1, rects) == pytest.approx(oblique, abs=1e-12)


def test_lattice_moves_skip_the_oblique_sweep(monkeypatch):
    """The lattice's moves are axis-aligned in axis-aligned homes: the cheap box form decides them all
    (it halved the search an ``initial_position`` variant's first build waits for)."""

    def refuse(*args):
        raise AssertionError("the oblique form ran for an axis-aligned move")

    monkeypatch.setattr(geometry, "_oblique_segment_rect_distance", refuse)
    scene = empty_room()
    for heading in (0.0, 90.0, 180.0, 270.0):
        lattice = Lattice.build(scene_obstacles(scene), [0, 0, 4, 4], (0.5, 2.0), heading)
        assert (lattice.neighbour >= 0).any()


def test_thin_wall_blocks_even_when_both_ends_are_clear():
    wall = Obstacles(np.array([[0.5, -1.0, 0.52, 1.0]]), ("wall",))
    # no tunnelling check by ends
    assert wall.clearance(np.array([[0.0, 0.0], [1.0, 0.0]])).min() > AGENT_RADIUS
    assert wall.blocker(np.array([0.0, 0.0]), np.array([1.0, 0.0])) == "wall"
    assert wall.blocker(np.array([0.0, 0.0]), np.array([0.0, 0.25])) is None


def test_free_fraction_stops_a_radius_before_the_obstacle():
    wall = Obstacles(np.array([[1.0, -1.0, 1.1, 1.0]]), ("wall",))
    t = wall.free_fraction(np.array([0.0, 0.0]), np.array([2.0, 0.0]))
    assert t * 2.0 == pytest.approx(1.0 - AGENT_RADIUS, abs=1e-5)


def test_lattice_steps_to_goal_in_an_empty_room():
    scene = empty_room()
    lattice = Lattice.build(scene_obstacles(scene), [0, 0, 4, 4], (0.5, 2.0), 0.0)
    dist = lattice.steps_to_goal((3.0, 2.0), 1.0)
    start = lattice.anchor
    # From x = 0.5, six 0.25 m moves reach x = 2.0 (1.0 m from the ball) whatever the heading:
    # ahead when facing it, back when facing away, sideways when facing along y.
    assert dist[start].tolist() == [6, 6, 6, 6]
    assert lattice.plan(dist, start, 0) == [0] * 6
    assert lattice.plan(dist, start, 2) == [1] * 6
    goal = lattice.nearest((2.0, 2.0))
    assert dist[goal].tolist() == [0, 0, 0, 0]


def test_steps_to_goal_match_a_plain_backward_search_in_a_furnished_home():
    from collections import deque

    from envs.navigation.episodes import make_episode

    ep = make_episode("base", 0)
    agent = ep["agent"]
    lattice = Lattice.build(
        scene_obstacles(ep["scene"]),
        house_bounds(ep["scene"]),
        (agent["x"], agent["y"]),
        agent["heading_deg"],
    )
    goal_xy = ep["target"]["position"][:2]
    dist = lattice.steps_to_goal(goal_xy, 1.0)
    states = [(n, k) for n in range(len(lattice.points)) for k in range(4)]
    before = {s: [] for s in states}
    for s in states:
        for action in range(6):
            before[lattice.next_state(*s, action)].append(s)
    near = np.hypot(*(lattice.points - np.asarray(goal_xy)).T) <= 1.0 + 1e-9
    expected = {s: 0 for s in states if lattice.free[s[0]] and near[s[0]]}
    queue = deque(expected)
    while queue:
        s = queue.popleft()
        for p in before[s]:
            if p not in expected:
                expected[p] = expected[s] + 1
                queue.append(p)
    assert all(dist[s] == expected.get(s, UNREACHABLE) for s in states)
    assert len(expected) > 100  # (a real search, not a trivial one)


def test_lattice_never_enters_walls_and_marks_unreachable():
    scene = empty_room()
    lattice = Lattice.build(scene_obstacles(scene), [0, 0, 4, 4], (0.5, 2.0), 0.0)
    assert not lattice.free[lattice.nearest((0.0, 2.0))]  # inside the wall slab
    outside = lattice.steps_to_goal((-3.0, 2.0), 1.0)  # a goal no free node is near
    assert (outside == UNREACHABLE).all()
    assert lattice.best_action(outside, lattice.anchor, 0) is None
