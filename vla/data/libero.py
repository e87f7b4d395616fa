"""LIBERO's HDF5 demonstrations as (images, instruction, action chunk) samples.

One LIBERO file per task (``<TASK_NAME>_demo.hdf5``) holds ``data/demo_<i>/actions`` ``(T, 7)`` (OSC_POSE
deltas in [-1, 1], gripper -1 open / +1 close), ``data/demo_<i>/obs/agentview_rgb`` and
``.../eye_in_hand_rgb`` ``(T, 128, 128, 3)`` uint8, and the language goal in the JSON attribute
``data.attrs["problem_info"]["language_instruction"]``. Frames are stored as MuJoCo renders them, bottom
row first; ``image_orientation`` chooses what the samples carry, with the same choices and default as the
project's LIBERO env (``envs.libero``): "upright" (rows flipped: the true camera image), "rot180" (the
OpenVLA / LeRobot preprocessing, which VLM4VLA's LIBERO training data went through) or "raw".
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from vla.data.common import IMAGE_SIZE, Sample, check_actions, chunk_starts, resize_image, subsample

if TYPE_CHECKING:
    import h5py

LIBERO_CHUNK = 4
LIBERO_CAMERAS = ("agentview_rgb", "eye_in_hand_rgb")
ORIENTATIONS = ("upright", "rot180", "raw")
#: dataset camera key -> observation key of ``envs.libero`` (used by the policy at run time)
LIBERO_OBSERVATION_KEYS = {"agentview_rgb": "agentview_image", "eye_in_hand_rgb": "eye_in_hand_image"}


def libero_files(path: str | os.PathLike[str]) -> list[Path]:
    """``path`` itself if it is a file, else the ``*.hdf5`` files under it, sorted."""
    root = Path(path)
    files = [root] if root.is_file() else sorted(root.rglob("*.hdf5"))
    if not files:
        raise FileNotFoundError(f"no LIBERO .hdf5 demonstration files at {root}")
    return files


def read_instruction(handle: h5py.File, path: Path) -> str:
    raw = handle["data"].attrs.get("problem_info")
    if raw is None:
        raise ValueError(
            f"{path}: data.attrs['problem_info'] is missing, so the task's language goal is unknown"
        )
    info = json.loads(raw if isinstance(raw, str) else raw.decode())
    instruction = str(info.get("language_instruction", "")).strip()
    if not instruction:
        raise ValueError(f"{path}: problem_info has no language_instruction")
    return instruction


def orient(image: np.ndarray, orientation: str) -> np.ndarray:
    if orientation == "upright":
        return image[::-1]
    if orientation == "rot180":
        return image[::-1, ::-1]
    return image


class LiberoDataset:
    """LIBERO demonstrations (one or many task files) as chunked samples.

    Args:
        path: one ``.hdf5`` file or a directory searched recursively.
        chunk_size: future actions per sample (4, as VLM4VLA on LIBERO).
        cameras: ``agentview_rgb`` and/or ``eye_in_hand_rgb``, in order.
        image_size: side of the square images the samples carry.
        image_orientation: see the module docstring.
    """

    data_format = "libero"
    gripper_open_value = -1.0

    def __init__(
        self,
        path: str | os.PathLike[str],
        chunk_size: int = LIBERO_CHUNK,
        cameras: Sequence[str] = ("agentview_rgb",),
        image_size: int = IMAGE_SIZE,
        image_orientation: str = "upright",
    ) -> None:
        import h5py

        self.files = libero_files(path)
        self.chunk_size, self.image_size, self.cameras = int(chunk_size), int(image_size), tuple(cameras)
        if not self.cameras or any(c not in LIBERO_CAMERAS for c in self.cameras):
            raise ValueError(f"LIBERO cameras must be some of {LIBERO_CAMERAS}, got {list(cameras)}")
        if image_orientation not in ORIENTATIONS:
            raise ValueError(f"image_orientation must be one of {ORIENTATIONS}, got {image_orientation!r}")
        self.image_orientation = image_orientation
        self.instructions: list[str] = []
        self.demos: list[tuple[int, str, np.ndarray]] = []  # (file index, demo name, actions)
        self.index: list[tuple[int, int]] = []  # (demo index, start frame)
        for file_index, file in enumerate(self.files):
            with h5py.File(file, "r") as handle:
                self._index_file(handle, file_index, file)
        if not self.index:
            raise ValueError(
                f"{path}: no demonstration is long enough for a chunk of {self.chunk_size} actions"
            )
        self._handles: dict[tuple[int, int], Any] = {}

    def _index_file(self, handle: h5py.File, file_index: int, file: Path) -> None:
        self.instructions.append(read_instruction(handle, file))
        if "data" not in handle:
            raise ValueError(f"{file}: no 'data' group (not a LIBERO demonstration file)")
        names = sorted(
            handle["data"].keys(),
            key=lambda n: int(n.rsplit("_", 1)[-1]) if n.rsplit("_", 1)[-1].isdigit() else n,
        )
        for name in names:
            actions = check_actions(handle["data"][name]["actions"][()], f"{file}:{name}")
            demo = len(self.demos)
            self.demos.append((file_index, name, actions))
            steps = len(actions)
            self.index += [(demo, t) for t in chunk_starts(0, steps - 1, steps - 1, self.chunk_size)]

    def __len__(self) -> int:
        return len(self.index)

    def _handle(self, file_index: int) -> h5py.File:
        # Opened lazily and per process: h5py handles must not cross a fork into data-loader workers.
        key = (os.getpid(), file_index)
        if key not in self._handles:
            import h5py

            self._handles[key] = h5py.File(self.files[file_index], "r")
        return self._handles[key]

    def __getitem__(self, index: int) -> Sample:
        demo, start = self.index[index]
        file_index, name, actions = self.demos[demo]
        obs = self._handle(file_index)["data"][name]["obs"]
        images = [
            resize_image(orient(obs[c][start], self.image_orientation), self.image_size) for c in self.cameras
        ]
        chunk = actions[start : start + self.chunk_size]
        return Sample(images=images, instruction=self.instructions[file_index], actions=chunk.copy())

    def action_samples(self, max_samples: int | None = None, seed: int = 0) -> np.ndarray:
        picks = subsample(len(self), max_samples, seed)
        return np.stack([self.demos[self.index[i][0]][2][self.index[i][1]] for i in picks])

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_handles": {}}
