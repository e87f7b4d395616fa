"""Room for the hand and for what it carries, as plane geometry on boxes: no simulator here.

:mod:`policies.experts.libero` hands these functions the scene's collision boxes (world, axis-aligned
``(low, high)`` rows) and uses their answers: which side of a bowl's rim the hand can come down on
(:func:`rim_side`), how far inside a goal region a place aims (:func:`inner_half`), and how far an object
must be moved out of the way of a drawer that is about to open over it (:func:`drawer_clearance`).

The hand's sizes are the Panda gripper's collision geoms, measured about robosuite's grip site with the
fingers pointing down: the palm is 21 cm long along the finger axis, 7 cm across, its underside 2.2 cm
above the site; an open finger is 3.2-6.8 cm from the site along the finger axis and reaches 1.4 cm
below it.
"""

from __future__ import annotations

import numpy as np

# m: the palm's half length along the finger axis and half width across (measured 0.105 and 0.035-0.041,
# margins added: the hand comes down a little turned and tilted)
PALM_HALF = (0.11, 0.05)
PALM_ABOVE = 0.022  # m: the palm's underside above the hand site
FINGER_SPAN = (0.03, 0.07)  # m: an open finger's near and far side from the site, along the finger axis
FINGER_HALF = 0.015  # m: an open finger's half width across the finger axis
FINGER_BELOW = 0.014  # m: the fingertips below the hand site
RIM_TURNS = (0.0, 45.0, -45.0, 90.0, -90.0, 135.0, -135.0, 180.0)  # deg from the preferred side, in order
REGION_INSET = 0.02  # m: a place aims at least this far inside a region's edge (LIBERO checks the origin)
DRAWER_MARGIN = 0.02  # m: an object is moved this far clear of where an opening drawer will reach


def rect_meets_boxes(
    centre: np.ndarray, along: np.ndarray, half: tuple[float, float], lows: np.ndarray, highs: np.ndarray
) -> np.ndarray:
    """Which axis-aligned boxes (rows of ``lows`` / ``highs``, xy used) overlap the rectangle at ``centre``
    with half sizes ``half`` along the unit ``along`` and across it (separating axes in the plane)."""
    u = np.asarray(along, float)[:2] / max(float(np.linalg.norm(np.asarray(along, float)[:2])), 1e-9)
    v = np.array([-u[1], u[0]])
    box_centre, box_half = (lows[:, :2] + highs[:, :2]) / 2, (highs[:, :2] - lows[:, :2]) / 2
    d = box_centre - np.asarray(centre, float)[:2]
    rect_x = half[0] * abs(u[0]) + half[1] * abs(v[0])  # the rectangle's half extent on the world axes
    rect_y = half[0] * abs(u[1]) + half[1] * abs(v[1])
    apart = (np.abs(d[:, 0]) > rect_x + box_half[:, 0]) | (np.abs(d[:, 1]) > rect_y + box_half[:, 1])
    for axis, h in ((u, half[0]), (v, half[1])):  # the box's half extent on the rectangle's axes
        reach = box_half[:, 0] * abs(axis[0]) + box_half[:, 1] * abs(axis[1])
        apart |= np.abs(d @ axis) > h + reach
    return ~apart


def hand_blocked(
    site: np.ndarray, finger_axis: np.ndarray, lows: np.ndarray, highs: np.ndarray, outer: float = 1.0
) -> bool:
    """The hand coming straight down to ``site`` (xyz), fingers open along ``finger_axis``, meets one of
    the boxes on the way: the palm over anything standing above its underside, or the open finger on the
    ``outer`` side (+1 / -1 along the axis; the other finger goes inside the object) over anything
    standing above the fingertips."""
    u = np.asarray(finger_axis, float)[:2] / max(
        float(np.linalg.norm(np.asarray(finger_axis, float)[:2])), 1e-9
    )
    middle = np.asarray(site, float)[:2] + outer * u * (FINGER_SPAN[0] + FINGER_SPAN[1]) / 2
    finger_half = ((FINGER_SPAN[1] - FINGER_SPAN[0]) / 2, FINGER_HALF)
    finger = (highs[:, 2] > site[2] - FINGER_BELOW) & rect_meets_boxes(middle, u, finger_half, lows, highs)
    return palm_blocked(site, u, lows, highs) or bool(np.any(finger))


def palm_blocked(site: np.ndarray, finger_axis: np.ndarray, lows: np.ndarray, highs: np.ndarray) -> bool:
    """The palm, the hand coming straight down to ``site`` (xyz) with the fingers along ``finger_axis``,
    meets one of the boxes standing above its underside on the way."""
    tall = highs[:, 2] > site[2] + PALM_ABOVE
    return bool(np.any(tall & rect_meets_boxes(site, finger_axis, PALM_HALF, lows, highs)))


PUSH_TURNS = (0.0, 15.0, -15.0, 30.0, -30.0)  # deg: finger axes tried for a push, from across it
PUSH_OFFSET_STEP = 0.005  # m: push points tried this far apart along the object's trailing side
PUSH_OFFSET_SHARE = 0.85  # ... out to this share of the object's half width across the push


def push_point(
    start: np.ndarray, push: np.ndarray, half_across: float, lows: np.ndarray, highs: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """``(hand site, finger axis)`` for closed fingertips to come down at ``start`` (xyz, behind an
    object) and push it along the horizontal unit ``push``, the palm clear of the boxes (the object's
    neighbours): the fingers across the push at ``start`` when that is clear, else the push point nearest
    ``start`` along the object's side (within PUSH_OFFSET_SHARE of ``half_across``), the finger axis
    turned by PUSH_TURNS; ``start`` across the push when nothing is clear (the palm lands on a
    neighbour, as before)."""
    u = np.asarray(push, float)[:2] / max(float(np.linalg.norm(np.asarray(push, float)[:2])), 1e-9)
    side = np.array([-u[1], u[0], 0.0])
    steps = int(PUSH_OFFSET_SHARE * half_across / PUSH_OFFSET_STEP)
    offsets = sorted((k * PUSH_OFFSET_STEP for k in range(-steps, steps + 1)), key=abs)
    for offset in offsets:
        site = np.asarray(start, float) + side * offset
        for turn in PUSH_TURNS:
            a = np.radians(turn)
            axis = np.array(
                [np.cos(a) * side[0] - np.sin(a) * side[1], np.sin(a) * side[0] + np.cos(a) * side[1], 0.0]
            )
            if not palm_blocked(site, axis, lows, highs):
                return site, axis
    return np.asarray(start, float), side


def rim_side(
    centre: np.ndarray,
    inset_radius: float,
    grasp_z: float,
    lows: np.ndarray,
    highs: np.ndarray,
    preferred: np.ndarray,
) -> np.ndarray:
    """The horizontal unit vector from a round object's ``centre`` to the rim point to grasp, the fingers
    closing along it across the wall: the ``preferred`` side, else the nearest side in RIM_TURNS steps
    where the hand comes down clear of the boxes (other objects, fixtures: a bottle beside a bowl, an
    open drawer over it); the preferred side when none is clear."""
    base = np.arctan2(preferred[1], preferred[0])
    for turn in RIM_TURNS:
        angle = base + np.radians(turn)
        u = np.array([np.cos(angle), np.sin(angle)])
        site = np.array([*(np.asarray(centre, float)[:2] + u * inset_radius), grasp_z])
        if not hand_blocked(site, u, lows, highs, outer=1.0):
            return u
    return np.asarray(preferred, float)[:2] / max(float(np.linalg.norm(preferred[:2])), 1e-9)


def inner_half(half: np.ndarray) -> np.ndarray:
    """A region's half sizes less REGION_INSET (at most half of each): where a place may aim, so that the
    object's origin, which lands a few millimetres off, stays inside the box LIBERO checks."""
    half = np.asarray(half, float)
    return half - np.minimum(REGION_INSET, half / 2)


def palm_reach(size: np.ndarray, out: np.ndarray, rim: bool) -> float:
    """How far the palm reaches from an object's centre along the horizontal unit ``out`` when the hand
    grasps it from above: across the palm for a rim grasp (the hand takes the side it finds clear) or
    when the fingers close across ``out``; along it when they close along ``out`` (across the object's
    narrow side, ``size`` its world extents)."""
    if rim:
        return PALM_HALF[1]
    narrow = int(np.argmin(np.asarray(size, float)[:2]))
    return PALM_HALF[0] if abs(float(np.asarray(out, float)[narrow])) > 0.7 else PALM_HALF[1]


def drawer_clearance(
    obj_low: np.ndarray,
    obj_high: np.ndarray,
    front: tuple[float, float],
    out: np.ndarray,
    lateral: tuple[float, float],
    palm: float = PALM_HALF[0],
) -> float:
    """How far (m) an object with the xy bounds ``obj_low`` / ``obj_high`` must move along the unit ``out``
    to stand DRAWER_MARGIN clear of a drawer whose front is at the coordinate ``front[0]`` along ``out``
    now and will reach ``front[1]`` opened, spanning ``lateral`` (low, high) across ``out`` (the hand
    coming down to the object, its palm reaching ``palm`` from the object's centre along ``out``, must
    not meet it); 0 when the object lies beside the drawer's span, behind its front, or beyond its
    reach already."""
    u = np.asarray(out, float)[:2]
    v = np.array([-u[1], u[0]])
    corners = np.array([[x, y] for x in (obj_low[0], obj_high[0]) for y in (obj_low[1], obj_high[1])])
    along, across = corners @ u, corners @ v
    beside = across.max() < lateral[0] - PALM_HALF[1] or across.min() > lateral[1] + PALM_HALF[1]
    if beside or along.max() < front[0]:
        return 0.0
    near = min(float(along.min()), float(along.mean()) - palm)
    return max(0.0, front[1] + DRAWER_MARGIN - near)
