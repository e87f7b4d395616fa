"""Batched model serving: an OpenAI-compatible chat-completions server for simulator workers.

``python -m policies.serve --model PATH_OR_ID`` loads a transformers checkpoint and answers
``POST /v1/chat/completions`` at ``http://127.0.0.1:8000/v1``; concurrent requests from many workers are
answered in dynamic batches (:class:`DynamicBatcher`). Workers use it like any OpenAI-compatible server:
``--policy mllm --model PATH_OR_ID --api-base http://127.0.0.1:8000/v1``. :func:`start_ray_server` runs the
same server as a Ray actor with GPUs.
"""

from policies.serve.batcher import DynamicBatcher
from policies.serve.protocol import RequestError
from policies.serve.ray_server import RayModelServer, start_ray_server
from policies.serve.server import ModelServer

__all__ = ["DynamicBatcher", "ModelServer", "RayModelServer", "RequestError", "start_ray_server"]
