"""SpatialTree's spatial action mapping: primitives, plans, parsing, SE(3) conversion, prompts, adapters.

Pure Python/NumPy/SciPy and independent of any simulator::

    from action_mapping import parse_plan, plan_to_trajectory, NAVIGATION_STEP_SIZES
    plan = parse_plan(model_text)           # never raises; problems are in plan.errors
    poses = plan_to_trajectory(plan, np.eye(4), *astuple(NAVIGATION_STEP_SIZES))
"""

from action_mapping.parsing import parse_plan
from action_mapping.plan import ERROR_CODES, ExecutablePlan, Plan, PlanStep, StepSizes
from action_mapping.primitives import EB_NAV_ACTIONS, Category, Primitive, lookup_symbol
from action_mapping.prompts import render_manipulation_prompt, render_navigation_prompt
from action_mapping.trajectory import (
    LMMS_EVAL_STEP_SIZES,
    NAVIGATION_STEP_SIZES,
    StepMotion,
    plan_to_trajectory,
    step_motion,
    trajectory_to_plan,
    trajectory_to_plan_by_velocity,
)

__all__ = [
    "EB_NAV_ACTIONS",
    "ERROR_CODES",
    "LMMS_EVAL_STEP_SIZES",
    "NAVIGATION_STEP_SIZES",
    "Category",
    "ExecutablePlan",
    "Plan",
    "PlanStep",
    "Primitive",
    "StepMotion",
    "StepSizes",
    "lookup_symbol",
    "parse_plan",
    "plan_to_trajectory",
    "render_manipulation_prompt",
    "render_navigation_prompt",
    "step_motion",
    "trajectory_to_plan",
    "trajectory_to_plan_by_velocity",
]
