"""SpatialAgent as a closed-loop EB-Navigation policy: registry and flags, an oracle core that acts on tool
results reaching real successes, counted failures (injected errors, a tiny random core), learned backends
loaded from local tiny-weight folders through the code users run."""

import json

import numpy as np
import pytest

from benchmarks.core.policy_cli import build_policy_from_spec, parse_benchmark_args
from benchmarks.embodied import EmbodiedConfig
from benchmarks.embodied.navigation import run_episode
from policies.agent.answer_key_nav import (
    FORWARD,
    LEFT,
    LOOK_DOWN,
    RIGHT,
    TURN_LEFT,
    TURN_RIGHT,
    approach,
    to_goal,
)
from policies.agent.learned_tools import box_from_points, learned_backends
from policies.config_cli import InputError
from policies.registry import build_policy
from tests.nav_scenes import empty_room, episode


@pytest.fixture(scope="module")
def env():
    import gymnasium as gym

    import envs  # noqa: F401

    environment = gym.make("SpatialArena/EBNavigation-v0", width=96, height=96)
    yield environment
    environment.close()


# Two short episodes in a bare room: the ball ahead to the right, and the ball behind (found by turning).
_EPISODES = [episode(empty_room(), 1.0, 1.4, 0.0), episode(empty_room(), 1.0, 2.6, 180.0)]


def _run(env, policy, ep, seed=0):
    policy.bind(env)
    decisions = []
    try:
        return run_episode(env, policy, ep, seed=seed, decisions=decisions), decisions
    finally:
        policy.scenes.close()  # the truth tools' renderer, before the GL display goes


@pytest.mark.parametrize("paradigm", ["plan-execute", "react"])
def test_oracle_core_reaches_the_target_by_reading_truth_tools(env, paradigm):
    for ep in _EPISODES:
        policy = build_policy("agent", model="answer-key", agent_paradigm=paradigm)
        record, decisions = _run(env, policy, ep)
        assert record["success"] and record["steps"] <= 12, record
        tools = [
            e
            for d in decisions
            for e in d["agent"]["trace"]
            if e["role"] == "tool" and e["call"]["name"] != "Terminate"
        ]
        assert tools and {e["backend"] for e in tools} == {"simulator-truth"}
        assert {e["call"]["name"] for e in tools} == {"Detect3DObjects"} and any(
            e["result"]["objects"] for e in tools
        )
        assert record["policy_stats"]["planner_output_error"] == 0
    roles = {e["role"] for d in decisions for e in d["agent"]["trace"]}
    assert roles == (
        {"planner", "tool", "executor", "summarizer"}
        if paradigm == "plan-execute"
        else {"observer", "tool", "react_summarizer"}
    )


def test_without_tools_the_same_core_does_not_find_the_target(env):
    policy = build_policy("agent", model="answer-key", agent_tools="none", max_steps=6)
    record, decisions = _run(env, policy, _EPISODES[1])
    assert not record["success"]
    assert all(e["role"] != "tool" for d in decisions for e in d["agent"]["trace"])


def test_injected_unusable_tool_calls_are_the_counted_parse_failures(env):
    policy = build_policy(
        "agent", model="answer-key", answer_key_error_rate=0.4, answer_key_error_seed=3, max_steps=8
    )
    record, _ = _run(env, policy, _EPISODES[0])
    stats = record["policy_stats"]
    assert stats["injected_errors"] > 0 and stats["agent.injected_unusable_tool_calls"] > 0
    assert stats["agent.tool_call_parse_failures"] == stats["agent.injected_unusable_tool_calls"]


def test_selected_like_any_registered_policy_with_its_options():
    _, spec = parse_benchmark_args(
        EmbodiedConfig,
        [
            "--policy",
            "agent",
            "--model",
            "answer-key",
            "--agent-paradigm",
            "react",
            "--agent-tools",
            "cv",
            "--episodes",
            "1",
        ],
    )
    assert (
        spec.name == "agent" and spec.options["agent_paradigm"] == "react" and spec.manifest()["privileged"]
    )
    policy = build_policy_from_spec(spec)
    assert policy.describe()["agent"]["paradigm"] == "react" and policy.describe()["tool_set"] == "cv"
    assert set(policy.describe()["agent"]["tools"].values()) == {"opencv"}
    with pytest.raises(ValueError, match="acts in EB-Navigation"):
        policy.bind(type("Env", (), {"unwrapped": object()})())
    with pytest.raises(InputError, match="--agent-tools learned needs"):
        parse_benchmark_args(
            EmbodiedConfig, ["--policy", "agent", "--model", "answer-key", "--agent-tools", "learned"]
        )
    with pytest.raises(InputError, match="only go with --agent-tools learned"):
        parse_benchmark_args(
            EmbodiedConfig, ["--policy", "agent", "--model", "answer-key", "--depth-model", "/x"]
        )


def test_navigation_strategy_reads_boxes_and_poses():
    assert approach({"x": 0.5, "y": 1.0, "z": 2.0}, []) == [
        RIGHT,
        RIGHT,
        FORWARD,
        FORWARD,
        FORWARD,
        FORWARD,
        FORWARD,
        FORWARD,
    ]
    assert approach({"x": 2.0, "y": 1.0, "z": 0.5}, []) == [TURN_RIGHT]
    assert approach(None, [(FORWARD, False)]) == [LOOK_DOWN]
    assert approach(None, [(TURN_LEFT, False)] * 3) == [FORWARD, FORWARD]
    assert approach({"x": 0.0, "y": 1.0, "z": 2.0}, [(FORWARD, True)]) == [RIGHT, RIGHT, FORWARD]
    # the goal camera 0.5 m to the left and 1 m ahead, turned 90 degrees right
    R = np.array([[0.0, 0.0, -1.0], [0.0, 1.0, 0.0], [1.0, 0.0, 0.0]])  # current frame -> goal frame
    t = -R @ np.array([-0.5, 0.0, 1.0])
    assert to_goal(np.hstack([R, t[:, None]]).tolist()) == [
        LEFT,
        LEFT,
        FORWARD,
        FORWARD,
        FORWARD,
        FORWARD,
        TURN_RIGHT,
    ]


def test_a_tiny_random_core_runs_end_to_end_with_counted_failures(tiny_vlm):
    import gymnasium as gym

    pytest.importorskip("transformers")
    checkpoint = tiny_vlm("qwen2_5_vl")
    env = gym.make("SpatialArena/EBNavigation-v0", width=64, height=64, max_steps=1)
    policy = build_policy(
        "agent", model=str(checkpoint), max_new_tokens=8, max_steps=1, agent_max_attempts=1, cache=False
    )
    record, decisions = _run(env, policy, _EPISODES[0])
    stats = record["policy_stats"]
    assert record["steps"] == 1 and not record["success"]
    # random text is no tool plan
    assert stats["model_calls"] >= 2 and stats["agent.tool_call_parse_failures"] >= 1
    # no EB plan either: counted, then the fallback
    assert stats["planner_output_error"] + stats["fallbacks"] >= 1
    assert all(d["agent"]["trace"] for d in decisions)
    env.close()


# ------------------------------------------------------------------------------------------ learned backends


def _tiny_models(root):
    """Random-weight OWLv2, SAM, Depth Anything and LightGlue saved as local folders (nothing downloaded)."""
    torch = pytest.importorskip("torch")
    T = pytest.importorskip("transformers")
    torch.manual_seed(0)
    vocab = {"<|startoftext|>": 0, "<|endoftext|>": 1}
    for c in "abcdefghijklmnopqrstuvwxyz":
        vocab[c], vocab[c + "</w>"] = len(vocab), len(vocab) + 1
    root.mkdir(parents=True, exist_ok=True)
    (root / "vocab.json").write_text(json.dumps(vocab))
    (root / "merges.txt").write_text("#version: 0.2\n")
    small = {"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2, "num_attention_heads": 2}
    owl = T.Owlv2Config(
        text_config={
            **small,
            "vocab_size": len(vocab),
            "max_position_embeddings": 16,
            "bos_token_id": 0,
            "eos_token_id": 1,
            "pad_token_id": 1,
        },
        vision_config={**small, "image_size": 64, "patch_size": 16},
        projection_dim=32,
    )
    T.Owlv2ForObjectDetection(owl).save_pretrained(root / "owl")
    T.Owlv2Processor(
        image_processor=T.Owlv2ImageProcessor(size={"height": 64, "width": 64}),
        tokenizer=T.CLIPTokenizer(str(root / "vocab.json"), str(root / "merges.txt")),
    ).save_pretrained(root / "owl")
    sam = T.SamConfig(
        vision_config={
            **small,
            "image_size": 64,
            "patch_size": 16,
            "output_channels": 16,
            "global_attn_indexes": [1],
            "mlp_dim": 64,
            "num_pos_feats": 8,
        },
        prompt_encoder_config={
            "hidden_size": 16,
            "image_size": 64,
            "patch_size": 16,
            "image_embedding_size": 4,
            "mask_input_channels": 4,
        },
        mask_decoder_config={
            "hidden_size": 16,
            "mlp_dim": 32,
            "num_hidden_layers": 2,
            "num_attention_heads": 2,
            "iou_head_hidden_dim": 16,
        },
    )
    T.SamModel(sam).save_pretrained(root / "sam")
    T.SamProcessor(
        image_processor=T.SamImageProcessor(size={"longest_edge": 64}, pad_size={"height": 64, "width": 64})
    ).save_pretrained(root / "sam")
    backbone = T.Dinov2Config(
        image_size=56,
        patch_size=14,
        hidden_size=32,
        num_hidden_layers=4,
        num_attention_heads=2,
        intermediate_size=64,
        out_features=["stage1", "stage2", "stage3", "stage4"],
        reshape_hidden_states=False,
    )
    depth = T.DepthAnythingConfig(
        backbone_config=backbone,
        reassemble_hidden_size=32,
        neck_hidden_sizes=[16, 16, 16, 16],
        fusion_hidden_size=16,
        head_hidden_size=8,
        depth_estimation_type="metric",
        max_depth=20,
    )
    T.DepthAnythingForDepthEstimation(depth).save_pretrained(root / "depth")
    T.DPTImageProcessor(
        size={"height": 56, "width": 56}, keep_aspect_ratio=False, do_pad=False
    ).save_pretrained(root / "depth")
    point = T.SuperPointConfig(
        encoder_hidden_sizes=[8, 8, 16, 16],
        decoder_hidden_size=16,
        descriptor_decoder_dim=16,
        keypoint_threshold=0.0,
        max_keypoints=64,
    )
    T.LightGlueForKeypointMatching(
        T.LightGlueConfig(
            keypoint_detector_config=point, descriptor_dim=16, num_hidden_layers=2, num_attention_heads=2
        )
    ).save_pretrained(root / "matcher")
    T.LightGlueImageProcessor(size={"height": 64, "width": 64}).save_pretrained(root / "matcher")
    return {name: str(root / name) for name in ("owl", "sam", "depth", "matcher")}


def test_learned_backends_load_local_tiny_models_and_serve_their_tools(tmp_path, env):
    from policies.agent.tools import Toolbox, ToolCall, ToolContext

    models = _tiny_models(tmp_path / "models")
    backends = learned_backends(
        detector=models["owl"], segmenter=models["sam"], depth=models["depth"], matcher=models["matcher"]
    )
    served = Toolbox(backends).describe()
    assert served == {
        "Detect3DObjects": "3d-boxes:detector:owl+depth-model:depth+segmenter:sam",
        "LocalizeObjects": "detector:owl",
        "CountObjects": "detector:owl",
        "GetObjectMask": "segmenter:sam",
        "EstimateRegionDepth": "depth-model:depth",
        "EstimateObjectDepth": "depth-model:depth",
        "EstimateHomographyMatrix": "matcher:matcher",
        "GetCameraParameters": "matcher:matcher",
    }
    rng = np.random.default_rng(0)
    images = [rng.integers(0, 256, (48, 64, 3), dtype=np.uint8) for _ in range(2)]
    context = ToolContext(images, None, {"intrinsics": [[40.0, 0, 32], [0, 40.0, 24], [0, 0, 1]]})
    toolbox = Toolbox(backends)
    for call in (
        {"name": "LocalizeObjects", "arguments": {"image": "image-0", "objects": ["red mug"]}},
        {"name": "CountObjects", "arguments": {"image": "image-0", "object": "chair"}},
        {"name": "EstimateRegionDepth", "arguments": {"image": "image-0", "bboxes": [[0, 0, 20, 20]]}},
        {"name": "EstimateHomographyMatrix", "arguments": {"images": ["image-0", "image-1"]}},
    ):
        result = toolbox.run(ToolCall(call["name"], call["arguments"]), context)
        assert set(result) >= set(
            __import__("policies.agent.tools", fromlist=["SPECS"]).SPECS[call["name"]].returns
        )
    mask = backends[2].mask(images[0], [5, 5, 40, 30])
    assert mask.shape == (48, 64) and mask.dtype == bool
    # the same folders drive the closed-loop policy: its learned tools run on the observation, and the oracle
    # core, which reaches this target with truth tools, does not with random weights
    policy = build_policy(
        "agent",
        model="answer-key",
        agent_tools="learned",
        detector_model=models["owl"],
        depth_model=models["depth"],
        max_steps=4,
    )
    record, decisions = _run(env, policy, _EPISODES[0])
    tools = [e for d in decisions for e in d["agent"]["trace"] if e["role"] == "tool"]
    assert tools and tools[0]["backend"].startswith("3d-boxes:detector:owl") and not record["success"]


def test_3d_box_heading_is_the_principal_axis_of_the_points():
    along = np.linspace(-0.5, 0.5, 50)
    yaw = 0.6
    points = np.stack([np.sin(yaw) * along, np.linspace(0.0, 0.3, 50), 3.0 + np.cos(yaw) * along], axis=1)
    points = np.concatenate([points, points + np.array([0.02 * np.cos(yaw), 0.0, -0.02 * np.sin(yaw)])])
    box = box_from_points(points)
    assert (
        abs(abs(np.tan(box["yaw"])) - np.tan(yaw)) < 1e-3
        and abs(box["length"] - 1.0) < 1e-2
        and abs(box["z"] - 3.0) < 1e-2
    )


def test_goal_image_task_reaches_the_goal_view_from_the_relative_pose(env):
    from envs.navigation.camera import c2w_from_pose
    from envs.navigation.views import HomeRenderer
    from envs.navigation.world import AgentPose
    from policies.base import EpisodeContext

    ep = episode(empty_room(), 1.0, 1.0, 0.0)
    goal = AgentPose(1.75, 1.5, 90.0)  # 0.75 m ahead, 0.5 m to the left, turned left
    with HomeRenderer(96, 96, 100.0) as renderer:
        renderer.load(ep["scene"])
        goal_image = renderer.render(goal, entity=False).rgb
    policy = build_policy("agent", model="answer-key")
    obs, _ = env.reset(options={"episode": ep})
    policy.bind(env)
    policy.reset(
        EpisodeContext(
            instruction=obs["instruction"],
            seed=0,
            extras={"goal_image": goal_image, "goal_c2w": c2w_from_pose(goal)},
        )
    )
    action = policy.act(obs)
    for _ in range(len(policy.queue) + 1):
        obs, *_ = env.step(action)
        action = policy.act(obs) if policy.queue else None
    policy.scenes.close()
    reached = env.unwrapped.agent_pose
    assert (round(reached.x, 3), round(reached.y, 3), round(reached.heading_deg)) == (1.75, 1.5, 90)
    tool = next(e for e in policy.turns[0]["trace"] if e["role"] == "tool")
    assert tool["call"]["name"] == "GetCameraParameters" and tool["result"]["translation_scale"] == "metric"


@pytest.mark.slow  # about 10 s, nearly all of it importing Grounding DINO's modules; OWLv2 covers detection by default
def test_grounding_dino_detector_reads_one_caption(tmp_path):
    torch = pytest.importorskip("torch")
    T = pytest.importorskip("transformers")
    from policies.agent.learned_tools import LearnedDetectionTools

    torch.manual_seed(0)
    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", ".", "red", "mug", "sofa"]
    (tmp_path / "vocab.txt").write_text("\n".join(words) + "\n")
    swin = T.SwinConfig(
        image_size=64,
        patch_size=4,
        embed_dim=16,
        depths=[1, 1],
        num_heads=[1, 1],
        window_size=4,
        out_features=["stage1", "stage2"],
    )
    bert = T.BertConfig(
        vocab_size=len(words),
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=32,
    )
    config = T.GroundingDinoConfig(
        backbone_config=swin,
        text_config=bert,
        d_model=32,
        encoder_layers=1,
        decoder_layers=2,
        encoder_attention_heads=2,
        decoder_attention_heads=2,
        encoder_ffn_dim=64,
        decoder_ffn_dim=64,
        num_queries=10,
        num_feature_levels=2,
        encoder_n_points=2,
        decoder_n_points=2,
        max_text_len=32,
    )
    folder = tmp_path / "gdino"
    T.GroundingDinoForObjectDetection(config).save_pretrained(folder)
    T.GroundingDinoProcessor(
        image_processor=T.GroundingDinoImageProcessor(size={"shortest_edge": 64, "longest_edge": 64}),
        tokenizer=T.BertTokenizer(str(tmp_path / "vocab.txt")),
    ).save_pretrained(folder)
    detector = LearnedDetectionTools(folder, threshold=0.0)
    found = detector.detect(
        np.random.default_rng(0).integers(0, 256, (48, 64, 3), dtype=np.uint8), ["red mug", "sofa"]
    )
    assert detector.grounding and 0 < len(found) <= 10
    assert all(d["label"] in ("red mug", "sofa") and 0 <= d["bbox"][0] <= d["bbox"][2] <= 64 for d in found)
