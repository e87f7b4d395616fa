"""The answer-key's plan sources for the spatial loop: the privileged expert's next motion, written as the
prompt asks.

The answer-key model (:mod:`policies.backends.answer_key`), built with :func:`spatial_truth` where the CLI
builds the backend, answers each planning prompt of :class:`~policies.mllm.spatial.SpatialPlanPolicy` with the
text a perfect model would write. A plan source reads the format from the prompt itself (step sizes, at most
how many steps, the count cap), asks its env family's privileged expert for the next motion in those terms and
writes the manipulation JSON (``step_1`` ... with ``actions``, ``step_nums`` and ``gripper``). Parsing,
execution and success are the real path.

Plan sources are registered per env family, keyed by the env class they serve (:data:`PLAN_SOURCES`); the
stand-in asks :func:`plan_source_for` for the bound env's. CALVIN's play-table (either backend: both are a
``PlayTableInterface``) has :class:`CalvinPlanSource` (the scripted IK expert's waypoints as primitives),
LIBERO :class:`LiberoPlanSource` (the scripted LIBERO expert's next action as primitives). An env with no registered source is refused in one line rather than answered
with something a perfect model would not write.

Adding a family: write a class with ``__init__(env)``, ``reset(context)`` and ``answer(messages)`` (the
:class:`PlanSource` protocol; :func:`read_prompt_format` reads what the prompt asks for) and decorate it with
``@register_plan_source("envs.<family>.env:<EnvClass>")``. The key names the env class as ``module:Class`` so
that registering imports no simulator; an env matches when it is an instance of that class (subclasses
included).
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, TypeVar

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
            "the answer-key's plan source got a conversation without a SpatialTree plan prompt "
            "(render_manipulation_prompt / render_navigation_prompt)"
        )
    return PromptFormat(StepSizes(float(sizes[1]), float(sizes[2])), int(steps[1] or steps[2]), int(cap[1]))


class PlanSource(Protocol):
    """A truth source that also hears when a new episode (CALVIN: subtask) starts."""

    def reset(self, context: EpisodeContext) -> None: ...

    def answer(self, messages: Sequence[Message]) -> str: ...


#: Plan sources by the env class they serve ("module:Class"), in registration order.
PLAN_SOURCES: dict[str, Callable[[gym.Env], PlanSource]] = {}
S = TypeVar("S", bound=Callable[..., PlanSource])


def register_plan_source(env_class: str) -> Callable[[S], S]:
    """Class decorator: the plan source of the envs that are instances of ``env_class`` (``"module:Class"``)."""

    def register(source: S) -> S:
        if env_class in PLAN_SOURCES:
            raise ValueError(f"a plan source for {env_class} is already registered")
        PLAN_SOURCES[env_class] = source
        return source

    return register


@register_plan_source("envs.calvin.env:PlayTableInterface")  # the built-in table and calvin_env
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


@register_plan_source("envs.libero.env:LiberoEnv")
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


def spatial_truth(task: str) -> EnvTruth:
    """The closed-loop truth of the spatial loop for ``task``: the bound env's registered plan source."""

    def make_source(env: gym.Env) -> PlanSource:
        if task != "manipulation":
            raise ValueError(
                f"--model answer-key with the spatial loop writes manipulation plans; got --task {task}"
            )
        return plan_source_for(env)

    return EnvTruth(make_source)


def plan_source_for(env: gym.Env) -> PlanSource:
    """The registered plan source of ``env``'s class (``ValueError`` naming the families that have one)."""
    unwrapped = env.unwrapped
    for env_class, make_source in PLAN_SOURCES.items():
        cls = _loaded_class(env_class)
        if cls is not None and isinstance(unwrapped, cls):
            return make_source(env)
    served = ", ".join(key.rsplit(":", 1)[-1] for key in PLAN_SOURCES)
    raise ValueError(
        f"--model answer-key: no plan source for {type(unwrapped).__name__} in the spatial loop; "
        f"registered: {served} (policies.mllm.answer_key_spatial.register_plan_source)"
    )


def _loaded_class(env_class: str) -> type | None:
    """The class ``"module:Class"`` names, or ``None`` while its module is not imported (then no env is one)."""
    module, _, name = env_class.partition(":")
    loaded = sys.modules.get(module)
    found = getattr(loaded, name, None) if loaded is not None else None
    return found if isinstance(found, type) else None
