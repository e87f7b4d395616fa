"""Generic wrappers that work on every SpatialArena env family.

Plans reach an env through :func:`expand_plan_step`, always as an :class:`ExecutablePlan` (steps plus the
units of their counts, which the env declares as ``plan_step_sizes``): a step the model wrote in the env's own action space
(an EB ``action_id`` or 7-D ``vector``) is passed through as is; otherwise its primitives become a
:class:`StepMotion` that the env family's ``native_actions(motion)`` turns into native actions with the
``action_mapping`` adapters, using the end-effector / camera frame at the moment the step starts.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import gymnasium as gym
import numpy as np

from action_mapping import ExecutablePlan, Plan, PlanStep, StepMotion, StepSizes, parse_plan, step_motion

# Units for steps that do not move (STOP with a gripper state): their counts are all zero, so any unit
# gives the same motion. ExecutablePlan guarantees real units for every step that moves.
_NO_MOTION_UNITS = StepSizes(1.0, 1.0)


@runtime_checkable
class PlanExecutor(Protocol):
    """The plan-execution contract: an (unwrapped) env that turns a plan step's motion into native actions.

    Every family implements it; envs whose plans carry counts also declare ``plan_step_sizes`` (read with
    :func:`plan_step_sizes`), and envs that can hold still implement :class:`HoldsStill`.
    """

    def native_actions(self, motion: StepMotion) -> list[Any]: ...


@runtime_checkable
class HoldsStill(Protocol):
    """An env with an action that holds the robot where it is (spent while a slow policy thinks)."""

    def noop_action(self) -> Any: ...


def expand_plan_step(env: gym.Env, plan: ExecutablePlan, index: int) -> list[Any]:
    """Native actions for step ``index`` of ``plan``, computed from the env's current state."""
    step = plan.steps[index]
    if step.action_id is not None:
        return [step.action_id]
    if step.vector is not None:
        return [np.asarray(step.vector, dtype=np.float64)]
    if step.is_stop and step.gripper is None:  # STOP / zero counts: nothing to do, no env step spent
        return []
    unwrapped = env.unwrapped
    if not isinstance(unwrapped, PlanExecutor):
        raise TypeError(
            f"{type(unwrapped).__name__} does not implement native_actions(motion); it cannot run plans"
        )
    return list(unwrapped.native_actions(step_motion(step, plan.step_sizes or _NO_MOTION_UNITS)))


def plan_step_sizes(env: gym.Env) -> StepSizes | None:
    """The units the env runs plans in (``env.unwrapped.plan_step_sizes``), ``None`` if it declares none.

    Part of the plan-execution contract next to :class:`PlanExecutor` and :class:`HoldsStill`: an env that runs
    plans says what one count of a primitive means there, and policies prompt with those units.
    """
    sizes = getattr(env.unwrapped, "plan_step_sizes", None)
    if sizes is not None and not isinstance(sizes, StepSizes):
        raise TypeError(f"{type(env.unwrapped).__name__}.plan_step_sizes must be a StepSizes, got {sizes!r}")
    return sizes


class SpatialActionWrapper(gym.Wrapper):
    """Act with SpatialTree plans: ``step(plan | plan_step | model_text)`` runs all its native actions.

    Returns the last observation, the summed reward, and ``terminated``/``truncated`` of the last native
    step (execution stops early when either is set). ``info["native_steps"]`` counts env steps taken and
    ``info["plan_errors"]`` lists parse problems when the action was raw model text.
    """

    def __init__(self, env: gym.Env, step_sizes: StepSizes | None = None) -> None:
        super().__init__(env)
        sizes = step_sizes or plan_step_sizes(env)
        if sizes is None:
            raise TypeError(
                f"SpatialActionWrapper: {type(env.unwrapped).__name__} declares no plan_step_sizes; "
                "pass step_sizes=StepSizes(metres, radians)"
            )
        self.step_sizes = sizes
        self.action_space = gym.spaces.Text(max_length=8192)

    def step(
        self, action: Plan | ExecutablePlan | PlanStep | str
    ) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        plan = self._as_plan(action)
        obs, total, terminated, truncated = None, 0.0, False, False
        info: dict[str, Any] = {}
        native_steps = 0
        for index in range(len(plan.steps)):
            for native in expand_plan_step(self.env, plan, index):
                obs, reward, terminated, truncated, info = self.env.step(native)
                total, native_steps = total + float(reward), native_steps + 1
                if terminated or truncated:
                    break
            if terminated or truncated:
                break
        if native_steps == 0:
            raise ValueError(
                f"the plan has no executable step (errors: {plan.errors or 'none'}); send a non-empty plan"
            )
        return (
            obs,
            total,
            terminated,
            truncated,
            {**info, "native_steps": native_steps, "plan_errors": list(plan.errors)},
        )

    def _as_plan(self, action: Plan | ExecutablePlan | PlanStep | str) -> ExecutablePlan:
        """The action as an executable plan; counts without units of their own are in ``self.step_sizes``."""
        if isinstance(action, ExecutablePlan):
            return action
        if isinstance(action, PlanStep):
            action = Plan(steps=[action])
        elif isinstance(action, str):
            action = parse_plan(action)
        if isinstance(action, Plan):
            return action.executable(self.step_sizes)
        raise TypeError(
            f"SpatialActionWrapper.step takes a Plan, a PlanStep or model text, got {type(action)}"
        )
