"""A privileged scripted expert that solves CALVIN's 34 tasks on the built-in play-table.

At the start of a subtask (and after a failed attempt) it reads the scene snapshot and the table's link
poses from the env it is bound to, plans a short list of TCP waypoints for the task (approach, grasp,
lift, rotate, push, place, stack, open/close, press, flip) and tracks them with the env's own actions:
each step moves the accumulated target pose toward the current waypoint by at most the waypoint's speed,
so the motions go through the same IK controller as any policy's. The task comes from
``EpisodeContext.extras["task"]`` or, failing that, from CALVIN's instruction wording.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import numpy as np
from scipy.spatial.transform import Rotation

from envs.calvin import constants as C
from envs.calvin.assets import DRAWER_HANDLE, SLIDE_HANDLE, SWITCH_LEVER
from envs.calvin.scenes import DEFAULT_SCENE, SCENES, SceneSpec
from envs.calvin.tasks import TASKS, completed_tasks
from policies.base import EpisodeContext, Policy

if TYPE_CHECKING:
    import gymnasium as gym

    from envs.calvin.env import PlayTableInterface

SAFE_Z = 0.60  # transit height of the TCP above the table
FAST, SLOW = 0.015, 0.006  # metres per control step
TURN = 0.04  # radians per control step
FINGERTIP_BELOW_TCP = 0.013
PUSH_GOAL = 0.115  # push tasks move the block this far (CALVIN needs more than 0.1 m)
FLICK_SLIDE = 0.02  # how far a block flicked by push_x slides on after the fingers let go
PUSH_TILT = 0.2  # fingers tipped toward the cabinet, the hand back: it clears the sliding door's handle
FLICK_RUN, FLICK_SPEED = 0.06, 0.02  # the fast last part of a flick: length (m) and speed (m/step)
DRAWER_TILT = 0.3  # fingers tipped toward the table when reaching into the drawer
TABLE_EDGE_Y = -0.181  # the table top's front edge, above the drawer's back
DRAWER_EDGE_ROOM = 0.075  # a block centre closer to that edge leaves no room for an open finger beside it
SLIDER_TILT = 0.5  # fingers tipped into the cabinet keep the hand outside it, clear of walls and door
Q7_PER_YAW = -0.92  # how the last joint moves per radian of TCP yaw (measured), to respect its limits
Q7_LIMIT = 2.6
OPEN_FINGER = 0.045  # an open finger's centre from the grasp centre (the fingers open 8 cm)
FINGER_ROOM = 0.012  # clearance an open finger needs from a neighbouring block
GRASP_EDGE = 0.014  # closest a grasp moved along a block comes to its end
# door grip point from the handle point (under its bar), along y and z: where the hand coming down meets the
# bar. Aimed at the handle point, the hand pressed on the bar and IK slid hand and door 2.5 cm right before
# the fingers closed, which a door left part-way by the previous subtask cannot spare (scene C's 24 cm).
SLIDE_GRIP = (-0.014, 0.01)
SWITCH_TILT = 1.0  # hand tipped toward the panel so the fingers close across the switch's thickness
SWITCH_GRIP = (-0.007, 0.008)  # grip point from the lever point: along out-of-panel, along up-slope (m)


# ------------------------------------------------------------------------------------------ geometry


def down(yaw: float, tilt: float = 0.0, toward: tuple[float, float] = (0.0, 1.0)) -> np.ndarray:
    """TCP rotation pointing down, turned by ``yaw`` about z, then tipped by ``tilt`` so that the fingers
    point toward the horizontal direction ``toward`` (the wrist moves the other way, e.g. back toward
    the robot base for far targets)."""
    d = np.array([toward[0], toward[1], 0.0]) / math.hypot(*toward)
    tip = Rotation.from_rotvec(np.array([d[1], -d[0], 0.0]) * tilt)
    return (tip * Rotation.from_euler("z", yaw) * Rotation.from_euler("x", math.pi)).as_matrix()


def tcp_yaw(euler: np.ndarray) -> float:
    """Yaw of a TCP orientation given as Euler xyz (angle of its x axis in the world x-y plane)."""
    m = Rotation.from_euler("xyz", euler).as_matrix()
    return math.atan2(m[1, 0], m[0, 0])


def block_yaw(orn_xyzw: list[float]) -> float:
    m = Rotation.from_quat(orn_xyzw).as_matrix()
    return math.atan2(m[1, 0], m[0, 0])


def wrap(a: float) -> float:
    return (a + math.pi) % (2 * math.pi) - math.pi


def choose_yaw(axis_yaw: float, period: float, current: float, q7: float, turn: float = 0.0) -> float:
    """The yaw equal to ``axis_yaw`` modulo ``period`` nearest the current one (a continuous value), such
    that the last joint stays within limits before and after a further ``turn``."""
    base = current + wrap(axis_yaw - current)
    candidates = [base + k * period for k in range(-4, 5)]

    def cost(y: float) -> float:
        q_end = q7 + Q7_PER_YAW * (y + turn - current)
        q_mid = q7 + Q7_PER_YAW * (y - current)
        over = max(abs(q_end), abs(q_mid)) - Q7_LIMIT
        return abs(y - current) + (100.0 + over if over > 0 else 0.0)

    return min(candidates, key=cost)


# ----------------------------------------------------------------------------------------- waypoints


@dataclass(frozen=True)
class Waypoint:
    """A TCP target: position, rotation, gripper (1 open, -1 closed) and how to get there."""

    pos: np.ndarray
    rot: np.ndarray
    gripper: int
    speed: float = FAST
    tol: float = 0.012  # accepted TCP tracking error before moving on
    settle: int = 0  # extra steps once reached (e.g. let the fingers close)
    max_wait: int = 25  # steps to wait for the TCP to catch up with the target


class Tracker:
    """Turns a waypoint list into relative (or absolute) CALVIN actions, one per step.

    It moves a reference pose toward the current waypoint by at most the waypoint's speed per step and
    commands the target onto it; the waypoint is reached once the reference is on it, and the TCP must
    then catch up within the waypoint's ``tol`` (or ``max_wait`` steps pass) before the next one. Without
    actuation noise the env's target follows the commands exactly and the reference is that target, read
    back each step. With noise on the action channel (the ``action_noise`` axis) the env's target lands
    off the command every step: the reference keeps the noise-free path, so the waypoint is still reached
    and each command also takes back the noise the last one met.
    """

    SYNCED = 1e-6  # a target this close to the reference followed the last command (float32 rounding)

    def __init__(self, waypoints: list[Waypoint]) -> None:
        self.waypoints, self.index, self.waited = waypoints, 0, 0
        self.reference: tuple[np.ndarray, np.ndarray] | None = None  # the noise-free target pose

    @property
    def done(self) -> bool:
        return self.index >= len(self.waypoints)

    def action(
        self, target_pos: np.ndarray, target_euler: np.ndarray, tcp_pos: np.ndarray, absolute: bool
    ) -> np.ndarray:
        wp = self.waypoints[self.index]
        pos, euler = self._follow(target_pos, target_euler)
        d_pos = wp.pos - pos
        dist = float(np.linalg.norm(d_pos))
        if dist > wp.speed:
            d_pos = d_pos * (wp.speed / dist)
        want = Rotation.from_matrix(wp.rot).as_euler("xyz")
        d_orn = np.array([wrap(a) for a in want - euler])
        d_orn = np.clip(d_orn, -TURN, TURN)
        arrived = dist < 1e-4 and np.all(np.abs(d_orn) < 1e-4)
        if arrived:
            self._advance(wp, float(np.linalg.norm(wp.pos - tcp_pos)))
        self.reference = (pos + d_pos, euler + d_orn)
        if absolute:
            return np.array([*self.reference[0], *self.reference[1], wp.gripper])
        move = d_pos + (pos - target_pos)  # (the noise taken back; exactly zero when synced)
        turn = d_orn + np.array([wrap(a) for a in euler - target_euler])
        return np.array([*(move / C.MAX_REL_POSITION), *(turn / C.MAX_REL_ORIENTATION), wp.gripper])

    def _follow(self, target_pos: np.ndarray, target_euler: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The reference pose: the env's target when it followed the last command, else the reference."""
        if self.reference is not None:
            pos, euler = self.reference
            off = max(float(np.max(np.abs(pos - target_pos))), float(np.max(np.abs(euler - target_euler))))
            if off > self.SYNCED:
                return pos, euler
        return target_pos, target_euler

    def _advance(self, wp: Waypoint, error: float) -> None:
        self.waited += 1
        caught_up = error < wp.tol or self.waited > wp.max_wait
        if caught_up and self.waited > wp.settle:
            self.skip()

    def skip(self) -> None:
        """Move on to the next waypoint."""
        self.index, self.waited = self.index + 1, 0


# -------------------------------------------------------------------------------------------- scene


@dataclass
class View:
    """What the planner reads: the snapshot plus the table's handle positions and the target pose."""

    snapshot: Mapping[str, Any]
    tcp: np.ndarray
    yaw: float
    q7: float
    slide_handle: np.ndarray
    drawer_handle: np.ndarray
    switch_lever: np.ndarray
    switch_up: np.ndarray  # unit vector the switch moves along when turned on
    target_rot: np.ndarray  # the accumulated target orientation relative actions move
    gripper: int  # the last gripper command (1 open, -1 closed)
    start: Mapping[str, Any]  # the snapshot at the start of the subtask
    layout: SceneSpec = SCENES[DEFAULT_SCENE]  # where the furniture is, how big each block is

    def size(self, color: str) -> tuple[float, float, float]:
        """Block ``color``'s size (x the long side) in this scene."""
        return self.layout.block_size(color)

    def is_cube(self, color: str) -> bool:
        sx, sy, _ = self.size(color)
        return abs(sx - sy) < 1e-6

    def fits_across(self, color: str) -> bool:
        """Whether the open fingers (8 cm) also close across the block's long side (the middle size)."""
        return not self.is_cube(color) and self.size(color)[0] < 0.06

    @property
    def scene_obs(self) -> list[float]:
        return self.snapshot["scene_obs"]

    def block(self, color: str) -> Mapping[str, Any]:
        return self.snapshot["blocks"][color]

    def held_block(self) -> str | None:
        bodies = {c[0] for c in self.snapshot["robot_contacts"]}
        held = [
            c
            for c in C.BLOCK_COLORS
            if C.BLOCK_BODIES[c] in bodies and {x[0] for x in self.block(c)["contacts"]} == {C.BODY_ROBOT}
        ]
        return held[0] if held else None


def read_view(env: PlayTableInterface, start: Mapping[str, Any] | None = None) -> View:
    """Everything the planner needs from the (unwrapped) env: its snapshot, target pose and table link
    poses (:class:`envs.calvin.env.PlayTableInterface`, which the built-in and official backends implement)."""
    snap = env.snapshot()
    robot_obs = snap["robot_obs"]

    def on(link: str, local: tuple[float, float, float]) -> np.ndarray:
        pos, rot = env.link_pose(link)
        return pos + rot @ np.asarray(local)

    _, switch_rot = env.link_pose("switch_link")
    target_rot = Rotation.from_euler("xyz", env.target_pose()[1]).as_matrix()
    return View(
        snap,
        np.asarray(robot_obs[:3]),
        tcp_yaw(np.asarray(robot_obs[3:6])),
        float(robot_obs[13]),
        on("slide_link", SLIDE_HANDLE),
        on("drawer_link", DRAWER_HANDLE),
        on("switch_link", SWITCH_LEVER),
        -switch_rot[:, 2],
        target_rot,
        1 if robot_obs[14] > 0 else -1,
        start or snap,
        getattr(env, "scene_spec", SCENES[DEFAULT_SCENE]),
    )


# ------------------------------------------------------------------------------------------ planning


def lift_off(view: View, z: float = SAFE_Z) -> list[Waypoint]:
    """Leave the current spot as it is (same orientation and gripper): out of the cabinet first, then up
    to ``z``. Keeping the gripper matters: a subtask may start right after the fingers let go, or with a
    block in the hand. Fingers closed on a handle are opened first (:func:`release_handle`)."""
    x, y, tz = view.tcp
    rot, gripper = view.target_rot, view.gripper
    path = release_handle(view)
    if path:
        gripper = 1
    if in_cabinet(view.tcp):
        path += [
            Waypoint(np.array([x, y, tz + 0.02]), rot, gripper, SLOW),
            Waypoint(np.array([x, -0.02, tz + 0.04]), rot, gripper, SLOW),
        ]
        x, y = x, -0.02
    path.append(Waypoint(np.array([x, y, max(z, tz)]), rot, gripper, FAST, tol=0.03))
    return path


HANDLE_LINKS = ("slide_link", "drawer_link", "switch_link")
RELEASE_SETTLE = 4  # steps for the fingers to open off a handle


def release_handle(view: View) -> list[Waypoint]:
    """Open the fingers where they are if they are closed on the door's, drawer's or switch's handle.

    A subtask counts as done mid-motion (the door 15 cm along, the drawer 12 cm), so the next one starts
    with the handle still gripped; leaving with it gripped drags the door or drawer back a little, and the
    door's next move then lacks the travel it needs (play data: the door left 0.155 m along by
    ``move_slider_left`` came back to 0.149, short of ``move_slider_right``'s 0.15)."""
    touching = {(c[0], c[1]) for c in view.snapshot["robot_contacts"]}
    if view.gripper > 0 or not any((C.BODY_TABLE, link) in touching for link in HANDLE_LINKS):
        return []
    return [Waypoint(view.tcp, view.target_rot, 1, FAST, tol=0.02, settle=RELEASE_SETTLE)]


def in_cabinet(point: np.ndarray) -> bool:
    """Inside (or just above) the slider cabinet, behind its sloped front."""
    return bool(point[1] > 0.03 and point[2] < SAFE_Z)


def travel(
    view: View, goal: np.ndarray, rot: np.ndarray, gripper: int, approach: float = 0.10, speed: float = SLOW
) -> list[Waypoint]:
    """From wherever the TCP is: up, across at safe height, down above ``goal``, then slowly onto it.

    Goals inside the cabinet are entered from the front (up the slope), never over the sliding door.
    """
    if in_cabinet(goal):
        above = np.array([goal[0], -0.03, SAFE_Z])
        hover = goal + np.array([0.0, -0.05, 0.05])
    else:
        above = np.array([goal[0], goal[1], max(SAFE_Z, goal[2] + approach)])
        hover = np.array([goal[0], goal[1], goal[2] + min(approach, 0.05)])
    return [
        *lift_off(view),
        Waypoint(above, rot, gripper, FAST, tol=0.02),
        Waypoint(hover, rot, gripper, FAST, tol=0.01),
        Waypoint(goal, rot, gripper, speed, tol=0.006),
    ]


def grasp(view: View, color: str, rot: np.ndarray, centre: np.ndarray, lift: float) -> list[Waypoint]:
    """Open, come down around the block, close, and lift by ``lift``."""
    goal = centre + np.array([0.0, 0.0, 0.003])
    return [
        *travel(view, goal, rot, 1),
        Waypoint(goal, rot, -1, SLOW, settle=6),
        Waypoint(goal + np.array([0.0, 0.0, lift]), rot, -1, SLOW, tol=0.02),
    ]


def grasp_rotation(
    view: View, color: str, turn: float = 0.0, tilt: float = 0.0, axis_along_x: bool = False
) -> np.ndarray:
    """Fingers across the block's short (4 cm) side; a cube may be taken across either pair of faces.

    ``axis_along_x`` picks, for the cube, the faces that put the fingers' closing axis closest to world
    x, so the hand's long side stays parallel to the cabinet front (reaching into the cabinet).
    """
    b = view.block(color)
    yaw_b = block_yaw(b["orn_xyzw"])
    period = math.pi / 2 if view.is_cube(color) else math.pi
    if axis_along_x and view.is_cube(color):
        yaw_b = min(
            (yaw_b + k * math.pi / 2 for k in range(4)), key=lambda y: abs(wrap(2 * (y - math.pi / 2)))
        )
        period = math.pi
    yaw = choose_yaw(yaw_b, period, view.yaw, view.q7, turn)
    return down(yaw, tilt)


def table_grasp(view: View, color: str) -> tuple[np.ndarray, np.ndarray]:
    """Hand rotation and grasp centre for a block on the table: as :func:`grasp_rotation` unless an open
    finger would meet a neighbouring block; then the grasp moves along the block's free axis, or (red)
    closes across its 5.6 cm side, whichever leaves the fingers most room."""
    rot = grasp_rotation(view, color)
    centre = np.asarray(view.block(color)["pos"], dtype=float)
    if _finger_room(view, color, rot, centre) >= FINGER_ROOM:
        return rot, centre
    reach = 0.5 * view.size(color)[0] - GRASP_EDGE  # along the long side, fingers stay on the block
    along = np.array([rot[0, 0], rot[1, 0], 0.0])  # the hand's x axis: the block's long side
    options = [(rot, centre + k * reach / 2 * along) for k in (0, -1, 1, -2, 2)]
    if view.fits_across(color):  # 5.6 cm still fits between the open fingers
        yaw_b = block_yaw(view.block(color)["orn_xyzw"]) + math.pi / 2
        options.append((down(choose_yaw(yaw_b, math.pi, view.yaw, view.q7)), centre))
    return max(options, key=lambda o: min(_finger_room(view, color, *o), FINGER_ROOM))


def _finger_room(view: View, color: str, rot: np.ndarray, centre: np.ndarray) -> float:
    """Clearance between the open fingers (hand rotation ``rot`` at ``centre``) and the other blocks, each
    taken as the disc around its footprint."""
    u = rot[:2, 1]  # the fingers open along the hand's y axis
    fingers = [centre[:2] + k * OPEN_FINGER * u for k in (-1, 1)]
    room = math.inf
    for other in C.BLOCK_COLORS:
        if other != color:
            b = view.block(other)
            radius = 0.5 * math.hypot(*view.size(other)[:2])
            for f in fingers:
                room = min(room, float(np.linalg.norm(f - np.asarray(b["pos"][:2]))) - radius)
    return room


def plan_lift(view: View, color: str, where: str) -> list[Waypoint]:
    b = view.block(color)
    centre = np.asarray(b["pos"], dtype=float)
    if where == "slider":
        rot = grasp_rotation(view, color, tilt=SLIDER_TILT, axis_along_x=True)
        centre = centre + np.array([0.0, -0.008, 0.0])
        path = grasp(view, color, rot, centre, 0.045)
        shift = _roomy_lift_shift(view, color)
        if shift is None:
            return path
        low = path[-2].pos + np.array([0.0, 0.0, CARRY_HEIGHT])
        return [
            *path[:-1],
            Waypoint(low, rot, -1, SLOW, tol=0.01),
            Waypoint(low + shift, rot, -1, SLOW, tol=0.01),
            Waypoint(path[-1].pos + shift, rot, -1, SLOW, tol=0.02),
        ]
    if where == "drawer":  # keep the hand clear of the table's front edge just behind the drawer
        rot = grasp_rotation(view, color, tilt=DRAWER_TILT, axis_along_x=True)
        if (
            view.fits_across(color)
            and centre[1] > TABLE_EDGE_Y - DRAWER_EDGE_ROOM
            and abs(rot[1, 1]) > abs(rot[0, 1])
        ):
            # fingers opening along y would meet the table's edge: close them across the 5.6 cm side
            across = block_yaw(view.block(color)["orn_xyzw"]) + math.pi / 2
            rot = down(choose_yaw(across, math.pi, view.yaw, view.q7), DRAWER_TILT)
        return grasp(view, color, rot, centre, 0.10)
    return grasp(view, color, *table_grasp(view, color), 0.10)


CARRY_HEIGHT = 0.01  # a block carried this high inside the cabinet is off the plank, not yet "lifted"
CARRY_MIN = 0.01  # a block this close to its compartment's evaluation spot is lifted where it lies
CARRY_CLEAR = 0.1  # another block this close to that spot: lifted where it lies (no room to carry it there)


def _roomy_lift_shift(view: View, color: str) -> np.ndarray | None:
    """How far to carry a grasped cabinet block (just off the plank) before lifting it, or ``None``.

    The hand reaching into the cabinet is wider than the block: lifted near the compartment's side wall,
    the door or the sloped front's lip, it touches the cabinet at the moment the lift counts, and a
    following ``place_in_slider`` (which needs the hand to touch the block alone at its start) can never
    succeed. The compartment's evaluation spot (CALVIN's, moved with the scene's furniture) leaves the
    hand room: a block elsewhere is carried there first (a block nearer the front only sideways), unless
    another block stands near it."""
    pos = np.asarray(view.block(color)["pos"], dtype=float)
    spot = np.asarray(view.layout.spots(f"slider_{compartment_of(view, pos[0])}")[0][:2])
    shift = np.array([spot[0] - pos[0], min(spot[1] - pos[1], 0.0)])  # (never deeper in: the lip)
    others = [view.block(c)["pos"][:2] for c in C.BLOCK_COLORS if c != color]
    goal = pos[:2] + shift
    if np.linalg.norm(shift) < CARRY_MIN or any(np.linalg.norm(goal - o) < CARRY_CLEAR for o in others):
        return None
    return np.array([*shift, 0.0])


def plan_rotate(view: View, color: str, sign: int) -> list[Waypoint]:
    turn = sign * math.pi / 2
    rot = grasp_rotation(view, color, turn)
    centre = np.asarray(view.block(color)["pos"], dtype=float)
    up = centre + np.array([0.0, 0.0, 0.02])
    yaw0 = math.atan2(rot[1, 0], rot[0, 0])
    yaw0 = view.yaw + wrap(yaw0 - view.yaw)
    steps = [down(yaw0 + turn * k / 3) for k in (1, 2, 3)]
    path = grasp(view, color, rot, centre, 0.02)
    path += [Waypoint(up, r, -1, SLOW, tol=0.02) for r in steps]
    path += [
        Waypoint(centre + np.array([0.0, 0.0, 0.006]), steps[-1], -1, SLOW, tol=0.01),
        Waypoint(centre + np.array([0.0, 0.0, 0.006]), steps[-1], 1, SLOW, settle=5),
        Waypoint(centre + np.array([0.0, 0.0, 0.12]), steps[-1], 1, FAST, tol=0.03),
    ]
    return path


def plan_push(view: View, color: str, sign: int, flick: bool = True) -> list[Waypoint]:
    """Closed fingers behind the block's side, then flick it about 11.5 cm along x (right: sign +1)."""
    x_now, x_start = view.block(color)["pos"][0], view.start["blocks"][color]["pos"][0]
    remaining = sign * PUSH_GOAL - (x_now - x_start)  # a retry only adds what is still missing
    if sign * remaining <= 0:
        return []
    drift = 0.03 if _button_ahead(view, x_now, sign) else 0.0  # pass the button housing
    return push_x(view, color, remaining, drift * abs(remaining) / PUSH_GOAL, flick)


def _button_ahead(view: View, x: float, sign: int) -> bool:
    """Whether a block at ``x`` pushed along ``sign`` (+1: right) passes the button's housing: the button
    lies less than 22 cm ahead (or under 10 cm behind)."""
    ahead = sign * (view.layout.button[0] - x)
    return -0.1 < ahead < 0.22


def push_x(view: View, color: str, dx: float, drift: float = 0.0, flick: bool = True) -> list[Waypoint]:
    """Sweep a block by about ``dx`` along x (and ``drift`` along y) with the closed fingers.

    With ``flick`` the last 3 cm are pushed fast and the fingers pull back at once, so the block slides
    the rest of the way on its own: it crosses CALVIN's 10 cm while nothing touches it, which a following
    ``push_into_drawer`` needs (that task requires the table to be the block's only contact at its start).
    """
    b = view.block(color)
    centre = np.asarray(b["pos"], dtype=float)
    sign = 1.0 if dx > 0 else -1.0
    rot = down(choose_yaw(0.0, math.pi, view.yaw, view.q7), PUSH_TILT, (0.0, 1.0))
    half = _half_extent(view.size(color), block_yaw(b["orn_xyzw"]), axis=0)
    gap = 0.025
    start = centre + np.array([-sign * (half + gap), 0.0, 0.004])
    travel_x = max(abs(dx) - (FLICK_SLIDE if flick else 0.0), 0.0) + gap
    end = start + np.array([sign * travel_x, drift, 0.0])
    path = [*travel(view, start, rot, -1)]
    if flick:
        slow_part = start + (end - start) * (max(travel_x - FLICK_RUN, 0.0) / travel_x)
        path += [
            Waypoint(slow_part, rot, -1, 0.005, tol=0.01, max_wait=3),
            Waypoint(end, rot, -1, FLICK_SPEED, max_wait=0),
        ]
    else:
        path.append(Waypoint(end, rot, -1, 0.005, tol=0.01))
    back = end + np.array([-sign * 0.04, 0.0, 0.0])
    return [
        *path,
        Waypoint(back, rot, -1, FAST, tol=0.02),
        Waypoint(back + np.array([0, 0, 0.1]), rot, -1, FAST, tol=0.03),
    ]


def _half_extent(size: tuple[float, float, float], yaw: float, axis: int) -> float:
    """Half a block's extent (``size``) along world x (axis 0) or y (axis 1) at this yaw."""
    sx, sy, _ = size
    c, s = abs(math.cos(yaw)), abs(math.sin(yaw))
    return 0.5 * (sx * c + sy * s) if axis == 0 else 0.5 * (sx * s + sy * c)


DRAWER_HALF_X = 0.1  # block centres within this of the drawer's middle (x) fall inside the open drawer


def centre_over_drawer(view: View) -> list[Waypoint]:
    """If the block to push into the drawer is not above the drawer, first push it along x over it."""
    color = _table_block(view, prefer_drawer=True)
    x = view.block(color)["pos"][0]
    middle = view.layout.drawer[0]
    target = float(np.clip(x, middle - DRAWER_HALF_X, middle + DRAWER_HALF_X))
    return [] if abs(target - x) < 1e-3 else push_x(view, color, target - x + np.sign(target - x) * 0.02)


def plan_push_into_drawer(view: View) -> list[Waypoint]:
    """Push a table block toward -y over the edge into the open drawer."""
    color = _table_block(view, prefer_drawer=True)
    b = view.block(color)
    centre = np.asarray(b["pos"], dtype=float)
    rot = down(choose_yaw(math.pi / 2, math.pi, view.yaw, view.q7))
    half = _half_extent(view.size(color), block_yaw(b["orn_xyzw"]), axis=1)
    start = centre + np.array([0.0, half + 0.025, 0.004])
    end = np.array([start[0], -0.215 + half, start[2]])
    return [
        *travel(view, start, rot, -1),
        Waypoint(end, rot, -1, 0.005, tol=0.01),
        Waypoint(end + np.array([0.0, 0.01, 0.12]), rot, -1, SLOW, tol=0.03),
    ]


def _table_block(view: View, prefer_drawer: bool = False) -> str:
    """A block resting on the table top only (for push-into-drawer: the one best above the drawer)."""
    on_table = [
        c
        for c in C.BLOCK_COLORS
        if {(x[0], x[1]) for x in view.block(c)["contacts"]} == {(C.BODY_TABLE, "base_link")}
    ]
    if not on_table:
        on_table = list(C.BLOCK_COLORS)
    if prefer_drawer:
        return min(on_table, key=lambda c: abs(view.block(c)["pos"][0] - view.layout.drawer[0]))
    return on_table[0]


def plan_slider(view: View, sign: int) -> list[Waypoint]:
    """Slide the door all the way left (sign +1) or right (-1); success needs 0.15 m of it."""
    return slide_door_to(view, view.layout.slide_travel if sign > 0 else 0.0)


def slide_door_to(view: View, position: float) -> list[Waypoint]:
    """Grip the door handle (fingers across x) and slide the door to ``position`` (its joint value)."""
    shift = position - float(view.scene_obs[0])
    if abs(shift) < 0.015:
        return []
    rot = down(choose_yaw(math.pi / 2, math.pi, view.yaw, view.q7))
    grip = view.slide_handle + np.array([0.0, *SLIDE_GRIP])
    goal = grip + np.array([-(shift + math.copysign(0.01, shift)), 0.0, 0.0])  # + joint value = -x
    return [
        *travel(view, grip, rot, 1),
        Waypoint(grip, rot, -1, SLOW, settle=6),
        Waypoint(goal, rot, -1, 0.008, tol=0.02),
        Waypoint(goal, rot, 1, SLOW, settle=4),
        Waypoint(goal + np.array([0.0, -0.05, 0.08]), rot, 1, FAST, tol=0.03),
    ]


def compartment_of(view: View, x: float) -> str:
    """Which cabinet compartment an x position lies in."""
    return "left" if x < view.layout.slider_split else "right"


def uncover(view: View, compartment: str) -> list[Waypoint]:
    """Slide the door fully over the other compartment, if it is not already."""
    return slide_door_to(view, 0.0 if compartment == "left" else view.layout.slide_travel)


def uncover_block(view: View, color: str) -> list[Waypoint]:
    return uncover(view, compartment_of(view, view.block(color)["pos"][0]))


def plan_drawer(view: View, sign: int) -> list[Waypoint]:
    """Come down just behind the middle of the drawer's bar grip (CALVIN's, 5.6 cm off the drawer's face),
    close the fingers there so they hook the bar, and pull the drawer out (sign +1) or push it in (-1)."""
    rot = down(choose_yaw(math.pi / 2, math.pi, view.yaw, view.q7))
    grip = view.drawer_handle + np.array([0.0, 0.0, 0.012])
    opening = float(view.scene_obs[1])
    travel_y = -(C.DRAWER_RANGE[1] - opening) - 0.01 if sign > 0 else opening + 0.01
    goal = grip + np.array([0.0, travel_y, 0.0])
    return [
        *travel(view, grip, rot, 1),
        Waypoint(grip, rot, -1, SLOW, settle=6),
        Waypoint(goal, rot, -1, 0.007, tol=0.02, max_wait=15),
        Waypoint(goal, rot, 1, SLOW, settle=4),
        Waypoint(goal + np.array([0.0, -0.03, 0.12]), rot, 1, FAST, tol=0.03),
    ]


def plan_button(view: View) -> list[Waypoint]:
    """Press the button cap 1.6 cm down with the closed fingers, then come back up."""
    rot = down(choose_yaw(0.0, math.pi / 2, view.yaw, view.q7))
    bx, by, bz = view.layout.button
    top = np.array([bx, by, bz + 0.024 + FINGERTIP_BELOW_TCP])
    pressed = top - np.array([0.0, 0.0, 0.018])
    return [
        *travel(view, top + np.array([0, 0, 0.01]), rot, -1),
        Waypoint(pressed, rot, -1, 0.004, tol=0.004, max_wait=12, settle=2),
        Waypoint(top + np.array([0, 0, 0.08]), rot, -1, FAST, tol=0.03),
    ]


def plan_switch(view: View, on: bool) -> list[Waypoint]:
    """Grip the switch across its thickness, the hand coming in from the front, and slide it up (on) or
    down (off) its slope. The fingers close across the bar's 3.2 cm thickness (it is 12 cm wide)."""
    up = view.switch_up
    out = np.array([0.0, -up[2], up[1]])  # out of the panel: the switch moves in the world y-z plane
    grip = view.switch_lever + SWITCH_GRIP[0] * out + SWITCH_GRIP[1] * up
    rot = down(choose_yaw(0.0, math.pi, view.yaw, view.q7), SWITCH_TILT, (0.0, 1.0))
    state = float(view.scene_obs[3])
    distance = (C.SWITCH_RANGE[1] - state + 0.01) if on else -(state + 0.01)
    goal = grip + up * distance
    hover = grip + 0.08 * out
    return [
        *lift_off(view),
        Waypoint(np.array([hover[0], hover[1], max(SAFE_Z, hover[2])]), rot, 1, FAST, tol=0.02),
        Waypoint(hover, rot, 1, FAST, tol=0.01),
        Waypoint(grip, rot, 1, SLOW, tol=0.006),
        Waypoint(grip, rot, -1, SLOW, settle=6),
        Waypoint(goal, rot, -1, 0.004, tol=0.015, max_wait=15),
        Waypoint(goal, rot, 1, SLOW, settle=4),
        Waypoint(goal + 0.08 * out, rot, 1, FAST, tol=0.03),
    ]


def plan_place(view: View, where: str) -> list[Waypoint]:
    """Carry the held block into the open slider compartment or the drawer and let go."""
    held = view.held_block()
    rot = down(choose_yaw(math.pi / 2, math.pi, view.yaw, view.q7), SLIDER_TILT if where == "slider" else 0.0)
    offset = _held_offset(view, held, rot)
    if where == "slider":
        drop = np.array([_free_slider_x(view, held), C.BLOCK_SPOT_SLIDER_LEFT[1], C.WORK_SURFACE_Z + 0.035])
    else:
        opening = float(view.scene_obs[1])
        drop = np.array([view.layout.drawer[0], -0.08 - opening, view.layout.drawer[2] + 0.045])
    goal = drop - offset
    return [
        *travel(view, goal, rot, -1, approach=0.12),
        Waypoint(goal, rot, 1, SLOW, settle=6),
        *_retreat(goal, rot, where),
    ]


def _free_slider_x(view: View, held: str | None) -> float:
    """x of the middle of the widest stretch of the cabinet that neither the door nor a block blocks.

    No door motion is needed (the hand is busy holding the block): even a door left half-way by a
    ``move_slider_*`` subtask leaves 13 cm or more open, enough for a block and the fingers around it.
    """
    door = float(view.scene_obs[0])
    split, (inside_left, inside_right) = view.layout.slider_split, view.layout.cabinet_inside
    blocked = [(split - door - 0.01, split + 0.28 - door + 0.01)]  # the door is 28 cm wide in every scene
    for c in C.BLOCK_COLORS:
        b = view.block(c)
        if (
            c != held
            and b["pos"][1] > 0.02
            and b["pos"][2] > 0.43
            and inside_left < b["pos"][0] < inside_right
        ):
            e = _half_extent(view.size(c), block_yaw(b["orn_xyzw"]), 0)
            blocked.append((b["pos"][0] - e, b["pos"][0] + e))
    gaps: list[tuple[float, float]] = []
    edge = inside_left
    for low, high in sorted(blocked):
        gaps.append((edge, low))
        edge = max(edge, high)
    gaps.append((edge, inside_right))
    low, high = max(gaps, key=lambda g: g[1] - g[0])
    return (low + high) / 2


def _retreat(goal: np.ndarray, rot: np.ndarray, where: str) -> list[Waypoint]:
    up = goal + np.array([0.0, 0.0, 0.04])
    if where == "slider":
        return [
            Waypoint(up, rot, 1, SLOW),
            Waypoint(np.array([up[0], -0.03, up[2] + 0.03]), rot, 1, SLOW),
            Waypoint(np.array([up[0], -0.03, SAFE_Z]), rot, 1, FAST, tol=0.03),
        ]
    return [
        Waypoint(up, rot, 1, SLOW),
        Waypoint(np.array([goal[0], goal[1], SAFE_Z]), rot, 1, FAST, tol=0.03),
    ]


def _held_offset(view: View, held: str | None, rot: np.ndarray) -> np.ndarray:
    """Where the held block's centre will be relative to the TCP once the TCP has rotation ``rot``
    (the block turns with the hand); a typical grasp when nothing is held, so the plan stays sane."""
    if held is None:
        return np.array([0.0, 0.0, -0.003])
    local = _tcp_rotation(view).T @ (np.asarray(view.block(held)["pos"]) - view.tcp)
    return rot @ local


def _tcp_rotation(view: View) -> np.ndarray:
    return Rotation.from_euler("xyz", view.snapshot["robot_obs"][3:6]).as_matrix()


def _levelled_hold(view: View, held: str, yaw: float) -> np.ndarray:
    """The TCP rotation that sets the held block flat with yaw ``yaw`` (undoing any tilt it has in the
    hand, e.g. after coming out of the cabinet), if that still points the fingers roughly down."""
    in_hand = _tcp_rotation(view).T @ Rotation.from_quat(view.block(held)["orn_xyzw"]).as_matrix()
    rot = Rotation.from_euler("z", yaw).as_matrix() @ in_hand.T
    return rot if rot[2, 2] < -0.7 else down(yaw)


def plan_stack(view: View) -> list[Waypoint]:
    """Put the held block flat on top of a block lying on the table, aligned with it, and let go."""
    held = view.held_block()
    others = [c for c in C.BLOCK_COLORS if c != held]
    base = min(others, key=lambda c: (_on_table_rank(view, c), c))
    b = view.block(base)
    if held is None:
        rot = down(choose_yaw(block_yaw(b["orn_xyzw"]), math.pi / 2, view.yaw, view.q7))
    else:
        rots = [_levelled_hold(view, held, block_yaw(b["orn_xyzw"]) + k * math.pi / 2) for k in range(4)]
        yaws = [math.atan2(r[1, 0], r[0, 0]) for r in rots]
        pick = choose_yaw(yaws[0], math.pi / 2, view.yaw, view.q7)
        rot = rots[min(range(4), key=lambda k: abs(wrap(yaws[k] - pick)))]
    top = np.asarray(b["pos"]) + np.array([0.0, 0.0, 0.04 + 0.006])
    goal = top - _held_offset(view, held, rot)
    return [
        *travel(view, goal, rot, -1, approach=0.1),
        Waypoint(goal, rot, 1, SLOW, settle=6),
        Waypoint(goal + np.array([0, 0, 0.1]), rot, 1, SLOW, tol=0.03),
    ]


def _on_table_rank(view: View, color: str) -> int:
    pairs = {(x[0], x[1]) for x in view.block(color)["contacts"]}
    return 0 if pairs == {(C.BODY_TABLE, "base_link")} else 1


TABLE_FREE = ((-0.36, 0.38), (-0.16, -0.01))  # x and y ranges of the table top that are free to use


def plan_unstack(view: View) -> list[Waypoint]:
    """Grasp the block resting on another block and lift it 3 cm off.

    The subtask succeeds the moment the blocks part, so the block is then still in the hand; the next
    subtask puts it down first (see :func:`put_down`). Pushing it off instead was tried: it parts from the
    lower block in mid-air just the same.
    """
    names = set(C.BLOCK_BODIES.values())
    tops = [
        c
        for c in C.BLOCK_COLORS
        if {x[0] for x in view.block(c)["contacts"]} & names
        and not {x[0] for x in view.block(c)["contacts"]} - names - {C.BODY_ROBOT}
    ]
    top = tops[0] if tops else max(C.BLOCK_COLORS, key=lambda c: view.block(c)["pos"][2])
    centre = np.asarray(view.block(top)["pos"], dtype=float)
    return grasp(view, top, grasp_rotation(view, top), centre, 0.03)


def put_down(view: View) -> list[Waypoint]:
    """Set a held block down on a free patch of table near it (tasks other than place/stack need the hand)."""
    held = view.held_block()
    if held is None:
        return []
    here = np.asarray(view.block(held)["pos"], dtype=float)
    candidates = [
        here + np.array([dx, dy, 0.0])
        for dx in np.linspace(-0.12, 0.12, 7)
        for dy in (-0.06, -0.03, 0.0, 0.03)
    ]
    # as much room as possible (up to 8 cm), so later pushes and grasps do not meet it; then nearby
    land = max(
        candidates,
        key=lambda q: (round(min(_landing_room(view, q, (held,)), 0.08), 2), -np.linalg.norm(q - here)),
    )
    land[2] = C.WORK_SURFACE_Z + 0.022
    rot = view.target_rot
    goal = land - _held_offset(view, held, rot)
    return [
        *travel(view, goal, rot, -1, approach=0.06),
        Waypoint(goal, rot, 1, SLOW, settle=5),
        Waypoint(goal + np.array([0.0, 0.0, 0.08]), rot, 1, FAST, tol=0.03),
    ]


def _landing_room(view: View, land: np.ndarray, skip: tuple[str, ...]) -> float:
    """Clearance around a landing point: to the table's free area's border, other blocks and the button."""
    (x0, x1), (y0, y1) = TABLE_FREE
    room = min(land[0] - x0, x1 - land[0], land[1] - y0, y1 - land[1])
    obstacles = [view.block(c)["pos"][:2] for c in C.BLOCK_COLORS if c not in skip]
    obstacles.append(view.layout.button[:2])
    for o in obstacles:
        room = min(room, float(np.linalg.norm(land[:2] - np.asarray(o))) - 0.05)
    return room


Stage = Callable[[View], list[Waypoint]]
SETTLED_SPEED = 0.01  # m/s: a block moving faster is still falling or sliding
SETTLE_STEPS = 15  # control steps to hold still while it comes to rest


def wait_for_block(view: View, color: str) -> list[Waypoint]:
    """Hold still while block ``color`` is still moving (e.g. one just pushed into the drawer, which the
    previous subtask counts as done the moment it touches the drawer), so the grasp is planned where it
    comes to rest rather than where it was in flight."""
    if float(np.linalg.norm(view.block(color)["lin_vel"])) <= SETTLED_SPEED:
        return []
    return [Waypoint(view.tcp, view.target_rot, view.gripper, SLOW, tol=1.0, settle=SETTLE_STEPS)]


SHOULDER_MIN = 0.2  # below this the shoulder (joint 2) leans back: a folded posture IK gets lost from
POSTURE_SETTLE = 40  # steps at the neutral pose for the null space to unfold the arm


def recover_posture(view: View) -> list[Waypoint]:
    """If the arm has folded back (its shoulder leaning back, as after pushing a block into the drawer from
    behind), take the TCP to the neutral pose first and hold it there while the IK's null space (toward
    the neutral joints) unfolds the arm; travelling on from the folded posture, IK can drive the arm
    against its joint limits and lose the target (seen in scene C)."""
    if float(view.snapshot["robot_obs"][8]) >= SHOULDER_MIN:
        return []
    home = np.asarray(C.NEUTRAL_ROBOT_OBS[:3])
    rot = Rotation.from_euler("xyz", C.NEUTRAL_ROBOT_OBS[3:6]).as_matrix()
    return [
        *lift_off(view),
        Waypoint(home, rot, view.gripper, FAST, tol=0.02, settle=POSTURE_SETTLE, max_wait=POSTURE_SETTLE),
    ]


def rest_waypoints(view: View) -> list[Waypoint]:
    """A teleoperator's rest between play subtasks: off the current spot as :func:`lift_off` leaves it (a
    gripped handle let go, a held block kept), then to CALVIN's neutral pose, where every evaluation chain
    starts; play without rests never returns there, so its subtasks never start from it."""
    path = lift_off(view)
    home = np.asarray(C.NEUTRAL_ROBOT_OBS[:3])
    rot = Rotation.from_euler("xyz", C.NEUTRAL_ROBOT_OBS[3:6]).as_matrix()
    return [*path, Waypoint(home, rot, path[-1].gripper, FAST, tol=0.02)]


def rest_motion(env: PlayTableInterface) -> Callable[[], np.ndarray | None]:
    """The relative actions of :func:`rest_waypoints` from ``env``'s current state, one per call (the
    caller steps ``env`` in between); ``None`` once the neutral pose is reached."""
    tracker = Tracker(rest_waypoints(read_view(env)))

    def next_action() -> np.ndarray | None:
        if tracker.done:
            return None
        target_pos, target_euler = env.target_pose()
        tcp = np.asarray(env.snapshot()["robot_obs"][:3])
        return tracker.action(target_pos, target_euler, tcp, absolute=False).astype(np.float32)

    return next_action


def stages(task: str, attempt: int = 1) -> list[Stage]:
    """The planning stages of one attempt at ``task``; each is planned from a fresh view when reached.

    A first push flicks the block (it crosses the 10 cm untouched); a retry pushes it plainly."""
    m = re.fullmatch(r"(rotate|push|lift)_(red|blue|pink)_block_(\w+)", task)
    if m:
        verb, color, arg = m.groups()
        if verb == "rotate":
            return [put_down, recover_posture, lambda v: plan_rotate(v, color, +1 if arg == "left" else -1)]
        if verb == "push":
            return [
                put_down,
                recover_posture,
                lambda v: plan_push(v, color, +1 if arg == "right" else -1, attempt == 1),
            ]
        if arg == "slider":
            return [
                put_down,
                recover_posture,
                lambda v: uncover_block(v, color),
                lambda v: plan_lift(v, color, arg),
            ]
        return [
            put_down,
            recover_posture,
            lambda v: wait_for_block(v, color),
            lambda v: plan_lift(v, color, arg),
        ]
    table: dict[str, list[Stage]] = {
        "move_slider_left": [lambda v: plan_slider(v, +1)],
        "move_slider_right": [lambda v: plan_slider(v, -1)],
        "open_drawer": [lambda v: plan_drawer(v, +1)],
        "close_drawer": [lambda v: plan_drawer(v, -1)],
        "place_in_slider": [lambda v: plan_place(v, "slider")],
        "place_in_drawer": [lambda v: plan_place(v, "drawer")],
        "stack_block": [plan_stack],
        "unstack_block": [plan_unstack],
        "turn_on_lightbulb": [lambda v: plan_switch(v, True)],
        "turn_off_lightbulb": [lambda v: plan_switch(v, False)],
        "turn_on_led": [plan_button],
        "turn_off_led": [plan_button],
        "push_into_drawer": [centre_over_drawer, plan_push_into_drawer],
    }
    plans = list(table[task])
    if task in ("place_in_slider", "place_in_drawer", "stack_block"):
        return [recover_posture, *plans]
    return [put_down, recover_posture, *plans]


# ------------------------------------------------------------------------------------- instructions

_WORDS = (
    (r"\b(un ?stack|remove the stacked)", "unstack_block"),
    (r"\bstack", "stack_block"),
    (r"\b(store|place|put)\b.*\b(sliding|slider|cabinet)", "place_in_slider"),
    (r"\b(store|place|put)\b.*\bdrawer", "place_in_drawer"),
    (r"\b(slide|push|sweep)\b.*\binto the drawer|falls into the drawer", "push_into_drawer"),
    (r"\b(open|pull)\b.*\bdrawer", "open_drawer"),
    (r"\b(close|push|shut)\b.*\bdrawer", "close_drawer"),
    (r"sliding door.*\bleft|\bslider\b.*\bleft", "move_slider_left"),
    (r"sliding door.*\bright|\bslider\b.*\bright", "move_slider_right"),
    (r"light ?bulb.*\bon\b|\bon\b.*light ?bulb", "turn_on_lightbulb"),
    (r"light ?bulb.*\boff\b|\boff\b.*light ?bulb", "turn_off_lightbulb"),
    (r"\bled\b.*\bon\b|\bon\b.*\bled\b", "turn_on_led"),
    (r"\bled\b.*\boff\b|\boff\b.*\bled\b", "turn_off_led"),
)


def task_from_instruction(instruction: str) -> str:
    """The CALVIN task an instruction asks for (a task name passes through unchanged)."""
    text = instruction.strip().lower()
    if text in TASKS:
        return text
    color = re.search(r"\b(red|blue|pink)\b", text)
    if color and re.search(r"\b(rotate|turn)\b", text):
        return f"rotate_{color[1]}_block_{'left' if 'left' in text else 'right'}"
    if color and re.search(r"\bpush\b", text) and re.search(r"\b(left|right)\b", text):
        return f"push_{color[1]}_block_{'left' if 'left' in text else 'right'}"
    if color and re.search(r"\b(lift|grasp|take|pick)\b", text):
        where = "drawer" if "drawer" in text else "slider" if re.search(r"slid|cabinet", text) else "table"
        return f"lift_{color[1]}_block_{where}"
    for pattern, task in _WORDS:
        if re.search(pattern, text):
            return task
    raise ValueError(
        f"cannot tell which CALVIN task {instruction!r} asks for; pass the task name in "
        "EpisodeContext.extras['task']"
    )


# ------------------------------------------------------------------------------------------- policy


class ScriptedExpert(Policy):
    """Privileged IK expert for the CALVIN play-table, on either backend (it reads :class:`envs.calvin.env.PlayTableInterface`)."""

    name = "calvin_expert"
    privileged = True

    def __init__(self, max_attempts: int = 3) -> None:
        self.max_attempts = max_attempts
        self.env: gym.Env | None = None
        self._task: str | None = None
        self._tracker: Tracker | None = None
        self._attempts = 0
        self._stages: list[Stage] = []
        self._start: Mapping[str, Any] | None = None

    def bind(self, env: gym.Env) -> None:
        self.env = env

    def reset(self, context: EpisodeContext) -> None:
        if self.env is None:
            raise RuntimeError("ScriptedExpert needs the env: call policy.bind(env) before reset()")
        task = context.extras.get("task") if context.extras else None
        self._task = task if task is not None else task_from_instruction(context.instruction)
        if self._task not in TASKS:
            raise ValueError(f"unknown CALVIN task {self._task!r}")
        self._tracker, self._attempts, self._stages = None, 0, []
        self._start = self.play_table().snapshot()

    def act(self, observation: Mapping[str, Any]) -> np.ndarray:
        env = self.play_table()
        while self._tracker is None or self._tracker.done:
            if not self._advance(env):
                break
        target_pos, target_euler = env.target_pose()
        absolute = getattr(env, "action_mode", "relative") == "absolute"
        if self._tracker is None or self._tracker.done:  # out of attempts (or solved): hold still
            hold = np.array([*target_pos, *target_euler, env.snapshot()["robot_obs"][14]])
            return hold.astype(np.float32) if absolute else np.array([0, 0, 0, 0, 0, 0, hold[6]], np.float32)
        tcp = np.asarray(env.snapshot()["robot_obs"][:3])
        return self._tracker.action(target_pos, target_euler, tcp, absolute).astype(np.float32)

    def play_table(self) -> PlayTableInterface:
        """The bound env's play-table (the built-in env or the official-env bridge)."""
        if self.env is None:
            raise RuntimeError("ScriptedExpert needs the env: call policy.bind(env) first")
        return cast("PlayTableInterface", self.env.unwrapped)

    # The waypoint interface, for drivers that execute the expert's motion their own way (the plan source
    # of the spatial loop turns it into SpatialTree primitives instead of one action per control step).

    def current_waypoint(self) -> Waypoint | None:
        """The waypoint being tracked; plans the next stage (or attempt) from the current scene when the
        current one is used up. ``None`` when the task is solved or out of attempts."""
        env = self.play_table()
        while self._tracker is None or self._tracker.done:
            if not self._advance(env):
                return None
        return self._tracker.waypoints[self._tracker.index]

    def waypoints_left(self) -> int:
        """Waypoints left in the current stage, the current one included (0 before the first is planned)."""
        return 0 if self._tracker is None else len(self._tracker.waypoints) - self._tracker.index

    def pass_waypoint(self) -> None:
        """Count the current waypoint as reached (the driver decided the robot got there)."""
        if self._tracker is not None and not self._tracker.done:
            self._tracker.skip()

    def checkpoint(self) -> tuple[Any, ...]:
        """The planning state (stage, waypoint, attempts), for :meth:`restore`."""
        tracker = self._tracker
        return (
            tracker,
            None if tracker is None else (tracker.index, tracker.waited),
            list(self._stages),
            self._attempts,
        )

    def restore(self, checkpoint: tuple[Any, ...]) -> None:
        """Go back to a :meth:`checkpoint` of the same subtask (motion the driver planned but never ran)."""
        self._tracker, progress, stages, self._attempts = checkpoint
        self._stages = list(stages)
        if self._tracker is not None and progress is not None:
            self._tracker.index, self._tracker.waited = progress

    def _advance(self, env: PlayTableInterface) -> bool:
        """Plan the next stage (starting a new attempt when needed); False when there is nothing left."""
        assert self._task is not None and self._start is not None  # set by reset()
        if not self._stages:
            solved = self._task in completed_tasks(self._start, env.snapshot(), tasks=(self._task,))
            if solved or self._attempts >= self.max_attempts:
                self._tracker = None
                return False
            self._attempts += 1
            self._stages = stages(self._task, self._attempts)
        self._tracker = Tracker(self._stages.pop(0)(read_view(env, self._start)))
        return True

    def episode_stats(self) -> dict[str, float]:
        return {"attempts": float(self._attempts)}
