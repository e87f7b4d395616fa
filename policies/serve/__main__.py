"""``python -m policies.serve --model PATH_OR_ID``: serve a transformers model to simulator workers.

    python -m policies.serve --model /ckpt/Qwen2.5-VL-7B-Instruct --device cuda --dtype bfloat16
    python -m benchmarks.calvin --workers 8 --policy mllm --model /ckpt/Qwen2.5-VL-7B-Instruct \\
        --api-base http://127.0.0.1:8000/v1

    python -m policies.serve --model /ckpt/Qwen2.5-VL-7B-Instruct --ray auto --num-gpus 1 --host node

    SERVE_KEY=... python -m policies.serve --model /ckpt/q --host 0.0.0.0 --api-key-env SERVE_KEY
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from policies.config_cli import InputError, arg, parse_config, run_cli


@dataclass
class ServeConfig:
    """Serve a transformers image-text-to-text model over an OpenAI-compatible API, with dynamic batching."""

    model: str = field(
        metadata={"help": "checkpoint directory or hub id (in the local cache unless --allow-download)"}
    )
    served_model_name: str | None = arg(None, "the name clients send as 'model' (default: --model as given)")
    host: str = arg(
        "127.0.0.1",
        "interface to bind (loopback by default; 0.0.0.0 for every interface; with --ray, 'node')",
    )
    port: int = arg(8000, "TCP port (0: any free port; the URL is printed)", minimum=0)
    max_batch: int = arg(8, "most requests answered in one forward pass", minimum=1)
    max_wait_ms: float = arg(
        20.0, "longest the oldest waiting request is held back to fill a batch", minimum=0
    )
    max_queue: int = arg(1024, "most requests waiting; more get HTTP 503 (clients retry)", minimum=1)
    device: str = arg("auto", "cpu, cuda, cuda:N, mps or auto (CUDA when available)")
    dtype: str = arg(
        "auto", "auto (float32 on CPU, the checkpoint's dtype elsewhere), float32, bfloat16, float16"
    )
    max_new_tokens: int = arg(512, "token budget of requests that do not send max_tokens", minimum=1)
    allow_download: bool = arg(False, "download a hub id that is not in the local Hugging Face cache")
    revision: str | None = arg(None, "hub revision (branch, tag or commit)")
    trust_remote_code: bool = arg(False, "run model code shipped with the checkpoint")
    max_pixels: int | None = arg(
        None, "largest image area for Qwen-VL processors (default: the checkpoint's)", minimum=1
    )
    attn_implementation: str | None = arg(None, "e.g. sdpa or eager (default: the transformers default)")
    threads: int = arg(
        0, "torch CPU threads of a local server (0: torch's default; a Ray actor gets --num-cpus)", minimum=0
    )
    request_deadline_s: float = arg(
        300.0,
        "longest a request may take from arrival to answer: still queued then, HTTP "
        "503; generating, stopped at the next token, HTTP 504",
        minimum=0.001,
    )
    max_prompt_tokens: int | None = arg(
        None,
        "most prompt tokens (text and images) of one request, sized before "
        "it reaches the model (then HTTP 400); default: the model's context, "
        "at most 32768",
        minimum=1,
    )
    api_key_env: str | None = arg(
        None,
        "environment variable holding an API key clients must send as "
        "'Authorization: Bearer <key>' (HTTP 401 without it)",
    )
    max_body_mb: float = arg(16.0, "largest request body (then HTTP 413)", minimum=0.001)
    max_images: int = arg(16, "most images in one request (then HTTP 400)", minimum=1)
    max_image_pixels: int = arg(
        2**20,
        "most pixels (width x height) of one image, read from its header before decoding (then HTTP 400)",
        minimum=1,
    )
    max_connections: int = arg(
        32,
        "most connections open at once; one more waits up to 5 s for a slot, then gets "
        "HTTP 503 (clients retry)",
        minimum=1,
    )
    read_timeout_s: float = arg(
        30.0, "longest a client may take to send one request; slower connections are closed", minimum=0.001
    )
    ray: str | None = arg(None, "serve from a Ray actor: 'local', 'auto' or a cluster address")
    num_gpus: float = arg(1.0, "with --ray: GPUs the server actor declares (0: CPU)", minimum=0)
    num_cpus: float = arg(1.0, "with --ray: CPUs the server actor declares", minimum=0)


def api_key(config: ServeConfig) -> str | None:
    """The API key from ``$<api_key_env>``; an unset or empty variable is an error, never an open server."""
    if not config.api_key_env:
        return None
    key = os.environ.get(config.api_key_env, "")
    if not key.strip():
        raise SystemExit(
            f"python -m policies.serve: --api-key-env {config.api_key_env}: the variable is not set or "
            f"empty; export {config.api_key_env}=<key> first"
        )
    return key.strip()


def server_options(config: ServeConfig) -> dict[str, Any]:
    """Keyword arguments of :meth:`ModelServer.from_model` for ``config`` (host and port aside)."""
    from policies.backends.base import GenerationConfig

    backend = {
        "allow_download": config.allow_download,
        "revision": config.revision,
        "trust_remote_code": config.trust_remote_code,
        "max_pixels": config.max_pixels,
        "attn_implementation": config.attn_implementation,
    }
    return {
        "device": config.device,
        "dtype": config.dtype,
        "backend_options": backend,
        "model_name": config.served_model_name or config.model,
        "max_batch": config.max_batch,
        "max_wait_ms": config.max_wait_ms,
        "max_queue": config.max_queue,
        "defaults": GenerationConfig(max_new_tokens=config.max_new_tokens),
        "request_deadline_s": config.request_deadline_s,
        "max_prompt_tokens": config.max_prompt_tokens,
        "max_body_mb": config.max_body_mb,
        "max_images": config.max_images,
        "max_image_pixels": config.max_image_pixels,
        "max_connections": config.max_connections,
        "read_timeout_s": config.read_timeout_s,
        "api_key": api_key(config),
    }


def _announce(url: str, config: ServeConfig, where: str, max_prompt_tokens: int | None) -> None:
    prompts = (
        f"prompts up to {max_prompt_tokens} tokens" if max_prompt_tokens else "the prompt limit of the model"
    )
    print(
        f"serving {config.served_model_name or config.model} at {url} {where}(max batch {config.max_batch}, "
        f"max wait {config.max_wait_ms:g} ms, {prompts}, deadline {config.request_deadline_s:g} s); stop with Ctrl-C",
        flush=True,
    )


def _serve_on_ray(config: ServeConfig) -> None:
    from policies.serve.ray_server import start_ray_server

    server = start_ray_server(
        config.model,
        num_gpus=config.num_gpus,
        num_cpus=config.num_cpus,
        host=config.host,
        port=config.port,
        address=config.ray,
        **server_options(config),
    )
    _announce(
        server.url, config, f"from a Ray actor with {config.num_gpus:g} GPU(s) ", config.max_prompt_tokens
    )
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()


def main(argv: Sequence[str] | None = None) -> None:
    config = parse_config(ServeConfig, argv, prog="python -m policies.serve")
    if not config.model:
        raise InputError("--model PATH_OR_ID is required: the checkpoint to serve")
    if config.host == "node" and not config.ray:
        raise InputError("--host node names a Ray node's address; use it with --ray, or give an address")
    if config.threads:
        import torch

        torch.set_num_threads(config.threads)
    if config.ray:
        _serve_on_ray(config)
        return
    from policies.serve.server import ModelServer

    server = ModelServer.from_model(
        config.model, host=config.host, port=config.port, **server_options(config)
    )
    _announce(server.url, config, "", server.prompt_limit.max_tokens)
    server.serve_forever()


if __name__ == "__main__":
    sys.exit(run_cli(main))
