"""The model server as a Ray actor on a private local Ray instance (loopback only), answering requests
from several simulator-side Ray actors at once in shared batches."""

import numpy as np
import pytest

from policies.backends import GenerationConfig

ray = pytest.importorskip("ray")


class _Client:
    """A simulator-side actor: its own HTTP backend, as a benchmark worker would build it."""

    def connect(self, url, model):
        from policies.backends import make_backend

        self.backend = make_backend(model, api_base=url, cache=False, max_new_tokens=8, max_retries=0)

    def ask(self, conversations):
        return [(g.text, g.completion_tokens) for g in self.backend.generate_batch(conversations)]


def conversations(seed):
    rng = np.random.default_rng(seed)
    return [
        [
            {
                "role": "user",
                "content": [
                    {"type": "image", "image": rng.integers(0, 256, (28, 42, 3), dtype=np.uint8)},
                    {"type": "text", "text": f"where is object {seed}-{i}?"},
                ],
            }
        ]
        for i in range(2)
    ]


def test_ray_server_actor_batches_requests_from_many_actors(tiny_vlm):
    from policies.backends.transformers_backend import TransformersBackend
    from policies.serve import start_ray_server
    from policies.serve.ray_cluster import connect

    model = str(tiny_vlm("qwen2_5_vl"))
    assert connect("local")
    try:
        with pytest.raises(ValueError, match="the Ray cluster has 0 GPU"):
            start_ray_server(model, num_gpus=1)
        clients = [ray.remote(num_cpus=0)(_Client).remote() for _ in range(2)]  # start while the model loads
        server = start_ray_server(model, num_gpus=0, num_cpus=0, max_batch=4, max_wait_ms=1000, device="cpu")
        assert server.url.startswith("http://127.0.0.1:")
        # ready before the requests go out together
        ray.get([c.connect.remote(server.url, model) for c in clients])
        answers = ray.get([c.ask.remote(conversations(seed)) for seed, c in enumerate(clients)], timeout=120)
        stats = server.stats()
        server.stop()
    finally:
        ray.shutdown()
    local = TransformersBackend(model, config=GenerationConfig(max_new_tokens=8))
    expected = [
        [(g.text, g.completion_tokens) for g in map(local.generate, conversations(seed))] for seed in range(2)
    ]
    assert answers == expected
    # requests of different actors shared a batch
    assert stats["requests"] == 4 and stats["max_batch_size"] > 1
