"""A privileged scripted pick-and-place for LIBERO, as SpatialTree plan steps (what a perfect planner writes).

LIBERO has no scripted expert, and its human demonstrations are not installable here (see
docs/guide/libero.md). This one reads the simulator's object poses and handles the goals of the form "put object X in
/ on Y" (one ``In``/``On`` predicate over a movable object: all of libero_object, several libero_goal and
libero_spatial tasks): above X with the gripper open, down to X's centre, close, lift, over Y, down to a
release height, open. Each planning call moves the end effector straight toward the current waypoint
in the prompt's units (the end-effector frame, counts capped), from the *measured* pose, so OSC_POSE's
tracking error is corrected at every call; a waypoint is passed once the hand is within ``TOL`` of it.
Orientation is held (no rotation primitives): the hand starts pointing down.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from action_mapping import Plan, PlanStep, Primitive, StepSizes, trajectory_to_plan
from action_mapping.se3 import pose
from policies.base import EpisodeContext

if TYPE_CHECKING:
    import gymnasium as gym

TOL = 0.015  # metres: a waypoint is reached when the hand is this close
LIFT_Z = 0.25  # carrying height above the floor / table origin (world z)
GRASP_MIN_Z = 0.012  # the fingers stay this far above the object's base plane
SETTLE = 8  # control steps to let the fingers close / open


@dataclass(frozen=True)
class Waypoint:
    pos: np.ndarray  # world position of the gripper site
    gripper: int  # SpatialTree: 0 open, 1 closed
    settle: int = 0  # control steps held here once reached


def pick_and_place_goal(raw_env: Any) -> tuple[str, str, str]:
    """``(predicate, object, container)`` of a single In/On goal, or ``ValueError`` naming the goal."""
    goal = [list(g) for g in raw_env.env.parsed_problem["goal_state"]]
    if len(goal) != 1 or len(goal[0]) != 3 or goal[0][0].lower() not in ("in", "on"):
        raise ValueError(f"the LIBERO plan expert handles one In/On goal (put X in/on Y), not {goal}")
    predicate, obj, region = goal[0]
    env = raw_env.env
    bodies = {**env.fixtures_dict, **env.objects_dict}
    container = next((name for name in bodies if region == name or region.startswith(name + "_")), None)
    if obj not in env.objects_dict or container is None:
        raise ValueError(f"the LIBERO plan expert needs a movable object and a container in {goal}")
    return predicate.lower(), obj, region


def place_of(raw_env: Any, name: str) -> np.ndarray:
    """World position of a region (its site, where the scene has one) or of an object / fixture body."""
    env = raw_env.env
    try:
        return np.array(env.sim.data.site_xpos[env.sim.model.site_name2id(name)])
    except ValueError:
        pass
    bodies = {**env.fixtures_dict, **env.objects_dict}
    owner = next(n for n in bodies if name == n or name.startswith(n + "_"))
    return np.array(env.sim.data.body_xpos[env.obj_body_id[owner]])


class LiberoPlanExpert:
    """Pick-and-place plans from privileged object poses for the LIBERO env the policy is bound to."""

    def __init__(self, env: gym.Env) -> None:
        self.env = env
        pick_and_place_goal(env.unwrapped.raw_env)  # refuse unsupported goals at bind time, in one line
        self.waypoints: list[Waypoint] = []
        self.index = self.held = 0

    def reset(self, context: EpisodeContext) -> None:
        """Plan the waypoints from the object poses at the episode start (after the settle steps)."""
        raw = self.env.unwrapped.raw_env
        predicate, obj, region = pick_and_place_goal(raw)
        grasp, goal = place_of(raw, obj), place_of(raw, region)
        grasp[2] = max(grasp[2], GRASP_MIN_Z)
        above = np.array([*grasp[:2], max(LIFT_Z, grasp[2] + 0.15)])
        over = np.array([*goal[:2], max(LIFT_Z, goal[2] + 0.15)])
        release = np.array([*goal[:2], goal[2] + (0.12 if predicate == "in" else 0.10)])
        self.waypoints = [
            Waypoint(above, 0),
            Waypoint(grasp, 0),
            Waypoint(grasp, 1, SETTLE),
            Waypoint(above, 1),
            Waypoint(over, 1),
            Waypoint(release, 1),
            Waypoint(release, 0, SETTLE),
        ]
        self.index = self.held = 0

    def next_plan(self, sizes: StepSizes, max_steps: int, max_step_num: int) -> Plan:
        """Up to ``max_steps`` steps toward the current waypoint, from the measured hand pose."""
        libero = self.env.unwrapped
        raw = libero.raw_env.env
        hand = np.array(raw.sim.data.site_xpos[raw.robots[0].eef_site_id["right"]])
        gripper = 0 if libero.noop_action()[6] < 0 else 1  # robosuite: -1 open, +1 closed
        while self.index < len(self.waypoints):
            wp = self.waypoints[self.index]
            if not (np.linalg.norm(wp.pos - hand) < TOL and wp.gripper == gripper and self.held >= wp.settle):
                break
            self.index, self.held = self.index + 1, 0
        if self.index >= len(self.waypoints):  # done: stay
            return _plan([PlanStep([Primitive.STOP], [1], gripper=gripper)], sizes)
        wp = self.waypoints[self.index]
        if np.linalg.norm(wp.pos - hand) < TOL:  # there: set the gripper and let the fingers settle
            n = max(1, min(max_steps, wp.settle - self.held))
            self.held += n
            return _plan([PlanStep([Primitive.STOP], [1], gripper=wp.gripper) for _ in range(n)], sizes)
        rotation = libero.end_effector_rotation()  # base frame; LIBERO's robot base is not rotated
        steps, position = [], hand
        while len(steps) < max_steps:
            step = _toward(rotation.T @ (wp.pos - position), sizes, max_step_num, wp.gripper)
            if step is None:
                break
            steps.append(step)
            position = position + rotation @ _translation(step, sizes)
        return _plan(steps or [PlanStep([Primitive.STOP], [1], gripper=wp.gripper)], sizes)


def _plan(steps: list[PlanStep], sizes: StepSizes) -> Plan:
    return Plan(steps=steps, format="manipulation", step_sizes=sizes)


def _toward(delta: np.ndarray, sizes: StepSizes, cap: int, gripper: int) -> PlanStep | None:
    """One step of translation ``delta`` (end-effector frame), scaled to the cap and rounded."""
    counts = delta / sizes.translation
    peak = float(np.abs(counts).max())
    if peak > cap:
        counts = counts * (cap / peak)
    target = pose(np.eye(3), counts * sizes.translation)
    step = trajectory_to_plan(np.stack([np.eye(4), target]), sizes.translation, sizes.rotation, cap).steps[0]
    if step.is_stop:
        return None
    step.gripper = gripper
    return step


def _translation(step: PlanStep, sizes: StepSizes) -> np.ndarray:
    from action_mapping import step_motion

    return step_motion(step, sizes).translation
