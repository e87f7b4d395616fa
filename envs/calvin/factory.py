"""One construction path for both CALVIN backends: ``gym.make`` of a registered id, chosen by a flag."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import gymnasium as gym

#: The registered id of each backend (``envs.calvin.registration``).
BACKEND_IDS = {
    "builtin": "SpatialArena/CalvinPlayTable-v0",
    "official": "SpatialArena/CalvinPlayTable-Official-v0",
}


def calvin_env_spec(
    backend: str = "builtin",
    *,
    cameras: Sequence[str] = ("static", "gripper"),
    renderer: str = "tiny",
    calvin_assets: str | None = None,
    calvin_dataset: str | None = None,
    calvin_env: str | None = None,
    obs_layout: str = "flat",
    depth: bool = False,
    scene: str = "D",
) -> tuple[str, dict[str, Any]]:
    """``(env_id, kwargs)`` for ``gym.make``: the built-in PyBullet play-table or the official ``calvin_env``.

    Both render only ``cameras`` with ``renderer`` (``tiny`` or ``egl``), with ``depth`` images when asked,
    in ``obs_layout`` (``flat``, or ``calvin``: calvin_env's nested dicts, :mod:`envs.calvin.obs_layout`).
    ``calvin_assets`` loads a user's original table and robot meshes into the built-in env (a calvin_env
    checkout or its ``data/`` folder). The official env is configured from ``calvin_dataset`` (a CALVIN split
    folder with ``.hydra/``) when given, else from calvin_env's own configuration for ``scene``; ``calvin_env``
    is the checkout to import it from (default: the installed one). ``scene`` is CALVIN's scene letter (A-D)
    on either backend.
    """
    shared = {
        "cameras": list(cameras),
        "renderer": renderer,
        "obs_layout": obs_layout,
        "depth": depth,
        "scene": scene,
    }
    if backend == "builtin":
        return BACKEND_IDS[backend], {**shared, "calvin_assets": calvin_assets}
    if backend == "official":
        return BACKEND_IDS[backend], {**shared, "dataset_path": calvin_dataset, "calvin_env_path": calvin_env}
    raise ValueError(f"unknown CALVIN backend {backend!r}: use 'builtin' or 'official'")


def make_env(backend: str = "builtin", **options: Any) -> gym.Env:
    """``gym.make`` of the backend's registered id with :func:`calvin_env_spec`'s keyword arguments."""
    import gymnasium as gym

    import envs  # noqa: F401  (registers the ids)

    env_id, kwargs = calvin_env_spec(backend, **options)
    return gym.make(env_id, **kwargs)
