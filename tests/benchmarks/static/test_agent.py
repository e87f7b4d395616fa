"""SpatialAgent on a generated set through ``python -m benchmarks.static --policy agent``: simulator-truth tools
agree with the set's ground truth, the oracle core with them answers every item in both paradigms, injected
unusable tool calls are exactly the counted parse failures, and the OpenCV tools run through the same path."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from benchmarks.datagen.nav_questions import KINDS
from benchmarks.static.__main__ import main
from benchmarks.static.agent_truth import SimScenes, SimTruthTools, read_truth
from benchmarks.static.answer_key_agent import motion_primitive
from policies.agent import Toolbox, ToolCall, ToolContext

SEED = 3
N_ITEMS = 2 * len(KINDS)


@pytest.fixture(scope="module")
def qa_set(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("agent") / "set"
    assert main(["generate", "--out", str(root), "--n", str(N_ITEMS), "--seed", str(SEED)]) == 0
    return root / "SpatialScore.json"


def _run(qa_set: Path, out: Path, *extra: str) -> dict[str, Any]:
    argv = [
        "--bench",
        "spatialscore",
        "--data",
        str(qa_set),
        "--model",
        "answer-key",
        "--policy",
        "agent",
        "--output",
        str(out),
        "--no-plot",
        "--allow-errors",
        *extra,
    ]
    assert main(argv) == 0
    (folder,) = (out / "spatialscore").iterdir()
    return {"summary": json.loads((folder / "summary.json").read_text()), "folder": folder}


def test_truth_tools_agree_with_the_ground_truth_file(qa_set):
    truths = read_truth(qa_set)
    scenes = SimScenes()
    toolbox = Toolbox([SimTruthTools(scenes)])
    try:
        checked = []
        for truth in truths.values():
            t, kind = truth["truth"], truth["kind"]
            context = ToolContext([np.zeros((1, 1, 3), np.uint8)] * len(truth["cameras_c2w"]), truth)
            scenes.load(truth)
            names = scenes.names()

            def run(name: str, context: ToolContext = context, **args: Any) -> dict[str, Any]:
                return toolbox.run(ToolCall(name, args), context)

            if kind == "absolute_depth":
                depth = run("EstimateObjectDepth", image="image-0", objects=[names[t["entity"]]])["results"][
                    0
                ]["depth"]
                assert depth == pytest.approx(t["median_depth_m"], abs=1e-4)
            elif kind == "relative_depth":
                got = run("EstimateObjectDepth", image="image-0", objects=[names[e] for e in t["entities"]])[
                    "results"
                ]
                assert [r["depth"] for r in got] == pytest.approx(t["median_depths_m"], abs=1e-4)
            elif kind == "relative_direction":
                boxes = run("Detect3DObjects", image="image-0", objects=[names[e] for e in t["entities"]])[
                    "objects"
                ]
                bearings = [np.degrees(np.arctan2(b["bbox_3d"]["x"], b["bbox_3d"]["z"])) for b in boxes]
                assert bearings == pytest.approx(t["bearings_deg"], abs=1e-6)
            elif kind == "object_distance":
                got = run(
                    "EstimateObjectDistance", image="image-0", objects=[names[e] for e in t["entities"]]
                )
                assert got["distance_meters"] == pytest.approx(t["distance_m"], abs=1e-4)
            elif kind == "object_size":
                box = run("Detect3DObjects", image="image-0", objects=[names[t["entity"]]])["objects"][0][
                    "bbox_3d"
                ]
                assert max(box["width"], box["height"], box["length"]) == pytest.approx(
                    t["longest_m"], abs=1e-6
                )
            elif kind == "counting":
                assert run("CountObjects", image="image-0", object=t["noun"])["count"] == t["count"]
            elif kind == "camera_motion":
                pose = run("GetCameraParameters", images=["image-0", "image-1"])
                assert pose["translation_scale"] == "metric"
                assert motion_primitive(np.asarray(pose["output"][1]["extrinsic"])).value == t["primitive"]
            checked.append(kind)
        assert sorted(checked) == sorted(KINDS * 2)
    finally:
        scenes.close()


@pytest.mark.parametrize("paradigm", ["plan-execute", "react"])
def test_oracle_core_with_truth_tools_answers_every_item(qa_set, tmp_path, paradigm):
    result = _run(qa_set, tmp_path, "--agent-paradigm", paradigm, "--agent-tools", "truth")
    summary, folder = result["summary"], result["folder"]
    assert summary["status"] == "complete" and summary["headline"]["overall"] == pytest.approx(100.0)
    agent = summary["counts"]["agent"]
    assert (
        agent["items"] == N_ITEMS and agent["answered"] == N_ITEMS and agent["tool_call_parse_failures"] == 0
    )
    assert agent["tool_runs"] >= N_ITEMS and not any(k.startswith("tool_errors") for k in agent)
    traces = [json.loads(line) for line in (folder / "traces.jsonl").read_text().splitlines()]
    assert [t["item_id"] for t in traces] == [str(i) for i in range(N_ITEMS)]
    roles = {e["role"] for t in traces for e in t["trace"]}
    assert roles == (
        {"planner", "tool", "executor", "summarizer"}
        if paradigm == "plan-execute"
        else {"observer", "tool", "react_summarizer"}
    )
    assert all(
        e["backend"] == "simulator-truth"
        for t in traces
        for e in t["trace"]
        if e["role"] == "tool" and e["call"]["name"] != "Terminate"
    )
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["agent"]["paradigm"] == paradigm and manifest["agent"]["tool_set"] == "truth"


@pytest.mark.parametrize("paradigm", ["plan-execute", "react"])
def test_injected_unusable_tool_calls_are_the_counted_parse_failures(qa_set, tmp_path, paradigm):
    result = _run(
        qa_set,
        tmp_path,
        "--agent-paradigm",
        paradigm,
        "--answer-key-error-rate",
        "0.4",
        "--answer-key-error-seed",
        "1",
    )
    agent = result["summary"]["counts"]["agent"]
    assert agent["injected_unusable_in_tool_call_roles"] > 0
    assert agent["tool_call_parse_failures"] == agent["injected_unusable_in_tool_call_roles"]
    traces = [json.loads(line) for line in (result["folder"] / "traces.jsonl").read_text().splitlines()]
    for entry in (
        e for t in traces for e in t["trace"] if e["role"] in ("planner", "observer", "react_summarizer")
    ):
        kind = entry.get("injected_error")
        assert entry["parse"]["usable"] == (kind not in ("malformed_json", "truncated", "empty")), entry


def test_opencv_tools_run_through_the_same_path(qa_set, tmp_path):
    result = _run(qa_set, tmp_path, "--agent-tools", "cv")
    summary = result["summary"]
    assert summary["status"] == "complete" and summary["counts"]["agent"]["answered"] == N_ITEMS
    traces = [json.loads(line) for line in (result["folder"] / "traces.jsonl").read_text().splitlines()]
    tools = [e for t in traces for e in t["trace"] if e["role"] == "tool"]
    assert (
        tools
        and {e["call"]["name"] for e in tools} == {"GetCameraParameters"}
        and {e["backend"] for e in tools} == {"opencv"}
    )
    # the core is shown only the tools it has
    assert "### EstimateObjectDepth" not in traces[0]["trace"][0]["prompt"]


def test_truth_tools_need_a_generated_set(qa_set, tmp_path, capsys):
    bare = tmp_path / "bare"
    shutil.copytree(qa_set.parent, bare, ignore=shutil.ignore_patterns("ground_truth.jsonl"))
    argv = [
        "--bench",
        "spatialscore",
        "--data",
        str(bare / "SpatialScore.json"),
        "--model",
        "answer-key",
        "--policy",
        "agent",
        "--output",
        str(tmp_path / "out"),
    ]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "ground_truth.jsonl" in err[0] and "--agent-tools cv" in err[0]
    assert main([*argv, "--agent-paradigm", "reflexion"]) == 2
    assert "--agent-paradigm" in capsys.readouterr().err


def test_ablation_separates_perception_from_reasoning(qa_set, tmp_path):
    assert (
        main(
            ["agent-ablation", "--data", str(qa_set), "--output", str(tmp_path), "--tool-sets", "none,truth"]
        )
        == 0
    )
    report = json.loads((tmp_path / "agent-ablation-plan-execute" / "ablation.json").read_text())
    rows = {row["kind"]: row for row in report["table"]}
    # the sanity row
    assert len(rows) == len(KINDS) + 1 and all(row["reasoning_error"] == 0.0 for row in rows.values())
    assert rows["overall"]["perception_error"]["none"] == pytest.approx(
        100.0 - rows["overall"]["scores"]["none"]
    )
    assert rows["overall"]["scores"]["none"] < 100.0 and rows["Camera Motion"]["scores"]["none"] < 100.0
    assert (
        (tmp_path / "agent-ablation-plan-execute" / "ablation.md")
        .read_text()
        .startswith("# SpatialAgent ablation: answer-key")
    )


def _tiny_depth_model(folder: Path) -> Path:
    """A random-weight Depth Anything (metric head) saved as a local model folder, loaded by the real code."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    backbone = transformers.Dinov2Config(
        image_size=56,
        patch_size=14,
        hidden_size=32,
        num_hidden_layers=4,
        num_attention_heads=2,
        intermediate_size=64,
        out_features=["stage1", "stage2", "stage3", "stage4"],
        reshape_hidden_states=False,
    )
    config = transformers.DepthAnythingConfig(
        backbone_config=backbone,
        reassemble_hidden_size=32,
        neck_hidden_sizes=[16, 16, 16, 16],
        fusion_hidden_size=16,
        head_hidden_size=8,
        depth_estimation_type="metric",
        max_depth=20,
    )
    torch.manual_seed(0)
    transformers.DepthAnythingForDepthEstimation(config).save_pretrained(folder)
    transformers.DPTImageProcessor(
        size={"height": 56, "width": 56}, keep_aspect_ratio=False, do_pad=False
    ).save_pretrained(folder)
    return folder


def test_learned_depth_tools_load_a_local_model_and_tiny_weights_answer_wrong(qa_set, tmp_path):
    model = _tiny_depth_model(tmp_path / "tiny-depth")
    result = _run(
        qa_set,
        tmp_path / "out",
        "--agent-tools",
        "learned",
        "--agent-depth-model",
        str(model),
        "--limit",
        "2",
    )
    records = [json.loads(line) for line in (result["folder"] / "samples.jsonl").read_text().splitlines()]
    assert [r["tags"]["subcategory"] for r in records] == ["Absolute Depth", "Relative Depth"]
    # random weights do not see depth; truth tools answer this item (test above)
    assert records[0]["score"] < 1.0
    traces = [json.loads(line) for line in (result["folder"] / "traces.jsonl").read_text().splitlines()]
    depth_runs = [
        e
        for t in traces
        for e in t["trace"]
        if e["role"] == "tool" and e["call"]["name"] == "EstimateObjectDepth"
    ]
    assert len(depth_runs) == 2 and {e["backend"] for e in depth_runs} == {"depth-model:tiny-depth"}
    assert all(r["depth"] is not None for e in depth_runs for r in e["result"]["results"])


def test_a_run_resumes_only_with_the_same_paradigm_and_tools(qa_set, tmp_path, capsys):
    argv = [
        "--bench",
        "spatialscore",
        "--data",
        str(qa_set),
        "--model",
        "answer-key",
        "--policy",
        "agent",
        "--output",
        str(tmp_path),
        "--run-name",
        "r",
        "--limit",
        "1",
        "--no-plot",
    ]
    assert main(argv) == 0
    assert (
        "SpatialAgent plan-execute, truth tools"
        in (tmp_path / "spatialscore" / "r" / "summary.md").read_text()
    )
    assert main([*argv, "--resume", "--agent-paradigm", "react"]) == 2
    assert "agent-paradigm='plan-execute'" in capsys.readouterr().err
    assert main([*argv, "--resume"]) == 0


def test_learned_detector_and_matcher_serve_their_tools_through_the_static_runner(qa_set, tmp_path):
    from tests.policies.agent.test_closed_loop import _tiny_models

    models = _tiny_models(tmp_path / "models")
    result = _run(
        qa_set,
        tmp_path / "out",
        "--agent-tools",
        "learned",
        "--agent-detector-model",
        models["owl"],
        "--agent-matcher-model",
        models["matcher"],
    )
    traces = [json.loads(line) for line in (result["folder"] / "traces.jsonl").read_text().splitlines()]
    backends = {e["call"]["name"]: e["backend"] for t in traces for e in t["trace"] if e["role"] == "tool"}
    assert backends["CountObjects"] == "detector:owl" and backends["GetCameraParameters"] == "matcher:matcher"
    assert backends["EstimateObjectDepth"] == "simulator-truth"  # no depth model given: truth serves depth
    records = [json.loads(line) for line in (result["folder"] / "samples.jsonl").read_text().splitlines()]
    counting = [r["score"] for r in records if r["tags"]["subcategory"] == "Object Counting"]
    # random weights count wrong; truth tools count every item right
    assert counting and sum(counting) < len(counting)
