"""Exact measurements of a home's entities (target objects and furniture) from the compiled MuJoCo model.

Every entity is one static body built from primitive geoms (spheres, capsules, ellipsoids, cylinders,
boxes), so sizes and distances have closed forms: an entity's extent along a direction is the sum of the
support functions of its geoms in both directions, and the distance between two entities is the least
distance between their geoms (``mujoco.mj_geomDistance``).
"""

from __future__ import annotations

import itertools

import mujoco
import numpy as np

from envs.navigation.world import World

_SEARCH_DISTANCE = 100.0  # metres: larger than any home, so mj_geomDistance always reports the distance


def entity_geoms(world: World, label: int) -> np.ndarray:
    """Geom ids of the entity with mask label ``label``."""
    geoms = np.flatnonzero(world.geom_entity == label)
    if len(geoms) == 0:
        raise ValueError(
            f"no geoms carry entity label {label} ({world.labels[label] if label < len(world.labels) else '?'})"
        )
    return geoms


def _support(world: World, geom: int, direction: np.ndarray) -> float:
    """max over the geom's points p of direction . p (``direction`` a world unit vector)."""
    model, data = world.model, world.data
    centre, R, size = data.geom_xpos[geom], data.geom_xmat[geom].reshape(3, 3), model.geom_size[geom]
    m = R.T @ direction  # the direction in the geom's frame
    kind = model.geom_type[geom]
    if kind == mujoco.mjtGeom.mjGEOM_SPHERE:
        extent = size[0]
    elif kind == mujoco.mjtGeom.mjGEOM_ELLIPSOID:
        extent = float(np.linalg.norm(size * m))
    elif kind == mujoco.mjtGeom.mjGEOM_BOX:
        extent = float(np.abs(size * m).sum())
    elif kind == mujoco.mjtGeom.mjGEOM_CYLINDER:
        extent = size[0] * float(np.sqrt(max(0.0, 1.0 - m[2] ** 2))) + size[1] * abs(m[2])
    elif kind == mujoco.mjtGeom.mjGEOM_CAPSULE:
        extent = size[0] + size[1] * abs(m[2])
    else:
        raise ValueError(f"geom {geom} has type {kind}, which entity measurements do not cover")
    return float(direction @ centre) + float(extent)


def extents(world: World, label: int) -> np.ndarray:
    """Length, width and height of an entity: its extents along its own body axes (metres)."""
    geoms = entity_geoms(world, label)
    axes = world.data.xmat[world.model.geom_bodyid[geoms[0]]].reshape(3, 3).T  # body x, y, z in world
    return np.array(
        [max(_support(world, g, a) for g in geoms) + max(_support(world, g, -a) for g in geoms) for a in axes]
    )


def longest_dimension(world: World, label: int) -> float:
    """The largest of an entity's length, width and height (metres)."""
    return float(extents(world, label).max())


def centre(world: World, label: int) -> np.ndarray:
    """World position of the centre of an entity's bounding box (in its own body frame)."""
    geoms = entity_geoms(world, label)
    axes = world.data.xmat[world.model.geom_bodyid[geoms[0]]].reshape(3, 3).T
    mid = [
        (max(_support(world, g, a) for g in geoms) - max(_support(world, g, -a) for g in geoms)) / 2
        for a in axes
    ]
    return axes.T @ np.array(mid)


def closest_distance(world: World, a: int, b: int) -> float:
    """Least distance (metres) between the surfaces of two entities; 0 when they touch or overlap."""
    best = np.inf
    for ga, gb in itertools.product(entity_geoms(world, a), entity_geoms(world, b)):
        best = min(
            best, mujoco.mj_geomDistance(world.model, world.data, int(ga), int(gb), _SEARCH_DISTANCE, None)
        )
    return max(0.0, float(best))
