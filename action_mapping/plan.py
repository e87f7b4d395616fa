"""A parsed action plan: ordered steps of primitives with integer intensities, plus what went wrong."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from action_mapping.primitives import Primitive


@dataclass(frozen=True)
class StepSizes:
    """Metric size of one count of a primitive: metres per translation step, radians per rotation step."""

    translation: float
    rotation: float

    def __post_init__(self) -> None:
        if not (self.translation > 0 and self.rotation > 0):
            raise ValueError(f"step sizes must be positive, got {self}")


@dataclass
class PlanStep:
    """One plan step. ``actions[i]`` is repeated ``step_nums[i]`` times (its intensity).

    ``gripper`` is the manipulation format's gripper state (SpatialTree: 0 open, 1 closed), ``None`` when
    the step does not set it. ``action_id`` keeps an EmbodiedBench ``executable_plan`` id as written and
    ``vector`` an EB-Manipulation 7-D action as written, so adapters can use them without re-parsing.
    """

    actions: list[Primitive] = field(default_factory=list)
    step_nums: list[int] = field(default_factory=list)
    gripper: int | None = None
    action_id: int | None = None
    vector: list[float] | None = None

    def __post_init__(self) -> None:
        if len(self.actions) != len(self.step_nums):
            raise ValueError(
                f"PlanStep needs one step_num per action, got {len(self.actions)} actions and "
                f"{len(self.step_nums)} step_nums"
            )

    @property
    def is_stop(self) -> bool:
        return all(a is Primitive.STOP or n == 0 for a, n in zip(self.actions, self.step_nums))

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"actions": [a.symbol for a in self.actions], "step_nums": list(self.step_nums)}
        if self.gripper is not None:
            out["gripper"] = self.gripper
        if self.action_id is not None:
            out["action_id"] = self.action_id
        if self.vector is not None:
            out["vector"] = list(self.vector)
        return out


@dataclass
class Plan:
    """Steps in execution order. ``errors`` lists every problem found while producing them.

    Each error is ``"<code>: <detail>"`` with a code from :data:`ERROR_CODES`; a plan can have errors and
    still hold usable steps (a repaired trailing comma, a capped step count). ``format`` says which output
    format was recognised: ``navigation``, ``manipulation``, ``single_step``, ``executable_plan``, ``list``,
    ``trajectory`` or ``none``.
    """

    steps: list[PlanStep] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    format: str = "none"
    raw: str | None = None
    #: The units the plan's counts are in; set by whoever knows them (the prompting policy, a dataset).
    step_sizes: StepSizes | None = None

    @property
    def ok(self) -> bool:
        """Parsed with no problem at all."""
        return not self.errors

    @property
    def usable(self) -> bool:
        """At least one step came out (possibly after repairs)."""
        return bool(self.steps)

    @property
    def error_codes(self) -> list[str]:
        return [e.split(":", 1)[0] for e in self.errors]

    def to_json(self) -> dict[str, Any]:
        """The navigation/manipulation output format (``step_1`` ... keys), as a model would write it."""
        return {f"step_{i + 1}": step.to_json() for i, step in enumerate(self.steps)}

    def executable(self, default_sizes: StepSizes | None = None) -> ExecutablePlan:
        """This plan as execution takes it: with its own ``step_sizes``, else ``default_sizes``.

        Raises ``TypeError`` (from :class:`ExecutablePlan`) when a step moves and neither is set.
        """
        return ExecutablePlan(
            tuple(self.steps), self.step_sizes or default_sizes, self.format, tuple(self.errors)
        )


@dataclass(frozen=True)
class ExecutablePlan:
    """Plan steps together with the units their counts are in: the only plan form execution accepts.

    :class:`Plan` is what a parser (or a dataset) produced, and may not know its units; execution
    (``benchmarks.core.episode.ActionStream``, ``envs.wrappers.expand_plan_step``) takes this type, and
    this type cannot be built with motion primitives but no ``step_sizes``: a count without a unit is
    refused where the plan is made, never deep inside a run. Steps without motion (STOP, a gripper change,
    an EB ``action_id`` or ``vector``) need no units, so ``step_sizes`` may be ``None`` for them only.
    """

    steps: tuple[PlanStep, ...]
    step_sizes: StepSizes | None
    format: str = "none"
    errors: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.step_sizes is not None and not isinstance(self.step_sizes, StepSizes):
            raise TypeError(
                f"ExecutablePlan.step_sizes must be a StepSizes, got {type(self.step_sizes).__name__}"
            )
        if self.step_sizes is None and any(a.is_motion for s in self.steps for a in s.actions):
            raise TypeError(
                "a plan with motion primitives needs step sizes (metres / radians per count): set "
                "them where the plan is made, e.g. plan.executable(env.unwrapped.plan_step_sizes)"
            )


ERROR_CODES: dict[str, str] = {
    "empty_output": "the model returned no text",
    "input_truncated": "the output was longer than parsing.MAX_PLAN_CHARS; only its beginning was read",
    "no_json": "no JSON object or list could be found in the text",
    "invalid_json": "a JSON-like span was found but could not be decoded, even after repairs",
    "repaired_json": "the JSON decoded only after a repair (trailing commas, single quotes, Python literals)",
    "not_a_plan": "the decoded value has no recognisable plan structure",
    "step_not_object": "a step is not an object and was skipped",
    "missing_key": "a step lacks 'actions' or 'step_nums' (missing counts default to 1)",
    "length_mismatch": "'actions' and 'step_nums' differ in length (missing counts default to 1, extras dropped)",
    "bad_step_num": "a step count is not a non-negative integer (numeric strings and floats are coerced)",
    "step_num_capped": "a step count exceeded the cap and was clipped to it",
    "unknown_action": "an action symbol is not a known spelling and was dropped",
    "bad_gripper": "the gripper value is not 0/1 (or open/closed) and was ignored",
    "bad_action_id": "an executable_plan action id is not an integer in range and was dropped",
    "bad_vector": "an executable_plan action vector is not a list of 7 numbers and was dropped",
    "empty_step": "a step has no valid action left",
    "too_many_steps": "more steps than allowed; the extra steps were dropped",
    "step_order": "step keys are not step_1..step_N in sequence (steps are ordered by their number)",
}
