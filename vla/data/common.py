"""What every demonstration reader produces: (images, instruction, action chunk) samples."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
from PIL import Image

ACTION_DIM = 7  # 6 arm values + gripper
IMAGE_SIZE = 224  # VLM4VLA: images resized to 224 x 224


@dataclass
class Sample:
    """One training example: camera images at time t, the language goal, actions t .. t+chunk-1."""

    images: list[np.ndarray]  # one uint8 S x S x 3 image per camera, in the dataset's camera order
    instruction: str
    actions: np.ndarray  # (chunk, 7) float32, raw units of the dataset


class ChunkDataset(Protocol):
    """The reader interface the trainer uses (map-style, like a ``torch.utils.data.Dataset``)."""

    chunk_size: int
    cameras: tuple[str, ...]
    data_format: str  # "calvin" or "libero"
    gripper_open_value: float  # raw gripper value that means "open" in this format

    def __len__(self) -> int: ...

    def __getitem__(self, index: int) -> Sample: ...

    def action_samples(self, max_samples: int | None = None, seed: int = 0) -> np.ndarray:
        """``(N, 7)``: the action at each sample's frame (no images read), for normalisation statistics;
        at most ``max_samples`` frames, drawn with ``seed``."""
        ...


def resize_image(image: np.ndarray, size: int = IMAGE_SIZE) -> np.ndarray:
    """``image`` as a ``size x size`` uint8 RGB array (bicubic, like the published preprocessing)."""
    array = np.asarray(image)
    if array.ndim != 3 or array.shape[2] != 3:
        raise ValueError(f"expected an H x W x 3 image, got shape {array.shape}")
    if array.shape[:2] == (size, size) and array.dtype == np.uint8:
        return np.ascontiguousarray(array)
    pil = Image.fromarray(array.astype(np.uint8)).resize((size, size), Image.Resampling.BICUBIC)
    return np.asarray(pil)


def chunk_starts(first: int, last: int, limit: int, chunk: int) -> range:
    """Start frames ``t`` in ``[first, last]`` whose chunk ``t .. t+chunk-1`` ends at or before ``limit``."""
    return range(first, min(last, limit - chunk + 1) + 1)


def subsample(count: int, max_samples: int | None, seed: int) -> Sequence[int]:
    """All indices, or ``max_samples`` of them drawn without replacement (sorted, seeded)."""
    if max_samples is None or count <= max_samples:
        return range(count)
    return sorted(np.random.default_rng(seed).choice(count, size=max_samples, replace=False).tolist())


def check_actions(actions: np.ndarray, where: str) -> np.ndarray:
    """``actions`` as float32 ``(T, 7)``; a clear error otherwise."""
    array = np.asarray(actions, dtype=np.float32)
    if array.ndim != 2 or array.shape[1] != ACTION_DIM:
        raise ValueError(f"{where}: actions must have shape (T, {ACTION_DIM}), got {array.shape}")
    if not np.all(np.isfinite(array)):
        raise ValueError(f"{where}: actions contain NaN or infinite values")
    return array
