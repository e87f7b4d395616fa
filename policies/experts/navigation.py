"""Privileged shortest-path expert for the navigation env: breadth-first over (x, y, heading) with EB's moves."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from envs.navigation.planner import Lattice
from envs.navigation.scene import house_bounds
from policies.base import EpisodeContext, Policy

if TYPE_CHECKING:
    import gymnasium as gym

    from envs.navigation.env import EBNavigationEnv
    from envs.navigation.world import AgentPose

# EB id -> the same motion as a continuous [truck, pedestal, dolly, tilt, pan, roll] action.
_AS_CONTINUOUS = {
    0: (0, 0, 0.25, 0, 0, 0),
    1: (0, 0, -0.25, 0, 0, 0),
    2: (0.25, 0, 0, 0, 0, 0),
    3: (-0.25, 0, 0, 0, 0, 0),
    4: (0, 0, 0, 0, np.pi / 2, 0),
    5: (0, 0, 0, 0, -np.pi / 2, 0),
}


class ShortestPathExpert(Policy):
    """Follows a shortest path to the target on the lattice anchored at the agent's pose.

    Reads the scene, the target and the agent pose from the bound env (privileged). The lattice and its
    steps-to-goal table are built once per episode and rebuilt only if the agent leaves the lattice (a
    continuous action that does not land on it). Returns EB action ids, or the equivalent continuous
    actions for ``action_mode="continuous"``.
    """

    name = "nav_shortest_path_expert"
    privileged = True

    def __init__(self) -> None:
        self._env: gym.Env | None = None
        self._lattice: Lattice | None = None
        self._dist: np.ndarray | None = None
        self._key: tuple[Any, ...] | None = None
        self._replans = 0
        self._stuck = 0

    def bind(self, env: gym.Env) -> None:
        self._env = env

    def _nav(self) -> EBNavigationEnv:
        if self._env is None:
            raise RuntimeError("ShortestPathExpert needs bind(env) before it plans")
        return cast("EBNavigationEnv", self._env.unwrapped)  # privileged: reads the navigation env's world

    def reset(self, context: EpisodeContext) -> None:
        self._lattice, self._dist, self._key = None, None, None
        self._replans, self._stuck = 0, 0

    def act(self, observation: Mapping[str, Any]) -> np.ndarray:
        if self._env is None:
            raise RuntimeError("ShortestPathExpert needs bind(env) before act()")
        nav = self._nav()
        action = self._next_action(nav)
        if nav.action_mode == "continuous":
            return np.asarray(_AS_CONTINUOUS[action], dtype=np.float32)
        return np.asarray(action, dtype=np.int64)

    def remaining_plan(self) -> list[int]:
        """The whole shortest sequence of EB action ids from the agent's current pose to success (privileged):
        what :meth:`act` sends step by step while nothing goes wrong. ``[5]`` (turn) where no path exists."""
        if self._env is None:
            raise RuntimeError("ShortestPathExpert needs bind(env) before remaining_plan()")
        state = self._state(self._nav())
        assert self._lattice is not None and self._dist is not None
        actions = self._lattice.plan(self._dist, *state)
        if not actions:
            self._stuck += 1
            return [5]
        return actions

    def _state(self, nav: EBNavigationEnv) -> tuple[int, int]:
        """The agent's lattice state, (re)planning when the episode changed or the agent left the lattice."""
        pose, target = nav.agent_pose, nav.target
        state = self._locate(pose)
        key = (nav.world.key, target["id"])
        if state is None or key != self._key:
            self._plan(nav, pose, target, key)
            state = self._locate(pose)
        assert state is not None
        return state

    def _next_action(self, nav: EBNavigationEnv) -> int:
        state = self._state(nav)
        assert self._lattice is not None and self._dist is not None
        action = self._lattice.best_action(self._dist, *state)
        if action is None:  # unreachable from here (or already there): turn in place, and say so in the stats
            self._stuck += 1
            return 5
        return action

    def _plan(
        self, nav: EBNavigationEnv, pose: AgentPose, target: dict[str, Any], key: tuple[Any, ...]
    ) -> None:
        world = nav.world
        self._lattice = Lattice.build(world.obstacles, house_bounds(world.scene), pose.xy, pose.heading_deg)
        self._dist = self._lattice.steps_to_goal(target["position"][:2], nav.success_distance)
        self._key = key
        self._replans += 1

    def _locate(self, pose: AgentPose) -> tuple[int, int] | None:
        if self._lattice is None:
            return None
        node, k = self._lattice.nearest(pose.xy), self._lattice.heading_index(pose.heading_deg)
        return None if node is None or k is None else (node, k)

    def episode_stats(self) -> dict[str, float]:
        return {"expert_replans": float(self._replans), "expert_stuck_steps": float(self._stuck)}
