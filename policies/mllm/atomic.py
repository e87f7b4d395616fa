"""Atomic prompting (SpatialTree Sec. 5.4): feed low-level spatial signals to a high-level planner.

The paper adds lower-level information to the L4 navigation prompt and reports gains "w/ Depth", "w/ Corres"
(visual correspondences between the start and goal images) and "w/ Size". Here each signal is optional and
read from the observation (or the episode's ``extras``) under a configurable key:

- depth: ``float32 H x W`` in metres -> an extra image (brighter = nearer, invalid pixels red) and its range;
- correspondence: ``(N, 4)`` pixel pairs ``(u1, v1, u2, v2)`` from Image 1 to Image 2 -> a side-by-side
  figure with numbered matches plus their coordinates, or a ready-made ``uint8`` figure;
- size: a string, or ``{object: size}`` with a number (metres) or ``[x, y, z]`` extents.

Environments compute these from the simulator; :func:`correspondences_from_depth` does it for any pinhole
camera with metric depth and known poses.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from policies.mllm.common import image_part, text_part

_PALETTE = (
    (230, 25, 75),
    (60, 180, 75),
    (255, 225, 25),
    (0, 130, 200),
    (245, 130, 48),
    (145, 30, 180),
    (70, 240, 240),
    (240, 50, 230),
    (210, 245, 60),
    (250, 190, 212),
    (0, 128, 128),
    (170, 110, 40),
)


@dataclass(frozen=True)
class AtomicPrompting:
    """Which low-level signals to add, and where to find them. All off reproduces the baseline prompt.

    A signal that is switched on but missing from the observation and the extras is an error (a silent
    baseline run would be reported as an ablation).
    """

    depth: bool = False
    correspondence: bool = False
    size: bool = False
    depth_key: str = "depth"
    goal_depth_key: str = "goal_depth"
    correspondence_key: str = "correspondence"
    size_key: str = "size_hints"
    max_listed_pairs: int = 12

    @property
    def enabled(self) -> list[str]:
        return [name for name in ("depth", "correspondence", "size") if getattr(self, name)]

    def parts(
        self,
        observation: Mapping[str, Any],
        extras: Mapping[str, Any],
        images: list[np.ndarray],
        first_index: int,
    ) -> list[dict[str, Any]]:
        """Content parts for the enabled signals. ``images`` are the prompt's images so far (Image 1, 2, ...);
        new images are numbered from ``first_index``."""
        out: list[dict[str, Any]] = []
        index = first_index
        if self.depth:
            depths = [(self.depth_key, 1)] + ([(self.goal_depth_key, 2)] if len(images) > 1 else [])
            for key, of in depths:
                depth = _lookup(key, observation, extras, required=of == 1)
                if depth is not None:
                    picture, near, far = depth_to_image(depth)
                    out += [
                        text_part(
                            f"Image {index} is the depth map of Image {of}: brighter is nearer, from "
                            f"{near:.2f} m (white) to {far:.2f} m (black); red pixels have no depth."
                        ),
                        image_part(picture),
                    ]
                    index += 1
        if self.correspondence:
            out += _correspondence_parts(
                _lookup(self.correspondence_key, observation, extras), images, index, self.max_listed_pairs
            )
        if self.size:
            out.append(text_part(size_text(_lookup(self.size_key, observation, extras))))
        return out


def _lookup(
    key: str, observation: Mapping[str, Any], extras: Mapping[str, Any], required: bool = True
) -> Any:
    if key in observation:
        return observation[key]
    if key in extras:
        return extras[key]
    if required:
        raise KeyError(
            f"atomic prompting needs {key!r} in the observation or the episode extras (found observation keys "
            f"{sorted(observation)}, extras {sorted(extras)}); enable the env's signal or switch the option off"
        )
    return None


# ------------------------------------------------------------------------------------------------ depth


def depth_to_image(depth: np.ndarray) -> tuple[np.ndarray, float, float]:
    """A metric depth map as an RGB picture (nearest white, farthest black, invalid red) and its range."""
    d = np.asarray(depth, dtype=np.float64)
    if d.ndim != 2:
        raise ValueError(f"depth must be H x W in metres, got shape {d.shape}")
    valid = np.isfinite(d) & (d > 0)
    if not valid.any():
        near = far = 0.0
        gray = np.zeros(d.shape)
    else:
        near, far = float(d[valid].min()), float(d[valid].max())
        gray = 1.0 - (d - near) / (far - near) if far > near else np.ones(d.shape)
    rgb = np.repeat(np.round(np.clip(gray, 0, 1) * 255).astype(np.uint8)[..., None], 3, axis=2)
    rgb[~valid] = (255, 0, 0)
    return rgb, near, far


# ---------------------------------------------------------------------------------------- correspondence


def correspondences_from_depth(
    depth: np.ndarray,
    intrinsics: np.ndarray,
    c2w_a: np.ndarray,
    c2w_b: np.ndarray,
    *,
    grid: int = 4,
    size_b: tuple[int, int] | None = None,
    depth_b: np.ndarray | None = None,
    tolerance_m: float = 0.05,
) -> np.ndarray:
    """Pixel matches ``(u_a, v_a, u_b, v_b)`` from camera A to camera B, shape ``(N, 4)``.

    Samples the centres of a ``grid x grid`` layout over image A, back-projects them with A's metric depth,
    and projects them into B. Cameras are pinhole with ``intrinsics`` K (3x3) and camera-to-world poses in
    the project's frame (+X right, +Y down, +Z forward); pixel ``(u, v)`` is column, row. Points behind B or
    outside B's image (``size_b = (H, W)``, default A's size) are dropped, and so are points hidden in B when
    ``depth_b`` is given (depth differs by more than ``tolerance_m``).
    """
    depth = np.asarray(depth, dtype=np.float64)
    h, w = depth.shape
    hb, wb = size_b or (h, w)
    us = (np.arange(grid) + 0.5) * w / grid - 0.5
    vs = (np.arange(grid) + 0.5) * h / grid - 0.5
    u, v = (a.ravel() for a in np.meshgrid(us, vs))
    z = depth[np.round(v).astype(int), np.round(u).astype(int)]
    keep = np.isfinite(z) & (z > 0)
    u, v, z = u[keep], v[keep], z[keep]
    K = np.asarray(intrinsics, dtype=np.float64)
    points_a = np.linalg.solve(K, np.stack([u, v, np.ones_like(u)])) * z  # 3 x N in camera A
    a_to_b = np.linalg.inv(np.asarray(c2w_b, dtype=np.float64)) @ np.asarray(c2w_a, dtype=np.float64)
    points_b = a_to_b[:3, :3] @ points_a + a_to_b[:3, 3:4]
    front = points_b[2] > 1e-9
    pix = K @ points_b
    ub = np.where(front, pix[0] / np.where(front, pix[2], 1), -1)
    vb = np.where(front, pix[1] / np.where(front, pix[2], 1), -1)
    inside = front & (ub >= -0.5) & (ub < wb - 0.5) & (vb >= -0.5) & (vb < hb - 0.5)
    if depth_b is not None:
        seen = np.asarray(depth_b, dtype=np.float64)[
            np.clip(np.round(vb), 0, hb - 1).astype(int), np.clip(np.round(ub), 0, wb - 1).astype(int)
        ]
        inside &= np.abs(seen - points_b[2]) <= tolerance_m
    return np.stack([u, v, ub, vb], axis=1)[inside]


def correspondence_figure(image_a: np.ndarray, image_b: np.ndarray, pairs: np.ndarray) -> np.ndarray:
    """Image A and B side by side with numbered, coloured matches joined by lines (RGB uint8)."""
    from PIL import Image, ImageDraw

    h = max(image_a.shape[0], image_b.shape[0])
    canvas = Image.new("RGB", (image_a.shape[1] + image_b.shape[1], h))
    canvas.paste(Image.fromarray(image_a), (0, 0))
    canvas.paste(Image.fromarray(image_b), (image_a.shape[1], 0))
    draw = ImageDraw.Draw(canvas)
    radius = max(2, h // 60)
    for i, (ua, va, ub, vb) in enumerate(np.asarray(pairs, dtype=float)):
        colour = _PALETTE[i % len(_PALETTE)]
        ub += image_a.shape[1]
        draw.line([(ua, va), (ub, vb)], fill=colour, width=1)
        for x, y in ((ua, va), (ub, vb)):
            draw.ellipse([x - radius, y - radius, x + radius, y + radius], outline=colour, width=2)
            draw.text((x + radius + 1, y - radius - 1), str(i + 1), fill=colour)
    return np.asarray(canvas)


def _correspondence_parts(
    value: object, images: list[np.ndarray], index: int, max_listed: int
) -> list[dict[str, Any]]:
    array = np.asarray(value)
    if array.dtype == np.uint8 and array.ndim == 3 and array.shape[2] == 3:  # a figure made by the env
        return [
            text_part(f"Image {index} shows matching points between Image 1 and Image 2."),
            image_part(array),
        ]
    if array.ndim != 2 or array.shape[1] != 4:
        raise ValueError(
            f"correspondence must be (N, 4) pixel pairs (u1, v1, u2, v2) or an RGB figure, got {array.shape}"
        )
    if len(images) < 2:
        raise ValueError("correspondence prompting needs two images (start and goal)")
    listed = "; ".join(
        f"{i + 1}: ({a:.0f}, {b:.0f}) -> ({c:.0f}, {d:.0f})"
        for i, (a, b, c, d) in enumerate(array[:max_listed])
    )
    more = f" (first {max_listed} of {len(array)})" if len(array) > max_listed else ""
    return [
        text_part(
            f"Image {index} shows Image 1 (left) and Image 2 (right) with the same scene points numbered "
            f"and joined. Matches as (column, row) in Image 1 -> Image 2{more}: {listed}."
        ),
        image_part(correspondence_figure(images[0], images[1], array)),
    ]


# ------------------------------------------------------------------------------------------------- size


def size_text(value: object) -> str:
    """Object sizes as one sentence: ``{name: metres or [x, y, z]}`` or a ready-made string."""
    if isinstance(value, str):
        return value
    if not isinstance(value, Mapping) or not value:
        raise ValueError(
            f"size hints must be a string or a non-empty {{object: size}} mapping, got {value!r:.80}"
        )
    items = []
    for name, size in value.items():
        dims = np.atleast_1d(np.asarray(size, dtype=float))
        items.append(f"{name}: " + " x ".join(f"{x:.2f}" for x in dims) + " m")
    return "Object sizes: " + "; ".join(items) + "."
