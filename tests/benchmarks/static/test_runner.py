"""The runner end to end with a scripted fake backend: outputs, resume, determinism, judge, CLI, prompts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.static import get_benchmark
from benchmarks.static.__main__ import main
from benchmarks.static.config import RunConfig, build_parser, field_docs
from benchmarks.static.items import DataError
from benchmarks.static.registry import LoadOptions
from benchmarks.static.runner import run
from policies.backends.cache import CachedBackend
from tests.snapshots import assert_matches_snapshot
from tests.static_helpers import (
    ScriptedBackend,
    write_multihop,
    write_space10,
    write_spatialscore,
    write_spatialtree,
    write_vsibench,
)

EXCERPT = Path("/work/shared/data/multihop_results_ckpt800_excerpt.json")


def answer_by_question(table: dict[str, str]):
    """A scripted model: the answer of the first table key found in the prompt."""

    def answer(prompt: str) -> str:
        return next((value for key, value in table.items() if key in prompt), "I am not sure.")

    return answer


SPATIALSCORE_ANSWERS = {
    "moving to the left": "(a)",
    "Which point corresponds": "A",
    "bowl next to": "No",
    "fireplace and the sofa": "\\scalar{200} \\distance_unit{cm}",
}
SPATIALTREE_ANSWERS = {
    "Which object is closer": "answer: A",
    "How far is the lamp": "2.0",
    "Estimate pitch": '{"roll": 2.0, "pitch": -5.0, "vfov": 60.0}',
    "Is the cup left": "yes",
    "What happens next": "answer: B",
    "handle of the mug": "[0.2, 0.5]",
    "camera motion": "The camera pans left.",
}


def config(tmp_path: Path, bench: str, data: Path, **overrides) -> RunConfig:
    return RunConfig(
        bench=bench, data=data, output=tmp_path / "out", model="scripted-fake", plot=True, **overrides
    )


def test_spatialscore_run_writes_every_output(tmp_path: Path) -> None:
    backend = ScriptedBackend(answer_by_question(SPATIALSCORE_ANSWERS))
    result = run(config(tmp_path, "spatialscore", write_spatialscore(tmp_path / "data")), backend=backend)
    assert result.summary["headline"]["overall"] == 100.0
    assert backend.images_seen == [1, 2, 1, 3]  # single image, two images, video frames
    out = result.out_dir
    assert out == tmp_path / "out" / "spatialscore" / "scripted-fake"
    for name in (
        "manifest.json",
        "predictions.jsonl",
        "samples.jsonl",
        "summary.json",
        "summary.md",
        "tables/by_category.csv",
        "tables/by_question_type.csv",
        "plots/by_category.png",
    ):
        assert (out / name).is_file(), name
    records = [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]
    video = records[3]
    assert (
        video["response"] == "\\scalar{200} \\distance_unit{cm}" and video["parse"]["method"] == "scalar_tag"
    )
    assert video["score"] == 1.0 and "cm" in video["explanation"]  # 200 cm against 2.0 m
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == "complete" and manifest["backend"]["model_id"] == "scripted-fake"
    assert manifest["git"]["commit"] and manifest["packages"]["numpy"] and manifest["data"]["sha256"]
    assert manifest["config"]["bench"] == "spatialscore" and manifest["prompt_style"] == "paper"
    # each row with its 95 % interval (issue 34): 1 of 1 right is Wilson [20.65, 100] %
    text = (out / "summary.md").read_text()
    assert "| Others | 1 | 1 | 100.00 | [20.65, 100.00] | 0 |" in text
    assert "- **overall**: 100.00 [51.01, 100.00]" in text  # 4 of 4, four different images: Wilson
    summary = json.loads((out / "summary.json").read_text())
    assert summary["headline_ci"]["overall"] == pytest.approx([51.01, 100.0], abs=0.01)
    assert summary["intervals"]["clusters"] == 4 and summary["intervals"]["confidence"] == 0.95


def test_each_benchmark_runs_end_to_end(tmp_path: Path) -> None:
    space = run(
        config(tmp_path, "space10", write_space10(tmp_path / "s10")),
        backend=ScriptedBackend(
            answer_by_question(
                {
                    "How many beds": "B",
                    "Which description": "The door is lower than the TV.",
                    "does not contain": "B and E",
                }
            )
        ),
    )
    assert space.summary["headline"]["single_answer_overall"] == 100.0
    assert space.summary["headline"]["multiple_answer_overall"] == 100.0
    capabilities = {row["capability"]: row for row in space.summary["tables"]["capabilities"]["rows"]}
    # EQ links C5; no single EP item
    assert capabilities["C5"]["n"] == 1 and capabilities["C9"]["score"] is None
    hop = run(
        config(tmp_path, "multihopspatial", write_multihop(tmp_path / "mh")),
        backend=ScriptedBackend(
            answer_by_question(
                {
                    "farthest from me": "Answer: (a) fork\nBounding Box: [704, 573, 999, 780]",
                    "Which object is it": "Answer: (c) mouse",
                }
            )
        ),
    )
    headline = hop.summary["headline"]
    assert (headline["mcq_accuracy"], headline["acc_at_50_iou"], headline["box_unreadable"]) == (
        50.0,
        50.0,
        1,
    )
    assert [row["hop_view"] for row in hop.summary["tables"]["by_hop_view"]["rows"]] == [
        "3Hop-Exo",
        "1Hop-Ego",
    ]


def test_spatialtree_project_and_lmms_aggregation(tmp_path: Path) -> None:
    data = write_spatialtree(tmp_path / "st")
    project = run(
        config(tmp_path, "spatialtree", data),
        backend=ScriptedBackend(answer_by_question(SPATIALTREE_ANSWERS)),
    )
    assert project.summary["headline"]["overall"] == pytest.approx(100.0)  # every leaf with data is perfect
    assert project.summary["counts"]["unscored_by_scorer"] == {"judge_required": 1}
    assert project.summary["counts"]["needs_judge_unavailable"] == 1
    # the tree's intervals (issue 34): every headline number has one, built up the weighted tree
    bounds = project.summary["headline_ci"]
    assert set(bounds) == set(project.summary["headline"])
    assert bounds["overall"][1] == 100.0 and 0.0 < bounds["overall"][0] < 100.0
    lmms = run(
        config(
            tmp_path,
            "spatialtree",
            data,
            mode="spatialtree-lmms-eval",
            score_only=project.out_dir / "predictions.jsonl",
        )
    )
    # Hand-worked with the lmms-eval weights: L1 0.44, L2 0.3, L3 0.0975, L4 0 (missing leaves count 0)
    assert lmms.summary["headline"]["level_L1"] == pytest.approx(44.0)
    assert lmms.summary["headline"]["level_L2"] == pytest.approx(30.0)
    assert lmms.summary["headline"]["overall"] == pytest.approx(20.9375)
    assert lmms.summary["headline_ci"] == {}  # lmms-eval's own aggregate: no interval of ours


def test_resume_asks_only_for_unfinished_items(tmp_path: Path) -> None:
    data = write_spatialscore(tmp_path / "data")
    flaky = ScriptedBackend(answer_by_question(SPATIALSCORE_ANSWERS), fail_on=lambda n, text: n > 2)
    cfg = config(tmp_path, "spatialscore", data, batch_size=1, max_consecutive_errors=2)
    with pytest.raises(
        RuntimeError, match=r"2 items in a row ended in an error calling model .scripted-fake."
    ):
        run(cfg, backend=flaky)
    lines = [
        json.loads(x)
        for x in (cfg.output / "spatialscore" / "scripted-fake" / "predictions.jsonl")
        .read_text()
        .splitlines()
    ]
    assert [x["error"] is None for x in lines] == [True, True, False, False]
    with pytest.raises(ValueError, match="already holds predictions; pass --resume"):
        run(cfg, backend=flaky)
    healthy = ScriptedBackend(answer_by_question(SPATIALSCORE_ANSWERS))
    result = run(RunConfig(**{**cfg.__dict__, "resume": True}), backend=healthy)
    assert len(healthy.calls) == 2  # only the two failed items were asked again
    assert result.summary["headline"]["overall"] == 100.0 and result.summary["counts"]["errors"] == 0
    again = ScriptedBackend(answer_by_question({}))
    run(RunConfig(**{**cfg.__dict__, "resume": True}), backend=again)
    assert again.calls == []


def test_resume_needs_the_manifest_and_quarantines_damaged_prediction_lines(tmp_path: Path, capsys) -> None:
    data = write_spatialscore(tmp_path / "data")
    cfg = config(tmp_path, "spatialscore", data, batch_size=1)
    run(cfg, backend=ScriptedBackend(answer_by_question(SPATIALSCORE_ANSWERS)))
    folder = cfg.output / "spatialscore" / "scripted-fake"
    predictions = folder / "predictions.jsonl"
    lines = predictions.read_bytes().splitlines()
    wrong = json.loads(lines[1])
    wrong["item_id"] = [wrong["item_id"]]
    predictions.write_bytes(
        b"\n".join([lines[0], b'{"item_id": "\xff"}', json.dumps(wrong).encode(), *lines[2:], b'{"item_'])
    )
    resumed = RunConfig(**{**cfg.__dict__, "resume": True})
    (folder / "manifest.json").rename(folder / "manifest.bak")
    with pytest.raises(ValueError, match=r"manifest.json is missing.*restore manifest.json.*--run-name"):
        run(resumed, backend=ScriptedBackend(answer_by_question({})))
    (folder / "manifest.bak").rename(folder / "manifest.json")
    healthy = ScriptedBackend(answer_by_question(SPATIALSCORE_ANSWERS))
    capsys.readouterr()
    result = run(resumed, backend=healthy)
    assert "predictions.jsonl: 3 damaged line(s) (line 2, 3, 6)" in capsys.readouterr().err
    assert len(healthy.calls) == 1  # the item whose line had a list as its id is asked again
    assert result.summary["headline"]["overall"] == 100.0
    assert (folder / "predictions.damaged.jsonl").read_bytes().count(b"\n") == 3


def test_same_predictions_give_identical_results(tmp_path: Path) -> None:
    first = run(
        config(tmp_path, "multihopspatial", EXCERPT, score_only=EXCERPT, run_name="a", mode="multihop-repo")
    )
    second = run(
        config(tmp_path, "multihopspatial", EXCERPT, score_only=EXCERPT, run_name="b", mode="multihop-repo")
    )
    for name in ("samples.jsonl", "summary.json", "summary.md", "tables/by_hop_view.csv"):
        assert (first.out_dir / name).read_bytes() == (second.out_dir / name).read_bytes(), name


def test_score_only_reproduces_upstream_values_through_the_runner(tmp_path: Path) -> None:
    result = run(config(tmp_path, "multihopspatial", EXCERPT, score_only=EXCERPT, mode="multihop-repo"))
    upstream = {str(row["id"]): row for row in json.loads(EXCERPT.read_text())}
    for record in result.records:
        row = upstream[record["item_id"]]
        assert (record["metrics"]["iou"], record["correct"], record["metrics"]["prediction"]) == (
            row["iou"],
            row["score"],
            row["prediction"],
        )


def test_score_only_checks_prediction_ids(tmp_path: Path) -> None:
    data = write_spatialscore(tmp_path / "data", images=False)
    predictions = tmp_path / "p.jsonl"
    predictions.write_text(json.dumps({"item_id": "999", "response": "A"}) + "\n")
    with pytest.raises(DataError, match=r"1 predictions name items not in the data \(e.g. \['999'\]\)"):
        run(config(tmp_path, "spatialscore", data, score_only=predictions))
    predictions.write_text(json.dumps({"item_id": "258", "response": "(a)"}) + "\n")
    result = run(config(tmp_path, "spatialscore", data, score_only=predictions))
    assert result.summary["counts"]["missing_predictions"] == 3 and result.summary["counts"]["samples"] == 1


def test_judge_is_reported_separately(tmp_path: Path) -> None:
    data = write_spatialscore(tmp_path / "data")
    model = ScriptedBackend(answer_by_question({**SPATIALSCORE_ANSWERS, "fireplace and the sofa": "4 m"}))
    judge = ScriptedBackend(lambda prompt: "work...\noutput: 0.5")
    result = run(config(tmp_path, "spatialscore", data), backend=model, judge=judge)
    video = result.records[3]
    # 4 m vs 2 m: error 1.0, MRA 0
    assert video["score"] == pytest.approx(0.0) and video["judge"]["score"] == 0.5
    assert len(judge.calls) == 1 and "gt_answer: 2.0 m" in judge.calls[0]  # only the open-ended item
    section = result.summary["judge"]
    assert section["asked"] == 1 and section["mean_judge_score"] == 50.0
    # (0 + 0.5) / 2 for the open item
    assert section["paper_combined_overall"] == pytest.approx(100 * (3 + 0.25) / 4)
    assert result.summary["headline"]["overall"] == 75.0  # the rule-based score is unchanged


def test_handed_in_model_and_judge_are_used_while_their_caches_are_empty(tmp_path: Path) -> None:
    """A CachedBackend has a length (its cache's rows), so it is falsy while empty: the runner must still ask
    the model and the judge it is handed, not build others (or drop the judge)."""
    data = write_spatialscore(tmp_path / "data")
    answers = {**SPATIALSCORE_ANSWERS, "fireplace and the sofa": "4 m"}
    model = CachedBackend(ScriptedBackend(answer_by_question(answers)), tmp_path / "model.sqlite")
    judge = CachedBackend(ScriptedBackend(lambda prompt: "work...\noutput: 0.5"), tmp_path / "judge.sqlite")
    assert len(model) == len(judge) == 0
    result = run(config(tmp_path, "spatialscore", data), backend=model, judge=judge)
    assert result.records[3]["judge"]["score"] == 0.5 and result.summary["judge"]["asked"] == 1
    assert (len(model), len(judge)) == (4, 1)


def test_space10_official_mode_with_and_without_judge(tmp_path: Path) -> None:
    data = write_space10(tmp_path / "s10")
    model = ScriptedBackend(
        answer_by_question({"How many beds": "B", "Which description": "A", "does not contain": "B, E"})
    )
    plain = run(config(tmp_path, "space10", data, mode="space10-lmms-eval", run_name="plain"), backend=model)
    # list strings: every item falls back to E / F
    assert plain.summary["headline"]["single_answer_overall"] == 0.0
    judged = run(
        config(
            tmp_path,
            "space10",
            data,
            mode="space10-lmms-eval",
            run_name="judged",
            score_only=plain.out_dir / "predictions.jsonl",
        ),
        judge=ScriptedBackend(answer_by_question({"double-choice": "B, E", "single-choice question": "B"})),
    )
    # the rule-based official score stays apart
    assert judged.summary["headline"]["single_answer_overall"] == 0.0
    # judge says B: right for EQ, wrong for SA
    assert judged.summary["judge"]["judge_assisted_single_answer_overall"] == 50.0
    assert judged.summary["judge"]["judge_assisted_multiple_answer_overall"] == 100.0


def test_cli_score_only_and_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        [
            "--bench",
            "multihopspatial",
            "--data",
            str(EXCERPT),
            "--score-only",
            str(EXCERPT),
            "--output",
            str(tmp_path),
            "--no-plot",
        ]
    )
    out = capsys.readouterr().out
    assert code == 0 and "mcq_accuracy: 63.33" in out and "results:" in out
    assert not (tmp_path / "multihopspatial" / "multihop_results_ckpt800_excerpt-rescored" / "plots").exists()
    assert main(["--bench", "vsi", "--data", str(EXCERPT), "--model", "x"]) == 2
    assert "--bench must be one of" in capsys.readouterr().err
    assert main(["--bench", "space10", "--data", str(EXCERPT)]) == 2
    assert "--model is required" in capsys.readouterr().err


def test_config_fields_are_documented_flags() -> None:
    docs = field_docs(RunConfig)
    assert set(docs) == {f for f in RunConfig.__dataclass_fields__}
    help_text = build_parser().format_help()
    assert "--score-only" in help_text and "--no-resume" in help_text and "Weight-tree file" in help_text


def _prompt_snapshot(tmp_path: Path) -> dict[str, str]:
    writers = {
        "spatialscore": write_spatialscore,
        "space10": write_space10,
        "multihopspatial": write_multihop,
        "spatialtree": write_spatialtree,
        "vsibench": write_vsibench,
    }
    snapshot = {}
    for name, writer in writers.items():
        spec = get_benchmark(name)
        for item in spec.load(writer(tmp_path / name), LoadOptions(check_media=False)):
            for style in spec.prompt_styles:
                prompt = spec.build_prompt(item, style)
                snapshot[f"{name}/{item.item_id}/{style}"] = (
                    f"[{prompt.preamble_role}] {prompt.preamble}\n" if prompt.preamble else ""
                ) + prompt.text
    return snapshot


def test_prompts_match_snapshot(tmp_path: Path) -> None:
    """Published prompt formats are frozen; accept a deliberate change with UPDATE_SNAPSHOTS=1."""
    current = _prompt_snapshot(tmp_path)
    assert_matches_snapshot("static_prompts.json", json.dumps(current, indent=2, ensure_ascii=False) + "\n")


def test_video_items_send_uniformly_sampled_frames(tmp_path: Path) -> None:
    import imageio.v2 as imageio
    import numpy as np

    data = tmp_path / "st"
    data.mkdir()
    writer = imageio.get_writer(data / "clip.mp4", fps=5)
    for i in range(12):
        writer.append_data(np.full((16, 16, 3), 20 * i, dtype=np.uint8))
    writer.close()
    row = {
        "session_id": "v1",
        "question": "How far did the camera move (in meters)?",
        "answer": "1.5",
        "question_type": "open",
        "extra_info": json.dumps(
            {"metricfunc": "meanrelativeacc", "spatree0": "L1", "spatree1": "Motion", "spatree2": "Ego"}
        ),
        "video": ["clip.mp4"],
    }
    (data / "bench.jsonl").write_text(json.dumps(row) + "\n")
    backend = ScriptedBackend(lambda prompt: "1.5")
    result = run(config(tmp_path, "spatialtree", data / "bench.jsonl", video_frames=4), backend=backend)
    assert backend.images_seen == [4] and result.records[0]["score"] == 1.0
