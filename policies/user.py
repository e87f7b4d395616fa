"""Users' own policies, loaded by import path (``--policy mypkg.module:MyPolicy``).

Two shapes are accepted: a :class:`policies.base.Policy` subclass, or any object with CALVIN's model
interface ``reset()`` and ``step(obs, instruction) -> action`` (wrapped by :class:`InstructionPolicy`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from policies.base import Action, EpisodeContext, Policy
from policies.entry_point import load_entry_point


class InstructionPolicy(Policy):
    """Adapts an object with ``reset()`` and ``step(obs, instruction)`` to the Policy protocol."""

    name = "user"

    def __init__(self, model: Any) -> None:
        self.model = model
        self._instruction = ""

    def reset(self, context: EpisodeContext) -> None:
        self._instruction = context.instruction
        self.model.reset()

    def act(self, observation: Mapping[str, Any]) -> Action:
        return self.model.step(observation, self._instruction)

    def describe(self) -> dict[str, Any]:
        cls = type(self.model)
        return {**super().describe(), "model_class": f"{cls.__module__}.{cls.__qualname__}"}


def load_user_policy(spec: str, kwargs: Mapping[str, Any] | None = None) -> Policy:
    """Build the object named by ``module.path:Name`` (a class or factory) and adapt it if needed."""
    target = load_entry_point(spec, what="--policy")
    obj = target(**dict(kwargs or {}))
    if isinstance(obj, Policy):
        return obj
    if callable(getattr(obj, "reset", None)) and callable(getattr(obj, "step", None)):
        return InstructionPolicy(obj)
    raise TypeError(
        f"--policy {spec!r} built a {type(obj).__name__}, which is neither a policies.base.Policy nor an object "
        f"with reset() and step(obs, instruction)"
    )
