"""Episode videos: the caption bar shows the whole instruction and status, and a video's frames share one size."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import ImageDraw

from benchmarks.core.video import VideoRecorder, compose_frame

INSTRUCTION = (
    "put the white mug on the left plate and put the yellow and white mug on the right plate, then "
    "close the top drawer of the cabinet"
)
STATUS = "step 12: Last action is invalid. The target pose is out of the arm's reach (x 0.91 m)."
VIEW = {"rgb": np.zeros((224, 224, 3), np.uint8)}


@pytest.fixture
def drawn(monkeypatch):
    """The strings drawn on frames, one list per call of ``ImageDraw.text``."""
    texts: list[str] = []
    original = ImageDraw.ImageDraw.text

    def record(self, xy, text, *args, **kwargs):
        texts.append(text)
        return original(self, xy, text, *args, **kwargs)

    monkeypatch.setattr(ImageDraw.ImageDraw, "text", record)
    return texts


def test_a_long_instruction_and_status_are_drawn_in_full(drawn):
    """Issue 29: each caption line was cut to one line ending in '…' (a 200 px view shows ~25 characters)."""
    frame = compose_frame(VIEW, ["rgb"], [INSTRUCTION, STATUS], height=200)
    assert " ".join(drawn).split() == f"{INSTRUCTION} {STATUS}".split()
    assert not any("…" in line for line in drawn)
    assert frame.shape[0] > 200 + 4 * 17 and frame.shape[0] % 2 == 0 and frame.shape[1] % 2 == 0


def test_a_word_wider_than_the_frame_is_split_not_cut(drawn):
    word = "x" * 90
    compose_frame(VIEW, ["rgb"], f"go {word} now", height=200)
    assert "".join(drawn).replace(" ", "") == f"go{word}now" and len(drawn) > 3


def test_a_videos_frames_share_the_tallest_caption_bar(tmp_path):
    recorder = VideoRecorder(tmp_path / "episode.mp4", ["rgb"], fps=5, height=200)
    recorder.add(VIEW, ["open the drawer", "start"])
    recorder.add(VIEW, [INSTRUCTION, STATUS])
    recorder.add(VIEW, ["open the drawer", "step 2"])
    frames = recorder.composed()
    assert len({f.shape for f in frames}) == 1 and frames[0].shape[0] > 200 + 4 * 17
    assert np.array_equal(frames[0][-200:], frames[1][-200:])  # the views stay put below the bar
    assert recorder.write().stat().st_size > 1000
