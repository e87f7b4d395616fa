"""Places the top-down carry of :mod:`policies.experts.libero` does not reach as it stands: narrow slots
and regions under a roof.

- **Slots** (a caddy's compartment): a region narrower than the carried object's footprint circle takes
  the object lengthwise. The hand turns the object, about the vertical, so that its longer horizontal
  axis lies along the region's longer one (:func:`slot_turn`), and the place is the spot where the
  object's footprint rectangle, measured after the turn, comes least near the walls standing above the
  region's floor (:func:`footprint_spot`).
- **Roofed regions** (a microwave's heating region, a shelf's compartment): the object is carried in
  from the open side, leading, with the hand behind it outside the opening (:func:`opening`).

The geometry here is plain arrays (the fast tests run it on numbers); the expert
(:mod:`policies.experts.libero`: ``PickPlace`` for slots, ``SideEntry`` for roofed regions) applies it to
its scene.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from policies.experts.libero_goals import HANDLE_REACH, find_handle


class Scene(Protocol):
    """What this module reads of the expert's scene (:class:`policies.experts.libero.Scene`, which
    builds on this module): LIBERO's env and MuJoCo's model and data, poses, boxes, a ray cast."""

    env: Any
    model: Any
    data: Any

    def position(self, name: str) -> np.ndarray: ...
    def box(self, name: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]: ...
    def corners(self, name: str) -> np.ndarray: ...
    def extent(self, name: str) -> tuple[np.ndarray, np.ndarray]: ...
    def owner(self, region: str) -> str: ...
    def shoulder(self) -> np.ndarray: ...
    def hand(self) -> np.ndarray: ...
    def hand_rotation(self) -> np.ndarray: ...
    def surface_z(self, xy: np.ndarray, skip: str) -> float: ...
    def _geom_boxes(self, skip: str) -> tuple[np.ndarray, np.ndarray]: ...
    def _robot(self, geom: int) -> bool: ...


WALL = 0.01  # m: a geom standing this far above a region's floor is a wall the object must clear
CLEAR = 0.02  # m: more room than this to the nearest wall counts the same (then nearest the centre wins)
SLOT_ROOM = 0.01  # m: see is_slot
INSIDE = 0.9  # an object's origin is placed at most this fraction of a region's half size from its centre


def slot_turn(object_long: np.ndarray, region_half: np.ndarray) -> float:
    """The turn (rad, about +z, in [-pi/2, pi/2]) that lays an object whose longer horizontal axis is
    ``object_long`` (world xy) along the longer axis of a region of world half extents ``region_half``
    (xy; its axes are the world's). Either way round will do: the fingers are alike."""
    want = np.array([1.0, 0.0]) if region_half[0] >= region_half[1] else np.array([0.0, 1.0])
    turn = float(np.arctan2(object_long[0] * want[1] - object_long[1] * want[0], object_long @ want))
    return float((turn + np.pi / 2) % np.pi - np.pi / 2)


def is_slot(region_half: np.ndarray, object_half: np.ndarray) -> bool:
    """A region less than SLOT_ROOM wider than the object's longer horizontal half extent
    (``object_half``, its own frame) on its narrow side: the object fits only lengthwise, if at all."""
    return float(min(region_half[0], region_half[1])) < float(max(object_half[:2])) + SLOT_ROOM


def footprint_spot(
    centre: np.ndarray,
    half: np.ndarray,
    foot: tuple[np.ndarray, np.ndarray],
    walls: tuple[np.ndarray, np.ndarray],
    grid: int = 17,
) -> np.ndarray:
    """Where to put an object's origin (xy) in a region (``centre``, world ``half`` extents, xy) so that
    its footprint, ``foot`` = (low, high) xy relative to the origin, comes least near the ``walls``
    (low, high xy arrays of the boxes standing above the region's floor): the most room to the nearest
    wall, up to CLEAR, then nearest the centre. The origin stays INSIDE the region."""
    lows, highs = walls
    best, best_key = centre[:2].copy(), (np.inf, np.inf)
    for fx in np.linspace(-INSIDE, INSIDE, grid):
        for fy in np.linspace(-INSIDE, INSIDE, grid):
            point = centre[:2] + np.array([fx, fy]) * half[:2]
            lo, hi = point + foot[0], point + foot[1]
            # signed room between the footprint and each wall box (negative: they overlap)
            gaps = np.max(np.maximum(lows - hi, lo - highs), axis=1) if len(lows) else np.array([CLEAR])
            room = min(float(np.min(gaps)), CLEAR)
            key = (round(-room, 4), float(np.hypot(fx, fy)))
            if key < best_key:
                best, best_key = point, key
    return best


# ------------------------------------------------------------------------------------------ the scene


def region_half(scene: Scene, region: str) -> np.ndarray | None:
    """World half extents (xy) of a region site's box as LIBERO's ``in_box`` reads it, or None for an
    object (no box)."""
    size = getattr(scene.env.object_sites_dict.get(region), "size", None)
    if size is None or region in scene.env.obj_body_id:
        return None
    return np.abs(np.array(scene.env.sim.data.get_site_xmat(region)) @ np.asarray(size, float))[:2]


def object_axes(scene: Scene, obj: str) -> tuple[np.ndarray, np.ndarray]:
    """``(half extents of its two horizontal axes, the longer one's world xy direction)`` of an object."""
    _, half, rot = scene.box(obj)
    horiz = sorted(range(3), key=lambda i: abs(rot[2, i]))[:2]
    long = max(horiz, key=lambda i: half[i])
    return np.array([half[i] for i in horiz]), rot[:2, long]


def slot_half(scene: Scene, obj: str, region: str) -> np.ndarray | None:
    """The region's world half extents when it is a slot for the object (:func:`is_slot`), else None
    (objects, and drawers, whose places :mod:`policies.experts.libero` plans)."""
    half = region_half(scene, region)
    if half is None or getattr(scene.env.object_sites_dict[region], "joints", None):  # a drawer's: no
        return None
    return half if is_slot(half, object_axes(scene, obj)[0]) else None


def slot_spot(scene: Scene, obj: str, region: str) -> np.ndarray:
    """:func:`footprint_spot` for the carried object in the region, walls read from the scene's
    collision geoms standing above the region's floor (the surface under its centre)."""
    centre = scene.position(region)
    half = region_half(scene, region)
    corners = scene.corners(obj)[:, :2] - scene.position(obj)[:2]
    lows, highs = scene._geom_boxes(obj)
    standing = highs[:, 2] > scene.surface_z(centre[:2], skip=obj) + WALL
    walls = (lows[standing, :2], highs[standing, :2])
    return footprint_spot(
        centre, half if half is not None else np.zeros(2), (corners.min(0), corners.max(0)), walls
    )


# ----------------------------------------------------------------------------------- roofed regions

ROOF_ROOM = 0.15  # m: a roof less than this above the object's top leaves no room for a hand from above


@dataclass(frozen=True)
class Opening:
    """The open side of a roofed region: ``inward`` (unit, world xy: the way in), the coordinates along it
    of the roof's front edge (``face``: a hand above the object stays short of it) and of the far wall
    (``back``), the side walls' inner faces along ``lateral`` (unit xy, ``inward`` turned +90 degrees),
    and the heights of the floor and of the roof's underside."""

    inward: np.ndarray
    face: float
    back: float
    sides: tuple[float, float]
    floor: float
    roof: float

    @property
    def lateral(self) -> np.ndarray:
        return np.array([-self.inward[1], self.inward[0]])


def opening(
    centre: np.ndarray,
    under: tuple[np.ndarray, np.ndarray],
    owner: tuple[np.ndarray, np.ndarray],
    toward: np.ndarray,
) -> Opening | None:
    """The open side of the region at ``centre`` (world) if something roofs it, else None.

    ``under``: (lows, highs) of the scene's collision boxes (world, n x 3) that may floor or roof it (the
    nearest box above and below the centre's xy); ``owner``: those of the fixture the region belongs to,
    whose boxes standing between floor and roof across a horizontal line through the centre are its
    walls. The open side is the one with no wall, facing ``toward`` (xy, where the robot is) most."""
    lows, highs = under
    over = np.all((lows[:, :2] <= centre[:2]) & (highs[:, :2] >= centre[:2]), axis=1)
    above = over & (lows[:, 2] > centre[2])
    if not above.any():
        return None
    roof_box = int(np.flatnonzero(above)[np.argmin(lows[above, 2])])
    below = over & (highs[:, 2] <= centre[2])
    floor = float(highs[below, 2].max()) if below.any() else float(centre[2])
    roof = float(lows[roof_box, 2])
    distance = {d: _wall_distance(centre, owner, d, (floor + WALL, roof - WALL)) for d in _DIRECTIONS}
    open_sides = [d for d, gap in distance.items() if not np.isfinite(gap)]
    if not open_sides:
        return None
    out = np.array(max(open_sides, key=lambda d: float(np.array(d) @ toward[:2])))
    inward = -out
    corners = np.array([[lows[roof_box][i], highs[roof_box][i]] for i in (0, 1)])  # 2 x 2: x lo/hi, y lo/hi
    face = float(min(inward[0] * corners[0]) + min(inward[1] * corners[1]))
    lateral = np.array([-inward[1], inward[0]])
    along, across = float(centre[:2] @ inward), float(centre[:2] @ lateral)
    return Opening(
        inward,
        face,
        along + distance[tuple(inward)],
        (across - distance[tuple(-lateral)], across + distance[tuple(lateral)]),
        floor,
        roof,
    )


_DIRECTIONS = [(1.0, 0.0), (-1.0, 0.0), (0.0, 1.0), (0.0, -1.0)]


def _wall_distance(
    centre: np.ndarray,
    boxes: tuple[np.ndarray, np.ndarray],
    direction: tuple[float, float],
    band: tuple[float, float],
) -> float:
    """How far from ``centre`` along ``direction`` (a world axis, xy) the nearest box standing in the
    height ``band`` begins, among the boxes crossing the line through the centre; inf when none."""
    lows, highs = boxes
    axis = 0 if direction[0] else 1
    other = 1 - axis
    sign = direction[axis]
    crosses = (lows[:, other] <= centre[other]) & (highs[:, other] >= centre[other])
    standing = (lows[:, 2] < band[1]) & (highs[:, 2] > band[0])
    near = np.where(sign > 0, lows[:, axis] - centre[axis], centre[axis] - highs[:, axis])
    ahead = crosses & standing & (np.where(sign > 0, highs[:, axis], -lows[:, axis]) > sign * centre[axis])
    return float(np.maximum(near[ahead], 0.0).min()) if ahead.any() else float("inf")


def region_opening(scene: Scene, obj: str, region: str) -> Opening | None:
    """The open side of a region (a site, not an object) whose roof leaves no room for a hand carrying
    ``obj`` from above (less than ROOF_ROOM over the object's top), else None."""
    site = scene.env.object_sites_dict.get(region)
    if region in scene.env.obj_body_id or site is None or getattr(site, "joints", None):  # drawers: opened
        return None
    centre = scene.position(region)
    boxes = scene.corners(scene.owner(region)).reshape(-1, 8, 3)
    toward = scene.shoulder()[:2] - centre[:2]
    found = opening(centre, scene._geom_boxes(obj), (boxes.min(1), boxes.max(1)), toward)
    lo, hi = scene.extent(obj)
    if found is None or found.roof - found.floor > float(hi[2] - lo[2]) + ROOF_ROOM:
        return None
    return found


def entry_grip(
    boxes: list[tuple[np.ndarray, np.ndarray]], rot: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """``(grasp point in the object's frame, world finger axis, world direction the handle points)`` for
    an upright object whose collision boxes (its frame) are ``boxes`` and whose axes (world columns) are
    ``rot``, or None without a handle.

    The handle is :func:`policies.experts.libero_goals.find_handle`'s, measured from the centre of the
    object's base (a mug's origin may sit off its body, toward its handle); the grasp is on the handle's
    topmost part (a mug's upper bar: its loop is empty in the middle), halfway along what protrudes."""
    up = int(np.argmax(np.abs(rot[2])))
    if rot[2, up] < 0.9:
        return None
    horizontal = (0, 1) if up == 2 else (0, 2) if up == 1 else (1, 2)
    lows, highs = np.array([b[0] for b in boxes]), np.array([b[1] for b in boxes])
    base = lows[:, up] < lows[:, up].min() + 0.005
    shift = np.zeros(3)
    for i in horizontal:
        shift[i] = float((lows[base, i] + highs[base, i]).mean()) / 2
    handle = find_handle([(lo - shift, hi - shift) for lo, hi in zip(lows, highs, strict=True)], horizontal)
    if handle is None:
        return None
    sign = 1.0 if handle.span[1] > 0 else -1.0
    far = np.where(
        sign > 0, highs[:, handle.along] - shift[handle.along], shift[handle.along] - lows[:, handle.along]
    )
    part = far > abs(handle.span[0]) + HANDLE_REACH
    bar = int(np.flatnonzero(part)[np.argmax(highs[part, up])])
    point = shift + np.array(handle.point)
    point[handle.along] = shift[handle.along] + (handle.span[0] + handle.span[1]) / 2
    point[up] = (lows[bar, up] + highs[bar, up]) / 2
    return point, _flat(rot[:, handle.across]), _flat(rot[:, handle.along] * sign)


def _flat(v: np.ndarray) -> np.ndarray:
    h = np.array([v[0], v[1], 0.0])
    return h / max(float(np.linalg.norm(h)), 1e-9)


def hand_front(
    boxes: list[tuple[np.ndarray, np.ndarray]], rot: np.ndarray, inward: np.ndarray, above: float
) -> float:
    """How far along ``inward`` (world) the hand reaches past its site, counting only its parts higher
    than ``above`` (m, relative to the site): ``boxes`` are the hand's collision boxes in the site's
    frame, ``rot`` the site's rotation. ``-inf`` when no part is that high."""
    signs = np.array(np.meshgrid([0, 1], [0, 1], [0, 1])).T.reshape(-1, 3)
    corners = np.concatenate([np.where(signs, hi, lo) for lo, hi in boxes]) @ rot.T
    high = corners[:, 2] >= above
    return float((corners[high] @ inward).max()) if high.any() else float("-inf")


HAND_PARTS = ("gripper", "link7")  # the bodies that make the hand (robosuite's names)


def hand_boxes(scene: Scene) -> list[tuple[np.ndarray, np.ndarray]]:
    """The hand's collision boxes (low, high) in its site's frame: the gripper and the last link."""
    m, d = scene.model, scene.data
    site, rot = scene.hand(), scene.hand_rotation()
    signs = np.array(np.meshgrid([-1, 1], [-1, 1], [-1, 1])).T.reshape(-1, 3)
    out = []
    for g in range(m.ngeom):
        name = m.body(m.geom_bodyid[g]).name
        if (
            (m.geom_contype[g] or m.geom_conaffinity[g])
            and any(p in name for p in HAND_PARTS)
            and scene._robot(g)
        ):
            c = (
                d.geom_xpos[g]
                + (m.geom_aabb[g, :3] + signs * m.geom_aabb[g, 3:]) @ d.geom_xmat[g].reshape(3, 3).T
            )
            local = (c - site) @ rot
            out.append((local.min(0), local.max(0)))
    return out
