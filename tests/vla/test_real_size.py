"""Backbones at their published size with random weights (``--backbone random:HUB_ID``): the size is the
model card's, a small stand-in entry builds and predicts through the real path, and bad names are refused."""

import numpy as np
import pytest
import torch

from vla import real_size
from vla.model import VLAModel
from vla.policy import VLAPolicyConfig
from vla.real_size import PUBLISHED_SIZES, PublishedSize, parameter_count, published_config


@pytest.mark.parametrize("hub_id", sorted(PUBLISHED_SIZES))
def test_parameter_count_is_the_published_size(hub_id):
    """Counted on the meta device from the configuration (no weights): within 0.5 % of the model card."""
    config, _ = published_config(hub_id)
    published = PUBLISHED_SIZES[hub_id].parameters
    assert abs(parameter_count(config) / published - 1) < 0.005


def test_qwen2_5_vl_3b_dimensions_are_the_checkpoints():
    config, processor = published_config("Qwen/Qwen2.5-VL-3B-Instruct")
    text, vision = config.text_config, config.vision_config
    assert (text.hidden_size, text.num_hidden_layers, len(text.layer_types)) == (2048, 36, 36)
    assert (vision.depth, vision.out_hidden_size, vision.patch_size) == (32, 2048, 14)
    # the tiny processor's special ids fall inside the published vocabulary
    assert config.image_token_id < text.vocab_size and len(processor.tokenizer) < text.vocab_size


@pytest.fixture
def small_size(monkeypatch):
    """A made-up "published" size of the tiny Qwen2.5-VL family, small enough to build in a test."""
    size = PublishedSize(
        "qwen2_5_vl",
        {
            "hidden_size": 96,
            "num_attention_heads": 6,
            "intermediate_size": 160,
            "num_hidden_layers": 3,
            "vocab_size": 4096,
        },
        {"depth": 3, "hidden_size": 48, "intermediate_size": 64, "out_hidden_size": 96},
        0.0,
    )
    monkeypatch.setitem(PUBLISHED_SIZES, "Test/Small-VL", size)
    return "Test/Small-VL"


def test_random_backbone_builds_at_the_configured_size_and_predicts(tiny_vlm, small_size):
    tiny_vlm("qwen2_5_vl")  # the family's processor comes from its tiny checkpoint
    model = VLAModel.build(f"random:{small_size}", chunk_size=4).eval()
    backbone_params = sum(p.numel() for p in model.backbone.vlm.parameters())
    config, _ = published_config(small_size)
    assert backbone_params == parameter_count(config)
    assert model.backbone.hidden_size == 96 and model.backbone.vlm.config.text_config.num_hidden_layers == 3
    image = np.random.default_rng(0).integers(0, 256, (224, 224, 3), dtype=np.uint8)
    chunk = model.predict([[image]], ["open the drawer"])
    assert chunk.shape == (1, 4, 7) and np.isfinite(chunk).all()
    torch.manual_seed(123)  # the weights are the seed's, not the global generator's
    again = VLAModel.build(f"random:{small_size}", chunk_size=4).eval()
    assert np.array_equal(again.predict([[image]], ["open the drawer"]), chunk)


def test_unknown_random_backbone_is_refused_naming_the_known_ids():
    with pytest.raises(ValueError, match=r"random:Nobody/Model.*random:Qwen/Qwen2.5-VL-3B-Instruct"):
        real_size.random_hub_id("random:Nobody/Model")
    with pytest.raises(ValueError, match="no published size"):
        VLAPolicyConfig(backbone="random:Nobody/Model").preflight()
    VLAPolicyConfig(backbone="random:Qwen/Qwen2.5-VL-3B-Instruct").preflight()  # nothing to find on disk
