"""CALVIN-compatible play-table (PyBullet), CALVIN's 34-task oracle and evaluation chains.

The scripted expert lives in :mod:`policies.experts.calvin` and the long-horizon chain loop in
:mod:`benchmarks.calvin.chain` (envs import neither policies nor benchmarks).

Importing this package is cheap: names are loaded from their modules on first use, so
``import envs`` (which imports ``envs.calvin.registration``) pulls in no simulator.

- :class:`PlayTableEnv` (``envs.calvin.env``): the Gymnasium env, ids ``SpatialArena/CalvinPlayTable-*``.
- :func:`completed_tasks`, ``TASKS`` (``envs.calvin.tasks``): the oracle over two scene snapshots.
- :class:`OfficialPlayTableEnv` (``envs.calvin.official``): the same interface over ``calvin_env``.
- ``obs_layout="calvin"`` on either env (``envs.calvin.obs_layout``): calvin_env's nested observation dicts.
- :func:`get_sequences`, :func:`initial_env_state` (``envs.calvin.sequences``): the evaluation chains.
- :func:`instruction_for` (``envs.calvin.instructions``): the fixed evaluation instruction of a task.
- :func:`make_env` (``envs.calvin.factory``): ``gym.make`` of the built-in or the official env's id with one set of options.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

_LAZY = {
    "PlayTableEnv": "envs.calvin.env",
    "completed_tasks": "envs.calvin.tasks",
    "TASKS": "envs.calvin.tasks",
    "OfficialPlayTableEnv": "envs.calvin.official",
    "get_sequences": "envs.calvin.sequences",
    "initial_env_state": "envs.calvin.sequences",
    "instruction_for": "envs.calvin.instructions",
    "make_env": "envs.calvin.factory",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'envs.calvin' has no attribute {name!r}")
    return getattr(import_module(module), name)
