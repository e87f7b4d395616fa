"""The spatial loop's oracle source: the privileged expert's next motion, written as the prompt asks.

The oracle backend (:mod:`policies.backends.answer_key`), built with :func:`spatial_truth` where the CLI builds the
backend, answers each planning prompt of :class:`~policies.mllm.spatial.SpatialPlanPolicy` with the text a
perfect model would write. The source
reads the format from the prompt itself (step sizes, at most how many steps, the count cap), asks the
env family's privileged expert for its next motion in those terms and writes the manipulation JSON
(``step_1`` ... with ``actions``, ``step_nums`` and ``gripper``). Parsing, execution and success are the
real path.

Experts per family: CALVIN's play-table has :class:`policies.experts.calvin_plan.PlanExpert` (the
scripted IK expert's waypoints as primitives), LIBERO :class:`policies.experts.libero_plan.LiberoPlanExpert`
(the scripted LIBERO expert's next action as primitives). Other families have no privileged plan expert
yet; the oracle refuses them in one line rather than answering something a perfect model would not.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from action_mapping import StepSizes
from policies.backends.answer_key import EnvTruth
from policies.backends.base import Message
from policies.base import EpisodeContext

if TYPE_CHECKING:
    import gymnasium as gym

# What render_manipulation_prompt / render_navigation_prompt write (pinned by their snapshot tests).
_SIZES = re.compile(r"Translation: ([0-9.eE+-]+) m per step\. Rotation: ([0-9.eE+-]+) rad per step\.")
_MAX_STEPS = re.compile(r"Use at most (\d+) steps|Split the motion into (\d+) steps")
_CAP = re.compile(r"integer from 1 to (\d+)")


@dataclass(frozen=True)
class PromptFormat:
    """What a planning prompt asks for: units of one count, most steps, largest count."""

    sizes: StepSizes
    max_steps: int
    max_step_num: int


def read_prompt_format(messages: Sequence[Message]) -> PromptFormat:
    """The format the conversation's system prompt asks for (``ValueError`` if it is not a plan prompt)."""
    system = next(
        (m["content"] for m in messages if m["role"] == "system" and isinstance(m["content"], str)), ""
    )
    sizes, steps, cap = _SIZES.search(system), _MAX_STEPS.search(system), _CAP.search(system)
    if not (sizes and steps and cap):
        raise ValueError(
            "the spatial oracle got a conversation without a SpatialTree plan prompt "
            "(render_manipulation_prompt / render_navigation_prompt)"
        )
    return PromptFormat(StepSizes(float(sizes[1]), float(sizes[2])), int(steps[1] or steps[2]), int(cap[1]))


class PlanSource(Protocol):
    """An oracle source that also hears when a new episode (CALVIN: subtask) starts."""

    def reset(self, context: EpisodeContext) -> None: ...

    def answer(self, messages: Sequence[Message]) -> str: ...


class LiberoPlanSource:
    """The LIBERO scripted expert's next action as a manipulation plan (every goal it solves)."""

    def __init__(self, env: gym.Env) -> None:
        from policies.experts.libero_plan import LiberoPlanExpert

        self.expert = LiberoPlanExpert(env)

    def reset(self, context: EpisodeContext) -> None:
        self.expert.reset(context)

    def answer(self, messages: Sequence[Message]) -> str:
        fmt = read_prompt_format(messages)
        return json.dumps(
            self.expert.next_plan(fmt.sizes, fmt.max_steps, fmt.max_step_num).to_json(), ensure_ascii=False
        )


class CalvinPlanSource:
    """The CALVIN scripted expert's next motion as a manipulation plan (built-in play-table)."""

    def __init__(self, env: gym.Env) -> None:
        from policies.experts.calvin_plan import PlanExpert

        self.expert = PlanExpert(env)

    def reset(self, context: EpisodeContext) -> None:
        self.expert.reset(context)

    def answer(self, messages: Sequence[Message]) -> str:
        fmt = read_prompt_format(messages)
        plan = self.expert.next_plan(fmt.sizes, fmt.max_steps, fmt.max_step_num)
        return json.dumps(plan.to_json(), ensure_ascii=False)


def spatial_truth(task: str) -> EnvTruth:
    """The closed-loop truth of the spatial loop for ``task``: the bound env's privileged plan source."""
    return EnvTruth(lambda env: spatial_oracle_source(env, task))


def spatial_oracle_source(env: gym.Env, task: str) -> PlanSource:
    """The privileged plan source for ``env`` (``ValueError`` naming what exists when there is none)."""
    unwrapped = env.unwrapped
    family = type(unwrapped).__name__
    if task != "manipulation":
        raise ValueError(f"--model oracle with the spatial loop writes manipulation plans; got --task {task}")
    # PyBullet: the calvin extra
    if type(unwrapped).__module__ in (
        "envs.calvin.env",
        "envs.calvin.official",
    ):
        from envs.calvin.env import PlayTableInterface

        if isinstance(unwrapped, PlayTableInterface):  # the built-in table or calvin_env: one scene interface
            return CalvinPlanSource(env)
    if type(unwrapped).__module__ == "envs.libero.env":
        return LiberoPlanSource(env)
    raise ValueError(
        f"--model oracle: no privileged plan expert for {family} in the spatial loop; it runs on "
        "CALVIN's play-table (benchmarks.calvin, either backend) and LIBERO"
    )
