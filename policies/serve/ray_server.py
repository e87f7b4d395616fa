"""The model server as a Ray actor that declares GPUs, so many simulator actors share one batched model.

    from policies.serve import start_ray_server
    server = start_ray_server("/ckpt/Qwen2.5-VL-7B-Instruct", num_gpus=1, host="node")
    # simulator workers: --policy mllm --model /ckpt/Qwen2.5-VL-7B-Instruct --api-base <server.url>
    server.stop()

The actor holds the model and a :class:`~policies.serve.server.ModelServer`; simulator actors reach it over
HTTP at :attr:`RayModelServer.url`. ``host="127.0.0.1"`` (default) suits a single machine; on a multi-node
cluster pass ``host="node"`` so the server binds the IP address of the node Ray placed it on.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from policies.serve.ray_cluster import connect
from policies.serve.server import LOOPBACK, ModelServer


class _ServerActor:
    """Body of the Ray actor: loads the model and serves it on background threads."""

    def __init__(self, model: str, host: str, port: int, options: dict[str, Any]) -> None:
        if host == "node":
            import ray

            host = ray.util.get_node_ip_address()
        self.server = ModelServer.from_model(model, host=host, port=port, **options).start()

    def url(self) -> str:
        return self.server.url

    def stats(self) -> dict[str, Any]:
        return self.server.stats()

    def stop(self) -> None:
        self.server.stop()


@dataclass
class RayModelServer:
    """A running server actor: pass :attr:`url` as ``--api-base``; keep this object alive while it serves."""

    url: str
    actor: Any

    def stats(self) -> dict[str, Any]:
        """The server's batching counters (see :meth:`DynamicBatcher.stats`)."""
        import ray

        return ray.get(self.actor.stats.remote())

    def stop(self) -> None:
        """Stop serving and end the actor (its GPUs go back to the cluster)."""
        import ray

        try:
            ray.get(self.actor.stop.remote(), timeout=30)
        finally:
            ray.kill(self.actor, no_restart=True)


def start_ray_server(
    model: str,
    *,
    num_gpus: float = 1.0,
    num_cpus: float = 1.0,
    host: str = LOOPBACK,
    port: int = 0,
    address: str | None = None,
    name: str | None = None,
    startup_timeout_s: float = 900.0,
    **options: Any,
) -> RayModelServer:
    """Start a :class:`ModelServer` for ``model`` in a Ray actor with ``num_gpus`` GPUs and return it once
    it answers.

    Args:
        model: checkpoint directory or hub id, as readable on the node the actor lands on.
        num_gpus, num_cpus: resources the actor declares (``num_gpus=0`` serves on CPU).
        host: ``"127.0.0.1"`` (single machine), ``"node"`` (the node's IP, for multi-node clusters) or an address.
        port: 0 picks a free port (the URL tells which).
        address: Ray to join when this process is not connected yet (``None``/``"local"``: a private local
            instance; ``"auto"`` or ``"host:port"``: a cluster).
        name: optional Ray actor name (to find it with ``ray.get_actor``).
        options: :meth:`ModelServer.from_model` options (``device``, ``dtype``, ``max_batch``, ``max_wait_ms``,
            ``model_name``, ``backend_options``, ...).
    """
    connect(address)  # explains how to install Ray when it is missing
    import ray

    available = ray.cluster_resources().get("GPU", 0)
    if num_gpus > available:
        raise ValueError(
            f"start_ray_server(num_gpus={num_gpus:g}): the Ray cluster has {available:g} GPU(s); "
            "pass num_gpus=0 to serve on CPU, or join a cluster with GPUs (address='auto')"
        )
    actor_cls = ray.remote(num_gpus=num_gpus, num_cpus=num_cpus, max_restarts=0)(_ServerActor)
    actor = actor_cls.options(**({"name": name} if name else {})).remote(model, host, port, options)
    try:
        url = ray.get(actor.url.remote(), timeout=startup_timeout_s)
    except ray.exceptions.GetTimeoutError as err:
        ray.kill(actor, no_restart=True)
        raise TimeoutError(f"the model server actor did not start within {startup_timeout_s:g} s") from err
    except ray.exceptions.RayActorError as err:
        raise RuntimeError(f"the model server actor failed to start: {err}") from err
    return RayModelServer(url, actor)
