"""The model fields a robustness variant may change (camera poses, lights, surface tints, the arm's start
joints), rewritten at every reset: the compiled defaults first, then the episode's overrides, so no
variant leaks into the next episode. The fields come from :mod:`envs.manipulation.perturbations`."""

from __future__ import annotations

from typing import Any

import mujoco
import numpy as np

from envs.manipulation.objects import camera_axes
from envs.manipulation.scene import TabletopScene


class SceneLook:
    """The compiled defaults of one scene's variable fields, and :meth:`apply` for an episode."""

    def __init__(self, scene: TabletopScene) -> None:
        m = scene.mj_model
        self.scene = scene
        self._cam = {"pos": m.cam_pos.copy(), "quat": m.cam_quat.copy(), "fovy": m.cam_fovy.copy()}
        self._light = {"diffuse": m.light_diffuse.copy(), "dir": m.light_dir.copy()}
        self._head = (m.vis.headlight.diffuse.copy(), m.vis.headlight.ambient.copy())
        self._mat_rgba = m.mat_rgba.copy()

    def apply(self, episode: dict[str, Any]) -> None:
        """The defaults, then ``episode``'s ``cameras``, ``lighting``, ``surfaces`` and ``robot_joints``."""
        m = self.scene.mj_model
        m.cam_pos[:], m.cam_quat[:], m.cam_fovy[:] = self._cam["pos"], self._cam["quat"], self._cam["fovy"]
        m.light_diffuse[:], m.light_dir[:] = self._light["diffuse"], self._light["dir"]
        m.vis.headlight.diffuse[:], m.vis.headlight.ambient[:] = self._head
        m.mat_rgba[:] = self._mat_rgba
        for name, pose in episode.get("cameras", {}).items():
            self._camera(name, pose)
        if "lighting" in episode:
            self._lighting(episode["lighting"])
        for name, rgba in episode.get("surfaces", {}).items():
            m.mat_rgba[m.material(name).id] = rgba
        if "robot_joints" in episode:
            joints = self.scene.arm_qpos_indices()
            self.scene.mj_data.qpos[joints] += np.asarray(episode["robot_joints"], float)

    def _camera(self, name: str, pose: dict[str, Any]) -> None:
        m = self.scene.mj_model
        cam = m.camera(name).id
        right, up = camera_axes(pose["pos"], pose["target"], pose.get("up", (0, 0, 1)))
        rotation = np.column_stack([right, up, np.cross(right, up)])
        quat = np.zeros(4)
        mujoco.mju_mat2Quat(quat, rotation.ravel())
        m.cam_pos[cam], m.cam_quat[cam], m.cam_fovy[cam] = pose["pos"], quat, pose["fovy"]

    def _lighting(self, light: dict[str, Any]) -> None:
        m = self.scene.mj_model
        scale, amount, tint = float(light["scale"]), float(light["tint_amount"]), np.asarray(light["tint"])
        for i in range(m.nlight):
            base = self._light["diffuse"][i]
            m.light_diffuse[i] = np.clip(scale * ((1 - amount) * base + amount * tint * base.max()), 0, 1)
            m.light_dir[i] = light["dir"]
        m.vis.headlight.diffuse[:] = np.clip(self._head[0] * scale, 0, 1)
        m.vis.headlight.ambient[:] = np.clip(self._head[1] * scale, 0, 1)
