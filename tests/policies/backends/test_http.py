"""The HTTP backend against an in-process OpenAI-compatible server on 127.0.0.1."""

import base64
import io
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest

from policies.backends import (
    BackendRequestError,
    BackendUnavailableError,
    GenerationConfig,
    MalformedResponseError,
    make_backend,
)
from policies.backends.http_backend import HTTPBackend


def completion(text, usage=None):
    body = {
        "id": "x",
        "object": "chat.completion",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
    }
    if usage is not None:
        body["usage"] = usage
    return 200, json.dumps(body).encode(), {}


class FakeServer:
    """Answers each POST with the next scripted reply ``(status, body, headers)`` or ``("sleep", s, reply)``;
    a callable entry is called with the request JSON. Records requests and the peak number in flight."""

    def __init__(self):
        self.script, self.requests, self.in_flight, self.peak = [], [], 0, 0
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with server.lock:
                    server.requests.append({"path": self.path, "headers": dict(self.headers), "body": body})
                    reply = server.script.pop(0) if len(server.script) > 1 else server.script[0]
                    server.in_flight += 1
                    server.peak = max(server.peak, server.in_flight)
                try:
                    if callable(reply):
                        reply = reply(body)
                    if reply[0] == "sleep":
                        time.sleep(reply[1])
                        reply = reply[2]
                finally:
                    # Leave the count before answering: once the reply is out, the client may send its next
                    # request before this thread runs again.
                    with server.lock:
                        server.in_flight -= 1
                try:
                    status, payload, headers = reply
                    self.send_response(status)
                    for k, v in {
                        "Content-Type": "application/json",
                        "Content-Length": str(len(payload)),
                        **headers,
                    }.items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout test)
                    pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self.thread.start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server():
    s = FakeServer()
    yield s
    s.close()


def fast(server, **kw):
    opts = {"timeout_s": 2.0, "max_retries": 3, "backoff_s": 0.01, "backoff_max_s": 0.05, **kw}
    return HTTPBackend("test-model", server.url, config=GenerationConfig(max_new_tokens=64), **opts)


def conv(text="plan", image=None):
    content = [{"type": "text", "text": text}]
    if image is not None:
        content.insert(0, {"type": "image", "image": image})
    return [{"role": "system", "content": "sys"}, {"role": "user", "content": content}]


def test_success_request_format_and_usage(server, monkeypatch):
    monkeypatch.setenv("MY_KEY", "sk-test")
    server.script = [completion("hello", {"prompt_tokens": 120, "completion_tokens": 7, "total_tokens": 127})]
    image = np.random.default_rng(0).integers(0, 256, (12, 10, 3), dtype=np.uint8)
    b = fast(server, api_key_env="MY_KEY", price_prompt_per_mtok=2.5, price_completion_per_mtok=10.0)
    g = b.generate(conv("go", image))
    assert (g.text, g.prompt_tokens, g.completion_tokens, g.cached) == ("hello", 120, 7, False)
    assert g.cost_usd == pytest.approx((120 * 2.5 + 7 * 10.0) / 1e6)
    req = server.requests[0]
    assert req["path"] == "/v1/chat/completions" and req["headers"]["Authorization"] == "Bearer sk-test"
    body = req["body"]
    assert (body["model"], body["max_tokens"], body["temperature"]) == ("test-model", 64, 0.0)
    assert body["messages"][0] == {"role": "system", "content": "sys"}
    url = body["messages"][1]["content"][0]["image_url"]["url"]
    assert url.startswith("data:image/png;base64,")
    from PIL import Image

    decoded = np.asarray(Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1]))))
    assert np.array_equal(decoded, image)  # lossless: the server sees the exact pixels
    assert (b.stats.requests, b.stats.successes, b.stats.prompt_tokens, b.stats.completion_tokens) == (
        1,
        1,
        120,
        7,
    )


def test_server_reported_cost_and_missing_usage(server, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    server.script = [
        completion("a", {"prompt_tokens": 5, "completion_tokens": 2, "cost": 0.0125}),
        completion("b"),
    ]
    b = fast(server)
    assert b.generate(conv()).cost_usd == 0.0125
    g = b.generate(conv())
    assert (g.prompt_tokens, g.completion_tokens, g.cost_usd) == (None, None, None)
    assert "Authorization" not in server.requests[0]["headers"]


@pytest.mark.parametrize(
    ("reply", "match"),
    [
        ((200, b"{not json", {}), "not JSON"),
        ((200, b'["a"]', {}), "not an object"),
        ((200, b'{"object": "chat.completion"}', {}), "no 'choices'"),
        ((200, b'{"choices": [{"text": "legacy"}]}', {}), "no 'message'"),
        ((200, b'{"error": {"message": "model overloaded"}}', {}), "model overloaded"),
        ((200, b'{"choices": [{"message": {"content": 42}}]}', {}), "not text"),
    ],
)
def test_malformed_responses_raise_and_count(server, reply, match):
    server.script = [reply]
    b = fast(server)
    with pytest.raises(MalformedResponseError, match=match):
        b.generate(conv())
    assert (b.stats.malformed, b.stats.requests, b.stats.retries) == (1, 1, 0)  # not retried


def test_null_content_is_an_empty_answer(server):
    server.script = [
        (200, b'{"choices": [{"message": {"role": "assistant", "content": null, "refusal": "no"}}]}', {})
    ]
    b = fast(server)
    assert b.generate(conv()).text == "" and b.stats.empty_content == 1


def test_timeout_then_success(server):
    server.script = [("sleep", 1.0, completion("late")), completion("on time")]
    b = fast(server, timeout_s=0.3)
    assert b.generate(conv()).text == "on time"
    assert (b.stats.timeouts, b.stats.retries, b.stats.requests) == (1, 1, 2)


def test_5xx_and_429_are_retried_then_succeed(server):
    server.script = [
        (503, b'{"error": {"message": "busy"}}', {}),
        (429, b"slow down", {"Retry-After": "0.01"}),
        (500, b"", {}),
        completion("finally"),
    ]
    b = fast(server)
    assert b.generate(conv()).text == "finally"
    assert (b.stats.server_errors, b.stats.rate_limited, b.stats.retries, b.stats.requests) == (2, 1, 3, 4)


def test_5xx_exhausting_retries(server):
    server.script = [(502, b'{"error": {"message": "bad gateway"}}', {})]
    b = fast(server, max_retries=2)
    with pytest.raises(BackendUnavailableError, match=r"3 attempts.*HTTP 502: bad gateway"):
        b.generate(conv())
    assert (b.stats.requests, b.stats.server_errors, b.stats.retries) == (3, 3, 2)


def test_client_errors_are_not_retried_and_explain_the_key(server, monkeypatch):
    monkeypatch.delenv("NOPE_KEY", raising=False)
    server.script = [(401, b'{"error": {"message": "invalid api key"}}', {})]
    b = fast(server, api_key_env="NOPE_KEY")
    with pytest.raises(BackendRequestError, match=r"HTTP 401: invalid api key.*\$NOPE_KEY, which is not set"):
        b.generate(conv())
    assert (b.stats.requests, b.stats.client_errors) == (1, 1)


def test_response_cut_off_mid_body_is_retried(server):
    cut = completion("whole")[1][:20]
    server.script = [(200, cut, {"Content-Length": "500"}), completion("whole")]
    b = fast(server)
    assert b.generate(conv()).text == "whole"
    assert (b.stats.connection_errors, b.stats.retries, b.stats.malformed) == (1, 1, 0)


def test_connection_refused_is_retried_then_reported():
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    b = HTTPBackend("m", f"http://127.0.0.1:{port}/v1", max_retries=2, backoff_s=0.01, timeout_s=1.0)
    with pytest.raises(BackendUnavailableError, match="connection error"):
        b.generate(conv())
    assert (b.stats.connection_errors, b.stats.requests) == (3, 3)


def test_nothing_listening_fails_within_about_a_second_with_the_default_retries():
    """A refused connection is not a busy server: 3 attempts in a row end the call (it spent 15-31 s in the
    default 5 retries with exponential backoff, on every call of every unit of a run)."""
    import socket
    import time

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    b = HTTPBackend("m", f"http://127.0.0.1:{port}/v1")  # the defaults: max_retries 5, backoff from 1 s
    began = time.perf_counter()
    with pytest.raises(
        BackendUnavailableError, match=r"refused.* on 3 attempts in a row \(nothing answers there"
    ):
        b.generate(conv())
    assert time.perf_counter() - began < 3.0
    assert (b.stats.connection_errors, b.stats.requests) == (3, 3)


def test_batch_runs_concurrently_within_the_limit_and_keeps_order(server):
    def echo(body):
        return ("sleep", 0.15, completion(body["messages"][1]["content"][0]["text"].upper()))

    server.script = [echo]
    b = fast(server, max_concurrency=2)
    began = time.perf_counter()
    out = b.generate_batch([conv(f"q{i}") for i in range(6)])
    elapsed = time.perf_counter() - began
    assert [g.text for g in out] == [f"Q{i}" for i in range(6)]
    assert server.peak == 2  # two in flight at once, never more
    assert elapsed < 6 * 0.15  # faster than one at a time


def test_cached_http_backend_calls_the_server_once(server, tmp_path):
    server.script = [completion("plan A", {"prompt_tokens": 9, "completion_tokens": 2})]
    b = make_backend(
        "test-model", api_base=server.url, cache=tmp_path / "c.sqlite", max_retries=0, max_new_tokens=32
    )
    first, second = b.generate(conv()), b.generate(conv())
    assert (first.cached, second.cached, second.text, second.prompt_tokens) == (False, True, "plan A", 9)
    assert len(server.requests) == 1


def test_bad_api_base_is_rejected():
    with pytest.raises(ValueError, match="http"):
        HTTPBackend("m", "localhost:8000/v1")
