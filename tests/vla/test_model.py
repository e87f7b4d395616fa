"""Backbone + action tokens + FCDecoder on tiny real checkpoints of each supported architecture."""

import json
import math

import numpy as np
import pytest
import torch

from vla.backbones import (
    TINY_MODEL_TYPES,
    backbone_class,
    plain_positions,
    resolve_backbone,
    supported_model_types,
)
from vla.head import FCDecoder, action_loss
from vla.model import VLAModel

ARCHS = [
    "qwen2_5_vl",
    "qwen3_vl",
    "qwen3_vl_moe",
    "paligemma",
    "paligemma2",
    "internvl",
    "llava_onevision",
    "smolvlm",
    "gemma3",
    "kosmos2",
]
INSTRUCTIONS = ["open the drawer", "push the sliding door to the left side and then turn on the led light"]


@pytest.fixture(scope="module")
def models(tiny_vlm):
    return {arch: VLAModel.build(str(tiny_vlm(arch)), chunk_size=10, seed=0) for arch in ARCHS}


def _images(n, cameras=1, seed=0):
    rng = np.random.default_rng(seed)
    return [[rng.integers(0, 256, (224, 224, 3), dtype=np.uint8) for _ in range(cameras)] for _ in range(n)]


@pytest.mark.parametrize("arch", ARCHS)
def test_shapes_and_gradients_reach_backbone_token_and_head(models, arch):
    model = models[arch]
    model.zero_grad()
    inputs = model.input_builder()(_images(2), INSTRUCTIONS)
    arm, gripper = model(inputs)
    assert arm.shape == (2, 10, 6) and gripper.shape == (2, 10)
    assert torch.all(arm.abs() <= 1)
    losses = model(inputs, torch.full_like(arm, 0.3), torch.ones_like(gripper))
    losses["loss"].backward()
    named = dict(model.named_parameters())
    towers = ("visual", "vision_tower", "vision_model")
    vision = [p for n, p in named.items() if any(t in n for t in towers) and p.grad is not None]
    assert model.action_token.grad.abs().sum() > 0
    assert model.head.mlp[0].weight.grad.abs().sum() > 0
    assert model.backbone.vlm.get_input_embeddings().weight.grad.abs().sum() > 0
    assert vision and sum(float(p.grad.abs().sum()) for p in vision) > 0
    model.zero_grad()


@pytest.mark.parametrize("arch", ARCHS)
def test_explicit_embeds_path_matches_the_stock_forward(models, arch):
    """With the action slot holding an ordinary token's embedding, our inputs_embeds + explicit positions
    path must give what transformers computes itself from input_ids (M-RoPE, Kosmos-2's offset positions,
    Gemma 3's bidirectional image blocks, LLaVA-OneVision's tiles included)."""
    model = models[arch]
    backbone = model.backbone
    inputs = model.input_builder()(_images(1), INSTRUCTIONS[:1])
    token = backbone.processor.tokenizer.eos_token_id
    # scaled where the model scales (Gemma 3)
    embeds = backbone.vlm.get_input_embeddings()(torch.tensor([token]))
    ids = inputs["input_ids"].clone()
    ids[inputs["action_mask"]] = token
    with torch.no_grad():
        ours = backbone(inputs, embeds)[0, -1]
        keys = ("mm_token_type_ids", *backbone.forward_keys, *backbone.action_token_values)
        extra = {k: inputs[k] for k in keys if k in inputs}
        stock_kwargs = {
            "input_ids": ids,
            "attention_mask": inputs["attention_mask"],
            "use_cache": False,
            **extra,
        }
        if hasattr(backbone.vlm, "model"):
            stock = backbone.vlm.model(**stock_kwargs).last_hidden_state[0, -1]
        else:  # Kosmos-2 has no headless model: compare the language-model logits instead
            stock = backbone.vlm(**stock_kwargs).logits[0, -1]
            ours = backbone.vlm.get_output_embeddings()(ours)
    torch.testing.assert_close(ours, stock, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize(
    ("arch", "image_tokens", "grid_side"),
    [("qwen2_5_vl", 64, 8), ("qwen3_vl", 49, 7), ("qwen3_vl_moe", 49, 7)],
)
def test_mrope_positions_differ_from_plain_positions(models, arch, image_tokens, grid_side):
    backbone = models[arch].backbone
    inputs = models[arch].input_builder()(_images(1), INSTRUCTIONS[:1])
    mrope = backbone.position_ids(inputs)[:, 0]  # (3, S)
    plain = plain_positions(inputs["attention_mask"])[0]
    image = inputs["mm_token_type_ids"][0] == 1
    assert int(image.sum()) == image_tokens
    # an image spans grid_side positions in M-RoPE instead of one per token; text after it moves back
    assert int(plain[-1] - mrope[0, -1]) == image_tokens - grid_side
    assert torch.equal(mrope[0, -1], mrope[1, -1]) and torch.equal(mrope[1, -1], mrope[2, -1])
    heights, widths = mrope[1][image], mrope[2][image]
    assert heights.unique().numel() == grid_side and widths.unique().numel() == grid_side
    assert not torch.equal(heights, widths)


def test_plain_position_mode_changes_the_output(tiny_vlm):
    path = str(tiny_vlm("qwen2_5_vl"))
    a, b = VLAModel.build(path, seed=0), VLAModel.build(path, seed=0, position_ids="plain")
    inputs = a.input_builder()(_images(1), INSTRUCTIONS[:1])
    with torch.no_grad():
        assert not torch.allclose(a(inputs)[0], b(inputs)[0])


@pytest.mark.parametrize("arch", ARCHS)
def test_left_padding_does_not_change_a_samples_output(models, arch):
    model = models[arch]
    build = model.input_builder()
    images = _images(2)
    with torch.no_grad():
        alone, _ = model(build(images[:1], INSTRUCTIONS[:1]))
        batched, _ = model(build(images, INSTRUCTIONS))
    torch.testing.assert_close(alone[0], batched[0], atol=1e-5, rtol=1e-4)


def test_two_cameras_and_several_action_tokens(tiny_vlm):
    model = VLAModel.build(
        str(tiny_vlm("qwen2_5_vl")), num_action_tokens=3, chunk_size=4, cameras=["rgb_static", "rgb_gripper"]
    )
    inputs = model.input_builder()(_images(2, cameras=2), INSTRUCTIONS)
    assert int(inputs["action_mask"].sum()) == 6 and (inputs["image_grid_thw"].shape[0] == 4)
    arm, gripper = model(inputs)
    assert arm.shape == (2, 4, 6) and gripper.shape == (2, 4)
    assert model.head.mlp[0].in_features == 3 * model.backbone.hidden_size


def test_head_layers_are_the_published_ones():
    head = FCDecoder(64, chunk_size=10, latent=2)
    linears = lambda seq: [(m.in_features, m.out_features) for m in seq if isinstance(m, torch.nn.Linear)]  # noqa: E731
    assert linears(head.mlp) == [(128, 64), (64, 2048)]
    assert linears(head.actions) == [(2048, 1024), (1024, 512), (512, 256), (256, 60)]
    assert linears(head.gripper) == [(2048, 1024), (1024, 512), (512, 256), (256, 10)]
    assert isinstance(head.actions[-1], torch.nn.Tanh) and isinstance(head.gripper[-1], torch.nn.Linear)
    assert all(
        float(m.bias.detach().abs().sum()) == 0 for m in head.modules() if isinstance(m, torch.nn.Linear)
    )
    with pytest.raises(ValueError, match=r"\(batch, 2, 64\)"):
        head(torch.zeros(3, 1, 64))


def test_loss_hand_worked():
    arm, gripper = torch.zeros(1, 2, 6), torch.zeros(1, 2)
    losses = action_loss(arm, gripper, torch.full((1, 2, 6), 0.5), torch.ones(1, 2))
    # Huber(0.5) = 0.5 * 0.5^2 = 0.125; BCE(logit 0, target 1) = ln 2; gripper weight 0.01
    assert math.isclose(float(losses["loss_arm"]), 0.125, rel_tol=1e-6)
    assert math.isclose(float(losses["loss_gripper"]), math.log(2), rel_tol=1e-6)
    assert math.isclose(float(losses["loss"]), 0.125 + 0.01 * math.log(2), rel_tol=1e-6)
    big = action_loss(torch.zeros(1, 1, 6), torch.zeros(1, 1), torch.full((1, 1, 6), 3.0), torch.zeros(1, 1))
    assert math.isclose(float(big["loss_arm"]), 3.0 - 0.5, rel_tol=1e-6)  # linear beyond delta 1


@pytest.mark.parametrize(("arch", "save_backbone"), [("qwen3_vl", False), *((arch, True) for arch in ARCHS)])
def test_checkpoint_round_trip_gives_identical_outputs(models, tmp_path, arch, save_backbone):
    model = models[arch]
    with torch.no_grad():
        model.head.gripper[0].bias.add_(0.5)  # not the initial state
    model.save_pretrained(tmp_path, save_backbone=save_backbone)
    config = json.loads((tmp_path / "config.json").read_text())
    assert config["model_type"] == model.backbone.model_type and config["backbone_saved"] is save_backbone
    assert (tmp_path / "backbone" / "config.json").is_file() is save_backbone
    restored = VLAModel.from_pretrained(tmp_path)
    images = _images(2, seed=3)
    np.testing.assert_array_equal(
        model.eval().predict(images, INSTRUCTIONS), restored.predict(images, INSTRUCTIONS)
    )
    assert restored.normalizer == model.normalizer


def test_registry_and_names(tmp_path):
    assert {TINY_MODEL_TYPES[arch] for arch in ARCHS} <= set(supported_model_types())
    with pytest.raises(ValueError, match="supported"):
        backbone_class("llava")
    with pytest.raises(ValueError, match=r"tiny-qwen2\.5-vl"):
        resolve_backbone("tiny-llava")
    assert resolve_backbone("/some/dir") == "/some/dir"
    with pytest.raises(FileNotFoundError, match="not a VLA checkpoint"):
        VLAModel.from_pretrained(tmp_path)
    with pytest.raises(OSError, match="downloads are off"):
        VLAModel.build("no-such-org/no-such-model")


@pytest.mark.parametrize(
    ("name", "model_type"), [("tiny-paligemma", "paligemma"), ("tiny-kosmos2", "kosmos-2")]
)
def test_tiny_names_build_through_policies_tiny(tmp_path, name, model_type):
    built = resolve_backbone(name, tiny_root=tmp_path)
    assert (
        json.loads((tmp_path / built.split("/")[-1] / "config.json").read_text())["model_type"] == model_type
    )


def test_prompts_are_the_published_ones(models):
    from vla.backbones import PaliGemmaBackbone, QwenVLBackbone

    qwen = QwenVLBackbone.render_prompts(models["qwen3_vl"].backbone.processor, [" open the drawer "], [2])
    assert qwen == [
        "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\n"
        "<|vision_start|><|image_pad|><|vision_end|><|vision_start|><|image_pad|><|vision_end|>"
        "What action should the robotic arm take to open the drawer<|im_end|>\n<|im_start|>assistant\n"
    ]
    processor = models["paligemma"].backbone.processor
    inputs = models["paligemma"].input_builder()(_images(1), ["open the drawer"])
    tokens = processor.tokenizer.convert_ids_to_tokens(inputs["input_ids"][0])
    assert tokens[:16] == ["<image>"] * 16 and tokens[16] == "<bos>"  # 56 px / 14 px patches = 16 tokens
    assert processor.tokenizer.decode(inputs["input_ids"][0][17:-1]) == "open the drawer\n"
    assert PaliGemmaBackbone.render_prompts(processor, ["x"], [1]) == ["<image>x"]
