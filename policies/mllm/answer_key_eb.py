"""The answer-key's truth sources for the EmbodiedBench agent loop: what a perfect model writes in EB's format.

With ``--model answer-key`` the backend is built with :func:`eb_truth` (where the CLI builds it), which makes one
of these from the env the :class:`~policies.mllm.embodied.EBAgentPolicy` is bound to. Each answer is one JSON object in the format the prompt's
"## Output format" section asks for: its ``executable_plan`` holds the privileged expert's actions from
the current state (navigation: the whole remaining shortest path of :class:`ShortestPathExpert`, as
``{"action_id", "action_name"}``; manipulation: the next skill of :class:`EBManipulationExpert`, as
``{"action": "[X, Y, Z, Roll, Pitch, Yaw, Gripper]"}``), cut to the actions the prompt says are left, and
every other field the format names is filled with a short description of the privileged state. Prompt,
parser, feedback, history, env and success are the code a real model goes through.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

from policies.backends.answer_key import EnvTruth
from policies.backends.base import Message
from policies.mllm import eb_prompts

if TYPE_CHECKING:
    import gymnasium as gym

    from envs.manipulation.env import EBManipulationEnv
    from envs.navigation.env import EBNavigationEnv

_FORMAT_SECTION = re.compile(r"## Output format\n(.*?)(?:\n## |\Z)", re.DOTALL)
_FIELD = re.compile(r'"([a-z_]+)": ')
_BUDGET = re.compile(r"You have at most (\d+) actions")
_HISTORY_LINE = re.compile(r"^Step \d+, ", re.MULTILINE)
#: EB's fields, in EB's order, when a prompt names none (the plan is always written).
EB_FIELDS = ("visual_state_description", "reasoning_and_reflection", "language_plan", "executable_plan")


def last_user_text(messages: Sequence[Message]) -> str:
    """The text of the newest user turn (the one being answered)."""
    for message in reversed(messages):
        if message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, str):
            return content
        return "\n".join(str(p.get("text", "")) for p in content or [] if p.get("type") == "text")
    return ""


def asked_fields(prompt: str) -> tuple[str, ...]:
    """The JSON keys the prompt's output format asks for (EB's four when the prompt shows no format)."""
    section = _FORMAT_SECTION.search(prompt)
    fields = tuple(dict.fromkeys(_FIELD.findall(section.group(1)))) if section else ()
    fields = tuple(f for f in fields if f in EB_FIELDS) or EB_FIELDS
    return fields if "executable_plan" in fields else (*fields, "executable_plan")


def actions_left(prompt: str) -> int | None:
    """The step budget the prompt states minus the actions its history shows (``None`` if it states none)."""
    budget = _BUDGET.search(prompt)
    if budget is None:
        return None
    history = prompt.split("## Now the human instruction", 1)[-1]
    return max(1, int(budget.group(1)) - len(_HISTORY_LINE.findall(history)))


def eb_answer(prompt: str, plan: list[dict[str, Any]], texts: dict[str, str]) -> str:
    """One JSON answer with the fields ``prompt`` asks for, ``plan`` cut to the actions left."""
    left = actions_left(prompt)
    plan = plan if left is None else plan[:left]
    answer: dict[str, Any] = {}
    for field in asked_fields(prompt):
        answer[field] = plan if field == "executable_plan" else texts.get(field, "")
    return json.dumps(answer)


class NavigationTruthSource:
    """Answers EB-Navigation prompts with the shortest path from the agent's current pose."""

    def __init__(self, env: gym.Env) -> None:
        from policies.experts.navigation import ShortestPathExpert

        self.env = env
        self.expert = ShortestPathExpert()
        self.expert.bind(env)

    def answer(self, messages: Sequence[Message]) -> str:
        ids = self.expert.remaining_plan()
        names = [eb_prompts.NAV_ACTION_NAMES[i] for i in ids]
        plan = [{"action_id": i, "action_name": n} for i, n in zip(ids, names)]
        return eb_answer(last_user_text(messages), plan, self._texts(names))

    def _texts(self, names: list[str]) -> dict[str, str]:
        nav = cast("EBNavigationEnv", self.env.unwrapped)
        pose, target = nav.agent_pose, nav.target
        dx, dy = (float(t) - float(p) for t, p in zip(target["position"][:2], pose.xy))
        bearing = (math.degrees(math.atan2(dy, dx)) - pose.heading_deg + 180.0) % 360.0 - 180.0
        side = (
            "ahead"
            if abs(bearing) < 5
            else f"{abs(bearing):.0f} degrees to the {'left' if bearing > 0 else 'right'}"
        )
        what = f"the {target['colour']} {target['category']}".replace("_", " ")
        return {
            "visual_state_description": f"{what.capitalize()} is {math.hypot(dx, dy):.1f} m away, {side}.",
            "reasoning_and_reflection": f"The shortest free path to {what} takes {len(names)} action(s).",
            "language_plan": ", ".join(names),
        }


class ManipulationTruthSource:
    """Answers EB-Manipulation prompts with the expert's next skill planned from the current state.

    The expert is re-planned at every answer (the loop asks again when a plan is used up or an action is
    invalid), and it starts afresh when the env holds a new episode.
    """

    def __init__(self, env: gym.Env, max_plans: int = 100) -> None:
        from policies.experts.manipulation import EBManipulationExpert

        self.env = env
        self.expert = EBManipulationExpert(max_replans=max_plans)
        self.expert.bind(env)
        self._episode: Any = None  # held, so that its identity cannot be reused by a later episode

    def answer(self, messages: Sequence[Message]) -> str:
        from policies.base import EpisodeContext

        episode = cast("EBManipulationEnv", self.env.unwrapped).task.episode
        if episode is not self._episode:
            self._episode = episode
            self.expert.reset(EpisodeContext(instruction="", seed=0))
        vectors = [[int(v) for v in action] for action in self.expert.next_skill()]
        plan = [{"action": json.dumps(v)} for v in vectors]
        grip = "open" if vectors[-1][6] == 1 else "closed"
        texts = {
            "visual_state_description": "The objects are where the object coordinates say.",
            "reasoning_and_reflection": f"Next skill from the current state: {len(vectors)} pose(s), ending with "
            f"the gripper {grip}.",
            "language_plan": "; ".join(
                f"move to {v[:3]} with the gripper {'open' if v[6] else 'closed'}" for v in vectors
            ),
        }
        return eb_answer(last_user_text(messages), plan, texts)


def eb_truth(task: str) -> EnvTruth:
    """The closed-loop truth of the EB agent loop for ``task``: the bound env's privileged source."""
    return EnvTruth(lambda env: eb_truth_source(task, env))


def eb_truth_source(task: str, env: gym.Env) -> NavigationTruthSource | ManipulationTruthSource:
    """The privileged source for ``task`` (``"navigation"`` or ``"manipulation"``) acting in ``env``."""
    if task == "navigation":
        return NavigationTruthSource(env)
    return ManipulationTruthSource(env)
