"""Plan execution through the generic wrapper and the runner's ActionStream, on a kinematic pose env.

The env integrates camera-frame motions exactly, so what a plan does can be checked against
``plan_to_trajectory``; family envs (CALVIN, navigation, LIBERO, manipulation) have their own tests.
"""

import gymnasium as gym
import numpy as np
import pytest

from action_mapping import (
    ExecutablePlan,
    Plan,
    PlanStep,
    Primitive,
    StepSizes,
    parse_plan,
    plan_to_trajectory,
)
from benchmarks.core.episode import ActionStream
from envs.wrappers import SpatialActionWrapper
from policies.base import EpisodeContext, Policy

SIZES = StepSizes(0.05, 0.1)


class PoseEnv(gym.Env):
    """A camera whose native action is a 4x4 body-frame motion; reward 1 per step."""

    observation_space = gym.spaces.Box(-np.inf, np.inf, (16,), np.float64)
    action_space = gym.spaces.Box(-np.inf, np.inf, (4, 4), np.float64)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.pose, self.steps = np.eye(4), 0
        return self.pose.ravel().copy(), {}

    def step(self, action):
        self.pose, self.steps = self.pose @ action, self.steps + 1
        return self.pose.ravel().copy(), 1.0, False, self.steps >= 3, {"steps": self.steps}

    def native_actions(self, motion):
        return [motion.as_matrix()]


def test_wrapper_runs_model_text_like_plan_to_trajectory():
    env = SpatialActionWrapper(PoseEnv(), SIZES)
    env.reset(seed=0)
    text = '{"step_1": {"actions": ["W", "→"], "step_nums": [4, 2]}, "step_2": {"actions": ["A"], "step_nums": [1]}}'
    obs, reward, _terminated, _truncated, info = env.step(text)
    expected = plan_to_trajectory(parse_plan(text), np.eye(4), SIZES.translation, SIZES.rotation)[-1]
    np.testing.assert_allclose(obs.reshape(4, 4), expected, atol=1e-12)
    assert reward == 2.0 and info["native_steps"] == 2 and info["plan_errors"] == []


def test_wrapper_stops_at_truncation_and_rejects_empty_plans():
    env = SpatialActionWrapper(PoseEnv(), SIZES)
    env.reset()
    plan = Plan(steps=[PlanStep([Primitive.DOLLY_IN], [1])] * 5)
    *_, truncated, info = env.step(plan)
    assert truncated and info["native_steps"] == 3
    with pytest.raises(ValueError, match="no executable step"):
        env.step("I do not know")


class ScriptedPlanPolicy(Policy):
    name = "scripted-plan"

    def __init__(self, outputs):
        self.outputs = list(outputs)

    def reset(self, context):
        pass

    def act(self, observation):
        return self.outputs.pop(0)


def test_action_stream_executes_plans_open_loop_then_asks_again():
    env = PoseEnv()
    env.reset()
    plan = Plan(
        steps=[
            PlanStep([Primitive.DOLLY_IN], [1]),
            PlanStep([Primitive.STOP], [1]),
            PlanStep([Primitive.PAN_LEFT], [2]),
        ],
        step_sizes=SIZES,
    )
    native = np.eye(4)
    policy = ScriptedPlanPolicy([plan, native, Plan(steps=[])])
    policy.reset(EpisodeContext("go", 0))
    stream = ActionStream(env, policy)
    actions = [stream.next_action({}) for _ in range(3)]
    assert stream.policy_calls == 2  # the plan's two motion steps, then the native action
    np.testing.assert_allclose(actions[0][:3, 3], [0, 0, 0.05])
    np.testing.assert_allclose(actions[2], native)
    assert stream.next_action({}) is None  # an empty plan asks for no motion


def test_motion_without_units_cannot_reach_execution():
    """Regression (issue 16): plans without step sizes died deep in a chain with a ValueError. Now the
    executable form cannot be built without units, and a policy's bare Plan is checked as it is returned."""
    motion = PlanStep([Primitive.DOLLY_IN], [1])
    with pytest.raises(TypeError, match="needs step sizes"):
        ExecutablePlan((motion,), None)
    with pytest.raises(TypeError, match="must be a StepSizes"):
        ExecutablePlan((motion,), (0.01, 0.05))
    env = PoseEnv()
    env.reset()
    stream = ActionStream(env, ScriptedPlanPolicy([Plan(steps=[motion])]))
    with pytest.raises(TypeError, match="needs step sizes"):
        stream.next_action({})
    # steps that do not move need no units (STOP with a gripper state, EB ids)
    assert ExecutablePlan((PlanStep([Primitive.STOP], [1], gripper=1),), None).step_sizes is None
    executable = Plan(steps=[motion]).executable(SIZES)
    assert executable.step_sizes == SIZES and Plan(steps=[motion], step_sizes=StepSizes(1, 1)).executable(
        SIZES
    ).step_sizes == StepSizes(1, 1)


def test_wrapper_takes_the_env_units_or_refuses():
    class UnitEnv(PoseEnv):
        plan_step_sizes = SIZES

    assert SpatialActionWrapper(UnitEnv()).step_sizes == SIZES
    with pytest.raises(TypeError, match="declares no plan_step_sizes"):
        SpatialActionWrapper(PoseEnv())


def test_every_family_env_implements_the_plan_execution_contract():
    import importlib

    from envs.wrappers import HoldsStill, PlanExecutor

    # value: has a hold-still action
    families = {
        "envs.calvin.env:PlayTableEnv": True,
        "envs.calvin.official:OfficialPlayTableEnv": True,
        "envs.libero.env:LiberoEnv": True,
        "envs.navigation.env:EBNavigationEnv": False,
        "envs.manipulation.env:EBManipulationEnv": False,
    }
    for entry, holds in families.items():
        module, name = entry.split(":")
        try:
            cls = getattr(importlib.import_module(module), name)
        except ImportError as err:  # an optional simulator extra is missing here
            pytest.skip(f"{entry}: {err}")
        assert issubclass(cls, PlanExecutor), entry
        assert issubclass(cls, HoldsStill) is holds, entry
    assert issubclass(PoseEnv, PlanExecutor) and not issubclass(PoseEnv, HoldsStill)

    class NoPlans(gym.Env):
        action_space = gym.spaces.Discrete(2)

    assert not issubclass(NoPlans, PlanExecutor)
    with pytest.raises(TypeError, match="does not implement native_actions"):
        from envs.wrappers import expand_plan_step

        plan = ExecutablePlan((PlanStep([Primitive.DOLLY_IN], [1]),), SIZES)
        expand_plan_step(NoPlans(), plan, 0)
