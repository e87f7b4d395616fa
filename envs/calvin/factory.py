"""One construction path for both CALVIN backends: ``gym.make`` of a registered id, chosen by a flag."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

#: The registered id of each backend (``envs.calvin.registration``).
BACKEND_IDS = {"builtin": "SpatialArena/CalvinPlayTable-v0", "official": "SpatialArena/CalvinPlayTable-Official-v0"}


def calvin_env_spec(backend: str = "builtin", *, cameras: Sequence[str] = ("static", "gripper"), renderer: str = "tiny",
                    calvin_assets: str | None = None, calvin_dataset: str | None = None,
                    calvin_env: str | None = None) -> tuple[str, dict[str, Any]]:
    """``(env_id, kwargs)`` for ``gym.make``: the built-in PyBullet play-table or the official ``calvin_env``.

    ``calvin_assets`` loads a user's original table and robot meshes into the built-in env (a calvin_env
    checkout or its ``data/`` folder). The official env renders only ``cameras``; it is configured from
    ``calvin_dataset`` (a CALVIN split folder with ``.hydra/``) when given, else from calvin_env's own
    configuration for scene D; ``calvin_env`` is the checkout to import it from (default: the installed one).
    """
    if backend == "builtin":
        return BACKEND_IDS[backend], {"cameras": list(cameras), "renderer": renderer, "calvin_assets": calvin_assets}
    if backend == "official":
        return BACKEND_IDS[backend], {"dataset_path": calvin_dataset, "calvin_env_path": calvin_env,
                                      "cameras": list(cameras)}
    raise ValueError(f"unknown CALVIN backend {backend!r}: use 'builtin' or 'official'")


def make_env(backend: str = "builtin", **options: Any) -> Any:
    """``gym.make`` of the backend's registered id with :func:`calvin_env_spec`'s keyword arguments."""
    import gymnasium as gym

    import envs  # noqa: F401  (registers the ids)

    env_id, kwargs = calvin_env_spec(backend, **options)
    return gym.make(env_id, **kwargs)
