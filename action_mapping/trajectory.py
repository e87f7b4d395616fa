"""Conversion between plans of primitives and camera-to-world (C2W) trajectories.

A plan step is one rigid motion expressed in the camera frame at the start of the step: the translation
is the sum of its translation primitives (count x step size along the primitive's axis and sign), the
rotation composes its rotation primitives in the Euler order of :mod:`action_mapping.se3`. So
``T_{k+1} = T_k @ [R_k | t_k]``, and :func:`trajectory_to_plan` inverts this exactly (up to rounding to
whole steps) for any combination of primitives within the caps.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from action_mapping.plan import Plan, PlanStep, StepSizes
from action_mapping.primitives import Category, Primitive
from action_mapping.se3 import axes_from_rotation, body_motion, pose, rotation_from_axes

# The navigation prompt of the paper (Listing 2).
NAVIGATION_STEP_SIZES = StepSizes(translation=0.019375, rotation=0.4509)
# The defaults of the public lmms-eval scorer: 0.02 m and 0.5 degree per unit.
LMMS_EVAL_STEP_SIZES = StepSizes(translation=0.02, rotation=math.radians(0.5))

_BY_AXIS: dict[tuple[Category, int, int], Primitive] = {
    (p.category, p.motion_axis, p.sign): p for p in Primitive.camera_motions()
}


@dataclass(frozen=True)
class StepMotion:
    """The rigid motion of one plan step, in the frame at the start of the step, plus the gripper state."""

    translation: np.ndarray  # (3,) metres along camera X (right), Y (down), Z (forward)
    angles: np.ndarray  # (3,) radians about X (tilt), Y (pan), Z (roll), composed as in se3
    gripper: int | None = None

    @property
    def rotation(self) -> np.ndarray:
        return rotation_from_axes(self.angles)

    def as_matrix(self) -> np.ndarray:
        return pose(self.rotation, self.translation)

    def vector(self) -> np.ndarray:
        """The manipulation prompt's 7-D vector ``[dx, dy, dz, d_roll, d_pitch, d_yaw, gripper]``.

        ``d_roll``, ``d_pitch``, ``d_yaw`` are the rotations about +Z, +X, +Y; an unset gripper is NaN.
        """
        g = np.nan if self.gripper is None else float(self.gripper)
        return np.array([*self.translation, self.angles[2], self.angles[0], self.angles[1], g])


# Slot of each motion primitive in a step's signed-count row [tx, ty, tz, rx, ry, rz], with its sign.
_COUNT_SLOT: dict[Primitive, tuple[int, int]] = {
    p: ((0 if p.category is Category.TRANSLATION else 3) + p.motion_axis, p.sign)
    for p in Primitive.camera_motions()
}
_GRIPPER_ACTIONS = {Primitive.GRIPPER_OPEN: 0, Primitive.GRIPPER_CLOSE: 1}


def _count_row(step: PlanStep) -> tuple[list[float], int | None]:
    """Signed counts ``[tx, ty, tz, rx, ry, rz]`` of one step and its gripper state (G/H actions set it too)."""
    row = [0.0] * 6
    gripper = step.gripper
    for prim, count in zip(step.actions, step.step_nums):
        slot = _COUNT_SLOT.get(prim)
        if slot is not None:
            row[slot[0]] += slot[1] * count
        elif prim in _GRIPPER_ACTIONS:
            gripper = _GRIPPER_ACTIONS[prim]
    return row, gripper


def step_count_rows(steps: Sequence[PlanStep]) -> tuple[list[list[float]], list[float]]:
    """Signed primitive counts of each step along ``[tx, ty, tz, rx, ry, rz]`` and its gripper state (NaN
    where the step does not set it), as plain lists: scorers stack thousands of plans into one array.

    ``step_motion(step, sizes)`` is row i scaled by the step sizes.
    """
    rows, grippers = [], []
    for step in steps:
        row, gripper = _count_row(step)
        rows.append(row)
        grippers.append(math.nan if gripper is None else float(gripper))
    return rows, grippers


def step_counts(steps: Sequence[PlanStep]) -> tuple[np.ndarray, np.ndarray]:
    """:func:`step_count_rows` as arrays ``(n, 6)`` and ``(n,)``."""
    rows, grippers = step_count_rows(steps)
    return np.array(rows, dtype=float).reshape(-1, 6), np.array(grippers, dtype=float)


def step_motion(step: PlanStep, sizes: StepSizes) -> StepMotion:
    """Sum a step's primitives into one rigid motion (gestures and STOP do not move the frame)."""
    row, gripper = _count_row(step)
    translation = np.array(row[:3]) * sizes.translation
    angles = np.array(row[3:]) * sizes.rotation
    return StepMotion(translation, angles, gripper)


def plan_to_trajectory(
    plan: Plan, start_c2w: np.ndarray, translation_step: float, rotation_step: float
) -> np.ndarray:
    """C2W poses ``(N+1, 4, 4)`` visited by executing the plan's N steps from ``start_c2w``."""
    sizes = StepSizes(translation_step, rotation_step)
    poses = [np.asarray(start_c2w, dtype=float)]
    for step in plan.steps:
        poses.append(poses[-1] @ step_motion(step, sizes).as_matrix())
    return np.stack(poses)


def _counts_to_step(
    values: np.ndarray, category: Category, size: float, max_count: int | None, where: str, errors: list[str]
) -> tuple[list[Primitive], list[int]]:
    actions, nums = [], []
    for axis, v in enumerate(values):
        count = int(round(abs(v) / size))
        if count == 0:
            continue
        if max_count is not None and count > max_count:
            errors.append(
                f"step_num_capped: {where}: {category.value} axis {'XYZ'[axis]} {count} -> {max_count}"
            )
            count = max_count
        actions.append(_BY_AXIS[(category, axis, 1 if v > 0 else -1)])
        nums.append(count)
    return actions, nums


def step_from_counts(counts: np.ndarray, gripper: int | None = None) -> PlanStep | None:
    """The plan step of signed counts ``[tx, ty, tz, rx, ry, rz]`` (the inverse of :func:`step_count_rows`),
    each rounded to a whole count, with ``gripper``; ``None`` when every count rounds to zero."""
    values = np.asarray(counts, dtype=float)
    t_act, t_num = _counts_to_step(values[:3], Category.TRANSLATION, 1.0, None, "", [])
    r_act, r_num = _counts_to_step(values[3:], Category.ROTATION, 1.0, None, "", [])
    if not t_act and not r_act:
        return None
    return PlanStep(t_act + r_act, t_num + r_num, gripper=gripper)


def trajectory_to_plan(
    c2w_poses: np.ndarray, translation_step: float, rotation_step: float, max_count: int | None = 10
) -> Plan:
    """One plan step per consecutive pose pair, counts rounded to whole steps and capped at ``max_count``.

    A pair with no motion of at least half a step becomes a STOP step, so step i of the plan always
    describes poses i -> i+1. Capped counts are reported in ``plan.errors``.
    """
    poses = np.asarray(c2w_poses, dtype=float)
    if poses.ndim != 3 or poses.shape[1:] != (4, 4) or len(poses) < 2:
        raise ValueError(f"c2w_poses must have shape (N>=2, 4, 4), got {poses.shape}")
    plan = Plan(format="trajectory")
    for i in range(len(poses) - 1):
        D = body_motion(poses[i], poses[i + 1])
        where = f"step_{i + 1}"
        t_act, t_num = _counts_to_step(
            D[:3, 3], Category.TRANSLATION, translation_step, max_count, where, plan.errors
        )
        r_act, r_num = _counts_to_step(
            axes_from_rotation(D[:3, :3]), Category.ROTATION, rotation_step, max_count, where, plan.errors
        )
        actions, nums = t_act + r_act, t_num + r_num
        plan.steps.append(PlanStep(actions or [Primitive.STOP], nums or [1]))
    return plan


def trajectory_to_plan_by_velocity(
    c2w_poses: np.ndarray,
    fps: float,
    *,
    translation_threshold: float = 0.01,
    rotation_threshold: float = math.radians(0.5),
    frames_per_step: int | None = None,
) -> Plan:
    """Discretise a densely sampled trajectory with the paper's speed thresholds (Eq. 2, Table 1).

    Each plan step covers ``frames_per_step`` frame intervals (default: one second, ``round(fps)``). For each
    axis, a frame interval counts toward a primitive when the camera-frame velocity along (or about) that
    axis exceeds the threshold (0.01 m/s, 0.5 deg/s) in the primitive's direction; the step count is the
    net number of such intervals, so counts range from 0 to the frame rate as in the paper. A step with no
    motion above the thresholds is a STOP step.
    """
    poses = np.asarray(c2w_poses, dtype=float)
    if poses.ndim != 3 or poses.shape[1:] != (4, 4) or len(poses) < 2:
        raise ValueError(f"c2w_poses must have shape (N>=2, 4, 4), got {poses.shape}")
    if fps <= 0:
        raise ValueError(f"fps must be positive, got {fps}")
    per_step = frames_per_step or max(1, int(round(fps)))
    motions = [body_motion(poses[i], poses[i + 1]) for i in range(len(poses) - 1)]
    lin = np.array([D[:3, 3] for D in motions]) * fps
    ang = np.array([axes_from_rotation(D[:3, :3]) for D in motions]) * fps
    active_lin = np.sign(lin) * (np.abs(lin) > translation_threshold)
    active_ang = np.sign(ang) * (np.abs(ang) > rotation_threshold)
    plan = Plan(format="trajectory")
    for start in range(0, len(motions), per_step):
        net_lin = active_lin[start : start + per_step].sum(axis=0)
        net_ang = active_ang[start : start + per_step].sum(axis=0)
        t_act, t_num = _counts_to_step(net_lin, Category.TRANSLATION, 1.0, None, "", plan.errors)
        r_act, r_num = _counts_to_step(net_ang, Category.ROTATION, 1.0, None, "", plan.errors)
        actions, nums = t_act + r_act, t_num + r_num
        plan.steps.append(PlanStep(actions or [Primitive.STOP], nums or [1]))
    return plan
