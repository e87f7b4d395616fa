"""The LIBERO expert's motion as SpatialTree plan steps (privileged: what a perfect planner writes on LIBERO).

:class:`~policies.experts.libero.LiberoExpert` acts one control step at a time: an OSC_POSE delta toward its
current waypoint, computed from the measured hand pose. OSC_POSE re-targets from the pose the hand has
*reached* at every control step (robosuite's "achieved" goal update), so where the hand is after a step is
not known before the step runs, and the expert looks at the robot before every step. :class:`LiberoPlanExpert`
writes the plan a perfect model gives in those terms: one step, the expert's next action as primitives in the
end-effector frame (the frame ``LiberoEnv.native_actions`` runs plans in), in the prompt's units. The policy
asks again when its plan runs out, so the model is asked before every control step, as the expert looks.

- **Units**: translation and rotation become signed counts of the prompt's step sizes along the end-effector
  axes (the rotation as the project's per-axis angles), rounded to whole counts, so the env turns the step
  back into the expert's action within half a count per axis. With LIBERO's units (1 cm, 0.05 rad) the
  expert's proportional law (twice the remaining error per step) still brings the hand within a quarter
  count of a waypoint, inside every tolerance the expert uses (8 mm and more).
- **Caps**: translation and rotation are each scaled down so that no count exceeds the prompt's cap. A
  full-speed action rounded along the hand's axes can come out a little over one OSC_POSE unit along a base
  axis, which the env would run as two control steps; there each axis is rounded up or down so that the
  step fits one action, as near the expert's as whole counts allow.
- **Gripper**: every step sets it (SpatialTree 0 open, 1 closed; the expert's -1 / +1). A step whose motion
  rounds to nothing is ``STOP`` with the gripper: one control step holding still, as the expert's near-zero
  action is.

The expert is used through its policy interface (``bind``, ``reset``, ``act``) only: it reads the simulator,
never the observation. The counts' units and caps are arguments (a caller reads them from the prompt), so the
same expert answers any step sizes the user prompts with.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np
from scipy.spatial.transform import Rotation

from action_mapping import Plan, PlanStep, Primitive, StepSizes
from action_mapping.adapters import OSC_POSITION_SCALE, OSC_ROTATION_SCALE
from action_mapping.se3 import axes_from_rotation, rotation_from_axes
from action_mapping.trajectory import step_from_counts
from policies.base import EpisodeContext
from policies.experts.libero import LiberoExpert

if TYPE_CHECKING:
    import gymnasium as gym

FIT_SLOWER, FIT_TRIES = (
    0.9,
    30,
)  # a step no rounding fits into one OSC_POSE action is slowed by 10 % and retried


class LiberoPlanExpert:
    """Answers "the next plan" for the LIBERO task the env is on, with the privileged scripted expert.

    Args:
        env: the LIBERO env (wrapped or not); binding refuses a goal the expert cannot solve, in one line.
        retries: the expert's grasp retries per goal.
    """

    def __init__(self, env: gym.Env, retries: int = 1) -> None:
        self.env = env
        self.expert = LiberoExpert(retries=retries)
        self.expert.bind(env)

    def reset(self, context: EpisodeContext) -> None:
        """A new episode starts (after the env's reset and settle steps): the expert plans its stages."""
        self.expert.reset(context)

    def next_plan(self, sizes: StepSizes, max_steps: int, max_step_num: int) -> Plan:
        """The expert's next control step as a one-step plan (``max_steps`` >= 1 always allows it)."""
        action = self.expert.act({})  # privileged: the expert reads the simulator, not the observation
        rotation = self.expert.libero_env().end_effector_rotation()
        step = plan_step(action, rotation, sizes, max_step_num)
        return Plan(steps=[step], format="manipulation", step_sizes=sizes)


def plan_step(action: np.ndarray, rotation: np.ndarray, sizes: StepSizes, cap: int) -> PlanStep:
    """The plan step that ``LiberoEnv.native_actions`` turns back into the OSC_POSE ``action``, in one control
    step, for an end effector at ``rotation`` (base frame, 3x3); counts capped at ``cap``."""

    def move_units(counts: np.ndarray) -> np.ndarray:  # hand-frame counts -> OSC_POSE position units
        return rotation @ (counts * sizes.translation) / OSC_POSITION_SCALE

    def turn_units(counts: np.ndarray) -> np.ndarray:  # hand-frame angle counts -> OSC_POSE rotation units
        turn = rotation @ rotation_from_axes(counts * sizes.rotation) @ rotation.T
        return Rotation.from_matrix(turn).as_rotvec() / OSC_ROTATION_SCALE

    move = rotation.T @ (np.asarray(action[:3], float) * OSC_POSITION_SCALE) / sizes.translation
    turn = Rotation.from_rotvec(np.asarray(action[3:6], float) * OSC_ROTATION_SCALE).as_matrix()
    angles = axes_from_rotation(rotation.T @ turn @ rotation) / sizes.rotation  # about the hand's axes
    counts = np.concatenate(
        [_whole(_capped(move, cap), move_units), _whole(_capped(angles, cap), turn_units)]
    )
    gripper = 0 if action[6] < 0 else 1  # robosuite: -1 open, +1 closed
    return step_from_counts(counts, gripper) or PlanStep([Primitive.STOP], [1], gripper=gripper)


def _capped(counts: np.ndarray, cap: int) -> np.ndarray:
    peak = float(np.abs(counts).max())
    return counts * (cap / peak) if peak > cap else counts


def _whole(counts: np.ndarray, units: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
    """Whole counts near ``counts`` that one OSC_POSE action carries (at most one unit along each base axis):
    rounded; or, where rounding a full-speed motion overshoots a unit (the env would split it into two
    control steps), the rounding up or down per axis that fits and comes nearest the wanted action (the
    motion a little slower when none fits)."""
    wanted = np.clip(units(counts), -1.0, 1.0)
    for _ in range(FIT_TRIES):
        rounded = np.round(counts)
        if _one_action(units(rounded)):
            return rounded
        options = [np.array(c) for c in itertools.product(*zip(np.floor(counts), np.ceil(counts)))]
        fitting = [c for c in options if _one_action(units(c))]
        if fitting:
            return min(fitting, key=lambda c: float(np.abs(units(c) - wanted).max()))
        counts = counts * FIT_SLOWER
    return np.zeros_like(counts)


def _one_action(units: np.ndarray) -> bool:
    return float(np.abs(units).max()) <= 1.0 + 1e-9
