"""2-D collision geometry of the floor plan: obstacles are axis-aligned rectangles, the agent a disc.

A move is blocked when the disc swept along the straight segment of the move comes closer than the agent
radius to any obstacle, so the agent can never pass through a wall or a piece of furniture, whatever the
step size. Distances are exact (segment to rectangle), vectorised over segments and obstacles.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

AGENT_RADIUS = 0.18  # metres; about AI2-THOR's agent
_EPS = 1e-9


@dataclass(frozen=True)
class Obstacles:
    """Rectangles ``[xmin, ymin, xmax, ymax]`` (``(N, 4)``) with a label each (what blocks a move)."""

    rects: np.ndarray
    labels: tuple[str, ...]

    def __post_init__(self) -> None:
        if self.rects.ndim != 2 or self.rects.shape[1] != 4 or len(self.rects) != len(self.labels):
            raise ValueError(
                f"rects must be (N, 4) with one label each, got {self.rects.shape} and "
                f"{len(self.labels)} labels"
            )

    def clearance(self, points: np.ndarray) -> np.ndarray:
        """Distance from each point ``(P, 2)`` to the nearest obstacle (0 inside one)."""
        return point_rect_distance(np.asarray(points, dtype=float), self.rects).min(axis=1)

    def segment_clearance(self, p0: np.ndarray, p1: np.ndarray) -> np.ndarray:
        """Distance from each segment ``p0[i] -> p1[i]`` (``(E, 2)`` each) to each obstacle: ``(E, N)``."""
        return segment_rect_distance(np.asarray(p0, dtype=float), np.asarray(p1, dtype=float), self.rects)

    def blocker(self, p0: np.ndarray, p1: np.ndarray, radius: float = AGENT_RADIUS) -> str | None:
        """Label of the nearest obstacle a disc moving from ``p0`` to ``p1`` would hit, ``None`` if free."""
        d = self.segment_clearance(np.atleast_2d(p0), np.atleast_2d(p1))[0]
        hit = np.flatnonzero(d < radius - _EPS)
        if hit.size == 0:
            return None
        return self.labels[int(hit[np.argmin(_entry_order(np.asarray(p0, float), self.rects[hit]))])]

    def free_fraction(
        self, p0: np.ndarray, p1: np.ndarray, radius: float = AGENT_RADIUS, iterations: int = 24
    ) -> float:
        """Largest ``t`` in [0, 1] such that the move ``p0 -> p0 + t (p1 - p0)`` is free (bisection).

        A free prefix stays free when shortened, so the free set is an interval starting at 0.
        """
        p0, p1 = np.asarray(p0, dtype=float), np.asarray(p1, dtype=float)
        if self.blocker(p0, p1, radius) is None:
            return 1.0
        lo, hi = 0.0, 1.0
        for _ in range(iterations):
            mid = (lo + hi) / 2
            if self.blocker(p0, p0 + mid * (p1 - p0), radius) is None:
                lo = mid
            else:
                hi = mid
        return lo


def _entry_order(p0: np.ndarray, rects: np.ndarray) -> np.ndarray:
    """Distance from the start of a move to each rectangle: the nearest is the one hit first."""
    return point_rect_distance(p0[None, :], rects)[0]


def point_rect_distance(points: np.ndarray, rects: np.ndarray) -> np.ndarray:
    """Euclidean distance ``(P, N)`` from points ``(P, 2)`` to axis-aligned rectangles ``(N, 4)``."""
    return _box_rect_distance(points, points, rects)


def _point_segment_distance(c: np.ndarray, p0: np.ndarray, p1: np.ndarray) -> np.ndarray:
    """Distance from points ``c`` to segments ``p0 -> p1`` (all broadcast to a common shape ``(..., 2)``)."""
    d = p1 - p0
    dd = np.sum(d * d, axis=-1)
    t = np.where(dd > 0, np.sum((c - p0) * d, axis=-1) / np.where(dd > 0, dd, 1.0), 0.0)
    closest = p0 + np.clip(t, 0.0, 1.0)[..., None] * d
    return np.linalg.norm(c - closest, axis=-1)


def _segments_intersect_rects(p0: np.ndarray, p1: np.ndarray, rects: np.ndarray) -> np.ndarray:
    """Liang-Barsky clipping: does segment i cross rectangle j? ``(E, N)`` booleans."""
    t_enter = np.zeros((len(p0), len(rects)))
    t_exit = np.ones((len(p0), len(rects)))
    for axis in (0, 1):
        start, delta = p0[:, axis : axis + 1], (p1 - p0)[:, axis : axis + 1]
        lo, hi = rects[None, :, axis], rects[None, :, axis + 2]
        moving = np.abs(delta) > _EPS
        safe = np.where(moving, delta, 1.0)
        t1, t2 = (lo - start) / safe, (hi - start) / safe
        inside = (start >= lo) & (start <= hi)
        t_enter = np.maximum(t_enter, np.where(moving, np.minimum(t1, t2), np.where(inside, -np.inf, np.inf)))
        t_exit = np.minimum(t_exit, np.where(moving, np.maximum(t1, t2), np.where(inside, np.inf, -np.inf)))
    return t_enter <= t_exit


def segment_rect_distance(p0: np.ndarray, p1: np.ndarray, rects: np.ndarray) -> np.ndarray:
    """Exact distance ``(E, N)`` between segments ``p0 -> p1`` (``(E, 2)``) and rectangles ``(N, 4)``.

    An axis-aligned segment is a flat axis-aligned box, and two such boxes are apart by the hypotenuse of
    their gaps along x and y; every lattice move is one, so that cheap form serves most calls. Otherwise:
    two disjoint convex sets are closest at a vertex of one of them, so the distance is the least of the
    segment ends to the rectangle and the rectangle corners to the segment; 0 where they intersect.
    """
    aligned = np.any(np.abs(p1 - p0) <= _EPS, axis=1)  # (a skew of 1e-9 m moves the distance as much)
    if aligned.all():
        return _box_rect_distance(np.minimum(p0, p1), np.maximum(p0, p1), rects)
    out = np.empty((len(p0), len(rects)))
    out[aligned] = _box_rect_distance(
        np.minimum(p0[aligned], p1[aligned]), np.maximum(p0[aligned], p1[aligned]), rects
    )
    out[~aligned] = _oblique_segment_rect_distance(p0[~aligned], p1[~aligned], rects)
    return out


def _box_rect_distance(lo: np.ndarray, hi: np.ndarray, rects: np.ndarray) -> np.ndarray:
    """Distance ``(E, N)`` between axis-aligned boxes ``lo``-``hi`` (``(E, 2)`` each) and rectangles."""
    dx = np.maximum(np.maximum(rects[None, :, 0] - hi[:, 0:1], 0.0), lo[:, 0:1] - rects[None, :, 2])
    dy = np.maximum(np.maximum(rects[None, :, 1] - hi[:, 1:2], 0.0), lo[:, 1:2] - rects[None, :, 3])
    return np.hypot(dx, dy)


def _oblique_segment_rect_distance(p0: np.ndarray, p1: np.ndarray, rects: np.ndarray) -> np.ndarray:
    ends = np.minimum(point_rect_distance(p0, rects), point_rect_distance(p1, rects))
    corners = np.stack([rects[:, [0, 1]], rects[:, [2, 1]], rects[:, [0, 3]], rects[:, [2, 3]]], axis=1)
    c = corners[None, :, :, :]  # (1, N, 4, 2)
    a, b = p0[:, None, None, :], p1[:, None, None, :]
    corner_dist = _point_segment_distance(c, a, b).min(axis=-1)
    dist = np.minimum(ends, corner_dist)
    return np.where(_segments_intersect_rects(p0, p1, rects), 0.0, dist)


def house_bounds(scene: dict[str, Any]) -> list[float]:
    """The rectangle covering every room."""
    b = np.array([r["bounds"] for r in scene["rooms"]])
    return [float(b[:, 0].min()), float(b[:, 1].min()), float(b[:, 2].max()), float(b[:, 3].max())]
