"""The robosuite scene: a real Panda under operational-space control at a table, plus one task's objects.

:class:`TabletopScene` is a robosuite ``ManipulationEnv``: robosuite builds the robot, its gripper and the
OSC controller and steps the physics; this module adds the task's objects, EB's cameras, and the small
model edits that switch objects in and out between episodes. The controller takes absolute end-effector
poses in the world frame (``input_type="absolute"``), so an EB action is a pose target.

One compiled model serves every episode of a family: a family's scene holds every object any of its
episodes may use; those an episode does not use are parked far away, without collisions and floating
(``gravcomp``). Every model field an episode touches is rewritten at every reset, so no episode leaks
into the next.
"""

from __future__ import annotations

import logging
import xml.etree.ElementTree as ET
from collections.abc import Callable, Sequence

import mujoco
import numpy as np
from robosuite.controllers import load_composite_controller_config
from robosuite.environments.manipulation.manipulation_env import ManipulationEnv
from robosuite.models.arenas import TableArena
from robosuite.models.tasks import ManipulationTask
from scipy.spatial.transform import Rotation

from envs.manipulation import objects, workspace

# robosuite logs an INFO line each time a controller config loads (every env); keep warnings only.
logging.getLogger("robosuite_logs").setLevel(logging.WARNING)

GRIP_SITE = "gripper0_right_grip_site"
GRIPPER_OPEN, GRIPPER_CLOSE = -1.0, 1.0  # robosuite's gripper command
PARK_ORIGIN = np.array([4.0, 4.0, 3.0])  # out of every camera's view


def osc_absolute_config() -> dict:
    """robosuite's default Panda OSC_POSE controller, taking absolute world-frame poses."""
    config = load_composite_controller_config(controller="BASIC", robot="Panda")
    arm = dict(config["body_parts"]["right"])
    arm.update(input_type="absolute", input_ref_frame="world")
    config["body_parts"] = {"right": arm}
    return config


class TabletopScene(ManipulationEnv):
    """A Panda at a table with the objects a task asks for; physics and control are robosuite's own.

    ``elements`` returns the task's MJCF ``(assets, bodies)``; ``on_reset`` is called after every
    ``reset`` (robot at home) to lay out the next episode; ``on_control_step`` after every control step.
    """

    def __init__(
        self,
        elements: Callable[[], tuple[list[ET.Element], list[ET.Element]]],
        *,
        control_freq: int = 20,
    ) -> None:
        self._elements = elements
        self.on_reset: Callable[[], None] | None = None
        self.on_control_step: Callable[[], None] | None = None
        super().__init__(
            robots="Panda",
            controller_configs=osc_absolute_config(),
            initialization_noise=None,
            use_camera_obs=False,
            has_renderer=False,
            has_offscreen_renderer=False,
            hard_reset=False,
            ignore_done=True,
            horizon=10**9,
            control_freq=control_freq,
            renderer="mujoco",
        )

    # ----------------------------------------------------------------------------- robosuite hooks

    def _load_model(self) -> None:
        super()._load_model()
        robot = self.robots[0].robot_model
        robot.set_base_xpos(robot.base_xpos_offset["table"](workspace.TABLE_FULL_SIZE[0]))
        arena = TableArena(
            table_full_size=workspace.TABLE_FULL_SIZE, table_offset=(0, 0, workspace.TABLE_TOP_Z)
        )
        arena.set_origin([0, 0, 0])
        self.model = ManipulationTask(mujoco_arena=arena, mujoco_robots=[robot])
        assets, bodies = self._elements()
        for element in objects.pattern_assets() + objects.shape_mesh_assets() + assets:
            self.model.asset.append(element)
        for body in bodies + objects.distractor_bodies():
            self.model.worldbody.append(body)
        self.model.worldbody.append(
            objects.camera_element("eb_front", **_camera_args(workspace.FRONT_CAMERA))
        )
        self.model.worldbody.append(
            objects.camera_element("eb_overhead", **_camera_args(workspace.OVERHEAD_CAMERA))
        )

    def _setup_references(self) -> None:
        super()._setup_references()
        self.mj_model: mujoco.MjModel = self.sim.model._model
        self.mj_data: mujoco.MjData = self.sim.data._data
        self.grip_site_id = mujoco.mj_name2id(self.mj_model, mujoco.mjtObj.mjOBJ_SITE, GRIP_SITE)
        self.table_geom_id = mujoco.mj_name2id(self.mj_model, mujoco.mjtObj.mjOBJ_GEOM, "table_collision")
        # robosuite calls this at every reset: keep the compiled values
        if not hasattr(self, "_default_contype"):
            self._default_contype = self.mj_model.geom_contype.copy()
            self._default_conaffinity = self.mj_model.geom_conaffinity.copy()

    def _reset_internal(self) -> None:
        super()._reset_internal()
        self.gripper_command = GRIPPER_OPEN
        if self.on_reset is not None:
            self.on_reset()
        mujoco.mj_forward(self.mj_model, self.mj_data)

    def reward(self, action: np.ndarray | None = None) -> float:
        """Unused: the Gymnasium env computes rewards from the task's ``evaluate()``."""
        return 0.0

    def _check_success(self) -> bool:
        return False

    # ------------------------------------------------------------------------------------ control

    def control_step(self, position: np.ndarray, rotation: np.ndarray, gripper: float) -> None:
        """One robosuite control step (1/control_freq s) towards an absolute grip-site pose (world frame)."""
        self.gripper_command = gripper
        action = np.concatenate([position, Rotation.from_matrix(rotation).as_rotvec(), [gripper]])
        self.step(action)
        if self.on_control_step is not None:
            self.on_control_step()

    def grip_pose(self) -> tuple[np.ndarray, np.ndarray]:
        """Current grip-site position and rotation matrix (world frame)."""
        d = self.mj_data
        return d.site_xpos[self.grip_site_id].copy(), d.site_xmat[self.grip_site_id].reshape(3, 3).copy()

    @property
    def gripper_closed(self) -> bool:
        """Whether the last gripper command was "close"."""
        return self.gripper_command > 0

    def arm_qpos_indices(self) -> np.ndarray:
        """qpos addresses of the seven arm joints."""
        return np.asarray(self.robots[0]._ref_joint_pos_indexes)

    # ------------------------------------------------------------------------------ object layout

    def body_id(self, name: str) -> int:
        """Id of a body of the model (raises a KeyError naming it when absent)."""
        return self.mj_model.body(name).id

    def geom_ids(self, prefix: str, kind: str) -> list[int]:
        """Ids of the geoms named ``<prefix>_<kind><i>`` (``kind`` "c" collision, "v" visual)."""
        m = self.mj_model
        names = (mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_GEOM, i) for i in range(m.ngeom))
        return [
            i
            for i, n in enumerate(names)
            if n and n.startswith(f"{prefix}_{kind}") and n[len(prefix) + 2 :].isdigit()
        ]

    def place_free_body(self, name: str, position: Sequence[float], yaw: float) -> None:
        """Put a free body on the table at rest and give it its collisions and gravity back."""
        self._set_free_pose(name, position, yaw)
        self._enable_body(name, True)

    def park_free_body(self, name: str, slot: int) -> None:
        """Move an unused free body out of sight, floating, without collisions."""
        self._set_free_pose(name, PARK_ORIGIN + np.array([0.15 * slot, 0.0, 0.0]), 0.0)
        self._enable_body(name, False)

    def place_fixture(self, name: str, position: Sequence[float], yaw: float) -> None:
        """Move a static body (no joint) by rewriting its model position and orientation."""
        body = self.body_id(name)
        self.mj_model.body_pos[body] = position
        self.mj_model.body_quat[body] = _yaw_quat(yaw)

    def paint(self, geom_ids: Sequence[int], rgba: Sequence[float], pattern: str = "plain") -> None:
        """Colour visual geoms, with a grey-scale surface pattern tinted by the colour."""
        matid = -1 if pattern == "plain" else self.mj_model.material(f"eb_pattern_{pattern}").id
        for g in geom_ids:
            self.mj_model.geom_rgba[g] = rgba
            self.mj_model.geom_matid[g] = matid

    def _set_free_pose(self, name: str, position: Sequence[float], yaw: float) -> None:
        joint = self.mj_model.joint(f"{name}_joint")
        qadr, vadr = joint.qposadr[0], joint.dofadr[0]
        self.mj_data.qpos[qadr : qadr + 3] = position
        self.mj_data.qpos[qadr + 3 : qadr + 7] = _yaw_quat(yaw)
        self.mj_data.qvel[vadr : vadr + 6] = 0.0

    def _enable_body(self, name: str, enabled: bool) -> None:
        body = self.body_id(name)
        self.mj_model.body_gravcomp[body] = 0.0 if enabled else 1.0
        for g in self.geom_ids(name, "c"):
            self.mj_model.geom_contype[g] = self._default_contype[g] if enabled else 0
            self.mj_model.geom_conaffinity[g] = self._default_conaffinity[g] if enabled else 0


def _camera_args(spec: dict) -> dict:
    return {k: spec[k] for k in ("pos", "target", "fovy", "up") if k in spec}


def _yaw_quat(yaw: float) -> np.ndarray:
    """MuJoCo (w, x, y, z) quaternion of a rotation by ``yaw`` radians about +z."""
    return np.array([np.cos(yaw / 2), 0.0, 0.0, np.sin(yaw / 2)])
