"""Hugging Face Hub offline mode while loading, unless downloads are allowed.

``local_files_only=True`` alone still lets ``huggingface_hub`` reach the network: building its request
headers fetches a registry from the Hub (a DNS lookup of ``huggingface.co`` for a hub id that is not in
the local cache). :func:`hub_access` puts ``HF_HUB_OFFLINE`` / ``TRANSFORMERS_OFFLINE`` in force, both in
the environment (read when the libraries are imported) and in ``huggingface_hub.constants`` (read at call
time, for libraries imported earlier), then restores what was there. Nested and concurrent loads share one
offline period (reference counted), so one load ending never turns the network back on under another.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

OFFLINE_VARIABLES = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")
_TRUE = {"1", "ON", "YES", "TRUE"}  # huggingface_hub's reading of a boolean variable

_lock = threading.Lock()
_holders = 0
_saved: dict[str, object] = {}


def _constants() -> object | None:
    try:
        from huggingface_hub import constants
    except ImportError:  # the transformers extra is not installed: nothing to switch
        return None
    return constants


def _enter() -> None:
    global _holders
    with _lock:
        _holders += 1
        if _holders > 1:
            return
        _saved.clear()
        _saved.update({name: os.environ.get(name) for name in OFFLINE_VARIABLES})
        imported = sys.modules.get("huggingface_hub.constants")
        # What the constant is, or would have been had the library been imported without us.
        _saved["constant"] = (
            getattr(imported, "HF_HUB_OFFLINE", False)
            if imported is not None
            else any(str(v).upper() in _TRUE for v in _saved.values() if v is not None)
        )
        os.environ.update({name: "1" for name in OFFLINE_VARIABLES})  # before a first import reads them
        constants = _constants()
        if constants is not None:
            constants.HF_HUB_OFFLINE = True  # type: ignore[attr-defined]


def _exit() -> None:
    global _holders
    with _lock:
        _holders -= 1
        if _holders:
            return
        for name in OFFLINE_VARIABLES:
            value = _saved.get(name)
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = str(value)
        constants = _constants()
        if constants is not None:
            constants.HF_HUB_OFFLINE = bool(_saved["constant"])  # type: ignore[attr-defined]


@contextmanager
def hub_access(allow_download: bool) -> Iterator[None]:
    """Within the block, the Hub is offline unless ``allow_download`` (then nothing is changed)."""
    if allow_download:
        yield
        return
    _enter()
    try:
        yield
    finally:
        _exit()
