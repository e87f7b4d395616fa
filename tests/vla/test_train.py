"""Training: the recipe's schedule, a few CLI steps that lower the loss on a fixed batch, exact resume."""

import itertools
import json
import math

import numpy as np
import pytest
import torch
from safetensors.torch import load_file

from tests.vla_helpers import write_calvin_split
from vla.model import VLAModel
from vla.train import Collator, TrainConfig, lr_factor, main, micro_batch, mixed_precision


def test_schedule_warmup_then_cosine_to_one_percent():
    values = [lr_factor(s, warmup=4, total=14, min_ratio=0.01) for s in range(15)]
    assert values[:4] == [0.25, 0.5, 0.75, 1.0]
    assert values[4] == 1.0
    assert math.isclose(values[9], 0.01 + 0.99 * 0.5, rel_tol=1e-9)  # half way through the cosine
    assert math.isclose(values[14], 0.01, rel_tol=1e-9)
    assert all(a >= b for a, b in itertools.pairwise(values[3:]))


def test_batch_split_precision_and_config_errors():
    assert micro_batch(128, 8, 2) == 8
    with pytest.raises(ValueError, match="not divisible"):
        micro_batch(128, 3, 1)
    assert mixed_precision("auto", cuda=False) == "no" and mixed_precision("fp32", cuda=True) == "no"
    assert mixed_precision("bf16", cuda=False) == "bf16"
    with pytest.raises(ValueError, match="required"):
        TrainConfig(data="x").check()


@pytest.fixture(scope="module")
def fixed_batch_data(tmp_path_factory):
    root = tmp_path_factory.mktemp("calvin_fixed") / "training"
    # 13 frames, chunk 10: exactly 4 samples, so a batch of 4 is the same fixed batch every step
    write_calvin_split(
        root, episodes=[(0, 12)], windows=[(0, 12, "open_drawer", "pull the handle to open the drawer")]
    )
    return root


def _fixed_batch_loss(model, data):
    from vla.data import open_dataset

    dataset = open_dataset(data)
    batch = Collator(model.input_builder(), model.normalizer)([dataset[i] for i in range(len(dataset))])
    with torch.no_grad():
        return float(model(batch["inputs"], batch["arm"], batch["gripper"])["loss"])


def test_cli_steps_lower_the_loss_and_resume_exactly(tiny_vlm, fixed_batch_data, tmp_path, capsys):
    backbone, out = str(tiny_vlm("qwen2_5_vl")), tmp_path / "run"
    flags = [
        "--backbone",
        backbone,
        "--data",
        str(fixed_batch_data),
        "--output",
        str(out),
        "--batch-size",
        "4",
        "--max-steps",
        "8",
        "--lr",
        "1e-3",
        "--warmup-steps",
        "1",
        "--num-workers",
        "0",
        "--log-every",
        "2",
        "--save-every",
        "4",
        "--keep-checkpoints",
        "0",
        "--seed",
        "7",
    ]
    main(flags)
    printed = capsys.readouterr().out
    assert "final checkpoint" in printed
    trains_in = (
        ("bf16" if torch.cuda.is_bf16_supported() else "fp16") if torch.cuda.is_available() else "fp32"
    )
    assert f"precision {trains_in} (--precision auto)" in printed  # issue 29: it read "precision no" on CPU
    log = [json.loads(line) for line in (out / "train_log.jsonl").read_text().splitlines()]
    assert [r["step"] for r in log] == [2, 4, 6, 8]
    assert {"loss", "loss_arm", "loss_gripper", "acc_gripper", "lr", "grad_norm", "epoch"} <= set(log[0])
    assert json.loads((out / "train_config.json").read_text())["batch_size"] == 4
    final = (out / "checkpoints" / "last").resolve()
    assert final.name == "0000008"

    untrained = VLAModel.build(backbone, normalizer=VLAModel.from_pretrained(final).normalizer, seed=7)
    before, after = (
        _fixed_batch_loss(untrained, fixed_batch_data),
        _fixed_batch_loss(VLAModel.from_pretrained(final), fixed_batch_data),
    )
    assert after < 0.7 * before, (before, after)

    # resume from step 4: the same weights as the uninterrupted run
    trained = load_file(str(final / "head.safetensors"))
    (out / "checkpoints" / "last").unlink()
    (out / "checkpoints" / "last").symlink_to("0000004")
    final.rename(out / "uninterrupted")
    main([*flags, "--resume"])
    resumed = load_file(str(out / "checkpoints" / "last" / "head.safetensors"))
    assert all(torch.equal(trained[k], resumed[k]) for k in trained)
    # the schedule resumes from JSON: no pickled custom object (accelerate loads those with
    # weights_only=False)
    assert not list((out / "checkpoints" / "0000004" / "training_state").glob("custom_checkpoint_*"))
    assert (
        json.loads((out / "checkpoints" / "0000004" / "trainer_state.json").read_text())["scheduler"][
            "last_epoch"
        ]
        == 4
    )


def test_resume_without_checkpoint_is_an_error(tiny_vlm, fixed_batch_data, tmp_path):
    with pytest.raises(FileNotFoundError, match="--resume"):
        main(
            [
                "--backbone",
                str(tiny_vlm("qwen2_5_vl")),
                "--data",
                str(fixed_batch_data),
                "--output",
                str(tmp_path),
                "--batch-size",
                "4",
                "--num-workers",
                "0",
                "--resume",
            ]
        )


def test_collator_normalises_targets(tiny_vlm, fixed_batch_data):
    from vla.data import open_dataset

    model = VLAModel.build(str(tiny_vlm("qwen2_5_vl")))
    dataset = open_dataset(fixed_batch_data)
    batch = Collator(model.input_builder(), model.normalizer)([dataset[0], dataset[1]])
    raw = np.stack([dataset[0].actions, dataset[1].actions])
    np.testing.assert_allclose(batch["arm"].numpy(), np.clip(raw[..., :6], -0.65, 0.65) / 0.65, atol=1e-6)
    np.testing.assert_array_equal(batch["gripper"].numpy(), (raw[..., 6] > 0).astype(np.float32))
    assert batch["inputs"]["input_ids"].shape[0] == 2
