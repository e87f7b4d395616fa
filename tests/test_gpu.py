"""On a CUDA device: VLA training in bf16 through accelerate, the VLA policy's predictions and the transformers
backend's answers agree with the CPU run of the same weights. Skipped where no CUDA device is present (CI has
none); run with ``pytest -m gpu tests/test_gpu.py`` on a GPU machine."""

import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device"),
]


@pytest.fixture(scope="module")
def fixed_batch_data(tmp_path_factory):
    from tests.vla_helpers import write_calvin_split

    root = tmp_path_factory.mktemp("calvin_fixed") / "training"
    write_calvin_split(
        root, episodes=[(0, 12)], windows=[(0, 12, "open_drawer", "pull the handle to open the drawer")]
    )
    return root


def _batch_loss(model, data):
    from vla.data import open_dataset
    from vla.train import Collator

    dataset = open_dataset(data)
    batch = Collator(model.input_builder(), model.normalizer)([dataset[i] for i in range(len(dataset))])
    with torch.no_grad():
        return float(model(batch["inputs"], batch["arm"], batch["gripper"])["loss"])


def test_bf16_training_on_the_gpu_lowers_the_loss(tiny_vlm, fixed_batch_data, tmp_path, capsys):
    from vla.model import VLAModel
    from vla.train import main

    backbone, out = str(tiny_vlm("qwen2_5_vl")), tmp_path / "run"
    main(
        [
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
            "--precision",
            "bf16",
            "--seed",
            "7",
        ]
    )
    printed = capsys.readouterr().out
    assert "precision bf16" in printed and "device cuda" in printed, printed
    final = (out / "checkpoints" / "last").resolve()
    trained = VLAModel.from_pretrained(final)  # the GPU checkpoint loads on the CPU
    untrained = VLAModel.build(backbone, normalizer=trained.normalizer, seed=7)
    before, after = _batch_loss(untrained, fixed_batch_data), _batch_loss(trained, fixed_batch_data)
    assert after < 0.7 * before, (before, after)
    assert [json.loads(line)["step"] for line in (out / "train_log.jsonl").read_text().splitlines()] == [
        2,
        4,
        6,
        8,
    ]


def test_vla_predictions_agree_between_cpu_and_gpu(tiny_vlm):
    from vla.data import resize_image
    from vla.model import VLAModel

    rng = np.random.default_rng(0)
    images = [[resize_image(rng.integers(0, 256, (200, 200, 3), dtype=np.uint8))] for _ in range(2)]
    texts = ["open the drawer", "push the blue block to the left"]
    model = VLAModel.build(str(tiny_vlm("qwen2_5_vl")), chunk_size=10, seed=0).eval()
    on_cpu = model.predict(images, texts)
    on_gpu = model.to("cuda").predict(images, texts)
    assert on_cpu.shape == on_gpu.shape == (2, 10, 7)
    np.testing.assert_allclose(on_gpu[..., :6], on_cpu[..., :6], atol=2e-3)
    np.testing.assert_array_equal(on_gpu[..., 6], on_cpu[..., 6])  # the gripper is a sign: exact


def test_transformers_backend_runs_on_the_gpu(tiny_vlm):
    from policies.backends import GenerationConfig
    from policies.backends.transformers_backend import TransformersBackend

    rng = np.random.default_rng(0)
    image = rng.integers(0, 256, (64, 80, 3), dtype=np.uint8)
    conversation = [
        {"role": "user", "content": [{"type": "image", "image": image}, {"type": "text", "text": "go"}]}
    ]
    path, config = str(tiny_vlm("qwen2_5_vl")), GenerationConfig(max_new_tokens=8)
    cpu = TransformersBackend(path, config=config, device="cpu")
    gpu = TransformersBackend(path, config=config, device="cuda", dtype="float32")
    assert next(gpu.model.parameters()).is_cuda
    a, b = cpu.generate(conversation), gpu.generate(conversation)
    assert a.prompt_tokens == b.prompt_tokens and 1 <= b.completion_tokens <= 8
    # same first-token distribution: the processor and the weights are the same on both devices
    text, images = cpu._render(conversation)
    inputs = cpu._encode([text], [images])
    with torch.no_grad():
        logits_cpu = cpu.model(**inputs).logits[0, -1]
        logits_gpu = gpu.model(**{k: v.to("cuda") for k, v in inputs.items()}).logits[0, -1].cpu()
    torch.testing.assert_close(logits_gpu, logits_cpu, atol=1e-3, rtol=1e-3)
    bf16 = TransformersBackend(path, config=config, device="cuda", dtype="bfloat16")
    assert bf16.dtype == "bfloat16" and 1 <= bf16.generate(conversation).completion_tokens <= 8
