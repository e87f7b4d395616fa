"""LeRobot's env-hub contract for every family: ``make_env(n_envs, use_async_envs)`` returns
``{suite: {task_id: gym.vector.VectorEnv}}``.

What LeRobot's evaluation reads, and where it comes from here:

- observations: ``pixels`` (a dict of cameras, H x W x 3 uint8: ``observation.images.<camera>``),
  ``agent_pos`` (float32: ``observation.state``) and, for CALVIN, ``environment_state`` (``scene_obs``:
  ``observation.environment_state``). Camera and state names are those of this project's LeRobot datasets
  (``demos``), so a policy trained on them reads these observations unchanged. Text observations are not
  batched into ``observation.*``: the language goal is ``task_description``.
- sub-env attributes read through ``env.call``: ``task_description`` (the current episode's instruction),
  ``task`` (the task's short name) and ``_max_episode_steps``; ``render()`` gives RGB frames.
- ``info["is_success"]`` after every reset and step; actions are ``Box`` arrays (EB-Manipulation's
  discrete indices are rounded from floats, EB-Navigation runs its continuous variant).
- autoreset: gymnasium's ``NEXT_STEP`` mode (the step after an episode ends returns the next episode's
  first observation, with ``reward`` 0 and the reset's ``info``).
- async sub-envs start in a fresh interpreter (``forkserver``), and no env makes a GL context before it
  renders: a worker never inherits the parent's.

Suites: ``calvin`` (task ids: indices into :data:`envs.calvin.instructions.CALVIN_TASKS`; the 27 tasks
that CALVIN's evaluation can start from an initial scene, which is drawn per episode among those it
accepts for the task), ``libero_spatial`` ... ``libero_90`` (task ids: LIBERO's task indices),
``eb_navigation`` (task ids: instruction subsets) and ``eb_manipulation`` (task ids: task families).
Vector envs are built at their first use, so a dict over every suite costs one template env per suite.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode
from gymnasium.vector.utils import batch_space

from envs.libero import protocol as libero_protocol
from envs.rendering import RENDER_SAFE_START

AUTORESET_MODE = AutoresetMode.NEXT_STEP
#: Reset options that LeRobot's rollout sends and no env of ours reads.
FOREIGN_OPTIONS = ("lerobot_new_rollout",)
CALVIN_MAX_STEPS = 360  # CALVIN's budget per subtask
EB_NAVIGATION_MAX_STEPS = 20
EB_MANIPULATION_MAX_STEPS = 15

Observation = dict[str, Any]
StateFn = Callable[[Observation, dict[str, Any]], np.ndarray]
OptionsFn = Callable[[np.random.Generator], dict[str, Any]]


@dataclass(frozen=True)
class Layout:
    """How a family's observation becomes LeRobot's: camera keys -> ``pixels`` names, and the state."""

    cameras: Mapping[str, str]
    state: StateFn
    state_size: int
    environment_state: StateFn | None = None
    environment_state_size: int = 0


@dataclass(frozen=True)
class HubTask:
    """One task of a suite: the registered env that runs it and what the contract says about it."""

    suite: str
    task_id: int
    name: str
    env_id: str
    layout: Layout
    max_episode_steps: int
    description: str | None = None  # None: the episode's own instruction
    env_kwargs: Mapping[str, Any] = field(default_factory=dict)
    reset_options: OptionsFn | None = None
    discrete_actions: bool = False


class HubEnv(gym.Wrapper):
    """One sub-env of the contract: LeRobot's observation keys, ``task_description``, ``task``,
    ``_max_episode_steps`` and a step budget (truncated at ``_max_episode_steps``)."""

    def __init__(self, env: gym.Env, task: HubTask) -> None:
        super().__init__(env)
        self.hub_task, self.task = task, task.name
        self._max_episode_steps = task.max_episode_steps
        self.observation_space = _observation_space(env.observation_space, task.layout)
        if task.discrete_actions:
            nvec = np.asarray(env.action_space.nvec)  # type: ignore[attr-defined]
            self.action_space = spaces.Box(0.0, (nvec - 1).astype(np.float32), dtype=np.float32)
        self._rng: np.random.Generator | None = None
        self._steps, self._instruction = 0, task.description or ""

    @property
    def task_description(self) -> str:
        """The language goal of the current episode (LeRobot's ``observation["task"]``)."""
        return self.hub_task.description or self._instruction

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Observation, dict[str, Any]]:
        if seed is not None or self._rng is None:
            self._rng = np.random.default_rng(seed)
        chosen = {k: v for k, v in (options or {}).items() if k not in FOREIGN_OPTIONS}
        if self.hub_task.reset_options is not None:
            chosen = {**self.hub_task.reset_options(self._rng), **chosen}
        obs, info = self.env.reset(seed=seed, options=chosen or None)
        self._steps = 0
        return self._observation(obs, info), _with_success(info)

    def step(self, action: Any) -> tuple[Observation, float, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = self.env.step(self._native(action))
        self._steps += 1
        truncated = bool(truncated) or (not terminated and self._steps >= self._max_episode_steps)
        return self._observation(obs, info), float(reward), bool(terminated), truncated, _with_success(info)

    def _native(self, action: Any) -> Any:
        if not self.hub_task.discrete_actions:
            return action
        box = self.action_space
        assert isinstance(box, spaces.Box)
        return np.rint(np.clip(np.asarray(action, dtype=np.float64), box.low, box.high)).astype(np.int64)

    def _observation(self, obs: Observation, info: dict[str, Any]) -> Observation:
        layout = self.hub_task.layout
        if isinstance(obs.get("instruction"), str):
            self._instruction = obs["instruction"]
        out: Observation = {
            "pixels": {name: obs[key] for key, name in layout.cameras.items()},
            "agent_pos": np.asarray(layout.state(obs, info), dtype=np.float32),
        }
        if layout.environment_state is not None:
            out["environment_state"] = np.asarray(layout.environment_state(obs, info), dtype=np.float32)
        return out


def _with_success(info: dict[str, Any]) -> dict[str, Any]:
    return {**info, "is_success": bool(info.get("is_success", False))}


def _observation_space(native: gym.Space, layout: Layout) -> spaces.Dict:
    assert isinstance(native, spaces.Dict), "every family observes a Dict"
    entries: dict[str, gym.Space] = {
        "pixels": spaces.Dict({name: native[key] for key, name in layout.cameras.items()}),
        "agent_pos": spaces.Box(-np.inf, np.inf, (layout.state_size,), np.float32),
    }
    if layout.environment_state is not None:
        size = layout.environment_state_size
        entries["environment_state"] = spaces.Box(-np.inf, np.inf, (size,), np.float32)
    return spaces.Dict(entries)


# ------------------------------------------------------------------------------------ vector envs


def make_hub_env(task: HubTask, **overrides: Any) -> HubEnv:
    """One contract sub-env of ``task`` (``render_mode="rgb_array"``; ``overrides`` go to the env)."""
    kwargs = {"render_mode": "rgb_array", **task.env_kwargs, **overrides}
    return HubEnv(gym.make(task.env_id, **kwargs).unwrapped, task)


class LazyVectorEnv(gym.vector.VectorEnv):
    """A Sync or Async vector env of ``n_envs`` sub-envs, built at the first reset, step or call.

    A dict over every suite then holds no simulator and no worker process until a task is evaluated
    (LeRobot evaluates tasks one after the other); ``close()`` frees the task's sub-envs.
    """

    def __init__(self, env_fns: Sequence[Callable[[], gym.Env]], use_async: bool, template: gym.Env) -> None:
        self.env_fns, self.use_async = list(env_fns), bool(use_async)
        self.num_envs = len(self.env_fns)
        self.single_observation_space = template.observation_space
        self.single_action_space = template.action_space
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self.metadata = {**template.metadata, "autoreset_mode": AUTORESET_MODE}
        self.render_mode = template.render_mode
        self._vector: gym.vector.VectorEnv | None = None

    @property
    def built(self) -> bool:
        """Whether the sub-envs exist (after the first reset, step or call, until ``close``)."""
        return self._vector is not None

    def vector(self) -> gym.vector.VectorEnv:
        """The underlying Sync/Async vector env (built now if it is not yet)."""
        if self._vector is None:
            if self.use_async:
                self._vector = gym.vector.AsyncVectorEnv(
                    self.env_fns, context=RENDER_SAFE_START, autoreset_mode=AUTORESET_MODE
                )
            else:
                self._vector = gym.vector.SyncVectorEnv(self.env_fns, autoreset_mode=AUTORESET_MODE)
        return self._vector

    def reset(
        self, *, seed: int | list[int | None] | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        return self.vector().reset(seed=seed, options=options)  # type: ignore[arg-type]

    def step(self, actions: Any) -> tuple[Any, Any, Any, Any, dict[str, Any]]:
        return self.vector().step(actions)

    def call(self, name: str, *args: Any, **kwargs: Any) -> tuple[Any, ...]:
        return self.vector().call(name, *args, **kwargs)  # type: ignore[attr-defined]

    def get_attr(self, name: str) -> tuple[Any, ...]:
        return self.vector().get_attr(name)  # type: ignore[attr-defined]

    def set_attr(self, name: str, values: Any) -> None:
        self.vector().set_attr(name, values)  # type: ignore[attr-defined]

    def render(self) -> tuple[Any, ...] | None:
        return self.vector().render()

    def close_extras(self, **kwargs: Any) -> None:
        if self._vector is not None:
            self._vector.close()
            self._vector = None


def vector_env(
    task: HubTask, n_envs: int, use_async: bool, template: gym.Env, **overrides: Any
) -> LazyVectorEnv:
    """A lazily built vector env of ``n_envs`` contract sub-envs of ``task``."""
    make = functools.partial(make_hub_env, task, **overrides)
    return LazyVectorEnv([make] * n_envs, use_async, template)


# ------------------------------------------------------------------------------------ the suites


def _calvin_state(obs: Observation, info: dict[str, Any]) -> np.ndarray:
    return np.asarray(obs["robot_obs"])


def _calvin_scene(obs: Observation, info: dict[str, Any]) -> np.ndarray:
    return np.asarray(obs["scene_obs"])


def _libero_state(obs: Observation, info: dict[str, Any]) -> np.ndarray:
    return np.asarray(obs["state"])


def _navigation_state(obs: Observation, info: dict[str, Any]) -> np.ndarray:
    """Where the agent is: x, y (metres), heading and camera tilt (degrees)."""
    agent = info["snapshot"]["agent"]
    return np.array([agent["x"], agent["y"], agent["heading_deg"], agent["pitch_deg"]])


def _manipulation_state(obs: Observation, info: dict[str, Any]) -> np.ndarray:
    """The grip point (x, y, z, metres) and whether the gripper is closed (1) or open (0)."""
    snapshot = info["snapshot"]
    return np.array([*snapshot["grip_position"], float(snapshot["gripper_closed"])])


CALVIN_LAYOUT = Layout(
    {"rgb_static": "rgb_static", "rgb_gripper": "rgb_gripper"}, _calvin_state, 15, _calvin_scene, 24
)
LIBERO_LAYOUT = Layout(
    {"agentview_image": "agentview_rgb", "eye_in_hand_image": "eye_in_hand_rgb"}, _libero_state, 8
)
NAVIGATION_LAYOUT = Layout({"rgb": "rgb"}, _navigation_state, 4)
MANIPULATION_LAYOUT = Layout(
    {"front_rgb": "front_rgb", "wrist_rgb": "wrist_rgb", "overhead_rgb": "overhead_rgb"},
    _manipulation_state,
    4,
)


def calvin_task_options(task: str, rng: np.random.Generator) -> dict[str, Any]:
    """Reset options starting ``task`` from one of the initial scenes CALVIN's evaluation accepts for it."""
    from envs.calvin.sequences import initial_env_state

    states = calvin_start_states(task)
    robot_obs, scene_obs = initial_env_state(states[int(rng.integers(len(states)))])
    return {"robot_obs": robot_obs, "scene_obs": scene_obs, "task": task}


@functools.cache
def calvin_start_states(task: str) -> tuple[dict[str, Any], ...]:
    """The symbolic initial states of CALVIN's evaluation from which ``task`` can start (may be none)."""
    from envs.calvin.sequences import is_valid_chain, symbolic_initial_states

    return tuple(s for s in symbolic_initial_states() if is_valid_chain(s, [task]))


def calvin_tasks() -> dict[int, HubTask]:
    """The ``calvin`` suite: every CALVIN task that can start an episode, keyed by its index."""
    from envs.calvin.instructions import CALVIN_TASKS, instruction_for

    return {
        index: HubTask(
            "calvin",
            index,
            name,
            "SpatialArena/CalvinPlayTable-v0",
            CALVIN_LAYOUT,
            CALVIN_MAX_STEPS,
            description=instruction_for(name),
            reset_options=functools.partial(calvin_task_options, name),
        )
        for index, name in enumerate(CALVIN_TASKS)
        if calvin_start_states(name)
    }


def libero_tasks(suite: str, image_size: int | None = None) -> dict[int, HubTask]:
    """One LIBERO suite: its tasks by LIBERO's index, at the protocol's image size unless given."""
    from envs.libero.tasks import load_task

    size = {} if image_size is None else {"image_size": image_size}
    tasks = {}
    for index in range(libero_protocol.TASK_COUNTS[suite]):
        task = load_task(suite, index)
        tasks[index] = HubTask(
            suite,
            index,
            task.name,
            libero_protocol.env_id(suite, index),
            LIBERO_LAYOUT,
            libero_protocol.MAX_STEPS[suite],
            description=task.instruction,
            env_kwargs=size,
        )
    return tasks


def navigation_tasks(image_size: int | None = None) -> dict[int, HubTask]:
    """``eb_navigation``: one task per instruction subset, continuous actions (a ``Box``)."""
    from envs.navigation.instructions import SUBSETS

    size = {} if image_size is None else {"width": image_size, "height": image_size}
    return {
        index: HubTask(
            "eb_navigation",
            index,
            subset,
            "SpatialArena/EBNavigation-Continuous-v0",
            NAVIGATION_LAYOUT,
            EB_NAVIGATION_MAX_STEPS,
            env_kwargs={"subset": subset, **size},
        )
        for index, subset in enumerate(SUBSETS)
    }


def manipulation_tasks(image_size: int | None = None, subset: str = "base") -> dict[int, HubTask]:
    """``eb_manipulation``: one task per task family (pick, stack, place, wipe) on ``subset``'s episodes."""
    from envs.manipulation.registration import FAMILY_IDS

    size = {} if image_size is None else {"image_size": image_size}
    return {
        index: HubTask(
            "eb_manipulation",
            index,
            family,
            env_id,
            MANIPULATION_LAYOUT,
            EB_MANIPULATION_MAX_STEPS,
            env_kwargs={"subset": subset, **size},
            discrete_actions=True,
        )
        for index, (family, env_id) in enumerate(FAMILY_IDS.items())
    }


SUITES: tuple[str, ...] = ("calvin", *libero_protocol.SUITES, "eb_navigation", "eb_manipulation")


def suite_tasks(suite: str, image_size: int | None = None) -> dict[int, HubTask]:
    """The tasks of one suite of :data:`SUITES`; ``ValueError`` naming the suite otherwise."""
    if suite == "calvin":
        return calvin_tasks()
    if suite in libero_protocol.SUITES:
        return libero_tasks(suite, image_size)
    if suite == "eb_navigation":
        return navigation_tasks(image_size)
    if suite == "eb_manipulation":
        return manipulation_tasks(image_size)
    raise ValueError(f"unknown suite {suite!r}; choose among {', '.join(SUITES)}")


def make_env(
    n_envs: int = 1,
    use_async_envs: bool = False,
    *,
    suites: Iterable[str] | None = None,
    task_ids: Iterable[int] | None = None,
    image_size: int | None = None,
) -> dict[str, dict[int, gym.vector.VectorEnv]]:
    """LeRobot's env-hub entry point: ``{suite: {task_id: VectorEnv}}`` of ``n_envs`` sub-envs each.

    ``suites`` (default: all of :data:`SUITES`), ``task_ids`` (default: every task of each suite) and
    ``image_size`` (LIBERO and the EB families; CALVIN's cameras have CALVIN's sizes) narrow it down.
    Vector envs are built at first use; close each when done (``close()``).
    """
    if isinstance(n_envs, bool) or not isinstance(n_envs, int) or n_envs < 1:
        raise ValueError(f"n_envs must be a positive int, got {n_envs!r}")
    chosen = None if task_ids is None else set(task_ids)
    result: dict[str, dict[int, gym.vector.VectorEnv]] = {}
    for suite in SUITES if suites is None else list(suites):
        tasks = suite_tasks(suite, image_size)
        picked = {i: t for i, t in tasks.items() if chosen is None or i in chosen}
        if not picked:
            raise ValueError(
                f"task_ids {sorted(chosen or [])} name no task of {suite} (it has {sorted(tasks)})"
            )
        template = make_hub_env(next(iter(picked.values())))
        try:
            result[suite] = {i: vector_env(t, n_envs, use_async_envs, template) for i, t in picked.items()}
        finally:
            template.close()
    return result
