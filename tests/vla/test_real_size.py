"""Backbones at their published size with random weights (``--backbone random:HUB_ID``): every published
checkpoint of every registered family has a size, counted on the meta device it is the model card's, the
processor's image geometry matches the vision tower's, a small stand-in entry builds and predicts through
the real path, and bad names are refused."""

import dataclasses

import numpy as np
import pytest
import torch

from vla import real_size
from vla.backbones import TINY_MODEL_TYPES, backbone_table
from vla.model import VLAModel
from vla.policy import VLAPolicyConfig
from vla.real_size import PUBLISHED_SIZES, PublishedSize, parameter_count, published_config


@pytest.mark.parametrize("hub_id", sorted(PUBLISHED_SIZES))
def test_parameter_count_is_the_published_size(hub_id):
    """Counted on the meta device from the configuration (no weights): within 0.5 % of the model card."""
    config, _ = published_config(hub_id)
    published = PUBLISHED_SIZES[hub_id].parameters
    assert abs(parameter_count(config) / published - 1) < 0.005


def test_every_published_checkpoint_of_every_registered_family_has_a_size():
    """The backbone table's checkpoints and the sizes agree: each has an entry of its own family."""
    for row in backbone_table():
        for checkpoint in row["checkpoints"]:
            size = PUBLISHED_SIZES.get(checkpoint["hub_id"])
            assert size is not None, f"{checkpoint['hub_id']} has no published size"
            assert TINY_MODEL_TYPES[size.tiny] in row["model_types"]
    listed = {c["hub_id"] for row in backbone_table() for c in row["checkpoints"]}
    assert set(PUBLISHED_SIZES) == listed


#: Narrow, shallow stand-ins for the published widths and depths; image sizes, patches, token counts and
#: projector ratios (the geometry the processor must match) are left as published.
_NARROW_TEXT = {
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 1,
    "num_attention_heads": 4,
    "head_dim": 16,
    "query_pre_attn_scalar": 16,
    "embed_dim": 64,
    "layers": 1,
    "ffn_dim": 128,
    "attention_heads": 4,
}
_NARROW_VISION = {
    "hidden_size": 32,
    "intermediate_size": 64,
    "num_hidden_layers": 1,
    "num_attention_heads": 2,
    "projection_dim": 64,
}


def _narrow(size: PublishedSize) -> PublishedSize:
    text = {k: _NARROW_TEXT.get(k, v) for k, v in size.text.items()}
    text["num_key_value_heads"] = min(2, text.get("num_key_value_heads", 2))
    vision = {k: _NARROW_VISION.get(k, v) for k, v in size.vision.items()}
    top = {k: 64 if k == "projection_dim" else v for k, v in size.top.items()}
    return dataclasses.replace(size, text=text, vision=vision, top=top)


#: One checkpoint per image geometry, and the image tokens one 224 px image becomes in the published model.
GEOMETRIES = {
    "google/paligemma-3b-pt-224": 256,
    "google/paligemma2-3b-pt-224": 256,
    "google/gemma-3-4b-it": 256,
    "OpenGVLab/InternVL3_5-4B-HF": 256,
    "llava-hf/llava-onevision-qwen2-0.5b-ov-hf": 2 * 729,  # the whole image and one 384 px tile
    "HuggingFaceTB/SmolVLM-256M-Instruct": 64,
    "HuggingFaceTB/SmolVLM2-2.2B-Instruct": 81,
    "microsoft/kosmos-2-patch14-224": 64,
}


@pytest.mark.parametrize("hub_id", sorted(GEOMETRIES))
def test_the_processor_feeds_the_tower_as_many_image_tokens_as_published(hub_id, monkeypatch):
    """Narrowed widths, published image geometry: one image goes through processor, tower and decoder
    (transformers refuses a token count that differs from the tower's features)."""
    monkeypatch.setitem(PUBLISHED_SIZES, "Test/Narrow", _narrow(PUBLISHED_SIZES[hub_id]))
    model = VLAModel.build("random:Test/Narrow", chunk_size=4).eval()
    image = np.random.default_rng(0).integers(0, 256, (224, 224, 3), dtype=np.uint8)
    chunk = model.predict([[image]], ["open the drawer"])
    assert chunk.shape == (1, 4, 7) and np.isfinite(chunk).all()
    inputs = model.backbone.build_inputs(model.backbone.processor, [[image]], ["open the drawer"], 1)
    prompt_only = model.backbone.build_inputs(model.backbone.processor, [[image]], [""], 1)
    assert GEOMETRIES[hub_id] <= prompt_only["input_ids"].shape[1] <= inputs["input_ids"].shape[1]


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
    with pytest.raises(ValueError, match=r"random:Nobody/Model.*random:Qwen/Qwen2.5-VL-3B-Instruct") as err:
        real_size.random_hub_id("random:Nobody/Model")
    assert "\n" not in str(err.value) and all(hub_id in str(err.value) for hub_id in PUBLISHED_SIZES)
    with pytest.raises(ValueError, match="no published size"):
        VLAPolicyConfig(backbone="random:Nobody/Model").preflight()
    VLAPolicyConfig(backbone="random:Qwen/Qwen2.5-VL-3B-Instruct").preflight()  # nothing to find on disk
