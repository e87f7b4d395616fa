"""Policies for the closed-loop runner tests, loaded by import path (``--policy tests.closed_loop_policies:X``)
so that spawned worker processes can build them too."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from action_mapping import Plan
from policies.backends.base import Generation, Message
from policies.backends.scripted import ScriptedBackend
from policies.base import EpisodeContext, Policy
from policies.mllm.embodied import EBAgentPolicy

NAV_PLAN = json.dumps(
    {
        "visual_state_description": "a room",
        "reasoning_and_reflection": "turn, then walk",
        "language_plan": "rotate right and move ahead",
        "executable_plan": [
            {"action_id": 4, "action_name": "RotateRight"},
            {"action_id": 0, "action_name": "MoveAhead"},
        ],
    }
)
PROSE = "I would walk towards it."  # no executable_plan: a planner output error


class FailingModel:
    """A model with CALVIN's interface that crashes on its first step (every unit ends in an error)."""

    def reset(self) -> None:
        pass

    def step(self, obs: Any, instruction: str) -> Any:
        raise RuntimeError("the model crashed")


class ScriptedEBNavigator(EBAgentPolicy):
    """The real EB agent loop (prompt, parser, fallback) with a scripted model that alternates a valid
    two-action plan and unparsable prose, with token counts and a latency, as a server would report."""

    name = "scripted-eb-nav"

    def __init__(self) -> None:
        self.answers = 0
        super().__init__(ScriptedBackend(self._answer), task="navigation")

    def _answer(self, messages: Sequence[Message]) -> Generation:
        self.answers += 1
        text = NAV_PLAN if self.answers % 2 else PROSE
        return Generation(
            text, prompt_tokens=100 + self.answers, completion_tokens=len(text) // 4, latency_s=0.25
        )

    def reset(self, context: EpisodeContext) -> None:
        super().reset(context)
        self.answers = 0  # each episode's answers depend on that episode alone (any worker, any order)


class IdlePolicy(Policy):
    """Asks for no motion at every step (an empty plan), as an MLLM's no-op fallback does."""

    name = "idle"

    def reset(self, context: EpisodeContext) -> None:
        pass

    def act(self, observation: Mapping[str, Any]) -> Plan:
        return Plan(steps=[])
