"""An OpenAI-compatible HTTP server in front of a model backend, with dynamic batching across clients.

Routes: ``POST /v1/chat/completions``, ``GET /v1/models``, ``GET /health`` and ``GET /stats`` (batching
counters, not part of the OpenAI API). Standard library only: a ``ThreadingHTTPServer`` gives each
connection a thread that parses the request and waits while the :class:`DynamicBatcher` answers it.

Safe to expose: every request is bounded (body size, images per request, pixels per image: HTTP 413/400),
open connections are capped (beyond ``max_connections`` a connection waits briefly, then gets HTTP 503), a
request must arrive within ``read_timeout_s`` (a client that sends headers and then nothing, or drips
bytes, is disconnected), and an optional API key is required as ``Authorization: Bearer <key>`` (HTTP 401
without it). Binding an address other than loopback without a key warns (:class:`ExposedServerWarning`).
"""

from __future__ import annotations

import contextlib
import hmac
import ipaddress
import json
import socket
import threading
import time
import warnings
from concurrent.futures import TimeoutError as FutureTimeout
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from policies.backends.base import Backend, GenerationConfig
from policies.serve.batcher import DynamicBatcher
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


class ModelServer:
    """Serves ``backend`` under ``model_name`` at ``http://host:port/v1``.

    Args:
        backend: the model (e.g. :class:`~policies.backends.transformers_backend.TransformersBackend`).
        model_name: the name clients put in ``"model"`` (default: the backend's ``model_id``).
        host: interface to bind; loopback by default, so nothing outside this machine can connect.
        port: TCP port; 0 picks a free one (read it back from :attr:`url`).
        max_batch, max_wait_ms, max_queue: dynamic batching, see :class:`DynamicBatcher`.
        defaults: decoding settings for fields a request leaves out (greedy by default).
        request_timeout_s: longest a client waits for its answer before getting HTTP 504.
        max_body_mb: largest request body accepted (HTTP 413 beyond it).
        max_images / max_image_pixels: images per request and pixels per image (HTTP 400 beyond them), see
            :class:`~policies.serve.protocol.RequestLimits`.
        max_connections: most connections open at once; one more waits up to 5 s (at most ``read_timeout_s``)
            for a slot, then is answered HTTP 503 and closed (clients retry).
        read_timeout_s: longest a connection may take to send one whole request (headers and body), and to
            take each part of the answer; slower connections are closed.
        parse_slots: requests parsed (JSON and image decoding) at once; the others wait with their raw body.
            Parsing briefly takes several times a request's size, so this bounds that peak (more would not
            run faster: JSON parsing holds the GIL).
        api_key: when set, every route but ``/health`` requires ``Authorization: Bearer <api_key>`` (HTTP
            401 otherwise). Without one, binding a non-loopback ``host`` warns (:class:`ExposedServerWarning`).
    """

    def __init__(self, backend: Backend, *, model_name: str | None = None, host: str = LOOPBACK, port: int = 8000,
                 max_batch: int = 8, max_wait_ms: float = 20.0, max_queue: int = 1024,
                 defaults: GenerationConfig | None = None, request_timeout_s: float = 600.0,
                 max_body_mb: float = 16.0, max_images: int = 16, max_image_pixels: int = 2**20,
                 max_connections: int = 32, read_timeout_s: float = 30.0, parse_slots: int = 2,
                 api_key: str | None = None) -> None:
        if max_body_mb <= 0 or max_connections < 1 or read_timeout_s <= 0:
            raise ValueError(f"need max_body_mb > 0, max_connections >= 1 and read_timeout_s > 0, got "
                             f"{max_body_mb}, {max_connections}, {read_timeout_s}")
        self.backend = backend
        self.model_name = model_name or backend.model_id
        self.defaults = defaults or GenerationConfig()
        self.request_timeout_s, self.max_body_bytes = request_timeout_s, int(max_body_mb * 2**20)
        self.limits = RequestLimits(max_images=max_images, max_image_pixels=max_image_pixels)
        self.read_timeout_s, self.api_key = read_timeout_s, api_key or None
        self._parsing = threading.BoundedSemaphore(max(1, parse_slots))
        self.batcher = DynamicBatcher(backend, max_batch=max_batch, max_wait_ms=max_wait_ms, max_queue=max_queue)
        self.created = int(time.time())
        try:
            self._httpd = _HTTPServer((host, port), _Handler)
        except OSError as err:
            raise OSError(f"cannot listen on {host}:{port} ({err.strerror or err}); pass another --port "
                          f"(0 picks a free one) or --host") from err
        self._httpd.app = self
        self._httpd.connections = _Connections(max_connections, read_timeout_s)
        self._thread: threading.Thread | None = None
        if self.api_key is None and not is_loopback(host):
            warnings.warn(f"serving on {host}:{self.address[1]} without an API key: anyone who can reach this "
                          f"address can use the model; set one with --api-key-env VAR (api_key=...)",
                          ExposedServerWarning, stacklevel=2)

    @classmethod
    def from_model(cls, model: str, *, device: str = "auto", dtype: str = "auto", backend_options: dict[str, Any] | None = None,
                   **server_options: Any) -> ModelServer:
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
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="http", daemon=True)
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
        return {"model": self.model_name, **self.batcher.stats(), **self._httpd.connections.stats()}

    def authorized(self, header: str | None) -> bool:
        """Whether an ``Authorization`` header carries the API key (always, when the server has none)."""
        if self.api_key is None:
            return True
        expected = f"Bearer {self.api_key}".encode()
        return hmac.compare_digest((header or "").encode("utf-8", "replace"), expected)  # constant time

    def parse(self, raw: bytes) -> ChatRequest:
        """A request body as a :class:`ChatRequest` under this server's limits; raises :class:`RequestError`."""
        with self._parsing:
            return parse_chat_request(raw, self.model_name, self.defaults, self.limits)

    def answer(self, request: ChatRequest | bytes) -> dict[str, Any]:
        """The chat completion for a request (or its body); raises :class:`RequestError` for the client."""
        if isinstance(request, bytes):
            request = self.parse(request)
        future = self.batcher.submit(request)
        try:
            generation = future.result(timeout=self.request_timeout_s)
        except FutureTimeout as err:
            raise RequestError(504, f"no answer within {self.request_timeout_s:g} s (request_timeout_s)") from err
        return completion_body(generation, self.model_name, request.config.max_new_tokens)


class _Connections:
    """Open connections: their number (at most ``cap``) and, for each, the deadline to finish sending the
    request it is sending. A watchdog thread shuts down connections past their deadline, so neither a client
    that sends headers and no body nor one that drips a byte at a time holds a thread for longer."""

    def __init__(self, cap: int, read_timeout_s: float) -> None:
        self.cap, self.read_timeout_s = cap, read_timeout_s
        self.admission_wait_s = min(ADMISSION_WAIT_S, read_timeout_s)
        self._deadlines: dict[socket.socket, float | None] = {}
        self._lock, self._stop = threading.Lock(), threading.Event()
        self._freed = threading.Condition(self._lock)
        self.refused = self.timed_out = 0
        self._thread = threading.Thread(target=self._watch, name="read-deadlines", daemon=True)

    def start(self) -> None:
        if not self._thread.is_alive():
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def open(self, conn: socket.socket) -> bool:
        """Register a new connection, waiting up to ``admission_wait_s`` for a free slot when ``cap`` are open
        (new connections queue in the listen backlog meanwhile); False, counted as refused, if none frees."""
        with self._freed:
            if not self._freed.wait_for(lambda: len(self._deadlines) < self.cap, self.admission_wait_s):
                self.refused += 1
                return False
            self._deadlines[conn] = None
            return True

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
                with contextlib.suppress(OSError):  # OSError: the client closed it already
                    conn.shutdown(socket.SHUT_RDWR)  # the handler's blocked read returns at once

    def stats(self) -> dict[str, int]:
        with self._lock:
            return {"open_connections": len(self._deadlines), "refused_connections": self.refused,
                    "timed_out_connections": self.timed_out}  # fmt: skip


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256  # many simulator workers may connect at once; the default backlog is 5
    app: ModelServer
    connections: _Connections

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self.connections.open(request):
            _refuse(request, self.connections.cap)
            super().shutdown_request(request)
            return
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        self.connections.close(request)
        super().shutdown_request(request)


def _refuse(conn: socket.socket, cap: int) -> None:
    """Answer HTTP 503 on a connection over the cap, from the accepting thread (it must not block it)."""
    message = f"the server has {cap} connections open (max_connections); retry later"
    payload = json.dumps(error_body(message, "server_error", None, 503)).encode()
    head = (f"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nContent-Length: {len(payload)}"
            f"\r\nRetry-After: 1\r\nConnection: close\r\n\r\n").encode()
    try:
        conn.settimeout(0.5)
        conn.sendall(head + payload)
    except OSError:  # the client is gone or not reading: closing is all that is left
        pass


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive for clients that reuse connections
    server: _HTTPServer

    def setup(self) -> None:
        self.timeout = self.server.app.read_timeout_s  # per socket operation (also bounds slow readers of answers)
        super().setup()

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
                raise RequestError(404, f"no route POST {self._route()}; the endpoint is /v1/chat/completions")
            request = self.server.app.parse(self._body())  # the raw body is freed once parsed
            self._send(200, self.server.app.answer(request))
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
            raise RequestError(413, f"the body has {int(length)} bytes; this server accepts at most "
                                    f"{self.server.app.max_body_bytes} (--max-body-mb)")
        try:
            raw = self.rfile.read(int(length))
        except OSError:  # a per-read timeout, or the watchdog shut the connection
            raw = b""
        self.server.connections.reading(self.connection, False)
        if len(raw) < int(length):
            self.close_connection = True
            raise RequestError(408, f"the body did not arrive: {len(raw)} of {int(length)} bytes within "
                                    f"{self.server.app.read_timeout_s:g} s (read_timeout_s)")
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
    return RequestError(401, "missing or wrong API key: send 'Authorization: Bearer <key>' with the key the server "
                             "was started with (--api-key-env)")
