"""The scripted expert's next motion as SpatialTree plan steps (privileged: what a perfect planner writes).

:class:`ScriptedExpert` drives the robot one control step at a time toward TCP waypoints. A plan of
primitives cannot say "0.6 cm this step": each plan step is a whole number of counts of the prompt's step
sizes, capped at ``max_step_num`` per primitive, plus a gripper state. :class:`PlanExpert` writes the
plan a perfect model would give in those terms:

- each step moves the commanded TCP pose toward the current waypoint, in the TCP frame at the step's
  start, as far as the count cap allows; counts are rounded, and the next step starts from the rounded
  pose, so rounding never accumulates;
- where the expert moves slowly (grasps, pushes, presses), steps are limited to the counts that keep its
  speed (one count per step when one count is already faster than the expert);
- where the expert waits (the fingers closing, the arm catching up with its target), the plan holds still
  for that many steps (STOP with the gripper state, one control step each);
- a plan ends where the expert would look at the robot again: at a waypoint that needs the arm to have
  caught up (anything but a transit point) and at the end of a planning stage. The next model call
  checks the real robot, exactly as the expert does.

The counts' units and caps are arguments (a caller reads them from the prompt), so the same expert answers any
step sizes the user prompts with.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np
from scipy.spatial.transform import Rotation

from action_mapping import Plan, PlanStep, Primitive, StepSizes, step_motion, trajectory_to_plan
from action_mapping.se3 import axes_from_rotation, body_motion, pose, rotation_from_axes
from policies.base import EpisodeContext
from policies.experts.calvin import FAST, ScriptedExpert, Waypoint

if TYPE_CHECKING:
    import gymnasium as gym

TRANSIT_TOL = 0.02  # waypoints this loose (and without settling) are passed without checking the arm
CATCH_UP_WAITS = 2  # control steps held per plan while the arm catches up with its target


def spatial_gripper(gripper: float) -> int:
    """SpatialTree's gripper state (0 open, 1 closed) from CALVIN's (> 0 open, otherwise closed)."""
    return 0 if gripper > 0 else 1


class PlanExpert:
    """Answers "the next plan" for the CALVIN subtask the env is on, with the privileged scripted expert.

    Args:
        env: the play-table env of either backend (wrapped or not); the expert reads its scene interface.
        max_attempts: the expert's attempts per subtask.
    """

    def __init__(self, env: gym.Env, max_attempts: int = 3) -> None:
        self.env = env
        self.expert = ScriptedExpert(max_attempts=max_attempts)
        self.expert.bind(env)
        self._arrived = False  # the commanded pose has reached the current waypoint
        self._waited = 0  # control steps held at it since
        # (commanded target, (expert checkpoint, arrived, waited)) before this call / before the last plan
        self._checkpoint: tuple[np.ndarray, tuple[Any, ...]] | None = None
        self._last: tuple[np.ndarray, tuple[Any, ...]] | None = None

    def reset(self, context: EpisodeContext) -> None:
        """A new subtask starts (call after the env's ``begin_subtask``)."""
        self.expert.reset(context)
        self._arrived, self._waited, self._last = False, 0, None

    def _undo_unexecuted(self, target_pos: np.ndarray, target_euler: np.ndarray) -> None:
        """If the last plan moved but the commanded target is exactly where it was (the answer never ran,
        e.g. an injected error made it unusable), go back to the state before it."""
        target = np.concatenate([target_pos, target_euler])
        if self._last is not None and np.array_equal(self._last[0], target):
            self.expert.restore(self._last[1][0])
            self._arrived, self._waited = self._last[1][1:]
        self._last = None
        self._checkpoint = (target, (self.expert.checkpoint(), self._arrived, self._waited))

    def next_plan(self, sizes: StepSizes, max_steps: int, max_step_num: int) -> Plan:
        """Up to ``max_steps`` plan steps of the expert's motion from the robot's current state."""
        env = self.expert.play_table()
        robot_obs = np.asarray(env.snapshot()["robot_obs"], dtype=np.float64)
        target_pos, target_euler = env.target_pose()
        self._undo_unexecuted(np.asarray(target_pos, float), np.asarray(target_euler, float))
        # The frame a relative action moves in is the real TCP orientation; the position it adds to is the
        # accumulated target (see envs.calvin.env.PlayTableInterface.native_actions).
        current = pose(Rotation.from_euler("xyz", robot_obs[3:6]).as_matrix(), np.asarray(target_pos, float))
        gripper = spatial_gripper(float(robot_obs[14]))
        steps: list[PlanStep] = []
        lag = float(np.linalg.norm(np.asarray(target_pos) - robot_obs[:3]))
        while len(steps) < max_steps:
            wp = self.expert.current_waypoint() if not steps else self._current_in_stage()
            if wp is None:
                break
            if self._arrived:
                if not steps and not self._ready(wp, lag):
                    steps += self._hold(wp, lag, max_steps)
                    break
                if steps and not _transit(wp):
                    break  # the arm has to be checked before going on: ask again after this plan
                self._pass()
                continue
            step, current = _toward(current, wp, sizes, max_step_num)
            if step is None:  # already there (within half a count)
                self._arrived = True
                if spatial_gripper(wp.gripper) != gripper:
                    steps.append(_stop(wp))  # a gripper change costs one control step even in place
                    gripper, self._waited = spatial_gripper(wp.gripper), 1
                continue
            steps.append(step)
            gripper = step.gripper  # type: ignore[assignment]
        if not steps:  # solved or out of attempts: stay
            steps = [PlanStep([Primitive.STOP], [1], gripper=gripper)]
        if any(a.is_motion for step in steps for a in step.actions):
            self._last = self._checkpoint  # only a plan that moves can be told apart from one never run
        return Plan(steps=steps, format="manipulation", step_sizes=sizes)

    # ------------------------------------------------------------------------------------- waypoints

    def _current_in_stage(self) -> Waypoint | None:
        """The current waypoint, but never a new stage: that is planned from the real scene next call."""
        if self.expert.waypoints_left() == 0:
            return None
        return self.expert.current_waypoint()

    def _pass(self) -> None:
        self.expert.pass_waypoint()
        self._arrived, self._waited = False, 0

    def _ready(self, wp: Waypoint, lag: float) -> bool:
        """The expert's rule for moving on: the arm caught up (or waited long enough), and settled."""
        caught_up = lag < wp.tol or self._waited > wp.max_wait
        return caught_up and self._waited >= wp.settle

    def _hold(self, wp: Waypoint, lag: float, max_steps: int) -> list[PlanStep]:
        """Hold still at a reached waypoint for the settling left, or a few steps while the arm catches up."""
        settle_left = wp.settle - self._waited
        n = settle_left if lag < wp.tol else max(settle_left, CATCH_UP_WAITS)
        n = max(1, min(n, max_steps))
        self._waited += n
        return [_stop(wp) for _ in range(n)]


def _transit(wp: Waypoint) -> bool:
    return wp.tol >= TRANSIT_TOL and wp.settle == 0


def _stop(wp: Waypoint) -> PlanStep:
    return PlanStep([Primitive.STOP], [1], gripper=spatial_gripper(wp.gripper))


def _toward(
    current: np.ndarray, wp: Waypoint, sizes: StepSizes, cap: int
) -> tuple[PlanStep | None, np.ndarray]:
    """One step from ``current`` toward ``wp`` (straight, scaled down to the cap and the expert's speed),
    and the pose it really commands after rounding to whole counts (``None``: already there)."""
    motion = body_motion(current, pose(wp.rot, wp.pos))
    counts = np.concatenate(
        [motion[:3, 3] / sizes.translation, axes_from_rotation(motion[:3, :3]) / sizes.rotation]
    )
    limit = float(cap)
    if wp.speed < FAST:  # slow moves: no faster per control step than the expert (at least one count)
        limit = min(limit, max(1.0, math.floor(wp.speed / sizes.translation + 0.5)))
    translation_peak = float(np.abs(counts[:3]).max())
    rotation_peak = float(np.abs(counts[3:]).max())
    scale = min(1.0, limit / max(translation_peak, 1e-9), cap / max(rotation_peak, 1e-9))
    step = _rounded_step(counts * scale, sizes, cap, spatial_gripper(wp.gripper))
    if step is None:
        return None, current
    return step, current @ step_motion(step, sizes).as_matrix()


def _rounded_step(counts: np.ndarray, sizes: StepSizes, cap: int, gripper: int) -> PlanStep | None:
    """The plan step of signed fractional counts ``[tx, ty, tz, rx, ry, rz]``, rounded (``None`` if all 0)."""
    delta = pose(rotation_from_axes(counts[3:] * sizes.rotation), counts[:3] * sizes.translation)
    step = trajectory_to_plan(np.stack([np.eye(4), delta]), sizes.translation, sizes.rotation, cap).steps[0]
    if step.is_stop:
        return None
    step.gripper = gripper
    return step
