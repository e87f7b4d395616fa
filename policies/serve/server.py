"""An OpenAI-compatible HTTP server in front of a model backend, with dynamic batching across clients.

Routes: ``POST /v1/chat/completions``, ``GET /v1/models``, ``GET /health`` and ``GET /stats`` (batching
counters, not part of the OpenAI API). Standard library only: a ``ThreadingHTTPServer`` gives each
connection a thread that parses the request and waits while the :class:`DynamicBatcher` answers it.
"""

from __future__ import annotations

import json
import threading
import time
from concurrent.futures import TimeoutError as FutureTimeout
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from policies.backends.base import Backend, GenerationConfig
from policies.serve.batcher import DynamicBatcher
from policies.serve.protocol import (
    RequestError,
    completion_body,
    models_body,
    parse_chat_request,
)

LOOPBACK = "127.0.0.1"


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
    """

    def __init__(self, backend: Backend, *, model_name: str | None = None, host: str = LOOPBACK, port: int = 8000,
                 max_batch: int = 8, max_wait_ms: float = 20.0, max_queue: int = 1024,
                 defaults: GenerationConfig | None = None, request_timeout_s: float = 600.0,
                 max_body_mb: float = 64.0) -> None:
        self.backend = backend
        self.model_name = model_name or backend.model_id
        self.defaults = defaults or GenerationConfig()
        self.request_timeout_s, self.max_body_bytes = request_timeout_s, int(max_body_mb * 2**20)
        self.batcher = DynamicBatcher(backend, max_batch=max_batch, max_wait_ms=max_wait_ms, max_queue=max_queue)
        self.created = int(time.time())
        try:
            self._httpd = _HTTPServer((host, port), _Handler)
        except OSError as err:
            raise OSError(f"cannot listen on {host}:{port} ({err.strerror or err}); pass another --port "
                          f"(0 picks a free one) or --host") from err
        self._httpd.app = self
        self._thread: threading.Thread | None = None

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
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="http", daemon=True)
        self._thread.start()
        return self

    def serve_forever(self) -> None:
        """Serve on this thread until interrupted (Ctrl-C), then stop cleanly."""
        self.batcher.start()
        try:
            self._httpd.serve_forever(poll_interval=0.2)
        except KeyboardInterrupt:
            pass
        finally:
            self.batcher.stop()
            self._httpd.server_close()

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self.batcher.stop()
        if self._thread is not None:
            self._thread.join(timeout=10)

    def __enter__(self) -> ModelServer:
        return self.start() if self._thread is None else self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stats(self) -> dict[str, Any]:
        return {"model": self.model_name, **self.batcher.stats()}

    def answer(self, raw: bytes) -> dict[str, Any]:
        """The chat completion for a request body; raises :class:`RequestError` for the client."""
        request = parse_chat_request(raw, self.model_name, self.defaults)
        future = self.batcher.submit(request)
        try:
            generation = future.result(timeout=self.request_timeout_s)
        except FutureTimeout as err:
            raise RequestError(504, f"no answer within {self.request_timeout_s:g} s (request_timeout_s)") from err
        return completion_body(generation, self.model_name, request.config.max_new_tokens)


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256  # many simulator workers may connect at once; the default backlog is 5
    app: ModelServer


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive for clients that reuse connections
    server: _HTTPServer

    def log_message(self, format: str, *args: Any) -> None:  # one line per request would flood the console
        pass

    def do_GET(self) -> None:
        app, route = self.server.app, self._route()
        if route == "/v1/models":
            self._send(200, models_body(app.model_name, app.created))
        elif route == "/health":
            self._send(200, {"status": "ok"})
        elif route == "/stats":
            self._send(200, app.stats())
        else:
            self._send_error(RequestError(404, f"no route GET {route}; try /v1/models, /health or /stats"))

    def do_POST(self) -> None:
        try:
            raw = self._body()
            if self._route() != "/v1/chat/completions":
                raise RequestError(404, f"no route POST {self._route()}; the endpoint is /v1/chat/completions")
            self._send(200, self.server.app.answer(raw))
        except RequestError as err:
            self._send_error(err)
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
                                    f"{self.server.app.max_body_bytes} (max_body_mb)")
        return self.rfile.read(int(length))

    def _send_error(self, err: RequestError) -> None:
        self._send(err.status, err.body(), {"Retry-After": "1"} if err.status == 503 else None)

    def _send(self, status: int, body: dict[str, Any], headers: dict[str, str] | None = None) -> None:
        payload = json.dumps(body).encode()
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(payload)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (its own timeout)
            self.close_connection = True

