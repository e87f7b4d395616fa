"""LIBERO's HDF5 demonstrations as (images, instruction, action chunk) samples.

One LIBERO file per task (``<TASK_NAME>_demo.hdf5``) holds ``data/demo_<i>/actions`` ``(T, 7)`` (OSC_POSE
deltas in [-1, 1], gripper -1 open / +1 close), ``data/demo_<i>/obs/agentview_rgb`` and
``.../eye_in_hand_rgb`` ``(T, 128, 128, 3)`` uint8, and the language goal in the JSON attribute
``data.attrs["problem_info"]["language_instruction"]``. Frames are stored as MuJoCo renders them, bottom
row first; ``image_orientation`` chooses what the samples carry, with the same choices and default as the
project's LIBERO env (``envs.libero``): "upright" (rows flipped: the true camera image), "rot180" (the
OpenVLA / LeRobot preprocessing, which VLM4VLA's LIBERO training data went through) or "raw".

:class:`LiberoWriter` writes such a file the way LIBERO's ``create_dataset.py`` does: the ``data`` group's
attributes (``env_name``, ``problem_info``, ``macros_image_convention`` "opengl", ``bddl_file_name``,
``bddl_file_content``, ``env_args``, ``num_demos``, ``total``) and per demonstration ``actions``,
``states`` (the flattened MuJoCo state: time, qpos, qvel), ``robot_states`` (gripper qpos, end-effector
position and quaternion), ``rewards`` and ``dones`` (``uint8``, 1 at the last step), ``obs/agentview_rgb``,
``obs/eye_in_hand_rgb`` (raw frames, bottom row first), ``obs/gripper_states``, ``obs/joint_states``,
``obs/ee_states`` (position + axis-angle), ``obs/ee_pos``, ``obs/ee_ori``, and the attributes
``num_samples``, ``model_file`` (the MuJoCo XML) and ``init_state``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
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
DEMO_KEYS = ("actions", "states", "robot_states", "rewards", "dones")
OBS_KEYS = (
    "agentview_rgb",
    "eye_in_hand_rgb",
    "gripper_states",
    "joint_states",
    "ee_states",
    "ee_pos",
    "ee_ori",
)
PARTIAL = ".partial"  # suffix of a task file still being written


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


@dataclass(frozen=True)
class LiberoTaskInfo:
    """What a LIBERO task file says about its task (the ``data`` group's attributes)."""

    instruction: str
    problem_name: str
    domain_name: str
    bddl_file: str
    bddl_content: str
    env_kwargs: dict[str, Any]


class LiberoWriter:
    """One task's demonstrations as a LIBERO HDF5 file (layout in the module docstring).

    The file is written as ``<path>.partial`` and renamed to ``path`` by :meth:`close`, so a file under
    its final name is complete."""

    def __init__(self, path: str | os.PathLike[str], task: LiberoTaskInfo) -> None:
        import h5py

        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.partial = self.path.with_name(self.path.name + PARTIAL)
        self.handle = h5py.File(self.partial, "w")
        self.group = self.handle.create_group("data")
        self.demos, self.total = 0, 0
        problem = {
            "problem_name": task.problem_name,
            "domain_name": task.domain_name,
            "language_instruction": task.instruction,
        }
        env_args = {
            "type": 1,
            "env_name": task.problem_name,
            "problem_name": task.problem_name,
            "bddl_file": task.bddl_file,
            "env_kwargs": task.env_kwargs,
        }
        attrs = self.group.attrs
        attrs["env_name"] = task.problem_name
        attrs["problem_info"] = json.dumps(problem)
        attrs["macros_image_convention"] = "opengl"
        attrs["bddl_file_name"] = task.bddl_file
        attrs["bddl_file_content"] = task.bddl_content
        attrs["env_args"] = json.dumps(env_args)

    def add_demo(self, demo: dict[str, Any], model_file: str) -> str:
        """Write ``demo`` (``DEMO_KEYS`` arrays and an ``obs`` dict of ``OBS_KEYS`` arrays, one row per
        step) as ``data/demo_<i>``; returns its name."""
        missing = [k for k in DEMO_KEYS if k not in demo] + [
            f"obs/{k}" for k in OBS_KEYS if k not in demo["obs"]
        ]
        if missing:
            raise ValueError(f"{self.path}: demonstration lacks {missing}")
        steps = len(demo["actions"])
        name = f"demo_{self.demos}"
        group = self.group.create_group(name)
        for key in DEMO_KEYS:
            group.create_dataset(key, data=_rows(demo[key], steps, key))
        obs = group.create_group("obs")
        for key in OBS_KEYS:
            obs.create_dataset(key, data=_rows(demo["obs"][key], steps, f"obs/{key}"))
        group.attrs["num_samples"] = steps
        group.attrs["model_file"] = model_file
        group.attrs["init_state"] = np.asarray(demo["states"][0])
        self.demos += 1
        self.total += steps
        return name

    def close(self) -> Path:
        """Write the totals, close the file and give it its final name."""
        self.group.attrs["num_demos"] = self.demos
        self.group.attrs["total"] = self.total
        self.handle.close()
        os.replace(self.partial, self.path)
        return self.path

    def discard(self) -> None:
        """Close and delete an unfinished file."""
        self.handle.close()
        self.partial.unlink(missing_ok=True)


def _rows(values: Any, steps: int, key: str) -> np.ndarray:
    array = np.asarray(values)
    if len(array) != steps:
        raise ValueError(f"{key} has {len(array)} rows for {steps} actions")
    return array
