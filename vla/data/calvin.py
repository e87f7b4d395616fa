"""CALVIN's dataset layout: reader (language-annotated action chunks) and writer.

A CALVIN split directory (``task_D_D/training`` or ``.../validation``) holds:

- ``episode_XXXXXXX.npz``, one per frame (global 7-digit index), with ``rgb_static`` (200x200x3),
  ``rgb_gripper`` (84x84x3), ``rel_actions`` (7: position x 0.02 m, orientation x 0.05 rad, gripper
  1 open / -1 close) taken at that frame, ``robot_obs`` (15), ``scene_obs`` (24), and optionally
  ``actions`` (absolute), ``depth_static``, ``depth_gripper``;
- ``ep_start_end_ids.npy``: ``(E, 2)`` first and last frame (inclusive) of each recorded episode;
- ``lang_annotations/auto_lang_ann.npy``: a pickled dict ``{"language": {"ann": [str], "task": [str],
  "emb": (N, 1, 384)}, "info": {"episodes": [], "indx": [(first, last), ...]}}``, one entry per
  annotated window (frames inclusive).

:class:`CalvinDataset` yields one sample per annotated frame ``t`` whose chunk ``t .. t+chunk-1`` stays
inside its recorded episode (this project's readers use ``ann``). :class:`CalvinWriter` writes the same
layout without ``emb`` and CALVIN's ``statistics.yaml``: sentence embeddings need a language model, and
:func:`vla.data.calvin_embed.write_embeddings` adds them (with the validation split's ``embeddings.npy``)
once the writer is closed, as the generators do with ``--lang-encoder``.
"""

from __future__ import annotations

import bisect
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from envs.files import load_pickled_npy
from vla.data.common import IMAGE_SIZE, Sample, check_actions, chunk_starts, resize_image, subsample

CALVIN_CHUNK = 10
CALVIN_CAMERAS = ("rgb_static", "rgb_gripper")
LANG_FILE = Path("lang_annotations") / "auto_lang_ann.npy"
EPISODES_FILE = "ep_start_end_ids.npy"
REQUIRED_FRAME_KEYS = ("rgb_static", "rgb_gripper", "rel_actions", "robot_obs", "scene_obs")
OPTIONAL_FRAME_KEYS = ("actions", "depth_static", "depth_gripper")


def frame_path(root: Path, index: int) -> Path:
    return root / f"episode_{index:07d}.npz"


def find_split(path: str | os.PathLike[str], split: str = "training") -> Path:
    """The split directory: ``path`` itself when it holds ``ep_start_end_ids.npy``, else ``path/split``."""
    root = Path(path)
    if (root / EPISODES_FILE).is_file():
        return root
    if (root / split / EPISODES_FILE).is_file():
        return root / split
    raise FileNotFoundError(
        f"{root} is not a CALVIN dataset: neither {root / EPISODES_FILE} nor {root / split / EPISODES_FILE} exists"
    )


def load_language(root: Path) -> tuple[list[tuple[int, int]], list[str], list[str]]:
    """Annotated windows (inclusive), their instructions and task names from ``auto_lang_ann.npy``."""
    path = root / LANG_FILE
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing: VLA training needs CALVIN's language annotations")
    data = load_pickled_npy(path)  # a pickled dict, read through an allow-list: a crafted file runs nothing
    try:
        windows = [(int(a), int(b)) for a, b in data["info"]["indx"]]
        anns, tasks = [str(s) for s in data["language"]["ann"]], [str(s) for s in data["language"]["task"]]
        embedded = len(data["language"]["emb"]) if "emb" in data["language"] else len(anns)
    except (KeyError, TypeError, ValueError) as err:
        raise ValueError(
            f"{path}: not CALVIN's auto_lang_ann layout (info.indx, language.ann/task/emb): {err}"
        ) from err
    if not (len(windows) == len(anns) == len(tasks) == embedded):
        raise ValueError(
            f"{path}: {len(windows)} windows but {len(anns)} instructions, {len(tasks)} tasks and "
            f"{embedded} embeddings (language.emb, when present)"
        )
    return windows, anns, tasks


class CalvinDataset:
    """Language-annotated CALVIN frames as (images, instruction, action chunk) samples.

    Args:
        path: a split directory, or a dataset root with a ``split`` subdirectory.
        chunk_size: future actions per sample (10, as VLM4VLA on CALVIN).
        cameras: image keys, in order (VLM4VLA uses ``rgb_static`` only: ``use_hand_rgb`` is false).
        image_size: side of the square images the samples carry.
        split: subdirectory used when ``path`` is a dataset root.
    """

    data_format = "calvin"
    gripper_open_value = 1.0

    def __init__(
        self,
        path: str | os.PathLike[str],
        chunk_size: int = CALVIN_CHUNK,
        cameras: Sequence[str] = ("rgb_static",),
        image_size: int = IMAGE_SIZE,
        split: str = "training",
    ) -> None:
        self.root = find_split(path, split)
        self.chunk_size, self.image_size = int(chunk_size), int(image_size)
        self.cameras = tuple(cameras)
        unknown = [c for c in self.cameras if c not in CALVIN_CAMERAS]
        if unknown or not self.cameras:
            raise ValueError(f"CALVIN cameras must be some of {CALVIN_CAMERAS}, got {list(cameras)}")
        episodes = np.asarray(np.load(self.root / EPISODES_FILE, allow_pickle=False), dtype=np.int64).reshape(
            -1, 2
        )
        self.episodes = episodes[np.argsort(episodes[:, 0])]
        self._episode_starts = self.episodes[:, 0].tolist()
        windows, self.instructions, self.tasks = load_language(self.root)
        self.index = self._build_index(windows)
        self._actions: np.ndarray | None = None  # rel_actions by frame, filled as frames are read
        if not self.index:
            raise ValueError(f"{self.root}: no annotated frame has a full chunk of {self.chunk_size} actions")
        self._check_frames()

    def _check_frames(self) -> None:
        """Every frame a sample reads is there, checked once against one directory listing (a gap would
        otherwise surface mid-training, in a data-loader worker)."""
        present = {name for name in os.listdir(self.root) if name.startswith("episode_")}
        needed = sorted({t for frame, _ in self.index for t in range(frame, frame + self.chunk_size)})
        missing = [t for t in needed if frame_path(self.root, t).name not in present]
        if missing:
            raise FileNotFoundError(
                f"{frame_path(self.root, missing[0])} is missing ({len(missing)} of the {len(needed)} frame "
                f"files the annotated windows read are absent); restore the split or generate it again"
            )

    def _episode_end(self, frame: int) -> int:
        row = bisect.bisect_right(self._episode_starts, frame) - 1
        if row < 0 or frame > self.episodes[row, 1]:
            raise ValueError(
                f"{self.root}: annotated frame {frame} lies outside every episode in {EPISODES_FILE}"
            )
        return int(self.episodes[row, 1])

    def _build_index(self, windows: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
        index = []
        for ann, (first, last) in enumerate(windows):
            limit = self._episode_end(first)
            index += [(frame, ann) for frame in chunk_starts(first, last, limit, self.chunk_size)]
        return index

    def __len__(self) -> int:
        return len(self.index)

    def _frame(self, frame: int, keys: Iterable[str]) -> dict[str, np.ndarray]:
        path = frame_path(self.root, frame)
        if not path.is_file():
            raise FileNotFoundError(f"{path} is missing (frame {frame} of {self.root})")
        with np.load(path, allow_pickle=False) as npz:
            missing = [k for k in keys if k not in npz.files]
            if missing:
                raise KeyError(f"{path} has no {missing}; it has {sorted(npz.files)}")
            return {k: npz[k] for k in keys}

    def frame_action(self, frame: int) -> np.ndarray:
        """``rel_actions`` of one frame; kept in memory after the first read (a frame belongs to up to
        ``chunk_size`` chunks, and opening its file again for each costs more than the image it holds)."""
        if self._actions is None:
            self._actions = np.full((int(self.episodes[:, 1].max()) + 1, 7), np.nan, dtype=np.float32)
        row = self._actions[frame]
        if np.isnan(row[0]):
            row[:] = check_actions(
                self._frame(frame, ("rel_actions",))["rel_actions"][None], f"{self.root} frame {frame}"
            )[0]
        return row

    def chunk_actions(self, frame: int) -> np.ndarray:
        rows = [self.frame_action(t) for t in range(frame, frame + self.chunk_size)]
        return np.stack(rows)

    def __getitem__(self, index: int) -> Sample:
        frame, ann = self.index[index]
        arrays = self._frame(frame, self.cameras)
        images = [resize_image(arrays[c], self.image_size) for c in self.cameras]
        return Sample(images=images, instruction=self.instructions[ann], actions=self.chunk_actions(frame))

    def action_samples(self, max_samples: int | None = None, seed: int = 0) -> np.ndarray:
        """One file read per frame: ``rel_actions`` of each picked sample's frame, ``(N, 7)``."""
        picks = subsample(len(self), max_samples, seed)
        frames = [self.index[i][0] for i in picks]
        return check_actions(
            np.stack([self._frame(t, ("rel_actions",))["rel_actions"] for t in frames]), str(self.root)
        )


class CalvinWriter:
    """Writes episodes in CALVIN's layout under ``root`` (a split directory); call :meth:`close` at the end.

    Frames are numbered globally from ``first_index``; each episode becomes one ``ep_start_end_ids`` row
    and one language annotation covering all its frames. ``cameras`` are the image keys every frame must
    carry: both, as in CALVIN's datasets, unless a generator renders only one view (readers then ask only
    for that one).
    """

    def __init__(
        self, root: str | os.PathLike[str], first_index: int = 0, cameras: Sequence[str] = CALVIN_CAMERAS
    ) -> None:
        unknown = [c for c in cameras if c not in CALVIN_CAMERAS]
        if unknown or not cameras:
            raise ValueError(f"CalvinWriter cameras must be some of {CALVIN_CAMERAS}, got {list(cameras)}")
        self.cameras = tuple(cameras)
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        if any(self.root.glob("episode_*.npz")):
            raise FileExistsError(f"{self.root} already holds CALVIN frames; write into an empty directory")
        self.next_index = int(first_index)
        self.episodes: list[tuple[int, int]] = []
        self.windows: list[tuple[int, int]] = []
        self.language: dict[str, list[str]] = {"ann": [], "task": []}
        self._open_start: int | None = None

    def begin_episode(self) -> None:
        if self._open_start is not None:
            raise RuntimeError("begin_episode called twice without end_episode")
        self._open_start = self.next_index

    def add_frame(self, frame: Mapping[str, Any]) -> int:
        """Write one frame (the keys of :data:`REQUIRED_FRAME_KEYS`, optionally the optional ones)."""
        if self._open_start is None:
            raise RuntimeError("add_frame called outside begin_episode / end_episode")
        arrays = _frame_arrays(frame, self.next_index, self.cameras)
        np.savez_compressed(frame_path(self.root, self.next_index), **arrays)
        self.next_index += 1
        return self.next_index - 1

    def end_episode(self, task: str | None, instruction: str | None = None) -> tuple[int, int]:
        """Close the episode and annotate all its frames with ``task`` / ``instruction`` (``task`` None:
        leave it unannotated, its windows given by :meth:`annotate`, as in play data)."""
        start, self._open_start = self._open_start, None
        if start is None or start == self.next_index:
            raise RuntimeError("end_episode called without an open episode that has frames")
        self.episodes.append((start, self.next_index - 1))
        if task is not None:
            self.annotate(*self.episodes[-1], task, instruction or "")
        return self.episodes[-1]

    def annotate(self, first: int, last: int, task: str, instruction: str) -> None:
        """Add a language window over frames ``first .. last`` (inclusive, already written)."""
        if not 0 <= first <= last < self.next_index:
            raise ValueError(
                f"annotation window ({first}, {last}) is outside the {self.next_index} frames written"
            )
        self.windows.append((first, last))
        self.language["ann"].append(instruction)
        self.language["task"].append(task)

    def write_episode(
        self, frames: Iterable[Mapping[str, Any]], task: str, instruction: str
    ) -> tuple[int, int]:
        self.begin_episode()
        for frame in frames:
            self.add_frame(frame)
        return self.end_episode(task, instruction)

    def close(self) -> Path:
        if self._open_start is not None:
            raise RuntimeError("close called with an episode still open")
        np.save(self.root / EPISODES_FILE, np.asarray(self.episodes, dtype=np.int64).reshape(-1, 2))
        (self.root / LANG_FILE).parent.mkdir(exist_ok=True)
        annotations = {
            "language": {k: list(v) for k, v in self.language.items()},
            "info": {"episodes": [], "indx": list(self.windows)},
        }
        np.save(self.root / LANG_FILE, np.asarray(annotations, dtype=object), allow_pickle=True)
        return self.root


def _frame_arrays(
    frame: Mapping[str, Any], index: int, cameras: Sequence[str] = CALVIN_CAMERAS
) -> dict[str, np.ndarray]:
    required = [k for k in REQUIRED_FRAME_KEYS if k not in CALVIN_CAMERAS or k in cameras]
    missing = [k for k in required if k not in frame]
    extra = sorted(set(frame) - set(required) - set(OPTIONAL_FRAME_KEYS))
    if missing or extra:
        raise KeyError(
            f"CALVIN frame {index}: missing {missing}, unknown {extra}; keys are "
            f"{tuple(required)} + optional {OPTIONAL_FRAME_KEYS}"
        )
    arrays = {k: np.asarray(v) for k, v in frame.items()}
    for key in cameras:
        if arrays[key].dtype != np.uint8 or arrays[key].ndim != 3:
            raise ValueError(
                f"CALVIN frame {index}: {key} must be uint8 H x W x 3, got {arrays[key].dtype} {arrays[key].shape}"
            )
    rel = arrays["rel_actions"].astype(np.float64)
    if rel.shape != (7,) or abs(rel[6]) != 1.0:
        raise ValueError(
            f"CALVIN frame {index}: rel_actions must be 7 values with gripper exactly -1 or 1, got {rel}"
        )
    if np.any(np.abs(rel[:6]) > 1.0):
        raise ValueError(
            f"CALVIN frame {index}: rel_actions arm values must lie in [-1, 1] (CALVIN clips them), got {rel}"
        )
    return arrays
