"""The OpenAI chat-completions wire format, the subset our HTTP backend and vLLM-style clients use.

Requests: ``{"model", "messages", "max_tokens" | "max_completion_tokens", "temperature", "top_p", "seed"}``
with message content as a string or a list of ``{"type": "text", "text"}`` and
``{"type": "image_url", "image_url": {"url": "data:image/png;base64,..."}}`` parts. Images must be inline
data URLs: the server never fetches a remote URL. :class:`RequestLimits` bounds what one request may hold
(images per request, pixels per image, checked from the image header before any pixel is decoded).
Anything it cannot answer faithfully (``stream``, ``n > 1``, stop sequences, penalties, JSON mode, tool
calls; see :data:`UNSUPPORTED`) is refused with a :class:`RequestError` naming the field, never ignored.
"""

from __future__ import annotations

import base64
import binascii
import io
import json
import time
import uuid
from dataclasses import dataclass
from typing import Any

import numpy as np

from policies.backends.base import Generation, GenerationConfig, Message
from policies.backends.images import validate_messages
from policies.backends.jsonwire import MAX_JSON_DEPTH, NestingError, loads_bounded

ROLES = ("system", "user", "assistant")
# Image formats decoded (the data URL's bytes decide, not its media type): what OpenAI-compatible APIs accept.
IMAGE_FORMATS = ("PNG", "JPEG", "WEBP", "GIF")
# Fields that would change the answer and that this server does not implement: refused, never ignored.
UNSUPPORTED = (
    "stop",
    "response_format",
    "presence_penalty",
    "frequency_penalty",
    "logit_bias",
    "logprobs",
    "top_logprobs",
    "tools",
    "functions",
    "tool_choice",
)


class RequestError(ValueError):
    """A request the server refuses; ``status`` is the HTTP status, the message tells the client the fix."""

    def __init__(self, status: int, message: str, param: str | None = None) -> None:
        super().__init__(message)
        self.status, self.param = status, param

    def body(self) -> dict[str, Any]:
        kind = "invalid_request_error" if self.status < 500 else "server_error"
        return error_body(str(self), kind, self.param, self.status)


def error_body(message: str, kind: str, param: str | None, status: int) -> dict[str, Any]:
    """The OpenAI error object (clients read ``error.message``)."""
    return {"error": {"message": message, "type": kind, "param": param, "code": status}}


@dataclass(frozen=True)
class RequestLimits:
    """What one request may hold; with the body-size and connection caps they bound the server's memory.

    Args:
        max_images: image parts in one request (all messages together).
        max_image_pixels: width x height of one image, read from its header before decoding (a 200 KB PNG
            can hold a 20,000 x 20,000 image: about 1.2 GB once decoded). The default, 2**20 (1024 x 1024),
            admits a 1280 x 720 frame.
    """

    max_images: int = 16  # EB-style chat history sends several turns of several cameras
    max_image_pixels: int = 2**20

    def __post_init__(self) -> None:
        if self.max_images < 0 or self.max_image_pixels < 1:
            raise ValueError(
                f"need max_images >= 0 and max_image_pixels >= 1, got {self.max_images}, "
                f"{self.max_image_pixels}"
            )


@dataclass(frozen=True)
class ChatRequest:
    """A parsed request: backend-ready messages (images as arrays) and its decoding settings."""

    messages: list[Message]
    config: GenerationConfig

    @property
    def has_images(self) -> bool:
        return any(
            isinstance(m["content"], list) and any(p["type"] == "image" for p in m["content"])
            for m in self.messages
        )


def parse_chat_request(
    raw: bytes, served_model: str, defaults: GenerationConfig, limits: RequestLimits = RequestLimits()
) -> ChatRequest:
    """Validate a ``/v1/chat/completions`` body; fields the client leaves out take ``defaults``."""
    body = _json_object(raw)
    _check_model(body, served_model)
    _refuse_unsupported(body)
    raw_messages = _field(body, "messages", list)
    _check_image_count(raw_messages, limits.max_images)
    messages = [_message(m, i, limits.max_image_pixels) for i, m in enumerate(raw_messages)]
    try:
        validate_messages(messages)
    except (TypeError, ValueError) as err:
        raise RequestError(400, str(err), "messages") from err
    return ChatRequest(messages, _generation_config(body, defaults))


def _json_object(raw: bytes) -> dict[str, Any]:
    try:
        body = loads_bounded(raw)
    except NestingError:
        raise RequestError(
            400,
            f"the request body nests JSON arrays/objects too deeply to be a chat request "
            f"(more than {MAX_JSON_DEPTH} levels)",
        ) from None
    except ValueError as err:  # UnicodeDecodeError is one
        raise RequestError(400, f"the request body is not valid JSON ({str(err)[:200]})") from None
    if not isinstance(body, dict):
        raise RequestError(400, f"the request body must be a JSON object, got a JSON {type(body).__name__}")
    return body


def _field(body: dict[str, Any], name: str, kind: type, default: Any = None, required: bool = True) -> Any:
    if name not in body or body[name] is None:
        if required:
            raise RequestError(400, f"'{name}' is required", name)
        return default
    value = body[name]
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
        raise RequestError(400, f"'{name}' must be a {kind.__name__}, got {json.dumps(value)[:80]}", name)
    return value


def _check_model(body: dict[str, Any], served_model: str) -> None:
    model = _field(body, "model", str)
    if model != served_model:
        raise RequestError(
            404,
            f"model {model!r} is not served here; this server serves {served_model!r} "
            f"(GET /v1/models lists it; start the server with --served-model-name to rename it)",
            "model",
        )


def _refuse_unsupported(body: dict[str, Any]) -> None:
    if body.get("stream"):
        raise RequestError(
            400, "'stream': true is not supported; send the request without streaming", "stream"
        )
    if body.get("n", 1) != 1:
        raise RequestError(400, f"'n' must be 1 (one answer per request), got {body.get('n')!r}", "n")
    for name in UNSUPPORTED:
        if body.get(name) and not (name == "response_format" and body[name] == {"type": "text"}):
            raise RequestError(
                400, f"'{name}' is not supported by this server; send the request without it", name
            )


def _generation_config(body: dict[str, Any], defaults: GenerationConfig) -> GenerationConfig:
    name = "max_completion_tokens" if body.get("max_completion_tokens") is not None else "max_tokens"
    max_new = _field(body, name, int, defaults.max_new_tokens, required=False)
    temperature = _field(body, "temperature", float, defaults.temperature, required=False)
    top_p = _field(body, "top_p", float, defaults.top_p, required=False)
    seed = _field(body, "seed", int, defaults.seed, required=False)
    if max_new < 1:
        raise RequestError(400, f"'{name}' must be at least 1, got {max_new}", name)
    if not 0.0 <= temperature <= 2.0:
        raise RequestError(400, f"'temperature' must be between 0 and 2, got {temperature}", "temperature")
    if not 0.0 < top_p <= 1.0:
        raise RequestError(400, f"'top_p' must be in (0, 1], got {top_p}", "top_p")
    if temperature == 0:  # greedy: sampling settings do not change the answer, so they must not split batches
        top_p, seed = 1.0, 0
    return GenerationConfig(max_new_tokens=max_new, temperature=temperature, top_p=top_p, seed=seed)


def _check_image_count(messages: list[Any], max_images: int) -> None:
    """Refuse a request with more than ``max_images`` image parts before decoding any of them."""
    count = sum(
        1
        for m in messages
        if isinstance(m, dict) and isinstance(m.get("content"), list)
        for p in m["content"]
        if isinstance(p, dict) and p.get("type") == "image_url"
    )
    if count > max_images:
        raise RequestError(
            400,
            f"the request holds {count} images; this server accepts at most {max_images} per "
            f"request (--max-images); send fewer images",
            "messages",
        )


def _message(message: object, i: int, max_pixels: int) -> Message:
    where = f"messages[{i}]"
    if not isinstance(message, dict) or message.get("role") not in ROLES:
        role = message.get("role") if isinstance(message, dict) else None
        raise RequestError(400, f"{where}: role must be one of {list(ROLES)}, got {role!r}", "messages")
    if message.get("tool_calls"):
        raise RequestError(400, f"{where}: tool calls are not supported by this server", "messages")
    content = message.get("content")
    if isinstance(content, str):
        return {"role": message["role"], "content": content}
    if not isinstance(content, list) or not content:
        raise RequestError(400, f"{where}.content must be a string or a non-empty list of parts", "messages")
    parts = [_part(p, f"{where}.content[{j}]", max_pixels) for j, p in enumerate(content)]
    return {"role": message["role"], "content": parts}


def _part(part: Any, where: str, max_pixels: int) -> dict[str, Any]:
    kind = part.get("type") if isinstance(part, dict) else None
    if kind == "text" and isinstance(part.get("text"), str):
        return {"type": "text", "text": part["text"]}
    if kind == "image_url":
        url = part.get("image_url")
        url = url.get("url") if isinstance(url, dict) else url
        return {"type": "image", "image": decode_data_url(url, where, max_pixels)}
    raise RequestError(
        400,
        f"{where}: parts must be {{'type': 'text', 'text': ...}} or "
        f"{{'type': 'image_url', 'image_url': {{'url': 'data:image/png;base64,...'}}}}, "
        f"got {json.dumps(part)[:80]}",
        "messages",
    )


def decode_data_url(url: object, where: str, max_pixels: int = RequestLimits.max_image_pixels) -> np.ndarray:
    """A ``data:image/...;base64,`` URL as an RGB ``uint8`` array; remote URLs are refused (no network).

    The size comes from the image header (``Image.open`` reads no pixels): an image over ``max_pixels`` is
    refused before its pixels are decoded, so a small compressed file cannot expand into gigabytes."""
    if not isinstance(url, str) or not url.startswith("data:image/") or ";base64," not in url:
        shown = url[:60] if isinstance(url, str) else type(url).__name__
        raise RequestError(
            400,
            f"{where}: images must be inline base64 data URLs ('data:image/png;base64,...'); "
            f"this server fetches nothing over the network, got {shown!r}",
            "messages",
        )
    from PIL import Image, UnidentifiedImageError

    try:
        data = base64.b64decode(url[url.index(";base64,") + len(";base64,") :], validate=True)
        with Image.open(io.BytesIO(data), formats=IMAGE_FORMATS) as image:
            _check_pixels(image.size, where, max_pixels)
            rgb = image if image.mode == "RGB" else image.convert("RGB")  # no copy when it is RGB already
            return np.asarray(rgb)
    except RequestError:
        raise
    except Image.DecompressionBombError as err:  # PIL's own limit, met in the header of a huge image
        raise RequestError(
            400,
            f"{where}: the image is larger than this server accepts ({max_pixels} pixels per "
            f"image, --max-image-pixels): {str(err)[:120]}",
            "messages",
        ) from None
    except (binascii.Error, ValueError, UnidentifiedImageError, OSError) as err:
        raise RequestError(
            400,
            f"{where}: the data URL does not hold a readable {'/'.join(IMAGE_FORMATS)} image "
            f"({str(err)[:200]})",
            "messages",
        ) from None


def _check_pixels(size: tuple[int, int], where: str, max_pixels: int) -> None:
    width, height = size
    if width * height > max_pixels:
        raise RequestError(
            400,
            f"{where}: the image is {width}x{height} = {width * height} pixels; this server "
            f"accepts at most {max_pixels} per image (--max-image-pixels); send a smaller image",
            "messages",
        )


def completion_body(generation: Generation, model: str, max_new_tokens: int) -> dict[str, Any]:
    """A ``chat.completion`` object with ``usage``. ``finish_reason`` is the backend's (``stop`` or
    ``length``) or, when it does not tell, ``length`` when the token budget was used up, else ``stop``."""
    completion = generation.completion_tokens or 0
    prompt = generation.prompt_tokens or 0
    finish = generation.finish_reason
    if finish not in ("stop", "length"):
        finish = "length" if completion >= max_new_tokens else "stop"
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": generation.text},
                "finish_reason": finish,
            }
        ],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        },
    }


def models_body(model: str, created: int) -> dict[str, Any]:
    """``GET /v1/models``: the one model this server answers for."""
    return {
        "object": "list",
        "data": [{"id": model, "object": "model", "created": created, "owned_by": "spatial-arena"}],
    }
