"""The EmbodiedBench agent loop with a scripted model: plans, feedback, replanning, errors, fallbacks."""

import json

import numpy as np
import pytest

from action_mapping import Plan, Primitive
from policies.backends import Generation, MalformedResponseError
from policies.backends.cache import CachedBackend
from policies.backends.scripted import ScriptedBackend
from policies.base import EpisodeContext
from policies.mllm.atomic import AtomicPrompting
from policies.mllm.embodied import EBAgentPolicy

OK = "Last action {} executed successfully."


def nav_answer(
    *ids,
    names=(
        "MoveAhead",
        "MoveBack",
        "MoveRight",
        "MoveLeft",
        "RotateRight",
        "RotateLeft",
        "LookUp",
        "LookDown",
    ),
):
    plan = [{"action_id": i, "action_name": names[i] if 0 <= i < 8 else "?"} for i in ids]
    return json.dumps(
        {
            "visual_state_description": "a room",
            "reasoning_and_reflection": "go",
            "language_plan": "walk",
            "executable_plan": plan,
        }
    )


def manip_answer(*vectors):
    return json.dumps(
        {
            "visual_state_description": "a table",
            "reasoning_and_reflection": "grasp",
            "language_plan": "pick",
            "executable_plan": [{"action": str(list(v))} for v in vectors],
        }
    )


def nav_obs(feedback="", seed=0):
    rng = np.random.default_rng(seed)
    return {
        "head_rgb": rng.integers(0, 256, (48, 48, 3), dtype=np.uint8),
        "instruction": "navigate to the apple",
        "feedback": feedback,
    }


def manip_obs(feedback=""):
    rng = np.random.default_rng(1)
    return {
        "front_rgb": rng.integers(0, 256, (40, 40, 3), dtype=np.uint8),
        "wrist_rgb": rng.integers(0, 256, (32, 32, 3), dtype=np.uint8),
        "depth": rng.uniform(0.5, 2.0, (40, 40)).astype(np.float32),
        "instruction": "pick up the star",
        "feedback": feedback,
        "object_info": "object 1 (star): [44, 30, 18]; object 2 (container): [58, 64, 17]",
    }


def start(policy, instruction="navigate to the apple", **extras):
    policy.reset(EpisodeContext(instruction=instruction, seed=0, extras=extras))
    return policy


def user_text(messages):
    return messages[-1]["content"][-1]["text"]


def test_plan_runs_action_by_action_with_history():
    backend = ScriptedBackend([nav_answer(0, 4, 0), nav_answer(5)])
    policy = start(EBAgentPolicy(backend, task="navigation"))
    actions = [
        policy.act(nav_obs()),
        policy.act(nav_obs(OK.format("MoveAhead"))),
        policy.act(nav_obs(OK.format("RotateRight"))),
    ]
    assert [int(a) for a in actions] == [0, 4, 0]
    assert all(isinstance(a, np.ndarray) and a.shape == () and a.dtype == np.int64 for a in actions)
    assert len(backend.calls) == 1
    assert int(policy.act(nav_obs(OK.format("MoveAhead")))) == 5
    second = user_text(backend.calls[1])
    assert (
        "Step 1, action id 0, MoveAhead, env feedback: Last action MoveAhead executed successfully." in second
    )
    assert (
        "Step 3, action id 0, MoveAhead, env feedback: Last action MoveAhead executed successfully." in second
    )
    assert "## Now the human instruction is: navigate to the apple." in second
    stats = policy.episode_stats()
    assert (stats["model_calls"], stats["planner_steps"], stats["parse_errors"], stats["steps"]) == (
        2,
        2,
        0,
        4,
    )


def test_instruction_falls_back_to_the_observation():
    backend = ScriptedBackend([nav_answer(0)])
    start(EBAgentPolicy(backend, task="navigation"), instruction="").act(nav_obs())
    assert "## Now the human instruction is: navigate to the apple." in user_text(backend.calls[0])


def test_invalid_feedback_drops_the_rest_of_the_plan():
    backend = ScriptedBackend([nav_answer(0, 0, 0), nav_answer(2)])
    policy = start(EBAgentPolicy(backend, task="navigation"))
    assert int(policy.act(nav_obs())) == 0
    blocked = "Last action MoveAhead is invalid. The agent is blocked by a table."
    assert int(policy.act(nav_obs(blocked))) == 2  # replanned instead of walking into the table again
    assert policy.invalid_feedback == 1 and len(backend.calls) == 2
    assert f"Step 1, action id 0, MoveAhead, env feedback: {blocked}" in user_text(backend.calls[1])


@pytest.mark.parametrize(
    ("answer", "code"),
    [
        ("I will walk forward to the apple.", "no_json"),
        ('{"executable_plan": "MoveAhead"}', "not_a_plan"),
        ('{"executable_plan": []}', "empty_plan"),
        (nav_answer(9), "bad_action_id"),
        ('{"step_1": {"actions": ["W"], "step_nums": [2]}}', "dropped_actions"),
        ("", "empty_output"),
    ],
)
def test_unusable_output_is_counted_and_noop_asks_again(answer, code):
    backend = ScriptedBackend([answer, nav_answer(1)])
    policy = start(EBAgentPolicy(backend, task="navigation", fallback="noop"))
    stay = policy.act(nav_obs())
    assert isinstance(stay, Plan) and stay.format == "fallback" and stay.steps[0].actions == [Primitive.STOP]
    assert int(policy.act(nav_obs())) == 1  # asked again
    stats = policy.episode_stats()
    assert (
        stats["parse_errors"],
        stats["planner_output_error"],
        stats["fallbacks"],
        stats["model_calls"],
    ) == (1, 1, 1, 2)
    assert any(e.startswith(code) for e in policy.episode_calls()[0]["errors"])
    assert "## The action history:" not in user_text(backend.calls[1])  # a stay is not an EB action


def test_stop_fallback_ends_model_calls():
    backend = ScriptedBackend(["no idea"])
    policy = start(EBAgentPolicy(backend, task="navigation", fallback="stop"))
    for _ in range(4):
        assert isinstance(policy.act(nav_obs()), Plan)
    assert policy.stopped and len(backend.calls) == 1
    assert policy.episode_stats()["fallbacks"] == 1 and policy.episode_stats()["stopped"] == 1


def test_malformed_server_response_is_counted_not_raised():
    backend = ScriptedBackend([MalformedResponseError("body is not JSON"), nav_answer(3)])
    policy = start(EBAgentPolicy(backend, task="navigation"))
    assert isinstance(policy.act(nav_obs()), Plan)
    assert int(policy.act(nav_obs())) == 3
    stats = policy.episode_stats()
    assert (stats["malformed_responses"], stats["parse_errors"], stats["model_calls"]) == (1, 1, 2)


def test_repaired_output_is_used_and_counted():
    fenced = "Sure!\n```json\n" + nav_answer(0, 6).replace('"', "'") + "\n```"  # Python quotes
    policy = start(EBAgentPolicy(ScriptedBackend([fenced]), task="navigation"))
    assert [int(policy.act(nav_obs())), int(policy.act(nav_obs(OK.format("MoveAhead"))))] == [0, 6]
    stats = policy.episode_stats()
    assert (stats["parse_repairs"], stats["parse_errors"]) == (1, 0)


def test_only_the_last_five_messages_are_sent():
    backend = ScriptedBackend([nav_answer(i % 8) for i in range(5)])
    policy = start(EBAgentPolicy(backend, task="navigation", history_messages=5))
    obs = nav_obs()
    for _ in range(5):
        policy.act(obs)
        obs = nav_obs(OK.format("x"))
    assert [len(c) for c in backend.calls] == [1, 3, 5, 5, 5]
    fourth = backend.calls[3]
    assert [m["role"] for m in fourth] == ["user", "assistant", "user", "assistant", "user"]
    assert fourth[0] is policy.chat[2]  # the first turn and answer were dropped
    assert fourth[1]["content"] == nav_answer(1)
    without = ScriptedBackend([nav_answer(0)] * 3)
    policy = start(EBAgentPolicy(without, task="navigation", chat_history=False))
    for _ in range(3):
        policy.act(nav_obs())
    assert [len(c) for c in without.calls] == [1, 1, 1]


def test_plan_is_cut_to_the_step_budget():
    backend = ScriptedBackend([nav_answer(0, 0, 0, 0, 0)])
    policy = start(EBAgentPolicy(backend, task="navigation"), max_steps=3)
    assert "at most 3 actions" in policy.system
    for _ in range(3):
        policy.act(nav_obs())
    assert not policy.queue
    assert any(e.startswith("truncated: 2 action") for e in policy.episode_calls()[0]["errors"])
    assert policy.episode_stats()["parse_repairs"] == 0
    assert "at most 20 actions" in start(policy).system  # the next episode is back to the default budget


def test_manipulation_vectors_objects_and_ranges():
    good = [44, 30, 28, 0, 60, 90, 1]
    backend = ScriptedBackend(
        [
            manip_answer(
                good, [44, 30, 150, 0, 60, 90, 1], [44.5, 30, 18, 0, 60, 90, 0], [44, 30, 18, 0, 60, 90, 0]
            )
        ]
    )
    policy = start(
        EBAgentPolicy(backend, task="manipulation", image_keys=("front_rgb", "wrist_rgb")), "pick up the star"
    )
    first = policy.act(manip_obs())
    assert first.dtype == np.int64 and first.tolist() == good
    assert policy.act(manip_obs(OK.format(""))).tolist() == [44, 30, 18, 0, 60, 90, 0]
    calls = policy.episode_calls()[0]
    assert sum(e.startswith("bad_vector_range") for e in calls["errors"]) == 2
    assert policy.episode_stats()["dropped_actions"] == 2 and policy.episode_stats()["parse_repairs"] == 1
    sent = backend.calls[0][0]["content"]
    assert [p["type"] for p in sent] == ["image", "image", "text"]
    assert "Object coordinates: object 1 (star): [44, 30, 18]" in sent[-1]["text"]
    assert policy.system.count("## Example") == 4
    assert "Step 1, action [44, 30, 28, 0, 60, 90, 1], env feedback" in "\n".join(policy.history)


def test_depth_and_size_atomic_inputs():
    backend = ScriptedBackend([manip_answer([1, 2, 3, 0, 60, 90, 1])])
    atomic = AtomicPrompting(depth=True, size=True)
    policy = start(
        EBAgentPolicy(backend, task="manipulation", atomic=atomic), "pick", size_hints={"star": 0.05}
    )
    policy.act(manip_obs())
    parts = backend.calls[0][0]["content"]
    assert [p["type"] for p in parts] == ["image", "text", "image", "text", "text"]
    assert "Image 2 is the depth map of Image 1" in parts[1]["text"]
    assert parts[3]["text"] == "Object sizes: star: 0.05 m."
    missing = start(EBAgentPolicy(ScriptedBackend([]), task="navigation", atomic=AtomicPrompting(depth=True)))
    with pytest.raises(KeyError, match="'depth' in the observation or the episode extras"):
        missing.act(nav_obs())


def test_reset_starts_a_clean_episode_and_cache_hits_are_counted(tmp_path):
    inner = ScriptedBackend(
        lambda messages: Generation(nav_answer(0), prompt_tokens=100, completion_tokens=20, cost_usd=0.01)
    )
    policy = EBAgentPolicy(CachedBackend(inner, tmp_path / "c.sqlite"), task="navigation")
    runs = []
    for _ in range(2):
        start(policy)
        obs = nav_obs()
        for _ in range(3):
            policy.act(obs)
            obs = nav_obs(OK.format("MoveAhead"))
        runs.append(policy.episode_stats())
    assert runs[0]["cache_hits"] == 0 and runs[1]["cache_hits"] == 3
    assert runs[0]["cost_usd"] == pytest.approx(0.03) and runs[1]["cost_usd"] == 0
    assert runs[0]["prompt_tokens"] == runs[1]["prompt_tokens"] == 300
    assert len(inner.calls) == 3


def test_bad_options_are_rejected():
    with pytest.raises(ValueError, match="fallback"):
        EBAgentPolicy(ScriptedBackend([]), fallback="random")
    with pytest.raises(ValueError, match="task"):
        EBAgentPolicy(ScriptedBackend([]), task="flying")
    with pytest.raises(ValueError, match="no RGB image"):
        start(EBAgentPolicy(ScriptedBackend([]))).act({"instruction": "x", "feedback": ""})
