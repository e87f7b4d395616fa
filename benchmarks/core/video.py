"""MP4 videos of episodes: chosen camera views side by side, with a caption bar (instruction, status)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from envs.video_files import write_mp4

if TYPE_CHECKING:
    from benchmarks.core.episode import StepHook
    from benchmarks.core.episode_record import EpisodeRecord

CAPTION_LINES = 2  # the caption bar is at least this many lines high
MAX_CAPTION_LINES = 16  # a bound for absurd text only: instructions and status lines take 2-6
LINE_HEIGHT = 17


def compose_frame(
    observation: Mapping[str, Any],
    keys: Sequence[str],
    caption: str | Sequence[str],
    height: int = 200,
    lines: int = CAPTION_LINES,
) -> np.ndarray:
    """The views under ``keys`` scaled to ``height`` and placed side by side under a caption bar.

    The caption (a string, or one string per line) is word-wrapped in full to the frame's width; the bar
    is ``lines`` lines high, or higher when the caption needs it (:class:`VideoRecorder` makes every frame
    of a video as high as its tallest caption).
    """
    views = side_by_side(observation, keys, height)
    text = caption_lines(caption, views.width - 12)
    return captioned(views, text, max(lines, len(text)))


def side_by_side(observation: Mapping[str, Any], keys: Sequence[str], height: int) -> Image.Image:
    """The views under ``keys``, each scaled to ``height``, left to right (an even width, as H.264 needs)."""
    views = []
    for key in keys:
        img = Image.fromarray(np.asarray(observation[key], dtype=np.uint8))
        width = max(1, round(img.width * height / img.height))
        views.append(
            img.resize(
                (width, height),
                Image.Resampling.NEAREST if img.height < height else Image.Resampling.BILINEAR,
            )
        )
    total_w = sum(v.width for v in views)
    canvas = Image.new("RGB", (total_w + total_w % 2, height), (20, 20, 20))
    x = 0
    for v in views:
        canvas.paste(v, (x, 0))
        x += v.width
    return canvas


def caption_lines(caption: str | Sequence[str], width: float) -> list[str]:
    """Every entry of the caption word-wrapped to ``width`` pixels, nothing left out (up to
    :data:`MAX_CAPTION_LINES`, the last then ending in '…')."""
    entries = [caption] if isinstance(caption, str) else list(caption)
    lines = [line for entry in entries for line in wrap_caption(entry, width)]
    if len(lines) > MAX_CAPTION_LINES:
        lines = [*lines[: MAX_CAPTION_LINES - 1], _fit(lines[MAX_CAPTION_LINES - 1] + "…", width)]
    return lines


def captioned(views: Image.Image, text: Sequence[str], lines: int) -> np.ndarray:
    """``views`` under a caption bar ``lines`` lines high (an even height, as H.264 needs) holding ``text``."""
    bar = lines * LINE_HEIGHT + 8
    bar += bar % 2
    canvas = Image.new("RGB", (views.width, views.height + bar), (20, 20, 20))
    canvas.paste(views, (0, bar))
    draw = ImageDraw.Draw(canvas)
    for i, line in enumerate(text):
        draw.text((6, 4 + i * LINE_HEIGHT), line, fill=(255, 255, 255), font=_font())
    return np.asarray(canvas)


def wrap_caption(text: str, width: float) -> list[str]:
    """Greedy word wrap to ``width`` pixels; a word wider than a line is split across lines (never cut)."""
    font, lines, line = _font(), [], ""
    for word in text.split():
        candidate = f"{line} {word}".strip()
        if font.getlength(candidate) <= width:
            line = candidate
            continue
        if line:
            lines.append(line)
        *whole, line = _pieces(word, width)
        lines += whole
    return [*lines, line]


def _pieces(word: str, width: float) -> list[str]:
    """``word`` split into pieces that each fit ``width`` pixels (one character always counts as fitting)."""
    font, pieces = _font(), []
    while len(word) > 1 and font.getlength(word) > width:
        low, high = 1, min(len(word) - 1, int(width) + 1)  # the longest prefix that fits, by bisection
        while low < high:
            middle = (low + high + 1) // 2
            low, high = (middle, high) if font.getlength(word[:middle]) <= width else (low, middle - 1)
        pieces.append(word[:low])
        word = word[low:]
    return [*pieces, word]


def _fit(line: str, width: float) -> str:
    """``line`` shortened from the left of its final '…' until it fits ``width``."""
    while len(line) > 1 and _font().getlength(line) > width:
        line = line[:-2] + "…"
    return line


_FONT: Any = None


def _font() -> Any:
    global _FONT
    if _FONT is None:
        _FONT = ImageFont.load_default(size=14)
    return _FONT


class VideoRecorder:
    """Collects composed frames and writes them as an H.264 MP4 (:func:`envs.video_files.write_mp4`)."""

    def __init__(self, path: Path, keys: Sequence[str], fps: int = 15, height: int = 200) -> None:
        self.path, self.keys, self.fps, self.height = Path(path), list(keys), fps, height
        #: each frame's views and caption lines; composed at :meth:`write`, all with the tallest caption bar
        self.frames: list[tuple[Image.Image, list[str]]] = []

    def add(self, observation: Mapping[str, Any], caption: str | Sequence[str]) -> None:
        views = side_by_side(observation, self.keys, self.height)
        self.frames.append((views, caption_lines(caption, views.width - 12)))

    def composed(self) -> list[np.ndarray]:
        """The frames as written: every caption in full, under bars of one height (a video's frame size is fixed)."""
        lines = max([CAPTION_LINES, *(len(text) for _, text in self.frames)])
        return [captioned(views, text, lines) for views, text in self.frames]

    def write_if_any(self) -> Path | None:
        """Write what was recorded, if anything: called in ``finally`` so that a unit that raised keeps
        its video up to the error."""
        return self.write() if self.frames else None

    def write(self) -> Path:
        if not self.frames:
            raise ValueError(f"no frames were recorded for {self.path}")
        return write_mp4(self.path, self.composed(), fps=self.fps)


def run_recorded(
    run: Callable[[StepHook | None], EpisodeRecord], video: VideoRecorder | None, root: Path
) -> EpisodeRecord:
    """``run(on_step)`` with ``video.add`` as its frame hook (``None`` without a video); the video is written
    even when the unit raises, and a written video's path (relative to ``root``) goes into the result."""
    try:
        result = run(video.add if video else None)
    finally:
        written = video.write_if_any() if video else None
    if written:
        result["video"] = str(written.relative_to(root))
    return result
