"""OpenAI-compatible chat-completions backend over HTTP (OpenAI, vLLM, SGLang, LM Studio, OpenRouter, ...).

Standard library only (``urllib`` + ``concurrent.futures``). Images travel as PNG ``data:`` URLs, so the
server sees the exact pixels. Retryable failures (HTTP 5xx and 429, timeouts, connection errors) are retried
with exponential backoff; anything else raises a :mod:`policies.backends.errors` exception with the server's
message. Every outcome is counted in :attr:`HTTPBackend.stats`.

``timeout_s`` is a total deadline per attempt (connect, send, headers and body together): a watchdog shuts
the socket when it passes, so a server that drips a byte at a time cannot hold an attempt past it. A refused connection (nothing listening)
or a host name that does not resolve is not retried like a busy server: after
:data:`UNREACHABLE_ATTEMPTS` such attempts in a row (about a second) the call fails, so a run against a dead
endpoint stops in seconds rather than spending the whole backoff on every call. Every
field of the answer is checked: text that is not text, token counts or a cost that are not finite
non-negative numbers make the response malformed (:class:`MalformedResponseError`, counted), never a
``ValueError`` or a NaN in the run's cost. So are an answer nested more than 64 levels deep (read through
:func:`~policies.backends.jsonwire.loads_bounded`, so no ``RecursionError`` escapes whatever the caller's
stack) and one larger than 16 MiB (read no further).
"""

from __future__ import annotations

import contextlib
import functools
import http.client
import json
import math
import os
import random
import socket
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from typing import Any, NoReturn
from urllib.parse import urlparse

from policies.backends.base import Backend, Generation, GenerationConfig, Message
from policies.backends.errors import (
    BackendRequestError,
    BackendUnavailableError,
    MalformedResponseError,
)
from policies.backends.images import png_data_url, validate_messages
from policies.backends.jsonwire import loads_bounded


@dataclass
class HTTPStats:
    """Counters over the backend's lifetime (all threads)."""

    requests: int = 0  # HTTP attempts, retries included
    successes: int = 0
    retries: int = 0
    timeouts: int = 0
    connection_errors: int = 0
    server_errors: int = 0  # HTTP 5xx
    rate_limited: int = 0  # HTTP 429
    client_errors: int = 0  # other HTTP 4xx
    malformed: int = 0
    empty_content: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0


MAX_TOKENS_REPORTED = 2**53  # a token count beyond this is not a count (and would overflow cost arithmetic)
MAX_RESPONSE_BYTES = 16 * 2**20  # a chat completion is kilobytes; more is not an answer, and is not read


class _Deadline:
    """Shuts the attempt's socket down when ``seconds`` have passed (a per-read timeout never fires for a
    server that sends a byte now and then); :attr:`expired` tells the attempt why its read ended."""

    def __init__(self, seconds: float) -> None:
        self.expired = False
        self._sock: socket.socket | None = None
        self._lock = threading.Lock()
        self._timer = threading.Timer(seconds, self._expire)
        self._timer.daemon = True
        self._timer.start()

    def attach(self, sock: socket.socket) -> None:
        with self._lock:
            self._sock = sock
            late = self.expired
        if late:  # connecting alone took the whole budget
            _shut(sock)

    def _expire(self) -> None:
        with self._lock:
            self.expired, sock = True, self._sock
        if sock is not None:
            _shut(sock)

    def cancel(self) -> None:
        self._timer.cancel()


def _shut(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):  # already closed
        sock.shutdown(socket.SHUT_RDWR)


def _watched(connection_class: type, request: urllib.request.Request) -> Any:
    """A connection factory for ``do_open`` whose connections hand their socket to the request's deadline."""
    deadline: _Deadline | None = getattr(request, "deadline", None)

    def make(*args: Any, **kwargs: Any) -> http.client.HTTPConnection:
        conn = connection_class(*args, **kwargs)
        if deadline is not None:
            connect = conn.connect

            def connect_and_watch() -> None:
                connect()
                deadline.attach(conn.sock)

            conn.connect = connect_and_watch
        return conn

    return make


class _DeadlineHTTPHandler(urllib.request.HTTPHandler):
    def http_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(_watched(http.client.HTTPConnection, req), req)


class _DeadlineHTTPSHandler(urllib.request.HTTPSHandler):
    def https_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        kwargs: dict[str, Any] = {"context": self._context}  # type: ignore[attr-defined]
        if getattr(self, "_check_hostname", None) is not None:  # Python < 3.12
            kwargs["check_hostname"] = self._check_hostname  # type: ignore[attr-defined]
        return self.do_open(_watched(http.client.HTTPSConnection, req), req, **kwargs)


@functools.cache
def _opener() -> urllib.request.OpenerDirector:
    """``urlopen``'s opener (proxies from the environment included) with deadline-aware connections."""
    return urllib.request.build_opener(_DeadlineHTTPHandler, _DeadlineHTTPSHandler)


#: Attempts in a row that found nothing listening (or no such host) before a call fails, and the longest
#: wait between them: a server being restarted gets a second, a dead one costs no more.
UNREACHABLE_ATTEMPTS = 3
UNREACHABLE_DELAY_S = 0.5


class _Retryable(Exception):
    def __init__(self, reason: str, retry_after: float | None = None, *, unreachable: bool = False) -> None:
        super().__init__(reason)
        self.retry_after, self.unreachable = retry_after, unreachable


class HTTPBackend(Backend):
    """A model served behind an OpenAI-compatible ``/chat/completions`` endpoint.

    Args:
        model: the model name the server knows (``"gpt-4o"``, ``"Qwen/Qwen2.5-VL-7B-Instruct"``, ...).
        api_base: base URL up to the version, e.g. ``"http://localhost:8000/v1"``.
        config: decoding settings (greedy by default).
        api_key_env: environment variable holding the API key (no ``Authorization`` header when unset).
        timeout_s: total time one attempt may take (connect, send and the whole answer).
        max_retries: retries after the first attempt for 5xx, 429, timeouts and connection errors.
        backoff_s / backoff_max_s: first and largest delay between attempts (doubling, with jitter); a
            ``Retry-After`` header from the server is honoured up to ``backoff_max_s``.
        max_concurrency: most requests in flight at once from this backend (all threads).
        price_prompt_per_mtok / price_completion_per_mtok: USD per million tokens, for cost accounting when
            the server reports token usage but no cost.
        extra_body: extra JSON fields for every request (e.g. ``{"top_k": 1}`` for vLLM).
        max_tokens_field: the request field for the completion budget (``"max_completion_tokens"`` for newer
            OpenAI models).
    """

    def __init__(
        self,
        model: str,
        api_base: str,
        *,
        config: GenerationConfig | None = None,
        api_key_env: str = "OPENAI_API_KEY",
        timeout_s: float = 120.0,
        max_retries: int = 5,
        backoff_s: float = 1.0,
        backoff_max_s: float = 60.0,
        max_concurrency: int = 8,
        price_prompt_per_mtok: float | None = None,
        price_completion_per_mtok: float | None = None,
        extra_body: dict[str, Any] | None = None,
        max_tokens_field: str = "max_tokens",
    ) -> None:
        parsed = urlparse(api_base)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise ValueError(
                f"api_base must be an http(s) URL like 'http://localhost:8000/v1', got {api_base!r}"
            )
        if max_concurrency < 1 or max_retries < 0 or timeout_s <= 0:
            raise ValueError("need max_concurrency >= 1, max_retries >= 0 and timeout_s > 0")
        self.model_id = model
        self.api_base = api_base.rstrip("/")
        self.url = self.api_base + "/chat/completions"
        self.config = config or GenerationConfig()
        self.api_key_env = api_key_env
        self.timeout_s, self.max_retries = timeout_s, max_retries
        self.backoff_s, self.backoff_max_s = backoff_s, backoff_max_s
        self.max_concurrency = max_concurrency
        self.prices = (price_prompt_per_mtok, price_completion_per_mtok)
        self.extra_body = dict(extra_body or {})
        self.max_tokens_field = max_tokens_field
        self.stats = HTTPStats()
        self._lock = threading.Lock()
        self._slots = threading.BoundedSemaphore(max_concurrency)
        self._jitter = random.Random(self.config.seed)

    # -------------------------------------------------------------------------------------- generation

    def generate(self, messages: Sequence[Message]) -> Generation:
        validate_messages(messages)
        body = json.dumps(self._request_body(messages)).encode()
        began = time.perf_counter()
        raw = self._post_with_retries(body)
        return self._parse(raw, time.perf_counter() - began)

    def generate_batch(self, conversations: Sequence[Sequence[Message]]) -> list[Generation]:
        """Answer conversations concurrently (at most ``max_concurrency`` in flight), in the order given.

        If any conversation fails, the first error is raised after all requests have finished.
        """
        if len(conversations) <= 1:
            return [self.generate(c) for c in conversations]
        with ThreadPoolExecutor(max_workers=min(self.max_concurrency, len(conversations))) as pool:
            futures = [pool.submit(self.generate, c) for c in conversations]
        return [f.result() for f in futures]

    def _request_body(self, messages: Sequence[Message]) -> dict[str, Any]:
        c = self.config
        body: dict[str, Any] = {
            "model": self.model_id,
            "messages": [_wire_message(m) for m in messages],
            self.max_tokens_field: c.max_new_tokens,
            "temperature": c.temperature,
            "top_p": c.top_p,
            "seed": c.seed,
        }
        return {**body, **self.extra_body}

    # ----------------------------------------------------------------------------------------- transport

    def _post_with_retries(self, body: bytes) -> bytes:
        last, unreachable = "", 0
        for attempt in range(self.max_retries + 1):
            if attempt:
                self._count(retries=1)
            try:
                with self._slots:
                    return self._post_once(body)
            except _Retryable as err:
                last = str(err)
                unreachable = unreachable + 1 if err.unreachable else 0
                if unreachable >= UNREACHABLE_ATTEMPTS:
                    raise BackendUnavailableError(
                        f"{self.url}: {last} on {unreachable} attempts in a row (nothing answers there: start "
                        f"the server, or check api_base)"
                    ) from None
                if attempt < self.max_retries:
                    delay = self._delay(attempt, err.retry_after)
                    time.sleep(min(delay, UNREACHABLE_DELAY_S) if err.unreachable else delay)
        raise BackendUnavailableError(
            f"{self.url}: no answer after {self.max_retries + 1} attempts; last error: {last}"
        )

    def _post_once(self, body: bytes) -> bytes:
        request = urllib.request.Request(self.url, data=body, headers=self._headers(), method="POST")
        request.deadline = deadline = _Deadline(self.timeout_s)  # type: ignore[attr-defined]
        self._count(requests=1)
        try:
            return self._send(request)
        except _Retryable:
            raise
        except (OSError, http.client.HTTPException) as err:
            if not deadline.expired:
                raise
            self._count(timeouts=1)
            raise _Retryable(
                f"no complete answer within {self.timeout_s:g} s (timeout_s, the deadline of one "
                f"attempt; {type(err).__name__})"
            ) from err
        finally:
            deadline.cancel()

    def _send(self, request: urllib.request.Request) -> bytes:
        deadline: _Deadline = request.deadline  # type: ignore[attr-defined]
        try:
            with _opener().open(request, timeout=self.timeout_s) as response:
                bounded = response.length is not None and response.length <= MAX_RESPONSE_BYTES
                # read() notices a cut
                data = response.read() if bounded else response.read(MAX_RESPONSE_BYTES + 1)
        except urllib.error.HTTPError as err:
            # the error body was cut off by the deadline: a timeout, not the server's word
            if deadline.expired:
                raise TimeoutError("deadline") from err
            self._raise_for_status(err)
        except TimeoutError as err:  # socket.timeout is TimeoutError
            self._count(timeouts=1)
            raise _Retryable(f"timed out after {self.timeout_s:g} s ({err})") from err
        except urllib.error.URLError as err:
            if deadline.expired:  # connecting or sending was cut off by our own deadline
                raise TimeoutError("deadline") from err
            if isinstance(err.reason, TimeoutError):
                self._count(timeouts=1)
                raise _Retryable(f"timed out after {self.timeout_s:g} s ({err.reason})") from err
            self._count(connection_errors=1)
            unreachable = isinstance(err.reason, (ConnectionRefusedError, socket.gaierror))
            raise _Retryable(f"connection error: {err.reason}", unreachable=unreachable) from err
        except (ConnectionError, OSError, http.client.HTTPException) as err:  # reset or cut off mid-response
            if deadline.expired:  # cut off by our own deadline
                raise TimeoutError("deadline") from err
            self._count(connection_errors=1)
            raise _Retryable(f"connection error: {type(err).__name__}: {err}") from err
        if deadline.expired:  # the socket was shut as the last bytes came: a short body reads as complete
            raise TimeoutError("deadline")
        return data

    def _raise_for_status(self, err: urllib.error.HTTPError) -> None:
        detail = _error_detail(err)
        if err.code == 429 or err.code >= 500:
            self._count(**({"rate_limited": 1} if err.code == 429 else {"server_errors": 1}))
            raise _Retryable(f"HTTP {err.code}: {detail}", _retry_after(err)) from err
        self._count(client_errors=1)
        hint = ""
        if err.code in (401, 403):
            state = "is set" if os.environ.get(self.api_key_env) else "is not set"
            hint = f" (the API key comes from ${self.api_key_env}, which {state}; choose another with api_key_env)"
        raise BackendRequestError(
            f"{self.url} refused the request with HTTP {err.code}: {detail}{hint}"
        ) from err

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json", "User-Agent": "spatial-arena"}
        key = os.environ.get(self.api_key_env) if self.api_key_env else None
        if key:
            headers["Authorization"] = f"Bearer {key}"
        return headers

    def _delay(self, attempt: int, retry_after: float | None) -> float:
        delay = min(self.backoff_max_s, self.backoff_s * 2**attempt)
        with self._lock:
            delay *= self._jitter.uniform(0.5, 1.0)  # spread retries of concurrent requests
        if retry_after is not None:
            delay = max(delay, min(retry_after, self.backoff_max_s))
        return delay

    # ------------------------------------------------------------------------------------------- parsing

    def _parse(self, raw: bytes, latency: float) -> Generation:
        if len(raw) > MAX_RESPONSE_BYTES:
            self._malformed(f"the answer is larger than {MAX_RESPONSE_BYTES} bytes: {raw[:200]!r}")
        try:
            payload = loads_bounded(raw)  # a fixed depth limit: the previews below never recurse too deep
        except ValueError as err:  # UnicodeDecodeError and NestingError are ValueErrors
            self._malformed(f"body is not JSON ({type(err).__name__}: {str(err)[:100]}): {raw[:200]!r}")
        if not isinstance(payload, dict):
            self._malformed(f"body is a JSON {type(payload).__name__}, not an object: {raw[:200]!r}")
        if "error" in payload and "choices" not in payload:
            self._malformed(f"server returned an error object: {json.dumps(payload['error'])[:300]}")
        text = self._content(payload)
        prompt_tokens, completion_tokens, cost = self._usage(payload.get("usage"))
        self._count(
            successes=1,
            prompt_tokens=prompt_tokens or 0,
            completion_tokens=completion_tokens or 0,
            cost_usd=cost or 0.0,
            empty_content=int(not text),
        )
        return Generation(text, prompt_tokens, completion_tokens, latency, cached=False, cost_usd=cost)

    def _content(self, payload: dict[str, Any]) -> str:
        choices = payload.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            self._malformed(f"no 'choices' list in the response: {json.dumps(payload)[:300]}")
        message = choices[0].get("message")
        if not isinstance(message, dict):
            self._malformed(f"choices[0] has no 'message' object: {json.dumps(choices[0])[:300]}")
        content = message.get("content")
        if content is None:  # refusals and tool calls carry no text: an empty answer, counted as such
            return ""
        if isinstance(content, list):  # some servers return content parts
            content = "".join(self._part_text(p, i) for i, p in enumerate(content))
        if not isinstance(content, str):
            self._malformed(f"message content is a {type(content).__name__}, not text")
        return content

    def _part_text(self, part: object, i: int) -> str:
        """The text of one content part; a refusal part carries none. Anything else is not an answer."""
        if isinstance(part, dict):
            kind = part.get("type")
            if kind in ("text", "output_text") and isinstance(part.get("text"), str):
                return part["text"]
            if kind == "refusal":
                return ""
        return self._malformed(f"content part {i} is not text: {json.dumps(part)[:200]}")

    def _usage(self, usage: object) -> tuple[int | None, int | None, float | None]:
        if not isinstance(usage, dict):
            return None, None, None
        prompt, completion = (
            self._count_field(usage, "prompt_tokens"),
            self._count_field(usage, "completion_tokens"),
        )
        if usage.get("cost") is not None:  # OpenRouter and some gateways report it
            return prompt, completion, self._cost_field(usage["cost"])
        p_in, p_out = self.prices
        if p_in is not None and p_out is not None and prompt is not None and completion is not None:
            return prompt, completion, (prompt * p_in + completion * p_out) / 1e6
        return prompt, completion, None

    def _count_field(self, usage: dict[str, Any], name: str) -> int | None:
        """A token count: absent or null is unknown; anything but a whole number in [0, 2**53] is malformed."""
        value = usage.get(name)
        if value is None:
            return None
        whole = isinstance(value, int) or (
            isinstance(value, float) and math.isfinite(value) and value.is_integer()
        )
        if isinstance(value, bool) or not whole or not 0 <= value <= MAX_TOKENS_REPORTED:
            return self._malformed(f"usage.{name} is not a token count: {json.dumps(value)[:60]}")
        return int(value)

    def _cost_field(self, value: object) -> float:
        number = math.nan
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            with contextlib.suppress(OverflowError):  # an integer too large for a float
                number = float(value)
        if not math.isfinite(number) or number < 0:
            self._malformed(f"usage.cost is not a finite non-negative number: {json.dumps(value)[:60]}")
        return number

    def _malformed(self, detail: str) -> NoReturn:
        self._count(malformed=1)
        raise MalformedResponseError(f"{self.url}: malformed chat completion: {detail}")

    def _count(self, **increments: float) -> None:
        with self._lock:
            for name, value in increments.items():
                setattr(self.stats, name, getattr(self.stats, name) + value)

    # --------------------------------------------------------------------------------------- identity

    def describe(self) -> dict[str, Any]:
        return {
            "backend": type(self).__name__,
            "model_id": self.model_id,
            "api_base": self.api_base,
            "config": asdict(self.config),
            "api_key_env": self.api_key_env,
            "extra_body": self.extra_body,
        }

    def cache_identity(self) -> dict[str, Any]:
        """A server cannot be fingerprinted: the identity is its URL, the model name and extra fields."""
        return {
            "backend": "http",
            "api_base": self.api_base,
            "model": self.model_id,
            "extra_body": self.extra_body,
            "max_tokens_field": self.max_tokens_field,
        }


# ---------------------------------------------------------------------------------------------- helpers


def _wire_message(message: Message) -> dict[str, Any]:
    content = message["content"]
    if isinstance(content, str):
        return {"role": message["role"], "content": content}
    parts = []
    for part in content:
        if part["type"] == "image":
            parts.append({"type": "image_url", "image_url": {"url": png_data_url(part["image"])}})
        else:
            parts.append({"type": "text", "text": part["text"]})
    return {"role": message["role"], "content": parts}


def _error_detail(err: urllib.error.HTTPError) -> str:
    try:
        # the start is enough, and all a hostile server gets read
        body = err.read(500).decode("utf-8", "replace")
    except Exception:  # the body of a failed response may itself be unreadable
        body = ""
    try:
        message = loads_bounded(body).get("error", {})
        if isinstance(message, dict):
            message = message.get("message", body)
        return _one_line(str(message)) or err.reason
    except (ValueError, AttributeError):  # not JSON, too deep, or not an object
        return _one_line(body) or str(err.reason)


def _one_line(text: str, limit: int = 300) -> str:
    """An error body as one line (an HTML error page spans many), for messages that must stay one line."""
    return " ".join(text.split())[:limit]


def _retry_after(err: urllib.error.HTTPError) -> float | None:
    value = err.headers.get("Retry-After") if err.headers else None
    try:
        return float(value) if value is not None else None
    except ValueError:  # an HTTP date: fall back to our own backoff
        return None
