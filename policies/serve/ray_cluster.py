"""Joining Ray, shared by the benchmark executor (``--ray``) and the model server's Ray actor.

It lives below both users (``benchmarks.core.ray_executor`` and ``policies.serve.ray_server``) so the
server never imports the benchmark layer.
"""

from __future__ import annotations

import os
from pathlib import Path
from types import ModuleType

_PROJECT_ROOT = str(Path(__file__).resolve().parents[2])


def connect(address: str | None) -> bool:
    """Join Ray unless this process already has: ``None``/``"local"`` starts a private local instance (with
    this checkout importable in its actors), ``"auto"`` or an address joins a cluster. Returns whether this
    call connected, i.e. whether the caller should ``ray.shutdown()`` when done."""
    ray = import_ray()
    if ray.is_initialized():
        return False
    address = None if address in (None, "", "local") else address
    runtime_env = None
    if address is None:  # local instance: make this checkout importable in the actors
        path = os.pathsep.join(p for p in (_PROJECT_ROOT, os.environ.get("PYTHONPATH", "")) if p)
        runtime_env = {"env_vars": {"PYTHONPATH": path}}
    ray.init(
        address=address,
        include_dashboard=False,
        log_to_driver=False,
        logging_level="ERROR",
        runtime_env=runtime_env,
        **({"num_cpus": os.cpu_count()} if address is None else {}),
    )
    return True


def import_ray() -> ModuleType:
    """The ``ray`` module, or an ``ImportError`` saying how to install it."""
    try:
        import ray
    except ImportError as exc:
        raise ImportError("--ray needs Ray: pip install -c constraints.txt 'spatial-arena[ray]'") from exc
    return ray
