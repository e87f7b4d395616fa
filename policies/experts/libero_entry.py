"""Places the top-down carry of :mod:`policies.experts.libero` does not reach as it stands: narrow slots
and regions under a roof.

- **Slots** (a caddy's compartment): a region narrower than the carried object's footprint circle takes
  the object lengthwise. The hand turns the object, about the vertical, so that its longer horizontal
  axis lies along the region's longer one (:func:`slot_turn`), and the place is the spot where the
  object's footprint rectangle, measured after the turn, comes least near the walls standing above the
  region's floor (:func:`footprint_spot`).
- **Roofed regions** (a microwave's heating region, a shelf's compartment): the object is carried in
  from the open side, leading, with the hand behind it outside the opening (:func:`opening`).

The geometry here is plain arrays (the fast tests run it on numbers); the expert applies it to its scene.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from policies.experts.libero import Scene

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
