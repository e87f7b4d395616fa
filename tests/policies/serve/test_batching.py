"""``policies.serve``: the batched OpenAI-compatible server on 127.0.0.1 with a tiny real model."""

import json
import threading
import time
import urllib.error
import urllib.request

import numpy as np
import pytest

from benchmarks.core import RunDir
from policies.backends import BackendRequestError, GenerationConfig, make_backend
from policies.backends.scripted import ScriptedBackend
from policies.backends.transformers_backend import TransformersBackend
from policies.config_cli import parse_config
from policies.serve import DynamicBatcher, ModelServer, RequestError
from policies.serve.__main__ import ServeConfig, server_options
from policies.serve.batcher import _batch_key, _Pending
from policies.serve.protocol import ChatRequest

MAX_BATCH = 4


@pytest.fixture(scope="module")
def model_path(tiny_vlm):
    return str(tiny_vlm("qwen2_5_vl"))


@pytest.fixture(scope="module")
def server(model_path):
    # A long wait window, so that requests sent together are gathered into one batch even on a loaded machine.
    with ModelServer.from_model(model_path, device="cpu", port=0, max_batch=MAX_BATCH, max_wait_ms=400) as s:
        yield s


@pytest.fixture(scope="module")
def local(model_path):
    return TransformersBackend(model_path, config=GenerationConfig(max_new_tokens=10))


def conversations(n, seed=0):
    rng = np.random.default_rng(seed)
    return [
        [
            {"role": "system", "content": "You are a robot."},
            {
                "role": "user",
                "content": [
                    {
                        "type": "image",
                        "image": rng.integers(0, 256, (28 + 14 * (i % 3), 56, 3), dtype=np.uint8),
                    },
                    {"type": "text", "text": "move to the red block " * (1 + i)},
                ],
            },
        ]
        for i in range(n)
    ]


def client(server, name=None, **options):
    return make_backend(name or server.model_name, api_base=server.url, cache=False, max_retries=0, **options)


def post(server, body, path="/v1/chat/completions"):
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    request = urllib.request.Request(
        server.url.removesuffix("/v1") + path,
        data=data,
        method="POST",
        headers={"Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


def get(server, path):
    with urllib.request.urlopen(server.url.removesuffix("/v1") + path, timeout=10) as response:
        return json.loads(response.read())


def test_concurrent_requests_are_batched_and_equal_unbatched_generation(server, local):
    before = server.stats()
    convs = conversations(MAX_BATCH + 2)
    text_only = [{"role": "user", "content": "Which way is the door?"}]
    http = client(server, max_new_tokens=10, max_concurrency=len(convs))
    short = client(server, max_new_tokens=4)
    results = {}
    threads = [
        threading.Thread(target=lambda: results.__setitem__("batch", http.generate_batch(convs))),
        threading.Thread(target=lambda: results.__setitem__("text", http.generate(text_only))),
        threading.Thread(target=lambda: results.__setitem__("short", short.generate(convs[0]))),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    reference = [local.generate(c) for c in convs]  # one conversation at a time, no padding
    got = [(g.text, g.prompt_tokens, g.completion_tokens) for g in results["batch"]]
    assert got == [(g.text, g.prompt_tokens, g.completion_tokens) for g in reference]
    assert results["text"].text == local.generate(text_only).text
    with _decoding(local, max_new_tokens=4):
        assert results["short"].text == local.generate(convs[0]).text
    stats = server.stats()
    sizes = {int(k): v - before["batch_sizes"].get(k, 0) for k, v in stats["batch_sizes"].items()}
    assert stats["requests"] - before["requests"] == len(convs) + 2
    assert sum(size * n for size, n in sizes.items()) == len(convs) + 2
    # batched, never beyond the cap
    assert max(s for s, n in sizes.items() if n) > 1 and max(sizes) <= MAX_BATCH


class _decoding:
    def __init__(self, backend, **changes):
        self.backend, self.changes = backend, changes

    def __enter__(self):
        self.saved = self.backend.config
        self.backend.config = GenerationConfig(**{**self.saved.__dict__, **self.changes})

    def __exit__(self, *exc):
        self.backend.config = self.saved


def test_usage_models_and_health(server):
    # plain text: accepted
    status, body = post(
        server,
        {
            "model": server.model_name,
            "max_tokens": 3,
            "response_format": {"type": "text"},
            "messages": [{"role": "user", "content": "hello"}],
        },
    )
    assert status == 200 and body["object"] == "chat.completion" and body["model"] == server.model_name
    usage = body["usage"]
    assert (
        usage["completion_tokens"] <= 3
        and usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]
    )
    assert body["choices"][0]["message"]["role"] == "assistant"
    assert body["choices"][0]["finish_reason"] == ("length" if usage["completion_tokens"] == 3 else "stop")
    assert [m["id"] for m in get(server, "/v1/models")["data"]] == [server.model_name]
    assert get(server, "/health") == {"status": "ok"}


BAD_IMAGE = {"type": "image_url", "image_url": {"url": "data:image/png;base64,bm90IGFuIGltYWdl"}}


@pytest.mark.parametrize(
    ("body", "status", "match"),
    [
        (b"{not json", 400, "not valid JSON"),
        (b"[1, 2]", 400, "must be a JSON object"),
        ({"model": "M"}, 400, "'messages' is required"),
        ({"model": "M", "messages": []}, 400, "non-empty list"),
        ({"model": "M", "messages": [{"role": "robot", "content": "hi"}]}, 400, "role must be one of"),
        (
            {"model": "M", "messages": [{"role": "user", "content": [BAD_IMAGE]}]},
            400,
            "does not hold a readable",
        ),
        (
            {
                "model": "M",
                "messages": [
                    {
                        "role": "user",
                        "content": [{"type": "image_url", "image_url": {"url": "https://example.com/a.png"}}],
                    }
                ],
            },
            400,
            "fetches nothing",
        ),
        (
            {"model": "M", "messages": [{"role": "user", "content": [{"type": "audio"}]}]},
            400,
            "parts must be",
        ),
        ({"model": "M", "stream": True, "messages": [{"role": "user", "content": "hi"}]}, 400, "stream"),
        ({"model": "M", "n": 2, "messages": [{"role": "user", "content": "hi"}]}, 400, "'n' must be 1"),
        (
            {"model": "M", "stop": ["\n"], "messages": [{"role": "user", "content": "hi"}]},
            400,
            "'stop' is not supported",
        ),
        ({"model": "M", "max_tokens": 0, "messages": [{"role": "user", "content": "hi"}]}, 400, "at least 1"),
        (
            {"model": "M", "temperature": "hot", "messages": [{"role": "user", "content": "hi"}]},
            400,
            "must be a float",
        ),
        ({"model": "other", "messages": [{"role": "user", "content": "hi"}]}, 404, "is not served here"),
    ],
)
def test_malformed_requests_get_a_status_and_a_message(server, body, status, match):
    if isinstance(body, dict) and body.get("model") == "M":
        body = {**body, "model": server.model_name}
    code, answer = post(server, body)
    assert code == status and match in answer["error"]["message"]
    assert answer["error"]["type"] == "invalid_request_error"


def test_unknown_routes_and_wrong_model_through_the_http_backend(server):
    assert post(server, {"model": server.model_name}, path="/v1/completions")[0] == 404
    with pytest.raises(urllib.error.HTTPError, match="404"):
        get(server, "/v2/models")
    with pytest.raises(BackendRequestError, match="HTTP 404: model 'gpt-4o' is not served here"):
        client(server, "gpt-4o").generate([{"role": "user", "content": "hi"}])


def test_batches_group_by_decoding_settings_and_input_kind():
    image = np.zeros((28, 28, 3), np.uint8)
    with_image = [
        {"role": "user", "content": [{"type": "image", "image": image}, {"type": "text", "text": "a"}]}
    ]
    text = [{"role": "user", "content": "a"}]
    greedy, greedy_seed = GenerationConfig(max_new_tokens=8), GenerationConfig(max_new_tokens=8, seed=0)
    sampled = GenerationConfig(max_new_tokens=8, temperature=0.7)
    batch = [
        _Pending(ChatRequest(m, c))
        for m, c in [
            (with_image, greedy),
            (text, greedy),
            (with_image, greedy_seed),
            (with_image, GenerationConfig(4)),
            (with_image, sampled),
            (with_image, sampled),
            (text, greedy),
        ]
    ]
    assert _groups(batch) == [[0, 2], [1, 6], [3], [4], [5]]
    lengths = [
        _Pending(ChatRequest(text, greedy), prompt_tokens=n) for n in (10, 255, 256, 300, 1000, 1100, 5000)
    ]
    assert _groups(lengths) == [[0, 1, 2], [3], [4, 5], [6]]  # short ones together, long ones within 4x


def _groups(batch):
    """Indices of ``batch`` grouped by the key that lets requests share a forward pass."""
    groups = {}
    for i, pending in enumerate(batch):
        groups.setdefault(_batch_key(pending), []).append(i)
    return list(groups.values())


def test_a_failing_conversation_does_not_fail_its_batch_and_a_full_queue_refuses():
    def answer(messages):
        if messages[0]["content"] == "boom":
            raise RuntimeError("simulated model failure")
        return messages[0]["content"].upper()

    batcher = DynamicBatcher(ScriptedBackend(answer), max_batch=4, max_wait_ms=200)
    requests = [ChatRequest([{"role": "user", "content": t}], GenerationConfig()) for t in ("a", "boom", "c")]
    futures = [batcher.submit(r) for r in requests]  # queued before the thread starts: one gathered batch
    batcher.start()
    assert futures[0].result(10).text == "A" and futures[2].result(10).text == "C"
    with pytest.raises(RequestError, match="simulated model failure") as err:
        futures[1].result(10)
    assert err.value.status == 500
    batcher.stop()
    assert batcher.stats()["failed"] == 1 and batcher.stats()["requests"] == 3
    full = DynamicBatcher(ScriptedBackend(answer), max_queue=1)
    full.submit(requests[0])
    with pytest.raises(RequestError, match="requests waiting") as err:
        full.submit(requests[2])
    assert err.value.status == 503


def test_cli_config_maps_to_server_options():
    config = parse_config(
        ServeConfig,
        [
            "--model",
            "/ckpt/q",
            "--max-batch",
            "16",
            "--max-wait-ms",
            "5",
            "--served-model-name",
            "qwen",
            "--dtype",
            "bfloat16",
            "--max-new-tokens",
            "64",
        ],
    )
    options = server_options(config)
    assert (config.host, config.port, config.device) == ("127.0.0.1", 8000, "auto")  # loopback by default
    assert (options["model_name"], options["max_batch"], options["max_wait_ms"], options["dtype"]) == (
        "qwen",
        16,
        5.0,
        "bfloat16",
    )
    assert options["defaults"].max_new_tokens == 64 and options["defaults"].temperature == 0.0


def test_navigation_benchmark_workers_use_the_server_and_match_the_local_model(tmp_path, server, model_path):
    """The benchmark's worker points ``--api-base`` at the server; the records equal a local-model run.
    (Requests from several worker processes at once: ``tests/policies/serve/test_ray.py``.)"""
    from benchmarks.embodied import main

    common = [
        "nav",
        "--no-progress",
        "--image-size",
        "64",
        "--episodes",
        "2",
        "--subset",
        "base",
        "--policy",
        "mllm",
        "--model",
        model_path,
        "--max-new-tokens",
        "6",
        "--no-cache",
        "--env-kwargs",
        '{"max_steps": 3}',
    ]
    main([*common, "--output", str(tmp_path / "served"), "--api-base", server.url])
    main([*common, "--output", str(tmp_path / "local")])
    label = "mllm-" + model_path.rstrip("/").split("/")[-1]
    served, local = (
        RunDir(tmp_path / where / "embodied-nav" / label).merged_records() for where in ("served", "local")
    )
    keep = ("model_calls", "parse_errors", "prompt_tokens", "completion_tokens", "fallbacks")

    def strip(r: dict) -> dict:
        return {
            "key": r["key"],
            "status": r["status"],
            "steps": r["result"]["steps"],
            **{k: r["result"]["policy_stats"][k] for k in keep},
        }

    assert [strip(r) for r in served] == [strip(r) for r in local]
    assert all(r["result"]["policy_stats"]["model_calls"] == 3 for r in served)


def test_a_busy_port_is_a_clear_error(server):
    with pytest.raises(OSError, match="pass another --port"):
        ModelServer(ScriptedBackend(["unused"]), port=server.address[1])


def test_prompt_tokens_are_counted_before_the_model_as_the_model_counts_them(local):
    text_only = [{"role": "user", "content": "Which way is the door?"}]
    for conversation in [text_only, *conversations(3)]:  # images of three sizes
        assert local.count_prompt_tokens(conversation) == local.generate(conversation).prompt_tokens
    assert local.context_length == 32768 and local.longest_token_chars >= 1


def test_a_long_generation_stops_at_its_deadline_and_a_short_request_is_still_answered(local):
    with ModelServer(
        local, model_name="m", port=0, max_wait_ms=0, request_deadline_s=0.6, max_prompt_tokens=60
    ) as s:
        results = {}
        long = threading.Thread(
            target=lambda: results.__setitem__(
                "long",
                post(
                    s,
                    {  # greedy: 3000+ tokens, no end
                        "model": "m",
                        "max_tokens": 30000,
                        "messages": [{"role": "user", "content": "robot"}],
                    },
                ),
            )
        )
        long.start()
        time.sleep(0.2)
        began = time.monotonic()
        results["short"] = post(
            s, {"model": "m", "max_tokens": 2, "messages": [{"role": "user", "content": "hi"}]}
        )
        short_s = time.monotonic() - began
        long.join(30)
        over = post(
            s, {"model": "m", "messages": [{"role": "user", "content": "move to the red block " * 20}]}
        )
        stats = s.stats()
    status, body = results["long"]
    assert status == 504 and "reached its deadline after" in body["error"]["message"]
    assert "--request-deadline-s" in body["error"]["message"]
    assert results["short"][0] == 200 and short_s < 3  # behind the long one for at most its deadline
    assert (
        over[0] == 400 and "this server accepts prompts of at most 60 tokens" in over[1]["error"]["message"]
    )
    assert stats["expired"] == 1 and stats["requests"] == 2  # the over-long prompt never reached the model


def test_a_prompt_limit_beyond_the_context_is_bad_input(model_path, capsys):
    from policies.config_cli import run_cli
    from policies.serve.__main__ import main

    assert (
        run_cli(
            main, ["--model", model_path, "--device", "cpu", "--port", "0", "--max-prompt-tokens", "40000"]
        )
        == 2
    )
    assert (
        capsys.readouterr()
        .err.strip()
        .endswith(
            "--max-prompt-tokens 40000 is more than the model's context of 32768 tokens; pass at most 32768"
        )
    )
