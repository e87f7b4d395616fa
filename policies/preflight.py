"""Checks run once in the main process before any worker starts: is the model there, does the server answer,
is the device present. Each failure is a ``ValueError`` whose one-line message names the flag, the value and
the fix; the benchmark commands turn it into ``error: ...`` and exit status 2.

Each check is cheap: a path lookup, the local Hugging Face cache's index, one TCP connect with a short
timeout. Nothing is loaded and nothing is downloaded; torch is imported only to ask about a CUDA or MPS
device that was asked for.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path
from urllib.parse import urlsplit

#: Seconds a server gets to accept a TCP connection during the preflight.
CONNECT_TIMEOUT_S = 3.0


def looks_like_path(name: str) -> bool:
    """A model or data name that can only be a path (absolute, relative with a dot, home, or Windows-style)."""
    return (
        name.startswith(("/", "./", "../", "~", "\\"))
        or (len(name) > 1 and name[1] == ":")
        or name.count("/") > 1
    )


def check_path(flag: str, path: str | os.PathLike[str] | None, *, kind: str = "file or folder") -> None:
    """``path`` exists (``None``: not given, nothing to check)."""
    if path is not None and not Path(path).expanduser().exists():
        raise ValueError(f"{flag} {path}: no such {kind}; check the path")


def check_model(flag: str, model: str, *, allow_download: bool | None = False, served: bool = False) -> None:
    """A model that transformers loads locally: a folder with ``config.json``, or a hub id already in the
    local Hugging Face cache (unless downloads are allowed; ``None``: the option does not exist). ``served``:
    the message also offers serving the model (``--api-base``)."""
    local = Path(model).expanduser()
    if local.is_dir():
        if not (local / "config.json").is_file():
            raise ValueError(
                f"{flag} {model}: the folder has no config.json, so it is not a transformers checkpoint; "
                f"pass the checkpoint folder itself"
            )
        return
    serve = ", or serve it (python -m policies.serve) and pass --api-base URL" if served else ""
    if local.exists():
        raise ValueError(
            f"{flag} {model}: a file, not a checkpoint folder; pass the folder that holds config.json"
        )
    if looks_like_path(model):
        raise ValueError(f"{flag} {model}: no such checkpoint folder; check the path{serve}")
    if allow_download or _in_hub_cache(model):
        return
    download = ", add --allow-download to fetch it" if allow_download is not None else ""
    raise ValueError(
        f"{flag} {model}: not a local folder and not in the local Hugging Face cache; pass a checkpoint "
        f"folder{download}{serve}"
    )


def _in_hub_cache(repo_id: str) -> bool:
    """Whether the hub id has a ``config.json`` in the local cache (``True`` when the cache cannot be read:
    the loader then says what is wrong)."""
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:
        return True
    try:
        found = try_to_load_from_cache(repo_id, "config.json")
    except ValueError:  # not a valid repo id (e.g. spaces, several slashes)
        return False
    return isinstance(found, str)


def check_server(flag: str, api_base: str, *, timeout_s: float = CONNECT_TIMEOUT_S) -> None:
    """An OpenAI-compatible endpoint accepts a TCP connection within ``timeout_s`` (nothing is sent)."""
    parts = urlsplit(api_base)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"{flag} {api_base!r}: not an http(s) URL; pass e.g. http://localhost:8000/v1")
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        raise ValueError(f"{flag} {api_base}: the port is not a number from 0 to 65535") from None
    endpoint = f"{parts.hostname}:{port}"
    try:
        with socket.create_connection((parts.hostname, port), timeout=timeout_s):
            pass
    except OSError as e:
        reason = "timed out" if isinstance(e, TimeoutError) else (e.strerror or type(e).__name__)
        raise ValueError(
            f"{flag} {api_base}: nothing answers at {endpoint} ({reason} within {timeout_s:g} s); start "
            f"the server (e.g. python -m policies.serve --model PATH --port {port}) or fix the "
            f"address"
        ) from None


def check_device(flag: str, device: str) -> None:
    """``cpu``, ``auto``, or a CUDA/MPS device that this machine has."""
    kind, _, index = device.partition(":")
    if kind in ("cpu", "auto") and not index:
        return
    if kind not in ("cuda", "mps") or (index and not index.isdigit()):
        raise ValueError(f"{flag} {device!r}: not a device; use cpu, cuda, cuda:N, mps or auto")
    try:
        import torch
    except ImportError:
        raise ValueError(
            f"{flag} {device}: torch is not installed; use --device cpu after installing the extra "
            f"that needs it"
        ) from None
    if kind == "mps":
        if not torch.backends.mps.is_available():
            raise ValueError(f"{flag} mps: this machine has no MPS device; use {flag} cpu")
        return
    count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if count <= int(index or 0):
        have = "no CUDA device" if count == 0 else f"{count} CUDA device(s)"
        raise ValueError(f"{flag} {device}: this machine has {have}; use {flag} cpu (or auto)")


def check_gpus(flag: str, requested: float) -> None:
    """``requested`` GPUs (a Ray resource request) exist on this machine."""
    if requested <= 0:
        return
    try:
        import torch

        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    except ImportError:
        count = 0
    if count < requested:
        raise ValueError(
            f"{flag} {requested:g}: this machine has {count} GPU(s), so Ray could never place a worker; "
            f"use {flag} 0 (serve the model with policies.serve) or run on a cluster with GPUs "
            f"(--ray ADDRESS)"
        )
