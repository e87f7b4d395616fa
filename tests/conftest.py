"""Test-wide settings: one torch thread (timings on a shared 2-core machine vary 10x otherwise), headless GL."""

import os

os.environ.setdefault("MUJOCO_GL", "egl")
os.environ.setdefault("PYOPENGL_PLATFORM", "egl")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

try:
    import torch

    torch.set_num_threads(1)
except ImportError:  # static-only installs have no torch
    pass


import pytest


@pytest.fixture(scope="session")
def tiny_vlm():
    """``tiny_vlm(arch, seed=0) -> Path``: a tiny checkpoint from ``policies.tiny``, built once per content
    fingerprint under ``.cache/tiny_models`` (or ``$SPATIAL_ARENA_TINY_DIR``) and reused across sessions."""
    from pathlib import Path

    from policies.tiny import cached_tiny_vlm

    root = (
        os.environ.get("SPATIAL_ARENA_TINY_DIR")
        or Path(__file__).resolve().parent.parent / ".cache" / "tiny_models"
    )
    return lambda arch, seed=0: cached_tiny_vlm(arch, seed, root)


def pytest_collection_modifyitems(config, items):
    """Skip tests marked ``slow`` unless they are asked for (``pytest -m slow``, ``make test-slow``)."""
    if "slow" in (config.getoption("-m") or ""):
        return
    skip = pytest.mark.skip(reason="slow: run with `make test-slow` (pytest -m slow)")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def sentence_encoder(tmp_path_factory):
    """A tiny mean-pooling sentence-transformers checkpoint folder (``tests.vla_helpers``), built once."""
    from tests.vla_helpers import tiny_sentence_encoder

    return tiny_sentence_encoder(tmp_path_factory.mktemp("sentence_encoder"))
