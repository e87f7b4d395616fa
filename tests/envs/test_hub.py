"""``envs.hub.make_env``: LeRobot's env-hub contract (tests/envs/lerobot_contract.py) for every family."""

from __future__ import annotations

import importlib.util
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces

from envs.calvin.instructions import CALVIN_TASKS, instruction_for
from envs.calvin.sequences import is_valid_chain
from envs.hub import (
    SUITES,
    HubEnv,
    HubTask,
    Layout,
    LazyVectorEnv,
    calvin_start_states,
    calvin_tasks,
    make_env,
    navigation_tasks,
    vector_env,
)
from tests.envs.lerobot_contract import LEROBOT_NEW_ROLLOUT, check_hub_result, check_vector_env

NO_LIBERO = pytest.mark.skipif(importlib.util.find_spec("libero") is None, reason="LIBERO is not installed")
SUITE_CASES = [
    pytest.param("calvin", False, id="calvin-sync"),
    pytest.param("eb_navigation", False, id="eb_navigation-sync"),
    pytest.param("eb_manipulation", False, id="eb_manipulation-sync", marks=pytest.mark.slow),
    pytest.param("libero_spatial", False, id="libero_spatial-sync", marks=[pytest.mark.slow, NO_LIBERO]),
    pytest.param("eb_navigation", True, id="eb_navigation-async", marks=pytest.mark.slow),
    pytest.param("calvin", True, id="calvin-async", marks=pytest.mark.slow),
    pytest.param("eb_manipulation", True, id="eb_manipulation-async", marks=pytest.mark.slow),
    pytest.param("libero_spatial", True, id="libero_spatial-async", marks=[pytest.mark.slow, NO_LIBERO]),
]


@pytest.mark.parametrize(("suite", "use_async"), SUITE_CASES)
def test_make_env_meets_lerobots_contract(suite, use_async):
    result = make_env(2, use_async, suites=[suite], task_ids=[0], image_size=24)
    try:
        [(name, task_id, env)] = check_hub_result(result)
        assert (name, task_id) == (suite, 0) and isinstance(env, LazyVectorEnv) and not env.built
        seen = check_vector_env(env, steps=2)
        assert env.metadata["autoreset_mode"] == gym.vector.AutoresetMode.NEXT_STEP
        assert seen["keys"]["observation.state"][0] == 2
    finally:
        for tasks in result.values():
            for vec in tasks.values():
                vec.close()
    assert not env.built  # close() freed the sub-envs


def test_calvin_suite_lists_the_tasks_an_episode_can_start_with_their_instructions():
    tasks = calvin_tasks()
    assert len(tasks) == 27 and all(CALVIN_TASKS[i] == t.name for i, t in tasks.items())
    assert {"stack_block", "place_in_slider", "lift_red_block_drawer"}.isdisjoint(
        t.name for t in tasks.values()
    )
    for task in tasks.values():
        assert task.description == instruction_for(task.name) and task.max_episode_steps == 360
        assert all(is_valid_chain(s, [task.name]) for s in calvin_start_states(task.name))


def test_calvin_sub_envs_start_their_task_from_a_seeded_valid_scene():
    """Each CALVIN episode (also after an autoreset) is scored on the vector's task, from a scene drawn
    by the sub-env's seed; a reset with LeRobot's own option is accepted."""
    task = calvin_tasks()[CALVIN_TASKS.index("open_drawer")]
    first = make_env(2, suites=["calvin"], task_ids=[task.task_id])["calvin"][task.task_id]
    again = make_env(2, suites=["calvin"], task_ids=[task.task_id])["calvin"][task.task_id]
    try:
        obs, info = first.reset(seed=[4, 9], options={LEROBOT_NEW_ROLLOUT: True})
        repeat, _ = again.reset(seed=[4, 9])
        assert list(info["task"]) == ["open_drawer"] * 2 and not info["is_success"].any()
        assert np.array_equal(obs["environment_state"], repeat["environment_state"])
        assert np.all(obs["environment_state"][:, 1] == 0.0)  # the drawer starts closed
        assert first.call("task_description") == (instruction_for("open_drawer"),) * 2
    finally:
        first.close()
        again.close()


def test_success_is_reported_then_the_next_episode_starts_on_the_following_step():
    """``info["is_success"]`` is True on the step that succeeds (``terminated``); with NEXT_STEP autoreset
    the step after it returns the next episode's first observation and reset info: reward 0, not done."""
    task = navigation_tasks(image_size=24)[0]
    template = HubEnv(gym.make(task.env_id, width=24, height=24).unwrapped, task)
    vec = vector_env(task, 2, False, template, success_distance=100.0)  # every move succeeds
    try:
        vec.reset(seed=0)
        still = np.zeros((2, 6), dtype=np.float32)
        _, reward, terminated, _, info = vec.step(still)
        assert terminated.all() and info["is_success"].all() and reward.tolist() == [1.0, 1.0]
        _, reward, terminated, truncated, info = vec.step(still)
        assert not (terminated | truncated).any() and reward.tolist() == [0.0, 0.0]
        assert info["steps"].tolist() == [0, 0] and info["is_success"].dtype == np.bool_
    finally:
        vec.close()
        template.close()


class _Grid(gym.Env):
    """A stand-in with EB-Manipulation's kind of action space (7 indices), to check the Box mapping."""

    observation_space = spaces.Dict({"cam": spaces.Box(0, 255, (4, 4, 3), np.uint8)})
    action_space = spaces.MultiDiscrete([101, 101, 101, 121, 121, 121, 2])
    metadata: ClassVar[dict[str, Any]] = {"render_modes": []}

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:
        super().reset(seed=seed)
        self.options = options
        return {"cam": np.zeros((4, 4, 3), np.uint8)}, {}

    def step(self, action: np.ndarray) -> tuple[dict, float, bool, bool, dict]:
        self.last = action
        return {"cam": np.zeros((4, 4, 3), np.uint8)}, 0.0, False, False, {}


def test_discrete_actions_are_a_box_rounded_and_clipped_to_the_grid_and_budgets_truncate():
    layout = Layout({"cam": "front"}, lambda obs, info: np.zeros(2), 2)
    task = HubTask("s", 0, "t", "unused", layout, max_episode_steps=2, discrete_actions=True)
    env = HubEnv(_Grid(), task)
    assert env.action_space == spaces.Box(0.0, np.array([100, 100, 100, 120, 120, 120, 1], np.float32))
    _, info = env.reset(seed=0, options={LEROBOT_NEW_ROLLOUT: True})
    assert env.env.options is None and info == {"is_success": False}  # LeRobot's option is not passed on
    _, _, _, truncated, _ = env.step(np.array([49.6, -3.0, 100.2, 0.4, 60.5, 119.9, 0.7]))
    assert env.env.last.tolist() == [50, 0, 100, 0, 60, 120, 1] and env.env.last.dtype == np.int64
    assert not truncated and env.step(np.zeros(7))[3]  # the budget (2 steps) truncates
    assert env.get_wrapper_attr("_max_episode_steps") == 2 and env.task_description == ""


def test_make_env_builds_no_sub_env_before_use_and_names_bad_arguments():
    result = make_env(3, suites=["calvin", "eb_navigation"])
    assert set(result) == {"calvin", "eb_navigation"} and len(result["eb_navigation"]) == 5
    assert all(not vec.built and vec.num_envs == 3 for tasks in result.values() for vec in tasks.values())
    with pytest.raises(ValueError, match="n_envs must be a positive int"):
        make_env(0)
    with pytest.raises(ValueError, match="unknown suite 'libero'"):
        make_env(1, suites=["libero"])
    with pytest.raises(ValueError, match="task_ids \\[99\\] name no task of eb_navigation"):
        make_env(1, suites=["eb_navigation"], task_ids=[99])
    assert SUITES[0] == "calvin" and "libero_90" in SUITES and SUITES[-1] == "eb_manipulation"
