"""LeRobotDataset v3.0 on disk: a writer for any robot's episodes and a reader of (images, instruction, chunk).

The layout, as LeRobot's loader reads it (codebase version ``v3.0``)::

    meta/info.json                       fps, features (dtype, shape, names; video info), path templates,
                                         totals, robot type, splits
    meta/stats.json                      per feature: min, max, mean, std, count, q01 .. q99 (videos per
                                         channel, in [0, 1], shape (3, 1, 1))
    meta/tasks.parquet                   one row per task: ``task_index``, and the task text as the
                                         (pandas) index named ``task``
    meta/episodes/chunk-000/file-000.parquet
                                         one row per episode: ``episode_index``, ``tasks``, ``length``,
                                         ``data/chunk_index``, ``data/file_index``, ``dataset_from_index``,
                                         ``dataset_to_index`` (exclusive), per camera ``videos/<key>/chunk_index``,
                                         ``.../file_index``, ``.../from_timestamp``, ``.../to_timestamp``,
                                         ``meta/episodes/chunk_index``, ``meta/episodes/file_index`` and the
                                         episode's own statistics ``stats/<feature>/<stat>``
    data/chunk-000/file-000.parquet      one row per frame: each non-video feature (vectors as fixed-size
                                         lists), ``timestamp`` (frame_index / fps), ``frame_index``,
                                         ``episode_index``, ``index`` (global), ``task_index``
    videos/<key>/chunk-000/file-000.mp4  one stream per camera; episodes follow each other, an episode
                                         starting at its ``from_timestamp``

:class:`LeRobotWriter` writes it with pyarrow and the project's MP4 encoder (:mod:`envs.video_files`:
H.264, yuv420p, a keyframe every 2 frames, as LeRobot's own encoder settings do for random access). Each
:meth:`LeRobotWriter.close` leaves a complete dataset; :meth:`LeRobotWriter.append_to` reopens one and adds
episodes in new files, so a generator can finalise after each batch and resume. It knows nothing of
LIBERO or CALVIN: features are given by the caller.

:class:`LeRobotDataset` reads such a dataset (ours or one LeRobot wrote with H.264 or any codec ffmpeg
decodes) as chunked samples for ``vla.train``. Camera names are the video keys without
``observation.images.``; the action is the ``action`` feature. The action convention (``data_format``) is
CALVIN's when every chosen camera has a CALVIN name (``rgb_static``, ``rgb_gripper``), else LIBERO's.
"""

from __future__ import annotations

import json
import os
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from vla.data.common import IMAGE_SIZE, Sample, check_actions, chunk_starts, resize_image, subsample

CODEBASE_VERSION = "v3.0"
INFO, STATS, TASKS = Path("meta/info.json"), Path("meta/stats.json"), Path("meta/tasks.parquet")
CHUNK_FILE = "chunk-{chunk_index:03d}/file-{file_index:03d}"
DATA_PATH = "data/" + CHUNK_FILE + ".parquet"
VIDEO_PATH = "videos/{video_key}/" + CHUNK_FILE + ".mp4"
EPISODES_PATH = "meta/episodes/" + CHUNK_FILE + ".parquet"
CHUNKS_SIZE = 1000  # files per chunk folder
DATA_FILE_MB, VIDEO_FILE_MB = 100, 200  # LeRobot's defaults; a file is closed once past its size
IMAGE_PREFIX = "observation.images."
ACTION_KEY = "action"
QUANTILES = (0.01, 0.10, 0.50, 0.90, 0.99)
VIDEO_CRF, VIDEO_GOP = 18, 2
INDEX_FEATURES = ("timestamp", "frame_index", "episode_index", "index", "task_index")
CALVIN_NAMES = ("rgb_static", "rgb_gripper")


@dataclass(frozen=True)
class VectorFeature:
    """A per-frame float vector (``observation.state``, ``action``, ...), with optional element names."""

    size: int
    names: tuple[str, ...] | None = None


# ------------------------------------------------------------------------------------------ statistics


def feature_stats(values: np.ndarray, axis: int | tuple[int, ...], keepdims: bool) -> dict[str, np.ndarray]:
    """min, max, mean, std, count and the quantiles of ``values`` over ``axis`` (float64)."""
    data = np.asarray(values, dtype=np.float64)
    stats = {
        "min": data.min(axis=axis, keepdims=keepdims),
        "max": data.max(axis=axis, keepdims=keepdims),
        "mean": data.mean(axis=axis, keepdims=keepdims),
        "std": data.std(axis=axis, keepdims=keepdims),
        "count": np.array([data.shape[0]]),
    }
    for q in QUANTILES:
        stats[f"q{round(q * 100):02d}"] = np.quantile(data, q, axis=axis, keepdims=keepdims)
    return stats


def image_stats(frames: np.ndarray, max_frames: int = 100, max_side: int = 64) -> dict[str, np.ndarray]:
    """Per-channel statistics of ``(T, H, W, 3)`` frames in [0, 1], shape ``(3, 1, 1)`` (as LeRobot's),
    from at most ``max_frames`` evenly spaced frames subsampled to about ``max_side`` pixels a side."""
    step = max(1, int(np.ceil(len(frames) / max_frames)))
    stride = max(1, int(np.ceil(max(frames.shape[1:3]) / max_side)))
    sample = frames[::step, ::stride, ::stride].transpose(0, 3, 1, 2) / 255.0  # T, C, H, W
    stats = feature_stats(sample, axis=(0, 2, 3), keepdims=True)
    stats = {k: (v if k == "count" else v[0]) for k, v in stats.items()}
    stats["count"] = np.array([len(sample)])
    return stats


def aggregate_stats(parts: Sequence[Mapping[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """One feature's statistics over several episodes: exact min/max/mean/std, count-weighted quantiles
    (as LeRobot aggregates them)."""
    counts = np.array([float(p["count"][0]) for p in parts])
    weights = counts / counts.sum()
    shape = (-1,) + (1,) * np.asarray(parts[0]["mean"]).ndim
    w = weights.reshape(shape)
    means = np.stack([np.asarray(p["mean"], np.float64) for p in parts])
    mean = (w * means).sum(axis=0)
    second = (w * (np.stack([np.asarray(p["std"], np.float64) for p in parts]) ** 2 + means**2)).sum(axis=0)
    out = {
        "min": np.min(np.stack([p["min"] for p in parts]), axis=0),
        "max": np.max(np.stack([p["max"] for p in parts]), axis=0),
        "mean": mean,
        "std": np.sqrt(np.maximum(second - mean**2, 0.0)),
        "count": np.array([int(counts.sum())]),
    }
    for key in parts[0]:
        if key.startswith("q"):
            out[key] = (w * np.stack([np.asarray(p[key], np.float64) for p in parts])).sum(axis=0)
    return out


def _jsonable(stats: Mapping[str, Mapping[str, np.ndarray]]) -> dict[str, dict[str, Any]]:
    return {f: {k: np.asarray(v).tolist() for k, v in s.items()} for f, s in stats.items()}


def _write_tasks(path: Path, tasks: Mapping[str, int]) -> None:
    """``meta/tasks.parquet``: ``task_index`` and the task text, marked as the pandas index ``task``
    (LeRobot reads the file with pandas and looks tasks up by that index)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    texts = sorted(tasks, key=tasks.__getitem__)
    table = pa.table({"task_index": pa.array([tasks[t] for t in texts], pa.int64()), "task": texts})
    columns = [
        {"name": "task_index", "field_name": "task_index", "pandas_type": "int64", "numpy_type": "int64"},
        {"name": "task", "field_name": "task", "pandas_type": "unicode", "numpy_type": "object"},
    ]
    pandas_meta = {
        "index_columns": ["task"],
        "column_indexes": [],
        "columns": [{**column, "metadata": None} for column in columns],
        "creator": {"library": "pyarrow", "version": pa.__version__},
        "pandas_version": "2.0.0",
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table.replace_schema_metadata({"pandas": json.dumps(pandas_meta)}), path)


def read_tasks(root: Path) -> dict[int, str]:
    """Task text by task index, from ``meta/tasks.parquet``."""
    import pyarrow.parquet as pq

    path = root / TASKS
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing: not a LeRobot v3 dataset")
    table = pq.read_table(path).to_pydict()
    if "task" not in table or "task_index" not in table:
        raise ValueError(f"{path}: expected the columns task and task_index, got {sorted(table)}")
    return {int(i): str(t) for i, t in zip(table["task_index"], table["task"], strict=True)}


def read_info(root: Path) -> dict[str, Any]:
    """``meta/info.json``, checked to be a v3 dataset."""
    path = root / INFO
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing: not a LeRobot v3 dataset")
    info = json.loads(path.read_text())
    version = str(info.get("codebase_version", ""))
    if not version.startswith("v3."):
        raise ValueError(
            f"{path}: codebase_version {version!r}; this reader reads LeRobot v3 datasets (convert v2.1 "
            "datasets with LeRobot's convert_dataset_v21_to_v30)"
        )
    return info


def read_episodes(root: Path, *, with_stats: bool = False) -> list[dict[str, Any]]:
    """The rows of ``meta/episodes/*/*.parquet`` in episode order (without ``stats/`` columns unless asked)."""
    import pyarrow.parquet as pq

    files = sorted((root / "meta" / "episodes").glob("chunk-*/file-*.parquet"))
    if not files:
        raise FileNotFoundError(f"{root / 'meta' / 'episodes'} holds no episode files")
    rows: list[dict[str, Any]] = []
    for file in files:
        table = pq.read_table(file)
        keep = [c for c in table.column_names if with_stats or not c.startswith("stats/")]
        rows += table.select(keep).to_pylist()
    return sorted(rows, key=lambda r: int(r["episode_index"]))


def _episode_stats(row: Mapping[str, Any]) -> dict[str, dict[str, np.ndarray]]:
    """The ``stats/<feature>/<stat>`` columns of an episode row, as arrays by feature."""
    stats: dict[str, dict[str, np.ndarray]] = {}
    for key, value in row.items():
        if key.startswith("stats/"):
            feature, _, stat = key[len("stats/") :].rpartition("/")
            stats.setdefault(feature, {})[stat] = np.asarray(value, np.float64)
    return stats


@dataclass
class _Open:
    """The file one stream is appending to: its chunk and file index, what it holds so far."""

    chunk: int = 0
    file: int = 0
    frames: int = 0  # frames (videos) or rows (data) already in the file
    writer: Any = None


def _next_file(chunk: int, file: int) -> tuple[int, int]:
    return (chunk + 1, 0) if file + 1 >= CHUNKS_SIZE else (chunk, file + 1)


@dataclass
class LeRobotWriter:
    """Write episodes as a LeRobotDataset v3.0 at ``root`` (a new dataset; see :meth:`append_to`).

    Args:
        root: the dataset folder.
        fps: frames per second of the recording.
        cameras: full video keys (``observation.images.<name>``) and their ``(height, width)``.
        vectors: per-frame float features (``observation.state``, ``action``, ...) and their sizes.
        robot_type: written to ``info.json``.
    """

    root: Path
    fps: int
    cameras: dict[str, tuple[int, int]]
    vectors: dict[str, VectorFeature]
    robot_type: str | None = None
    tasks: dict[str, int] = field(default_factory=dict)
    episodes: list[dict[str, Any]] = field(default_factory=list)
    _data: _Open = field(default_factory=_Open)
    _videos: dict[str, _Open] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.root = Path(self.root)
        if ACTION_KEY not in self.vectors:
            raise ValueError(f"a LeRobot dataset needs an {ACTION_KEY!r} feature; got {sorted(self.vectors)}")
        bad = [k for k in self.cameras if not k.startswith(IMAGE_PREFIX)]
        if bad:
            raise ValueError(f"camera keys must start with {IMAGE_PREFIX!r}, got {bad}")
        self._videos = {key: _Open() for key in self.cameras} | self._videos

    @classmethod
    def append_to(cls, root: str | os.PathLike[str]) -> LeRobotWriter:
        """Reopen the dataset at ``root`` to add episodes: new episodes go to new data and video files,
        files no episode refers to (left by an interrupted run) are removed."""
        root = Path(root)
        info = read_info(root)
        features = info["features"]
        cameras = {
            k: (int(f["shape"][0]), int(f["shape"][1])) for k, f in features.items() if f["dtype"] == "video"
        }
        vectors = {
            k: VectorFeature(int(f["shape"][0]), tuple(f["names"]) if f.get("names") else None)
            for k, f in features.items()
            if f["dtype"] != "video" and k not in INDEX_FEATURES
        }
        tasks = {text: index for index, text in read_tasks(root).items()}
        episodes = read_episodes(root, with_stats=True)
        writer = cls(root, int(info["fps"]), cameras, vectors, info.get("robot_type"), tasks, episodes)
        writer._continue_files()
        return writer

    def _continue_files(self) -> None:
        used = {
            Path(DATA_PATH.format(chunk_index=r["data/chunk_index"], file_index=r["data/file_index"]))
            for r in self.episodes
        }
        if self.episodes:
            last = self.episodes[-1]
            chunk, file = _next_file(last["data/chunk_index"], last["data/file_index"])
            self._data = _Open(chunk, file)
            for key in self.cameras:
                chunk, file = _next_file(last[f"videos/{key}/chunk_index"], last[f"videos/{key}/file_index"])
                self._videos[key] = _Open(chunk, file)
                used |= {
                    Path(
                        VIDEO_PATH.format(
                            video_key=key,
                            chunk_index=r[f"videos/{key}/chunk_index"],
                            file_index=r[f"videos/{key}/file_index"],
                        )
                    )
                    for r in self.episodes
                }
        for folder in ("data", "videos"):
            for path in (self.root / folder).rglob("file-*.*"):
                if path.relative_to(self.root) not in used:
                    path.unlink()

    # ---- writing

    def add_episode(self, frames: Mapping[str, np.ndarray], task: str) -> int:
        """Append one episode (every camera key: ``(T, H, W, 3)`` uint8; every vector: ``(T, n)``) with
        its language task; returns its episode index."""
        length = self._check(frames)
        index = len(self.episodes)
        first = int(self.episodes[-1]["dataset_to_index"]) if self.episodes else 0
        task_index = self.tasks.setdefault(task, len(self.tasks))
        columns = self._columns(frames, length, index, first, task_index)
        row: dict[str, Any] = {"episode_index": index, "tasks": [task], "length": length}
        row |= self._write_data(columns, length)
        row |= {"dataset_from_index": first, "dataset_to_index": first + length}
        for key in self.cameras:
            row |= self._write_video(key, frames[key])
        row |= {"meta/episodes/chunk_index": 0, "meta/episodes/file_index": 0}
        stats = {k: feature_stats(v, 0, keepdims=v.ndim == 1) for k, v in columns.items()}
        stats |= {key: image_stats(np.asarray(frames[key])) for key in self.cameras}
        row |= {f"stats/{f}/{s}": np.asarray(v).tolist() for f, st in stats.items() for s, v in st.items()}
        self.episodes.append(row)
        return index

    def _check(self, frames: Mapping[str, np.ndarray]) -> int:
        missing = [k for k in [*self.cameras, *self.vectors] if k not in frames]
        if missing:
            raise ValueError(f"episode lacks the features {missing}")
        length = len(frames[ACTION_KEY])
        if length < 1:
            raise ValueError("an episode needs at least one frame")
        for key, (height, width) in self.cameras.items():
            if np.shape(frames[key]) != (length, height, width, 3):
                raise ValueError(f"{key}: expected {(length, height, width, 3)}, got {np.shape(frames[key])}")
        for key, feature in self.vectors.items():
            if np.shape(frames[key]) != (length, feature.size):
                raise ValueError(f"{key}: expected {(length, feature.size)}, got {np.shape(frames[key])}")
        return length

    def _columns(
        self, frames: Mapping[str, np.ndarray], length: int, episode: int, first: int, task: int
    ) -> dict[str, np.ndarray]:
        steps = np.arange(length)
        columns = {key: np.asarray(frames[key], np.float32) for key in self.vectors}
        return columns | {
            "timestamp": (steps / self.fps).astype(np.float32),
            "frame_index": steps.astype(np.int64),
            "episode_index": np.full(length, episode, np.int64),
            "index": (first + steps).astype(np.int64),
            "task_index": np.full(length, task, np.int64),
        }

    def _write_data(self, columns: Mapping[str, np.ndarray], length: int) -> dict[str, int]:
        import pyarrow as pa
        import pyarrow.parquet as pq

        arrays = {}
        for key, values in columns.items():
            if values.ndim == 2:
                flat = pa.array(values.reshape(-1), pa.float32())
                arrays[key] = pa.FixedSizeListArray.from_arrays(flat, values.shape[1])
            else:
                arrays[key] = pa.array(values)
        table = pa.table(arrays)
        data = self._data
        if data.writer is not None and data.frames * table.nbytes / length > DATA_FILE_MB * 2**20:
            data.writer.close()
            self._data = data = _Open(*_next_file(data.chunk, data.file))
        if data.writer is None:
            path = self.root / DATA_PATH.format(chunk_index=data.chunk, file_index=data.file)
            path.parent.mkdir(parents=True, exist_ok=True)
            data.writer = pq.ParquetWriter(path, table.schema, compression="snappy")
        data.writer.write_table(table)
        data.frames += length
        return {"data/chunk_index": data.chunk, "data/file_index": data.file}

    def _write_video(self, key: str, frames: np.ndarray) -> dict[str, Any]:
        from envs.video_files import Mp4Writer

        video = self._videos[key]
        path = self.root / VIDEO_PATH.format(video_key=key, chunk_index=video.chunk, file_index=video.file)
        if video.writer is not None and path.is_file() and path.stat().st_size > VIDEO_FILE_MB * 2**20:
            video.writer.close()
            self._videos[key] = video = _Open(*_next_file(video.chunk, video.file))
            path = self.root / VIDEO_PATH.format(
                video_key=key, chunk_index=video.chunk, file_index=video.file
            )
        if video.writer is None:
            video.writer = Mp4Writer(path, self.fps, crf=VIDEO_CRF, keyframe_interval=VIDEO_GOP)
        start = video.frames / self.fps
        for frame in frames:
            video.writer.append(frame)
        video.frames += len(frames)
        return {
            f"videos/{key}/chunk_index": video.chunk,
            f"videos/{key}/file_index": video.file,
            f"videos/{key}/from_timestamp": start,
            f"videos/{key}/to_timestamp": video.frames / self.fps,
        }

    # ---- finishing

    def close(self) -> None:
        """Finish the open files and write ``meta/`` (info, stats, tasks, episodes); the folder is then a
        complete dataset. Later episodes (after :meth:`append_to`) go to new files."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        for stream in [self._data, *self._videos.values()]:
            if stream.writer is not None:
                stream.writer.close()
                stream.writer = None
        if not self.episodes:
            raise ValueError(f"{self.root}: no episode was written")
        path = self.root / EPISODES_PATH.format(chunk_index=0, file_index=0)
        path.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.Table.from_pylist(self.episodes), path)
        _write_tasks(self.root / TASKS, self.tasks)
        (self.root / STATS).write_text(json.dumps(_jsonable(self.stats()), indent=1) + "\n")
        (self.root / INFO).write_text(json.dumps(self.info(), indent=4) + "\n")
        self._data = _Open(*_next_file(self._data.chunk, self._data.file))
        self._videos = {k: _Open(*_next_file(v.chunk, v.file)) for k, v in self._videos.items()}

    def stats(self) -> dict[str, dict[str, np.ndarray]]:
        """Dataset statistics per feature, aggregated over the episodes' own."""
        per_episode = [_episode_stats(row) for row in self.episodes]
        return {f: aggregate_stats([e[f] for e in per_episode]) for f in per_episode[0]}

    def info(self) -> dict[str, Any]:
        frames = int(self.episodes[-1]["dataset_to_index"]) if self.episodes else 0
        return {
            "codebase_version": CODEBASE_VERSION,
            "robot_type": self.robot_type,
            "total_episodes": len(self.episodes),
            "total_frames": frames,
            "total_tasks": len(self.tasks),
            "chunks_size": CHUNKS_SIZE,
            "data_files_size_in_mb": DATA_FILE_MB,
            "video_files_size_in_mb": VIDEO_FILE_MB,
            "fps": self.fps,
            "splits": {"train": f"0:{len(self.episodes)}"},
            "data_path": DATA_PATH,
            "video_path": VIDEO_PATH,
            "features": self.features(),
        }

    def features(self) -> dict[str, dict[str, Any]]:
        out: dict[str, dict[str, Any]] = {}
        for key, (height, width) in self.cameras.items():
            out[key] = {
                "dtype": "video",
                "shape": [height, width, 3],
                "names": ["height", "width", "channels"],
                "info": {
                    "video.height": height,
                    "video.width": width,
                    "video.codec": "h264",
                    "video.pix_fmt": "yuv420p",
                    "video.is_depth_map": False,
                    "video.fps": self.fps,
                    "video.channels": 3,
                    "has_audio": False,
                },
            }
        for key, vector in self.vectors.items():
            names = list(vector.names) if vector.names else None
            out[key] = {"dtype": "float32", "shape": [vector.size], "names": names}
        out["timestamp"] = {"dtype": "float32", "shape": [1], "names": None}
        for key in INDEX_FEATURES[1:]:
            out[key] = {"dtype": "int64", "shape": [1], "names": None}
        return out


# ------------------------------------------------------------------------------------------ reader


def camera_name(key: str) -> str:
    """``observation.images.agentview_rgb`` -> ``agentview_rgb``."""
    return key.removeprefix(IMAGE_PREFIX)


class LeRobotDataset:
    """A LeRobotDataset v3 folder as chunked samples (images at ``t``, the episode's task, actions ``t ..``).

    Args:
        path: the dataset folder (holding ``meta/info.json``).
        chunk_size: future actions per sample (default: 10 for CALVIN's convention, 4 for LIBERO's).
        cameras: camera names (video keys with or without ``observation.images.``), in order; default the
            first video feature.
        image_size: side of the square images the samples carry.
        cache_mb: decoded episode videos kept in memory per process (least recently used dropped first);
            a sample of an episode not in the cache decodes that episode's segment of the MP4.
    """

    gripper_open_value: float

    def __init__(
        self,
        path: str | os.PathLike[str],
        chunk_size: int | None = None,
        cameras: Sequence[str] | None = None,
        image_size: int = IMAGE_SIZE,
        cache_mb: float = 1024.0,
    ) -> None:
        self.root = Path(path)
        self.info = read_info(self.root)
        self.fps = float(self.info["fps"])
        self.cameras = self._cameras(cameras)
        self.data_format = "calvin" if all(c in CALVIN_NAMES for c in self.cameras) else "libero"
        self.gripper_open_value = 1.0 if self.data_format == "calvin" else -1.0
        self.chunk_size = int(chunk_size or (10 if self.data_format == "calvin" else 4))
        self.image_size, self.cache_bytes = int(image_size), int(cache_mb * 2**20)
        tasks = read_tasks(self.root)
        self.episodes = read_episodes(self.root)
        self.actions, task_of_frame = self._frames()
        self.instructions = {
            int(e["episode_index"]): tasks[int(task_of_frame[e["dataset_from_index"]])] for e in self.episodes
        }
        self.index = [
            (row, t)
            for row, e in enumerate(self.episodes)
            for t in chunk_starts(
                e["dataset_from_index"], e["dataset_to_index"] - 1, e["dataset_to_index"] - 1, self.chunk_size
            )
        ]
        if not self.index:
            raise ValueError(
                f"{self.root}: no episode is long enough for a chunk of {self.chunk_size} actions"
            )
        self._cache: OrderedDict[tuple[str, int], np.ndarray] = OrderedDict()

    def _cameras(self, cameras: Sequence[str] | None) -> tuple[str, ...]:
        videos = [camera_name(k) for k, f in self.info["features"].items() if f.get("dtype") == "video"]
        if not videos:
            raise ValueError(f"{self.root}: the dataset has no video feature (images stored as video)")
        chosen = tuple(camera_name(c) for c in cameras) if cameras else (videos[0],)
        unknown = [c for c in chosen if c not in videos]
        if unknown:
            raise ValueError(f"{self.root}: no camera {unknown}; the dataset's cameras are {videos}")
        return chosen

    def _frames(self) -> tuple[np.ndarray, np.ndarray]:
        """Every frame's action and task index, by global frame index (read from the data files)."""
        import pyarrow.parquet as pq

        if ACTION_KEY not in self.info["features"]:
            raise ValueError(f"{self.root}: the dataset has no {ACTION_KEY!r} feature")
        total = int(self.episodes[-1]["dataset_to_index"])
        actions, tasks = np.zeros((total, 0), np.float32), np.zeros(total, np.int64)
        files = sorted({(int(e["data/chunk_index"]), int(e["data/file_index"])) for e in self.episodes})
        for chunk, file in files:
            path = self.root / self.info["data_path"].format(chunk_index=chunk, file_index=file)
            table = pq.read_table(path, columns=[ACTION_KEY, "index", "task_index"]).to_pydict()
            rows = np.asarray(table["index"], np.int64)
            values = check_actions(np.asarray(table[ACTION_KEY], np.float32), str(path))
            if actions.shape[1] == 0:
                actions = np.zeros((total, values.shape[1]), np.float32)
            actions[rows], tasks[rows] = values, np.asarray(table["task_index"], np.int64)
        return actions, tasks

    def __len__(self) -> int:
        return len(self.index)

    def __getitem__(self, index: int) -> Sample:
        row, frame = self.index[index]
        episode = self.episodes[row]
        offset = frame - int(episode["dataset_from_index"])
        images = [resize_image(self._video(camera, row)[offset], self.image_size) for camera in self.cameras]
        actions = self.actions[frame : frame + self.chunk_size].copy()
        return Sample(
            images=images, instruction=self.instructions[int(episode["episode_index"])], actions=actions
        )

    def _video(self, camera: str, row: int) -> np.ndarray:
        """The decoded frames of episode ``row`` from ``camera``'s video (cached)."""
        from envs.video_files import read_mp4_frames

        key = (camera, row)
        if key in self._cache:
            self._cache.move_to_end(key)
            return self._cache[key]
        episode, feature = self.episodes[row], IMAGE_PREFIX + camera
        path = self.root / self.info["video_path"].format(
            video_key=feature,
            chunk_index=episode[f"videos/{feature}/chunk_index"],
            file_index=episode[f"videos/{feature}/file_index"],
        )
        first = round(float(episode[f"videos/{feature}/from_timestamp"]) * self.fps)
        frames = read_mp4_frames(path, first, int(episode["length"]), self.fps)
        self._cache[key] = frames
        while sum(f.nbytes for f in self._cache.values()) > self.cache_bytes and len(self._cache) > 1:
            self._cache.popitem(last=False)
        return frames

    def action_samples(self, max_samples: int | None = None, seed: int = 0) -> np.ndarray:
        picks = subsample(len(self), max_samples, seed)
        return np.stack([self.actions[self.index[i][1]] for i in picks])

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_cache": OrderedDict()}  # data-loader workers decode for themselves
