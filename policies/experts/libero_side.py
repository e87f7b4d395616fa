"""Putting an object in a roofed region (a microwave, a shelf's compartment) through its open side.

A hand above the object cannot go under the roof, so the object goes in first and the hand stays behind
it, outside: the object is taken by its handle (a mug's, a pan's) from above, the fingers leaning
toward the object's body (the palm then stays short of the roof's front edge); carried, the hand turns
so that the handle points out of the opening; the object is set down in front of the opening at the
floor's height and slid in along the way in (:class:`policies.experts.libero_entry.Opening`), as deep
as the far wall and the hand's clearance under the roof's edge allow. An object with no handle is
taken from the side, the hand level, fingers pointing the way in (it must be narrow enough).
"""

from __future__ import annotations

import numpy as np
from scipy.spatial.transform import Rotation

from policies.experts.libero import (
    APPROACH,
    CLOSED,
    MAX_HAND_Z,
    OPEN,
    SLOW,
    TRAVEL_TURN,
    PickPlace,
    Scene,
    Stage,
    Waypoint,
    _direction,
    _horizontal,
    _nearest_sign,
)
from policies.experts.libero_entry import (
    INSIDE,
    Opening,
    entry_grip,
    hand_boxes,
    hand_front,
    object_axes,
    region_opening,
)
from policies.experts.libero_goals import GRIPPER_SPAN, Goal

LEAN = 0.6  # rad: a handle is gripped with the fingers tipped this far from vertical toward the body
ENTRY_GAP = 0.01  # m: the object's base above the floor while it slides in
STAGE = 0.03  # m: the object's leading edge stops this short of the opening before sliding in
WALL_ROOM = 0.015  # m: kept between the object and the far wall
EDGE_ROOM = 0.01  # m: kept between the hand and the roof's front edge
LIFT = 0.12  # m: the lift after the grasp
SWING = 15  # steps held after turning an object held by its edge level


class SideEntry(PickPlace):
    """``In`` a roofed region: pick by the handle, carry, turn the handle out, slide in through the open side."""

    def __init__(self, goal: Goal, opening: Opening, retries: int = 1, handled: bool = True) -> None:
        super().__init__(goal, retries)
        self.opening, self.handled = opening, handled

    def stages(self) -> list[Stage]:
        if self.handled:
            return [self.plan_grasp, self.check_grasp, self.plan_place]
        return [self.plan_grasp, self.check_grasp, self.pitch, self.plan_place]

    def plan_grasp(self, scene: Scene) -> list[Waypoint]:
        if not self.handled:  # from above across its narrow side, as any pick (then :meth:`pitch`)
            return super().plan_grasp(scene)
        self.grasp_kind = "entry handle"
        lo, hi = scene.extent(self.obj)
        self.base_z = float(lo[2])
        _, _, rot = scene.box(self.obj)
        grip = entry_grip(scene.local_boxes(self.obj), rot)
        if grip is None:  # the handle was found when the task was planned: the object has turned over
            return []
        point, across, out = grip
        grasp = scene.position(self.obj) + rot @ point
        approach = np.array([0.0, 0.0, -1.0]) * np.cos(LEAN) - out * np.sin(LEAN)  # tipped toward the body
        axis = _nearest_sign(across, scene.finger_axis())
        tip = _direction(approach)
        above = grasp - approach * APPROACH
        hand = scene.hand()
        travel_z = min(max(hand[2], above[2], float(hi[2]) + 0.12), MAX_HAND_Z)
        return [
            Waypoint(
                np.array([*hand[:2], travel_z]), axis, OPEN, tol=0.03, turn_tol=TRAVEL_TURN, approach=tip
            ),
            Waypoint(np.array([*above[:2], travel_z]), axis, OPEN, tol=0.02, approach=tip),
            Waypoint(above, axis, OPEN, tol=0.015, approach=tip),
            Waypoint(grasp, axis, OPEN, speed=SLOW, tol=0.008, approach=tip),
            Waypoint(grasp, axis, CLOSED, speed=SLOW, tol=0.02, settle=12, approach=tip),
            Waypoint(grasp + np.array([0, 0, LIFT]), axis, CLOSED, speed=SLOW, tol=0.02, approach=tip),
        ]

    def pitch(self, scene: Scene) -> list[Waypoint]:
        """A thin object with no handle (a book) held from above by its top edge: the hand turns level,
        fingers pointing the way in and closing across it, so that the hand fits under the roof beside
        the object; the object, held by one end, swings down about the fingers' axis and hangs ahead of
        and below them, tilted, lower than it stands (see :func:`side_entry`)."""
        self.grasp_kind = "entry edge"
        inward, lateral = np.array([*self.opening.inward, 0.0]), np.array([*self.opening.lateral, 0.0])
        up = scene.hand() + np.array([0.0, 0.0, 0.04])
        # held by one edge, the object swings about the fingers' axis as it turns: let it come to rest
        # before the place is measured from it
        return [
            Waypoint(up, lateral, CLOSED, tol=0.03, settle=SWING, max_steps=100, approach=_direction(inward))
        ]

    def plan_place(self, scene: Scene) -> list[Waypoint]:
        op, hand, rot = self.opening, scene.hand(), scene.hand_rotation()
        _, _, obj_rot = scene.box(self.obj)
        grip = entry_grip(scene.local_boxes(self.obj), obj_rot)
        out = grip[2] if grip is not None else _horizontal(-rot[:, 2])
        # turn about the vertical so that the handle points out of the opening
        turn = Rotation.from_rotvec([0.0, 0.0, _angle(out[:2], -op.inward)]).as_matrix()
        rel = (scene.corners(self.obj) - hand) @ turn.T  # the object's corners from the hand, turned
        origin = turn @ (scene.position(self.obj) - hand)
        target = self._target(scene, rel, origin, turn @ rot)
        inward = np.array([*op.inward, 0.0])
        lead = float((rel @ inward).max())  # how far the object reaches ahead of the hand
        stage = target - inward * max(float(target @ inward) + lead - op.face + STAGE, 0.0)
        carry_z = min(max(hand[2], op.roof + 0.03 - float(rel[:, 2].min())), MAX_HAND_Z)
        tip, axis = _direction(turn @ rot[:, 2]), _horizontal(turn @ scene.finger_axis())
        back = stage - inward * 0.03
        return [
            Waypoint(
                np.array([*hand[:2], carry_z]), axis, CLOSED, tol=0.02, turn_tol=TRAVEL_TURN, approach=tip
            ),
            Waypoint(np.array([*stage[:2], carry_z]), axis, CLOSED, tol=0.015, approach=tip),
            Waypoint(stage, axis, CLOSED, speed=SLOW, tol=0.01, approach=tip),
            Waypoint(target, axis, CLOSED, speed=SLOW, tol=0.01, max_steps=120, approach=tip),
            Waypoint(target, axis, OPEN, tol=0.05, settle=10, approach=tip),
            Waypoint(np.array([*back[:2], target[2]]), axis, OPEN, tol=0.02, approach=tip),
            Waypoint(np.array([*back[:2], carry_z]), axis, OPEN, tol=0.03, approach=tip),
        ]

    def _target(self, scene: Scene, rel: np.ndarray, origin: np.ndarray, hand_rot: np.ndarray) -> np.ndarray:
        """The hand's position that puts the object in the region: its footprint midway between the side
        walls; along the way in as deep as the far wall, the region (its origin inside, what LIBERO
        checks) and the hand's clearance under the roof's front edge allow; its base ENTRY_GAP above
        the floor, or less when the roof is near its top (a book on its edge)."""
        op = self.opening
        inward, lateral = np.array([*op.inward, 0.0]), np.array([*op.lateral, 0.0])
        centre = scene.position(self.target)
        size = np.asarray(scene.env.object_sites_dict[self.target].size, float)
        half = np.abs(np.array(scene.env.sim.data.get_site_xmat(self.target)) @ size)
        reach = INSIDE * float(half @ np.abs(inward))
        low, high = float(rel[:, 2].min()), float(rel[:, 2].max())
        # base ENTRY_GAP over the floor, lower when the top would then come nearer the roof than EDGE_ROOM
        z = max(min(op.floor + ENTRY_GAP - low, op.roof - EDGE_ROOM - high), op.floor + 0.002 - low)
        front = hand_front(hand_boxes(scene), hand_rot, inward, op.roof - z)
        depth = min(
            op.back - WALL_ROOM - float((rel @ inward).max()),
            float(centre @ inward) + reach - float(origin @ inward),
            op.face - EDGE_ROOM - front,
        )
        depth = max(depth, float(centre @ inward) - reach - float(origin @ inward))
        middle = (op.sides[0] + op.sides[1]) / 2 - float((rel.min(0) + rel.max(0)) / 2 @ lateral)
        limit = INSIDE * float(half @ np.abs(lateral))
        across = float(
            np.clip(
                middle,
                centre @ lateral - limit - origin @ lateral,
                centre @ lateral + limit - origin @ lateral,
            )
        )
        return inward * depth + lateral * across + np.array([0.0, 0.0, z])


def _angle(a: np.ndarray, b: np.ndarray) -> float:
    """Signed angle (rad, about +z) from xy vector ``a`` to ``b``."""
    return float(np.arctan2(a[0] * b[1] - a[1] * b[0], a @ b))


def side_entry(scene: Scene, goal: Goal, retries: int) -> SideEntry | None:
    """The task that puts ``goal``'s object in a roofed region, or None when the region is not roofed or
    the object can go in neither way: by a handle, or (no handle) on its edge, held by its top edge,
    when its wider horizontal side is low enough for the roof and its narrow side fits the fingers."""
    if goal.predicate != "in":
        return None
    found = region_opening(scene, *goal.args)
    if found is None:
        return None
    _, _, rot = scene.box(goal.args[0])
    if entry_grip(scene.local_boxes(goal.args[0]), rot) is not None:
        return SideEntry(goal, found, retries)
    sides = sorted(object_axes(scene, goal.args[0])[0] * 2)
    if sides[0] > GRIPPER_SPAN or sides[1] + ENTRY_GAP + EDGE_ROOM > found.roof - found.floor:
        return None
    return SideEntry(goal, found, retries, handled=False)
