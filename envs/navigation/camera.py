"""The agent camera as a pinhole: OpenCV camera-to-world poses, projection, and how much two views overlap.

Frames: world z-up (the scene's frame); camera OpenCV (+X right, +Y down, +Z forward), the frame of
:mod:`action_mapping`. A camera-to-world (C2W) matrix has the camera's right, down and forward axes as
its first three columns and the camera position as its last. MuJoCo renders with square pixels and a
vertical field of view, so ``fx = fy = (H / 2) / tan(fovy / 2)`` and the principal point is the image
centre; pixel ``(u, v)`` covers ``[u, u + 1) x [v, v + 1)`` with row 0 at the top.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from envs.navigation.world import AgentPose

# Depth agreement for "the same surface" in two views: 3 % of the depth or 2 cm, whichever is larger
# (covers depth-buffer quantisation and the nearest-pixel lookup at surface edges).
DEPTH_REL_TOL = 0.03
DEPTH_ABS_TOL = 0.02


@dataclass(frozen=True)
class Intrinsics:
    """Image size in pixels and vertical field of view in degrees of a MuJoCo camera."""

    width: int
    height: int
    fovy_deg: float

    @property
    def focal(self) -> float:
        """Focal length in pixels (the same along both axes: square pixels)."""
        return (self.height / 2) / math.tan(math.radians(self.fovy_deg) / 2)

    def matrix(self) -> np.ndarray:
        """The 3x3 calibration matrix K."""
        f = self.focal
        return np.array([[f, 0.0, self.width / 2], [0.0, f, self.height / 2], [0.0, 0.0, 1.0]])


def c2w_from_pose(pose: AgentPose) -> np.ndarray:
    """The OpenCV camera-to-world matrix of an agent pose."""
    forward, right, up = pose.axes()
    c2w = np.eye(4)
    c2w[:3, :3] = np.stack([right, -up, forward], axis=1)
    c2w[:3, 3] = (pose.x, pose.y, pose.height)
    return c2w


def pose_from_c2w(c2w: np.ndarray) -> AgentPose:
    """The agent pose whose camera is ``c2w`` (inverse of :func:`c2w_from_pose` for pitch within ±90°).

    Heading and pitch come from the optical axis; roll is the angle of the camera's right axis from the
    level right axis, measured as :meth:`AgentPose.axes` applies it.
    """
    R = np.asarray(c2w, dtype=float)[:3, :3]
    right, forward = R[:, 0], R[:, 2]
    pitch = math.asin(float(np.clip(forward[2], -1.0, 1.0)))
    heading = math.atan2(float(forward[1]), float(forward[0]))
    level_right = np.array([math.sin(heading), -math.cos(heading), 0.0])
    level_up = np.cross(level_right, forward)
    roll = math.atan2(-float(right @ level_up), float(right @ level_right))
    x, y, z = (float(v) for v in np.asarray(c2w, dtype=float)[:3, 3])
    return AgentPose(x, y, math.degrees(heading) % 360.0, math.degrees(pitch), math.degrees(roll), z)


def pixel_rays(intrinsics: Intrinsics) -> np.ndarray:
    """Camera-frame directions ``(H, W, 3)`` through the pixel centres, scaled to unit depth (z = 1)."""
    v, u = np.mgrid[0 : intrinsics.height, 0 : intrinsics.width].astype(float) + 0.5
    f = intrinsics.focal
    return np.stack(
        [(u - intrinsics.width / 2) / f, (v - intrinsics.height / 2) / f, np.ones_like(u)], axis=-1
    )


def backproject(depth: np.ndarray, intrinsics: Intrinsics, c2w: np.ndarray) -> np.ndarray:
    """World points ``(H, W, 3)`` of a depth image (metres along the optical axis)."""
    camera_points = pixel_rays(intrinsics) * np.asarray(depth, dtype=float)[..., None]
    return camera_points @ c2w[:3, :3].T + c2w[:3, 3]


def project(
    points: np.ndarray, intrinsics: Intrinsics, c2w: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Pixel coordinates ``u``, ``v`` (continuous, pixel centres at +0.5) and depth ``z`` of world points."""
    camera_points = (np.asarray(points, dtype=float) - c2w[:3, 3]) @ c2w[:3, :3]
    z = camera_points[..., 2]
    with np.errstate(divide="ignore", invalid="ignore"):
        u = intrinsics.focal * camera_points[..., 0] / z + intrinsics.width / 2
        v = intrinsics.focal * camera_points[..., 1] / z + intrinsics.height / 2
    return u, v, z


def visible_mask(
    goal_depth: np.ndarray,
    goal_c2w: np.ndarray,
    start_depth: np.ndarray,
    start_c2w: np.ndarray,
    intrinsics: Intrinsics,
) -> np.ndarray:
    """Goal pixels whose surface point is also seen from the start camera: it projects inside the start
    image, in front of the camera, and the start depth there agrees with its distance (not occluded)."""
    u, v, z = project(backproject(goal_depth, intrinsics, goal_c2w), intrinsics, start_c2w)
    inside = (z > 1e-6) & (u >= 0) & (u < intrinsics.width) & (v >= 0) & (v < intrinsics.height)
    col = np.clip(np.floor(np.where(inside, u, 0)).astype(int), 0, intrinsics.width - 1)
    row = np.clip(np.floor(np.where(inside, v, 0)).astype(int), 0, intrinsics.height - 1)
    seen = np.asarray(start_depth, dtype=float)[row, col]
    agrees = np.abs(seen - z) <= np.maximum(DEPTH_ABS_TOL, DEPTH_REL_TOL * np.abs(z))
    return inside & agrees


def view_overlap(
    goal_depth: np.ndarray,
    goal_c2w: np.ndarray,
    start_depth: np.ndarray,
    start_c2w: np.ndarray,
    intrinsics: Intrinsics,
) -> float:
    """Fraction of the goal image that the start camera also sees (see :func:`visible_mask`)."""
    return float(visible_mask(goal_depth, goal_c2w, start_depth, start_c2w, intrinsics).mean())
