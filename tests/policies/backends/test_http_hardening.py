"""The HTTP backend against hostile answers on 127.0.0.1: a total deadline per attempt, every malformed field
counted as a malformed response, and empty answers never cached."""

import json
import math
import socket
import threading
import time

import pytest

from policies.backends import BackendUnavailableError, MalformedResponseError
from policies.backends.cache import CachedBackend
from policies.backends.http_backend import HTTPBackend
from policies.backends.scripted import ScriptedBackend
from tests.policies.backends.test_http import FakeServer, completion

MESSAGES = [{"role": "user", "content": "hi"}]


class DripServer:
    """Reads a request, then sends ``head`` and ``body`` one byte every ``every_s`` seconds (each read
    finishes well inside any per-read timeout)."""

    def __init__(self, head, body=b"", every_s=0.1, drip_head=False):
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}/v1"
        self.head, self.body, self.every_s, self.drip_head = head, body, every_s, drip_head
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        self.sock.settimeout(0.2)
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn):
        with conn:
            conn.recv(65536)
            try:
                if not self.drip_head:
                    conn.sendall(self.head)
                for byte in (self.head if self.drip_head else b"") + self.body:
                    if self.stop.is_set():
                        return
                    conn.sendall(bytes([byte]))
                    time.sleep(self.every_s)
            except OSError:  # the client hung up: what the deadline should make it do
                pass

    def close(self):
        self.stop.set()
        self.thread.join(5)  # the accept loop sees the flag within its 0.2 s timeout
        self.sock.close()


@pytest.mark.parametrize("drip_head", [False, True])
def test_a_dripping_server_cannot_hold_an_attempt_past_its_deadline(drip_head):
    head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 400\r\n\r\n"
    server = DripServer(head, b" " * 400, drip_head=drip_head)
    backend = HTTPBackend("m", server.url, timeout_s=1.0, max_retries=0)
    began = time.monotonic()
    try:
        with pytest.raises(BackendUnavailableError, match=r"no complete answer within 1 s"):
            backend.generate(MESSAGES)
    finally:
        server.close()
    assert time.monotonic() - began < 2.5  # a per-read timeout would wait 40+ s (400 bytes x 0.1 s)
    assert backend.stats.timeouts == 1 and backend.stats.requests == 1


def _raw(text):
    return 200, text.encode(), {}


def _usage(**fields):
    return _raw(
        '{"choices": [{"message": {"role": "assistant", "content": "ok"}}], "usage": {'
        + ", ".join(f'"{k}": {v}' for k, v in fields.items())
        + "}}"
    )


def _parts(parts):
    return completion(parts)


@pytest.mark.parametrize(
    ("reply", "match"),
    [
        (_usage(prompt_tokens="NaN", completion_tokens=3), "usage.prompt_tokens is not a token count"),
        (_usage(prompt_tokens=3, completion_tokens="Infinity"), "usage.completion_tokens"),
        (_usage(prompt_tokens="-Infinity", completion_tokens=3), "usage.prompt_tokens"),
        (_usage(prompt_tokens="1e400", completion_tokens=3), "usage.prompt_tokens"),
        (_usage(prompt_tokens="9" * 400, completion_tokens=3), "usage.prompt_tokens"),
        (_usage(prompt_tokens=-5, completion_tokens=3), "usage.prompt_tokens"),
        (_usage(prompt_tokens=2.5, completion_tokens=3), "usage.prompt_tokens"),
        (_usage(prompt_tokens='"12"', completion_tokens=3), "usage.prompt_tokens"),
        (_usage(prompt_tokens="true", completion_tokens=3), "usage.prompt_tokens"),
        (_usage(prompt_tokens=1, completion_tokens=1, cost="NaN"), "usage.cost is not a finite"),
        (_usage(prompt_tokens=1, completion_tokens=1, cost="Infinity"), "usage.cost"),
        (_usage(prompt_tokens=1, completion_tokens=1, cost=-0.5), "usage.cost"),
        (_usage(prompt_tokens=1, completion_tokens=1, cost='"0.1"'), "usage.cost"),
        (_usage(prompt_tokens=1, completion_tokens=1, cost="1" + "0" * 400), "usage.cost"),
        (_parts([{"type": "text", "text": 5}]), "content part 0 is not text"),
        (
            _parts([{"type": "text", "text": "a"}, {"type": "image_url", "image_url": {"url": "x"}}]),
            "content part 1",
        ),
        (_parts(["a bare string"]), "content part 0"),
        (_parts([{"type": "text"}]), "content part 0"),
        (_parts([{"type": "text", "text": ["a"]}]), "content part 0"),
        (_raw("[" * 100_000 + "]" * 100_000), "body is not JSON"),
        (
            _raw(
                '{"choices": [{"message": {"content": "x"}}], "usage": ' + "[" * 50_000 + "]" * 50_000 + "}"
            ),
            "body is not JSON",
        ),
    ],
)
def test_every_malformed_field_is_a_counted_malformed_response(reply, match):
    server = FakeServer()
    server.script = [reply]
    backend = HTTPBackend(
        "m", server.url, max_retries=0, price_prompt_per_mtok=1.0, price_completion_per_mtok=1.0
    )
    try:
        with pytest.raises(MalformedResponseError, match=match):
            backend.generate(MESSAGES)
    finally:
        server.close()
    assert backend.stats.malformed == 1 and backend.stats.successes == 0
    assert backend.stats.cost_usd == 0.0 and backend.stats.prompt_tokens == 0


def test_valid_variants_still_parse_and_a_bad_cost_never_poisons_the_total():
    server = FakeServer()
    server.script = [
        _usage(prompt_tokens=1, completion_tokens=1, cost="NaN"),
        completion(
            [
                {"type": "refusal", "refusal": "no"},
                {"type": "text", "text": "left"},
                {"type": "output_text", "text": " 2"},
            ],
            {"prompt_tokens": 10.0, "completion_tokens": 2, "cost": 0.5},
        ),
        completion("ok", {"prompt_tokens": None, "completion_tokens": 1}),
    ]
    backend = HTTPBackend("m", server.url, max_retries=0)
    try:
        with pytest.raises(MalformedResponseError):
            backend.generate(MESSAGES)
        first, second = backend.generate(MESSAGES), backend.generate(MESSAGES)
    finally:
        server.close()
    assert (first.text, first.prompt_tokens, first.completion_tokens, first.cost_usd) == (
        "left 2",
        10,
        2,
        0.5,
    )
    assert (second.prompt_tokens, second.completion_tokens, second.cost_usd) == (None, 1, None)
    assert (
        backend.stats.cost_usd == 0.5
        and math.isfinite(backend.stats.cost_usd)
        and backend.stats.malformed == 1
    )


def test_empty_answers_are_never_cached(tmp_path):
    inner = ScriptedBackend(["", "  \n", "an answer", "never asked"])
    cache = CachedBackend(inner, tmp_path / "cache.sqlite")
    texts = [cache.generate(MESSAGES).text for _ in range(4)]
    assert texts == ["", "  \n", "an answer", "an answer"]
    assert len(inner.calls) == 3 and len(cache) == 1 and cache.hits == 1
    assert json.loads(json.dumps(cache.describe()))["cache"].endswith("cache.sqlite")


def _nested(depth):
    return "[" * depth + "]" * depth


def _at_stack_depth(frames, call):
    """``call()`` with ``frames`` frames under it on a fresh thread's stack (a worker calls from some depth):
    what it raised, or None."""
    raised = []

    def nest(n):
        if n:
            return nest(n - 1)
        try:
            call()
        except BaseException as err:
            raised.append(err)

    thread = threading.Thread(target=nest, args=(frames,))
    thread.start()
    thread.join(10)
    return raised[0] if raised else None


@pytest.mark.parametrize(
    "body",
    [
        '{"choices": [%s]}',
        '{"choices": %s}',
        '{"error": %s}',
        '{"choices": [{"message": {"content": [%s]}}]}',
    ],
)
def test_an_answer_nested_near_1000_deep_is_a_counted_malformed_response(body):
    """The issue's case (991 levels): ``json.loads`` accepted a depth that the preview of a part of it, one
    frame deeper, could not print, and RecursionError escaped. Each depth from 900 to 999 is tried from a
    fresh thread, so one of them lands in that window; every one is the same counted error."""
    server = FakeServer()
    server.script = [lambda request: _raw(body % _nested(len(request["messages"][0]["content"])))]
    backend = HTTPBackend("m", server.url, max_retries=0)
    depths = range(900, 1000)
    try:
        raised = [
            _at_stack_depth(0, lambda d=d: backend.generate([{"role": "user", "content": "x" * d}]))
            for d in depths
        ]
    finally:
        server.close()
    assert {type(err).__name__ for err in raised} == {"MalformedResponseError"}
    assert all("more than 64 levels deep" in str(err) for err in raised)
    assert backend.stats.malformed == len(depths) and backend.stats.successes == 0


def test_a_deep_but_bounded_answer_still_parses_and_a_huge_one_is_malformed():
    server = FakeServer()
    parts = [{"type": "text", "text": "ok"}]
    server.script = [
        completion(parts),
        _raw('{"choices": [{"message": {"content": "' + "x" * (16 * 2**20) + '"}}]}'),
    ]
    backend = HTTPBackend("m", server.url, max_retries=0)
    try:
        assert backend.generate(MESSAGES).text == "ok"
        with pytest.raises(MalformedResponseError, match="larger than 16777216 bytes"):
            backend.generate(MESSAGES)
    finally:
        server.close()
    assert backend.stats.malformed == 1
