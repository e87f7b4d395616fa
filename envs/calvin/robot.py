"""The Franka Panda as CALVIN's evaluation robot drives it: IK on the TCP, position-controlled joints.

Control follows calvin.md: PyBullet IK with null space (rest pose = the initial joints), clipped to the
joint limits; joints under position control with force 200 and maximum velocity 2; fingers closed with
force 200 and opened with force 2, kept symmetric by a gear constraint. A relative action adds
``a[:3] * 0.02`` m and ``a[3:6] * 0.05`` rad to an accumulated target TCP pose (Euler angles are added
as numbers, exactly as CALVIN does, not composed as rotations).
"""

from __future__ import annotations

import numpy as np

from envs.calvin import constants as C
from envs.calvin.bullet import BulletClient, pb


def _names(client: BulletClient, uid: int) -> tuple[dict[str, int], dict[str, int]]:
    """Joint-name -> index and link-name -> index of a body."""
    joints, links = {}, {}
    for i in range(client.getNumJoints(uid)):
        info = client.getJointInfo(uid, i)
        joints[info[1].decode()] = i
        links[info[12].decode()] = i
    return joints, links


class PandaRobot:
    """One loaded Panda; every method talks to ``client`` (a ``BulletClient``)."""

    def __init__(self, client: BulletClient, urdf: str) -> None:
        self.p = client
        self.uid = client.loadURDF(urdf, C.ROBOT_BASE_POSITION, (0, 0, 0, 1), useFixedBase=True)
        joints, self.links = _names(client, self.uid)
        self.arm_joints = [joints[f"panda_joint{i}"] for i in range(1, 8)]
        self.finger_joints = [joints["panda_finger_joint1"], joints["panda_finger_joint2"]]
        self.tcp_link = self.links["tcp"]
        self.camera_link = self.links["gripper_cam"]
        self._dof_joints = [
            i
            for i in range(client.getNumJoints(self.uid))
            if client.getJointInfo(self.uid, i)[2] != pb.JOINT_FIXED
        ]
        self._ik_args = self._null_space()
        self._add_finger_gear()
        self._add_base_cylinder()
        self.gripper_action = 1
        self.target_pos = np.zeros(3)
        self.target_orn = np.zeros(3)

    # ---------------------------------------------------------------------------------------- set-up

    def _null_space(self) -> dict[str, list[float]]:
        """IK limits, ranges and rest pose over every movable joint (arm first, then fingers)."""
        lower, upper, rest = [], [], []
        for j in self._dof_joints:
            if j in self.arm_joints:
                k = self.arm_joints.index(j)
                lower.append(C.JOINT_LOWER[k])
                upper.append(C.JOINT_UPPER[k])
                rest.append(C.INITIAL_JOINTS[k])
            else:
                lower.append(C.FINGER_TRAVEL[0])
                upper.append(C.FINGER_TRAVEL[1])
                rest.append(C.FINGER_TRAVEL[1])
        ranges = [u - lo for lo, u in zip(lower, upper)]
        return {"lowerLimits": lower, "upperLimits": upper, "jointRanges": ranges, "restPoses": rest}

    def _add_finger_gear(self) -> None:
        left, right = self.finger_joints
        c = self.p.createConstraint(
            self.uid, left, self.uid, right, pb.JOINT_GEAR, [1, 0, 0], [0, 0, 0], [0, 0, 0]
        )
        self.p.changeConstraint(c, gearRatio=-1, erp=0.1, maxForce=50)

    def _add_base_cylinder(self) -> None:
        """CALVIN's visual-only stand under the arm (the base floats at z 0.24 otherwise)."""
        x, y, z = C.ROBOT_BASE_POSITION
        shape = self.p.createVisualShape(
            pb.GEOM_CYLINDER,
            radius=0.13,
            length=z,
            rgbaColor=[1, 1, 1, 1],
            visualFramePosition=[x - 0.05, y, z / 2],
        )
        self.p.createMultiBody(baseVisualShapeIndex=shape)

    # ----------------------------------------------------------------------------------------- state

    def reset(self, robot_obs: np.ndarray) -> None:
        """Place the joints and fingers from a CALVIN ``robot_obs`` and aim the target at the TCP."""
        for j, q in zip(self.arm_joints, robot_obs[7:14]):
            self.p.resetJointState(self.uid, j, float(q), 0.0)
            self._drive_joint(j, float(q))
        for j in self.finger_joints:
            self.p.resetJointState(self.uid, j, float(robot_obs[6]) / 2, 0.0)
        self.gripper_action = 1 if robot_obs[14] > 0 else -1
        self._drive_gripper(self.gripper_action)
        pos, orn = self.tcp_pose()
        self.target_pos, self.target_orn = pos, np.asarray(self.p.getEulerFromQuaternion(orn))

    def tcp_pose(self) -> tuple[np.ndarray, tuple[float, float, float, float]]:
        """TCP position and quaternion (x, y, z, w) in the world."""
        state = self.p.getLinkState(self.uid, self.tcp_link, computeForwardKinematics=True)
        return np.asarray(state[4]), state[5]

    def observed_tcp_pose(self) -> tuple[np.ndarray, tuple[float, float, float, float]]:
        """The TCP pose as CALVIN's ``robot_obs`` reports it: from before the last physics sub-step.

        calvin_env (``Robot.get_observation``, at 797142c) reads ``getLinkState(robot, tcp)[:2]`` without
        ``computeForwardKinematics``. Bullet caches a link's world frame when a step starts, before it
        integrates, so that read returns the pose after the 7th of the 8 sub-steps of an action (up to
        ~2 mm behind while the arm moves); joint angles are current. We read it the same way. A forward-
        kinematics query refreshes that cache (``tcp_pose``), so nothing between the last sub-step and
        this read may call one on the robot (the gripper camera reads its link the same cached way).
        """
        state = self.p.getLinkState(self.uid, self.tcp_link)
        return np.asarray(state[0]), state[1]

    def observation(self) -> np.ndarray:
        """CALVIN's 15-D ``robot_obs`` (TCP pose from :meth:`observed_tcp_pose`)."""
        pos, orn = self.observed_tcp_pose()
        euler = self.p.getEulerFromQuaternion(orn)
        width = sum(s[0] for s in self.p.getJointStates(self.uid, self.finger_joints))
        arm = [s[0] for s in self.p.getJointStates(self.uid, self.arm_joints)]
        return np.array([*pos, *euler, width, *arm, self.gripper_action], dtype=np.float64)

    # --------------------------------------------------------------------------------------- control

    def apply_relative(self, action: np.ndarray) -> None:
        """Add a clipped relative action to the target pose and drive toward it."""
        self.target_pos = self.target_pos + action[:3] * C.MAX_REL_POSITION
        self.target_orn = self.target_orn + action[3:6] * C.MAX_REL_ORIENTATION
        self._drive_to(self.target_pos, self.target_orn, action[6])

    def apply_absolute(self, action: np.ndarray) -> None:
        """Drive toward an absolute TCP target (xyz, Euler xyz) with gripper ``action[6]``."""
        self.target_pos, self.target_orn = np.array(action[:3]), np.array(action[3:6])
        self._drive_to(self.target_pos, self.target_orn, action[6])

    def _drive_to(self, pos: np.ndarray, euler: np.ndarray, gripper: float) -> None:
        quat = self.p.getQuaternionFromEuler(euler.tolist())
        solution = self.p.calculateInverseKinematics(
            self.uid, self.tcp_link, pos.tolist(), quat, **self._ik_args
        )
        arm = np.clip(solution[:7], C.JOINT_LOWER, C.JOINT_UPPER)
        for j, q in zip(self.arm_joints, arm):
            self._drive_joint(j, float(q))
        self.gripper_action = 1 if gripper > 0 else -1
        self._drive_gripper(self.gripper_action)

    def _drive_joint(self, joint: int, target: float) -> None:
        self.p.setJointMotorControl2(
            self.uid,
            joint,
            pb.POSITION_CONTROL,
            targetPosition=target,
            force=C.MAX_JOINT_FORCE,
            maxVelocity=C.MAX_JOINT_VELOCITY,
        )

    def _drive_gripper(self, action: int) -> None:
        opening = action == 1
        target = C.FINGER_TRAVEL[1] if opening else C.FINGER_TRAVEL[0]
        force = C.GRIPPER_OPEN_FORCE if opening else C.GRIPPER_CLOSE_FORCE
        for j in self.finger_joints:
            self.p.setJointMotorControl2(
                self.uid,
                j,
                pb.POSITION_CONTROL,
                targetPosition=target,
                force=force,
                maxVelocity=C.GRIPPER_MAX_VELOCITY,
            )
