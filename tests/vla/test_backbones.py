"""Every registered VLA backbone in closed loop on the play-table, each one's position scheme, and the
backbone table (``python -m vla.backbones --list``) that the docs' VLA guide (docs/guide/vla.md) shows."""

from pathlib import Path

import numpy as np
import pytest
import torch

from vla.backbones import (
    TINY_BACKBONES,
    TINY_MODEL_TYPES,
    backbone_class,
    backbone_table,
    backbone_table_markdown,
    main,
    plain_positions,
)
from vla.model import VLAModel
from vla.policy import VLAPolicy

ARCHS = sorted(TINY_MODEL_TYPES)
VLA_GUIDE = Path(__file__).resolve().parents[2] / "docs" / "guide" / "vla.md"


@pytest.fixture(scope="module")
def play_table():
    pytest.importorskip("pybullet")
    from envs.calvin.env import PlayTableEnv

    env = PlayTableEnv(cameras=("static",))
    yield env
    env.close()


@pytest.mark.parametrize("arch", ARCHS)
def test_closed_loop_chain_on_the_play_table(play_table, tiny_vlm, arch):
    """A few CALVIN steps with each backbone's VLA policy: observation -> model -> chunk queue -> env."""
    from benchmarks.calvin.chain import run_chain
    from envs.calvin import constants as C
    from tests.policies.experts.test_calvin import SCENE

    model = VLAModel.build(str(tiny_vlm(arch)), chunk_size=10, seed=0).eval()
    policy = VLAPolicy(model, execute_steps=3)
    record = run_chain(
        play_table,
        policy,
        C.NEUTRAL_ROBOT_OBS,
        SCENE,
        ["open_drawer"],
        ["pull the handle to open the drawer"],
        ep_len=5,
    )
    (subtask,) = record["extras"]["subtasks"]
    assert subtask["steps"] == 5 and subtask["success"] is False  # an untrained head does not open the drawer
    assert policy.model_calls == 2  # steps 0 and 3: the chunk queue, not one query per step
    assert subtask["idle_steps"] == 0  # every step executed one of the model's actions


def test_position_schemes(tiny_vlm):
    """Plain 1-D positions count attended tokens from the scheme's start and skip left padding; Kosmos-2
    starts at pad_token_id + 1, PaliGemma at 1, the others at 0; Gemma 3 marks image tokens bidirectional."""
    images = [[np.zeros((224, 224, 3), np.uint8)]] * 2
    instructions = [
        "open the drawer",
        "push the sliding door to the left side and then turn on the led light",
    ]
    starts = {
        "kosmos2": None,
        "paligemma": 1,
        "paligemma2": 1,
        "internvl": 0,
        "llava_onevision": 0,
        "smolvlm": 0,
        "gemma3": 0,
    }
    for arch, start in starts.items():
        model = VLAModel.build(str(tiny_vlm(arch)))
        backbone = model.backbone
        inputs = model.input_builder()(images, instructions)
        mask = inputs["attention_mask"]
        assert mask[0, 0] == 0 and mask[1, 0] == 1  # the shorter row is left-padded
        if start is None:
            start = backbone.vlm.config.text_config.pad_token_id + 1
        positions = backbone.position_ids(inputs)
        torch.testing.assert_close(positions, plain_positions(mask, start=start))
        assert int(positions[1, -1]) == start + mask.shape[1] - 1  # the longest row: one position per token
        assert int(positions[0, -1]) == start + int(mask[0].sum()) - 1
    gemma3 = VLAModel.build(str(tiny_vlm("gemma3")))
    inputs = gemma3.input_builder()(images, instructions)
    image = inputs["input_ids"] == gemma3.backbone.vlm.config.image_token_id
    assert torch.equal(inputs["token_type_ids"].bool(), image) and int(image[0].sum()) == 16
    assert not inputs["token_type_ids"][inputs["action_mask"]].any()


def test_kosmos2_takes_one_image_per_sample(tiny_vlm):
    model = VLAModel.build(str(tiny_vlm("kosmos2")))
    with pytest.raises(ValueError, match="at most 1 image"):
        model.input_builder()([[np.zeros((224, 224, 3), np.uint8)] * 2], ["open the drawer"])


def test_every_tiny_name_has_a_tiny_architecture_and_a_backbone():
    from policies.tiny import TINY_ARCHS

    assert set(TINY_BACKBONES.values()) == set(TINY_ARCHS) == set(TINY_MODEL_TYPES)
    for arch, model_type in TINY_MODEL_TYPES.items():
        assert model_type in backbone_class(model_type).model_types, arch


def test_backbone_table_is_the_registry_and_the_vla_guide_shows_it(capsys):
    rows = backbone_table()
    families = {row["backbone"] for row in rows}
    assert {
        "Kosmos-2",
        "InternVL 3 / 3.5",
        "Qwen3-VL-MoE",
        "PaliGemma / PaliGemma 2",
        "Gemma 3",
        "SmolVLM / SmolVLM2",
        "LLaVA-OneVision",
        "Qwen2.5-VL",
        "Qwen3-VL",
    } == families
    vlm4vla = {c["hub_id"] for row in rows for c in row["checkpoints"] if c["vlm4vla"]}
    assert "microsoft/kosmos-2-patch14-224" in vlm4vla and "Qwen/Qwen3-VL-30B-A3B-Instruct" in vlm4vla
    assert all(row["tiny"] for row in rows)  # every family has a tiny model for tests
    main(["--list"])
    table = capsys.readouterr().out
    assert table == backbone_table_markdown()
    assert table in VLA_GUIDE.read_text(), (
        "docs/guide/vla.md's backbone table is stale: paste `python -m vla.backbones --list`"
    )


@pytest.mark.parametrize("arch", ["kosmos2", "gemma3", "smolvlm"])
def test_tiny_builds_are_deterministic(tmp_path, arch):
    """Same (arch, seed), same files: weights (Gemma 3's zero-initialised projection filled from the seed
    too), tokenizer (Kosmos-2's Unigram, SmolVLM's named special tokens) and processor."""
    from policies.tiny import build_tiny_vlm

    first, second = build_tiny_vlm(arch, tmp_path / "a"), build_tiny_vlm(arch, tmp_path / "b")
    for name in ("model.safetensors", "tokenizer.json", "processor_config.json"):
        assert (first / name).read_bytes() == (second / name).read_bytes(), name


def test_prompts_of_the_new_architectures(tiny_vlm):
    """InternVL gets VLM4VLA's published InternVL prompt; Gemma 3 exactly one <bos>; Kosmos-2 its image
    slots after <s><image>; SmolVLM its User/Assistant turn; every prompt ends in the action slot."""
    from vla.backbones import InternVLBackbone

    image = [[np.zeros((224, 224, 3), np.uint8)]]
    internvl = VLAModel.build(str(tiny_vlm("internvl")))
    assert InternVLBackbone.render_prompts(internvl.backbone.processor, [" open the drawer "], [1]) == [
        "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\n<IMG_CONTEXT>"
        "What action should the robotic arm take to open the drawer<|im_end|>\n<|im_start|>assistant\n"
    ]
    expected = {
        "internvl": ("<|im_start|>", "<img>", "<|im_start|>assistant\n"),
        "gemma3": ("<bos>", "<start_of_image>", "<start_of_turn>model\n"),
        "kosmos2": ("<s>", "<image>", "take to open the drawer"),
        "smolvlm": ("<|im_start|>", "<fake_token_around_image>", "<end_of_utterance>\nAssistant:"),
        "llava_onevision": ("<|im_start|>", "<image>", "<|im_start|>assistant\n"),
    }
    for arch, (first, image_start, ending) in expected.items():
        model = internvl if arch == "internvl" else VLAModel.build(str(tiny_vlm(arch)))
        tok = model.backbone.processor.tokenizer
        inputs = model.input_builder()(image, ["open the drawer"])
        ids = inputs["input_ids"][0][:-1].tolist()  # without the action slot
        tokens = tok.convert_ids_to_tokens(ids)
        assert tokens[0] == first and image_start in tokens, arch
        assert tok.decode(ids).endswith(ending), (arch, tok.decode(ids)[-60:])
        if tok.bos_token:  # Qwen-family tokenizers have none
            assert tokens.count(tok.bos_token) <= 1, arch
        assert inputs["action_mask"][0, -1] and int(inputs["action_mask"].sum()) == 1
