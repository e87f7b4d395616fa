"""One constructor for both CALVIN backends, so benchmarks choose with a flag."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def make_env(backend: str = "builtin", *, cameras: Sequence[str] = ("static", "gripper"), renderer: str = "tiny",
             calvin_assets: str | None = None, calvin_dataset: str | None = None,
             calvin_env: str | None = None) -> Any:
    """The built-in PyBullet play-table, or the official ``calvin_env`` (``backend="official"``).

    ``calvin_assets`` loads a user's original table and robot meshes into the built-in env (a calvin_env
    checkout or its ``data/`` folder). The official env renders only ``cameras``; it is configured from
    ``calvin_dataset`` (a CALVIN split folder with ``.hydra/``) when given, else from calvin_env's own
    configuration for scene D; ``calvin_env`` is the checkout to import it from (default: the installed one).
    """
    if backend == "builtin":
        from envs.calvin.env import PlayTableEnv

        return PlayTableEnv(cameras=tuple(cameras), renderer=renderer, calvin_assets=calvin_assets)
    if backend == "official":
        from envs.calvin.official import OfficialPlayTableEnv

        return OfficialPlayTableEnv(dataset_path=calvin_dataset, calvin_env_path=calvin_env, cameras=tuple(cameras))
    raise ValueError(f"unknown CALVIN backend {backend!r}: use 'builtin' or 'official'")
