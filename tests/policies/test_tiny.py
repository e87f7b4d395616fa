"""Tiny checkpoints: deterministic, loadable through the stock Auto classes, and they generate."""

import hashlib
import json

import numpy as np
import pytest

from policies import tiny


def _digests(folder):
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir())}


def test_build_is_deterministic_and_seeded(tmp_path):
    a = tiny.build_tiny_vlm("qwen2_5_vl", tmp_path / "a", seed=0)
    b = tiny.build_tiny_vlm("qwen2_5_vl", tmp_path / "b", seed=0)
    c = tiny.build_tiny_vlm("qwen2_5_vl", tmp_path / "c", seed=1)
    da, db, dc = _digests(a), _digests(b), _digests(c)
    assert da == db
    assert set(da) >= {
        "config.json",
        "model.safetensors",
        "tokenizer.json",
        "processor_config.json",
        "chat_template.jinja",
    }
    assert da["model.safetensors"] != dc["model.safetensors"]


def test_cli_writes_checkpoint(tmp_path, capsys):
    tiny.main(["--arch", "qwen3_vl", "--out", str(tmp_path / "q3"), "--seed", "3"])
    assert "qwen3_vl" in capsys.readouterr().out
    config = json.loads((tmp_path / "q3" / "config.json").read_text())
    assert config["model_type"] == "qwen3_vl"
    assert config["vision_config"]["deepstack_visual_indexes"] == [0]


def test_unknown_arch_names_the_choices(tmp_path):
    with pytest.raises(ValueError, match="qwen2_5_vl"):
        tiny.build_tiny_vlm("llava", tmp_path)


def test_cache_reuses_and_fingerprints(tmp_path, monkeypatch):
    calls = []
    real = tiny.build_tiny_vlm
    monkeypatch.setattr(tiny, "build_tiny_vlm", lambda *a, **k: calls.append(a) or real(*a, **k))
    first = tiny.cached_tiny_vlm("paligemma", 0, tmp_path)
    second = tiny.cached_tiny_vlm("paligemma", 0, tmp_path)
    assert first == second and len(calls) == 1
    assert [p.name for p in tmp_path.iterdir()] == [first.name]  # no staging folder left behind


@pytest.mark.parametrize("arch", ["qwen2_5_vl", "qwen3_vl", "paligemma"])
def test_stock_auto_classes_load_and_generate(tiny_vlm, arch):
    import torch
    from transformers import AutoModelForImageTextToText, AutoProcessor

    import policies.backends.hf_processing  # noqa: F401 - registers the image-only processors

    path = tiny_vlm(arch)
    processor = AutoProcessor.from_pretrained(path, local_files_only=True)
    model = AutoModelForImageTextToText.from_pretrained(path, local_files_only=True)
    assert not hasattr(processor, "video_processor")
    image = np.random.default_rng(0).integers(0, 256, (60, 90, 3), dtype=np.uint8)
    if arch == "paligemma":
        text = processor.image_token + "where is the cube"
    else:
        chat = [
            {"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "where is the cube"}]}
        ]
        text = processor.apply_chat_template(chat, add_generation_prompt=True, tokenize=False)
        assert text.count("<|image_pad|>") == 1 and text.endswith("<|im_start|>assistant\n")
    inputs = processor(text=[text], images=[[image]], return_tensors="pt")
    with torch.inference_mode():
        out = model.generate(**inputs, max_new_tokens=5, do_sample=False)
    assert out.shape[1] > inputs["input_ids"].shape[1]


def test_hub_layout_qwen_checkpoint_loads_without_torchvision(tiny_vlm, tmp_path):
    """A checkpoint laid out like the hub's Qwen2.5-VL (stock processor class in preprocessor_config.json,
    chat_template.json, no processor_config.json) loads image-only through the backend's loader."""
    import shutil

    from transformers import AutoProcessor
    from transformers.utils import is_torchvision_available

    from policies.backends.hf_processing import ImageOnlyQwen2_5_VLProcessor, load_processor

    src, hub = tiny_vlm("qwen2_5_vl"), tmp_path / "hub"
    shutil.copytree(src, hub)
    saved = json.loads((hub / "processor_config.json").read_text())
    (hub / "processor_config.json").unlink()
    (hub / "preprocessor_config.json").write_text(
        json.dumps({**saved["image_processor"], "processor_class": "Qwen2_5_VLProcessor"})
    )
    (hub / "chat_template.json").write_text(
        json.dumps({"chat_template": (hub / "chat_template.jinja").read_text()})
    )
    (hub / "chat_template.jinja").unlink()
    tok = json.loads((hub / "tokenizer_config.json").read_text())
    (hub / "tokenizer_config.json").write_text(json.dumps({**tok, "processor_class": "Qwen2_5_VLProcessor"}))
    processor = load_processor(str(hub), local_files_only=True)
    assert isinstance(processor, ImageOnlyQwen2_5_VLProcessor) and processor.chat_template
    if not is_torchvision_available():  # what the loader avoids: the stock class wants a video processor
        with pytest.raises((OSError, ImportError, ValueError)):
            AutoProcessor.from_pretrained(str(hub), local_files_only=True)
    from policies.backends import GenerationConfig
    from policies.backends.transformers_backend import TransformersBackend

    backend = TransformersBackend(str(hub), config=GenerationConfig(max_new_tokens=3))
    image = np.zeros((56, 56, 3), np.uint8)
    assert (
        backend.generate(
            [{"role": "user", "content": [{"type": "image", "image": image}, {"type": "text", "text": "hi"}]}]
        ).completion_tokens
        >= 1
    )
