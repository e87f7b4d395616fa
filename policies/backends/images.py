"""Image parts of chat messages: validation, conversion and content hashing, shared by every backend.

An image part is ``{"type": "image", "image": X}`` where ``X`` is an RGB ``uint8`` array ``H x W x 3`` (the
project's observation convention) or a ``PIL.Image``. Backends turn it into what they need (a PIL image for
transformers, a base64 data URL for HTTP); the response cache hashes its pixels, so the key depends on the
image content and not on the object that carries it.
"""

from __future__ import annotations

import base64
import hashlib
import io
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from policies.backends.base import Message

if TYPE_CHECKING:
    from PIL import Image


def as_rgb_array(image: object, *, where: str = "image") -> np.ndarray:
    """The image as a contiguous ``uint8`` array ``H x W x 3``; a clear ``TypeError``/``ValueError`` otherwise."""
    if hasattr(image, "convert") and hasattr(image, "size"):  # a PIL image, without importing PIL eagerly
        image = np.asarray(image.convert("RGB"))
    if not isinstance(image, np.ndarray):
        raise TypeError(
            f"{where}: expected an RGB uint8 array H x W x 3 or a PIL image, got {type(image).__name__}"
        )
    if image.dtype != np.uint8 or image.ndim != 3 or image.shape[2] != 3:
        raise ValueError(
            f"{where}: expected an RGB uint8 array H x W x 3, got dtype {image.dtype} and shape {image.shape}; "
            "convert depth or float images first (see policies.mllm.atomic.depth_to_image)"
        )
    if image.shape[0] == 0 or image.shape[1] == 0:
        raise ValueError(f"{where}: empty image of shape {image.shape}")
    return np.ascontiguousarray(image)


def to_pil(image: np.ndarray | Image.Image, *, where: str = "image") -> Image.Image:
    """The image as a ``PIL.Image`` in RGB mode."""
    from PIL import Image

    return Image.fromarray(as_rgb_array(image, where=where), mode="RGB")


def image_digest(image: np.ndarray | Image.Image, *, where: str = "image") -> str:
    """SHA-256 of the pixels (with the shape), so equal pictures give equal digests whatever carries them."""
    array = as_rgb_array(image, where=where)
    h = hashlib.sha256(f"{array.shape[0]}x{array.shape[1]}:".encode())
    h.update(array.tobytes())
    return h.hexdigest()


def png_data_url(image: np.ndarray | Image.Image, *, where: str = "image") -> str:
    """The image as a ``data:image/png;base64,...`` URL (lossless, so the server sees the exact pixels)."""
    buffer = io.BytesIO()
    to_pil(image, where=where).save(buffer, format="PNG", compress_level=1)
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def is_image_part(part: object) -> bool:
    return isinstance(part, dict) and part.get("type") == "image"


def iter_parts(messages: Sequence[Message]) -> Iterator[tuple[str, dict[str, Any]]]:
    """``(where, part)`` for every content part, with a readable location for error messages."""
    for i, message in enumerate(messages):
        content = message.get("content")
        if isinstance(content, list):
            for j, part in enumerate(content):
                yield f"messages[{i}].content[{j}]", part


def validate_messages(messages: Sequence[Message]) -> None:
    """Check the chat structure every backend relies on; raise a ``ValueError`` naming the bad entry."""
    if not isinstance(messages, (list, tuple)) or not messages:
        raise ValueError("messages must be a non-empty list of {'role': ..., 'content': ...} dicts")
    for i, message in enumerate(messages):
        if not isinstance(message, dict) or message.get("role") not in ("system", "user", "assistant"):
            raise ValueError(
                f"messages[{i}] needs a role of 'system', 'user' or 'assistant', got {message!r:.80}"
            )
        content = message.get("content")
        if not isinstance(content, (str, list)):
            raise ValueError(
                f"messages[{i}].content must be a string or a list of parts, got {type(content).__name__}"
            )
    for where, part in iter_parts(messages):
        kind = part.get("type") if isinstance(part, dict) else None
        if kind == "text" and isinstance(part.get("text"), str):
            continue
        if kind == "image":
            as_rgb_array(part.get("image"), where=where)
            continue
        raise ValueError(
            f"{where}: parts must be {{'type': 'text', 'text': str}} or {{'type': 'image', 'image': array}}, "
            f"got {part!r:.80}"
        )
