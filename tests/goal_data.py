"""Test data for goal-image scoring: a pinhole camera in front of a textured wall, rendered with NumPy.

``WallPairSource`` is a real :class:`PairSource`: it draws a random plan, moves the camera along it and
renders the start and goal views, so the goal image is exactly what the camera sees after the motion.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from action_mapping import Plan, PlanStep, Primitive, StepSizes, plan_to_trajectory
from benchmarks.goal_scoring import GeneratedPair

WALL_Z = 2.0  # the wall is the plane z = 2 m in front of the starting camera
_SMALL_MOTIONS = (
    Primitive.DOLLY_IN,
    Primitive.TRUCK_LEFT,
    Primitive.TRUCK_RIGHT,
    Primitive.PEDESTAL_UP,
    Primitive.PAN_LEFT,
    Primitive.TILT_DOWN,
)


def render_wall(c2w: np.ndarray, size: int = 32, focal: float = 40.0) -> np.ndarray:
    """RGB ``uint8`` view of a checkerboard wall with a colour gradient (sky where rays miss it)."""
    v, u = np.mgrid[0:size, 0:size].astype(float) + 0.5
    dirs = (
        np.stack([(u - size / 2) / focal, (v - size / 2) / focal, np.ones_like(u)], axis=-1) @ c2w[:3, :3].T
    )
    origin = c2w[:3, 3]
    with np.errstate(divide="ignore", invalid="ignore"):
        t = (WALL_Z - origin[2]) / dirs[..., 2]
    hit = origin + t[..., None] * dirs
    checker = (np.floor(hit[..., 0] * 4) + np.floor(hit[..., 1] * 4)) % 2
    rgb = np.stack(
        [0.5 + 0.4 * np.tanh(hit[..., 0]), 0.3 + 0.6 * checker, 0.5 + 0.4 * np.tanh(hit[..., 1])], -1
    )
    rgb = np.where((t > 0)[..., None], rgb, [0.6, 0.8, 1.0])
    return (np.clip(rgb, 0, 1) * 255).astype(np.uint8)


class WallPairSource:
    """Random 1-3 step camera motions in front of the wall (navigation or manipulation pairs)."""

    def __init__(self, kind: str = "nav", size: int = 32) -> None:
        self.kind, self.size = kind, size
        self.step_sizes = StepSizes(0.05, 0.1)
        self.max_step_num = 10

    def sample(self, rng: np.random.Generator) -> GeneratedPair:
        steps = []
        for _ in range(int(rng.integers(1, 4))):
            prims = list(rng.choice(len(_SMALL_MOTIONS), size=int(rng.integers(1, 3)), replace=False))
            gripper = int(rng.integers(0, 2)) if self.kind == "manip" else None
            steps.append(
                PlanStep(
                    [_SMALL_MOTIONS[i] for i in prims], [int(rng.integers(1, 4)) for _ in prims], gripper
                )
            )
        plan = Plan(steps=steps)
        start = np.eye(4)
        start[:2, 3] = rng.uniform(-0.3, 0.3, size=2)  # a different view of the wall for every sample
        poses = plan_to_trajectory(plan, start, self.step_sizes.translation, self.step_sizes.rotation)
        return GeneratedPair(
            render_wall(poses[0], self.size),
            render_wall(poses[-1], self.size),
            trajectory=poses,
            plan=plan,
            instruction="Move to the goal view.",
            metadata={"wall_z": WALL_Z},
        )

    def describe(self) -> dict[str, Any]:
        return {"class": "WallPairSource", "kind": self.kind, "size": self.size}
