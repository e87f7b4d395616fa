"""Shortest paths with EB-Navigation's moves on the occupancy lattice, over (x, y, heading).

EB's discrete moves (0.25 m ahead/back/right/left, 90 deg turns) keep the agent on a square lattice
anchored at its start pose and aligned with its start heading. :class:`Lattice` holds that lattice's
free nodes and the moves between them that the swept agent disc can make; :meth:`Lattice.steps_to_goal`
returns, for every (node, heading), the least number of actions after which the agent is within the
success distance of a target (LookUp/LookDown never help, so they are left out).
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import dijkstra

from envs.navigation.geometry import AGENT_RADIUS, Obstacles, house_bounds

MOVE_STEP = 0.25
UNREACHABLE = np.iinfo(np.int32).max // 2

# EB action id -> (kind, lattice direction or heading change). Directions are relative to the heading
# index k: ahead = k, left = k + 1, back = k + 2, right = k + 3 (mod 4); turning right lowers k.
_MOVE_OFFSETS = {0: 0, 1: 2, 2: 3, 3: 1}
_TURNS = {4: 3, 5: 1}


@dataclass
class Lattice:
    """Lattice nodes ``points`` (``(N, 2)``) spaced ``step`` along the headings ``heading0 + 90 k``.

    ``free[n]``: the agent disc fits at node n. ``neighbour[n, d]``: the node reached by moving one step
    in direction d (heading ``heading0 + 90 d``), or -1 when that move is blocked.
    """

    points: np.ndarray
    free: np.ndarray
    neighbour: np.ndarray
    heading0: float
    step: float
    anchor: int

    @classmethod
    def build(
        cls,
        obstacles: Obstacles,
        bounds: Sequence[float],
        anchor_xy: ArrayLike,
        heading_deg: float,
        step: float = MOVE_STEP,
        radius: float = AGENT_RADIUS,
    ) -> Lattice:
        """The lattice through ``anchor_xy`` aligned with ``heading_deg`` covering ``bounds``."""
        axes = _axes(heading_deg)
        corners = np.array(
            [[bounds[0], bounds[1]], [bounds[2], bounds[1]], [bounds[0], bounds[3]], [bounds[2], bounds[3]]]
        ) - np.asarray(anchor_xy, dtype=float)
        proj = corners @ axes.T / step
        lo, hi = np.floor(proj.min(axis=0)).astype(int), np.ceil(proj.max(axis=0)).astype(int)
        ii, jj = np.meshgrid(np.arange(lo[0], hi[0] + 1), np.arange(lo[1], hi[1] + 1), indexing="ij")
        shape = (ii.shape[0], ii.shape[1])
        points = np.asarray(anchor_xy, dtype=float) + step * (
            ii.ravel()[:, None] * axes[0] + jj.ravel()[:, None] * axes[1]
        )
        clearance = obstacles.clearance(points) if len(obstacles.rects) else np.full(len(points), np.inf)
        neighbour = _neighbours(points, clearance, shape, obstacles, radius)
        free = clearance >= radius
        anchor = int(np.ravel_multi_index((-lo[0], -lo[1]), shape))
        return cls(points, free, neighbour, float(heading_deg), step, anchor)

    @classmethod
    def for_scene(cls, scene: dict[str, Any], obstacles: Obstacles, radius: float = AGENT_RADIUS) -> Lattice:
        """The scene's canonical lattice (cell centres of a 0.25 m grid from the house corner, heading 0)."""
        b = house_bounds(scene)
        return cls.build(obstacles, b, (b[0] + MOVE_STEP / 2, b[1] + MOVE_STEP / 2), 0.0, MOVE_STEP, radius)

    def component(self, start: int) -> list[int]:
        """Nodes reachable from ``start`` by moves (breadth-first)."""
        seen, queue = {start}, deque([start])
        while queue:
            n = queue.popleft()
            for m in self.neighbour[n]:
                if m >= 0 and m not in seen:
                    seen.add(int(m))
                    queue.append(int(m))
        return sorted(seen)

    def nearest(self, xy: ArrayLike, tol: float = 1e-4) -> int | None:
        """Index of the node at ``xy`` (within ``tol``), ``None`` when ``xy`` is off the lattice."""
        d = np.hypot(*(self.points - np.asarray(xy, dtype=float)).T)
        n = int(np.argmin(d))
        return n if d[n] <= tol else None

    def heading_index(self, heading_deg: float) -> int | None:
        """k such that ``heading_deg = heading0 + 90 k`` (mod 360), ``None`` when not aligned."""
        k = (heading_deg - self.heading0) / 90.0
        return round(k) % 4 if abs(k - round(k)) < 1e-6 else None

    def steps_to_goal(self, goal_xy: Sequence[float], success_distance: float) -> np.ndarray:
        """Least number of EB actions from each state ``(node, k)`` to success (``UNREACHABLE`` if none).

        A breadth-first search backwards from the goal states over the action graph (scipy's, in C: a
        variant's start is drawn from these distances while its episode waits)."""
        n = len(self.points)
        goal = self.free & (
            np.hypot(*(self.points - np.asarray(goal_xy, float)).T) <= success_distance + 1e-9
        )
        if not goal.any():
            return np.full((n, 4), UNREACHABLE, dtype=np.int64)
        # Every state has exactly six successors, so the graph's rows are built directly; and every action
        # is undone by another (ahead/back, left/right, the two turns; a blocked move stays), so the
        # distance from the goal states over it is the distance to them.
        successors = self._successors().ravel()
        graph = csr_matrix(
            (np.ones(len(successors)), successors, np.arange(0, len(successors) + 1, 6)), shape=(4 * n, 4 * n)
        )
        goals = (4 * np.flatnonzero(goal)[:, None] + np.arange(4)).ravel()
        dist = dijkstra(graph, indices=goals, unweighted=True, min_only=True)
        return np.where(np.isfinite(dist), dist, UNREACHABLE).astype(np.int64).reshape(n, 4)

    def _successors(self) -> np.ndarray:
        """``(N, 4, 6)``: the state ``4 node + k`` each EB action 0-5 leads to from ``(node, k)`` (blocked:
        stay)."""
        n = len(self.points)
        nodes, heads = np.arange(n)[:, None], np.arange(4)[None, :]
        out = np.empty((n, 4, 6), dtype=np.int64)
        for action, offset in _MOVE_OFFSETS.items():
            nxt = self.neighbour[:, (heads[0] + offset) % 4]
            out[:, :, action] = 4 * np.where(nxt >= 0, nxt, nodes) + heads
        for action, turn in _TURNS.items():
            out[:, :, action] = 4 * nodes + (heads + turn) % 4
        return out

    def next_state(self, node: int, k: int, action: int) -> tuple[int, int]:
        """The state after EB action ``action`` (0-5) from ``(node, k)``; a blocked move stays put."""
        if action in _MOVE_OFFSETS:
            nxt = int(self.neighbour[node, (k + _MOVE_OFFSETS[action]) % 4])
            return (nxt if nxt >= 0 else node), k
        return node, (k + _TURNS[action]) % 4

    def best_action(self, dist: np.ndarray, node: int, k: int) -> int | None:
        """The EB action that lowers the steps-to-go the most (lowest id on ties); ``None`` if stuck."""
        if dist[node, k] >= UNREACHABLE:
            return None
        options = [(int(dist[self.next_state(node, k, a)]), a) for a in range(6)]
        value, action = min(options)
        return action if value < dist[node, k] else None

    def plan(self, dist: np.ndarray, node: int, k: int) -> list[int]:
        """The full action sequence from ``(node, k)`` to success (empty when already there or stuck)."""
        actions: list[int] = []
        while dist[node, k] > 0:
            a = self.best_action(dist, node, k)
            if a is None:
                return []
            actions.append(a)
            node, k = self.next_state(node, k, a)
        return actions


def _axes(heading_deg: float) -> np.ndarray:
    """Unit vectors of the lattice: along the heading and 90 deg to its left."""
    h = math.radians(heading_deg)
    return np.array([[math.cos(h), math.sin(h)], [-math.sin(h), math.cos(h)]])


def _neighbours(
    points: np.ndarray, clearance: np.ndarray, shape: tuple[int, int], obstacles: Obstacles, radius: float
) -> np.ndarray:
    """``(N, 4)`` neighbour indices (directions +i, +j, -i, -j), -1 where the swept disc would collide.

    ``clearance``: each point's distance to the nearest obstacle. A move whose ends both clear the disc by
    more than half its length is free without a test (distance to a set changes no faster than the point
    moves), so only the moves near obstacles are swept against every rectangle."""
    n = len(points)
    free = clearance >= radius
    idx = np.arange(n).reshape(shape)
    neighbour = np.full((n, 4), -1, dtype=np.int64)
    for d, (src, dst) in enumerate([(idx[:-1, :], idx[1:, :]), (idx[:, :-1], idx[:, 1:])]):
        a, b = src.ravel(), dst.ravel()
        ok = free[a] & free[b]
        a, b = a[ok], b[ok]
        if len(a) and len(obstacles.rects):
            half = np.hypot(*(points[a] - points[b]).T) / 2
            near = np.minimum(clearance[a], clearance[b]) <= radius + half + 1e-9
            clear = np.ones(len(a), bool)
            clear[near] = obstacles.segment_clearance(points[a[near]], points[b[near]]).min(axis=1) >= radius
            a, b = a[clear], b[clear]
        neighbour[a, d] = b
        neighbour[b, d + 2] = a
    return neighbour
