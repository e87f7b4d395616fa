"""Random camera motions of SpatialTree primitives that the navigation agent can physically carry out.

A motion is a list of plan steps (primitives with integer counts, in the camera frame at the start of each
step, as :mod:`action_mapping` defines them). It is carried out as the env's agent could: a translation
that a wall or piece of furniture blocks is shortened to the largest whole number of counts (cut by
floor(0.7 x count) per try) whose path the swept agent disc passes, and a step whose rotation would leave
the tilt or roll limits is drawn again. The poses visited are the cameras the renderer uses (through
:class:`~envs.navigation.world.AgentPose`), so a recorded trajectory is exactly the cameras of the images.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from action_mapping import (
    Category,
    Plan,
    PlanStep,
    Primitive,
    StepSizes,
    step_motion,
    trajectory_to_plan,
)
from action_mapping.trajectory import step_count_rows
from envs.navigation.camera import c2w_from_pose, pose_from_c2w
from envs.navigation.views import move_problem
from envs.navigation.world import World

# How often each primitive is drawn: walking forward and looking around are the common moves.
MOTION_WEIGHTS: dict[Primitive, float] = {
    Primitive.DOLLY_IN: 3.0,
    Primitive.DOLLY_OUT: 1.5,
    Primitive.TRUCK_LEFT: 1.5,
    Primitive.TRUCK_RIGHT: 1.5,
    Primitive.PEDESTAL_UP: 0.75,
    Primitive.PEDESTAL_DOWN: 0.75,
    Primitive.PAN_LEFT: 1.5,
    Primitive.PAN_RIGHT: 1.5,
    Primitive.TILT_UP: 0.5,
    Primitive.TILT_DOWN: 0.75,
    Primitive.ROLL_CW: 0.25,
    Primitive.ROLL_CCW: 0.25,
}
_SHRINK = 0.7  # a blocked translation keeps floor(0.7 x count) per axis, until its path is free


@dataclass(frozen=True)
class MotionRules:
    """How random motions are drawn."""

    min_steps: int = 1
    max_steps: int = 6
    max_actions_per_step: int = 2
    max_rotation_count: int = 2  # 2 x 25.8 deg; larger turns rarely keep the goal in view
    max_step_num: int = 10

    def __post_init__(self) -> None:
        if not 1 <= self.min_steps <= self.max_steps:
            raise ValueError(f"need 1 <= min_steps <= max_steps, got {self.min_steps}, {self.max_steps}")
        if not 1 <= self.max_rotation_count <= self.max_step_num or self.max_actions_per_step < 1:
            raise ValueError(
                f"max_rotation_count must be 1..max_step_num and max_actions_per_step >= 1: {self}"
            )


@dataclass
class Motion:
    """A motion as drawn (``commanded``), as carried out (``executed``), and the camera poses it visits."""

    commanded: list[PlanStep]
    executed: list[PlanStep]
    poses: np.ndarray  # (len(executed) + 1, 4, 4) C2W

    @property
    def clipped_steps(self) -> list[int]:
        """Indices of steps whose translation a wall or piece of furniture shortened."""
        rows_c, _ = step_count_rows(self.commanded)
        rows_e, _ = step_count_rows(self.executed)
        return [i for i, (a, b) in enumerate(zip(rows_c, rows_e)) if a != b]


# -------------------------------------------------------------------------------------------- motions


def random_step(rng: np.random.Generator, rules: MotionRules) -> PlanStep:
    """One plan step: 1..max_actions_per_step primitives on distinct axes, with random counts."""
    prims = list(MOTION_WEIGHTS)
    weights = np.array([MOTION_WEIGHTS[p] for p in prims])
    chosen: list[Primitive] = []
    for _ in range(int(rng.integers(1, rules.max_actions_per_step + 1))):
        free = [(p.category, p.axis) not in {(c.category, c.axis) for c in chosen} for p in prims]
        p = prims[int(rng.choice(len(prims), p=weights * free / (weights * free).sum()))]
        chosen.append(p)
    counts = [
        int(
            rng.integers(
                1,
                (rules.max_step_num if p.category is Category.TRANSLATION else rules.max_rotation_count) + 1,
            )
        )
        for p in chosen
    ]
    return PlanStep(chosen, counts)


def shrink_translation(step: PlanStep) -> PlanStep | None:
    """The step with every translation count cut to floor(0.7 x count) (zeros dropped); ``None`` when
    it has no translation left to cut."""
    if not any(p.category is Category.TRANSLATION for p in step.actions):
        return None
    pairs = [
        (p, int(n * _SHRINK) if p.category is Category.TRANSLATION else n)
        for p, n in zip(step.actions, step.step_nums)
    ]
    pairs = [(p, n) for p, n in pairs if n > 0]
    return PlanStep([p for p, _ in pairs], [n for _, n in pairs]) if pairs else None


def execute_step(
    world: World, c2w: np.ndarray, step: PlanStep, sizes: StepSizes
) -> tuple[PlanStep, np.ndarray] | None:
    """The step as the camera can carry it out from ``c2w`` and the pose it reaches, or ``None``.

    The reached pose is the one the renderer uses (through :class:`AgentPose`), so the recorded
    trajectory is exactly the cameras of the images.
    """
    current: PlanStep | None = step
    while current is not None:
        target = c2w_from_pose(pose_from_c2w(c2w @ step_motion(current, sizes).as_matrix()))
        if move_problem(world, c2w, target) is None:
            return current, target
        current = shrink_translation(current)
    return None


def random_motion(
    world: World,
    start_c2w: np.ndarray,
    rng: np.random.Generator,
    rules: MotionRules,
    sizes: StepSizes,
    n_steps: int | None = None,
    tries_per_step: int = 20,
) -> Motion | None:
    """A physically possible motion of ``n_steps`` steps (default: drawn from min_steps..max_steps) from
    ``start_c2w``; ``None`` if a step finds no feasible draw in ``tries_per_step``."""
    if n_steps is None:
        n_steps = int(rng.integers(rules.min_steps, rules.max_steps + 1))
    commanded, executed, poses = [], [], [start_c2w]
    for _ in range(n_steps):
        for _ in range(tries_per_step):
            step = random_step(rng, rules)
            done = execute_step(world, poses[-1], step, sizes)
            if done is not None:
                break
        else:
            return None
        commanded.append(step)
        executed.append(done[0])
        poses.append(done[1])
    return Motion(commanded, executed, np.stack(poses))


def ground_truth_plan(motion: Motion, sizes: StepSizes, max_step_num: int) -> Plan:
    """``trajectory_to_plan`` of the motion's poses, checked to equal the executed counts."""
    plan = trajectory_to_plan(motion.poses, sizes.translation, sizes.rotation, max_count=max_step_num)
    if plan.errors or step_count_rows(plan.steps)[0] != step_count_rows(motion.executed)[0]:
        raise RuntimeError(
            f"the recorded trajectory does not decompose into the executed plan "
            f"{Plan(motion.executed).to_json()} (got {plan.to_json()}, {plan.errors})"
        )
    plan.step_sizes = sizes
    return plan
