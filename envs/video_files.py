"""H.264 MP4 files through imageio-ffmpeg: one writer for episode videos and datasets, one frame reader.

Episode videos (``benchmarks.core.video``) and dataset videos (the LeRobot v3 writer in ``vla.data``)
are encoded here, the same way: libx264, 8-bit 4:2:0, frames of any even or odd size kept as they are.
A dataset video also sets a short keyframe interval, so that reading a few frames from the middle of a
file decodes at most that many extra frames.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

CODEC = "libx264"
PIX_FMT = "yuv420p"


class Mp4Writer:
    """Append RGB frames (``H x W x 3`` uint8, one size per file) to an H.264 MP4 as they come.

    Args:
        path: the file to write (its folder is created).
        fps: frames per second of the stream (frame ``i`` is shown at ``i / fps`` seconds).
        crf: x264's constant rate factor (0 lossless .. 51 worst; ``None``: imageio's default, about 25).
        keyframe_interval: frames between keyframes (``None``: x264's default, up to 250).
    """

    def __init__(
        self, path: str | Path, fps: float, *, crf: int | None = None, keyframe_interval: int | None = None
    ) -> None:
        self.path, self.fps = Path(path), fps
        self.crf, self.keyframe_interval = crf, keyframe_interval
        self.frames = 0
        self._stream: Any = None  # imageio-ffmpeg's frame-writing generator
        self._size: tuple[int, int] | None = None

    def append(self, frame: np.ndarray) -> None:
        """Encode one frame; the first frame fixes the file's size."""
        image = np.ascontiguousarray(np.asarray(frame, dtype=np.uint8))
        if image.ndim != 3 or image.shape[2] != 3:
            raise ValueError(f"{self.path}: video frames must be H x W x 3, got shape {image.shape}")
        size = (image.shape[1], image.shape[0])
        if self._stream is None:
            self._open(size)
        elif size != self._size:
            raise ValueError(f"{self.path}: frame size {size} differs from the file's {self._size}")
        self._stream.send(image)
        self.frames += 1

    def _open(self, size: tuple[int, int]) -> None:
        import imageio_ffmpeg

        self.path.parent.mkdir(parents=True, exist_ok=True)
        params = [] if self.keyframe_interval is None else ["-g", str(self.keyframe_interval)]
        self._stream = imageio_ffmpeg.write_frames(
            str(self.path),
            size,
            fps=self.fps,
            codec=CODEC,
            pix_fmt_out=PIX_FMT,
            quality=None if self.crf is not None else 5,
            output_params=[*params, *(["-crf", str(self.crf)] if self.crf is not None else [])],
            macro_block_size=1,
            ffmpeg_log_level="error",
        )
        self._stream.send(None)  # starts ffmpeg
        self._size = size

    def close(self) -> None:
        """Finish the file (nothing is written when no frame came)."""
        if self._stream is not None:
            self._stream.close()
            self._stream = None


def write_mp4(path: str | Path, frames: Iterable[np.ndarray], fps: float, **options: Any) -> Path:
    """Write ``frames`` as an MP4 at ``path`` (options: :class:`Mp4Writer`'s); returns the path."""
    writer = Mp4Writer(path, fps, **options)
    try:
        for frame in frames:
            writer.append(frame)
    finally:
        writer.close()
    if not writer.frames:
        raise ValueError(f"no frames to write to {path}")
    return writer.path


def read_mp4_frames(path: str | Path, first: int, count: int, fps: float) -> np.ndarray:
    """Frames ``first .. first + count - 1`` of an MP4 written at ``fps``, as ``(count, H, W, 3)`` uint8.

    ffmpeg seeks to half a frame before frame ``first`` (a seek before the input decodes from the keyframe
    before and drops what precedes the seek time), so the first frame returned is frame ``first``."""
    import imageio_ffmpeg

    if not Path(path).is_file():
        raise FileNotFoundError(f"video file {path} does not exist")
    seek = [] if first <= 0 else ["-ss", f"{(first - 0.5) / fps:.6f}"]
    reader = imageio_ffmpeg.read_frames(str(path), input_params=seek, output_params=["-frames:v", str(count)])
    try:
        meta = next(reader)
        width, height = meta["size"]
        frames = [np.frombuffer(raw, np.uint8).reshape(height, width, 3) for raw in reader]
    finally:
        reader.close()
    if len(frames) != count:
        raise ValueError(f"{path}: expected {count} frames from frame {first}, the file holds {len(frames)}")
    return np.stack(frames)
