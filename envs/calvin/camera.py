"""CALVIN's static and gripper cameras, rendered by TinyRenderer (CPU) or PyBullet's EGL plugin.

The static camera looks from calvin.md's eye to its target; the gripper camera sits on the robot's
``gripper_cam`` link and looks along the link's y axis with its -z axis up, as CALVIN's does. Depth is
metric (metres along the optical axis), converted from the z-buffer with each camera's near/far planes.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from collections.abc import Mapping, Sequence

import numpy as np

from envs.calvin import constants as C
from envs.calvin.bullet import BulletClient, pb

RENDERERS = ("tiny", "egl")
_LIGHT_ARGS = {
    "direction": "lightDirection",
    "color": "lightColor",
    "ambient": "lightAmbientCoeff",
    "diffuse": "lightDiffuseCoeff",
    "specular": "lightSpecularCoeff",
}


def _light_kwargs(light: Mapping[str, float | list[float]]) -> dict[str, float | list[float]]:
    return {_LIGHT_ARGS[k]: v for k, v in light.items()}


def load_egl(client: BulletClient) -> int:
    """Load PyBullet's EGL renderer plugin into ``client``; a clear error when it cannot run here."""
    spec = importlib.util.find_spec("eglRenderer")
    plugin = client.loadPlugin(spec.origin, "_eglRendererPlugin") if spec and spec.origin else -1
    if plugin < 0:
        raise RuntimeError(
            "renderer='egl': PyBullet's eglRenderer plugin did not load (no EGL device); "
            "use renderer='tiny', which needs no GL"
        )
    return plugin


_EGL_PROBE = (
    "import pkgutil, sys, pybullet as p; c = p.connect(p.DIRECT); l = pkgutil.get_loader('eglRenderer'); "
    "sys.exit(0 if l and p.loadPlugin(l.get_filename(), '_eglRendererPlugin', physicsClientId=c) >= 0 else 3)"
)


def egl_problem(timeout_s: float = 60.0) -> str | None:
    """None when PyBullet's EGL plugin loads on this machine; otherwise one line saying so, with the fix.

    Probed in a child process: without an EGL device the plugin ends the whole process from C ("failed to
    EGL with glad.", exit 1) instead of returning an error, so a benchmark asks before it builds a worker."""
    try:
        done = subprocess.run(
            [sys.executable, "-c", _EGL_PROBE], capture_output=True, timeout=timeout_s, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"--renderer egl: PyBullet's EGL plugin could not be tried here ({error}); use --renderer tiny"
    if done.returncode == 0:
        return None
    return (
        "--renderer egl: PyBullet's eglRenderer plugin does not load on this machine (no usable EGL device); "
        "use --renderer tiny, which needs no GL"
    )


def zbuffer_to_depth(zbuffer: np.ndarray, near: float, far: float) -> np.ndarray:
    """Metric depth from an OpenGL z-buffer in [0, 1]."""
    return (far * near / (far - (far - near) * zbuffer)).astype(np.float32)


class Cameras:
    """Renders the two CALVIN views from one client."""

    def __init__(
        self,
        client: BulletClient,
        robot_uid: int,
        camera_link: int,
        renderer: str = "tiny",
        egl_plugin: int | None = None,
    ) -> None:
        if renderer not in RENDERERS:
            raise ValueError(f"renderer must be one of {RENDERERS}, got {renderer!r}")
        if (renderer == "egl") != (egl_plugin is not None):
            raise ValueError("renderer='egl' needs the EGL plugin loaded before the scene (see load_egl)")
        self.p, self.robot_uid, self.camera_link = client, robot_uid, camera_link
        self.flag = pb.ER_BULLET_HARDWARE_OPENGL if renderer == "egl" else pb.ER_TINY_RENDERER
        self.plugin = egl_plugin
        self._projection = {"gripper": self._project(C.GRIPPER_CAMERA)}
        self.light: dict[str, float | list[float]] = dict(C.DEFAULT_LIGHT)
        self.set_static()

    def _project(self, spec: C.CameraSpec, fov: float | None = None) -> tuple[float, ...]:
        return self.p.computeProjectionMatrixFOV(
            spec.fov if fov is None else fov, spec.width / spec.height, spec.near, spec.far
        )

    def set_static(
        self,
        eye: Sequence[float] = C.STATIC_EYE,
        target: Sequence[float] = C.STATIC_TARGET,
        up: Sequence[float] = C.STATIC_UP,
        fov: float = C.STATIC_CAMERA.fov,
    ) -> None:
        """Place the static camera (CALVIN's pose and field of view by default)."""
        self._static_view = self.p.computeViewMatrix(list(eye), list(target), list(up))
        self._projection["static"] = self._project(C.STATIC_CAMERA, fov)

    def set_light(self, light: Mapping[str, float | list[float]] | None = None) -> None:
        """The renderer's light for both cameras: ``{"direction", "color", "ambient", "diffuse",
        "specular"}`` (``None``: PyBullet's TinyRenderer defaults, ``constants.DEFAULT_LIGHT``). Every
        image passes all five: the renderer keeps a light it was once given."""
        self.light = {**C.DEFAULT_LIGHT, **(light or {})}

    def _gripper_view(self) -> tuple[float, ...]:
        # cached frame, as calvin_env's GripperCamera reads it: from before the last physics sub-step; a
        # forward-kinematics query here would also move robot_obs's TCP forward (see
        # PandaRobot.observed_tcp_pose)
        state = self.p.getLinkState(self.robot_uid, self.camera_link)
        pos = np.asarray(state[0])
        rot = np.asarray(self.p.getMatrixFromQuaternion(state[1])).reshape(3, 3)
        return self.p.computeViewMatrix(pos.tolist(), (pos + rot[:, 1]).tolist(), (-rot[:, 2]).tolist())

    def render(self, name: str, depth: bool = False) -> tuple[np.ndarray, np.ndarray | None]:
        """RGB (H x W x 3 uint8) and, if asked, metric depth (H x W float32) of camera ``name``."""
        spec = C.STATIC_CAMERA if name == "static" else C.GRIPPER_CAMERA
        view = self._static_view if name == "static" else self._gripper_view()
        _, _, rgba, zbuf, _ = self.p.getCameraImage(
            spec.width,
            spec.height,
            view,
            self._projection[name],
            renderer=self.flag,
            flags=pb.ER_NO_SEGMENTATION_MASK,
            **_light_kwargs(self.light),
        )
        rgb = np.asarray(rgba, dtype=np.uint8).reshape(spec.height, spec.width, 4)[:, :, :3].copy()
        if not depth:
            return rgb, None
        z = np.asarray(zbuf, dtype=np.float32).reshape(spec.height, spec.width)
        return rgb, zbuffer_to_depth(z, spec.near, spec.far)

    def project(self, name: str, points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Pixel coordinates ``(N x 2: column, row; 0 at the image's top-left corner)`` and metric depth
        along the optical axis (N) of world points ``(N x 3)`` in camera ``name``'s current view, with the
        same view and projection matrices the renderer uses (OpenGL, column-major)."""
        spec = C.STATIC_CAMERA if name == "static" else C.GRIPPER_CAMERA
        view = np.asarray(self._static_view if name == "static" else self._gripper_view()).reshape(4, 4).T
        proj = np.asarray(self._projection[name]).reshape(4, 4).T
        homogeneous = np.c_[np.asarray(points, dtype=np.float64).reshape(-1, 3), np.ones(len(points))]
        eye = homogeneous @ view.T
        clip = eye @ proj.T
        ndc = clip[:, :2] / clip[:, 3:4]
        pixels = np.c_[(ndc[:, 0] + 1.0) * 0.5 * spec.width, (1.0 - ndc[:, 1]) * 0.5 * spec.height]
        return pixels, -eye[:, 2]

    def close(self) -> None:
        if self.plugin is not None:
            self.p.unloadPlugin(self.plugin)
            self.plugin = None
