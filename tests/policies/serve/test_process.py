"""``policies.serve.process``: the warm-up batch that proves ``--max-batch`` fits, the one-line start errors,
and the served backend's identity (the served model's, so the response cache is shared with local runs)."""

import pytest

from policies.backends.base import Backend, Generation, GenerationConfig
from policies.backends.cache import backend_identity
from policies.serve.process import ServedBackend, ServedModel, start_problem, warm_up


class Recording(Backend):
    model_id = "recording"

    def __init__(self, fail: Exception | None = None) -> None:
        self.config, self.fail, self.batches = GenerationConfig(max_new_tokens=512), fail, []

    def generate(self, messages):
        return self.generate_batch([messages])[0]

    def generate_batch(self, conversations):
        self.batches.append((len(conversations), self.config.max_new_tokens))
        if self.fail is not None:
            raise self.fail
        return [Generation("ok") for _ in conversations]


def test_the_warm_up_answers_one_full_batch_with_one_token_and_restores_the_budget():
    backend = Recording()
    warm_up(backend, 6)
    assert backend.batches == [(6, 1)] and backend.config.max_new_tokens == 512


def test_a_warm_up_out_of_memory_is_named_by_its_flag_in_one_line():
    backend = Recording(RuntimeError("CUDA out of memory. Tried to allocate 9.00 GiB\nmore"))
    with pytest.raises(RuntimeError) as err:
        warm_up(backend, 8)
    line = start_problem(err.value, 8)
    assert line.startswith("--max-batch 8: a batch of 8 does not fit in memory") and "\n" not in line
    assert backend.config.max_new_tokens == 512


def test_the_served_backend_carries_the_served_model_identity_and_the_run_key():
    served = ServedModel(
        "http://127.0.0.1:1/v1", "k3y", "/ckpt/m", {"backend": "transformers", "fingerprint": "f"}
    )
    backend = ServedBackend(served, GenerationConfig())
    assert backend_identity(backend) == {"model_id": "/ckpt/m", "backend": "transformers", "fingerprint": "f"}
    assert backend._headers()["Authorization"] == "Bearer k3y"
