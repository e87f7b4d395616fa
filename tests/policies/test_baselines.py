import json

import gymnasium as gym
import numpy as np
import pytest

from action_mapping import Plan
from policies.base import EpisodeContext, Policy
from policies.baselines import ConstantPolicy, RandomPolicy, ReplayPolicy
from policies.user import InstructionPolicy, load_user_policy


class Spaces:
    def __init__(self, space):
        self.action_space = space


SPACES = [
    gym.spaces.Box(-1, 1, (7,), np.float32),
    gym.spaces.Discrete(8),
    gym.spaces.Discrete(3, start=-1),
    gym.spaces.MultiDiscrete([100, 100, 100, 120, 120, 120, 2]),
    gym.spaces.MultiBinary(5),
    gym.spaces.Box(0, 5, (3,), np.int64),
    gym.spaces.Box(np.array([-np.inf, 0.0, -np.inf]), np.array([np.inf, np.inf, 1.0]), dtype=np.float64),
    gym.spaces.Tuple([gym.spaces.Discrete(2), gym.spaces.Box(0, 1, (2,), np.float32)]),
    gym.spaces.Dict({"arm": gym.spaces.Box(-1, 1, (3,), np.float32), "grip": gym.spaces.Discrete(2)}),
]


@pytest.mark.parametrize("space", SPACES, ids=lambda s: type(s).__name__)
def test_random_policy_is_seeded_and_in_space(space):
    def rollout(seed):
        policy = RandomPolicy()
        policy.bind(Spaces(space))
        policy.reset(EpisodeContext("x", seed))
        return [policy.act({}) for _ in range(20)]

    a, b, c = rollout(3), rollout(3), rollout(4)
    assert all(space.contains(x) for x in a)
    assert repr(a) == repr(b) and repr(a) != repr(c)


def test_random_policy_draws_every_value_of_a_discrete_space():
    policy = RandomPolicy()
    policy.bind(Spaces(gym.spaces.MultiDiscrete([2, 3])))
    policy.reset(EpisodeContext("x", 0))
    seen = {tuple(policy.act({})) for _ in range(200)}
    assert seen == {(i, j) for i in range(2) for j in range(3)}


def test_random_policy_refuses_an_unknown_space():
    policy = RandomPolicy()
    policy.bind(Spaces(gym.spaces.Text(5)))
    policy.reset(EpisodeContext("x", 0))
    with pytest.raises(TypeError, match="RandomPolicy supports Discrete, MultiDiscrete"):
        policy.act({})


@pytest.mark.parametrize(
    ("space", "value", "expected"),
    [
        (gym.spaces.Discrete(8), 0, 0),
        (gym.spaces.Discrete(8), 4.0, 4),
        (
            gym.spaces.MultiDiscrete([100, 100, 100, 120, 120, 120, 2]),
            [50, 50, 50, 0, 60, 90, 1],
            [50, 50, 50, 0, 60, 90, 1],
        ),
        (gym.spaces.Box(-1, 1, (7,), np.float32), [0, 0, 1, 0, 0, 0, -1], [0, 0, 1, 0, 0, 0, -1]),
    ],
)
def test_constant_policy_sends_one_action_in_the_space(space, value, expected):
    policy = ConstantPolicy(value)
    policy.bind(Spaces(space))
    policy.reset(EpisodeContext("x", 0))
    actions = [policy.act({}) for _ in range(3)]
    assert all(space.contains(a) and np.array_equal(a, expected) for a in actions)
    if isinstance(actions[0], np.ndarray):
        actions[0][0] = 1  # the caller's copy: the next action is unchanged
        assert np.array_equal(policy.act({}), expected)
    assert policy.describe()["action"] == value


@pytest.mark.parametrize(
    ("space", "value"),
    [
        (gym.spaces.Discrete(8), 8),
        (gym.spaces.Discrete(8), 1.5),
        (gym.spaces.Discrete(8), [0]),
        (gym.spaces.MultiDiscrete([3, 3]), [1, 2.5]),
        (gym.spaces.MultiDiscrete([3, 3]), [1, 2, 0]),
        (gym.spaces.Box(-1, 1, (7,), np.float32), [2, 0, 0, 0, 0, 0, 0]),
    ],
)
def test_constant_policy_rejects_actions_outside_the_space(space, value):
    with pytest.raises(ValueError, match=r"--action .* is not an action of the env's space"):
        ConstantPolicy(value).bind(Spaces(space))


def test_constant_policy_from_the_command_line():
    from benchmarks.core.policy_cli import build_policy_from_spec, parse_benchmark_args
    from benchmarks.embodied import EmbodiedConfig

    _, spec = parse_benchmark_args(EmbodiedConfig, ["--policy", "constant", "--action", "[0, 0.5, -1]"])
    assert spec.options == {"action": [0, 0.5, -1]} and spec.label == "constant-0_0.5_-1"
    assert isinstance(build_policy_from_spec(spec), ConstantPolicy)
    for bad in ([], ["--action", "forward"], ["--action", "[true]"]):
        with pytest.raises(SystemExit):
            parse_benchmark_args(EmbodiedConfig, ["--policy", "constant", *bad])


def test_random_policy_needs_the_env():
    with pytest.raises(RuntimeError, match="bind"):
        RandomPolicy().reset(EpisodeContext("x", 0))


def test_replay_from_jsonl_by_key_then_empty_plan(tmp_path):
    path = tmp_path / "actions.jsonl"
    path.write_text(
        "\n".join(
            json.dumps({"key": k, "actions": [[i] * 7 for i in range(n)]})
            for k, n in [("chain-0/0", 2), ("chain-0/1", 1)]
        )
    )
    policy = ReplayPolicy.from_file(path)
    policy.reset(EpisodeContext("x", 0, extras={"replay_key": "chain-0/0"}))
    assert [policy.act({})[0] for _ in range(2)] == [0, 1]
    assert isinstance(policy.act({}), Plan) and not policy.act({}).steps
    with pytest.raises(KeyError, match=r"no recorded actions for episode .chain-9/0. \(nor .demo_None.\)"):
        policy.reset(EpisodeContext("x", 0, extras={"replay_key": "chain-9/0"}))


def test_replay_from_npz_and_bad_files(tmp_path):
    np.savez(tmp_path / "ep.npz", rel_actions=np.ones((3, 7)))
    policy = ReplayPolicy.from_file(tmp_path / "ep.npz")
    policy.reset(EpisodeContext("x", 0))
    assert policy.act({}).shape == (7,)
    np.savez(tmp_path / "bad.npz", other=np.ones(3))
    with pytest.raises(ValueError, match="no 'actions' or 'rel_actions'"):
        ReplayPolicy.from_file(tmp_path / "bad.npz")
    with pytest.raises(FileNotFoundError, match="does not exist"):
        ReplayPolicy.from_file(tmp_path / "missing.jsonl")


def test_user_policy_by_import_path():
    policy = load_user_policy("tests.user_policy_example:ConstantModel", {"value": 0.25})
    assert isinstance(policy, InstructionPolicy) and isinstance(policy, Policy)
    policy.reset(EpisodeContext("open the drawer", 0))
    np.testing.assert_allclose(policy.act({}), 0.25)
    assert policy.model.resets == 1
    assert policy.describe()["model_class"] == "tests.user_policy_example.ConstantModel"


@pytest.mark.parametrize(
    ("spec", "error"),
    [
        ("no_colon", "package.module:ClassOrFactory"),
        ("tests.does_not_exist:X", "cannot import"),
        ("tests.user_policy_example:Missing", "has no attribute"),
        ("json:JSONDecoder", "neither a policies.base.Policy"),
    ],
)
def test_user_policy_errors(spec, error):
    with pytest.raises((ValueError, ImportError, AttributeError, TypeError), match=error):
        load_user_policy(spec)


def test_policy_subclass_must_name_itself():
    with pytest.raises(TypeError, match="must define a class attribute `name"):

        class Nameless(Policy):
            def reset(self, context): ...
            def act(self, observation): ...
