"""Peak memory of ``policies.serve`` under many concurrent maximum-size requests, and under hostile ones.

Default run: starts the server in a child process (its own RSS, nothing of the client's), with a scripted
backend that takes ``--model-ms`` per forward pass (so requests pile up, every one holding its decoded
images). Then ``--clients`` threads each send one request as large as the limits allow: ``max_images``
images of ``max_image_pixels`` pixels each (compressible PNGs, so all of them fit in the body), padded with
text up to ``max_body_mb``. Clients refused with HTTP 503 (over ``max_connections``) retry after 0.2 s, as
the HTTP backend does; the run ends when every client has an answer or ``--deadline-s`` passes. Prints the
server's peak RSS (``VmHWM``) before and after the load, the answers by status, and the bound
``max_connections x (5 x max_body + (3 x max_images + 7) x max_image_pixels bytes)`` it should stay under.

``--hostile``: the requests of issue 29 against a real (tiny, CPU) transformers model, each in a fresh
server process, once with the request limits off (no prompt limit, no deadline, no eviction of stalled
connections: the server as it was) and once with the defaults, in the same run: ``--stalled`` connections
that never finish their headers, then ``/health`` and a 4-token request; a ``--long-kb`` prompt with a
4-token request sent just after it (the short one's latency); a ``--huge-mb`` prompt with ``max_tokens``
1 (with the limits off only when ``--unsafe``: the issue saw it grow the server to 19.1 GB). Prints, per
step, the answers, their latency and the server's peak RSS.

    python bench/serve_memory.py [--clients 100] [--max-connections 64] [--max-body-mb 16] ...
    python bench/serve_memory.py --hostile [--long-kb 300] [--huge-mb 15] [--stalled 40]
"""

from __future__ import annotations

import argparse
import base64
import http.client
import io
import json
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import numpy as np

MB = 2**20


def serve(args: argparse.Namespace) -> None:
    """Child process: serve until stdin closes; print the port first."""
    from policies.backends.scripted import ScriptedBackend
    from policies.serve import ModelServer
    from policies.serve.limits import FALLBACK_TOKEN_CHARS

    def answer(messages: list) -> str:
        backend.calls.clear()  # ScriptedBackend keeps every conversation for tests: not the server's memory
        time.sleep(args.model_ms / 1000)
        images = [
            p["image"]
            for m in messages
            if isinstance(m["content"], list)
            for p in m["content"]
            if p["type"] == "image"
        ]
        return f"{len(images)} images, {sum(i.size for i in images)} values"

    backend = ScriptedBackend(answer)
    # A prompt limit that admits the whole body's text (the worst case for memory; by default a prompt of
    # more than max_prompt_tokens x 32 characters would be refused before it is queued).
    text_tokens = int(args.max_body_mb * MB) // FALLBACK_TOKEN_CHARS + 1
    server = ModelServer(
        backend,
        model_name="m",
        port=0,
        max_batch=1,
        max_wait_ms=0,
        max_prompt_tokens=text_tokens,
        max_body_mb=args.max_body_mb,
        max_images=args.max_images,
        max_image_pixels=args.max_image_pixels,
        max_connections=args.max_connections,
        read_timeout_s=60,
    ).start()
    print(server.address[1], flush=True)
    sys.stdin.read()
    server.stop()


def serve_tiny(args: argparse.Namespace) -> None:
    """Child process: serve a tiny transformers model with the limits on or off; print the port first."""
    from policies.backends.transformers_backend import TransformersBackend
    from policies.serve import ModelServer
    from policies.tiny import cached_tiny_vlm

    backend = TransformersBackend(str(cached_tiny_vlm("qwen2_5_vl", 0, args.tiny_dir)), device="cpu")
    off = args.limits == "off"
    server = ModelServer(backend, model_name="m", port=0, request_deadline_s=1e9 if off else 300.0).start()
    if off:  # the server as it was: every prompt reaches the model, stalled connections keep their slots
        server.prompt_tokens = lambda request: 0
        server._httpd.connections.evict_after_s = float("inf")
    print(server.address[1], flush=True)
    sys.stdin.read()
    server.stop()


def rss_mb(pid: int, field: str = "VmHWM") -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no {field} in /proc (Linux only)")


def timed_request(
    port: int, method: str, path: str, body: bytes | None, timeout_s: float
) -> tuple[str, float]:
    """(status or error name, seconds) of one request on a new connection."""
    began = time.monotonic()
    try:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout_s)
        conn.request(method, path, body, {"Content-Type": "application/json"} if body else {})
        response = conn.getresponse()
        response.read()
        conn.close()
        return str(response.status), time.monotonic() - began
    except OSError as err:
        return type(err).__name__, time.monotonic() - began


def chat(text: str, max_tokens: int) -> bytes:
    return json.dumps(
        {"model": "m", "max_tokens": max_tokens, "messages": [{"role": "user", "content": text}]}
    ).encode()


def hostile_steps(args: argparse.Namespace, port: int, pid: int, limits: str) -> list[tuple[str, str]]:
    """Run the hostile requests against one server; rows of (step, what happened)."""
    rows = []
    short = chat("Which way is the door?", 4)
    stalled = [socket.create_connection(("127.0.0.1", port)) for _ in range(args.stalled)]
    for conn in stalled:
        conn.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n")  # and never the rest
    time.sleep(1.5)
    health, health_s = timed_request(port, "GET", "/health", None, 40)
    small, small_s = timed_request(port, "POST", "/v1/chat/completions", short, 40)
    rows.append(
        (
            f"{args.stalled} stalled connections",
            f"/health {health} in {health_s:.2f} s, 4-token request "
            f"{small} in {small_s:.2f} s; peak RSS {rss_mb(pid):.0f} MiB",
        )
    )
    for conn in stalled:
        conn.close()
    long_text = ("the robot moves to the red block and picks it up " * (args.long_kb * 1024 // 50 + 1))[
        : args.long_kb * 1024
    ]
    result: dict[str, tuple[str, float]] = {}
    worker = threading.Thread(
        target=lambda: result.__setitem__(
            "long", timed_request(port, "POST", "/v1/chat/completions", chat(long_text, 1), args.wait_s)
        )
    )
    worker.start()
    time.sleep(0.5)
    small, small_s = timed_request(port, "POST", "/v1/chat/completions", short, args.wait_s)
    worker.join()
    status, took = result["long"]
    rows.append(
        (
            f"{args.long_kb} KB prompt + 4-token request",
            f"long {status} in {took:.1f} s, 4-token {small} in "
            f"{small_s:.2f} s; peak RSS {rss_mb(pid):.0f} MiB",
        )
    )
    if limits == "off" and not args.unsafe:
        rows.append(
            (
                f"{args.huge_mb:g} MB prompt, max_tokens 1",
                "skipped with the limits off (--unsafe runs it; issue 29: 19.1 GB, then killed)",
            )
        )
        return rows
    status, took = timed_request(
        port, "POST", "/v1/chat/completions", chat("x" * int(args.huge_mb * MB), 1), args.wait_s
    )
    rows.append(
        (
            f"{args.huge_mb:g} MB prompt, max_tokens 1",
            f"{status} in {took:.2f} s; peak RSS {rss_mb(pid):.0f} MiB",
        )
    )
    return rows


def hostile(args: argparse.Namespace) -> None:
    for limits in ("off", "on"):
        child = subprocess.Popen(
            [sys.executable, __file__, "--serve-tiny", "--limits", limits, "--tiny-dir", args.tiny_dir],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            port = int(child.stdout.readline())
            idle = rss_mb(child.pid)
            rows = hostile_steps(args, port, child.pid, limits)
        finally:
            child.kill()  # with the limits off it may still be working on the long prompt
            child.wait(timeout=30)
        print(f"limits {limits} (tiny Qwen2.5-VL on CPU, idle peak RSS {idle:.0f} MiB):")
        for step, outcome in rows:
            print(f"  {step}: {outcome}")


def max_size_body(args: argparse.Namespace) -> bytes:
    width = 2048
    height = args.max_image_pixels // width
    ramp = np.broadcast_to((np.arange(width) % 256).astype(np.uint8)[None, :, None], (height, width, 3))
    from PIL import Image

    buffer = io.BytesIO()
    Image.fromarray(np.ascontiguousarray(ramp)).save(buffer, format="PNG")
    url = "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode()
    parts = [{"type": "image_url", "image_url": {"url": url}} for _ in range(args.max_images)]
    body = {
        "model": "m",
        "max_tokens": 8,
        "messages": [{"role": "user", "content": [*parts, {"type": "text", "text": ""}]}],
    }
    room = int(args.max_body_mb * MB) - len(json.dumps(body)) - 16
    body["messages"][0]["content"][-1]["text"] = "x" * room
    return json.dumps(body).encode()


def client(port: int, body: bytes, deadline: float, statuses: Counter, lock: threading.Lock) -> None:
    status = "no answer"
    while time.monotonic() < deadline:
        try:
            conn = http.client.HTTPConnection(
                "127.0.0.1", port, timeout=max(1.0, deadline - time.monotonic())
            )
            conn.request("POST", "/v1/chat/completions", body, {"Content-Type": "application/json"})
            response = conn.getresponse()
            response.read()
            status = response.status
            conn.close()
        except OSError as err:  # refused over the cap: the server may close before reading the body
            status = type(err).__name__
        if status != 503 and not isinstance(status, str):
            break
        with lock:
            statuses["retries"] += 1
        time.sleep(0.2)
    with lock:
        statuses[status] += 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=100)
    parser.add_argument("--max-connections", type=int, default=32)
    parser.add_argument("--max-body-mb", type=float, default=16.0)
    parser.add_argument("--max-images", type=int, default=16)
    parser.add_argument("--max-image-pixels", type=int, default=2**20)
    parser.add_argument("--model-ms", type=float, default=50.0)
    parser.add_argument("--deadline-s", type=float, default=300.0)
    parser.add_argument(
        "--hostile", action="store_true", help="issue 29's hostile requests, limits off then on"
    )
    parser.add_argument("--long-kb", type=int, default=300, help="--hostile: the long prompt, in KB")
    parser.add_argument("--huge-mb", type=float, default=15.0, help="--hostile: the huge prompt, in MB")
    parser.add_argument("--stalled", type=int, default=40, help="--hostile: connections that never finish")
    parser.add_argument("--wait-s", type=float, default=120.0, help="--hostile: longest a client waits")
    parser.add_argument(
        "--unsafe", action="store_true", help="--hostile: send the huge prompt with limits off too"
    )
    parser.add_argument(
        "--tiny-dir", default=".cache/tiny_models", help="--hostile: where the tiny model is cached"
    )
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--serve-tiny", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--limits", choices=("on", "off"), default="on", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args)
        return
    if args.serve_tiny:
        serve_tiny(args)
        return
    if args.hostile:
        hostile(args)
        return
    child = subprocess.Popen(
        [sys.executable, __file__, "--serve", *sys.argv[1:]],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        port = int(child.stdout.readline())
        idle = rss_mb(child.pid)
        body = max_size_body(args)
        statuses: Counter = Counter()
        lock, deadline = threading.Lock(), time.monotonic() + args.deadline_s
        began = time.perf_counter()
        threads = [
            threading.Thread(target=client, args=(port, body, deadline, statuses, lock))
            for _ in range(args.clients)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        elapsed, peak = time.perf_counter() - began, rss_mb(child.pid)
    finally:
        child.stdin.close()
        child.wait(timeout=30)
    # Per connection: the body five times (bytes read, the decoded JSON document, the parsed strings, the
    # base64 slices and their bytes), the decoded images (3 bytes a pixel), and the image being decoded.
    per_request = 5 * args.max_body_mb + (3 * args.max_images + 7) * args.max_image_pixels / MB
    print(
        f"{args.clients} clients, body {len(body) / MB:.1f} MiB with {args.max_images} images of "
        f"{args.max_image_pixels} pixels; max_connections {args.max_connections}"
    )
    print(f"answers: {dict(statuses)} in {elapsed:.1f} s")
    print(
        f"server peak RSS: idle {idle:.0f} MiB, under load {peak:.0f} MiB (+{peak - idle:.0f} MiB); "
        f"bound max_connections x {per_request:.0f} MiB = {args.max_connections * per_request:.0f} MiB"
    )


if __name__ == "__main__":
    main()
