"""Turning item media (paths, encoded bytes, video files) into images for a model's messages."""

from __future__ import annotations

import io
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypeGuard

from benchmarks.static.items import Media
from policies.config_cli import InputError

VIDEO_SUFFIXES = (".mp4", ".avi", ".mov", ".mkv", ".webm")


def _open(media: Media) -> Any:
    from PIL import Image

    return Image.open(io.BytesIO(media) if isinstance(media, bytes) else media)


def image_size(media: Media) -> tuple[int, int]:
    """(width, height) read from the file header."""
    with _open(media) as image:
        return image.size


def load_image(media: Media) -> Any:
    """An RGB ``PIL.Image``."""
    with _open(media) as image:
        return image.convert("RGB")


def is_video(media: Media) -> TypeGuard[str]:
    """A video file path (by suffix)."""
    return isinstance(media, str) and Path(media).suffix.lower() in VIDEO_SUFFIXES


def video_frames(path: str, count: int) -> list[Any]:
    """``count`` frames sampled uniformly over a video (needs imageio with ffmpeg)."""
    try:
        import imageio.v3 as iio
    except ImportError as error:
        raise InputError(
            f"reading video {path} needs imageio[ffmpeg]: pip install imageio imageio-ffmpeg ({error})"
        ) from None
    from PIL import Image

    frames = iio.imread(path, plugin="pyav") if _has_pyav() else iio.imread(path)
    picks = uniform_indices(len(frames), count)
    return [Image.fromarray(frames[i]).convert("RGB") for i in picks]


def _has_pyav() -> bool:
    try:
        import av  # noqa: F401
    except ImportError:
        return False
    return True


def uniform_indices(total: int, count: int) -> list[int]:
    """``count`` indices spread evenly over ``range(total)`` (all of them when there are fewer)."""
    if total <= count:
        return list(range(total))
    return [round(i * (total - 1) / (count - 1)) for i in range(count)] if count > 1 else [0]


def load_media(media: Sequence[Media], video_frame_count: int) -> list[Any]:
    """All images of an item: image files and bytes as they are, videos as sampled frames."""
    images: list[Any] = []
    for entry in media:
        images.extend(video_frames(entry, video_frame_count) if is_video(entry) else [load_image(entry)])
    return images
