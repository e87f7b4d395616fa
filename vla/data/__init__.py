"""Demonstration readers (CALVIN layout, LIBERO HDF5, LeRobotDataset v3) and their writers.

``open_dataset(path)`` picks the reader from what is on disk: a directory with ``meta/info.json`` is a
LeRobot v3 dataset; one with ``ep_start_end_ids.npy`` (or a ``training/`` subdirectory holding one) is
CALVIN; ``.hdf5`` files are LIBERO.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from vla.data.calvin import CALVIN_CHUNK, EPISODES_FILE, CalvinDataset, CalvinWriter
from vla.data.common import ACTION_DIM, IMAGE_SIZE, ChunkDataset, Sample, resize_image
from vla.data.lerobot import INFO, LeRobotDataset, LeRobotWriter, VectorFeature
from vla.data.libero import LIBERO_CHUNK, LIBERO_OBSERVATION_KEYS, LiberoDataset, LiberoTaskInfo, LiberoWriter

DATA_FORMATS = ("auto", "calvin", "libero", "lerobot")
DEFAULT_CHUNK = {"calvin": CALVIN_CHUNK, "libero": LIBERO_CHUNK}
DEFAULT_CAMERAS = {"calvin": ("rgb_static",), "libero": ("agentview_rgb",)}

__all__ = [
    "ACTION_DIM",
    "DATA_FORMATS",
    "DEFAULT_CAMERAS",
    "DEFAULT_CHUNK",
    "IMAGE_SIZE",
    "LIBERO_OBSERVATION_KEYS",
    "CalvinDataset",
    "CalvinWriter",
    "ChunkDataset",
    "LeRobotDataset",
    "LeRobotWriter",
    "LiberoDataset",
    "LiberoTaskInfo",
    "LiberoWriter",
    "Sample",
    "VectorFeature",
    "detect_format",
    "open_dataset",
    "resize_image",
]


def detect_format(path: str | os.PathLike[str]) -> str:
    """ "lerobot", "calvin" or "libero" from the files at ``path``; a clear error when it is none."""
    root = Path(path)
    if (root / INFO).is_file():
        return "lerobot"
    if (root / EPISODES_FILE).is_file() or (root / "training" / EPISODES_FILE).is_file():
        return "calvin"
    if root.suffix in (".hdf5", ".h5") or (root.is_dir() and any(root.rglob("*.hdf5"))):
        return "libero"
    raise ValueError(
        f"cannot tell the format of {root}: expected a LeRobot v3 dataset (with {INFO}), a CALVIN split "
        f"(with {EPISODES_FILE}) or LIBERO .hdf5 files"
    )


def open_dataset(
    path: str | os.PathLike[str],
    *,
    data_format: str = "auto",
    chunk_size: int | None = None,
    cameras: Sequence[str] | None = None,
    image_size: int = IMAGE_SIZE,
    **reader_options: Any,
) -> ChunkDataset:
    """The reader for ``path`` with the published defaults (chunk 10 / 4; static / agent-view camera; a
    LeRobot dataset's defaults follow its action convention, see :mod:`vla.data.lerobot`)."""
    if data_format not in DATA_FORMATS:
        raise ValueError(f"data_format must be one of {DATA_FORMATS}, got {data_format!r}")
    fmt = detect_format(path) if data_format == "auto" else data_format
    if fmt == "lerobot":
        return LeRobotDataset(path, chunk_size, cameras, image_size, **reader_options)
    chunk = chunk_size or DEFAULT_CHUNK[fmt]
    cams = tuple(cameras) if cameras else DEFAULT_CAMERAS[fmt]
    reader = CalvinDataset if fmt == "calvin" else LiberoDataset
    return reader(path, chunk_size=chunk, cameras=cams, image_size=image_size, **reader_options)
