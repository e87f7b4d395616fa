"""SpatialTree L4 policy: images (+ goal image or instruction) -> a plan of motion primitives.

The model sees the current camera image and either the goal image (``EpisodeContext.extras["goal_image"]``,
the paper's goal-driven navigation/manipulation) or the episode's instruction, with the SpatialTree system
prompt for the task's format and step sizes. Its answer is parsed by :func:`action_mapping.parse_plan`.
``act`` returns one plan step at a time (the env's ``native_actions`` turn it into native actions, see
``benchmarks.core.episode.ActionStream``) and asks the model again after ``replan_every`` steps or when
the plan runs out.

The counts' units are the env's (``plan_step_sizes``, adopted in :meth:`SpatialPlanPolicy.bind` unless the
user set ``step_sizes``): the prompt shows them and every plan step leaves the policy as an
:class:`~action_mapping.ExecutablePlan` carrying them, so what the model was told is what runs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from action_mapping import (
    NAVIGATION_STEP_SIZES,
    ExecutablePlan,
    Plan,
    PlanStep,
    StepSizes,
    parse_plan,
    render_manipulation_prompt,
    render_navigation_prompt,
)
from policies.backends.base import Backend, Message
from policies.base import EpisodeContext
from policies.mllm.atomic import AtomicPrompting
from policies.mllm.base import MLLMPolicy
from policies.mllm.common import ModelCall, camera_images, image_part, instruction_for, text_part

if TYPE_CHECKING:
    import gymnasium as gym

TASKS = ("navigation", "manipulation")


class SpatialPlanPolicy(MLLMPolicy):
    """An MLLM planning SpatialTree primitives from the current view towards a goal image or instruction.

    Args:
        backend: the model.
        task: ``"navigation"`` (camera motion, Listing 2) or ``"manipulation"`` (end-effector + gripper).
        step_sizes: metres / radians per step count, shown in the prompt and used by the executor
            (``None``: the units of the env the policy is bound to, its ``plan_step_sizes``; SpatialTree
            Listing 2's navigation sizes until then, or when the env declares none).
        num_steps: steps the model is asked for (the paper: 6); longer plans are cut.
        max_step_num: cap of one action's count (the paper: 10).
        replan_every: plan steps executed before the model is asked again (``None``: the whole plan).
        image_keys: observation keys of the current image (default: the first RGB image).
        goal_key: key of the goal image in ``EpisodeContext.extras``; without it the instruction is the goal.
        atomic: extra low-level inputs (depth, correspondence, size), see :mod:`policies.mllm.atomic`.
        fallback: after unusable output, ``"noop"`` stays put and asks again next step; ``"stop"`` stays put
            for the rest of the episode without further model calls (``policy.stopped`` becomes true).
    """

    name: ClassVar[str] = "mllm-spatial"

    def __init__(
        self,
        backend: Backend,
        *,
        task: str = "manipulation",
        step_sizes: StepSizes | None = None,
        num_steps: int = 6,
        max_step_num: int = 10,
        replan_every: int | None = None,
        image_keys: Sequence[str] = (),
        goal_key: str = "goal_image",
        atomic: AtomicPrompting | None = None,
        fallback: str = "noop",
    ) -> None:
        if task not in TASKS:
            raise ValueError(f"task must be one of {TASKS}, got {task!r}")
        if replan_every is not None and replan_every < 1:
            raise ValueError(f"replan_every must be >= 1 or None, got {replan_every}")
        super().__init__(backend, task=task, image_keys=image_keys, atomic=atomic, fallback=fallback)
        self.sizes_from_env = step_sizes is None
        self.step_sizes: StepSizes = step_sizes or NAVIGATION_STEP_SIZES
        self.num_steps, self.max_step_num = num_steps, max_step_num
        self.replan_every = replan_every or num_steps
        self.goal_key = goal_key
        self.reset(EpisodeContext(instruction="", seed=0))

    # ------------------------------------------------------------------------------------------ episode

    def bind(self, env: gym.Env) -> None:
        """Adopt the env's plan units (unless set by the user); the backend hears the env."""
        from envs.wrappers import plan_step_sizes

        env_sizes = plan_step_sizes(env)
        if self.sizes_from_env and env_sizes is not None:
            self.step_sizes = env_sizes
        super().bind(env)

    def reset(self, context: EpisodeContext) -> None:
        self.goal_image = _goal_image(context.extras, self.goal_key)
        self.start_episode(context)
        self.plan_format = "none"
        self.since_plan = 0

    def act(self, observation: Mapping[str, Any]) -> ExecutablePlan | Plan:
        """The next plan step with its units (a one-step :class:`ExecutablePlan`), planning first when
        needed; the fallback "stay" (a :class:`Plan` that does not move) after unusable output."""
        self.steps_taken += 1
        if self.stopped:
            return self.stay("stopped after unusable model output")
        if not self.queue or self.since_plan >= self.replan_every:
            self._plan(observation)
            if not self.queue:
                return self.fall_back()
        self.since_plan += 1
        return ExecutablePlan((self.queue.pop(0),), self.step_sizes, self.plan_format)

    def _plan(self, observation: Mapping[str, Any]) -> None:
        self.queue, self.since_plan = [], 0
        self.ask(self.messages(observation), self.steps_taken, self._parse)

    def _parse(self, text: str, call: ModelCall) -> bool:
        """The answer's plan into the queue; repaired when the parser had to fix it."""
        plan = parse_plan(text, max_step_num=self.max_step_num, max_steps=self.num_steps)
        # The parser keeps a step whose every action was unknown (so step positions stay aligned for
        # scoring); here such a step does nothing, and an answer of only such steps is unusable.
        self.queue, self.plan_format = [s for s in plan.steps if _does_something(s)], plan.format
        call.errors, call.usable = list(plan.errors), bool(self.queue)
        call.parsed = {"format": plan.format, "steps": plan.to_json()}
        return not plan.ok

    # ------------------------------------------------------------------------------------------ prompt

    def system_prompt(self) -> str:
        goal = "image" if self.goal_image is not None else "instruction"
        if self.task == "navigation":
            return render_navigation_prompt(self.step_sizes, self.num_steps, self.max_step_num, goal=goal)
        return render_manipulation_prompt(self.step_sizes, self.num_steps, self.max_step_num, goal=goal)

    def messages(self, observation: Mapping[str, Any]) -> list[Message]:
        """The conversation for one planning call (single turn: each plan starts from the current view)."""
        current = [image for _, image in camera_images(observation, self.image_keys)]
        images = [current[0]] if self.goal_image is None else [current[0], self.goal_image]
        labels = (
            ["Image 1 (current view):"]
            if self.goal_image is None
            else ["Image 1 (start):", "Image 2 (goal):"]
        )
        content: list[dict[str, Any]] = []
        for label, image in zip(labels, images):
            content += [text_part(label), image_part(image)]
        content += self.atomic.parts(observation, self.context.extras, images, first_index=len(images) + 1)
        content.append(text_part(self._request_text(instruction_for(self.context.instruction, observation))))
        return [{"role": "system", "content": self.system_prompt()}, {"role": "user", "content": content}]

    def _request_text(self, instruction: str) -> str:
        lines = []
        if instruction:
            lines.append(f"Instruction: {instruction}")
        lines.append(f"Answer with the JSON object for up to {self.num_steps} steps and nothing else.")
        return "\n".join(lines)

    # ------------------------------------------------------------------------------------------ report

    def settings(self) -> dict[str, Any]:
        return {
            "step_sizes": {"translation": self.step_sizes.translation, "rotation": self.step_sizes.rotation},
            "num_steps": self.num_steps,
            "max_step_num": self.max_step_num,
            "replan_every": self.replan_every,
            "goal_key": self.goal_key,
        }


def _does_something(step: PlanStep) -> bool:
    """A step with an action, a gripper state, or an EB action id / vector (not one emptied by the parser)."""
    return (
        bool(step.actions)
        or step.gripper is not None
        or step.action_id is not None
        or step.vector is not None
    )


def _goal_image(extras: Mapping[str, Any], key: str) -> np.ndarray | None:
    if key not in extras or extras[key] is None:
        return None
    image = extras[key]
    if not (
        isinstance(image, np.ndarray) and image.dtype == np.uint8 and image.ndim == 3 and image.shape[2] == 3
    ):
        raise ValueError(
            f"extras[{key!r}] must be an RGB uint8 array H x W x 3, got {type(image).__name__} "
            f"{getattr(image, 'shape', '')}"
        )
    return image
