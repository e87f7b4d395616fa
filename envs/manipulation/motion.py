"""Executing one EB action: check the target pose is reachable, move there under OSC, then set the gripper.

EB moves the arm with RLBench's motion planner and calls an action invalid when no path is found. Here a
damped-least-squares inverse kinematics on a scratch copy of the robot decides reachability (within joint
limits); a reachable target is then tracked by robosuite's OSC along straight-line waypoints (RLBench's
planner also tries a linear path first) with a budget of control steps; finally the gripper opens or
closes while the arm holds the pose, as RLBench actuates the gripper after the arm motion.
"""

from __future__ import annotations

from dataclasses import dataclass

import mujoco
import numpy as np
from scipy.spatial.transform import Rotation, Slerp

from envs.manipulation.scene import GRIPPER_CLOSE, GRIPPER_OPEN, TabletopScene


@dataclass(frozen=True)
class MotionLimits:
    """Tolerances and budgets of one action (control steps are robosuite's, 20 per simulated second)."""

    max_control_steps: int = 120  # the step budget of one action, arm motion and gripper together
    waypoint_step: float = 0.015  # metres per control step along the straight line (0.3 m/s)
    waypoint_turn: float = 0.08  # radians per control step (1.6 rad/s)
    reached_position: float = 0.006  # metres
    reached_rotation: float = 0.05  # radians
    settled_joint_speed: float = 0.2  # rad/s, norm over the arm's joints
    stalled_steps: int = 5  # the arm stops trying after this many control steps without moving
    gripper_steps: int = 12  # control steps to let the fingers open or close
    ik_position_tol: float = 0.005
    ik_rotation_tol: float = 0.1
    ik_iterations: int = 150
    min_height_above_table: float = 0.0  # grip-site targets below the table top are invalid


@dataclass(frozen=True)
class Reachability:
    """Whether inverse kinematics found joint angles for a pose, and how close it got."""

    reachable: bool
    position_error: float
    rotation_error: float


@dataclass(frozen=True)
class MotionResult:
    """What executing an action did: control steps used and the final distance to the target."""

    control_steps: int
    position_error: float
    rotation_error: float
    reached: bool


class ArmMotion:
    """Reachability checks and pose tracking for a :class:`TabletopScene`."""

    def __init__(self, scene: TabletopScene, limits: MotionLimits | None = None) -> None:
        self.scene = scene
        self.limits = limits or MotionLimits()
        self._scratch = mujoco.MjData(scene.mj_model)
        self._qpos_idx = scene.arm_qpos_indices()
        self._dof_idx = np.asarray(scene.robots[0]._ref_joint_vel_indexes)
        joint_ids = [scene.mj_model.jnt_dofadr.tolist().index(d) for d in self._dof_idx]
        self._limits = scene.mj_model.jnt_range[joint_ids]
        self._home = None

    def remember_home(self) -> None:
        """Keep the arm's current joint angles as a second starting point for inverse kinematics."""
        self._home = self.scene.mj_data.qpos[self._qpos_idx].copy()

    # -------------------------------------------------------------------------------- reachability

    def reachable(self, position: np.ndarray, rotation: np.ndarray) -> Reachability:
        """Solve IK from the current joints (then from home); reachable when within the tolerances."""
        starts = [self.scene.mj_data.qpos[self._qpos_idx].copy()]
        if self._home is not None:
            starts.append(self._home)
        best = Reachability(False, np.inf, np.inf)
        for q0 in starts:
            pos_err, rot_err = self._solve_ik(q0, position, rotation)
            ok = pos_err <= self.limits.ik_position_tol and rot_err <= self.limits.ik_rotation_tol
            if ok:
                return Reachability(True, pos_err, rot_err)
            if pos_err + 0.1 * rot_err < best.position_error + 0.1 * best.rotation_error:
                best = Reachability(False, pos_err, rot_err)
        return best

    def _solve_ik(self, q0: np.ndarray, position: np.ndarray, rotation: np.ndarray) -> tuple[float, float]:
        m, d = self.scene.mj_model, self._scratch
        d.qpos[:] = self.scene.mj_data.qpos
        d.qpos[self._qpos_idx] = q0
        jac_pos, jac_rot = np.zeros((3, m.nv)), np.zeros((3, m.nv))
        damping = 1e-3
        for _ in range(self.limits.ik_iterations):
            error = self._pose_error(d, position, rotation)
            if np.linalg.norm(error[:3]) < 1e-4 and np.linalg.norm(error[3:]) < 1e-3:
                break
            mujoco.mj_jacSite(m, d, jac_pos, jac_rot, self.scene.grip_site_id)
            J = np.vstack([jac_pos, jac_rot])[:, self._dof_idx]
            step = J.T @ np.linalg.solve(J @ J.T + damping * np.eye(6), error)
            q = d.qpos[self._qpos_idx] + np.clip(step, -0.2, 0.2)
            d.qpos[self._qpos_idx] = np.clip(q, self._limits[:, 0], self._limits[:, 1])
        error = self._pose_error(d, position, rotation)
        return float(np.linalg.norm(error[:3])), float(np.linalg.norm(error[3:]))

    def _pose_error(self, d: mujoco.MjData, position: np.ndarray, rotation: np.ndarray) -> np.ndarray:
        mujoco.mj_kinematics(self.scene.mj_model, d)
        mujoco.mj_comPos(self.scene.mj_model, d)
        site = self.scene.grip_site_id
        current = d.site_xmat[site].reshape(3, 3)
        rot_err = Rotation.from_matrix(rotation @ current.T).as_rotvec()
        return np.concatenate([position - d.site_xpos[site], rot_err])

    # ------------------------------------------------------------------------------------ execution

    def execute(self, position: np.ndarray, rotation: np.ndarray, close_gripper: bool) -> MotionResult:
        """Track the pose along straight-line waypoints, settle, then actuate the gripper if it changes."""
        gripper = GRIPPER_CLOSE if close_gripper else GRIPPER_OPEN
        budget = self.limits.max_control_steps
        change_gripper = gripper != self.scene.gripper_command
        arm_budget = budget - (self.limits.gripper_steps if change_gripper else 0)
        steps = self._track(position, rotation, arm_budget)
        if change_gripper:
            for _ in range(self.limits.gripper_steps):
                self.scene.control_step(position, rotation, gripper)
            steps += self.limits.gripper_steps
        pos_err, rot_err = self._distance(position, rotation)
        reached = pos_err <= 2 * self.limits.reached_position and rot_err <= 2 * self.limits.reached_rotation
        return MotionResult(steps, pos_err, rot_err, reached)

    def _track(self, position: np.ndarray, rotation: np.ndarray, budget: int) -> int:
        gripper = self.scene.gripper_command
        steps = 0
        for p, R in self.waypoints(position, rotation)[:budget]:
            self.scene.control_step(p, R, gripper)
            steps += 1
        still = 0  # consecutive control steps without motion: blocked (e.g. pressing on the table)
        while steps < budget and not self._settled(position, rotation) and still < self.limits.stalled_steps:
            self.scene.control_step(position, rotation, gripper)
            steps += 1
            still = still + 1 if self._joint_speed() <= self.limits.settled_joint_speed / 4 else 0
        return steps

    def waypoints(self, position: np.ndarray, rotation: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
        """Evenly spaced poses from the current grip pose to the target (the target included)."""
        p0, R0 = self.scene.grip_pose()
        turn = Rotation.from_matrix(rotation @ R0.T).magnitude()
        n = int(
            np.ceil(
                max(
                    np.linalg.norm(position - p0) / self.limits.waypoint_step,
                    turn / self.limits.waypoint_turn,
                    1.0,
                )
            )
        )
        slerp = Slerp([0.0, 1.0], Rotation.from_matrix(np.stack([R0, rotation])))
        ts = np.arange(1, n + 1) / n
        return [(p0 + t * (position - p0), slerp([t]).as_matrix()[0]) for t in ts]

    def _distance(self, position: np.ndarray, rotation: np.ndarray) -> tuple[float, float]:
        p, R = self.scene.grip_pose()
        return float(np.linalg.norm(position - p)), float(Rotation.from_matrix(rotation @ R.T).magnitude())

    def _settled(self, position: np.ndarray, rotation: np.ndarray) -> bool:
        pos_err, rot_err = self._distance(position, rotation)
        return (
            pos_err <= self.limits.reached_position
            and rot_err <= self.limits.reached_rotation
            and self._joint_speed() <= self.limits.settled_joint_speed
        )

    def _joint_speed(self) -> float:
        return float(np.linalg.norm(self.scene.mj_data.qvel[self._dof_idx]))
