"""Geometry of the manipulable shapes, generated here as convex pieces (MuJoCo collides convex hulls).

Every shape is a 4 cm tall prism standing on the table, small enough for the Panda gripper (8 cm stroke):
cube, cylinder, star (a pentagon plus five tips), moon (a crescent cut into convex slices) and triangular
prism. A :class:`ShapeSpec` also says where a parallel gripper holds the shape, which only the privileged
expert reads.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

SHAPE_HEIGHT = 0.04  # metres, every shape
STAR_OUTER, STAR_INNER = 0.028, 0.013
MOON_OUTER, MOON_INNER, MOON_OFFSET = 0.028, 0.024, 0.018
TRIANGLE_SIDE = 0.05
CUBE_HALF = 0.02
CYLINDER_RADIUS = 0.02


@dataclass(frozen=True)
class Piece:
    """One convex collision/visual part: a primitive (``box``/``cylinder`` with ``size``) or a prism mesh."""

    kind: str
    size: tuple[float, ...] = ()
    polygon: tuple[tuple[float, float], ...] = ()  # counter-clockwise footprint of a mesh prism


@dataclass(frozen=True)
class ShapeSpec:
    """A shape: its display name, convex pieces, footprint radius and how the gripper holds it.

    ``grasp_point`` is in the object frame (metres); ``grasp_angles`` are the directions (radians, object
    frame) along which the fingers may close: the expert takes the one nearest its current wrist yaw.
    """

    key: str
    noun: str
    pieces: tuple[Piece, ...]
    radius: float
    grasp_point: tuple[float, float] = (0.0, 0.0)
    grasp_angles: tuple[float, ...] = (0.0,)


def star_polygons(outer: float = STAR_OUTER, inner: float = STAR_INNER) -> list[list[tuple[float, float]]]:
    """A five-pointed star (first tip on +y) as a central pentagon and five triangular tips."""
    tips = [_polar(outer, math.pi / 2 + k * 2 * math.pi / 5) for k in range(5)]
    notches = [_polar(inner, math.pi / 2 + (k + 0.5) * 2 * math.pi / 5) for k in range(5)]
    pieces = [notches]
    pieces += [[notches[k - 1], tips[k], notches[k]] for k in range(5)]
    return pieces


def moon_polygons(
    outer: float = MOON_OUTER, inner: float = MOON_INNER, offset: float = MOON_OFFSET, slices: int = 6
) -> list[list[tuple[float, float]]]:
    """A crescent: the disc of radius ``outer`` minus a disc of radius ``inner`` shifted by ``offset`` along +x.

    The crescent opens towards +x. Each slice pairs an outer-arc segment with the matching inner-arc
    segment, a convex quadrilateral.
    """
    cx = (outer**2 - inner**2 + offset**2) / (2 * offset)  # x of the two points where the circles meet
    cy = math.sqrt(outer**2 - cx**2)
    theta0 = math.atan2(cy, cx)
    phi0 = math.atan2(cy, cx - offset)
    ts = np.linspace(0.0, 1.0, slices + 1)
    outer_pts = [_polar(outer, theta0 + t * (2 * math.pi - 2 * theta0)) for t in ts]
    inner_pts = [_shift(_polar(inner, phi0 + t * (2 * math.pi - 2 * phi0)), offset) for t in ts]
    return [[outer_pts[k], outer_pts[k + 1], inner_pts[k + 1], inner_pts[k]] for k in range(slices)]


def triangle_polygon(side: float = TRIANGLE_SIDE) -> list[tuple[float, float]]:
    """An equilateral triangle centred on its centroid, one vertex on +y."""
    r = side / math.sqrt(3)
    return [_polar(r, math.pi / 2 + k * 2 * math.pi / 3) for k in range(3)]


def prism_vertices(
    polygon: list[tuple[float, float]] | tuple[tuple[float, float], ...], height: float
) -> np.ndarray:
    """Vertices ``(2n, 3)`` of the prism over ``polygon`` from ``-height/2`` to ``+height/2``."""
    xy = np.asarray(polygon, dtype=float)
    low = np.column_stack([xy, np.full(len(xy), -height / 2)])
    high = np.column_stack([xy, np.full(len(xy), height / 2)])
    return np.vstack([low, high])


def is_convex(polygon: list[tuple[float, float]] | tuple[tuple[float, float], ...]) -> bool:
    """True when the polygon's consecutive edges all turn the same way (counter-clockwise)."""
    p = np.asarray(polygon, dtype=float)
    edges = np.roll(p, -1, axis=0) - p
    cross = edges[:, 0] * np.roll(edges, -1, axis=0)[:, 1] - edges[:, 1] * np.roll(edges, -1, axis=0)[:, 0]
    return bool(np.all(cross > -1e-12))


def _polar(r: float, angle: float) -> tuple[float, float]:
    return (r * math.cos(angle), r * math.sin(angle))


def _shift(p: tuple[float, float], dx: float) -> tuple[float, float]:
    return (p[0] + dx, p[1])


def _mesh_pieces(polygons: list[list[tuple[float, float]]]) -> tuple[Piece, ...]:
    return tuple(Piece("mesh", polygon=tuple((v[0], v[1]) for v in poly)) for poly in polygons)


def _build_shapes() -> dict[str, ShapeSpec]:
    h = SHAPE_HEIGHT / 2
    moon_grasp_x = -(MOON_OUTER + (MOON_INNER - MOON_OFFSET)) / 2  # middle of the crescent's thick part
    return {
        "cube": ShapeSpec(
            "cube",
            "cube",
            (Piece("box", (CUBE_HALF, CUBE_HALF, h)),),
            CUBE_HALF * math.sqrt(2),
            grasp_angles=(0.0, math.pi / 2),
        ),
        "cylinder": ShapeSpec(
            "cylinder",
            "cylinder",
            (Piece("cylinder", (CYLINDER_RADIUS, h)),),
            CYLINDER_RADIUS,
            grasp_angles=(0.0, math.pi / 3, 2 * math.pi / 3),
        ),
        "star": ShapeSpec(
            "star",
            "star",
            _mesh_pieces(star_polygons()),
            STAR_OUTER,
            grasp_angles=tuple(math.pi / 2 + k * 2 * math.pi / 5 for k in range(5)),
        ),
        "moon": ShapeSpec(
            "moon",
            "moon",
            _mesh_pieces(moon_polygons()),
            MOON_OUTER,
            grasp_point=(moon_grasp_x, 0.0),
            grasp_angles=(0.0,),
        ),
        "triangle": ShapeSpec(
            "triangle",
            "triangular prism",
            _mesh_pieces([triangle_polygon()]),
            TRIANGLE_SIDE / math.sqrt(3),
            grasp_angles=tuple(math.pi / 2 + k * 2 * math.pi / 3 for k in range(3)),
        ),
    }


SHAPES: dict[str, ShapeSpec] = _build_shapes()
SHAPE_KEYS: tuple[str, ...] = tuple(SHAPES)
