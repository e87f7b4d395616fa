"""A privileged scripted expert for LIBERO: reads the task's BDDL goal and the simulator, acts in OSC_POSE.

``LiberoExpert`` (``--policy expert`` on ``benchmarks.libero``) parses the goal
(:mod:`policies.experts.libero_goals`), then solves each predicate in turn with native 7-D actions
(OSC_POSE deltas and the gripper, as any policy sends), closed loop on the measured hand pose: every
step moves the hand a capped fraction of the way to the current waypoint and turns it toward the
waypoint's orientation. It reads object poses, collision-geom extents in the object's frame and the
geometry under a place (a ray cast); it never sets simulator state.

``In`` / ``On`` (pick and place): the grasp comes from the object's shape (:func:`choose_grasp`: from
above across the narrow side for boxes and cans, around the top part of tall bottles and cartons, across
the wall at the rim of bowls and plates); after lifting, the object's offset from the hand is measured
and the place is corrected by it; a grasp that did not lift the object is retried once from the
object's new pose. Deterministic: no randomness, so a seed and initial state give one episode.

Slots narrower than the object (a caddy's compartments) and regions under a roof (a microwave, a shelf's
compartments) are planned with :mod:`policies.experts.libero_entry` (``fit_slot``, ``SideEntry``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, cast

import numpy as np
from scipy.spatial.transform import Rotation

from policies.base import EpisodeContext, Policy
from policies.experts.libero_clearance import (
    drawer_clearance,
    inner_half,
    palm_blocked,
    palm_reach,
    push_point,
    rim_side,
)
from policies.experts.libero_entry import (
    INSIDE,
    Opening,
    entry_grip,
    hand_boxes,
    hand_front,
    object_axes,
    region_opening,
    slot_half,
    slot_spot,
    slot_turn,
)
from policies.experts.libero_goals import (
    GRIPPER_SPAN,
    TALL,
    Goal,
    Handle,
    choose_grasp,
    find_handle,
    parse_goal,
)

if TYPE_CHECKING:
    import gymnasium as gym

    from envs.libero.env import LiberoEnv

POS_UNIT, ROT_UNIT = 0.05, 0.5  # OSC_POSE: metres / radians per action unit
OPEN, CLOSED = -1.0, 1.0
FAST, SLOW = 1.0, 0.4  # cap of each translation component, in action units
PULL = 0.7  # action units: a drawer gripped by its handle is pulled open this fast
GAIN = 2.0  # action units per unit of position error (in 5 cm): full speed beyond 2.5 cm
ROT_GAIN = 2.0
STALL, STALL_MOVE, STALL_TURN = 12, 0.003, 0.02  # steps, m, rad: a waypoint the hand stops short of is passed
GRIP_STEPS, GRIP_STILL = (
    5,
    0.0005,
)  # steps, m: fingers closing or opening have stopped (gap moved < this in 2 steps)
CLEARANCE = 0.05  # m: a carried object's base clears what lies under its path by this much
MAX_HAND_Z = 1.40  # m (world): the highest the hand is sent
APPROACH = 0.10  # m: the hand descends the last stretch to a grasp vertically
NEAR = 0.04  # m: the last stretch of a descent, taken slowly
FINGERS = 0.05  # m: how far the fingertips reach below the hand site, roughly (for clearances)
TRAVEL_TURN = 3.2  # rad: a travel waypoint is passed whatever the hand's orientation (it turns on the way)
WRIST_FLIP_MIN = 0.3  # rad: a turn smaller than this is made as it is, whatever the wrist's limit
WRIST_ROOM = 0.05  # rad: a turn that would leave the wrist joint nearer its limit is made the other way round
FINGER_OPEN, FINGER_HALF = 0.045, 0.012  # m: an open finger's offset from the grasp point, its half width
LIFTED = 0.03  # m: an object raised by less than this after the lift was not grasped
PLACE_REACH = 0.78  # m: the farthest from the shoulder the hand is sent to put something down
WRIST_ABOVE = 0.21  # m: the wrist (the last two joints' crossing) above the site of a hand pointing down
WRIST_REACH = 0.66  # m: the farthest from the shoulder the wrist is sent while the hand rises and turns
SPREAD_MARGIN = 0.015  # m: objects sharing a region are put this far inside its corners
RELEASE_GAP = {"in": 0.02, "on": 0.01}  # m: object base above the surface when the fingers open


@dataclass(frozen=True)
class Waypoint:
    """A hand target: site position, finger-axis direction (horizontal, world), gripper command."""

    pos: np.ndarray
    axis: np.ndarray
    gripper: float
    speed: float = FAST
    tol: float = 0.01
    settle: int = 0  # steps held once reached (fingers closing / opening)
    max_steps: int = 80  # give up waiting for the hand and move on
    approach: tuple[float, float, float] = (0.0, 0.0, -1.0)  # where the fingers point (world)
    turn_tol: float = 0.08  # rad: orientation error accepted (travel waypoints turn on the way)
    twist: float = (
        0.0  # rad about world +z the hand turns later, gripping (a knob): the wrist keeps room for it
    )


@dataclass(frozen=True)
class Wrist:
    """The last arm joint: its world axis, position and range (rad)."""

    axis: np.ndarray
    q: float
    low: float
    high: float

    def allows(self, turn: np.ndarray, room: float) -> bool:
        """The hand turned by ``turn`` (axis-angle, world) leaves the joint ``room`` inside its range, or
        at least no nearer its limit than it is now (a hand already near it may hold still)."""
        q = self.q + float(turn @ self.axis)
        return self.low + room <= q <= self.high - room or self._margin(self.q) <= self._margin(q)

    def _margin(self, q: float) -> float:
        return min(q - self.low, self.high - q)

    def turned(self, turn: np.ndarray) -> Wrist:
        """The joint once the hand has turned by ``turn`` (axis-angle, world)."""
        return replace(self, q=self.q + float(turn @ self.axis))

    def after_yaw(self, yaw: float) -> Wrist:
        """The joint once the arm's base has turned ``yaw`` (rad, about world +z) with the hand's
        orientation held: the wrist turns back by as much, so a turn it allows here may not be allowed
        at the target (the hand carried across the table runs the joint into its limit on the way)."""
        return replace(self, q=self.q - yaw * float(self.axis[2]))


def base_yaw(base: np.ndarray, hand: np.ndarray, target: np.ndarray) -> float:
    """How far (rad, about world +z, the shorter way) the arm's base turns for the hand to go from
    ``hand`` to ``target``, seen from above the base's vertical axis through ``base``."""
    (ax, ay), (bx, by) = hand[:2] - base[:2], target[:2] - base[:2]
    return float(np.arctan2(ax * by - ay * bx, ax * bx + ay * by))


# ---------------------------------------------------------------------------------------- the scene


class Scene:
    """Read-only views of the LIBERO simulator the expert needs (poses, extents, rays)."""

    def __init__(self, raw_env: Any) -> None:
        self.env = raw_env.env  # LIBERO's problem env (robosuite)
        import mujoco

        self.mujoco = mujoco
        self.model, self.data = self.env.sim.model._model, self.env.sim.data._data
        robot = self.env.robots[0]
        self.site = robot.eef_site_id["right"]
        fingers = [
            b
            for b in range(self.model.nbody)
            if "finger" in self.model.body(b).name
            and self.model.body(b).name.endswith(("leftfinger", "rightfinger"))
        ]
        self.fingers = fingers[:2]
        self._subtrees: dict[str, set[int]] = {}

    # the hand
    def wrist(self, toward: np.ndarray | None = None) -> Wrist:
        """The arm's last joint (it turns the hand about where the fingers point); given the hand's
        target ``toward``, as it will be there once the base has turned toward it."""
        m, d = self.model, self.data
        j = m.joint(self.env.robots[0].robot_joints[-1]).id
        wrist = Wrist(
            np.array(d.xaxis[j]), float(d.qpos[m.jnt_qposadr[j]]), *(float(v) for v in m.jnt_range[j])
        )
        return wrist if toward is None else wrist.after_yaw(base_yaw(self.shoulder(), self.hand(), toward))

    def hand(self) -> np.ndarray:
        return np.array(self.data.site_xpos[self.site])

    def finger_gap(self) -> float:
        """The distance between the two fingers' bodies (m)."""
        a, b = (np.array(self.data.xpos[f]) for f in self.fingers)
        return float(np.linalg.norm(b - a))

    def hand_rotation(self) -> np.ndarray:
        return np.array(self.data.site_xmat[self.site]).reshape(3, 3)

    def finger_axis(self) -> np.ndarray:
        """Unit vector from one finger to the other (the closing direction), world frame."""
        a, b = (np.array(self.data.xpos[f]) for f in self.fingers)
        return (b - a) / max(float(np.linalg.norm(b - a)), 1e-9)

    # objects
    def names(self) -> list[str]:
        return [*self.env.objects_dict, *self.env.fixtures_dict]

    def body(self, name: str) -> int:
        return int(self.env.obj_body_id[name])

    def owner(self, region: str) -> str:
        """The object or fixture a BDDL name refers to (a region's name starts with its owner's)."""
        if region in self.env.obj_body_id:
            return region
        owners = [n for n in self.names() if region.startswith(n + "_")]
        if not owners:
            raise ValueError(f"the LIBERO expert finds no object or fixture for {region!r}")
        return max(owners, key=len)

    def position(self, name: str) -> np.ndarray:
        """A body's origin, or a region's site, in the world."""
        if name in self.env.obj_body_id:
            return np.array(self.data.xpos[self.body(name)])
        return np.array(self.env.sim.data.get_site_xpos(name))

    def subtree(self, name: str) -> set[int]:
        if name not in self._subtrees:
            root, parent = self.body(name), self.model.body_parentid
            inside = set()
            for b in range(self.model.nbody):
                x = b
                while x not in (0, root):
                    x = int(parent[x])
                if x == root:
                    inside.add(b)
            self._subtrees[name] = inside
        return self._subtrees[name]

    def corners(self, name: str) -> np.ndarray:
        """World corners of the collision geoms' bounding boxes of an object (n x 3)."""
        bodies, m, d = self.subtree(name), self.model, self.data
        out = []
        signs = np.array(np.meshgrid([-1, 1], [-1, 1], [-1, 1])).T.reshape(-1, 3)
        for g in range(m.ngeom):
            if m.geom_bodyid[g] in bodies and (m.geom_contype[g] or m.geom_conaffinity[g]):
                centre, half = m.geom_aabb[g, :3], m.geom_aabb[g, 3:]
                rot = d.geom_xmat[g].reshape(3, 3)
                out.append(d.geom_xpos[g] + (centre + signs * half) @ rot.T)
        if not out:
            raise ValueError(f"the LIBERO expert finds no collision geometry for {name!r}")
        return np.concatenate(out)

    def box(self, name: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(centre, half extents, axes)`` of an object's bounding box in its own frame (axes: columns,
        world), from its collision geoms."""
        rot = np.array(self.data.xmat[self.body(name)]).reshape(3, 3)
        local = (self.corners(name) - self.position(name)) @ rot
        lo, hi = local.min(0), local.max(0)
        return self.position(name) + rot @ ((lo + hi) / 2), (hi - lo) / 2, rot

    def local_boxes(self, name: str) -> list[tuple[np.ndarray, np.ndarray]]:
        """Each collision geom's bounding box ``(low, high)`` in the object's own frame, from its origin."""
        rot = np.array(self.data.xmat[self.body(name)]).reshape(3, 3)
        local = ((self.corners(name) - self.position(name)) @ rot).reshape(-1, 8, 3)
        return [(c.min(0), c.max(0)) for c in local]

    def extent(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """World axis-aligned bounds ``(low, high)`` of an object."""
        c = self.corners(name)
        return c.min(0), c.max(0)

    def surface_z(self, xy: np.ndarray, skip: str) -> float:
        """Height of the first collision surface below ``xy`` from above the scene, ignoring ``skip``'s
        geoms and the robot's (a ray cast)."""
        m, d, mj = self.model, self.data, self.mujoco
        skip_bodies = self.subtree(skip)
        start = np.array([xy[0], xy[1], 2.5])
        top = -np.inf
        groups = np.ones(6, np.uint8)
        geom = np.zeros(1, np.int32)
        for _ in range(16):  # step past ignored geoms
            dist = mj.mj_ray(m, d, start, np.array([0.0, 0.0, -1.0]), groups, 1, -1, geom)
            if dist < 0:
                break
            hit = start[2] - dist
            g = int(geom[0])
            collides = m.geom_contype[g] or m.geom_conaffinity[g]
            if collides and m.geom_bodyid[g] not in skip_bodies and not self._robot(g):
                top = hit
                break
            start = np.array([xy[0], xy[1], hit - 1e-4])
        return float(top)

    def joints_of(self, name: str) -> list[str]:
        """The articulation joints a BDDL name refers to: a region's own joints, else its owner's."""
        site = self.env.object_sites_dict.get(name)
        joints = getattr(site, "joints", None) if site is not None else None
        if not joints:
            joints = list(self.env.get_object(self.owner(name)).joints)
        if not joints:
            raise ValueError(f"the LIBERO expert finds no joint to move for {name!r}")
        return list(joints)

    def joint(self, joint: str) -> tuple[float, np.ndarray, np.ndarray, int, np.ndarray]:
        """``(qpos, world axis, world anchor, type, range)`` of a joint."""
        m, d = self.model, self.data
        j = m.joint(joint).id
        rot = np.array(d.xmat[m.jnt_bodyid[j]]).reshape(3, 3)
        return (
            float(d.qpos[m.jnt_qposadr[j]]),
            rot @ m.jnt_axis[j],
            np.array(d.xanchor[j]),
            int(m.jnt_type[j]),
            np.array(m.jnt_range[j]),
        )

    def joint_body_boxes(self, joint: str) -> list[tuple[np.ndarray, np.ndarray]]:
        """World bounding boxes ``(low, high)`` of the collision geoms the joint moves (its body only)."""
        return [(c.min(0), c.max(0)) for c in self.joint_body_corners(joint)]

    def joint_body_corners(self, joint: str) -> list[np.ndarray]:
        """The 8 world corners (8 x 3) of each collision geom's own box, for the body the joint moves."""
        m, d = self.model, self.data
        body = m.jnt_bodyid[m.joint(joint).id]
        signs = np.array(np.meshgrid([-1, 1], [-1, 1], [-1, 1])).T.reshape(-1, 3)
        return [
            d.geom_xpos[g]
            + (m.geom_aabb[g, :3] + signs * m.geom_aabb[g, 3:]) @ d.geom_xmat[g].reshape(3, 3).T
            for g in range(m.ngeom)
            if m.geom_bodyid[g] == body and (m.geom_contype[g] or m.geom_conaffinity[g])
        ]

    def shoulder(self) -> np.ndarray:
        """The arm's shoulder (its second link's origin), where its reach is measured from."""
        prefix = self.env.robots[0].robot_model.naming_prefix
        return np.array(self.data.xpos[self.model.body(f"{prefix}link2").id])

    def free_spot(self, region: str, radius: float, skip: str, grid: int = 9) -> np.ndarray:
        """The point of a region (LIBERO's box: site position +- its size, turned by the site) where an
        object of ``radius`` lands lowest: the tallest collision geom whose box meets the object's
        footprint is the lowest there (no wall, rim or overhang in the way), nearest the centre among equals."""
        site = self.env.object_sites_dict.get(region)
        centre = self.position(region)
        size = getattr(site, "size", None)
        if size is None:
            return centre[:2]
        half = np.abs(np.array(self.env.sim.data.get_site_xmat(region)) @ np.asarray(size, float))[:2]
        half = inner_half(half)  # the origin lands a little off: aim inside the edge LIBERO checks
        lows, highs = self._geom_boxes(skip)
        reach = radius + 0.005
        best, best_key = centre[:2], (np.inf, np.inf)
        for fx in np.linspace(-1.0, 1.0, grid):
            for fy in np.linspace(-1.0, 1.0, grid):
                point = centre[:2] + np.array([fx, fy]) * half
                meets = np.all((lows[:, :2] < point + reach) & (highs[:, :2] > point - reach), axis=1)
                key = (round(float(highs[meets, 2].max(initial=-np.inf)), 3), float(np.hypot(fx, fy)))
                if key < best_key:
                    best, best_key = point, key
        return best

    def roomiest_spot(self, region: str, radius: float, skip: str, grid: int = 17) -> np.ndarray:
        """The point of a region (a drawer's inside) where an object of ``radius`` comes least near
        anything standing above the region's floor (its walls, the handles of drawers above): the
        smallest overlap of the footprint with such geoms, nearest the centre among equals. The floor is
        the region box's bottom where that lies lower than the surface over its centre (a drawer
        pulled out part way: the cabinet's top board covers the centre)."""
        site = self.env.object_sites_dict.get(region)
        centre, size = self.position(region), getattr(site, "size", None)
        if size is None:
            return centre[:2]
        extent = np.abs(np.array(self.env.sim.data.get_site_xmat(region)) @ np.asarray(size, float))
        half = extent[:2]
        lows, highs = self._geom_boxes(skip)
        floor = min(self.surface_z(centre[:2], skip), float(centre[2] - extent[2]))
        standing = highs[:, 2] > floor + 0.01
        lows, highs = lows[standing, :2], highs[standing, :2]
        best, best_key = centre[:2], (np.inf, np.inf)
        for fx in np.linspace(-1.0, 1.0, grid):
            for fy in np.linspace(-1.0, 1.0, grid):
                point = centre[:2] + np.array([fx, fy]) * half
                gap = np.linalg.norm(np.maximum(np.maximum(lows - point, point - highs), 0.0), axis=1)
                key = (round(float(np.max(radius + 0.005 - gap, initial=0.0)), 3), float(np.hypot(fx, fy)))
                if key < best_key:
                    best, best_key = point, key
        return best

    def spread_spot(self, region: str, k: int, n: int) -> np.ndarray:
        """The k-th of n spots along a region's diagonal, SPREAD_MARGIN inside its corners: where n objects
        put on one region (two moka pots on a stove's cook region) leave each other room."""
        site = self.env.object_sites_dict.get(region)
        centre, size = self.position(region), getattr(site, "size", None)
        if size is None or n < 2:
            return centre[:2]
        half = np.abs(np.array(self.env.sim.data.get_site_xmat(region)) @ np.asarray(size, float))[:2]
        return centre[:2] + (-1.0 + 2.0 * k / (n - 1)) * np.maximum(half - SPREAD_MARGIN, 0.0)

    def within_reach(self, region: str, spot: np.ndarray, offset: np.ndarray, z: float) -> np.ndarray:
        """``spot`` (xy), or, when the hand holding an object's origin at ``offset`` from it would be
        farther than PLACE_REACH from the shoulder there (at height ``z``: the arm near straight, where
        the controller loses its way), the point of the region's inner box nearest ``spot`` where it is
        not (the one nearest the shoulder when none is)."""
        shoulder = self.shoulder()

        def far(point: np.ndarray) -> float:
            return float(np.linalg.norm(np.array([*(point - offset[:2]), z]) - shoulder))

        site = self.env.object_sites_dict.get(region)
        size = getattr(site, "size", None)
        if far(spot) <= PLACE_REACH or size is None:
            return spot
        half = np.abs(np.array(self.env.sim.data.get_site_xmat(region)) @ np.asarray(size, float))[:2]
        grid = np.linspace(-1.0, 1.0, 9)
        points = [
            self.position(region)[:2] + np.array([fx, fy]) * inner_half(half) for fx in grid for fy in grid
        ]
        near = [p for p in points if far(p) <= PLACE_REACH]
        if near:
            return min(near, key=lambda p: float(np.linalg.norm(p - spot)))
        return min(points, key=far)

    def _geom_boxes(self, skip: str) -> tuple[np.ndarray, np.ndarray]:
        """World bounding boxes of the scene's collision geoms, but ``skip``'s and the robot's."""
        m, d = self.model, self.data
        skip_bodies = self.subtree(skip)
        signs = np.array(np.meshgrid([-1, 1], [-1, 1], [-1, 1])).T.reshape(-1, 3)
        lows, highs = [], []
        for g in range(m.ngeom):
            if (
                not (m.geom_contype[g] or m.geom_conaffinity[g])
                or m.geom_bodyid[g] in skip_bodies
                or self._robot(g)
            ):
                continue
            c = (
                d.geom_xpos[g]
                + (m.geom_aabb[g, :3] + signs * m.geom_aabb[g, 3:]) @ d.geom_xmat[g].reshape(3, 3).T
            )
            lows.append(c.min(0))
            highs.append(c.max(0))
        return np.array(lows), np.array(highs)

    def _robot(self, geom: int) -> bool:
        name = self.model.body(self.model.geom_bodyid[geom]).name
        return name.startswith(("robot", "gripper", "mount"))

    def highest_between(self, a: np.ndarray, b: np.ndarray, skip: str, margin: float) -> float:
        """Top of the tallest object or fixture whose box comes within ``margin`` of segment a-b (xy)."""
        top = -np.inf
        for name in self.names():
            if name == skip:
                continue
            lo, hi = self.extent(name)
            if _segment_box_distance(a[:2], b[:2], lo[:2], hi[:2]) < margin:
                top = max(top, float(hi[2]))
        return top


def rise_point(shoulder: np.ndarray, xy: np.ndarray, z: float) -> np.ndarray:
    """Where the hand rises to at height ``z`` from over ``xy``: there, or drawn toward the ``shoulder``
    until the wrist, WRIST_ABOVE over a hand pointing down, is no farther than WRIST_REACH from it (a
    hand turning to point down far out straightens the elbow against its limit, where the controller can
    no longer bring it back toward the robot)."""
    flat = np.asarray(xy, float)[:2] - shoulder[:2]
    rise = z + WRIST_ABOVE - float(shoulder[2])
    room = np.sqrt(max(WRIST_REACH**2 - rise**2, 0.0))
    far = float(np.linalg.norm(flat))
    if far <= room:
        return np.array([*np.asarray(xy, float)[:2], z])
    return np.array([*(shoulder[:2] + flat * room / far), z])


def draw_in(scene: Scene, z: float, gripper: float) -> list[Waypoint]:
    """A hand that is not pointing down and must rise to ``z`` beyond the wrist's reach
    (:func:`rise_point`) is first drawn in toward the robot at its height, pointing as it points:
    turning first would straighten the elbow before the hand came in. None otherwise."""
    hand, point = scene.hand(), scene.hand_rotation()[:, 2]  # where the fingers point: the site's z
    rise = rise_point(scene.shoulder(), hand, z)
    if float(point[2]) < -0.9 or float(np.linalg.norm(rise[:2] - hand[:2])) < 0.01:
        return []
    at = np.array([*rise[:2], hand[2]])
    return [Waypoint(at, scene.finger_axis(), gripper, tol=0.02, approach=_direction(point))]


def travel_over(
    scene: Scene, above: np.ndarray, axis: np.ndarray, gripper: float, twist: float = 0.0
) -> list[Waypoint]:
    """Up from the hand, then across to over ``above``, high enough that the fingers clear what lies
    between (a placed pot stands between the stove's knob and the hand): none when the way is clear."""
    hand = scene.hand()
    obstacles = scene.highest_between(hand, above, skip="", margin=0.05)
    travel_z = min(max(hand[2], above[2], obstacles + CLEARANCE + FINGERS), MAX_HAND_Z)
    if travel_z <= above[2] + 0.01:
        return []
    return [
        *draw_in(scene, travel_z, gripper),
        Waypoint(
            rise_point(scene.shoulder(), hand, travel_z),
            axis,
            gripper,
            tol=0.03,
            turn_tol=TRAVEL_TURN,
            twist=twist,
        ),
        Waypoint(
            np.array([*above[:2], travel_z]), axis, gripper, tol=0.02, turn_tol=TRAVEL_TURN, twist=twist
        ),
    ]


def _segment_box_distance(a: np.ndarray, b: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> float:
    """Distance in the plane between segment a-b and the box [lo, hi] (sampled along the segment)."""
    ts = np.linspace(0.0, 1.0, 21)[:, None]
    points = a + ts * (b - a)
    gap = np.maximum(np.maximum(lo - points, points - hi), 0.0)
    return float(np.linalg.norm(gap, axis=1).min())


# ------------------------------------------------------------------------------------------ planning

Stage = Callable[[Scene], list[Waypoint]]


def _horizontal(v: np.ndarray) -> np.ndarray:
    h = np.array([v[0], v[1], 0.0])
    return h / max(float(np.linalg.norm(h)), 1e-9)


def _direction(v: np.ndarray) -> tuple[float, float, float]:
    """A 3-vector as the ``Waypoint.approach`` tuple."""
    return float(v[0]), float(v[1]), float(v[2])


def _nearest_sign(axis: np.ndarray, current: np.ndarray) -> np.ndarray:
    return axis if float(axis @ current) >= 0 else -axis


class PickPlace:
    """Pick ``obj`` and put it in / on ``target`` (a region site or an object), as planning stages."""

    def __init__(self, goal: Goal, retries: int = 1, slot: tuple[int, int] = (0, 1)) -> None:
        self.goal = goal
        self.obj, self.target = goal.args
        self.retries = retries
        self.slot = slot  # (k, n): the k-th of n objects put on the same region
        self.grasp_kind = ""
        self.base_z = 0.0

    def stages(self) -> list[Stage]:
        return [self.plan_grasp, self.check_grasp, self.fit_slot, self.plan_place]

    def plan_grasp(self, scene: Scene) -> list[Waypoint]:
        centre, half, rot = scene.box(self.obj)
        lo, hi = scene.extent(self.obj)
        self.base_z = float(lo[2])
        horiz = [i for i in range(3) if abs(rot[2, i]) < 0.7]  # the object's two horizontal axes
        up = next(i for i in range(3) if i not in horiz)
        upright = len(horiz) == 2
        if not upright:  # lying at an odd angle: fall back to world axes
            horiz, rot, half, up = [0, 1], np.eye(3), (hi - lo) / 2, 2
            centre = (lo + hi) / 2
        grasp, axis = self._grasp_pose(scene, centre, half, rot, (horiz[0], horiz[1]), up, upright)
        above = grasp + np.array([0, 0, APPROACH])
        above[2] = min(max(above[2], hi[2] + 0.05), MAX_HAND_Z)
        hand = scene.hand()
        # high enough that the fingers (about 5 cm below the hand) clear what lies on the way
        obstacles = scene.highest_between(hand, grasp, skip=self.obj, margin=0.05)
        travel_z = min(max(hand[2], above[2], obstacles + CLEARANCE + FINGERS), MAX_HAND_Z)
        near = grasp + np.array([0, 0, NEAR])
        return [
            *draw_in(scene, travel_z, OPEN),
            Waypoint(
                rise_point(scene.shoulder(), hand, travel_z), axis, OPEN, tol=0.03, turn_tol=TRAVEL_TURN
            ),
            # across at the travel height, then down: a diagonal descent clips what lies under the way
            *(
                [Waypoint(np.array([*above[:2], travel_z]), axis, OPEN, tol=0.02)]
                if travel_z > above[2] + 0.01
                else []
            ),
            Waypoint(above, axis, OPEN, tol=0.015),
            *([Waypoint(near, axis, OPEN, tol=0.015)] if above[2] > near[2] + 0.01 else []),
            Waypoint(grasp, axis, OPEN, speed=SLOW, tol=0.008),
            Waypoint(grasp, axis, CLOSED, speed=SLOW, tol=0.02, settle=12),
            # off the support slowly, then up at full speed (the grip holds once the object hangs free)
            Waypoint(grasp + np.array([0, 0, LIFTED + 0.02]), axis, CLOSED, speed=SLOW, tol=0.015),
            Waypoint(grasp + np.array([0, 0, 0.15]), axis, CLOSED, tol=0.02),
        ]

    def _grasp_pose(
        self,
        scene: Scene,
        centre: np.ndarray,
        half: np.ndarray,
        rot: np.ndarray,
        horiz: tuple[int, int],
        up: int,
        upright: bool,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Where the hand site grasps the object and the direction the fingers close along (world); a
        handle is looked for on an upright object only (its boxes are in its own frame)."""
        width, depth, height = 2 * half[horiz[0]], 2 * half[horiz[1]], 2 * half[up]
        handle = find_handle(scene.local_boxes(self.obj), horiz) if upright else None
        choice = choose_grasp(width, depth, height, handle)
        self.grasp_kind = choice.kind
        narrow = horiz[0] if width <= depth else horiz[1]
        current = scene.finger_axis()
        grasp = np.array([centre[0], centre[1], self.base_z + choice.height])
        if choice.kind == "handle" and handle is not None:
            axis = _horizontal(rot[:, handle.across])
            point = self._handle_point(scene, handle, rot)
            if point is None and height > TALL:  # a moka pot's closed top has no rim: its handle anyway
                point = scene.position(self.obj) + rot @ np.array(handle.point)
            if point is not None:
                return point, _nearest_sign(axis, current)
            # nowhere along a low object's handle does the hand come down clear: its body's rim (a pan)
            self.grasp_kind = "rim"
            grasp = np.array([*scene.position(self.obj)[:2], self.base_z + height - 0.015])
            return self._rim_grasp(scene, grasp, float(half[handle.across]), current)
        if choice.kind == "rim":
            return self._rim_grasp(scene, grasp, min(width, depth) / 2, current)
        return grasp, _nearest_sign(_horizontal(rot[:, narrow]), current)

    def _rim_grasp(
        self, scene: Scene, centre: np.ndarray, radius: float, current: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """The grasp across the wall of a round object about ``centre`` (xy; z: the grasp height):
        preferably at the rim point nearest the robot base (-x), else on the nearest side where the
        hand comes down clear of its neighbours (:func:`rim_side`)."""
        lows, highs = scene._geom_boxes(self.obj)
        side = rim_side(centre, radius - 0.012, float(centre[2]), lows, highs, np.array([-1.0, 0.0]))
        grasp = np.array([*(centre[:2] + side * (radius - 0.012)), centre[2]])
        return grasp, _nearest_sign(np.array([*side, 0.0]), current)

    def _handle_point(self, scene: Scene, handle: Handle, rot: np.ndarray) -> np.ndarray | None:
        """The grasp on a handle: halfway along its protruding part, or the nearest point along it where
        the open fingers and the palm come down clear of other things (a moka pot standing by a pan's
        handle); None when there is no such point."""
        origin, across = scene.position(self.obj), _horizontal(rot[:, handle.across])
        lows, highs = scene._geom_boxes(self.obj)
        for t in (0.5, 0.35, 0.65, 0.2, 0.8):
            local = np.array(handle.point)
            local[handle.along] = handle.span[0] + t * (handle.span[1] - handle.span[0])
            point = origin + rot @ local
            tall = highs[:, 2] > point[2] - FINGERS / 2
            fingers = [point[:2] + sign * across[:2] * FINGER_OPEN for sign in (-1.0, 1.0)]
            if not any(
                np.any(
                    tall & np.all((lows[:, :2] < f + FINGER_HALF) & (highs[:, :2] > f - FINGER_HALF), axis=1)
                )
                for f in fingers
            ) and not palm_blocked(point, across, lows, highs):
                return point
        return None

    def check_grasp(self, scene: Scene) -> list[Waypoint]:
        """After the lift: nothing to do when the object came up; else let go and grasp again (once)."""
        lo, _ = scene.extent(self.obj)
        if lo[2] - self.base_z >= LIFTED or self.retries <= 0:
            return []
        self.retries -= 1
        hand = scene.hand()
        axis = _horizontal(scene.finger_axis())
        return [Waypoint(hand, axis, OPEN, tol=0.05, settle=10), *self.plan_grasp(scene)]

    def fit_slot(self, scene: Scene) -> list[Waypoint]:
        """Into a slot (a caddy's compartment): turn the carried object lengthwise along it first; the
        place is then planned from its measured pose (:mod:`policies.experts.libero_entry`)."""
        half = slot_half(scene, self.obj, self.target) if self.goal.predicate == "in" else None
        if half is None:
            return []
        turn = slot_turn(object_axes(scene, self.obj)[1], half)
        if abs(turn) < 0.05:
            return []
        spin = Rotation.from_rotvec(np.array([0.0, 0.0, turn])).as_matrix()
        hand, axis = scene.hand(), spin @ _horizontal(scene.finger_axis())
        return [Waypoint(hand + np.array([0.0, 0.0, 0.03]), axis, CLOSED, tol=0.03, settle=4)]

    def plan_place(self, scene: Scene) -> list[Waypoint]:
        hand, axis = scene.hand(), _horizontal(scene.finger_axis())
        lo, hi = scene.extent(self.obj)
        centre = (lo + hi) / 2
        # measured carry offset: where the object's origin (what LIBERO checks) hangs from the hand
        offset = scene.position(self.obj) - hand
        goal = scene.position(self.target)  # On an object: over its origin (LIBERO checks 3 cm)
        if self.target not in scene.env.obj_body_id and self.slot[1] > 1:  # shared: spread along it
            goal[:2] = scene.spread_spot(self.target, *self.slot)
        elif self.goal.predicate == "in" and slot_half(scene, self.obj, self.target) is not None:  # a slot
            goal[:2] = slot_spot(scene, self.obj, self.target)
        elif getattr(scene.env.object_sites_dict.get(self.target), "joints", None):  # in a drawer
            goal[:2] = scene.roomiest_spot(self.target, float(max(hi[:2] - lo[:2])) / 2, skip=self.obj)
        elif self.target not in scene.env.obj_body_id:  # a region: the spot in it with the most room
            goal[:2] = scene.free_spot(self.target, float(max(hi[:2] - lo[:2])) / 2, skip=self.obj)
        surface = scene.surface_z(goal[:2], skip=self.obj)
        slot = self.goal.predicate == "in" and slot_half(scene, self.obj, self.target) is not None
        if self.target not in scene.env.obj_body_id and not slot:  # where the hand gets with the arm bent
            level = surface if np.isfinite(surface) else float(goal[2])
            goal[:2] = scene.within_reach(self.target, goal[:2], offset, hand[2] - lo[2] + level)
            surface = scene.surface_z(goal[:2], skip=self.obj)
        hand_goal_xy = goal[:2] - offset[:2]
        if not np.isfinite(surface):
            surface = float(goal[2])
        below = hand[2] - lo[2]  # hand height above the object's base
        release_z = surface + RELEASE_GAP[self.goal.predicate] + below
        obstacles = scene.highest_between(
            centre, np.array([*goal[:2], 0.0]), skip=self.obj, margin=float(max(hi[:2] - lo[:2])) / 2 + 0.02
        )
        carry_z = min(max(release_z + 0.06, obstacles + CLEARANCE + below, hand[2]), MAX_HAND_Z)
        over = np.array([*hand_goal_xy, carry_z])
        release = np.array([*hand_goal_xy, min(release_z, carry_z)])
        near = release + np.array([0, 0, NEAR])
        return [
            Waypoint(np.array([*hand[:2], carry_z]), axis, CLOSED, tol=0.02, turn_tol=TRAVEL_TURN),
            Waypoint(over, axis, CLOSED, tol=0.012),
            *([Waypoint(near, axis, CLOSED, tol=0.015)] if over[2] > near[2] + 0.01 else []),
            Waypoint(release, axis, CLOSED, speed=SLOW, tol=0.01),
            Waypoint(release, axis, OPEN, tol=0.05, settle=10),
            Waypoint(release + np.array([0, 0, 0.08]), axis, OPEN, tol=0.03),
        ]


DRAWER_OPEN_MARGIN = 0.012  # m: pull a drawer this much past LIBERO's "open" threshold (within its range)
SLIDE, HINGE = 2, 3  # MuJoCo joint types (mjtJoint)
PUSH_GAP = 0.02  # m: closed fingertips start this far outside a drawer's handle to push it shut
CLOSE_TILT = 0.7  # the fingers point down and this much toward the cabinet (35 degrees) when closing
GRIP_DEPTH = 0.007  # m: the pad centres this far behind a handle's outer side (handles are ~1.5 cm deep)
TWIST = 0.75  # rad: a knob is turned this far past where it starts


def drawer_goal(predicate: str, state: Mapping[str, Any], limits: np.ndarray) -> tuple[float, float]:
    """``(joint position, open sign)`` a drawer is moved to: just past LIBERO's "open" threshold by
    DRAWER_OPEN_MARGIN, or all the way in (LIBERO's "closed" is a strict inequality at the end of the
    range), within the range; the sign is the way along the joint axis "open" lies."""
    open_sign = -1.0 if max(state["default_open_ranges"]) < min(state["default_close_ranges"]) else 1.0
    if predicate == "open":
        edge = max(state["default_open_ranges"]) if open_sign < 0 else min(state["default_open_ranges"])
        goal_q = edge + open_sign * DRAWER_OPEN_MARGIN
    else:
        goal_q = limits[1] if open_sign < 0 else limits[0]
    return float(np.clip(goal_q, limits[0], limits[1])), open_sign


def handle_of(boxes: list[tuple[np.ndarray, np.ndarray]], out: np.ndarray) -> tuple[np.ndarray, float]:
    """The handle of a drawer whose geoms are ``boxes`` and which opens along ``out`` (unit, horizontal):
    ``(handle centre, handle's outer side as a coordinate along out)``; the handle is the geom reaching
    farthest out."""

    def span(box: tuple[np.ndarray, np.ndarray]) -> tuple[float, float]:
        corners = np.array(
            [[box[i][0], box[j][1], box[k][2]] for i in (0, 1) for j in (0, 1) for k in (0, 1)]
        )
        values = corners @ out
        return float(values.min()), float(values.max())

    spans = [span(b) for b in boxes]
    h = int(np.argmax([hi for _, hi in spans]))
    lo, hi = boxes[h]
    return (lo + hi) / 2, spans[h][1]


class Articulate:
    """Open or close a drawer (a slide joint: hook the handle and pull / push it along the joint axis), or
    turn a knob on or off (a hinge: grasp its grip and twist about the joint axis)."""

    def __init__(self, goal: Goal, retries: int = 1) -> None:
        self.goal, self.retries = goal, retries
        self.target = goal.args[0]
        self.grasp_kind = ""

    def stages(self) -> list[Stage]:
        return [self.plan, self.push_door, self.check]

    def done(self, scene: Scene) -> bool:
        state = scene.env.object_states_dict[self.target]
        method = {"open": "is_open", "close": "is_close", "turnon": "turn_on", "turnoff": "turn_off"}
        return bool(getattr(state, method[self.goal.predicate])())

    def plan(self, scene: Scene) -> list[Waypoint]:
        if self.done(scene):
            return []
        joint = scene.joints_of(self.target)[0]
        qpos, axis, anchor, kind, limits = scene.joint(joint)
        if kind == SLIDE:  # a drawer
            self.grasp_kind = "handle"
            return self._drawer(scene, joint, qpos, axis, limits)
        if kind == HINGE and abs(axis[2]) > 0.9 and self.goal.predicate in ("turnon", "turnoff"):
            self.grasp_kind = "twist"
            return self._knob(scene, joint, qpos, axis, anchor)
        if kind == HINGE and abs(axis[2]) > 0.9:  # a door on an upright hinge
            self.grasp_kind = "door"
            return self._door(scene, joint, qpos, axis, anchor, limits)
        raise ValueError(
            f"the LIBERO expert cannot yet ({self.goal.predicate} {self.target}): joint {joint} "
            f"is {'a hinge' if kind == HINGE else 'not a slide or hinge'}"
        )

    def check(self, scene: Scene) -> list[Waypoint]:
        if self.done(scene) or self.retries <= 0:
            return []
        self.retries -= 1
        hand = scene.hand()
        axis = _horizontal(scene.finger_axis())
        up = Waypoint(hand + np.array([0, 0, 0.06]), axis, OPEN, tol=0.02, settle=4)
        return [up, *self.plan(scene)]

    def _drawer(
        self, scene: Scene, joint: str, qpos: float, axis: np.ndarray, limits: np.ndarray
    ) -> list[Waypoint]:
        opening = self.goal.predicate == "open"
        state = scene.env.get_object(scene.owner(self.target)).object_properties["articulation"]
        goal_q, open_sign = self.drawer_target(state, limits)
        out = _horizontal(axis * open_sign)
        travel = abs(goal_q - qpos) + 0.01
        centre, outer = handle_of(scene.joint_body_boxes(joint), out)
        hand = scene.hand()
        if not opening:  # from above, closed fingertips just outside the handle, pushed in along the axis
            across = np.array([-out[1], out[0], 0.0])
            start = centre + out * (outer - float(centre @ out) + PUSH_GAP)
            above = np.array([*start[:2], min(max(start[2] + 0.12, hand[2]), MAX_HAND_Z)])
            # fingers tipped toward the cabinet: the hand stays clear of the handles of drawers above
            tip = DOWN + (-out) * CLOSE_TILT
            point = _direction(tip / np.linalg.norm(tip))
            return [
                Waypoint(above, across, CLOSED, tol=0.02, turn_tol=TRAVEL_TURN, approach=point),
                Waypoint(start + np.array([0, 0, NEAR]), across, CLOSED, tol=0.012, approach=point),
                Waypoint(start, across, CLOSED, speed=SLOW, tol=0.008, approach=point),
                Waypoint(
                    start - out * travel, across, CLOSED, speed=SLOW, tol=0.015, max_steps=90, approach=point
                ),
                Waypoint(
                    start - out * travel + np.array([0, 0, 0.08]), across, CLOSED, tol=0.03, approach=point
                ),
            ]
        point = _direction(-out)  # the hand faces the drawer, fingers closing up-down
        vertical = np.array([0.0, 0.0, 1.0])
        start = centre + out * (outer - float(centre @ out) - GRIP_DEPTH)  # pads around the bar
        front = start + out * 0.10
        lift = np.array([*front[:2], min(max(front[2] + 0.08, hand[2]), MAX_HAND_Z)])
        return [
            Waypoint(lift, vertical, OPEN, tol=0.03, approach=point, max_steps=100),
            Waypoint(front, vertical, OPEN, tol=0.012, approach=point),
            # quickly to just short of the bar, the last stretch slowly (the open pads straddle it)
            Waypoint(start + out * NEAR, vertical, OPEN, tol=0.012, approach=point),
            Waypoint(start, vertical, OPEN, speed=SLOW, tol=0.008, approach=point),
            Waypoint(start, vertical, CLOSED, speed=SLOW, tol=0.02, settle=12, approach=point),
            Waypoint(
                start + out * travel, vertical, CLOSED, speed=PULL, tol=0.015, max_steps=90, approach=point
            ),
            Waypoint(start + out * (travel + 0.06), vertical, OPEN, tol=0.03, approach=point),
        ]

    def drawer_target(self, state: Mapping[str, Any], limits: np.ndarray) -> tuple[float, float]:
        """``(joint position, open sign)`` the drawer is moved to (:func:`drawer_goal`)."""
        return drawer_goal(self.goal.predicate, state, limits)

    def _door(
        self, scene: Scene, joint: str, qpos: float, axis: np.ndarray, anchor: np.ndarray, limits: np.ndarray
    ) -> list[Waypoint]:
        """Grasp the door's handle from above and carry it round the hinge, as far toward past LIBERO's
        threshold as the arm reaches (the rest is pushed: :meth:`push_door`)."""
        state = scene.env.get_object(scene.owner(self.target)).object_properties["articulation"]
        swing = door_goal(self.goal.predicate, state, limits) - qpos
        grasp, across = door_grasp(scene.joint_body_boxes(joint), axis, anchor, swing)
        hand = scene.hand()
        above = grasp + np.array([0.0, 0.0, APPROACH])
        obstacles = scene.highest_between(hand, grasp, skip="", margin=0.05)
        travel_z = min(max(hand[2], above[2], obstacles + CLEARANCE + FINGERS), MAX_HAND_Z)
        shoulder = scene.shoulder()
        arc = door_arc(grasp, across, axis, anchor, swing)
        reachable = [wp for wp in arc if float(np.linalg.norm(wp[0] - shoulder)) <= REACH] or arc[:1]
        end, end_axis = reachable[-1]
        return [
            Waypoint(np.array([*hand[:2], travel_z]), across, OPEN, tol=0.03, turn_tol=TRAVEL_TURN),
            Waypoint(np.array([*above[:2], travel_z]), across, OPEN, tol=0.02),
            Waypoint(above, across, OPEN, tol=0.015),
            Waypoint(grasp, across, OPEN, speed=SLOW, tol=0.008),
            Waypoint(grasp, across, CLOSED, speed=SLOW, tol=0.02, settle=10),
            *(
                Waypoint(p, a, CLOSED, speed=SLOW, tol=0.02, turn_tol=0.15, max_steps=40)
                for p, a in reachable
            ),
            Waypoint(end, end_axis, OPEN, tol=0.05, settle=6),
        ]

    def push_door(self, scene: Scene) -> list[Waypoint]:
        """The rest of a door's swing, pushed: closed fingertips against the panel's trailing face near
        its free edge, carried round the hinge (a hand holding the handle cannot reach so far)."""
        if self.grasp_kind != "door" or self.done(scene):
            return []
        joint = scene.joints_of(self.target)[0]
        qpos, axis, anchor, _, limits = scene.joint(joint)
        state = scene.env.get_object(scene.owner(self.target)).object_properties["articulation"]
        swing = door_goal(self.goal.predicate, state, limits) - qpos
        start, along = door_push_start(scene.joint_body_corners(joint), axis, anchor, swing)
        hand = scene.hand()
        top = max(float(c[:, 2].max()) for c in scene.joint_body_corners(joint))
        travel_z = min(max(hand[2], top + CLEARANCE + FINGERS), MAX_HAND_Z)
        arc = door_arc(start, along, axis, anchor, swing)
        return [
            Waypoint(np.array([*hand[:2], travel_z]), along, CLOSED, tol=0.03, turn_tol=TRAVEL_TURN),
            Waypoint(np.array([*start[:2], travel_z]), along, CLOSED, tol=0.015),
            Waypoint(start, along, CLOSED, speed=SLOW, tol=0.012),
            *(Waypoint(p, a, CLOSED, speed=SLOW, tol=0.02, turn_tol=0.15, max_steps=40) for p, a in arc),
            Waypoint(arc[-1][0] + np.array([0.0, 0.0, 0.1]), arc[-1][1], CLOSED, tol=0.03),
        ]

    def _knob(
        self, scene: Scene, joint: str, qpos: float, axis: np.ndarray, anchor: np.ndarray
    ) -> list[Waypoint]:
        boxes = scene.joint_body_boxes(joint)
        top = max(float(hi[2]) for _, hi in boxes)
        # the grip: the geoms standing above the knob's base; fingers across its narrow side
        base = min(float(lo[2]) for lo, _ in boxes)
        ridge = [(lo, hi) for lo, hi in boxes if hi[2] > base + 0.6 * (top - base)]
        lo = np.min([b[0] for b in ridge], axis=0)
        hi = np.max([b[1] for b in ridge], axis=0)
        across = np.array([1.0, 0.0, 0.0]) if hi[0] - lo[0] < hi[1] - lo[1] else np.array([0.0, 1.0, 0.0])
        current = scene.finger_axis()
        axis0 = _nearest_sign(across, current)
        sign = 1.0 if self.goal.predicate == "turnon" else -1.0
        sign *= 1.0 if axis[2] > 0 else -1.0  # turn about +z (world) by this sign
        turn = Rotation.from_rotvec(np.array([0.0, 0.0, sign * TWIST])).as_matrix()
        grip = np.array([anchor[0], anchor[1], (top + base) / 2 + 0.01])
        above = np.array([*grip[:2], grip[2] + 0.10])
        state = scene.env.get_object(scene.owner(self.target)).object_properties["articulation"]
        count = knob_twists(self.goal.predicate, state, qpos)
        twists: list[Waypoint] = []
        for k in range(count):  # a knob far from the threshold is let go and gripped again, turned on
            start = Rotation.from_rotvec(np.array([0.0, 0.0, sign * TWIST * k])).as_matrix() @ axis0
            if k:
                up = grip + np.array([0, 0, 0.03])
                twists.append(Waypoint(up, start, OPEN, tol=0.02, twist=sign * TWIST * (count - k)))
            twists += self._twist(grip, start, turn, sign * TWIST * (count - k))
        end = Rotation.from_rotvec(np.array([0.0, 0.0, sign * TWIST * count])).as_matrix() @ axis0
        return [
            # the wrist grips the knob with room left for the twists, on the side they turn it
            *travel_over(scene, above, axis0, OPEN, twist=sign * TWIST * count),
            Waypoint(above, axis0, OPEN, tol=0.015, twist=sign * TWIST * count),
            *twists,
            Waypoint(above, end, OPEN, tol=0.03),
        ]

    @staticmethod
    def _twist(grip: np.ndarray, axis0: np.ndarray, turn: np.ndarray, left: float) -> list[Waypoint]:
        """Down to the knob's grip, fingers along ``axis0``; close, turn the hand by ``turn``, let go
        (the wrist gripping with room for the ``left`` rad about +z still to twist)."""
        return [
            Waypoint(grip, axis0, OPEN, speed=SLOW, tol=0.008, twist=left),
            Waypoint(grip, axis0, CLOSED, speed=SLOW, tol=0.02, settle=10, twist=left),
            Waypoint(grip, turn @ axis0, CLOSED, speed=SLOW, tol=0.02, settle=4, max_steps=60),
            Waypoint(grip, turn @ axis0, OPEN, tol=0.05, settle=6),
        ]


KNOB_MARGIN = 0.2  # rad: a knob is turned this far past LIBERO's on / off threshold


def knob_twists(predicate: str, state: Mapping[str, Any], qpos: float) -> int:
    """How many twists of TWIST a knob at ``qpos`` needs to pass LIBERO's "on" threshold (upward) or
    its "off" one (downward, at the end of the range) by KNOB_MARGIN; one at least."""
    if predicate == "turnon":
        need = min(state["default_turnon_ranges"]) - qpos + KNOB_MARGIN
    else:
        need = qpos - max(state["default_turnoff_ranges"]) + KNOB_MARGIN
    return max(1, int(np.ceil(need / TWIST)))


DOOR_OPEN_MARGIN = 0.25  # rad: swing a door this far past LIBERO's "open" threshold (within its range)
DOOR_CLOSE_PAST = 0.1  # rad: aim this far past the closed end (the joint's limit stops it there)
DOOR_STEP = 0.15  # rad: one waypoint of a door's arc
HANDLE_GRIP = 0.025  # m: a door's handle is grasped this far below its top
REACH = 0.80  # m: the farthest the hand site is sent from the shoulder while it holds a door's handle
DOOR_EDGE_INSET = 0.02  # m: a door is pushed this far in from its free edge
DOOR_PUSH_GAP = 0.015  # m: ... the hand site this far behind the face it pushes (the finger's half width)


def door_goal(predicate: str, state: Mapping[str, Any], limits: np.ndarray) -> float:
    """The joint position a door is swung to: past LIBERO's "open" threshold by DOOR_OPEN_MARGIN (within
    the range), or past the closed end of the range (LIBERO's "closed" is a strict inequality there)."""
    open_sign = -1.0 if max(state["default_open_ranges"]) < min(state["default_close_ranges"]) else 1.0
    if predicate == "open":
        edge = max(state["default_open_ranges"]) if open_sign < 0 else min(state["default_open_ranges"])
        return float(np.clip(edge + open_sign * DOOR_OPEN_MARGIN, limits[0], limits[1]))
    return float(limits[1] if open_sign < 0 else limits[0]) - open_sign * DOOR_CLOSE_PAST


def door_grasp(
    boxes: list[tuple[np.ndarray, np.ndarray]], axis: np.ndarray, anchor: np.ndarray, swing: float
) -> tuple[np.ndarray, np.ndarray]:
    """``(grasp point, finger axis)`` on a hinged door whose geoms are ``boxes`` (world), turned ``swing``
    rad about ``axis`` to come: the handle is the geom reaching farthest the way the door's panel (its
    biggest geom) moves; the fingers close across it, horizontally, a little below its top."""
    panel = max(boxes, key=lambda b: float(np.prod(b[1] - b[0] + 1e-3)))
    lever = (panel[0] + panel[1]) / 2 - anchor
    out = _horizontal(np.sign(swing) * np.cross(axis, lever))
    handle = max(boxes, key=lambda b: float(np.max(_box_corners(b) @ out)))
    centre = (handle[0] + handle[1]) / 2
    grasp = np.array([centre[0], centre[1], max(float(handle[1][2]) - HANDLE_GRIP, float(centre[2]))])
    return grasp, _horizontal(np.cross(axis, out))


def door_push_start(
    corners: list[np.ndarray], axis: np.ndarray, anchor: np.ndarray, swing: float
) -> tuple[np.ndarray, np.ndarray]:
    """``(hand position, finger axis)`` to push a hinged door on by ``swing`` rad about ``axis``: the
    fingertips DOOR_PUSH_GAP off the trailing face of its panel (the biggest geom, ``corners`` 8 x 3 each,
    world), DOOR_EDGE_INSET in from its free edge, at mid height; the fingers lie along the panel."""
    panel = max(corners, key=lambda c: float(np.prod(np.ptp(c, axis=0) + 1e-3)))
    unit = axis / np.linalg.norm(axis)
    radial = [(c - anchor) - ((c - anchor) @ unit) * unit for c in panel]
    edge = max(radial, key=lambda r: float(np.linalg.norm(r)))
    u = edge / np.linalg.norm(edge)
    t = np.sign(swing) * np.cross(unit, u)  # the way the edge moves
    trail = min(float(r @ t) for r in radial)
    mid = float(panel[:, 2].mean())
    point = anchor + u * (float(np.linalg.norm(edge)) - DOOR_EDGE_INSET) + t * (trail - DOOR_PUSH_GAP)
    return np.array([point[0], point[1], mid]), _horizontal(u)


def door_arc(
    grasp: np.ndarray, across: np.ndarray, axis: np.ndarray, anchor: np.ndarray, swing: float
) -> list[tuple[np.ndarray, np.ndarray]]:
    """The hand's ``(position, finger axis)`` along the circle the grasp point makes about the hinge,
    every DOOR_STEP rad up to ``swing`` (signed, about ``axis``)."""
    steps = max(int(np.ceil(abs(swing) / DOOR_STEP)), 1)
    out = []
    for k in range(1, steps + 1):
        turn = Rotation.from_rotvec(axis / np.linalg.norm(axis) * swing * k / steps).as_matrix()
        out.append((anchor + turn @ (grasp - anchor), _horizontal(turn @ across)))
    return out


def _box_corners(box: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    lo, hi = box
    return np.array(
        [[(lo, hi)[i][0], (lo, hi)[j][1], (lo, hi)[k][2]] for i in (0, 1) for j in (0, 1) for k in (0, 1)]
    )


FLAT = 0.03  # m: an object this low and wider than the gripper is pushed, not lifted, to a place at its level
PUSH_HEIGHT = 0.012  # m: the closed fingertips push this far above the object's base
PUSH_INSET = 0.025  # m: ... from inside its rim (outside, a wall or cabinet may stand in the way)


def is_flat_and_wide(scene: Scene, obj: str) -> bool:
    """Lower than FLAT and too wide for the fingers (a plate): such an object is pushed."""
    lo, hi = scene.extent(obj)
    return choose_grasp(*(hi - lo)).kind == "rim" and float(hi[2] - lo[2]) < FLAT


class Push:
    """Push a flat, wide object along its support into a region at its own level (``On`` a table region):
    closed fingertips inside it against the rim away from the region, then straight through to where its centre meets the region's freest
    spot; re-planned once from where it ended."""

    def __init__(self, goal: Goal, retries: int = 1) -> None:
        self.goal, self.retries = goal, retries
        self.obj, self.target = goal.args
        self.grasp_kind = "push"

    def stages(self) -> list[Stage]:
        return [self.plan, self.again]

    def plan(self, scene: Scene) -> list[Waypoint]:
        lo, hi = scene.extent(self.obj)
        centre = (lo + hi) / 2
        radius = float(max(hi[:2] - lo[:2])) / 2
        goal = scene.free_spot(self.target, radius, skip=self.obj)
        shift = goal - centre[:2]
        if float(np.linalg.norm(shift)) < 0.01:
            return []
        u = np.array([*shift / np.linalg.norm(shift), 0.0])
        side = np.array([-u[1], u[0], 0.0])  # fingers close across the push: the pair's flat side leads
        z = float(lo[2]) + PUSH_HEIGHT
        start = np.array([*centre[:2], z]) - u * (radius - PUSH_INSET)  # inside it, against its far rim
        end = start + np.array([*shift, 0.0])
        hand = scene.hand()
        above = np.array([*start[:2], min(max(z + 0.10, hand[2]), MAX_HAND_Z)])
        return [
            Waypoint(above, side, CLOSED, tol=0.02, turn_tol=TRAVEL_TURN),
            Waypoint(start + np.array([0, 0, NEAR]), side, CLOSED, tol=0.012),
            Waypoint(start, side, CLOSED, speed=SLOW, tol=0.008),
            Waypoint(end, side, CLOSED, speed=SLOW, tol=0.008, max_steps=120),
            Waypoint(end - u * 0.03 + np.array([0, 0, 0.08]), side, CLOSED, tol=0.03),
        ]

    def again(self, scene: Scene) -> list[Waypoint]:
        if self.retries <= 0:
            return []
        self.retries -= 1
        return self.plan(scene)


NUDGE_GAP = 0.02  # m: the closed fingertips come down this far behind the side of the object they push
NUDGE_SPEED = 0.7  # action units: a nudge pushes a little faster than a careful push


class Nudge:
    """Slide an object along the table by ``shift`` along ``direction`` (horizontal, unit): out of the way
    of a drawer that is about to open over it (the hand could not come down to it after). Closed
    fingertips come down NUDGE_GAP behind its trailing side at mid height (at most 3 cm up) and push
    straight through."""

    def __init__(self, obj: str, direction: np.ndarray, shift: float, retries: int = 1) -> None:
        self.obj, self.direction, self.shift = obj, _horizontal(direction), shift
        self.retries = retries  # never used: a nudge is not retried
        self.grasp_kind = "push"

    def stages(self) -> list[Stage]:
        return [self.plan]

    def plan(self, scene: Scene) -> list[Waypoint]:
        lo, hi = scene.extent(self.obj)
        centre, half, u = (lo + hi) / 2, (hi - lo) / 2, self.direction
        reach = abs(u[0]) * half[0] + abs(u[1]) * half[1]  # the box's half extent along the push
        z = float(lo[2]) + min(float(half[2]), 0.03)
        start = np.array([*centre[:2], z]) - u * (reach + NUDGE_GAP)
        across = abs(u[1]) * half[0] + abs(u[0]) * half[1]  # the box's half extent across the push
        # fingers close across the push (the pair's flat side leads), where the palm comes down clear
        start, side = push_point(start, u, across, *scene._geom_boxes(self.obj))
        end = start + u * (self.shift + NUDGE_GAP)
        hand = scene.hand()
        above = np.array([*start[:2], min(max(float(hi[2]) + 0.08, hand[2]), MAX_HAND_Z)])
        return [
            *travel_over(scene, above, side, CLOSED),
            Waypoint(above, side, CLOSED, tol=0.02, turn_tol=TRAVEL_TURN),
            Waypoint(start, side, CLOSED, tol=0.012),
            # the next stage lifts the hand on its way (it heads away from the object)
            Waypoint(end, side, CLOSED, speed=NUDGE_SPEED, tol=0.01, max_steps=60),
        ]


@dataclass(frozen=True)
class DrawerReach:
    """Where a drawer's front is along the way it opens (``out``): ``now``, ``closed`` and ``opened`` (at
    the expert's open goal), the span ``lateral`` across ``out``, its lowest point; and its joint."""

    joint: str
    out: np.ndarray
    now: float
    closed: float
    opened: float
    lateral: tuple[float, float]
    bottom: float
    open_sign: float


def drawer_reach(scene: Scene, region: str) -> DrawerReach | None:
    """The reach of the drawer a region belongs to, or None when the region is not a drawer's."""
    joint = (getattr(scene.env.object_sites_dict.get(region), "joints", None) or [None])[0]
    if joint is None or scene.joint(joint)[3] != SLIDE:
        return None
    qpos, axis, _, _, limits = scene.joint(joint)
    state = scene.env.get_object(scene.owner(region)).object_properties["articulation"]
    open_q, open_sign = drawer_goal("open", state, limits)
    closed_q = drawer_goal("close", state, limits)[0]
    out = _horizontal(axis * open_sign)
    across = np.array([-out[1], out[0], 0.0])
    corners = np.concatenate(scene.joint_body_corners(joint))
    now = float((corners @ out).max())
    lateral = (float((corners @ across).min()), float((corners @ across).max()))
    opened, closed = now + (open_q - qpos) * open_sign, now - (qpos - closed_q) * open_sign
    return DrawerReach(joint, out, now, closed, opened, lateral, float(corners[:, 2].min()), open_sign)


def drawer_nudges(
    scene: Scene, region: str, objects: list[str], retries: int, shut: bool = False
) -> list[Nudge]:
    """Nudges that move each of ``objects`` out of the way of the drawer ``region`` before it is opened:
    the drawer, opened to the expert's goal from where it is (or from shut, ``shut``), would reach over
    it (:func:`drawer_clearance`)."""
    reach = drawer_reach(scene, region)
    if reach is None:
        return []
    now = reach.closed if shut else reach.now
    nudges = []
    for obj in objects:
        lo, hi = scene.extent(obj)
        palm = palm_reach(hi - lo, reach.out, choose_grasp(*(hi - lo)).kind == "rim")
        shift = drawer_clearance(lo, hi, (now, reach.opened), reach.out, reach.lateral, palm)
        if shift > 0 and float(hi[2]) < reach.bottom + 0.01:  # under the drawer's way, not in it
            nudges.append(Nudge(obj, reach.out, shift, retries))
    return nudges


TUCK_ROOM = 0.03  # m: a drawer pushed part way in leaves the object's depth and this much open


class Tuck(Articulate):
    """Push an open drawer part way in, to the joint position ``to``: the drawer overhung an object that
    is to go in it, and the hand could not come down to the object."""

    def __init__(self, region: str, to: float) -> None:
        super().__init__(Goal("close", (region,)), retries=0)
        self.to = to

    def drawer_target(self, state: Mapping[str, Any], limits: np.ndarray) -> tuple[float, float]:
        return self.to, drawer_goal("open", state, limits)[1]

    def done(self, scene: Scene) -> bool:
        reach = drawer_reach(scene, self.target)
        qpos = scene.joint(reach.joint)[0] if reach else self.to
        return reach is None or (qpos - self.to) * reach.open_sign <= 0.005


def drawer_tucks(scene: Scene, region: str, obj: str, retries: int) -> list[Articulate | Nudge]:
    """For an open drawer ``region`` over ``obj``: a tuck back to where the hand can come down to
    ``obj``, when the drawer then still leaves room for it inside; else it is shut, ``obj`` nudged out
    of its way, and it is opened again. None when the drawer is not over ``obj``."""
    reach = drawer_reach(scene, region)
    if reach is None:
        return []
    lo, hi = scene.extent(obj)
    palm = palm_reach(hi - lo, reach.out, choose_grasp(*(hi - lo)).kind == "rim")
    back = drawer_clearance(lo, hi, (reach.closed, reach.now), reach.out, reach.lateral, palm)
    depth = float(np.ptp(np.array([[x, y] for x in (lo[0], hi[0]) for y in (lo[1], hi[1])]) @ reach.out[:2]))
    if back <= 0:
        return []
    if reach.now - back - reach.closed >= depth + TUCK_ROOM:
        return [Tuck(region, scene.joint(reach.joint)[0] - reach.open_sign * back)]
    return [
        Articulate(Goal("close", (region,)), retries),
        *drawer_nudges(scene, region, [obj], retries, shut=True),
        Articulate(Goal("open", (region,)), retries),
    ]


# ---------------------------------------------------------------------------------------- tracking


DOWN = np.array([0.0, 0.0, -1.0])


def rotation_toward(
    current: np.ndarray,
    finger_axis_now: np.ndarray,
    axis: np.ndarray,
    approach: np.ndarray = DOWN,
    wrist: Wrist | None = None,
    room: float = WRIST_ROOM,
) -> np.ndarray:
    """Axis-angle (world) turning the hand so that its fingers point along ``approach`` and close along
    ``axis`` (perpendicular to it), either way round, whichever is the smaller turn.

    ``current`` is the hand site's rotation, whose z axis is where the fingers point (robosuite's grip
    site); the closing direction in the site frame is read from ``finger_axis_now``. Given the ``wrist``,
    a smaller turn of WRIST_FLIP_MIN or more is taken only when it leaves the wrist joint ``room`` inside
    its range (else the hand turns the other way round: at its limit the joint would hold the hand and
    the arm drift)."""
    approach_local = np.array([0.0, 0.0, 1.0])
    finger_local = current.T @ finger_axis_now
    finger_local = finger_local - (finger_local @ approach_local) * approach_local
    finger_local /= max(float(np.linalg.norm(finger_local)), 1e-9)
    local = np.stack([approach_local, finger_local, np.cross(approach_local, finger_local)], axis=1)
    turns = []
    for closing in (axis, -axis):  # the two fingers are alike: either sign of the closing axis will do
        want = np.stack([approach, closing, np.cross(approach, closing)], axis=1)
        desired = want @ local.T  # the site rotation that maps the local frame onto the wanted one
        turns.append(Rotation.from_matrix(desired @ current.T).as_rotvec())
    turns.sort(key=lambda t: float(np.linalg.norm(t)))
    small = float(np.linalg.norm(turns[0])) < WRIST_FLIP_MIN  # a correction, never worth a half turn
    if wrist is not None and not small and not wrist.allows(turns[0], room) and wrist.allows(turns[1], room):
        return turns[1]
    return turns[0]


class Tracker:
    """Native actions toward a list of waypoints, closed loop on the measured hand pose."""

    def __init__(self, waypoints: list[Waypoint], gripper: float = OPEN) -> None:
        self.waypoints, self.index, self.steps, self.held = waypoints, 0, 0, 0
        self.history: list[tuple[np.ndarray, float]] = []  # (hand position, turn left) at this waypoint
        self.gaps: list[float] = []  # the fingers' gap at each step of this waypoint
        self.gripper = gripper  # the gripper command before this waypoint

    @property
    def done(self) -> bool:
        return self.index >= len(self.waypoints)

    def action(self, scene: Scene, base_rotation: np.ndarray) -> np.ndarray:
        wp = self.waypoints[self.index]
        hand = scene.hand()
        error = wp.pos - hand
        turn = rotation_toward(
            scene.hand_rotation(),
            scene.finger_axis(),
            wp.axis,
            np.array(wp.approach),
            scene.wrist(toward=wp.pos).turned(np.array([0.0, 0.0, wp.twist])),
        )
        reached = float(np.linalg.norm(error)) < wp.tol and float(np.linalg.norm(turn)) < wp.turn_tol
        self.steps += 1
        if reached:
            self.held += 1
        self.history.append((hand, float(np.linalg.norm(turn))))
        self.gaps.append(scene.finger_gap())
        if (
            (reached and (self.held > wp.settle or self._gripped(wp)))
            or self.steps > wp.max_steps
            or (not reached and self._stalled())
        ):
            self.index, self.steps, self.held, self.history, self.gaps = self.index + 1, 0, 0, [], []
            self.gripper = wp.gripper
        move = np.clip(base_rotation.T @ error / POS_UNIT * GAIN, -wp.speed, wp.speed)
        spin = np.clip(base_rotation.T @ turn / ROT_UNIT * ROT_GAIN, -1.0, 1.0)
        return np.array([*move, *spin, wp.gripper])

    def _gripped(self, wp: Waypoint) -> bool:
        """A waypoint that closes or opens the fingers is held until they stop (not its whole settle)."""
        if wp.gripper == self.gripper or self.held < GRIP_STEPS or len(self.gaps) < 3:
            return False
        return abs(self.gaps[-1] - self.gaps[-3]) < GRIP_STILL

    def _stalled(self) -> bool:
        """The hand has neither moved nor turned for STALL steps: blocked (by contact or its reach)."""
        if len(self.history) <= STALL:
            return False
        (then, turn_then), (now, turn_now) = self.history[-STALL - 1], self.history[-1]
        return float(np.linalg.norm(now - then)) < STALL_MOVE and abs(turn_now - turn_then) < STALL_TURN


# ------------------------------------------------------------------------------------------- policy


class LiberoExpert(Policy):
    """Privileged scripted expert for LIBERO tasks whose goals are ``In`` / ``On`` predicates (conjunctions
    included); other goal predicates are refused in one line when bound."""

    name = "libero_expert"
    privileged = True

    def __init__(self, retries: int = 1) -> None:
        self.retries = retries
        self.env: gym.Env | None = None
        self.goals: list[Goal] = []
        self._tasks: list[PickPlace | Push | Articulate | Nudge] = []
        self._stages: list[Stage] = []
        self._tracker: Tracker | None = None
        self._scene: Scene | None = None
        self._stats: dict[str, float] = {}

    def bind(self, env: gym.Env) -> None:
        self.env = env
        self.goals = parse_goal(self.libero_env().raw_env.env.parsed_problem["goal_state"])

    def libero_env(self) -> LiberoEnv:
        """The bound env's LIBERO env (privileged: the expert reads its simulator)."""
        if self.env is None:
            raise RuntimeError("LiberoExpert needs the env: call policy.bind(env) before reset()")
        return cast("LiberoEnv", self.env.unwrapped)

    def reset(self, context: EpisodeContext) -> None:
        self._scene = Scene(self.libero_env().raw_env)
        self._tasks = plan_tasks(self._scene, self.goals, self.retries)
        self._stages = [stage for task in self._tasks for stage in task.stages()]
        self._tracker = None
        self._stats = {"retries": 0.0}

    def act(self, observation: Mapping[str, Any]) -> np.ndarray:
        scene = self._scene
        if scene is None:
            raise RuntimeError("call reset() before act()")
        while self._tracker is None or self._tracker.done:
            if not self._stages:
                gripper = self.libero_env().noop_action()[6]
                return np.array([0, 0, 0, 0, 0, 0, gripper], np.float32)
            gripper = self._tracker.gripper if self._tracker is not None else OPEN
            self._tracker = Tracker(self._stages.pop(0)(scene), gripper)
        base = self._base_rotation()
        return self._tracker.action(scene, base).astype(np.float32)

    @property
    def plan_done(self) -> bool:
        """Every stage of the episode's plan has been worked through (the expert now holds still)."""
        return not self._stages and (self._tracker is None or self._tracker.done)

    def _base_rotation(self) -> np.ndarray:
        controller = self.libero_env().raw_env.robots[0].composite_controller
        return np.asarray(controller.get_controller_base_pose("right")[1])

    def episode_stats(self) -> dict[str, float]:
        used = sum(self.retries - t.retries for t in self._tasks)
        return {"retries": float(used)}


def plan_tasks(scene: Scene, goals: list[Goal], retries: int) -> list[PickPlace | Push | Articulate | Nudge]:
    """One sub-task per goal, in the goals' order; putting something in a closed drawer opens it first."""
    tasks: list[PickPlace | Push | Articulate | Nudge] = []
    opened = {g.args[0] for g in goals if g.predicate == "open"}
    shared = [g.args[1] for g in goals if g.predicate == "on"]
    placed: dict[str, int] = {}
    for goal in goals:
        if goal.predicate in ("in", "on"):
            region = goal.args[1]
            site = scene.env.object_sites_dict.get(region)
            articulated = [
                j for j in getattr(site, "joints", None) or [] if scene.joint(j)[3] in (SLIDE, HINGE)
            ]
            if articulated and region not in opened:
                opener = Articulate(Goal("open", (region,)), retries)
                if not opener.done(scene):
                    tasks += [*drawer_nudges(scene, region, [goal.args[0]], retries), opener]
                else:  # open already, maybe over the object
                    tasks += drawer_tucks(scene, region, goal.args[0], retries)
                opened.add(region)
            flat = region not in scene.env.obj_body_id and is_flat_and_wide(scene, goal.args[0])
            level = abs(float(scene.position(region)[2]) - float(scene.extent(goal.args[0])[0][2])) < FLAT
            slot = (placed.get(region, 0), shared.count(region) if goal.predicate == "on" else 1)
            placed[region] = slot[0] + 1
            entry = side_entry(
                scene, goal, retries
            )  # under a roof (a microwave, a shelf): from its open side
            tasks.append(entry or (Push(goal, retries) if flat and level else PickPlace(goal, retries, slot)))
        else:
            if goal.predicate == "open":  # what is to go in, out of the way of the drawer first
                inside = [g.args[0] for g in goals if g.predicate == "in" and g.args[1] == goal.args[0]]
                tasks += drawer_nudges(scene, goal.args[0], inside, retries)
            tasks.append(Articulate(goal, retries))
    return tasks


# ------------------------------------------------------------------------------ roofed regions: from the side

# Putting an object in a roofed region (a microwave, a shelf's compartment) through its open side.
#
# A hand above the object cannot go under the roof, so the object goes in first and the hand stays behind
# it, outside: the object is taken by its handle (a mug's, a pan's) from above, the fingers leaning
# toward the object's body (the palm then stays short of the roof's front edge); carried, the hand turns
# so that the handle points out of the opening; the object is set down in front of the opening at the
# floor's height and slid in along the way in (:class:`policies.experts.libero_entry.Opening`), as deep
# as the far wall and the hand's clearance under the roof's edge allow. An object with no handle (a book)
# is taken from above by its top edge and the hand turned level (``SideEntry.pitch``).

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
