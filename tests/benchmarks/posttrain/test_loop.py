"""The closed loop of issue 20 item 3 at tiny scale, as docs/notes/post.md writes it: corpus -> SFT -> the
checkpoint answers a generated static benchmark AND drives CALVIN as a VLA backbone (``--backbone``),
and starts a VLA training run; every step goes through the same loading code a user's run does."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("datasets")
pytest.importorskip("trl")


def _sft(tiny_vlm, tmp_path, kinds: str, steps: int):
    """A tiny CALVIN corpus and an SFT run on it; returns (base model dir, the run's final/)."""
    from benchmarks.datagen.corpus import main as corpus_main
    from benchmarks.posttrain import main as posttrain_main

    base, corpus, run = tiny_vlm("qwen2_5_vl"), tmp_path / "corpus", tmp_path / "sft"
    assert (
        corpus_main(
            [
                "--out",
                str(corpus),
                "--n",
                "4",
                "--validation",
                "0.25",
                "--families",
                "calvin",
                "--kinds",
                kinds,
            ]
        )
        == 0
    )
    posttrain_main(
        [
            "sft",
            "--model",
            str(base),
            "--data",
            str(corpus),
            "--output",
            str(run),
            "--max-steps",
            str(steps),
            "--batch-size",
            "2",
            "--lr",
            "1e-3",
            "--save-steps",
            str(steps),
        ]
    )
    return base, run / "final"


def _assert_backbone_is_the_checkpoint(base, final) -> None:
    """The folder loads through vla.backbones.load_backbone with the post-trained weights, not the base's."""
    import torch
    from safetensors.torch import load_file

    from vla.backbones import load_backbone

    backbone = load_backbone(final)
    trained, original = (
        load_file(str(final / "model.safetensors")),
        load_file(str(base / "model.safetensors")),
    )
    loaded = dict(backbone.vlm.state_dict())
    changed = [k for k in trained if not torch.equal(trained[k], original[k])]
    assert changed and any(k in loaded for k in changed)
    assert all(torch.equal(loaded[k], trained[k]) for k in changed if k in loaded)


def test_an_sft_checkpoint_loads_as_a_vla_backbone(tiny_vlm, tmp_path):
    base, final = _sft(tiny_vlm, tmp_path, "calvin_counting", 1)
    _assert_backbone_is_the_checkpoint(base, final)


@pytest.mark.slow
def test_corpus_sft_then_static_and_calvin_with_the_checkpoint(tiny_vlm, tmp_path, capsys):
    from benchmarks.calvin import main as calvin_main
    from benchmarks.core import RunDir
    from benchmarks.static.__main__ import main as static_main
    from tests.vla_helpers import write_calvin_split
    from vla.train import main as train_main

    base, final = _sft(tiny_vlm, tmp_path, "calvin_counting,calvin_multihop", 2)

    # 1. benchmarks.static: the checkpoint answers a freshly generated SpatialScore-style set
    assert static_main(["generate", "--out", str(tmp_path / "qa"), "--n", "2"]) == 0
    capsys.readouterr()
    assert (
        static_main(
            [
                "--bench",
                "spatialscore",
                "--data",
                str(tmp_path / "qa" / "SpatialScore.json"),
                "--model",
                str(final),
                "--output",
                str(tmp_path / "static"),
                "--max-new-tokens",
                "8",
                "--no-plot",
            ]
        )
        == 0
    )
    assert "items: 2 (2 completed, 0 errored)" in capsys.readouterr().out

    # 2. the same folder loads as a VLA backbone with the post-trained weights (not the base model's)
    _assert_backbone_is_the_checkpoint(base, final)

    # 3. benchmarks.calvin --backbone <ckpt>: an (untrained-head) VLA on the post-trained VLM runs a chain
    calvin_main(
        [
            "--output",
            str(tmp_path / "calvin"),
            "--no-progress",
            "--backbone",
            str(final),
            "--num-sequences",
            "1",
            "--ep-len",
            "6",
            "--execute-steps",
            "5",
        ]
    )
    label = "vla-sft-final"  # the run folder names the post-training run, not just "final"
    (record,) = RunDir(tmp_path / "calvin" / "calvin" / label).merged_records()
    assert record["status"] == "ok" and record["result"]["extras"]["subtasks"][0]["steps"] == 6
    manifest = json.loads((tmp_path / "calvin" / "calvin" / label / "manifest.json").read_text())
    assert str(final) in json.dumps(manifest["policy"])

    # 4. the paper's Sec. 5.5: a VLA trained on CALVIN demonstrations from the post-trained backbone
    demos = tmp_path / "demos" / "training"
    write_calvin_split(
        demos, episodes=[(0, 12)], windows=[(0, 12, "open_drawer", "pull the handle to open the drawer")]
    )
    train_main(
        [
            "--backbone",
            str(final),
            "--data",
            str(demos),
            "--output",
            str(tmp_path / "vla"),
            "--batch-size",
            "2",
            "--max-steps",
            "1",
            "--num-workers",
            "0",
            "--warmup-steps",
            "0",
        ]
    )
    config = json.loads((tmp_path / "vla" / "checkpoints" / "last" / "config.json").read_text())
    assert config["backbone"] == str(final)


def test_post_trained_backbones_get_their_own_run_folders():
    """``--backbone runs/sft/final`` and ``--backbone runs/grpo/final`` must not share ``vla-final``."""
    from benchmarks.core.policy_cli import PolicySpec

    labels = [
        PolicySpec("vla", {"backbone": b}).label
        for b in (
            "runs/sft/final",
            "runs/grpo/final/",
            "runs/grpo/checkpoint-500",
            "tiny-qwen2.5-vl",
            "/ckpt/Qwen2.5-VL-3B",
        )
    ]
    assert labels == [
        "vla-sft-final",
        "vla-grpo-final",
        "vla-grpo-checkpoint-500",
        "vla-tiny-qwen2.5-vl",
        "vla-Qwen2.5-VL-3B",
    ]
