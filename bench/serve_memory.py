"""Peak memory of ``policies.serve`` under many concurrent maximum-size requests, on 127.0.0.1.

Starts the server in a child process (its own RSS, nothing of the client's), with a scripted backend that
takes ``--model-ms`` per forward pass (so requests pile up, every one holding its decoded images). Then
``--clients`` threads each send one request as large as the limits allow: ``max_images`` images of
``max_image_pixels`` pixels each (compressible PNGs, so all of them fit in the body), padded with text up to
``max_body_mb``. Clients refused with HTTP 503 (over ``max_connections``) retry after 0.2 s, as the HTTP
backend does; the run ends when every client has an answer or ``--deadline-s`` passes. Prints the server's
peak RSS (``VmHWM``) before and after the load, the answers by status, and the bound
``max_connections x (5 x max_body + (3 x max_images + 7) x max_image_pixels bytes)`` it should stay under.

    python bench/serve_memory.py [--clients 100] [--max-connections 64] [--max-body-mb 16] ...
"""

from __future__ import annotations

import argparse
import base64
import http.client
import io
import json
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

    def answer(messages: list) -> str:
        backend.calls.clear()  # ScriptedBackend keeps every conversation for tests: not the server's memory
        time.sleep(args.model_ms / 1000)
        images = [p["image"] for m in messages if isinstance(m["content"], list) for p in m["content"]
                  if p["type"] == "image"]  # fmt: skip
        return f"{len(images)} images, {sum(i.size for i in images)} values"

    backend = ScriptedBackend(answer)
    server = ModelServer(backend, model_name="m", port=0, max_batch=1, max_wait_ms=0,
                         max_body_mb=args.max_body_mb, max_images=args.max_images,
                         max_image_pixels=args.max_image_pixels, max_connections=args.max_connections,
                         read_timeout_s=60).start()  # fmt: skip
    print(server.address[1], flush=True)
    sys.stdin.read()
    server.stop()


def peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmHWM in /proc (Linux only)")


def max_size_body(args: argparse.Namespace) -> bytes:
    width = 2048
    height = args.max_image_pixels // width
    ramp = np.broadcast_to((np.arange(width) % 256).astype(np.uint8)[None, :, None], (height, width, 3))
    from PIL import Image

    buffer = io.BytesIO()
    Image.fromarray(np.ascontiguousarray(ramp)).save(buffer, format="PNG")
    url = "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode()
    parts = [{"type": "image_url", "image_url": {"url": url}} for _ in range(args.max_images)]
    body = {"model": "m", "max_tokens": 8, "messages": [{"role": "user", "content": [*parts, {"type": "text", "text": ""}]}]}
    room = int(args.max_body_mb * MB) - len(json.dumps(body)) - 16
    body["messages"][0]["content"][-1]["text"] = "x" * room
    return json.dumps(body).encode()


def client(port: int, body: bytes, deadline: float, statuses: Counter, lock: threading.Lock) -> None:
    status = "no answer"
    while time.monotonic() < deadline:
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=max(1.0, deadline - time.monotonic()))
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
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args)
        return
    child = subprocess.Popen([sys.executable, __file__, "--serve", *sys.argv[1:]], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)  # fmt: skip
    try:
        port = int(child.stdout.readline())
        idle = peak_rss_mb(child.pid)
        body = max_size_body(args)
        statuses: Counter = Counter()
        lock, deadline = threading.Lock(), time.monotonic() + args.deadline_s
        began = time.perf_counter()
        threads = [threading.Thread(target=client, args=(port, body, deadline, statuses, lock)) for _ in range(args.clients)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        elapsed, peak = time.perf_counter() - began, peak_rss_mb(child.pid)
    finally:
        child.stdin.close()
        child.wait(timeout=30)
    # Per connection: the body five times (bytes read, the decoded JSON document, the parsed strings, the
    # base64 slices and their bytes), the decoded images (3 bytes a pixel), and the image being decoded.
    per_request = 5 * args.max_body_mb + (3 * args.max_images + 7) * args.max_image_pixels / MB
    print(f"{args.clients} clients, body {len(body) / MB:.1f} MiB with {args.max_images} images of "
          f"{args.max_image_pixels} pixels; max_connections {args.max_connections}")
    print(f"answers: {dict(statuses)} in {elapsed:.1f} s")
    print(f"server peak RSS: idle {idle:.0f} MiB, under load {peak:.0f} MiB (+{peak - idle:.0f} MiB); "
          f"bound max_connections x {per_request:.0f} MiB = {args.max_connections * per_request:.0f} MiB")


if __name__ == "__main__":
    main()
