"""EmbodiedBench-style agent loop for EB-Navigation and EB-Manipulation environments.

Each planning turn shows the camera image and a prompt with the action list, strategy hints, in-context
examples, the instruction and the action history with the env's feedback; the model answers with JSON whose
``executable_plan`` is run action by action. The loop asks again when the plan is used up or when the
feedback reports an invalid action (the rest of the plan was made for a world that did not happen). With
``chat_history`` the last ``history_messages`` chat messages are sent, as EmbodiedBench does.

Native actions: navigation returns the action id (a 0-d ``int64`` array, ``Discrete(8)``); manipulation
the 7-D discrete vector ``[X, Y, Z, Roll, Pitch, Yaw, Gripper]`` (``int64``, shape ``(7,)``). Unusable model
output is counted (``parse_errors``, EB's ``planner_output_error``) and followed by the configured fallback,
a one-step "stay" :class:`~action_mapping.Plan`; never a random action.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from action_mapping import Plan, parse_plan
from action_mapping.adapters import EB_MANIP_ROTATION_BIN_DEG, EB_MANIP_VOXELS
from policies.backends.base import Backend, Message
from policies.base import EpisodeContext
from policies.mllm import eb_prompts
from policies.mllm.atomic import AtomicPrompting
from policies.mllm.base import MLLMPolicy
from policies.mllm.common import ModelCall, camera_images, image_part, instruction_for, text_part

#: EmbodiedBench's defaults per task: step budget and number of in-context examples.
EB_DEFAULTS = {
    "navigation": {"max_steps": 20, "n_examples": 3},
    "manipulation": {"max_steps": 15, "n_examples": 4},
}
_INVALID = re.compile(r"\binvalid\b", re.IGNORECASE)
_ROTATION_BINS = round(360 / EB_MANIP_ROTATION_BIN_DEG)


@dataclass(frozen=True)
class EBAction:
    """One planned action: the native array and how the history shows it."""

    native: np.ndarray
    shown: str


class EBAgentPolicy(MLLMPolicy):
    """The EmbodiedBench MLLM agent for ``task`` ``"navigation"`` or ``"manipulation"``.

    Args:
        backend: the model.
        task: which action format and prompt to use.
        max_steps: the episode's step budget (default EB's 20 / 15; ``EpisodeContext.extras["max_steps"]``
            overrides it per episode). Plans are cut to the steps left.
        n_examples: in-context examples shown (default EB's 3 for navigation, 4 for manipulation).
        chat_history: send earlier turns (images and answers) along with the new one.
        history_messages: most chat messages sent per call when ``chat_history`` is on (EB: 5).
        image_keys: observation keys of the camera images shown (default: the first RGB image).
        object_info_key: observation key of an object-coordinates text (EB-Manipulation), shown when present.
        atomic: extra low-level inputs (depth, size hints), see :mod:`policies.mllm.atomic`.
        fallback: after unusable output, ``"noop"`` stays put and asks again next step; ``"stop"`` stays put
            for the rest of the episode without further model calls (``policy.stopped`` becomes true).
    """

    name: ClassVar[str] = "mllm-eb"

    def __init__(
        self,
        backend: Backend,
        *,
        task: str = "navigation",
        max_steps: int | None = None,
        n_examples: int | None = None,
        chat_history: bool = True,
        history_messages: int = 5,
        image_keys: Sequence[str] = (),
        object_info_key: str = "object_info",
        atomic: AtomicPrompting | None = None,
        fallback: str = "noop",
    ) -> None:
        if task not in EB_DEFAULTS:
            raise ValueError(f"task must be one of {sorted(EB_DEFAULTS)}, got {task!r}")
        if history_messages < 1:
            raise ValueError(f"history_messages must be >= 1, got {history_messages}")
        super().__init__(backend, task=task, image_keys=image_keys, atomic=atomic, fallback=fallback)
        self.default_max_steps = max_steps or EB_DEFAULTS[task]["max_steps"]
        self.n_examples = EB_DEFAULTS[task]["n_examples"] if n_examples is None else n_examples
        self.chat_history, self.history_messages = chat_history, history_messages
        self.object_info_key = object_info_key
        self.reset(EpisodeContext(instruction="", seed=0))

    # ------------------------------------------------------------------------------------------ episode

    def reset(self, context: EpisodeContext) -> None:
        self.start_episode(context)
        self.max_steps = int(context.extras.get("max_steps", self.default_max_steps))
        self.system = eb_prompts.system_text(self.task, self.max_steps, self.n_examples)
        self.chat: list[Message] = []
        self.history: list[str] = []
        self.last_action: EBAction | None = None
        self.invalid_feedback = 0

    def act(self, observation: Mapping[str, Any]) -> np.ndarray | Plan:
        self._absorb_feedback(observation)
        if self.stopped:
            return self.stay("stopped after unusable model output")
        if not self.queue:
            self._plan(observation)
            if not self.queue:
                return self.fall_back()
        self.last_action = self.queue.pop(0)
        self.steps_taken += 1
        return self.last_action.native

    def stay(self, reason: str) -> Plan:
        self.last_action = None  # a stay is not an EB action: it gets no history line
        self.steps_taken += 1
        return super().stay(reason)

    def _absorb_feedback(self, observation: Mapping[str, Any]) -> None:
        """Log the previous action with the env's feedback; drop the rest of the plan if it was invalid."""
        if self.last_action is None:
            return
        feedback = str(observation.get("feedback", "") or "(no feedback)")
        step = len(self.history) + 1
        self.history.append(f"Step {step}, {self.last_action.shown}, env feedback: {feedback}")
        self.last_action = None
        if _INVALID.search(feedback):
            self.invalid_feedback += 1
            self.queue.clear()

    # ----------------------------------------------------------------------------------------- planning

    def _plan(self, observation: Mapping[str, Any]) -> None:
        user = {"role": "user", "content": self.turn_content(observation)}
        self.chat.append(user)
        messages = self.chat[-self.history_messages :] if self.chat_history else [user]
        text = self.ask(messages, self.steps_taken + 1, self._parse)
        self.chat.append({"role": "assistant", "content": text})

    def _parse(self, text: str, call: ModelCall) -> bool:
        """The answer's actions into the queue; repaired unless the only change was cutting to the budget."""
        self.queue, call.errors = self._actions(text)
        call.parsed = [action.shown for action in self.queue]
        call.usable = bool(self.queue)
        return any(not e.startswith("truncated") for e in call.errors)

    def turn_content(self, observation: Mapping[str, Any]) -> list[dict[str, Any]]:
        """The user turn for the current observation: camera image(s), atomic extras, prompt text."""
        images = [image for _, image in camera_images(observation, self.image_keys)]
        content = [image_part(image) for image in images]
        content += self.atomic.parts(
            observation, self.context.extras, images[:1], first_index=len(images) + 1
        )
        info = observation.get(self.object_info_key)
        instruction = instruction_for(self.context.instruction, observation)
        text = eb_prompts.turn_text(
            self.system, instruction, self.history, object_info=info if isinstance(info, str) else None
        )
        return [*content, text_part(text)]

    def _actions(self, text: str) -> tuple[list[EBAction], list[str]]:
        """Parse the answer into native actions, cut to the remaining budget; problems go to the errors."""
        if self.task == "navigation":
            plan = parse_plan(text)
            actions = [_nav_action(s.action_id) for s in plan.steps if s.action_id is not None]
        else:
            plan = parse_plan(text, action_table=None)
            actions = [
                a for s in plan.steps if s.vector is not None and (a := _manip_action(s.vector, plan.errors))
            ]
        errors = list(plan.errors)
        dropped = len(plan.steps) - len(actions)
        if dropped:
            errors.append(f"dropped_actions: {dropped} step(s) without a valid {self.task} action")
            self.counters.dropped_actions += dropped
        if plan.format != "executable_plan" and plan.steps:
            errors.append(f"wrong_format: expected executable_plan, got {plan.format}")
        if not plan.steps and not errors:
            errors.append("empty_plan: executable_plan has no actions")
        left = self.max_steps - self.steps_taken
        if len(actions) > left:
            errors.append(f"truncated: {len(actions) - left} action(s) beyond the step budget")
            actions = actions[: max(0, left)]
        return actions, errors

    # ------------------------------------------------------------------------------------------- report

    def loop_stats(self) -> dict[str, float]:
        """EB's names for the planner counts (``planner_steps``, ``planner_output_error``), the steps and
        the invalid-action feedback received."""
        c = self.counters
        return {
            "planner_steps": float(c.model_calls),
            "planner_output_error": float(c.parse_errors),
            "steps": float(self.steps_taken),
            "invalid_feedback": float(self.invalid_feedback),
        }

    def settings(self) -> dict[str, Any]:
        return {
            "max_steps": self.default_max_steps,
            "n_examples": self.n_examples,
            "chat_history": self.chat_history,
            "history_messages": self.history_messages,
        }


def _nav_action(action_id: int) -> EBAction:
    name = eb_prompts.NAV_ACTION_NAMES[action_id]
    return EBAction(np.asarray(action_id, dtype=np.int64), f"action id {action_id}, {name}")


def _manip_action(vector: Sequence[float], errors: list[str]) -> EBAction | None:
    """The 7-D action if every entry is an integer in range; otherwise ``None`` and a recorded error."""
    highs = [EB_MANIP_VOXELS - 1] * 3 + [_ROTATION_BINS - 1] * 3 + [1]
    values = [float(v) for v in vector]
    if any(v != int(v) or not 0 <= v <= hi for v, hi in zip(values, highs)):
        errors.append(
            f"bad_vector_range: {values} needs integers 0-{highs[0]} (X, Y, Z), 0-{highs[3]} "
            "(Roll, Pitch, Yaw), 0/1 (Gripper)"
        )
        return None
    ints = [int(v) for v in values]
    return EBAction(np.asarray(ints, dtype=np.int64), f"action {ints}")
