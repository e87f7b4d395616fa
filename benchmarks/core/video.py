"""MP4 videos of episodes: chosen camera views side by side, with a caption bar (instruction, status)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image, ImageDraw, ImageFont

CAPTION_LINES = 2
LINE_HEIGHT = 17
CAPTION_HEIGHT = CAPTION_LINES * LINE_HEIGHT + 8


def compose_frame(observation: Mapping[str, Any], keys: Sequence[str], caption: str | Sequence[str],
                  height: int = 200) -> np.ndarray:
    """The views under ``keys`` scaled to ``height`` and placed side by side under a caption bar.

    A string caption is word-wrapped; a sequence of strings gives one (truncated) line each.
    """
    views = []
    for key in keys:
        img = Image.fromarray(np.asarray(observation[key], dtype=np.uint8))
        width = max(1, round(img.width * height / img.height))
        views.append(img.resize((width, height), Image.Resampling.NEAREST if img.height < height else
                                Image.Resampling.BILINEAR))
    total_w = sum(v.width for v in views)
    canvas = Image.new("RGB", (total_w + total_w % 2, height + CAPTION_HEIGHT), (20, 20, 20))
    x = 0
    for v in views:
        canvas.paste(v, (x, CAPTION_HEIGHT))
        x += v.width
    draw = ImageDraw.Draw(canvas)
    width = canvas.width - 12
    lines = wrap_caption(caption, width) if isinstance(caption, str) else [
        wrap_caption(line, width, max_lines=1)[0] for line in caption[:CAPTION_LINES]]
    for i, line in enumerate(lines):
        draw.text((6, 4 + i * LINE_HEIGHT), line, fill=(255, 255, 255), font=_font())
    return np.asarray(canvas)


def wrap_caption(text: str, width: float, max_lines: int = CAPTION_LINES) -> list[str]:
    """Greedy word wrap to ``width`` pixels, at most ``max_lines`` lines (the last one ends in '…' if cut)."""
    font, lines, line = _font(), [], ""
    for word in text.split():
        candidate = f"{line} {word}".strip()
        if font.getlength(candidate) <= width or not line:
            line = candidate
        else:
            lines.append(line)
            line = word
    lines.append(line)
    if len(lines) > max_lines:
        last = " ".join(lines[max_lines - 1:])
        while last and font.getlength(last + "…") > width:
            last = last[:-1]
        lines = [*lines[: max_lines - 1], last + "…"]
    return lines


_FONT: Any = None


def _font() -> Any:
    global _FONT
    if _FONT is None:
        _FONT = ImageFont.load_default(size=14)
    return _FONT


class VideoRecorder:
    """Collects composed frames and writes them as an H.264 MP4 (through imageio-ffmpeg)."""

    def __init__(self, path: Path, keys: Sequence[str], fps: int = 15, height: int = 200) -> None:
        self.path, self.keys, self.fps, self.height = Path(path), list(keys), fps, height
        self.frames: list[np.ndarray] = []

    def add(self, observation: Mapping[str, Any], caption: str | Sequence[str]) -> None:
        self.frames.append(compose_frame(observation, self.keys, caption, self.height))

    def write_if_any(self) -> Path | None:
        """Write what was recorded, if anything: called in ``finally`` so that a unit that raised keeps
        its video up to the error."""
        return self.write() if self.frames else None

    def write(self) -> Path:
        import imageio.v2 as imageio

        if not self.frames:
            raise ValueError(f"no frames were recorded for {self.path}")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        imageio.mimwrite(self.path, self.frames, fps=self.fps, codec="libx264", macro_block_size=1,
                         ffmpeg_log_level="error")
        return self.path


def run_recorded(run: Callable[[Any], dict[str, Any]], video: VideoRecorder | None, root: Path) -> dict[str, Any]:
    """``run(on_step)`` with ``video.add`` as its frame hook (``None`` without a video); the video is written
    even when the unit raises, and a written video's path (relative to ``root``) goes into the result."""
    try:
        result = run(video.add if video else None)
    finally:
        written = video.write_if_any() if video else None
    if written:
        result["video"] = str(written.relative_to(root))
    return result
