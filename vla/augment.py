"""Training-time image augmentation: random shifts and colour jitter, per camera image.

A policy trained on a few scenes sees every desk texture and camera framing it will meet only in those
scenes; CALVIN's ABC->D split changes exactly those (desk colours, furniture around a drawer that stays
put). The two standard remedies for small-data visuomotor learning are implemented here:

- ``shift``: pad by replicating the border, then crop back at a random offset of up to ``pad`` pixels
  (DrQ's random shift; the image keeps its size, so nothing downstream changes);
- ``color``: brightness, contrast and saturation factors drawn from ``1 +/- amount`` and a hue rotation of
  up to ``hue`` of a full turn (the ranges Octo and OpenVLA train with).

Each image of a sample is augmented independently (as Octo does per camera). Draws come from a
``numpy`` generator the caller seeds, so a run with the same seed augments the same way. Evaluation never
augments.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from PIL import Image

KINDS = ("shift", "color")


@dataclass(frozen=True)
class Augment:
    """Which augmentations run (``kinds``) and how strong each is."""

    kinds: tuple[str, ...] = ()
    pad_fraction: float = 1 / 16  # shift: up to this fraction of the image side (8 px at 128)
    brightness: float = 0.2
    contrast: float = 0.2
    saturation: float = 0.2
    hue: float = 0.05  # fraction of a full hue turn

    @classmethod
    def parse(cls, text: str) -> Augment:
        """``"none"``, ``"shift"``, ``"color"`` or ``"shift,color"``; a one-line error otherwise."""
        names = tuple(dict.fromkeys(n.strip() for n in text.split(",") if n.strip()))
        if names == ("none",):
            return cls()
        bad = [n for n in names if n not in KINDS]
        if bad or not names:
            raise ValueError(f"--augment must be none or a comma list of {', '.join(KINDS)}; got {text!r}")
        return cls(kinds=names)

    def __bool__(self) -> bool:
        return bool(self.kinds)

    def __call__(self, image: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """An augmented copy of the uint8 ``H x W x 3`` ``image``."""
        out = image
        if "shift" in self.kinds:
            out = random_shift(out, max(1, round(self.pad_fraction * min(image.shape[:2]))), rng)
        if "color" in self.kinds:
            out = self._jitter(out, rng)
        return out

    def _jitter(self, image: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        pixels = image.astype(np.float32)
        pixels *= rng.uniform(1 - self.brightness, 1 + self.brightness)
        mean = pixels.mean()
        pixels = (pixels - mean) * rng.uniform(1 - self.contrast, 1 + self.contrast) + mean
        gray = pixels @ np.array([0.299, 0.587, 0.114], np.float32)
        pixels = (pixels - gray[..., None]) * rng.uniform(1 - self.saturation, 1 + self.saturation)
        pixels += gray[..., None]
        rgb = np.clip(pixels, 0, 255).astype(np.uint8)
        return rotate_hue(rgb, rng.uniform(-self.hue, self.hue))


def random_shift(image: np.ndarray, pad: int, rng: np.random.Generator) -> np.ndarray:
    """``image`` moved by up to ``pad`` pixels each way, the uncovered border filled by replication."""
    height, width = image.shape[:2]
    padded = np.pad(image, ((pad, pad), (pad, pad), (0, 0)), mode="edge")
    top, left = (int(v) for v in rng.integers(0, 2 * pad + 1, size=2))
    return np.ascontiguousarray(padded[top : top + height, left : left + width])


def rotate_hue(image: np.ndarray, turn: float) -> np.ndarray:
    """``image`` with its hue rotated by ``turn`` of a full circle (Pillow's 8-bit hue runs 0..255)."""
    if turn == 0:
        return image
    hsv = np.array(Image.fromarray(image).convert("HSV"))
    hsv[..., 0] = ((hsv[..., 0].astype(np.int32) + round(turn * 256)) % 256).astype(np.uint8)
    return np.asarray(Image.fromarray(hsv, mode="HSV").convert("RGB"))
