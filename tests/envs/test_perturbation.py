"""The shared perturbation interface: specs, the axis registry, ``--perturb`` parsing and the channel axes."""

from __future__ import annotations

import numpy as np
import pytest
from gymnasium import spaces

from envs.perturbation import (
    CHANNEL_AXIS_DOCS,
    Channels,
    PerturbationError,
    PerturbationSpec,
    box_blur,
    check_spec,
    parse_perturb,
    register_axes,
)

register_axes("toy_family", {"image_noise": CHANNEL_AXIS_DOCS["image_noise"]})


def _obs() -> dict[str, object]:
    rng = np.random.default_rng(0)
    return {
        "rgb": rng.integers(0, 256, (16, 16, 3), dtype=np.uint8),
        "wrist_rgb": rng.integers(0, 256, (8, 8, 3), dtype=np.uint8),
        "depth": rng.random((16, 16)).astype(np.float32),
        "instruction": "go to the ball",
    }


@pytest.mark.parametrize(
    ("data", "word"),
    [
        ({"axis": "camera", "level": 0}, "level"),
        ({"axis": "camera", "level": 6}, "level"),
        ({"axis": "camera", "level": True}, "level"),
        ({"axis": "", "level": 1}, "axis"),
        ({"axis": "camera", "level": 1, "seed": -1}, "seed"),
        ({"axis": "camera", "colour": 1}, "dict with axis"),
        ("camera", "dict with axis"),
    ],
)
def test_bad_specs_get_one_line_errors(data, word):
    with pytest.raises(PerturbationError, match=word) as error:
        PerturbationSpec.from_json(data)
    assert "\n" not in str(error.value)


def test_specs_round_trip_and_hash_by_content():
    spec = PerturbationSpec("camera", 3, 7)
    assert PerturbationSpec.from_json(spec.to_json()) == spec
    assert spec.key() == PerturbationSpec("camera", 3, 7).key() != PerturbationSpec("camera", 3, 8).key()
    assert spec.rng().random() == PerturbationSpec("camera", 3, 7).rng().random()


def test_check_spec_tells_an_unknown_axis_from_one_the_family_lacks():
    import envs.navigation.perturbations  # noqa: F401  (registers eb_navigation's axes)

    assert check_spec("toy_family", {"axis": "image_noise", "level": 2}).level == 2
    with pytest.raises(PerturbationError, match="an axis the family lacks for toy_family"):
        check_spec("toy_family", {"axis": "camera", "level": 2})
    with pytest.raises(PerturbationError, match="an unknown axis"):
        check_spec("toy_family", {"axis": "weather", "level": 2})
    with pytest.raises(PerturbationError, match="declares no perturbation axes"):
        check_spec("no_family", {"axis": "camera", "level": 2})


def test_parse_perturb_expands_all_and_levels():
    assert parse_perturb("image_noise:2", "toy_family") == [("image_noise", (2,))]
    assert parse_perturb("all", "toy_family") == [("image_noise", (1, 2, 3, 4, 5))]
    for bad in ("image_noise:0", "image_noise:x", "camera", ""):
        with pytest.raises(PerturbationError, match="--perturb"):
            parse_perturb(bad, "toy_family")


@pytest.mark.parametrize("axis", ["image_noise", "image_blur", "image_jpeg"])
def test_image_axes_change_every_camera_and_nothing_else(axis):
    obs = _obs()
    out = Channels(PerturbationSpec(axis, 5, 1), spaces.Discrete(8)).images(obs)
    assert all(not np.array_equal(out[k], obs[k]) for k in ("rgb", "wrist_rgb"))
    assert out["depth"] is obs["depth"] and out["instruction"] == obs["instruction"]
    again = Channels(PerturbationSpec(axis, 5, 1), spaces.Discrete(8)).images(obs)
    assert all(np.array_equal(out[k], again[k]) for k in ("rgb", "wrist_rgb"))  # same spec, same bytes


@pytest.mark.parametrize("axis", ["image_noise", "image_blur", "image_jpeg"])
def test_stronger_levels_corrupt_more(axis):
    rgb = _obs()["rgb"]

    def error(level: int) -> float:
        out = Channels(PerturbationSpec(axis, level, 0), spaces.Discrete(8)).images({"rgb": rgb})["rgb"]
        return float(np.abs(out.astype(float) - rgb).mean())

    assert 0 < error(1) < error(5)


def test_scene_axes_and_no_spec_leave_the_channels_alone():
    obs = _obs()
    for spec in (None, PerturbationSpec("camera", 5, 0)):
        channels = Channels(spec, spaces.Discrete(8))
        assert channels.images(obs) is obs and channels.action(3) == 3


def test_box_blur_keeps_a_flat_image():
    flat = np.full((9, 9, 3), 77, np.uint8)
    assert np.array_equal(box_blur(flat, 3), flat)


def test_discrete_action_noise_swaps_for_other_valid_actions_at_its_rate():
    channels = Channels(PerturbationSpec("action_noise", 5, 0), spaces.Discrete(8))
    out = [int(channels.action(np.int64(2))) for _ in range(2000)]
    swapped = [a for a in out if a != 2]
    assert all(0 <= a < 8 for a in out) and 0.3 < len(swapped) / 2000 < 0.4  # level 5: p = 0.35


def test_box_action_noise_stays_in_bounds():
    space = spaces.Box(-1.0, 1.0, (6,), np.float32)
    channels = Channels(PerturbationSpec("action_noise", 5, 0), space)
    out = np.array([channels.action(np.ones(6, np.float32)) for _ in range(200)])
    assert np.all(out <= 1.0) and np.all(out >= -1.0) and np.any(out < 1.0)
