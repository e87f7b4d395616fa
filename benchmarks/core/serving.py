"""Batched policy serving on every closed-loop benchmark (``--serve batched``): the flags, what can be served,
the run's server around the run, and the policy each worker builds around it.

By default each worker process holds its own model and decides for one env at a time. With ``--serve
batched`` one process holds the model and answers every worker's observations in dynamic batches (the
oldest waiting one plus whatever arrives within ``--max-wait-ms``, up to ``--max-batch``):

- ``--policy vla``: :class:`vla.serving.BatchedVLAServer` (a Unix socket, raw arrays);
- ``--policy mllm`` with a local transformers model: :class:`policies.serve.process.BackendServerProcess`,
  the project's OpenAI-compatible server on loopback (an ephemeral port, an API key made for the run),
  which batches only requests whose answers equal those they get alone.

Each worker builds the same policy with the server in place of its model (:class:`ServedPolicy`), so for a
deterministic model the records equal the sequential run's. The server starts before any worker: a model
that does not load, or a ``--max-batch`` that does not fit in memory, is a one-line input error. A server
that dies mid-run makes the units it did not answer error records (the run is marked incomplete) and ends
the command with one line and exit status 1 (:func:`benchmarks.core.policy_server.policy_serving`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, Protocol

from policies.config_cli import InputError, arg

if TYPE_CHECKING:
    from policies.base import Policy
    from policies.mllm.config import MLLMPolicyConfig
    from policies.serve.process import ServedModel
    from vla.policy import VLAPolicyConfig
    from vla.serving import ServerAddress

#: Config fields of serving: how the model is reached, never what it answers (``--resume`` may change them).
SERVE_KEYS = frozenset({"serve", "max_batch", "max_wait_ms"})


@dataclass
class ServingConfig:
    """Policy serving (one process holds the model and answers every worker in dynamic batches)"""

    serve: Literal["off", "batched"] = arg(
        "off",
        "batched: one process holds the model (--policy vla, or --policy mllm with a local model) and "
        "answers every worker's observations in dynamic batches; off: each worker holds its own model",
    )
    max_batch: int | None = arg(
        None,
        "--serve batched: most observations in one forward pass (default and most: --workers)",
        minimum=1,
    )
    max_wait_ms: float = arg(
        5.0,
        "--serve batched: longest wait (ms) to fill a batch once its first observation arrived",
        minimum=0,
    )

    def check_serving(self, workers: int, ray: str | None) -> None:
        """--serve batched: a batch holds at most one observation per worker, workers are local processes."""
        if self.serve == "off":
            return
        if ray:
            raise ValueError(
                "--serve batched: workers reach the server over this machine's loopback; drop --ray"
            )
        self.max_batch = workers if self.max_batch is None else self.max_batch
        if self.max_batch > workers:
            raise ValueError(
                f"--max-batch {self.max_batch}: larger than --workers {workers}; each worker has one "
                f"observation in flight, so use --max-batch {workers} or more --workers"
            )


# ------------------------------------------------------------------------------------------ workers


class ServedPolicy(Protocol):
    """What each worker gets instead of loading the model (picklable): the policy around the run's server."""

    def build(self) -> Policy: ...


@dataclass(frozen=True)
class ServedVLA:
    """``--policy vla``: the same :class:`vla.policy.VLAPolicy`, its model answered by the VLA server."""

    config: VLAPolicyConfig
    address: ServerAddress

    def build(self) -> Policy:
        from vla.policy import build_vla_policy
        from vla.serving import RemoteVLAModel

        model = RemoteVLAModel(self.address)
        return build_vla_policy(self.config, model=model)  # type: ignore[arg-type]  # duck-typed model


@dataclass(frozen=True)
class ServedMLLM:
    """``--policy mllm``: the same policy, its backend an HTTP client of the run's model server (behind the
    response cache as the served model, :func:`policies.serve.process.served_backend`)."""

    config: MLLMPolicyConfig
    model: ServedModel

    def build(self) -> Policy:
        from policies.backends.base import GenerationConfig
        from policies.mllm.config import build_mllm_policy
        from policies.serve.process import served_backend

        c = self.config
        generation = GenerationConfig(**c.generation())
        cache = c.backend_options()["cache"]
        backend = served_backend(self.model, generation, cache=cache, max_retries=c.max_retries)
        return build_mllm_policy(c, backend=backend)


# ------------------------------------------------------------------------------------------ what serves


def servable(name: str, policy: object) -> VLAPolicyConfig | MLLMPolicyConfig:
    """``policy`` (the config of ``--policy name``) when a run can serve its model: a VLA, or an MLLM on a
    local transformers model; an :class:`InputError` naming the fix otherwise. Checked with the other inputs,
    before any server or worker starts (:func:`benchmarks.core.policy_cli.preflight`)."""
    from policies.mllm.config import MLLMPolicyConfig
    from vla.policy import VLAPolicyConfig

    if isinstance(policy, VLAPolicyConfig):
        return policy
    if isinstance(policy, MLLMPolicyConfig):
        return _local_model(policy)
    if policy is not None and hasattr(policy, "model"):
        raise InputError(
            f"--serve batched serves the models of --policy mllm and --policy vla; for --policy {name} "
            "serve its model with python -m policies.serve and pass --api-base URL (or drop --serve batched)"
        )
    raise InputError(
        f"--serve batched serves a policy's model, and --policy {name} has none (it decides in its "
        "worker): drop --serve batched, or use --policy mllm or --policy vla"
    )


def _local_model(config: MLLMPolicyConfig) -> MLLMPolicyConfig:
    """``config`` when its model is a local transformers checkpoint (the one kind a run can serve)."""
    from policies.backends.factory import default_backend

    kind = config.model_backend or default_backend(config.model, config.api_base)
    if kind == "transformers":
        return config
    if config.api_base:
        raise InputError(
            f"--serve batched: --api-base {config.api_base} is a server already (it batches for itself); drop "
            "--serve batched, or drop --api-base to serve a local model"
        )
    raise InputError(
        f"--serve batched serves a local transformers model; --model {config.model} runs on the {kind} "
        "backend, which has none to serve: drop --serve batched (or choose a local checkpoint)"
    )
