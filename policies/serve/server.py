"""An OpenAI-compatible HTTP server in front of a model backend, with dynamic batching across clients.

Routes: ``POST /v1/chat/completions``, ``GET /v1/models``, ``GET /health`` and ``GET /stats`` (batching
counters, not part of the OpenAI API). Standard library only: a ``ThreadingHTTPServer`` gives each
connection a thread that parses the request and waits while the :class:`DynamicBatcher` answers it.

Safe to expose: every request is bounded (body size, images per request, pixels per image: HTTP 413/400),
and so is the model work it may ask for: its prompt is sized before it reaches the model (characters,
then tokens: over ``max_prompt_tokens`` or beyond the model's context is HTTP 400, see
:mod:`policies.serve.limits`), and it has a deadline (``request_deadline_s``: still queued then, HTTP 503;
still generating, stopped at the next token, HTTP 504; a request whose client hung up is dropped too). The
batcher runs the smallest waiting request first, so a long one cannot hold short ones back for longer than
its own turn. Open connections are capped (``max_connections``); the accepting thread never waits, and
when the cap is reached a new connection takes the slot of the one that has spent longest sending an
unfinished request (a stalled or slow client), so stalled connections cannot lock others out; otherwise it
waits briefly, then gets HTTP 503 (``GET /health`` is answered at once, without a slot). A request must arrive within ``read_timeout_s`` (a client that sends
headers and then nothing, or drips bytes, is disconnected), and an optional API key is required as
``Authorization: Bearer <key>`` (HTTP 401 without it). Binding an address other than loopback without a
key warns (:class:`ExposedServerWarning`).
"""

from __future__ import annotations

import contextlib
import hmac
import ipaddress
import json
import select
import socket
import threading
import time
import warnings
from collections.abc import Callable
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from policies.backends.base import Backend, GenerationConfig
from policies.serve.batcher import DynamicBatcher, queued_too_long
from policies.serve.limits import PromptLimit
from policies.serve.protocol import (
    ChatRequest,
    RequestError,
    RequestLimits,
    completion_body,
    error_body,
    models_body,
    parse_chat_request,
)

LOOPBACK = "127.0.0.1"
ADMISSION_WAIT_S = 5.0  # longest a connection over the cap waits for a free slot before HTTP 503
EVICT_AFTER_S = 1.0  # at the cap, a connection still sending its request after this long gives up its slot
DEADLINE_GRACE_S = 1.0  # past the deadline, how long a client waits for the model to stop before HTTP 504
POLL_S = 0.25  # how often a waiting request checks that its client is still connected
OPEN_ROUTES = ("/health",)  # answered without the API key (it tells nothing about the model)


class ExposedServerWarning(UserWarning):
    """The server listens beyond this machine without an API key: anyone who reaches the port can use it."""


def is_loopback(host: str) -> bool:
    """Whether ``host`` is a loopback address (or ``localhost``): only this machine can connect."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:  # a host name: it may resolve to any interface
        return False


def _check_limits(
    max_body_mb: float, max_connections: int, read_timeout_s: float, request_deadline_s: float
) -> None:
    """A ``ValueError`` naming the server limits that are out of range."""
    if max_body_mb <= 0 or max_connections < 1 or read_timeout_s <= 0 or request_deadline_s <= 0:
        raise ValueError(
            f"need max_body_mb > 0, max_connections >= 1, read_timeout_s > 0 and "
            f"request_deadline_s > 0, got {max_body_mb}, {max_connections}, {read_timeout_s}, "
            f"{request_deadline_s}"
        )


def _listen(host: str, port: int) -> _HTTPServer:
    """The HTTP server bound to ``host:port``; an ``OSError`` saying how to pick another address."""
    try:
        return _HTTPServer((host, port), _Handler)
    except OSError as err:
        raise OSError(
            f"cannot listen on {host}:{port} ({err.strerror or err}); pass another --port "
            f"(0 picks a free one) or --host"
        ) from err


class ModelServer:
    """Serves ``backend`` under ``model_name`` at ``http://host:port/v1``.

    Args:
        backend: the model (e.g. :class:`~policies.backends.transformers_backend.TransformersBackend`).
        model_name: the name clients put in ``"model"`` (default: the backend's ``model_id``).
        host: interface to bind; loopback by default, so nothing outside this machine can connect.
        port: TCP port; 0 picks a free one (read it back from :attr:`url`).
        max_batch, max_wait_ms, max_queue: dynamic batching, see :class:`DynamicBatcher`.
        defaults: decoding settings for fields a request leaves out (greedy by default).
        request_deadline_s: longest a request may take from its arrival to its answer. Still queued then:
            HTTP 503 (the server is busy, retry); generating: stopped at the next token (backends with
            ``supports_deadlines``; others are waited for no longer) and HTTP 504.
        max_prompt_tokens: most prompt tokens (text and images) a request may send (HTTP 400 beyond); by
            default the model's context, at most 32768 (:class:`~policies.serve.limits.PromptLimit`).
        max_body_mb: largest request body accepted (HTTP 413 beyond it).
        max_images / max_image_pixels: images per request and pixels per image (HTTP 400 beyond them), see
            :class:`~policies.serve.protocol.RequestLimits`.
        max_connections: most connections open at once. One more takes the slot of the connection that has
            spent longest (over 1 s) sending an unfinished request; when none has, it waits up to 5 s (at most
            ``read_timeout_s``) for a slot, then is answered HTTP 503 and closed (clients retry).
        read_timeout_s: longest a connection may take to send one whole request (headers and body), and to
            take each part of the answer; slower connections are closed.
        parse_slots: requests parsed (JSON and image decoding) at once; the others wait with their raw body.
            Parsing briefly takes several times a request's size, so this bounds that peak (more would not
            run faster: JSON parsing holds the GIL).
        api_key: when set, every route but ``/health`` requires ``Authorization: Bearer <api_key>`` (HTTP
            401 otherwise). Without one, binding a non-loopback ``host`` warns (:class:`ExposedServerWarning`).
    """

    def __init__(
        self,
        backend: Backend,
        *,
        model_name: str | None = None,
        host: str = LOOPBACK,
        port: int = 8000,
        max_batch: int = 8,
        max_wait_ms: float = 20.0,
        max_queue: int = 1024,
        defaults: GenerationConfig | None = None,
        request_deadline_s: float = 300.0,
        max_prompt_tokens: int | None = None,
        max_body_mb: float = 16.0,
        max_images: int = 16,
        max_image_pixels: int = 2**20,
        max_connections: int = 32,
        read_timeout_s: float = 30.0,
        parse_slots: int = 2,
        api_key: str | None = None,
    ) -> None:
        _check_limits(max_body_mb, max_connections, read_timeout_s, request_deadline_s)
        self.backend = backend
        self.model_name = model_name or backend.model_id
        self.defaults = defaults or GenerationConfig()
        self.request_deadline_s, self.max_body_bytes = request_deadline_s, int(max_body_mb * 2**20)
        self.prompt_limit = PromptLimit.for_backend(backend, max_prompt_tokens)
        self.limits = RequestLimits(max_images=max_images, max_image_pixels=max_image_pixels)
        self.read_timeout_s, self.api_key = read_timeout_s, api_key or None
        self._parsing = threading.BoundedSemaphore(max(1, parse_slots))
        self.batcher = DynamicBatcher(
            backend, max_batch=max_batch, max_wait_ms=max_wait_ms, max_queue=max_queue
        )
        self.created = int(time.time())
        self._httpd = _listen(host, port)
        self._httpd.app = self
        self._httpd.connections = _Connections(max_connections, read_timeout_s)
        self._thread: threading.Thread | None = None
        if self.api_key is None and not is_loopback(host):
            warnings.warn(
                f"serving on {host}:{self.address[1]} without an API key: anyone who can reach this "
                f"address can use the model; set one with --api-key-env VAR (api_key=...)",
                ExposedServerWarning,
                stacklevel=2,
            )

    @classmethod
    def from_model(
        cls,
        model: str,
        *,
        device: str = "auto",
        dtype: str = "auto",
        backend_options: dict[str, Any] | None = None,
        **server_options: Any,
    ) -> ModelServer:
        """Load a transformers checkpoint (directory or hub id) and serve it; ``backend_options`` go to
        :class:`~policies.backends.transformers_backend.TransformersBackend`."""
        from policies.backends.transformers_backend import TransformersBackend

        backend = TransformersBackend(model, device=device, dtype=dtype, **(backend_options or {}))
        return cls(backend, **server_options)

    @property
    def address(self) -> tuple[str, int]:
        host, port = self._httpd.server_address[:2]
        return str(host), int(port)

    @property
    def url(self) -> str:
        """The base URL clients pass as ``--api-base`` (a wildcard bind is reached through loopback here)."""
        host, port = self.address
        return f"http://{LOOPBACK if host in ('0.0.0.0', '::', '') else host}:{port}/v1"

    def start(self) -> ModelServer:
        """Serve on background threads; returns ``self`` (also a context manager that stops on exit)."""
        self.batcher.start()
        self._httpd.connections.start()
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, name="http", daemon=True
        )
        self._thread.start()
        return self

    def serve_forever(self) -> None:
        """Serve on this thread until interrupted (Ctrl-C), then stop cleanly."""
        self.batcher.start()
        self._httpd.connections.start()
        try:
            self._httpd.serve_forever(poll_interval=0.2)
        except KeyboardInterrupt:
            pass
        finally:
            self._httpd.connections.stop()
            self.batcher.stop()
            self._httpd.server_close()

    def stop(self) -> None:
        """Stop serving (after :meth:`start`); a server never started only releases its port."""
        if self._thread is not None:  # shutdown() waits for a serve loop, so only when one was started
            self._httpd.shutdown()
        self._httpd.server_close()
        self._httpd.connections.stop()
        if self._thread is not None:
            self.batcher.stop()
            self._thread.join(timeout=10)

    def __enter__(self) -> ModelServer:
        return self.start() if self._thread is None else self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stats(self) -> dict[str, Any]:
        return {
            "model": self.model_name,
            "max_prompt_tokens": self.prompt_limit.max_tokens,
            "request_deadline_s": self.request_deadline_s,
            **self.batcher.stats(),
            **self._httpd.connections.stats(),
        }

    def authorized(self, header: str | None) -> bool:
        """Whether an ``Authorization`` header carries the API key (always, when the server has none)."""
        if self.api_key is None:
            return True
        expected = f"Bearer {self.api_key}".encode()
        return hmac.compare_digest((header or "").encode("utf-8", "replace"), expected)  # constant time

    def parse(self, raw: bytes) -> ChatRequest:
        """A request body as a :class:`ChatRequest` under this server's limits; raises :class:`RequestError`."""
        with self._parsing:  # parsing takes memory in proportion to the body: a bounded number at once
            return parse_chat_request(raw, self.model_name, self.defaults, self.limits)

    def prompt_tokens(self, request: ChatRequest) -> int:
        """The request's prompt tokens (counted, or estimated when the backend cannot count); raises
        :class:`RequestError` (400) over ``max_prompt_tokens`` or beyond the model's context."""
        with self._parsing:  # tokenising too
            return self.prompt_limit.check(request, self.backend)

    def answer(
        self,
        request: ChatRequest | bytes,
        *,
        received: float | None = None,
        client_gone: Callable[[], bool] | None = None,
    ) -> dict[str, Any]:
        """The chat completion for a request (or its body) received at ``received`` (``time.monotonic()``,
        default now); raises :class:`RequestError` for the client. ``client_gone`` is polled while waiting:
        when it says so, the request is dropped (:class:`ClientGone`)."""
        received = time.monotonic() if received is None else received
        if isinstance(request, bytes):
            request = self.parse(request)
        tokens = self.prompt_tokens(request)
        deadline = received + self.request_deadline_s
        future = self.batcher.submit(request, deadline=deadline, prompt_tokens=tokens)
        generation = self._wait(future, deadline, client_gone or (lambda: False))
        return completion_body(generation, self.model_name, request.config.max_new_tokens)

    def _wait(self, future: Future, deadline: float, client_gone: Callable[[], bool]) -> Any:
        """The future's result by ``deadline``: a request still queued then is withdrawn (HTTP 503); one
        being generated gets a grace for the model to stop it there, then HTTP 504."""
        while True:
            now = time.monotonic()
            if now >= deadline and self.batcher.cancel(future):
                raise queued_too_long(now - (deadline - self.request_deadline_s))
            if now >= deadline + DEADLINE_GRACE_S:
                raise RequestError(
                    504,
                    f"no answer within {self.request_deadline_s:g} s (--request-deadline-s); "
                    f"ask for fewer max_tokens or a shorter prompt, or retry later",
                )
            try:
                wake = deadline if now < deadline else deadline + DEADLINE_GRACE_S
                return future.result(timeout=min(POLL_S, max(wake - now, 0.001)))
            except FutureTimeout:
                if client_gone():
                    self.batcher.cancel(future)
                    raise ClientGone from None


class ClientGone(Exception):
    """The client closed its connection before its answer: nobody to answer."""


def _closed_by_peer(conn: socket.socket) -> bool:
    """Whether the client has closed ``conn`` (readable, with nothing to read), without consuming data."""
    try:
        poller = select.poll()  # not select.select: it fails for descriptors over 1023
        poller.register(conn, select.POLLIN)
        return bool(poller.poll(0)) and conn.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b""
    except BlockingIOError:  # nothing to read after all: still connected
        return False
    except OSError:  # reset, or already closed on our side
        return True


class _Connections:
    """Open connections: their number (at most ``cap``) and, for each, the deadline to finish sending the
    request it is sending. A watchdog thread shuts down connections past their deadline, so neither a client
    that sends headers and no body nor one that drips a byte at a time holds a thread for longer; and at the
    cap, a new connection evicts the one that has been sending an unfinished request longest (at least
    ``EVICT_AFTER_S``), so stalled clients cannot lock out new ones for ``read_timeout_s``."""

    def __init__(self, cap: int, read_timeout_s: float) -> None:
        self.cap, self.read_timeout_s = cap, read_timeout_s
        self.admission_wait_s = min(ADMISSION_WAIT_S, read_timeout_s)
        self.evict_after_s = min(EVICT_AFTER_S, read_timeout_s / 2)
        self._deadlines: dict[socket.socket, float | None] = {}
        self._lock, self._stop = threading.Lock(), threading.Event()
        self._freed = threading.Condition(self._lock)
        self.refused = self.timed_out = self.evicted = self.waiting = 0
        self._thread = threading.Thread(target=self._watch, name="read-deadlines", daemon=True)

    def start(self) -> None:
        if not self._thread.is_alive():
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def try_open(self, conn: socket.socket) -> bool:
        """Register ``conn`` at once if a slot is free or can be taken from a stalled connection."""
        with self._lock:
            victim = self._admit(conn)
        if victim is not None:
            _shut(victim)
        return conn in self._deadlines

    def open(self, conn: socket.socket) -> bool:
        """Register a new connection, waiting up to ``admission_wait_s`` for a free slot (or one that can be
        taken from a stalled connection) when ``cap`` are open; False, counted as refused, if none comes."""
        give_up = time.monotonic() + self.admission_wait_s
        with self._freed:
            self.waiting += 1
            try:
                while (victim := self._admit(conn)) is None and conn not in self._deadlines:
                    remaining = give_up - time.monotonic()
                    if remaining <= 0:
                        self.refused += 1
                        return False
                    # an eviction may become possible
                    self._freed.wait(min(remaining, self.evict_after_s / 4))
            finally:
                self.waiting -= 1
        if victim is not None:
            _shut(victim)
        return True

    def _admit(self, conn: socket.socket) -> socket.socket | None:
        """(Lock held.) Register ``conn`` if there is room, making room by evicting the connection that
        has been sending its request longest when that is over ``evict_after_s``; returns the evicted one."""
        if len(self._deadlines) < self.cap:
            self._deadlines[conn] = None
            return None
        reading = [(d, c) for c, d in self._deadlines.items() if d is not None]
        if not reading:
            return None
        deadline, victim = min(reading, key=lambda item: item[0])
        started = deadline - self.read_timeout_s
        if time.monotonic() - started < self.evict_after_s:
            return None
        del self._deadlines[victim]
        self.evicted += 1
        self._deadlines[conn] = None
        return victim

    def close(self, conn: socket.socket) -> None:
        with self._freed:
            if self._deadlines.pop(conn, False) is not False:
                self._freed.notify()

    def reading(self, conn: socket.socket, reading: bool) -> None:
        """Start (or end) the clock for the request ``conn`` is sending."""
        with self._lock:
            if conn in self._deadlines:
                self._deadlines[conn] = time.monotonic() + self.read_timeout_s if reading else None

    def _watch(self) -> None:
        while not self._stop.wait(min(0.25, self.read_timeout_s / 4)):
            now = time.monotonic()
            with self._lock:
                late = [c for c, d in self._deadlines.items() if d is not None and d < now]
                for conn in late:
                    self._deadlines[conn] = None
                self.timed_out += len(late)
            for conn in late:
                _shut(conn)  # the handler's blocked read returns at once

    def stats(self) -> dict[str, int]:
        with self._lock:
            return {
                "open_connections": len(self._deadlines),
                "refused_connections": self.refused,
                "timed_out_connections": self.timed_out,
                "evicted_connections": self.evicted,
                "waiting_connections": self.waiting,
            }


def _shut(conn: socket.socket) -> None:
    with contextlib.suppress(OSError):  # OSError: the client closed it already
        conn.shutdown(socket.SHUT_RDWR)


class _HTTPServer(ThreadingHTTPServer):
    """Accepts without ever blocking: a connection is admitted at once, handed to a thread that waits for
    a slot (at most ``cap`` such threads), or refused with HTTP 503."""

    daemon_threads = True
    request_queue_size = 256  # many simulator workers may connect at once; the default backlog is 5
    app: ModelServer
    connections: _Connections

    def process_request(self, request: Any, client_address: Any) -> None:
        if self.connections.try_open(request):
            super().process_request(request, client_address)  # a handler thread
        elif self.connections.waiting < self.connections.cap:
            threading.Thread(
                target=self._admit_then_handle, args=(request, client_address), daemon=True
            ).start()
        else:
            self._refuse(request)

    def _admit_then_handle(self, request: Any, client_address: Any) -> None:
        if _answer_health_probe(request):  # liveness must not wait behind busy slots: it costs nothing
            super().shutdown_request(request)
            return
        if not self.connections.open(request):
            self._refuse(request)
            return
        self.process_request_thread(request, client_address)

    def _refuse(self, request: Any) -> None:
        _refuse(request, self.connections.cap)
        super().shutdown_request(request)

    def shutdown_request(self, request: Any) -> None:
        self.connections.close(request)
        super().shutdown_request(request)


HEALTH_PROBE = b"GET /health HTTP/1."
HEALTH_ANSWER = (
    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 16\r\nConnection: close\r\n\r\n"
    b'{"status": "ok"}'
)


def _answer_health_probe(conn: socket.socket) -> bool:
    """Answer ``GET /health`` on a connection waiting for a slot, without one (its request line is peeked
    at for up to 0.5 s); False, with nothing read, for any other request."""
    try:
        conn.settimeout(0.5)
        head = conn.recv(len(HEALTH_PROBE), socket.MSG_PEEK | socket.MSG_WAITALL)
        if head != HEALTH_PROBE:
            return False
        conn.sendall(HEALTH_ANSWER)
        return True
    except OSError:  # nothing within 0.5 s (a slow client: it waits for a slot like the others), or gone
        return False


def _refuse(conn: socket.socket, cap: int) -> None:
    """Answer HTTP 503 on a connection over the cap (without blocking: the answer fits the send buffer)."""
    message = f"the server has {cap} connections open (max_connections); retry later"
    payload = json.dumps(error_body(message, "server_error", None, 503)).encode()
    head = (
        f"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nContent-Length: {len(payload)}"
        f"\r\nRetry-After: 1\r\nConnection: close\r\n\r\n"
    ).encode()
    try:
        conn.settimeout(0.5)
        conn.sendall(head + payload)
    except OSError:  # the client is gone or not reading: closing is all that is left
        pass


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive for clients that reuse connections
    server: _HTTPServer

    def setup(self) -> None:
        super().setup()
        # per socket operation (also bounds slow readers of answers); as StreamRequestHandler.timeout does
        self.connection.settimeout(self.server.app.read_timeout_s)

    def handle_one_request(self) -> None:
        self.server.connections.reading(self.connection, True)  # the clock runs until the body is in
        super().handle_one_request()

    def log_message(self, format: str, *args: Any) -> None:  # one line per request would flood the console
        pass

    def do_GET(self) -> None:
        self.server.connections.reading(self.connection, False)
        app, route = self.server.app, self._route()
        if route not in OPEN_ROUTES and not app.authorized(self.headers.get("Authorization")):
            self._send_error(_unauthorized())
        elif route == "/v1/models":
            self._send(200, models_body(app.model_name, app.created))
        elif route == "/health":
            self._send(200, {"status": "ok"})
        elif route == "/stats":
            self._send(200, app.stats())
        else:
            self._send_error(RequestError(404, f"no route GET {route}; try /v1/models, /health or /stats"))

    def do_POST(self) -> None:
        try:
            if not self.server.app.authorized(self.headers.get("Authorization")):
                self.close_connection = True  # the body is left unread
                raise _unauthorized()
            if self._route() != "/v1/chat/completions":
                self.close_connection = True  # the body is left unread
                raise RequestError(
                    404, f"no route POST {self._route()}; the endpoint is /v1/chat/completions"
                )
            raw, received = self._body(), time.monotonic()
            request = self.server.app.parse(raw)  # the raw body is freed once parsed
            del raw
            gone = lambda: _closed_by_peer(self.connection)  # noqa: E731
            self._send(200, self.server.app.answer(request, received=received, client_gone=gone))
        except ClientGone:
            self.close_connection = True
        except RequestError as err:
            self._send_error(err)
        except RecursionError:  # deeply nested JSON that got past the parser
            self._send_error(RequestError(400, "the request nests JSON arrays/objects too deeply"))
        except Exception as err:  # a bug must still give the client an answer it can read
            self._send_error(RequestError(500, f"internal server error: {type(err).__name__}: {err}"))

    def _route(self) -> str:
        return self.path.split("?", 1)[0].rstrip("/") or "/"

    def _body(self) -> bytes:
        length = self.headers.get("Content-Length")
        if length is None or not length.isdigit():
            self.close_connection = True
            raise RequestError(411, "a Content-Length header is required")
        if int(length) > self.server.app.max_body_bytes:
            self.close_connection = True  # the unread body cannot be skipped on this connection
            raise RequestError(
                413,
                f"the body has {int(length)} bytes; this server accepts at most "
                f"{self.server.app.max_body_bytes} (--max-body-mb)",
            )
        try:
            raw = self.rfile.read(int(length))
        except OSError:  # a per-read timeout, or the watchdog shut the connection
            raw = b""
        self.server.connections.reading(self.connection, False)
        if len(raw) < int(length):
            self.close_connection = True
            raise RequestError(
                408,
                f"the body did not arrive: {len(raw)} of {int(length)} bytes within "
                f"{self.server.app.read_timeout_s:g} s (read_timeout_s)",
            )
        return raw

    def _send_error(self, err: RequestError) -> None:
        headers = {"Retry-After": "1"} if err.status == 503 else None
        if err.status == 401:
            headers = {"WWW-Authenticate": "Bearer"}
        self._send(err.status, err.body(), headers)

    def _send(self, status: int, body: dict[str, Any], headers: dict[str, str] | None = None) -> None:
        payload = json.dumps(body).encode()
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            if self.close_connection:
                self.send_header("Connection", "close")
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(payload)
        except OSError:  # the client gave up (its own timeout) or was disconnected (ours)
            self.close_connection = True


def _unauthorized() -> RequestError:
    return RequestError(
        401,
        "missing or wrong API key: send 'Authorization: Bearer <key>' with the key the server "
        "was started with (--api-key-env)",
    )
