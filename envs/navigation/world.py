"""A compiled scene (MuJoCo model and data, collision map, mask labels) and the agent's camera pose."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import mujoco
import numpy as np

from envs.navigation.mjcf import AGENT_CAMERA, entity_labels, scene_to_mjcf
from envs.navigation.scene import scene_key, scene_obstacles

CAMERA_HEIGHT = 1.5  # metres above the floor; about AI2-THOR's standing agent
PITCH_LIMITS = (-60.0, 30.0)  # look down / up limits in degrees (AI2-THOR's horizon range)
MIN_CAMERA_HEIGHT = 0.3  # metres above the floor
CEILING_CLEARANCE = 0.2  # the camera stays this far below the ceiling


def camera_height_limits(scene: dict[str, Any]) -> tuple[float, float]:
    """Lowest and highest camera heights (metres) a pedestal move may reach in ``scene``."""
    return MIN_CAMERA_HEIGHT, float(scene["wall_height"]) - CEILING_CLEARANCE


@dataclass
class AgentPose:
    """Where the agent is and where its camera points.

    ``heading_deg``: yaw counter-clockwise from +x. ``pitch_deg``: camera tilt, positive looks up.
    ``roll_deg``: positive rolls clockwise as seen from behind the camera. ``height``: camera height.
    """

    x: float
    y: float
    heading_deg: float = 0.0
    pitch_deg: float = 0.0
    roll_deg: float = 0.0
    height: float = CAMERA_HEIGHT

    @property
    def xy(self) -> np.ndarray:
        return np.array([self.x, self.y])

    def axes(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """World unit vectors of the camera: forward, right, up (after pitch and roll)."""
        h, p, r = (math.radians(v) for v in (self.heading_deg, self.pitch_deg, self.roll_deg))
        forward = np.array([math.cos(p) * math.cos(h), math.cos(p) * math.sin(h), math.sin(p)])
        right = np.array([math.sin(h), -math.cos(h), 0.0])
        up = np.cross(right, forward)
        return forward, right * math.cos(r) - up * math.sin(r), up * math.cos(r) + right * math.sin(r)

    def level_axes(self) -> tuple[np.ndarray, np.ndarray]:
        """Horizontal forward and right unit vectors (the frame EB's moves use)."""
        h = math.radians(self.heading_deg)
        return np.array([math.cos(h), math.sin(h)]), np.array([math.sin(h), -math.cos(h)])

    def to_json(self) -> dict[str, float]:
        return {k: round(float(v), 6) for k, v in asdict(self).items()}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> AgentPose:
        unknown = set(d) - set(cls.__dataclass_fields__)
        if unknown:
            raise ValueError(
                f"agent pose has unknown keys {sorted(unknown)}; expected {sorted(cls.__dataclass_fields__)}"
            )
        return cls(**{k: float(v) for k, v in d.items()})


class World:
    """A scene compiled for MuJoCo: ``model``, ``data``, the agent ``camera_id``, ``obstacles``, mask labels."""

    def __init__(self, scene: dict[str, Any]) -> None:
        self.scene = scene
        self.key = scene_key(scene)
        self.model = mujoco.MjModel.from_xml_string(scene_to_mjcf(scene))
        self.data = mujoco.MjData(self.model)
        mujoco.mj_forward(self.model, self.data)
        self.camera_id = self.model.camera(AGENT_CAMERA).id
        self.labels = entity_labels(scene)
        self.geom_entity = self._geom_entities()
        self.obstacles = scene_obstacles(scene)

    def _geom_entities(self) -> np.ndarray:
        index = {label: i for i, label in enumerate(self.labels)}
        body_entity = np.zeros(self.model.nbody, dtype=np.int32)
        for b in range(self.model.nbody):
            name = self.model.body(b).name
            if ":" in name:
                body_entity[b] = index[name.split(":", 1)[1]]
        return body_entity[self.model.geom_bodyid]

    def entity_id(self, entity: str) -> int:
        """Mask label of a scene object or furniture id."""
        return self.labels.index(entity)

    def place_camera(self, pose: AgentPose, fovy_deg: float) -> None:
        """Move the agent camera to ``pose`` (recomputes the camera's world frame)."""
        forward, right, up = pose.axes()
        xmat = np.stack([right, up, -forward], axis=1)  # MuJoCo cameras look along -z, y up
        quat = np.empty(4)
        mujoco.mju_mat2Quat(quat, xmat.ravel())
        cid = self.camera_id
        self.model.cam_pos[cid] = (pose.x, pose.y, pose.height)
        self.model.cam_quat[cid] = quat
        self.model.cam_fovy[cid] = fovy_deg
        mujoco.mj_camlight(self.model, self.data)

    def object_geoms(self, object_id: str) -> np.ndarray:
        """Geom ids of a scene object's body."""
        body = self.model.body(f"object:{object_id}").id
        return np.flatnonzero(self.model.geom_bodyid == body)

    def sighted_parts(
        self, pose: AgentPose, fovy_deg: float, object_id: str, aspect: float = 1.0
    ) -> tuple[int, int]:
        """(parts seen, parts) of an object: part centres inside the view (5 % margin) with a clear ray.

        Ray casting rather than pixels, so episode generation gives the same answer on every machine.
        """
        cam = np.array([pose.x, pose.y, pose.height])
        forward, right, up = pose.axes()
        tan_v = math.tan(math.radians(fovy_deg) / 2) * 0.95
        tan_h = tan_v * aspect
        geoms = self.object_geoms(object_id)
        body = self.model.geom_bodyid[geoms[0]]
        hit = np.array([-1], dtype=np.int32)
        seen = 0
        for g in geoms:
            v = self.data.geom_xpos[g] - cam
            z = float(v @ forward)
            if z <= 0.05 or abs(v @ right) > tan_h * z or abs(v @ up) > tan_v * z:
                continue
            mujoco.mj_ray(self.model, self.data, cam, v, None, True, -1, hit)
            seen += int(hit[0] >= 0 and self.model.geom_bodyid[hit[0]] == body)
        return seen, len(geoms)
