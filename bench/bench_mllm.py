"""Speed of the MLLM plumbing, as ratios against baselines measured in the same run (medians of repeats).

    python bench/bench_mllm.py [--repeats 5]

1. transformers: 8 conversations one by one vs one left-padded batch (tiny Qwen2.5-VL, CPU, 1 thread);
2. cache: an answer from SQLite vs the same answer from the tiny model;
3. HTTP: 16 requests to a loopback server answering in 50 ms, concurrency 1 vs 8;
4. policy overhead: one EB agent step (prompt, parse, bookkeeping) with a scripted model vs a tiny-model call.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np

from benchmarks.core.timing import median_time


def conversations(n, seed=0):
    rng = np.random.default_rng(seed)
    return [
        [
            {
                "role": "user",
                "content": [
                    {"type": "image", "image": rng.integers(0, 256, (64, 64, 3), dtype=np.uint8)},
                    {"type": "text", "text": "plan the next step " * (1 + i % 3)},
                ],
            }
        ]
        for i in range(n)
    ]


def bench_batching(path, repeats):
    from policies.backends import GenerationConfig
    from policies.backends.transformers_backend import TransformersBackend

    backend = TransformersBackend(str(path), config=GenerationConfig(max_new_tokens=16), batch_size=8)
    convs = conversations(8)
    backend.generate_batch(convs)  # warm-up
    one_by_one = median_time(lambda: [backend.generate(c) for c in convs], repeats)
    batched = median_time(lambda: backend.generate_batch(convs), repeats)
    return {"one_by_one_s": one_by_one, "batched_s": batched, "speedup": one_by_one / batched}


def bench_cache(path, repeats):
    from policies.backends import make_backend

    with tempfile.TemporaryDirectory() as tmp:
        backend = make_backend(str(path), cache=Path(tmp) / "c.sqlite", max_new_tokens=16)
        conv = conversations(1)[0]
        miss = median_time(lambda: backend.inner.generate(conv), repeats)
        backend.generate(conv)
        hit = median_time(lambda: backend.generate(conv), repeats)
    return {"model_s": miss, "cache_hit_s": hit, "speedup": miss / hit}


class _SlowServer:
    def __init__(self, delay):
        body = json.dumps({"choices": [{"message": {"role": "assistant", "content": "ok"}}]}).encode()

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                self.rfile.read(int(self.headers["Content-Length"]))
                time.sleep(delay)
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()


def bench_http(repeats):
    from policies.backends.http_backend import HTTPBackend

    server = _SlowServer(0.05)
    convs = conversations(16)
    serial = HTTPBackend("m", server.url, max_concurrency=1)
    parallel = HTTPBackend("m", server.url, max_concurrency=8)
    t1 = median_time(lambda: serial.generate_batch(convs), repeats)
    t8 = median_time(lambda: parallel.generate_batch(convs), repeats)
    server.httpd.shutdown()
    return {"concurrency_1_s": t1, "concurrency_8_s": t8, "speedup": t1 / t8}


def bench_policy_overhead(path, repeats):
    from policies.backends import GenerationConfig
    from policies.backends.scripted import ScriptedBackend
    from policies.backends.transformers_backend import TransformersBackend
    from policies.base import EpisodeContext
    from policies.mllm.embodied import EBAgentPolicy

    answer = json.dumps({"executable_plan": [{"action_id": 0, "action_name": "MoveAhead"}]})
    policy = EBAgentPolicy(ScriptedBackend(lambda m: answer), task="navigation")
    obs = {
        "head_rgb": conversations(1)[0][0]["content"][0]["image"],
        "feedback": "Last action MoveAhead executed successfully.",
    }

    def episode_step():
        policy.reset(EpisodeContext("navigate to the apple", 0))
        policy.act(obs)

    overhead = median_time(episode_step, repeats * 4)
    model = TransformersBackend(str(path), config=GenerationConfig(max_new_tokens=16))
    model_call = median_time(lambda: model.generate(conversations(1)[0]), repeats)
    return {
        "policy_step_s": overhead,
        "tiny_model_call_s": model_call,
        "overhead_fraction": overhead / model_call,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    import torch

    torch.set_num_threads(1)
    from policies.tiny import cached_tiny_vlm

    path = cached_tiny_vlm("qwen2_5_vl", 0, Path(tempfile.gettempdir()) / "spatial_arena_bench_tiny")
    results = {
        "transformers batching (8 convs)": bench_batching(path, args.repeats),
        "response cache": bench_cache(path, args.repeats),
        "http concurrency (16 x 50 ms)": bench_http(args.repeats),
        "EB policy overhead per step": bench_policy_overhead(path, args.repeats),
    }
    for name, numbers in results.items():
        print(f"{name}: " + ", ".join(f"{k}={v:.4g}" for k, v in numbers.items()))


if __name__ == "__main__":
    main()
