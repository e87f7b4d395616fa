"""The one policy protocol every benchmark drives.

A policy owns its episode lifecycle: the runner calls ``reset(context)`` at the start of every episode
(for CALVIN: every subtask, with that subtask's instruction) and ``act(observation)`` once per decision.
An action is either native (an array in the env's action space) or a plan (an
:class:`action_mapping.ExecutablePlan`, or a :class:`action_mapping.Plan` that knows its units or does not
move), which the env family's adapter turns into native actions, so one MLLM policy serves every env.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from action_mapping import ExecutablePlan, Plan

if TYPE_CHECKING:
    import gymnasium as gym

Action = np.ndarray | ExecutablePlan | Plan


@dataclass
class EpisodeContext:
    """What a policy may know when an episode (or subtask) starts.

    ``instruction`` is the language goal; ``seed`` the episode's seed, for policies that sample;
    ``info`` the env's reset info; ``extras`` benchmark-specific fields (e.g. ``subtask_index``,
    ``goal_image``). Nothing privileged goes here: privileged policies read the env they are bound to.
    """

    instruction: str
    seed: int
    info: Mapping[str, Any] = field(default_factory=dict)
    extras: Mapping[str, Any] = field(default_factory=dict)


class Policy(ABC):
    """Base class of every policy. Subclasses set ``name`` and implement ``reset`` and ``act``."""

    name: ClassVar[str]
    #: True when the policy reads simulator state beyond the observation; recorded with every result.
    privileged: ClassVar[bool] = False
    #: Set by a policy that gives up for the rest of the episode (e.g. an MLLM with ``fallback="stop"``);
    #: episode logic ends the episode (or CALVIN subtask) as unsuccessful.
    stopped: bool = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if not getattr(cls, "__abstractmethods__", None) and not isinstance(getattr(cls, "name", None), str):
            raise TypeError(f"policy class {cls.__qualname__} must define a class attribute `name: str`")

    def bind(self, env: gym.Env) -> None:  # noqa: B027 - optional hook, most policies ignore the env
        """Called once with the (wrapped) env the policy will act in. Privileged policies keep it."""

    @abstractmethod
    def reset(self, context: EpisodeContext) -> None:
        """Start an episode (or a CALVIN subtask)."""

    @abstractmethod
    def act(self, observation: Mapping[str, Any]) -> Action:
        """Return the next action for ``observation``."""

    def episode_stats(self) -> dict[str, float]:
        """Counters for the finished episode, copied into its record (model calls, parse errors, ...)."""
        return {}

    def pending_actions(self) -> list[Any]:
        """The actions of the last chunk not executed yet, oldest first: what a latency-aware loop
        (``--latency ... continue``) keeps running while the next chunk is computed. A policy that plans one
        action at a time has none."""
        return []

    def episode_calls(self) -> list[dict[str, Any]]:
        """The model calls of the current episode, one JSON-safe mapping each (raw text, parse errors, ...),
        written to ``decisions.jsonl``. A policy without a model has none."""
        return []

    def describe(self) -> dict[str, Any]:
        """Identity recorded in the run manifest (class, checkpoint, model id, ...)."""
        return {
            "name": self.name,
            "class": f"{type(self).__module__}.{type(self).__qualname__}",
            "privileged": self.privileged,
        }
