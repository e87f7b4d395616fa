"""The SpatialTree plan policy with a scripted model, and the atomic-prompting helpers."""

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from action_mapping import (
    NAVIGATION_STEP_SIZES,
    ExecutablePlan,
    Primitive,
    StepSizes,
    render_navigation_prompt,
)
from policies.backends import MalformedResponseError
from policies.backends.scripted import ScriptedBackend
from policies.base import EpisodeContext
from policies.mllm.atomic import (
    AtomicPrompting,
    correspondence_figure,
    correspondences_from_depth,
    depth_to_image,
    size_text,
)
from policies.mllm.spatial import SpatialPlanPolicy

NAV_PLAN = json.dumps(
    {f"step_{i}": {"actions": ["W", "←"], "step_nums": [i, 1]} for i in range(1, 7)}, ensure_ascii=False
)
MANIP_PLAN = '{"step_1": {"actions": ["S"], "step_nums": [3], "gripper": 0}, "step_2": {"actions": ["↓"], "step_nums": [2], "gripper": 1}}'


def images(seed=0, shape=(32, 40, 3)):
    rng = np.random.default_rng(seed)
    return rng.integers(0, 256, shape, dtype=np.uint8), rng.integers(0, 256, shape, dtype=np.uint8)


def start(policy, instruction="", **extras):
    policy.reset(EpisodeContext(instruction=instruction, seed=0, extras=extras))
    return policy


def test_goal_image_plan_is_executed_step_by_step_then_replanned():
    now, goal = images()
    backend = ScriptedBackend([NAV_PLAN, NAV_PLAN])
    policy = start(SpatialPlanPolicy(backend, task="navigation"), goal_image=goal)
    steps = [policy.act({"rgb": now}) for _ in range(7)]
    assert all(
        isinstance(p, ExecutablePlan)
        and p.step_sizes == NAVIGATION_STEP_SIZES
        and len(p.steps) == 1
        and p.format == "navigation"
        for p in steps
    )
    assert [p.steps[0].step_nums for p in steps[:6]] == [[i, 1] for i in range(1, 7)]
    assert steps[0].steps[0].actions == [Primitive.DOLLY_IN, Primitive.PAN_LEFT]
    assert len(backend.calls) == 2  # the 7th step asked again
    system, user = backend.calls[0]
    assert system == {"role": "system", "content": render_navigation_prompt(NAVIGATION_STEP_SIZES, 6, 10)}
    kinds = [p["type"] for p in user["content"]]
    assert kinds == ["text", "image", "text", "image", "text"]
    assert user["content"][1]["image"] is now and user["content"][3]["image"] is goal
    assert policy.episode_stats()["model_calls"] == 2 and policy.episode_stats()["parse_errors"] == 0


def test_replan_every_k_steps_and_step_sizes_in_prompt():
    now, goal = images()
    backend = ScriptedBackend([NAV_PLAN] * 3)
    sizes = StepSizes(translation=0.25, rotation=0.5)
    policy = start(
        SpatialPlanPolicy(backend, task="navigation", step_sizes=sizes, replan_every=2), goal_image=goal
    )
    for _ in range(5):
        policy.act({"rgb": now})
    assert len(backend.calls) == 3
    assert "Translation: 0.25 m per step. Rotation: 0.5 rad per step." in backend.calls[0][0]["content"]


def test_instruction_goal_for_language_benchmarks():
    static = images(shape=(50, 50, 3))[0]
    gripper = images(shape=(20, 20, 3))[0]
    backend = ScriptedBackend([MANIP_PLAN])
    policy = start(
        SpatialPlanPolicy(backend, task="manipulation", image_keys=("rgb_static",)), "open the drawer"
    )
    plan = policy.act({"rgb_static": static, "rgb_gripper": gripper, "robot_obs": np.zeros(15)})
    assert plan.format == "manipulation" and plan.steps[0].gripper == 0
    system, user = backend.calls[0]
    assert system["content"].startswith("You control a robot end-effector. Image 1 shows the current state.")
    assert [p["type"] for p in user["content"]] == ["text", "image", "text"]
    assert user["content"][1]["image"] is static
    assert user["content"][-1]["text"].startswith("Instruction: open the drawer")
    assert policy.act({"rgb_static": static}).steps[0].gripper == 1


@pytest.mark.parametrize(
    "answer", ["Go forward a bit, then left.", MalformedResponseError("no choices"), '{"answer": 3}']
)
def test_unusable_answers_fall_back_and_are_counted(answer):
    now, goal = images()
    noop = start(SpatialPlanPolicy(ScriptedBackend([answer, NAV_PLAN]), task="navigation"), goal_image=goal)
    first = noop.act({"rgb": now})
    assert (
        first.format == "fallback"
        and first.steps[0].actions == [Primitive.STOP]
        and first.steps[0].step_nums == [1]
    )
    assert noop.act({"rgb": now}).format == "navigation"
    stats = noop.episode_stats()
    assert (stats["parse_errors"], stats["fallbacks"], stats["model_calls"]) == (1, 1, 2)
    assert stats["malformed_responses"] == int(isinstance(answer, Exception))
    stop = start(
        SpatialPlanPolicy(ScriptedBackend([answer]), task="navigation", fallback="stop"), goal_image=goal
    )
    assert all(stop.act({"rgb": now}).format == "fallback" for _ in range(3))
    assert stop.stopped and stop.episode_stats()["model_calls"] == 1


def test_plan_errors_are_kept_per_call():
    now, goal = images()
    sloppy = "```json\n{'step_1': {'actions': ['W', 'fly'], 'step_nums': [12, 1]}}\n```"
    policy = start(SpatialPlanPolicy(ScriptedBackend([sloppy]), task="navigation"), goal_image=goal)
    plan = policy.act({"rgb": now})
    assert plan.steps[0].step_nums == [10]  # capped
    codes = [e.split(":")[0] for e in policy.episode_calls()[0]["errors"]]
    assert {"repaired_json", "unknown_action", "step_num_capped"} <= set(codes)
    assert policy.episode_stats()["parse_repairs"] == 1


def test_each_call_records_its_prompt_id_parsed_plan_latency_and_injected_error():
    import hashlib

    from policies.backends import Generation
    from policies.backends.cache import canonical_messages

    now, goal = images()
    answer = Generation(
        MANIP_PLAN, prompt_tokens=900, completion_tokens=40, latency_s=1.23456, injected_error="prose"
    )
    backend = ScriptedBackend([answer, MalformedResponseError("not a chat completion")])
    policy = start(SpatialPlanPolicy(backend, task="manipulation"), goal_image=goal)
    policy.act({"rgb": now}), policy.act({"rgb": now}), policy.act({"rgb": now})
    first, second = policy.episode_calls()
    sent = json.dumps(canonical_messages(backend.calls[0]), sort_keys=True, ensure_ascii=False)
    assert first["prompt_id"] == hashlib.sha256(sent.encode()).hexdigest()
    assert first["parsed"] == {"format": "manipulation", "steps": json.loads(MANIP_PLAN)} and first["usable"]
    assert (first["latency_s"], first["prompt_tokens"], first["completion_tokens"]) == (1.2346, 900, 40)
    assert first["injected_error"] == "prose" and policy.episode_stats()["injected_errors"] == 1
    assert second["prompt_id"] == first["prompt_id"]  # same view, same goal: the same prompt
    assert second["parsed"] is None and second["errors"][0].startswith("malformed_response")
    json.dumps(policy.episode_calls())  # JSON-safe, as decisions.jsonl needs


def test_atomic_depth_correspondence_and_size():
    now, goal = images()
    depth = np.full((32, 40), 2.0, np.float32)
    pairs = np.array([[5.0, 6.0, 7.0, 8.0], [20.0, 10.0, 22.0, 12.0]])
    atomic = AtomicPrompting(depth=True, correspondence=True, size=True)
    backend = ScriptedBackend([NAV_PLAN])
    policy = start(
        SpatialPlanPolicy(backend, task="navigation", atomic=atomic),
        goal_image=goal,
        goal_depth=depth * 2,
        correspondence=pairs,
        size_hints={"sofa": [2.0, 0.9, 0.8]},
    )
    policy.act({"rgb": now, "depth": depth})
    content = backend.calls[0][1]["content"]
    texts = [p["text"] for p in content if p["type"] == "text"]
    # start, goal, two depth maps, correspondence figure
    assert sum(p["type"] == "image" for p in content) == 5
    assert any(t.startswith("Image 3 is the depth map of Image 1") for t in texts)
    assert any(t.startswith("Image 4 is the depth map of Image 2") for t in texts)
    assert any("1: (5, 6) -> (7, 8); 2: (20, 10) -> (22, 12)" in t for t in texts)
    assert "Object sizes: sofa: 2.00 x 0.90 x 0.80 m." in texts
    assert policy.describe()["atomic"] == ["depth", "correspondence", "size"]
    bare = start(
        SpatialPlanPolicy(
            ScriptedBackend([]), task="navigation", atomic=AtomicPrompting(correspondence=True)
        ),
        goal_image=goal,
    )
    with pytest.raises(KeyError, match="'correspondence'"):
        bare.act({"rgb": now})


def test_depth_to_image_hand_worked():
    depth = np.array([[1.0, 2.0], [3.0, 0.0]], np.float32)
    picture, near, far = depth_to_image(depth)
    assert (near, far) == (1.0, 3.0)
    assert picture[0, 0].tolist() == [255, 255, 255] and picture[1, 0].tolist() == [0, 0, 0]
    assert picture[0, 1].tolist() == [128, 128, 128] and picture[1, 1].tolist() == [255, 0, 0]


def test_correspondences_from_depth_hand_worked():
    K = np.array([[50.0, 0, 31.5], [0, 50.0, 23.5], [0, 0, 1]])
    depth = np.full((48, 64), 2.0)
    same = correspondences_from_depth(depth, K, np.eye(4), np.eye(4), grid=4)
    assert same.shape == (16, 4) and np.allclose(same[:, :2], same[:, 2:])
    moved = np.eye(4)
    moved[0, 3] = 0.4  # camera B is 0.4 m to the right: points shift left by fx * 0.4 / 2 = 10 px
    pairs = correspondences_from_depth(depth, K, np.eye(4), moved, grid=4)
    assert np.allclose(pairs[:, 2], pairs[:, 0] - 10) and np.allclose(pairs[:, 3], pairs[:, 1])
    # Grid columns are at u = 7.5, 23.5, 39.5, 55.5: the first lands at -2.5, outside B, so 3 x 4 remain.
    assert len(pairs) == 12 and pairs[:, 0].min() == 23.5
    turned = np.eye(4)
    turned[:3, :3] = [[-1, 0, 0], [0, 1, 0], [0, 0, -1]]  # B looks backwards: nothing in view
    assert len(correspondences_from_depth(depth, K, np.eye(4), turned)) == 0
    hidden = correspondences_from_depth(depth, K, np.eye(4), moved, depth_b=np.full((48, 64), 1.0))
    assert len(hidden) == 0  # something nearer covers every point in B


def test_correspondence_figure_and_size_text():
    a, b = images()
    fig = correspondence_figure(a, b, np.array([[3, 4, 5, 6]]))
    assert fig.shape == (32, 80, 3) and fig.dtype == np.uint8
    assert not np.array_equal(fig[:, :40], a)  # marks drawn on the left image
    assert size_text("The mug is 10 cm tall.") == "The mug is 10 cm tall."
    assert (
        size_text({"mug": 0.1, "box": (0.2, 0.1, 0.05)})
        == "Object sizes: mug: 0.10 m; box: 0.20 x 0.10 x 0.05 m."
    )
    with pytest.raises(ValueError, match="size hints"):
        size_text(3)


def test_goal_image_must_be_rgb():
    with pytest.raises(ValueError, match=r"extras\['goal_image'\] must be an RGB uint8"):
        start(SpatialPlanPolicy(ScriptedBackend([])), goal_image=np.zeros((4, 4), np.float32))


@settings(max_examples=30, deadline=None)
@given(
    tx=st.floats(-0.5, 0.5),
    ty=st.floats(-0.5, 0.5),
    yaw=st.floats(-0.3, 0.3),
    z=st.floats(1.0, 5.0),
    f=st.floats(30.0, 80.0),
)
def test_correspondences_agree_with_projecting_the_3d_point(tx, ty, yaw, z, f):
    """Property: every match is where the back-projected point of A lands in B, and both are in view."""
    from scipy.spatial.transform import Rotation

    K = np.array([[f, 0, 31.5], [0, f, 23.5], [0, 0, 1]])
    c2w_b = np.eye(4)
    c2w_b[:3, :3] = Rotation.from_euler("y", yaw).as_matrix()
    c2w_b[:3, 3] = [tx, ty, 0.0]
    pairs = correspondences_from_depth(np.full((48, 64), z), K, np.eye(4), c2w_b, grid=5)
    for ua, va, ub, vb in pairs:
        world = np.linalg.solve(K, [ua, va, 1.0]) * z
        in_b = np.linalg.inv(c2w_b) @ np.append(world, 1.0)
        projected = K @ in_b[:3]
        assert np.allclose(projected[:2] / projected[2], [ub, vb], atol=1e-6)
        assert -0.5 <= ub < 63.5 and -0.5 <= vb < 47.5
