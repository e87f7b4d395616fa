"""LIBERO's five suites (130 tasks) as Gymnasium environments and the protocol's constants.

The per-episode loop lives with its benchmark, :func:`benchmarks.libero.episode.run_episode`.

Importing this package is cheap: LIBERO, robosuite and torch load when an env is first made::

    from envs.libero import make_libero_env
    env = make_libero_env("libero_10", 0)
    obs, info = env.reset(seed=7, options={"init_state_index": 0})
"""

from typing import Any

from envs.libero.protocol import MAX_STEPS, NUM_STEPS_WAIT, SUITES, TASK_COUNTS, TRIALS_PER_TASK, env_id

_LAZY = {
    "LiberoEnv": "envs.libero.env",
    "make_libero_env": "envs.libero.env",
}


def __getattr__(name: str) -> Any:
    # Heavy modules (LIBERO, robosuite, torch) load on first use only.
    if name in _LAZY:
        from importlib import import_module

        return getattr(import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'envs.libero' has no attribute {name!r}")


__all__ = [
    "MAX_STEPS",
    "NUM_STEPS_WAIT",
    "SUITES",
    "TASK_COUNTS",
    "TRIALS_PER_TASK",
    "LiberoEnv",
    "env_id",
    "make_libero_env",
]
