"""Views of generated homes from any camera pose, and the checks that keep a camera motion physical.

The simulator data generators (goal-image pairs for :mod:`benchmarks.goal_scoring`, SpatialScore-style
questions for :mod:`benchmarks.static`) render homes with :class:`HomeRenderer`: the navigation env's own
world (:class:`~envs.navigation.world.World`) and renderer (:class:`~envs.navigation.render.FrameRenderer`),
so their images are exactly what the env shows at the same pose. A camera may stand wherever the env's
agent can (on the largest connected free area of the floor) and moves only as the agent could: its
horizontal path is swept by the agent disc against walls and furniture, its height stays between the
floor and ceiling limits, its tilt within the env's pitch limits, its roll within :data:`MAX_ROLL_DEG`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from types import TracebackType
from typing import Any

import numpy as np

from envs.navigation.camera import Intrinsics, pose_from_c2w
from envs.navigation.geometry import AGENT_RADIUS
from envs.navigation.planner import Lattice
from envs.navigation.render import Frame, FrameRenderer
from envs.navigation.scene import scene_key
from envs.navigation.world import CAMERA_HEIGHT, PITCH_LIMITS, AgentPose, World, camera_height_limits

MAX_ROLL_DEG = 60.0  # a hand-held or head-mounted camera; the env itself does not limit roll
_LIMIT_EPS = 1e-6


@dataclass(frozen=True)
class ViewRules:
    """What makes a starting view worth asking about: not a blank wall at arm's length."""

    min_median_depth: float = 1.0
    """Median depth of the view (metres)."""
    min_entity_fraction: float = 0.05
    """Fraction of pixels showing furniture or objects (not walls, floor or ceiling)."""
    pitch_range: tuple[float, float] = (-30.0, 10.0)
    """Camera tilt of a random view (degrees, positive looks up)."""


class HomeRenderer:
    """RGB, metric depth and the entity mask of a home, from any agent pose."""

    def __init__(self, width: int = 224, height: int = 224, fov: float = 100.0) -> None:
        self.intrinsics = Intrinsics(int(width), int(height), float(fov))
        self._renderer = FrameRenderer(self.intrinsics.width, self.intrinsics.height)
        self._world: World | None = None
        self.floor_points = np.zeros((0, 2))

    @property
    def world(self) -> World:
        if self._world is None:
            raise RuntimeError("HomeRenderer.load(scene) must come before rendering")
        return self._world

    def load(self, scene: dict[str, Any]) -> World:
        """Compile ``scene`` (unless it is already loaded) and find where a camera may stand."""
        if self._world is not None and self._world.key == scene_key(scene):
            return self._world
        self._world = World(scene)
        self._renderer.load(self._world.model, self._world.geom_entity)
        self.floor_points = free_floor(scene, self._world)
        return self._world

    def render(self, pose: AgentPose, *, entity: bool = True) -> Frame:
        """The view from ``pose``: RGB, depth and (if asked) the entity mask."""
        world = self.world
        world.place_camera(pose, self.intrinsics.fovy_deg)
        return self._renderer.render(world.data, world.camera_id, depth=True, entity=entity)

    def close(self) -> None:
        """Free the GL context (idempotent)."""
        self._renderer.close()
        self._world = None

    def __enter__(self) -> HomeRenderer:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def free_floor(scene: dict[str, Any], world: World) -> np.ndarray:
    """Nodes ``(N, 2)`` of the largest connected free area of the scene's 0.25 m movement lattice."""
    lattice = Lattice.for_scene(scene, world.obstacles)
    remaining = set(np.flatnonzero(lattice.free).tolist())
    best: list[int] = []
    while remaining:
        component = lattice.component(min(remaining))
        remaining -= set(component)
        best = component if len(component) > len(best) else best
    return lattice.points[np.array(best, dtype=int)] if best else np.zeros((0, 2))


# ------------------------------------------------------------------------------------ physical limits


def pose_problem(scene: dict[str, Any], pose: AgentPose) -> str | None:
    """Why a camera cannot be at ``pose`` (height, tilt or roll out of limits), ``None`` when it can."""
    low, high = camera_height_limits(scene)
    if not low - _LIMIT_EPS <= pose.height <= high + _LIMIT_EPS:
        return f"height {pose.height:.2f} m outside {low:.1f}-{high:.1f} m"
    if not PITCH_LIMITS[0] - _LIMIT_EPS <= pose.pitch_deg <= PITCH_LIMITS[1] + _LIMIT_EPS:
        return f"tilt {pose.pitch_deg:.1f} deg outside {PITCH_LIMITS[0]:.0f}..{PITCH_LIMITS[1]:.0f} deg"
    if abs(pose.roll_deg) > MAX_ROLL_DEG + _LIMIT_EPS:
        return f"roll {pose.roll_deg:.1f} deg beyond +-{MAX_ROLL_DEG:.0f} deg"
    return None


def move_problem(world: World, c2w_from: np.ndarray, c2w_to: np.ndarray) -> str | None:
    """Why the camera cannot move straight from ``c2w_from`` to ``c2w_to``, ``None`` when it can.

    The agent disc sweeps the horizontal part of the straight path (walls, furniture and floor objects
    block it, as in the env); the end pose must be within the height, tilt and roll limits.
    """
    blocker = world.obstacles.blocker(c2w_from[:2, 3], c2w_to[:2, 3])
    if blocker is not None:
        return f"blocked by the {blocker}"
    return pose_problem(world.scene, pose_from_c2w(c2w_to))


# -------------------------------------------------------------------------------------- viewpoints


def is_informative(frame: Frame, rules: ViewRules) -> bool:
    """The view sees some depth and some furniture or objects (see :class:`ViewRules`)."""
    assert frame.depth is not None and frame.entity is not None
    return bool(
        np.median(frame.depth) >= rules.min_median_depth
        and np.mean(frame.entity > 0) >= rules.min_entity_fraction
    )


def random_pose(
    renderer: HomeRenderer,
    rng: np.random.Generator,
    rules: ViewRules,
    look_at: np.ndarray | None = None,
    distance: tuple[float, float] = (1.0, 3.5),
) -> AgentPose | None:
    """A standing camera on free floor: random heading, or aimed at ``look_at`` (a world point) from a
    horizontal distance within ``distance`` (with a little jitter, so the point is not always centred)."""
    points = renderer.floor_points
    if look_at is not None:
        gap = np.linalg.norm(points - look_at[:2], axis=1)
        points = points[(gap >= distance[0]) & (gap <= distance[1])]
    if len(points) == 0:
        return None
    xy = points[int(rng.integers(len(points)))] + rng.uniform(-0.1, 0.1, size=2)
    if renderer.world.obstacles.clearance(xy[None])[0] < AGENT_RADIUS:
        return None
    if look_at is None:
        return AgentPose(
            float(xy[0]), float(xy[1]), float(rng.uniform(0, 360)), float(rng.uniform(*rules.pitch_range))
        )
    delta = look_at - np.array([xy[0], xy[1], CAMERA_HEIGHT])
    heading = math.degrees(math.atan2(delta[1], delta[0])) + rng.uniform(-15, 15)
    pitch = math.degrees(math.atan2(delta[2], math.hypot(delta[0], delta[1]))) + rng.uniform(-8, 8)
    pitch = float(np.clip(pitch, *PITCH_LIMITS))
    return AgentPose(float(xy[0]), float(xy[1]), float(heading % 360.0), pitch)


def sample_view(
    renderer: HomeRenderer,
    rng: np.random.Generator,
    rules: ViewRules = ViewRules(),
    *,
    look_at: np.ndarray | None = None,
    tries: int = 30,
) -> tuple[AgentPose, Frame] | None:
    """An informative view of the loaded home (up to ``tries`` random poses), with its frame."""
    for _ in range(tries):
        pose = random_pose(renderer, rng, rules, look_at)
        if pose is None:
            continue
        frame = renderer.render(pose)
        if is_informative(frame, rules):
            return pose, frame
    return None
