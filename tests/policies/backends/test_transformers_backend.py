"""The transformers backend on tiny checkpoints: chat rendering, batching, accounting, errors."""

import numpy as np
import pytest

from policies.backends import GenerationConfig, make_backend
from policies.backends.transformers_backend import TransformersBackend, checkpoint_fingerprint


def _images(n, seed=0, shape=(64, 80, 3)):
    rng = np.random.default_rng(seed)
    return [rng.integers(0, 256, shape, dtype=np.uint8) for _ in range(n)]


def _conversation(images, text):
    content = [{"type": "image", "image": im} for im in images] + [{"type": "text", "text": text}]
    return [{"role": "system", "content": "You plan camera motions."}, {"role": "user", "content": content}]


@pytest.fixture(scope="module", params=["qwen2_5_vl", "qwen3_vl"])
def backend(request, tiny_vlm):
    return TransformersBackend(
        str(tiny_vlm(request.param)), config=GenerationConfig(max_new_tokens=12), batch_size=2
    )


def test_generate_counts_tokens(backend):
    g = backend.generate(_conversation(_images(2), "start and goal"))
    assert isinstance(g.text, str) and not g.cached
    assert 1 <= g.completion_tokens <= 12
    # Each 64x80 image adds <|vision_start|> + image pads + <|vision_end|>. Qwen2.5-VL (factor 28) resizes it
    # to 56x84 = 4x6 patches of 14 -> 24 / 4 merged = 6 pads; Qwen3-VL (factor 32) to 64x64 -> 16 / 4 = 4
    # pads.
    text_only = backend.generate(_conversation([], "start and goal"))
    pads = {"qwen2_5_vl": 6, "qwen3_vl": 4}[backend.describe()["model_type"]]
    assert g.prompt_tokens - text_only.prompt_tokens == 2 * (pads + 2)


def test_batch_equals_unbatched_and_keeps_order(backend):
    ims = _images(6, seed=1)
    convs = [_conversation(ims[2 * i : 2 * i + 2], "go " * (i + 1)) for i in range(3)]  # different lengths
    single = [backend.generate(c) for c in convs]
    batched = backend.generate_batch(convs)  # batch_size 2: one padded pair plus a single
    assert [g.text for g in batched] == [g.text for g in single]
    assert [g.prompt_tokens for g in batched] == [g.prompt_tokens for g in single]
    assert [g.completion_tokens for g in batched] == [g.completion_tokens for g in single]


def test_greedy_is_deterministic_and_sampling_is_seeded(tiny_vlm):
    path = str(tiny_vlm("qwen2_5_vl"))
    conv = _conversation(_images(1), "describe")
    greedy = TransformersBackend(path, config=GenerationConfig(max_new_tokens=8))
    assert greedy.generate(conv).text == greedy.generate(conv).text
    hot = [
        TransformersBackend(path, config=GenerationConfig(max_new_tokens=8, temperature=5.0, seed=s))
        for s in (1, 1, 2)
    ]
    texts = [b.generate(conv).text for b in hot]
    assert texts[0] == texts[1]
    assert texts[0] != texts[2]


def test_bad_inputs_get_clear_errors(backend, tmp_path):
    with pytest.raises(ValueError, match=r"messages\[0\].content\[0\].*uint8"):
        backend.generate(
            [{"role": "user", "content": [{"type": "image", "image": np.zeros((8, 8), np.float32)}]}]
        )
    with pytest.raises(ValueError, match="role"):
        backend.generate([{"role": "robot", "content": "hi"}])
    mixed = [_conversation(_images(1), "a"), [{"role": "user", "content": "b"}]]
    with pytest.raises(ValueError, match="images in every conversation or in none"):
        backend.generate_batch(mixed)
    with pytest.raises(OSError, match=r"not a checkpoint directory.*allow_download"):
        TransformersBackend(str(tmp_path / "missing"))


def test_fingerprint_tells_checkpoints_apart(tiny_vlm):
    assert checkpoint_fingerprint(str(tiny_vlm("qwen2_5_vl", 0))) == checkpoint_fingerprint(
        str(tiny_vlm("qwen2_5_vl", 0))
    )
    assert checkpoint_fingerprint(str(tiny_vlm("qwen2_5_vl", 0))) != checkpoint_fingerprint(
        str(tiny_vlm("qwen2_5_vl", 1))
    )


def test_paligemma_without_chat_template(tiny_vlm):
    b = TransformersBackend(str(tiny_vlm("paligemma")), config=GenerationConfig(max_new_tokens=4))
    g = b.generate(_conversation(_images(1), "caption"))
    assert g.completion_tokens >= 1 and g.prompt_tokens > 16  # 16 image tokens + text


def test_make_backend_builds_cached_transformers(tiny_vlm, tmp_path):
    b = make_backend(str(tiny_vlm("qwen2_5_vl")), cache=tmp_path / "c.sqlite", max_new_tokens=6, batch_size=3)
    assert type(b).__name__ == "CachedBackend" and b.inner.batch_size == 3 and b.config.max_new_tokens == 6
    conv = _conversation(_images(1), "x")
    first, second = b.generate(conv), b.generate(conv)
    assert (first.cached, second.cached) == (False, True) and first.text == second.text
    assert second.prompt_tokens == first.prompt_tokens
    plain = make_backend(str(tiny_vlm("qwen2_5_vl")), cache=False, max_new_tokens=6)
    assert isinstance(plain, TransformersBackend)
    with pytest.raises(TypeError, match=r"does not take option.*api_key_env"):
        make_backend(str(tiny_vlm("qwen2_5_vl")), cache=False, api_key_env="X")


def test_dtype_option_casts_weights_and_pixels(tiny_vlm):
    b = TransformersBackend(
        str(tiny_vlm("qwen3_vl")), config=GenerationConfig(max_new_tokens=3), dtype="bfloat16"
    )
    assert b.describe()["dtype"] == "bfloat16" and b.cache_identity()["dtype"] == "bfloat16"
    assert b.generate(_conversation(_images(1), "x")).completion_tokens >= 1
    with pytest.raises(ValueError, match="dtype"):
        TransformersBackend(str(tiny_vlm("qwen3_vl")), dtype="int8")
