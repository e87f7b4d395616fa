"""The SQLite response cache: hits, misses, key sensitivity, disabling, several processes at once."""

import hashlib
import multiprocessing as mp
import sqlite3

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from policies.backends import Generation, GenerationConfig, make_backend
from policies.backends.cache import CachedBackend, canonical_messages
from policies.backends.scripted import ScriptedBackend


def _echo(messages):
    """Answer with the user text, so a wrong cache hit would show."""
    text = " ".join(
        p["text"]
        for m in messages
        if isinstance(m["content"], list)
        for p in m["content"]
        if p["type"] == "text"
    )
    return Generation(text=f"echo {text}", prompt_tokens=11, completion_tokens=3, cost_usd=0.002)


def _conv(image, text="hello"):
    return [{"role": "user", "content": [{"type": "image", "image": image}, {"type": "text", "text": text}]}]


@pytest.fixture
def image():
    return np.random.default_rng(0).integers(0, 256, (16, 20, 3), dtype=np.uint8)


def test_hit_miss_and_accounting(tmp_path, image):
    inner = ScriptedBackend(_echo)
    cache = CachedBackend(inner, tmp_path / "r.sqlite")
    first = cache.generate(_conv(image))
    second = cache.generate(_conv(image.copy()))  # same pixels, another array
    assert (first.cached, second.cached) == (False, True)
    assert second.text == first.text == "echo hello"
    assert (second.prompt_tokens, second.completion_tokens, second.cost_usd) == (11, 3, 0.002)
    assert len(inner.calls) == 1 and (cache.hits, cache.misses) == (1, 1) and len(cache) == 1


def test_key_depends_on_pixels_text_config_and_identity(tmp_path, image):
    cache = CachedBackend(ScriptedBackend(_echo), tmp_path / "r.sqlite")
    base = cache.key(_conv(image))
    changed = image.copy()
    changed[3, 4, 1] ^= 1  # one bit of one pixel
    assert cache.key(_conv(changed)) != base
    assert cache.key(_conv(image, "hello!")) != base
    assert cache.key(_conv(image[:, :-1])) != base
    hotter = CachedBackend(
        ScriptedBackend(_echo, config=GenerationConfig(temperature=0.7)), tmp_path / "r.sqlite"
    )
    other_model = CachedBackend(ScriptedBackend(_echo, model_id="other"), tmp_path / "r.sqlite")
    assert len({base, hotter.key(_conv(image)), other_model.key(_conv(image))}) == 3
    from PIL import Image

    assert cache.key(_conv(Image.fromarray(image))) == base  # a PIL image with the same pixels
    expected = hashlib.sha256(b"16x20:" + image.tobytes()).hexdigest()
    assert canonical_messages(_conv(image))[0]["content"][0] == {"type": "image", "sha256": expected}


def test_batch_serves_hits_and_sends_only_misses(tmp_path, image):
    inner = ScriptedBackend(_echo)
    cache = CachedBackend(inner, tmp_path / "r.sqlite")
    cache.generate(_conv(image, "b"))
    out = cache.generate_batch([_conv(image, "a"), _conv(image, "b"), _conv(image, "c")])
    assert [g.text for g in out] == ["echo a", "echo b", "echo c"]
    assert [g.cached for g in out] == [False, True, False]
    assert len(inner.calls) == 3  # b once, then a and c


def test_errors_are_not_cached(tmp_path, image):
    from policies.backends import MalformedResponseError

    inner = ScriptedBackend([MalformedResponseError("bad body"), "fine"])
    cache = CachedBackend(inner, tmp_path / "r.sqlite")
    with pytest.raises(MalformedResponseError):
        cache.generate(_conv(image))
    assert cache.generate(_conv(image)).text == "fine" and len(cache) == 1


def test_persistent_across_instances_and_wal(tmp_path, image):
    path = tmp_path / "r.sqlite"
    CachedBackend(ScriptedBackend(_echo), path).generate(_conv(image))
    fresh = ScriptedBackend([])  # would raise if called
    assert CachedBackend(fresh, path).generate(_conv(image)).cached
    assert sqlite3.connect(path).execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_disable_flag_and_default_location(tmp_path, monkeypatch, tiny_vlm):
    monkeypatch.setenv("SPATIAL_ARENA_CACHE_DIR", str(tmp_path / "cachedir"))
    cached = make_backend(str(tiny_vlm("qwen2_5_vl")), max_new_tokens=2)
    assert cached.path == tmp_path / "cachedir" / "responses.sqlite" and cached.path.exists()
    assert not isinstance(
        make_backend(str(tiny_vlm("qwen2_5_vl")), cache=False, max_new_tokens=2), CachedBackend
    )


def _writer(path, start, n):
    cache = CachedBackend(ScriptedBackend(lambda m: "w"), path)
    img = np.zeros((4, 4, 3), np.uint8)
    for i in range(start, start + n):
        cache.generate(_conv(img, f"q{i % 30}"))  # overlapping keys between the two writers


def test_two_processes_share_one_file(tmp_path):
    path = tmp_path / "shared.sqlite"
    CachedBackend(ScriptedBackend([]), path)  # create the schema first
    ctx = mp.get_context("fork")
    procs = [ctx.Process(target=_writer, args=(path, s, 40)) for s in (0, 15)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=60)
    assert [p.exitcode for p in procs] == [0, 0]
    assert sqlite3.connect(path).execute("SELECT COUNT(*) FROM responses").fetchone()[0] == 30


@settings(max_examples=30, deadline=None)
@given(h=st.integers(1, 6), w=st.integers(1, 6), seed=st.integers(0, 2**16), flat_index=st.integers(0, 10**6))
def test_key_changes_with_any_single_pixel_and_not_otherwise(tmp_path_factory, h, w, seed, flat_index):
    cache = CachedBackend(ScriptedBackend([]), tmp_path_factory.getbasetemp() / "prop.sqlite")
    img = np.random.default_rng(seed).integers(0, 256, (h, w, 3), dtype=np.uint8)
    changed = img.copy()
    changed.reshape(-1)[flat_index % changed.size] ^= 0x80
    assert cache.key(_conv(img)) == cache.key(_conv(img.copy()))
    assert cache.key(_conv(changed)) != cache.key(_conv(img))
