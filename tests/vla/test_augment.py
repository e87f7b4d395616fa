"""Training-image augmentation: what each kind does to an image, seeding, and its path through vla.train."""

import numpy as np
import pytest
import torch

from vla.augment import Augment, random_shift, rotate_hue
from vla.train import Collator, TrainConfig


def _dot_image(size=32, at=(16, 16)):
    image = np.zeros((size, size, 3), np.uint8)
    image[at] = 255
    return image


@pytest.mark.parametrize(
    ("text", "kinds"),
    [("none", ()), ("shift", ("shift",)), ("color", ("color",)), ("shift, color,shift", ("shift", "color"))],
)
def test_parse(text, kinds):
    assert Augment.parse(text).kinds == kinds
    assert bool(Augment.parse(text)) == bool(kinds)


@pytest.mark.parametrize("text", ["", "blur", "shift,blur", "none,shift"])
def test_parse_rejects_unknown_kinds_in_one_line(text):
    with pytest.raises(ValueError, match="--augment must be none or a comma list of shift, color") as error:
        Augment.parse(text)
    assert "\n" not in str(error.value)


def test_shift_moves_content_by_at_most_pad_and_keeps_the_size():
    rng = np.random.default_rng(0)
    offsets = set()
    for _ in range(200):
        out = random_shift(_dot_image(), 3, rng)
        assert out.shape == (32, 32, 3) and out.dtype == np.uint8
        (row,), (col,) = np.nonzero(out[..., 0])
        assert abs(row - 16) <= 3 and abs(col - 16) <= 3
        offsets.add((row - 16, col - 16))
    assert len(offsets) == 49  # every offset in [-3, 3]^2 is drawn


def test_shift_fills_the_border_by_replication():
    image = np.zeros((8, 8, 3), np.uint8)
    image[:, 0] = 200  # the left column
    shifted = [random_shift(image, 2, np.random.default_rng(s)) for s in range(30)]
    right = [s for s in shifted if s[0, 0, 0] == 200 and s[0, 1, 0] == 200]
    assert right  # moved right: the replicated left column fills the gap instead of black
    assert all(s.max() <= 200 for s in shifted)


def test_hue_rotation_turns_red_into_green_and_blue():
    red = np.zeros((4, 4, 3), np.uint8)
    red[..., 0] = 255
    green, blue = rotate_hue(red, 1 / 3)[0, 0], rotate_hue(red, 2 / 3)[0, 0]
    assert green.argmax() == 1 and blue.argmax() == 2
    assert rotate_hue(red, 0) is red


def test_colour_jitter_stays_in_its_ranges():
    image = np.random.default_rng(1).integers(40, 200, (16, 16, 3), dtype=np.uint8)
    still = Augment(kinds=("color",), brightness=0, contrast=0, saturation=0, hue=0)
    assert np.abs(still(image, np.random.default_rng(0)).astype(int) - image).max() <= 1  # rounding only
    jitter = Augment(kinds=("color",), brightness=0.2, contrast=0, saturation=0, hue=0)
    ratios = [jitter(image, np.random.default_rng(s)).mean() / image.mean() for s in range(50)]
    assert 0.79 < min(ratios) < 0.9 and 1.1 < max(ratios) < 1.21


def test_same_generator_same_augmentation():
    image = np.random.default_rng(2).integers(0, 255, (24, 24, 3), dtype=np.uint8)
    both = Augment.parse("shift,color")
    first = both(image, np.random.default_rng(5))
    assert np.array_equal(first, both(image, np.random.default_rng(5)))
    assert not np.array_equal(first, both(image, np.random.default_rng(6)))
    assert not np.array_equal(first, image)


def test_collator_augments_reproducibly_and_only_when_asked(tiny_vlm, tmp_path):
    from tests.vla_helpers import write_calvin_split
    from vla.data import open_dataset
    from vla.model import VLAModel

    root = tmp_path / "training"
    write_calvin_split(root, episodes=[(0, 12)], windows=[(0, 12, "open_drawer", "open the drawer")])
    model, dataset = VLAModel.build(str(tiny_vlm("qwen2_5_vl"))), open_dataset(root)
    samples = [dataset[0], dataset[1]]
    plain = Collator(model.input_builder(), model.normalizer)
    augmented = Collator(model.input_builder(), model.normalizer, Augment.parse("shift,color"))

    def pixels(collate, seed):
        torch.manual_seed(seed)
        return collate(samples)["inputs"]["pixel_values"]

    assert torch.equal(pixels(plain, 0), pixels(plain, 1))
    assert torch.equal(pixels(augmented, 0), pixels(augmented, 0))
    assert not torch.equal(pixels(augmented, 0), pixels(augmented, 1))
    assert not torch.equal(pixels(augmented, 0), pixels(plain, 0))
    assert pixels(augmented, 0).shape == pixels(plain, 0).shape
    torch.manual_seed(0)
    targets = augmented(samples)
    assert torch.equal(targets["arm"], plain(samples)["arm"])  # actions are never touched


def test_train_config_names_a_bad_augment():
    with pytest.raises(ValueError, match="--augment must be none"):
        TrainConfig(backbone="tiny-qwen2.5-vl", data="x", augment="mixup").check()


def test_training_with_augment_runs_and_records_it(tiny_vlm, tmp_path):
    import json

    from tests.vla_helpers import write_calvin_split
    from vla.train import main

    root = tmp_path / "training"
    write_calvin_split(root, episodes=[(0, 12)], windows=[(0, 12, "open_drawer", "open the drawer")])
    out = tmp_path / "run"
    flags = ["--backbone", str(tiny_vlm("qwen2_5_vl")), "--data", str(root), "--output", str(out)]
    main([*flags, "--batch-size", "4", "--max-steps", "2", "--num-workers", "0", "--augment", "shift,color"])
    assert json.loads((out / "train_config.json").read_text())["augment"] == "shift,color"
    assert (out / "checkpoints" / "last" / "head.safetensors").is_file()
