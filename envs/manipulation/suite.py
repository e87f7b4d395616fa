"""All four EB-Manipulation task families behind one env, for runners that build one env per worker.

Each family has its own compiled robosuite scene; :class:`EBManipulationSuiteEnv` builds a family's env the
first time an episode of that family comes up and switches between them at ``reset``. Spaces are the
same for every family. Privileged policies read the current family's ``task`` and ``scene`` through it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, SupportsFloat

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from action_mapping.trajectory import StepMotion
from envs.manipulation.env import ACTION_NVEC, EBManipulationEnv, observation_space
from envs.manipulation.tasks import FAMILIES, SUBSETS


class EBManipulationSuiteEnv(gym.Env):
    """EB-Manipulation with every task family: the episode (``options["episode"]["family"]``) picks one.

    Arguments are :class:`EBManipulationEnv`'s, plus ``families`` (those that option-less resets draw
    from). ``options={"family": f, "subset": s, "index": i}`` picks a default episode; with no options a
    family and an episode are drawn from the seeded ``np_random``. Everything else is the family env's.
    """

    metadata = EBManipulationEnv.metadata

    def __init__(
        self,
        subset: str = "base",
        *,
        families: Sequence[str] = FAMILIES,
        image_size: int = 500,
        render_mode: str | None = None,
        **env_kwargs: Any,
    ) -> None:
        unknown = [f for f in families if f not in FAMILIES]
        if unknown or not families:
            raise ValueError(f"families {list(families)}: choose among {list(FAMILIES)}")
        if subset not in SUBSETS:
            raise ValueError(f"unknown subset {subset!r}; choose one of {list(SUBSETS)}")
        self.subset, self.families, self.render_mode = subset, tuple(families), render_mode
        self._kwargs = {"image_size": image_size, "render_mode": render_mode, **env_kwargs}
        self._envs: dict[str, EBManipulationEnv] = {}
        self._current: EBManipulationEnv | None = None
        self.action_space = spaces.MultiDiscrete(ACTION_NVEC)
        self.observation_space = observation_space(image_size)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[dict, dict]:
        super().reset(seed=seed)
        options = dict(options or {})
        family = options.pop("family", None) or options.get("episode", {}).get("family")
        if family is None:
            family = self.families[int(self.np_random.integers(len(self.families)))]
        self._current = self.family_env(family)
        if not options:
            options = {"subset": self.subset}
        return self._current.reset(seed=int(self.np_random.integers(2**31)), options=options)

    def step(self, action: object) -> tuple[dict, SupportsFloat, bool, bool, dict]:
        return self._env.step(action)

    def render(self) -> np.ndarray | None:
        return self._env.render()

    def close(self) -> None:
        for env in self._envs.values():
            env.close()
        self._envs.clear()

    def family_env(self, family: str) -> EBManipulationEnv:
        """The env of one task family (built on first use)."""
        if family not in FAMILIES:
            raise ValueError(f"unknown family {family!r}; choose one of {list(FAMILIES)}")
        if family not in self._envs:
            self._envs[family] = EBManipulationEnv(family, self.subset, **self._kwargs)
        return self._envs[family]

    def native_actions(self, motion: StepMotion) -> list[np.ndarray]:
        """The current family env's :meth:`EBManipulationEnv.native_actions`."""
        return self._env.native_actions(motion)

    def snapshot(self) -> dict[str, Any]:
        return self._env.snapshot()

    # The current family env's state, for privileged policies and episode logic.
    family = property(lambda self: self._env.family)
    task = property(lambda self: self._env.task)
    scene = property(lambda self: self._env.scene)
    cameras = property(lambda self: self._env.cameras)
    motion = property(lambda self: self._env.motion)
    max_steps = property(lambda self: self._env.max_steps)

    @property
    def _env(self) -> EBManipulationEnv:
        if self._current is None:
            raise RuntimeError("call reset() first: the episode decides which task family is active")
        return self._current
