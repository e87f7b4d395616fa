"""The robustness plot as a person sees it: a PNG that exists, is not blank, has one panel per axis with
the perturbed series and the clean arm in their colours, and carries its title and axis labels."""

from __future__ import annotations

import numpy as np
from PIL import Image

from benchmarks.robustness.blind import blind_by_axis
from benchmarks.robustness.plots import robustness_plot
from benchmarks.robustness.report import robustness_markdown

C0, C1 = (31, 119, 180), (255, 127, 14)  # matplotlib's first two colours: the series and the clean arm


def _cell(rate):
    return {
        "variants": 4,
        "scored": 4,
        "success_rate": rate,
        "success_ci": [max(0.0, rate - 20), min(100.0, rate + 10)],
        "drop": 100 - rate,
        "drop_ci": [0.0, 50.0],
        "certification_rate": 100.0,
        "certification_ci": [50.0, 100.0],
    }


TABLE = {
    "clean": {"episodes": 4, "success_rate": 100.0, "success_ci": [51.0, 100.0]},
    "include_uncertified": False,
    "axes": {
        axis: {**{str(level): _cell(100 - step * level) for level in range(1, 6)}, "all": _cell(80.0)}
        for axis, step in (
            ("camera", 5),
            ("lighting", 0),
            ("image_noise", 15),
            ("action_noise", 10),
            ("paraphrase", 2),
        )
    },
}


def _has(image: np.ndarray, rgb: tuple[int, int, int], tolerance: int = 12) -> int:
    return int((np.abs(image[..., :3].astype(int) - rgb).max(axis=-1) <= tolerance).sum())


def _dark(strip: np.ndarray) -> int:
    return int((strip[..., :3].max(axis=-1) < 90).sum())


def test_the_plot_is_a_labelled_non_blank_png_with_a_panel_per_axis(tmp_path):
    blind = {"camera": {str(level): 0.0 for level in range(1, 6)}}
    path = robustness_plot(tmp_path / "plots" / "r.png", TABLE, "embodied-manip answer-key", blind)
    with Image.open(path) as im:
        assert im.format == "PNG" and im.width > 600 and im.height > 300
        image = np.asarray(im.convert("RGB"))
    assert image.std() > 10 and len(np.unique(image.reshape(-1, 3), axis=0)) > 50  # not blank
    assert _has(image, C0) > 200 and _has(image, C1) > 200  # the series and the clean arm are drawn
    h, w, _ = image.shape
    assert _dark(image[: h // 12]) > 100  # the title
    assert _dark(image[h // 3 : 2 * h // 3, : w // 30]) > 20  # the y label, rotated, at the left edge
    bottom = image[int(h * 0.86) : int(h * 0.95), w // 3 : 2 * w // 3]
    assert _dark(bottom) > 50  # the x label, centred under the panels
    # one panel per axis: 5 axes on a 4-column grid leave the last three cells of row 2 empty (white)
    assert (image[int(h * 0.55) : int(h * 0.8), int(w * 0.45) :] > 245).all(axis=-1).mean() > 0.97


def test_the_markdown_gets_a_blind_column_and_its_note_only_when_measured():
    plain = robustness_markdown(TABLE)
    assert "blind %" not in plain
    entry = {
        "policies": {
            "random": {"axes": {"camera": {"1": 0.0, "all": 10.0}}},
            "constant-3": {"axes": {"camera": {"all": 20.0}}},
        }
    }
    blind = blind_by_axis(entry)
    assert blind == {"camera": {"1": 0.0, "all": 20.0}}
    text = robustness_markdown(TABLE, blind, "Blind: note.")
    assert (
        "| camera | all | 4 | 4 | 80.0 [60.0, 90.0] | 20.0 [0.0, 50.0] | 100.0 [50.0, 100.0] | 20.0 |" in text
    )
    assert "| lighting | 1 |" in text and text.rstrip().endswith("Blind: note.")
