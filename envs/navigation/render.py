"""Offscreen first-person rendering: RGB, metric depth, target visibility and a per-pixel entity-id mask.

Per frame: a full pass gives RGB and the depth buffer; a second pass draws only the target object's
geoms (moved to geom group :data:`TARGET_GROUP`, a handful of geoms, about a tenth of the cost) and its
pixels that match the full pass's depth are the target pixels in view. The full segmentation pass runs
only when the entity mask is asked for. Shadows, reflections, skybox and multisampling are off. The GL
context lives as long as the renderer; the MuJoCo render context is rebuilt only when the model changes.
Call :meth:`FrameRenderer.close` (or use it as a context manager): EGL complains at exit otherwise.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from types import TracebackType
from typing import Any

import mujoco
import numpy as np

from envs.rendering import starting_gl

TARGET_GROUP = 5  # geom group holding the current target object's geoms
_SEG_FLAGS = (mujoco.mjtRndFlag.mjRND_SEGMENT, mujoco.mjtRndFlag.mjRND_IDCOLOR)
_OFF_FLAGS = (
    mujoco.mjtRndFlag.mjRND_SHADOW,
    mujoco.mjtRndFlag.mjRND_REFLECTION,
    mujoco.mjtRndFlag.mjRND_SKYBOX,
    mujoco.mjtRndFlag.mjRND_HAZE,
)


@dataclass
class Frame:
    """One view: ``rgb`` (H, W, 3) uint8, ``depth`` (H, W) float32 metres, ``entity`` (H, W) int32 labels,
    ``target_pixels``: pixels where the target object is the nearest surface (-1 when no target is set), and
    ``target_mask`` (H, W) bool those pixels (``None`` when no target is set)."""

    rgb: np.ndarray
    depth: np.ndarray | None
    entity: np.ndarray | None
    target_pixels: int = -1
    target_mask: np.ndarray | None = None


class FrameRenderer:
    """Renders a model's camera at ``width`` x ``height``; ``geom_entity`` maps geom ids to mask labels."""

    def __init__(self, width: int, height: int) -> None:
        if width < 1 or height < 1:
            raise ValueError(f"image size must be positive, got {width}x{height}")
        self.width, self.height = int(width), int(height)
        starting_gl()
        self._gl = mujoco.GLContext(self.width, self.height)
        self._gl.make_current()
        # Frees the contexts at close() or, if the owner forgot, early at interpreter exit (before EGL is
        # gone).
        self._held: dict[str, Any] = {"gl": self._gl, "ctx": None}
        self._release = weakref.finalize(self, _release, self._held)
        self._ctx: mujoco.MjrContext | None = None
        self._scene: mujoco.MjvScene | None = None
        self._model: mujoco.MjModel | None = None
        self._option = mujoco.MjvOption()
        self._option.geomgroup[TARGET_GROUP] = 1
        self._target_option = mujoco.MjvOption()
        self._target_option.geomgroup[:] = 0
        self._target_option.geomgroup[TARGET_GROUP] = 1
        self._target_scene: mujoco.MjvScene | None = None
        self._target_geoms = np.zeros(0, dtype=np.int64)
        self._target_groups = np.zeros(0, dtype=np.int32)
        self._camera = mujoco.MjvCamera()
        self._camera.type = mujoco.mjtCamera.mjCAMERA_FIXED
        self._rect = mujoco.MjrRect(0, 0, self.width, self.height)
        self._segid_entity: np.ndarray | None = None
        self._geom_entity = np.zeros(0, dtype=np.int32)

    def load(self, model: mujoco.MjModel, geom_entity: np.ndarray) -> None:
        """Prepare to render ``model`` (uploads its textures); ``geom_entity[g]`` is geom g's mask label."""
        self._gl.make_current()
        if self._ctx is not None:
            self._ctx.free()
        # An offscreen buffer of exactly the image size: a larger one costs time on every frame.
        model.vis.global_.offwidth, model.vis.global_.offheight = self.width, self.height
        self._ctx = mujoco.MjrContext(model, mujoco.mjtFontScale.mjFONTSCALE_50)
        self._held["ctx"] = self._ctx
        mujoco.mjr_setBuffer(mujoco.mjtFramebuffer.mjFB_OFFSCREEN, self._ctx)
        self._ctx.readDepthMap = mujoco.mjtDepthMap.mjDEPTH_ZEROFAR
        self._scene = mujoco.MjvScene(model, maxgeom=model.ngeom + 64)
        self._target_scene = mujoco.MjvScene(model, maxgeom=model.ngeom + 64)
        for flag in _OFF_FLAGS:
            self._scene.flags[flag] = False
            self._target_scene.flags[flag] = False
        for flag in _SEG_FLAGS:  # the target pass needs depth only: no lighting, no textures
            self._target_scene.flags[flag] = True
        self._model, self._geom_entity, self._segid_entity = model, np.asarray(geom_entity, np.int32), None
        self._target_geoms = np.zeros(0, dtype=np.int64)
        self._target_groups = np.zeros(0, dtype=np.int32)

    def set_target(self, geoms: np.ndarray) -> None:
        """Count visibility for these geoms from now on (moves them to TARGET_GROUP, restoring the last ones)."""
        if self._model is None:
            raise RuntimeError("FrameRenderer.set_target called before load()")
        self._model.geom_group[self._target_geoms] = self._target_groups
        self._target_geoms = np.asarray(geoms, dtype=np.int64)
        self._target_groups = self._model.geom_group[self._target_geoms].copy()
        self._model.geom_group[self._target_geoms] = TARGET_GROUP

    def render(
        self, data: mujoco.MjData, camera_id: int, *, depth: bool = False, entity: bool = False
    ) -> Frame:
        """Render the fixed camera ``camera_id``: RGB, target visibility, and depth / entity mask if asked."""
        if self._scene is None or self._ctx is None or self._model is None:
            raise RuntimeError("FrameRenderer.render called before load() or after close()")
        self._gl.make_current()
        self._camera.fixedcamid = camera_id
        mujoco.mjv_updateScene(
            self._model, data, self._option, None, self._camera, mujoco.mjtCatBit.mjCAT_ALL, self._scene
        )
        rgb = np.empty((self.height, self.width, 3), dtype=np.uint8)
        raw = np.empty((self.height, self.width), dtype=np.float32)
        mujoco.mjr_render(self._rect, self._scene, self._ctx)
        mujoco.mjr_readPixels(rgb, raw, self._rect, self._ctx)
        frame = Frame(np.flipud(rgb), self._metric_depth(np.flipud(raw)) if depth else None, None)
        if len(self._target_geoms):
            frame.target_mask = np.flipud(self._target_pass(data, raw))
            frame.target_pixels = int(np.count_nonzero(frame.target_mask))
        if entity:
            frame.entity = self._segmentation_pass()
        return frame

    def _target_pass(self, data: mujoco.MjData, scene_depth: np.ndarray) -> np.ndarray:
        """The pixels (bottom row first, as read) where the target's own depth equals the full scene's: the target is the nearest surface."""
        assert self._target_scene is not None and self._ctx is not None
        mujoco.mjv_updateScene(
            self._model,
            data,
            self._target_option,
            None,
            self._camera,
            mujoco.mjtCatBit.mjCAT_ALL,
            self._target_scene,
        )
        mujoco.mjr_render(self._rect, self._target_scene, self._ctx)
        target_depth = np.empty_like(scene_depth)
        mujoco.mjr_readPixels(None, target_depth, self._rect, self._ctx)
        # Reverse-Z: the cleared far plane reads 0. Same geometry, same transform: the same depth values.
        return (target_depth > 0) & (target_depth == scene_depth)

    def _segmentation_pass(self) -> np.ndarray:
        assert self._scene is not None and self._ctx is not None
        seg = np.empty((self.height, self.width, 3), dtype=np.uint8)
        for flag in _SEG_FLAGS:
            self._scene.flags[flag] = True
        try:
            mujoco.mjr_render(self._rect, self._scene, self._ctx)
            mujoco.mjr_readPixels(seg, None, self._rect, self._ctx)
        finally:
            for flag in _SEG_FLAGS:
                self._scene.flags[flag] = False
        seg = np.flipud(seg).astype(np.int32)
        segid = seg[..., 0] | (seg[..., 1] << 8) | (seg[..., 2] << 16)  # 0 is background, else segid + 1
        lut = self._lookup()
        return lut[np.minimum(segid, len(lut) - 1)]

    def _lookup(self) -> np.ndarray:
        """segid + 1 -> entity label. The scene's geoms are the same every frame for a static model."""
        assert self._scene is not None
        n = self._scene.ngeom
        if self._segid_entity is None or len(self._segid_entity) != n + 2:
            lut = np.zeros(n + 2, dtype=np.int32)  # the last slot catches out-of-range ids
            for g in self._scene.geoms[:n]:
                if (
                    g.segid >= 0
                    and g.objtype == mujoco.mjtObj.mjOBJ_GEOM
                    and g.objid < len(self._geom_entity)
                ):
                    lut[g.segid + 1] = self._geom_entity[g.objid]
            self._segid_entity = lut
        return self._segid_entity

    def _metric_depth(self, raw: np.ndarray) -> np.ndarray:
        """Reverse-Z depth buffer -> distance along the optical axis in metres (as mujoco.Renderer)."""
        assert self._model is not None
        extent = self._model.stat.extent
        near = np.float32(self._model.vis.map.znear * extent)
        far = np.float32(self._model.vis.map.zfar * extent)
        c = np.float32(-0.5) * (-(far + near) / (far - near)) - np.float32(0.5)
        d = np.float32(-0.5) * (-(np.float32(2) * far * near) / (far - near))
        return (d / (raw.astype(np.float64) + c)).astype(np.float32)

    def close(self) -> None:
        """Free the MuJoCo and GL contexts (idempotent)."""
        self._release()
        self._ctx = None
        self._scene = self._target_scene = None

    def __enter__(self) -> FrameRenderer:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def _release(held: dict[str, Any]) -> None:
    gl, ctx = held.pop("gl", None), held.pop("ctx", None)
    if gl is None:
        return
    gl.make_current()
    if ctx is not None:
        ctx.free()
    gl.free()
