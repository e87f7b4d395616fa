"""A scripted expert that reads simulator state and sends the discrete EB actions a planner would send.

Every skill is a short, closed-loop sequence re-planned from the current state whenever its queue runs
out: grasp (above the object, down to it, close), carry (lift, move above the goal, lower and open), and
for the wipe task a sweep along the named area. A failed grasp is noticed (the object is not between the
fingers) and retried. Targets are snapped to EB's grid by the same encoder a planner's output goes through.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, cast

import numpy as np
from scipy.spatial.transform import Rotation

from action_mapping.adapters import eb_manipulation_encode
from envs.manipulation import workspace
from envs.manipulation.shapes import SHAPE_HEIGHT, SHAPES
from envs.manipulation.tasks.pick import CONTAINER_HEIGHT
from envs.manipulation.tasks.place import SORTER_HEIGHT
from envs.manipulation.tasks.wipe import AREA_LENGTH, SPONGE_HALF
from policies.base import EpisodeContext, Policy

if TYPE_CHECKING:
    import gymnasium as gym

    from envs.manipulation.env import EBManipulationEnv

# The gripper's yaw is about 135 deg + q1 - q7 (home: 90 deg at q7 = 45 deg), and q7 turns +-166 deg, so
# (unwrapped) yaws from about -30 to 300 deg are reachable. A target yaw only fixes the gripper modulo 360
# deg and the controller turns the short way, so the expert tracks the unwrapped yaw, keeps it in a safe
# window, and splits turns larger than MAX_TURN into two actions.
WRIST_CENTER_YAW = math.radians(135)
WRIST_WINDOW = (math.radians(-15), math.radians(285))
MAX_TURN = math.radians(150)
APPROACH = 0.08  # metres above a grasp or release pose
FINGER_REACH = 0.045  # metres from the grip site to an open fingertip's outer face
HAND_REACH, HAND_HEIGHT = 0.11, 0.06  # the hand is 21 cm wide and clears objects lower than 6 cm
DROP_CLEARANCE = 0.015  # metres between a carried object's bottom and the surface it is released over
PRESS = 0.003  # metres the sponge is aimed below the table top while wiping (stays in the grasp's voxel)
_SYMMETRY = {"cube": 4, "cylinder": 12, "star": 5, "triangle": 3, "moon": 1}  # rotational symmetry orders


class EBManipulationExpert(Policy):
    """Privileged scripted expert for the four EB-Manipulation families (binds to the env it acts in)."""

    name = "eb_manipulation_expert"
    privileged = True

    def __init__(self, max_replans: int = 6) -> None:
        self.max_replans = max_replans
        self._env: EBManipulationEnv | None = None
        self._queue: list[np.ndarray] = []
        self._plans = 0
        # the pose the queued actions will leave the gripper in (unwrapped yaw), while planning
        self._at = np.zeros(3)
        self._yaw = 0.0
        self._closed = False

    def bind(self, env: gym.Env) -> None:
        self._env = cast("EBManipulationEnv", env.unwrapped)  # privileged: reads EB-Manipulation's state

    def reset(self, context: EpisodeContext) -> None:
        if self._env is None:
            raise RuntimeError("the expert reads simulator state: call bind(env) before reset()")
        self._queue, self._plans = [], 0

    def act(self, observation: Mapping[str, Any]) -> np.ndarray:
        if not self._queue:
            self._queue = self.next_skill()
        return self._queue.pop(0)

    def next_skill(self) -> list[np.ndarray]:
        """The EB actions of the next skill, planned from the current simulator state (what :meth:`act`
        queues when its queue runs out); after ``max_replans`` plans, one action that holds the pose."""
        if self._env is None:
            raise RuntimeError("the expert reads simulator state: call bind(env) before next_skill()")
        self._plans += 1
        self._start_plan()
        return self._plan() if self._plans <= self.max_replans else self._move(self._at, self._yaw)

    def episode_stats(self) -> dict[str, float]:
        return {"expert_plans": float(self._plans)}

    @property
    def _sim(self) -> EBManipulationEnv:
        if self._env is None:
            raise RuntimeError("the expert reads simulator state: call bind(env) first")
        return self._env

    # ------------------------------------------------------------------------------------ planning

    def _plan(self) -> list[np.ndarray]:
        task = self._sim.task
        goal = task.goal()
        family = task.family
        carried: str = goal[{"wipe": "sponge", "stack": "top"}.get(family, "target")]  # the slot to hold
        if not task.is_grasped(carried):
            return self._grasp(carried)
        if family == "wipe":
            return self._wipe(goal)
        if family == "pick":
            return self._carry(*self._over_fixture(carried, goal["container"], CONTAINER_HEIGHT))
        if family == "place":
            return self._carry(*self._over_fixture(carried, goal["sorter"], SORTER_HEIGHT))
        return self._carry(*self._over_object(carried, goal["bottom"]))

    def _grasp(self, slot: str) -> list[np.ndarray]:
        """Open if a grasp failed, then above the grasp point, down to it, close."""
        point, yaw = self._grasp_pose(slot)
        grasp = point + np.array([0.0, 0.0, self._grasp_height(slot)])
        actions = []
        if self._closed:  # a failed grasp: let go a little higher first
            actions += self._move(self._at + np.array([0.0, 0.0, 0.03]), self._yaw, closed=False)
        actions += self._move(point + np.array([0.0, 0.0, APPROACH]), yaw, closed=False)
        actions += self._move(grasp, yaw, closed=False)
        return actions + self._move(grasp, yaw, closed=True)

    def _carry(self, site: np.ndarray, yaw: float) -> list[np.ndarray]:
        """Lift straight up, move above the release pose, lower to it and open."""
        travel = max(site[2], self._at[2]) + APPROACH
        actions = self._move(np.array([*self._at[:2], travel]), self._yaw)
        actions += self._move(np.array([*site[:2], travel]), yaw)
        return actions + self._move(site, yaw, closed=False)

    def _wipe(self, goal: dict[str, str]) -> list[np.ndarray]:
        """Turn the held sponge across the area above its nearer end, lower it and sweep to the far end."""
        task = self._sim.task
        area_pos, area_rot = task.body_pose(goal["target"])
        along = area_rot[:, 0]  # the area's long side; the fingers point along it, the sponge lies across
        sweep_yaw = self._yaw + _wrap(math.atan2(along[1], along[0]) - self._yaw, math.pi)
        ends = [area_pos + s * (AREA_LENGTH / 2 - 0.01) * along for s in (-1.0, 1.0)]
        start, end = sorted(ends, key=lambda p: np.linalg.norm(p[:2] - task.center(goal["sponge"])[:2]))
        offset, dz = self._held_offset(goal["sponge"], sweep_yaw)
        wipe_z = workspace.TABLE_TOP_Z + SPONGE_HALF[2] - PRESS - dz  # aim just below the surface
        travel = workspace.TABLE_TOP_Z + 0.09
        actions = self._move(np.array([*self._at[:2], travel]), self._yaw)
        actions += self._move(np.array([*(start - offset)[:2], travel]), sweep_yaw)
        actions += self._move(np.array([*(start - offset)[:2], wipe_z]), sweep_yaw)
        return actions + self._move(np.array([*(end - offset)[:2], wipe_z]), sweep_yaw)

    # ------------------------------------------------------------------------- actions, the wrist

    def _start_plan(self) -> None:
        position, rotation = self._sim.scene.grip_pose()
        self._at, self._yaw, self._closed = (
            position,
            self._wrist_yaw(rotation),
            self._sim.scene.gripper_closed,
        )

    def _move(self, position: np.ndarray, yaw: float, *, closed: bool | None = None) -> list[np.ndarray]:
        """EB actions reaching ``position`` at (unwrapped) ``yaw``: two when the wrist turns more than
        MAX_TURN, the first turning half-way where the gripper is, so the controller turns the right way."""
        closed = self._closed if closed is None else closed
        actions = []
        if abs(yaw - self._yaw) > MAX_TURN:
            actions.append(self._encode(self._at, (yaw + self._yaw) / 2, closed=self._closed))
        actions.append(self._encode(position, yaw, closed=closed))
        self._at, self._yaw, self._closed = np.asarray(position, dtype=float), yaw, closed
        return actions

    def _wrist_yaw(self, rotation: np.ndarray) -> float:
        """The gripper's unwrapped yaw: its heading, shifted by whole turns to match the joint angles."""
        q = self._sim.scene.mj_data.qpos[self._sim.scene.arm_qpos_indices()]
        estimate = WRIST_CENTER_YAW + q[0] - q[6]
        heading = _yaw_of(rotation)
        return heading + 2 * math.pi * round((estimate - heading) / (2 * math.pi))

    def _encode(self, position: np.ndarray, yaw: float, *, closed: bool) -> np.ndarray:
        rotation = Rotation.from_euler("xyz", [math.pi, 0.0, yaw]).as_matrix()
        return eb_manipulation_encode(position, rotation, closed, bounds=workspace.WORKSPACE_BOUNDS).astype(
            np.int64
        )

    # --------------------------------------------------------------------------------- geometry

    def _grasp_pose(self, slot: str) -> tuple[np.ndarray, float]:
        """World grasp point (on the table plane) and the (unwrapped) gripper yaw that closes across it.

        Of the shape's grasp directions (each also turned by 180 deg), the expert takes one whose open
        fingers clear the other objects (2 cm is enough), then the one that keeps the wrist nearest the
        middle of its range, now and, for the object to be stacked, after the turn that aligns it.
        """
        task = self._sim.task
        position, rotation = task.body_pose(slot)
        kind = task.entry(slot)["kind"]
        local: tuple[float, float]
        angles: tuple[float, ...]
        if kind == "sponge":
            local, angles = (0.0, 0.0), (math.pi / 2,)  # fingers across the sponge's short side
        else:
            local, angles = SHAPES[kind].grasp_point, SHAPES[kind].grasp_angles
        point = position + rotation @ np.array([*local, 0.0])
        turn, period = self._stacking_turn(slot)
        yaws = [y for a in angles for y in _in_window(_yaw_of(rotation) + a, math.pi)]

        def score(y: float) -> tuple[float, float]:
            release = _in_window(y + turn, period)
            wrist = max(
                abs(y - WRIST_CENTER_YAW), min((abs(r - WRIST_CENTER_YAW) for r in release), default=9.0)
            )
            return min(self._finger_clearance(slot, point, y), 0.02), -wrist

        return np.array([point[0], point[1], workspace.TABLE_TOP_Z]), max(yaws, key=score)

    def _stacking_turn(self, slot: str) -> tuple[float, float]:
        """How far the object must turn before it is put down (and its symmetry period): non-zero only for
        the stack task's top object, which is aligned with the one below."""
        task = self._sim.task
        goal = task.goal()
        if task.family != "stack" or slot != goal.get("top"):
            return 0.0, 2 * math.pi
        period = 2 * math.pi / _SYMMETRY[task.entry(slot)["kind"]]
        top_yaw, base_yaw = (_yaw_of(task.body_pose(s)[1]) for s in (slot, goal["bottom"]))
        return _wrap(base_yaw - top_yaw, period), period

    def _finger_clearance(self, slot: str, point: np.ndarray, yaw: float) -> float:
        """Room between the gripper and the nearest other object when grasping at ``point``: the open
        fingertips (4.5 cm either side) for low objects, the hand's ends (11 cm) for tall ones."""
        task = self._sim.task
        axis = np.array([math.cos(yaw), math.sin(yaw)])
        gaps = [np.inf]
        for obj in task.objects_in_episode():
            if obj["slot"] == slot or obj["kind"] == "area":
                continue
            lo, hi = task.bounds(obj["slot"])
            reach = HAND_REACH if hi[2] - workspace.TABLE_TOP_Z > HAND_HEIGHT else FINGER_REACH
            for tip in (point[:2] + reach * axis, point[:2] - reach * axis):
                gaps.append(float(np.linalg.norm(np.maximum(np.maximum(lo[:2] - tip, tip - hi[:2]), 0.0))))
        return min(gaps)

    def _grasp_height(self, slot: str) -> float:
        """Grip-site height above the table: a little above the object's middle, in the voxel that keeps
        the fingertips (1.4 cm below the grip site) off the table."""
        kind = self._sim.task.entry(slot)["kind"]
        return (SPONGE_HALF[2] if kind == "sponge" else SHAPE_HEIGHT / 2) + 0.002

    def _held_offset(self, slot: str, new_yaw: float) -> tuple[np.ndarray, float]:
        """Horizontal offset grip site -> object origin once the wrist has turned to ``new_yaw``, and the
        object's height above the grip site."""
        site, _ = self._sim.scene.grip_pose()
        origin, _ = self._sim.task.body_pose(slot)
        turn = Rotation.from_euler("z", new_yaw - self._yaw).as_matrix()
        offset = turn @ (origin - site)
        return np.array([offset[0], offset[1], 0.0]), float(origin[2] - site[2])

    def _over_fixture(self, slot: str, fixture: str, height: float) -> tuple[np.ndarray, float]:
        """Release pose putting the object's origin above the fixture's centre, bottom just above its top."""
        fixture_pos, _ = self._sim.task.body_pose(fixture)
        offset, dz = self._held_offset(slot, self._yaw)
        z = workspace.TABLE_TOP_Z + height + DROP_CLEARANCE + SHAPE_HEIGHT / 2 - dz
        return np.array([fixture_pos[0] - offset[0], fixture_pos[1] - offset[1], z]), self._yaw

    def _over_object(self, slot: str, base: str) -> tuple[np.ndarray, float]:
        """Release pose putting the carried object on ``base``, turned to match its orientation."""
        task = self._sim.task
        base_pos, base_rot = task.body_pose(base)
        _, carried_rot = task.body_pose(slot)
        period = 2 * math.pi / _SYMMETRY[task.entry(slot)["kind"]]
        turn = _wrap(_yaw_of(base_rot) - _yaw_of(carried_rot), period)
        options = _in_window(self._yaw + turn, period) or [self._yaw + turn]
        yaw = min(options, key=lambda y: abs(y - WRIST_CENTER_YAW))
        offset, dz = self._held_offset(slot, yaw)
        z = workspace.TABLE_TOP_Z + SHAPE_HEIGHT + 0.005 + SHAPE_HEIGHT / 2 - dz
        return np.array([base_pos[0] - offset[0], base_pos[1] - offset[1], z]), yaw


def _yaw_of(rotation: np.ndarray) -> float:
    """Heading of a frame's x axis in the world xy-plane (the finger direction for the grip site)."""
    return math.atan2(rotation[1, 0], rotation[0, 0])


def _wrap(angle: float, period: float) -> float:
    """``angle`` shifted by whole periods into ``[-period/2, period/2)``."""
    return (angle + period / 2) % period - period / 2


def _in_window(yaw: float, period: float) -> list[float]:
    """Every ``yaw + k * period`` inside the wrist's safe window."""
    lo, hi = WRIST_WINDOW
    first = yaw + period * math.ceil((lo - yaw) / period)
    return [first + k * period for k in range(int((hi - first) // period) + 1)]
