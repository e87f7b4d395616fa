"""Fast CPU rendering of the scene's cameras and EB's boxed, index-labelled front image.

Shadows, reflections and multisampling are off (software OpenGL spends most of its time on the shadow
map), and the renderer is closed explicitly. Object boxes come from MuJoCo's per-pixel segmentation (geom
ids), not from a detector, so every listed object that is visible gets exactly its box.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

import mujoco
import numpy as np
from PIL import Image, ImageDraw, ImageFont

from envs.rendering import starting_gl

BOX_COLOR = (255, 0, 0)


class CameraRig:
    """One offscreen renderer for a square image size, shared by every camera of a scene.

    The GL context is made at the first render, not here: a process that only builds an env (as
    ``AsyncVectorEnv`` does in the parent, to read the spaces) holds no GL state its forks would inherit.
    """

    def __init__(self, model: mujoco.MjModel, size: int) -> None:
        model.vis.quality.offsamples = 0  # no multisampling
        model.vis.global_.offwidth = max(int(model.vis.global_.offwidth), size)
        model.vis.global_.offheight = max(int(model.vis.global_.offheight), size)
        self.size = size
        self._model = model
        self._renderer: mujoco.Renderer | None = None
        self._closed = False
        self._option = mujoco.MjvOption()
        self._option.geomgroup[:] = 0
        self._option.geomgroup[1] = 1  # robosuite's visual geoms; collision geoms stay hidden

    def rgb(self, data: mujoco.MjData, camera: str) -> np.ndarray:
        """An ``size x size x 3`` uint8 image from ``camera``."""
        renderer = self._update(data, camera)
        return renderer.render().copy()

    def depth(self, data: mujoco.MjData, camera: str) -> np.ndarray:
        """Metric depth (metres along the camera's axis) of every pixel, float32."""
        renderer = self._update(data, camera)
        renderer.enable_depth_rendering()
        try:
            return renderer.render().copy()
        finally:
            renderer.disable_depth_rendering()

    def segmentation(self, data: mujoco.MjData, camera: str) -> np.ndarray:
        """Per-pixel geom id (``-1`` for background and non-geom pixels)."""
        renderer = self._update(data, camera)
        renderer.enable_segmentation_rendering()
        try:
            seg = renderer.render()
        finally:
            renderer.disable_segmentation_rendering()
        ids = seg[..., 0].copy()
        ids[seg[..., 1] != int(mujoco.mjtObj.mjOBJ_GEOM)] = -1
        return ids

    def close(self) -> None:
        """Release the GL context now (EGL complains at interpreter exit otherwise)."""
        self._closed = True
        if self._renderer is not None:
            self._renderer.close()
            self._renderer = None

    def _update(self, data: mujoco.MjData, camera: str) -> mujoco.Renderer:
        if self._closed:
            raise RuntimeError("the camera rig was closed; create the env again")
        if self._renderer is None:
            self._renderer = _new_renderer(self._model, self.size)
        self._renderer.update_scene(data, camera=camera, scene_option=self._option)
        flags = self._renderer.scene.flags
        flags[mujoco.mjtRndFlag.mjRND_SHADOW] = 0
        flags[mujoco.mjtRndFlag.mjRND_REFLECTION] = 0
        return self._renderer


def _new_renderer(model: mujoco.MjModel, size: int) -> mujoco.Renderer:
    starting_gl()
    try:
        return mujoco.Renderer(model, size, size)
    except mujoco.FatalError as exc:
        raise RuntimeError(
            f"MuJoCo could not create an OpenGL context ({exc}); MUJOCO_GL was "
            f"{os.environ.get('MUJOCO_GL')!r}. Headless machines need MUJOCO_GL=egl (or osmesa) set before "
            "anything imports mujoco: import envs.manipulation first, or export the variable."
        ) from exc


def object_boxes(
    geom_ids: np.ndarray, objects: Mapping[int, Sequence[int]]
) -> dict[int, tuple[int, int, int, int]]:
    """Pixel box ``(x0, y0, x1, y1)`` (inclusive) of every object label whose geoms are visible."""
    boxes = {}
    for label, geoms in objects.items():
        mask = np.isin(geom_ids, np.asarray(list(geoms)))
        if not mask.any():
            continue
        rows, cols = np.nonzero(mask.any(axis=1))[0], np.nonzero(mask.any(axis=0))[0]
        boxes[label] = (int(cols[0]), int(rows[0]), int(cols[-1]), int(rows[-1]))
    return boxes


def draw_boxes(image: np.ndarray, boxes: Mapping[int, tuple[int, int, int, int]]) -> np.ndarray:
    """Draw each box with its label (EB: red box, the object's number above its top-left corner)."""
    canvas = Image.fromarray(image)
    draw = ImageDraw.Draw(canvas)
    font = ImageFont.load_default(size=max(10, image.shape[0] // 32))
    assert isinstance(font, ImageFont.FreeTypeFont)  # given a size, Pillow loads its built-in TrueType font
    pad = max(1, image.shape[0] // 160)
    for label, (x0, y0, x1, y1) in sorted(boxes.items()):
        draw.rectangle((x0 - pad, y0 - pad, x1 + pad, y1 + pad), outline=BOX_COLOR, width=1)
        text_y = max(0, y0 - pad - font.size - 1)
        draw.text((x0, text_y), str(label), fill=BOX_COLOR, font=font)
    return np.asarray(canvas)
