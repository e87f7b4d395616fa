"""``policies.serve`` is safe to expose: bounded requests, API key, read deadlines and a connection cap.

All on 127.0.0.1 with a scripted backend (the limits sit in front of the model, so no model is loaded)."""

import base64
import io
import json
import socket
import struct
import threading
import time
import urllib.error
import urllib.request
import zlib

import numpy as np
import pytest
from PIL import Image

from policies.backends.scripted import ScriptedBackend
from policies.cli import parse_config
from policies.serve import ModelServer
from policies.serve.__main__ import ServeConfig, api_key, server_options
from policies.serve.server import ExposedServerWarning, is_loopback

KEY = "s3cret-key"


def _serve(**options):
    backend = ScriptedBackend(lambda messages: f"{sum(isinstance(m['content'], list) for m in messages)} ok")
    return ModelServer(backend, model_name="m", port=0, max_wait_ms=0, **options).start()


@pytest.fixture(scope="module")
def server():
    s = _serve(max_body_mb=0.25, max_images=2, max_image_pixels=64 * 64, read_timeout_s=0.6, max_connections=4)
    yield s
    s.stop()


def png_url(array=None, raw=None):
    if raw is None:
        buffer = io.BytesIO()
        Image.fromarray(array).save(buffer, format="PNG")
        raw = buffer.getvalue()
    return "data:image/png;base64," + base64.b64encode(raw).decode()


def png_header_only(width, height):
    """A PNG whose header claims ``width x height`` (RGB) over a few bytes of pixel data: decoding it
    would need width * height * 3 bytes; the header is all that may be read."""
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"\0" * 64)) + chunk(b"IEND", b"")


def request(images=(), text="hi", model="m"):
    parts = [{"type": "image_url", "image_url": {"url": u}} for u in images] + [{"type": "text", "text": text}]
    return {"model": model, "messages": [{"role": "user", "content": parts}]}


def post(server, body, headers=None):
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    req = urllib.request.Request(server.url + "/chat/completions", data=data, method="POST",
                                 headers={"Content-Type": "application/json", **(headers or {})})  # fmt: skip
    try:
        with urllib.request.urlopen(req, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


def test_a_request_within_the_limits_is_answered(server):
    small = np.zeros((64, 64, 3), np.uint8)
    status, body = post(server, request([png_url(small), png_url(small)]))
    assert status == 200 and body["choices"][0]["message"]["content"] == "1 ok"


@pytest.mark.parametrize(("make_body", "status", "match"), [
    (lambda: request(text="x" * 300_000), 413, "accepts at most 262144"),
    (lambda: request([png_url(np.zeros((8, 8, 3), np.uint8))] * 3), 400, "holds 3 images; this server accepts at most 2"),
    (lambda: request([png_url(np.zeros((65, 64, 3), np.uint8))]), 400, "64x65 = 4160 pixels; this server accepts at most 4096"),
    (lambda: request([png_url(raw=png_header_only(5000, 5000))]), 400, "5000x5000 = 25000000 pixels"),
    (lambda: request([png_url(raw=png_header_only(60000, 60000))]), 400, "larger than this server accepts"),
    (lambda: request([png_url(raw=b"GIF89a" + b"\0" * 20)]), 400, "does not hold a readable"),
    (lambda: b"[" * 100_000 + b"]" * 100_000, 400, "too deeply"),
    (lambda: ('{"model": "m", "messages": ' + "[" * 900 + "]" * 900 + "}").encode(), 400, "too deeply"),
    (lambda: b'{"model": "m", "max_tokens": ' + b"9" * 5000 + b"}", 400, "not valid JSON"),
    (lambda: b"\xff\xfe{}", 400, "not valid JSON"),
])  # fmt: skip
def test_over_limit_and_malformed_requests_get_4xx_with_a_message(server, make_body, status, match):
    code, answer = post(server, make_body())
    assert (code, answer["error"]["code"]) == (status, status) and match in answer["error"]["message"]


def test_pixel_limit_is_checked_from_the_header_before_decoding(server, monkeypatch):
    decoded = []
    monkeypatch.setattr(Image.Image, "load", lambda self: decoded.append(self.size))
    assert post(server, request([png_url(raw=png_header_only(5000, 5000))]))[0] == 400
    assert decoded == []  # refused without reading a pixel


def test_api_key_is_required_when_set_and_health_stays_open():
    with _serve(api_key=KEY) as s:
        status, body = post(s, request())
        assert status == 401 and "Authorization: Bearer" in body["error"]["message"]
        assert post(s, request(), {"Authorization": "Bearer wrong"})[0] == 401
        assert post(s, request(), {"Authorization": f"Bearer {KEY}"})[0] == 200
        with pytest.raises(urllib.error.HTTPError, match="401"):
            urllib.request.urlopen(s.url + "/models", timeout=5)
        with urllib.request.urlopen(s.url.removesuffix("/v1") + "/health", timeout=5) as response:
            assert json.loads(response.read()) == {"status": "ok"}


def test_api_key_comes_from_the_named_variable(monkeypatch):
    monkeypatch.setenv("SERVE_TEST_KEY", KEY)
    config = parse_config(ServeConfig, ["--model", "/ckpt/q", "--api-key-env", "SERVE_TEST_KEY", "--max-images", "3"])
    options = server_options(config)
    assert options["api_key"] == KEY and options["max_images"] == 3 and options["max_connections"] == 32
    monkeypatch.delenv("SERVE_TEST_KEY")
    with pytest.raises(SystemExit, match="SERVE_TEST_KEY: the variable is not set or empty"):
        api_key(config)
    assert api_key(parse_config(ServeConfig, ["--model", "/ckpt/q"])) is None


def test_exposed_address_without_a_key_warns(monkeypatch):
    assert [is_loopback(h) for h in ("127.0.0.1", "::1", "localhost", "127.0.0.2")] == [True] * 4
    assert [is_loopback(h) for h in ("0.0.0.0", "::", "192.168.1.7", "node-1")] == [False] * 4
    monkeypatch.setattr("policies.serve.server.is_loopback", lambda host: False)  # bind loopback, act exposed
    with pytest.warns(ExposedServerWarning, match="without an API key"):
        ModelServer(ScriptedBackend(["x"]), port=0).stop()
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ModelServer(ScriptedBackend(["x"]), port=0, api_key=KEY).stop()


def _connect(server, data=b""):
    conn = socket.create_connection(server.address, timeout=5)
    if data:
        conn.sendall(data)
    return conn


def _closed_within(conn, seconds):
    """Seconds until the server closes ``conn`` (reading whatever it answers first), or None."""
    began = time.monotonic()
    conn.settimeout(seconds)
    try:
        while conn.recv(4096):
            pass
    except TimeoutError:
        return None
    except OSError:
        pass
    return time.monotonic() - began


HEADERS = b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 500\r\n\r\n"


def test_headers_without_a_body_and_dripping_clients_are_disconnected(server):
    before = server.stats()["timed_out_connections"]
    silent = _connect(server, HEADERS)
    took = _closed_within(silent, 5)
    assert took is not None and took < 2.5
    drip = _connect(server, HEADERS[:-4])
    began = time.monotonic()
    with pytest.raises(OSError):
        for _ in range(60):  # a byte every 0.1 s keeps every read under the timeout; the deadline still ends it
            drip.sendall(b" ")
            time.sleep(0.1)
    assert time.monotonic() - began < 3
    assert server.stats()["timed_out_connections"] >= before + 1  # the drip: only the total deadline ends it
    silent.close(), drip.close()


def test_connections_over_the_cap_wait_then_get_503_and_slots_come_back():
    release = threading.Event()
    backend = ScriptedBackend(lambda messages: "done" if release.wait(20) else "timed out")
    with ModelServer(backend, model_name="m", port=0, max_connections=2, read_timeout_s=0.6) as s:
        busy = [threading.Thread(target=post, args=(s, request())) for _ in range(2)]
        for t in busy:
            t.start()
        while s.stats()["open_connections"] < 2:
            time.sleep(0.02)
        began = time.monotonic()
        refused = _connect(s, b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
        answer = refused.recv(4096).decode()
        assert answer.startswith("HTTP/1.1 503") and "max_connections" in answer
        assert time.monotonic() - began >= 0.5  # it waited for a slot first
        waiting = threading.Thread(target=lambda: results.append(post(s, request())))
        results = []
        waiting.start()  # waits in the backlog until a slot frees
        time.sleep(0.2)
        release.set()
        for t in [*busy, waiting]:
            t.join(10)
        assert results and results[0][0] == 200 and s.stats()["refused_connections"] == 1
        refused.close()
