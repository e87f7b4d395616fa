"""Ground-truth plans from camera-to-world trajectories (e.g. a reconstruction of your own video).

Reads a trajectory file, brings it to the OpenCV camera frame of :mod:`action_mapping` (+X right, +Y down,
+Z forward), picks the poses that bound each plan step and discretises the motion with
:func:`action_mapping.trajectory_to_plan` (one step per pose pair, counts rounded to whole step sizes) or
:func:`action_mapping.trajectory_to_plan_by_velocity` (the paper's speed thresholds per frame).

Trajectory files: ``.npy`` arrays ``(N, 4, 4)`` / ``(N, 3, 4)``; ``.json`` lists of 4x4 matrices, ``{"c2w":
[...]}``, or NeRF-style ``{"frames": [{"transform_matrix": ...}]}``; text files with one pose per row:
16 numbers (4x4 row-major), 12 (KITTI 3x4), 8 (TUM: time x y z qx qy qz qw) or 7 (x y z qx qy qz qw).
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy.spatial.transform import Rotation

from action_mapping import Plan, StepSizes, trajectory_to_plan, trajectory_to_plan_by_velocity
from action_mapping.se3 import axes_from_rotation, body_motion
from benchmarks.goal_scoring.dataset import DatasetError, trajectory_problem

# OpenGL / Blender / NeRF cameras look down -Z with +Y up; flipping Y and Z gives the OpenCV frame.
_OPENGL_TO_OPENCV = np.diag([1.0, -1.0, -1.0, 1.0])
CONVENTIONS = ("opencv", "opengl")


def read_trajectory(path: str | Path, convention: str = "opencv") -> np.ndarray:
    """C2W poses ``(N, 4, 4)`` in the OpenCV camera frame from a trajectory file (formats above)."""
    path = Path(path)
    if not path.is_file():
        raise DatasetError(f"trajectory file {path} not found")
    if convention not in CONVENTIONS:
        raise DatasetError(f"camera convention must be one of {CONVENTIONS}, got {convention!r}")
    if path.suffix == ".npy":
        poses = _from_rows(np.load(path, allow_pickle=False), path)
    elif path.suffix == ".json":
        poses = _from_json(json.loads(path.read_text(encoding="utf-8")), path)
    else:
        poses = _from_rows(np.loadtxt(path, comments="#", ndmin=2, delimiter=_delimiter(path)), path)
    if convention == "opengl":
        poses = poses @ _OPENGL_TO_OPENCV
    problem = trajectory_problem(poses)
    if problem:
        raise DatasetError(f"trajectory {path}: {problem}")
    return poses


def _delimiter(path: Path) -> str | None:
    return "," if path.suffix == ".csv" else None


def _from_json(value: object, path: Path) -> np.ndarray:
    if isinstance(value, dict) and "frames" in value:
        value = [frame["transform_matrix"] for frame in value["frames"]]
    elif isinstance(value, dict) and "c2w" in value:
        value = value["c2w"]
    return _from_rows(np.asarray(value, dtype=float), path)


def _from_rows(array: np.ndarray, path: Path) -> np.ndarray:
    a = np.asarray(array, dtype=float)
    if a.ndim == 3 and a.shape[1:] in ((4, 4), (3, 4)):
        a = a.reshape(len(a), -1)
    if a.ndim != 2 or a.shape[1] not in (16, 12, 8, 7):
        raise DatasetError(
            f"trajectory {path}: cannot read shape {a.shape}. Fix: use (N, 4, 4) matrices or rows of "
            "16 / 12 / 8 (TUM) / 7 numbers per pose"
        )
    poses = np.tile(np.eye(4), (len(a), 1, 1))
    if a.shape[1] in (16, 12):
        poses[:, : a.shape[1] // 4] = a.reshape(len(a), -1, 4)
    else:
        xyz, quat = a[:, -7:-4], a[:, -4:]
        poses[:, :3, :3] = Rotation.from_quat(quat).as_matrix()
        poses[:, :3, 3] = xyz
    return poses


def keyframe_indices(n_poses: int, num_steps: int | None) -> np.ndarray:
    """Indices of ``num_steps + 1`` evenly spaced poses (all poses when ``num_steps`` is None)."""
    if num_steps is None:
        return np.arange(n_poses)
    if not 1 <= num_steps <= n_poses - 1:
        raise DatasetError(
            f"num_steps must be between 1 and {n_poses - 1} for {n_poses} poses, got {num_steps}"
        )
    return np.round(np.linspace(0, n_poses - 1, num_steps + 1)).astype(int)


def fit_step_sizes(poses: np.ndarray, base: StepSizes, max_count: int) -> StepSizes:
    """``base``, enlarged just enough that no step of ``poses`` needs more than ``max_count`` counts.

    The paper computes step sizes from the actual movement for the same reason (Appendix C.3).
    """
    motions = [body_motion(a, b) for a, b in itertools.pairwise(poses)]
    peak_t = max(float(np.abs(D[:3, 3]).max()) for D in motions)
    peak_r = max(float(np.abs(axes_from_rotation(D[:3, :3])).max()) for D in motions)
    return StepSizes(max(base.translation, peak_t / max_count), max(base.rotation, peak_r / max_count))


@dataclass(frozen=True)
class Conversion:
    """A converted trajectory: the plan, the step sizes it is expressed in, and one pose per step boundary."""

    plan: Plan
    step_sizes: StepSizes
    poses: np.ndarray


def convert_by_pose(
    poses: np.ndarray,
    sizes: StepSizes,
    *,
    num_steps: int | None = 6,
    max_step_num: int = 10,
    fit: bool = False,
) -> Conversion:
    """One plan step between consecutive keyframes, counts rounded to whole steps (error when over the cap)."""
    keyframes = poses[keyframe_indices(len(poses), num_steps)]
    if fit:
        sizes = fit_step_sizes(keyframes, sizes, max_step_num)
    plan = trajectory_to_plan(keyframes, sizes.translation, sizes.rotation, max_count=max_step_num)
    if plan.errors:
        raise DatasetError(
            f"the motion needs more than {max_step_num} counts per primitive ({'; '.join(plan.errors)}). "
            "Fix: --fit-step-sizes, larger --step-translation/--step-rotation, or more --num-steps"
        )
    return Conversion(plan, sizes, keyframes)


def convert_by_velocity(
    poses: np.ndarray,
    sizes: StepSizes,
    *,
    fps: float,
    frames_per_step: int | None = None,
    max_step_num: int = 10,
) -> Conversion:
    """The paper's rule: a frame interval counts toward a primitive when its speed passes the threshold.

    Counts are frame intervals, so ``sizes`` says what one count stands for in the prompt.
    """
    plan = trajectory_to_plan_by_velocity(poses, fps, frames_per_step=frames_per_step)
    peak = max((n for step in plan.steps for n in step.step_nums), default=0)
    if peak > max_step_num:
        raise DatasetError(
            f"a step counts {peak} frame intervals > max_step_num {max_step_num}. "
            "Fix: fewer --frames-per-step, or a larger --max-step-num"
        )
    per_step = frames_per_step or max(1, round(fps))
    bounds = [*range(0, len(poses) - 1, per_step), len(poses) - 1]
    return Conversion(plan, sizes, poses[bounds])
