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
from policies.config_cli import parse_config
from policies.serve import ModelServer
from policies.serve.__main__ import ServeConfig, api_key, server_options
from policies.serve.server import ExposedServerWarning, is_loopback

KEY = "s3cret-key"


def _serve(**options):
    backend = ScriptedBackend(lambda messages: f"{sum(isinstance(m['content'], list) for m in messages)} ok")
    return ModelServer(backend, model_name="m", port=0, max_wait_ms=0, **options).start()


@pytest.fixture(scope="module")
def server():
    s = _serve(
        max_body_mb=0.25, max_images=2, max_image_pixels=64 * 64, read_timeout_s=0.6, max_connections=4
    )
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
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", ihdr)
        + chunk(b"IDAT", zlib.compress(b"\0" * 64))
        + chunk(b"IEND", b"")
    )


def request(images=(), text="hi", model="m"):
    parts = [{"type": "image_url", "image_url": {"url": u}} for u in images] + [
        {"type": "text", "text": text}
    ]
    return {"model": model, "messages": [{"role": "user", "content": parts}]}


def post(server, body, headers=None):
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    req = urllib.request.Request(
        server.url + "/chat/completions",
        data=data,
        method="POST",
        headers={"Content-Type": "application/json", **(headers or {})},
    )
    try:
        with urllib.request.urlopen(req, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


def test_a_request_within_the_limits_is_answered(server):
    small = np.zeros((64, 64, 3), np.uint8)
    status, body = post(server, request([png_url(small), png_url(small)]))
    assert status == 200 and body["choices"][0]["message"]["content"] == "1 ok"


@pytest.mark.parametrize(
    ("make_body", "status", "match"),
    [
        (lambda: request(text="x" * 300_000), 413, "accepts at most 262144"),
        (
            lambda: request([png_url(np.zeros((8, 8, 3), np.uint8))] * 3),
            400,
            "holds 3 images; this server accepts at most 2",
        ),
        (
            lambda: request([png_url(np.zeros((65, 64, 3), np.uint8))]),
            400,
            "64x65 = 4160 pixels; this server accepts at most 4096",
        ),
        (lambda: request([png_url(raw=png_header_only(5000, 5000))]), 400, "5000x5000 = 25000000 pixels"),
        (
            lambda: request([png_url(raw=png_header_only(60000, 60000))]),
            400,
            "larger than this server accepts",
        ),
        (lambda: request([png_url(raw=b"GIF89a" + b"\0" * 20)]), 400, "does not hold a readable"),
        (lambda: b"[" * 100_000 + b"]" * 100_000, 400, "too deeply"),
        (lambda: ('{"model": "m", "messages": ' + "[" * 900 + "]" * 900 + "}").encode(), 400, "too deeply"),
        (lambda: b'{"model": "m", "max_tokens": ' + b"9" * 5000 + b"}", 400, "not valid JSON"),
        (lambda: b"\xff\xfe{}", 400, "not valid JSON"),
    ],
)
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
    config = parse_config(
        ServeConfig, ["--model", "/ckpt/q", "--api-key-env", "SERVE_TEST_KEY", "--max-images", "3"]
    )
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
        # a byte every 0.1 s keeps every read under the timeout; the deadline still ends it
        for _ in range(60):
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
        with urllib.request.urlopen(s.url.removesuffix("/v1") + "/health", timeout=5) as response:
            assert json.loads(response.read()) == {"status": "ok"}  # liveness answers without a slot
        assert time.monotonic() - began < 0.5
        began = time.monotonic()
        refused = _connect(s, b"GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n")
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


class CountingBackend(ScriptedBackend):
    """A scripted model with a tokenizer stand-in: one token a word, the longest token 10 characters."""

    longest_token_chars = 10

    def __init__(self, answer="ok", context_length=None, delay_s=0.0):
        super().__init__(lambda messages: time.sleep(delay_s) or answer)
        self.context_length, self.counted = context_length, []

    def count_prompt_tokens(self, messages):
        self.counted.append(messages)
        return sum(len(str(m["content"]).split()) for m in messages)


def chat(text, max_tokens=4):
    return {"model": "m", "max_tokens": max_tokens, "messages": [{"role": "user", "content": text}]}


def test_an_over_long_prompt_is_refused_before_the_tokenizer_and_the_model():
    backend = CountingBackend()
    with ModelServer(backend, model_name="m", port=0, max_wait_ms=0, max_prompt_tokens=100) as s:
        began = time.monotonic()
        status, body = post(s, chat("x" * (15 * 2**20), max_tokens=1))  # the 15 MB request
        assert status == 400 and time.monotonic() - began < 5
        message = body["error"]["message"]
        assert "15728640 characters, so more than 100 tokens" in message and "--max-prompt-tokens" in message
        assert backend.counted == [] and backend.calls == []  # neither tokenised nor run
        many = {"model": "m", "messages": [{"role": "user", "content": "a"}] * 101}
        status, body = post(s, many)  # few characters, but each turn costs template tokens
        assert status == 400 and "101 messages, so more than 100 prompt tokens" in body["error"]["message"]
        assert backend.counted == []
        status, body = post(s, chat("word " * 150))  # within the character bound: counted, then refused
        assert (
            status == 400
            and "the prompt has 150 tokens; this server accepts prompts of at most 100"
            in body["error"]["message"]
        )
        assert len(backend.counted) == 1 and backend.calls == []
        assert post(s, chat("word " * 100))[0] == 200 and len(backend.calls) == 1
        assert s.stats()["max_prompt_tokens"] == 100


def test_prompt_and_completion_must_fit_the_context_and_the_default_limit_follows_it():
    backend = CountingBackend(context_length=200)
    with ModelServer(backend, model_name="m", port=0, max_wait_ms=0) as s:
        assert s.prompt_limit.max_tokens == 200  # the model's context (under 32768)
        status, body = post(s, chat("word " * 20, max_tokens=190))
        assert (
            status == 400 and "210 is more than the model's context of 200 tokens" in body["error"]["message"]
        )
        assert post(s, chat("word " * 20, max_tokens=180))[0] == 200
    with pytest.raises(ValueError, match="--max-prompt-tokens 300 is more than the model's context of 200"):
        ModelServer(backend, port=0, max_prompt_tokens=300)
    assert ModelServer(ScriptedBackend(["x"]), port=0).prompt_limit.max_tokens == 32768  # no context known
    config = parse_config(
        ServeConfig, ["--model", "/ckpt/q", "--max-prompt-tokens", "4096", "--request-deadline-s", "30"]
    )
    assert (server_options(config)["max_prompt_tokens"], server_options(config)["request_deadline_s"]) == (
        4096,
        30.0,
    )


def test_a_request_past_its_deadline_gets_504_and_one_still_queued_503(monkeypatch):
    monkeypatch.setattr("policies.serve.server.DEADLINE_GRACE_S", 0.2)  # how long the model may take to stop
    backend = CountingBackend(delay_s=0.9)  # no supports_deadlines: the server stops waiting for it
    with ModelServer(
        backend, model_name="m", port=0, max_wait_ms=0, max_batch=1, request_deadline_s=0.4
    ) as s:
        results = {}
        first = threading.Thread(target=lambda: results.__setitem__("running", post(s, chat("a"))))
        first.start()
        while not backend.calls:
            time.sleep(0.01)
        began = time.monotonic()
        results["queued"] = post(s, chat("b"))
        queued_s = time.monotonic() - began
        first.join(10)
    (status, body), (queued, queued_body) = results["running"], results["queued"]
    assert status == 504 and "no answer within 0.4 s (--request-deadline-s)" in body["error"]["message"]
    assert queued == 503 and "waited" in queued_body["error"]["message"] and queued_s < 1.5
    assert len(backend.calls) == 1  # the queued one never reached the model


def test_the_least_work_runs_first_and_the_oldest_cannot_starve():
    from policies.backends.base import GenerationConfig
    from policies.serve import DynamicBatcher
    from policies.serve.protocol import ChatRequest

    backend = ScriptedBackend(lambda messages: messages[0]["content"])
    batcher = DynamicBatcher(backend, max_batch=1, max_wait_ms=0)

    def submit(name, tokens, new, deadline_s):
        request = ChatRequest([{"role": "user", "content": name}], GenerationConfig(max_new_tokens=new))
        return batcher.submit(request, deadline=time.monotonic() + deadline_s, prompt_tokens=tokens)

    futures = [submit("old", 9000, 8000, 1.0)]
    time.sleep(0.55)  # "old" has now waited more than half its deadline: it goes first, however long
    futures += [submit("long-1", 2000, 1000, 60), submit("long-2", 2000, 1000, 60), submit("short", 5, 4, 60)]
    batcher.start()
    assert [f.result(5).text for f in futures] == ["old", "long-1", "long-2", "short"]
    batcher.stop()
    assert [c[0]["content"] for c in backend.calls] == ["old", "short", "long-1", "long-2"]


def test_a_request_whose_client_hangs_up_is_dropped_before_the_model():
    release = threading.Event()
    backend = ScriptedBackend(lambda messages: release.wait(10) and messages[0]["content"])
    with ModelServer(backend, model_name="m", port=0, max_wait_ms=0, max_batch=1) as s:
        busy = threading.Thread(target=post, args=(s, chat("busy")))
        busy.start()
        while not backend.calls:
            time.sleep(0.01)
        body = json.dumps(chat("abandoned")).encode()
        gone = _connect(s, HEADERS.replace(b"500", str(len(body)).encode()) + body)
        time.sleep(0.3)  # parsed and queued behind "busy"
        gone.close()
        time.sleep(0.6)  # the waiting handler notices within 0.25 s
        release.set()
        busy.join(10)
    assert [c[0]["content"] for c in backend.calls] == ["busy"] and s.stats()["expired"] == 1


def test_stalled_connections_cannot_lock_out_health_and_small_requests():
    """The issue's case: 32 stalled connections (the default cap) held every slot until their 30 s read
    timeout. Now a new client takes the slot of the longest-stalled one at once."""
    with _serve() as s:  # the defaults: max_connections 32, read_timeout_s 30
        stalled = [_connect(s, HEADERS[:30]) for _ in range(32)] + [
            _connect(s, HEADERS + b"{") for _ in range(8)
        ]
        time.sleep(1.2)  # past EVICT_AFTER_S: the stalled ones may now be evicted
        began = time.monotonic()
        with urllib.request.urlopen(s.url.removesuffix("/v1") + "/health", timeout=5) as response:
            assert json.loads(response.read()) == {"status": "ok"}
        assert time.monotonic() - began < 1.5
        began = time.monotonic()
        assert post(s, request())[0] == 200 and time.monotonic() - began < 1.5
        assert s.stats()["evicted_connections"] >= 2
        for conn in stalled:
            conn.close()
