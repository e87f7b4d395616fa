"""``python -m benchmarks.goal_scoring`` end to end on a small dataset of real PNG files."""

import hashlib
import json
import subprocess
import sys
import types
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from action_mapping import parse_plan, plan_to_trajectory
from benchmarks.goal_scoring import DatasetWriter, generate_dataset, load_dataset
from benchmarks.goal_scoring.cli import main
from benchmarks.goal_scoring.predict import blind_plan, make_model_backend
from benchmarks.scoring.goal import render_answer, score_goal
from policies.backends.base import Backend, Generation, GenerationConfig
from tests.goal_data import WallPairSource, render_wall

ROOT = Path(__file__).resolve().parents[3]
GARBAGE = "I think the camera should move a little to the left, then stop."


class ScriptedBackend(Backend):
    """A fake model that answers from a script keyed by the start image it is shown."""

    def __init__(self, answers: dict[str, str], config: GenerationConfig | None = None) -> None:
        self.model_id, self.config = "scripted-vlm", config or GenerationConfig()
        self.answers, self.conversations = answers, []

    def generate(self, messages):
        self.conversations.append(messages)
        images = [p["image"] for p in messages[1]["content"] if p["type"] == "image"]
        return Generation(
            self.answers[image_key(*images)], prompt_tokens=100, completion_tokens=20, latency_s=0.5
        )


def image_key(start, goal) -> str:
    return hashlib.sha256(
        np.ascontiguousarray(start).tobytes() + np.ascontiguousarray(goal).tobytes()
    ).hexdigest()


@pytest.fixture(scope="module")
def dataset_dir(tmp_path_factory):
    """6 navigation and 3 manipulation pairs from the wall renderer (real PNG files)."""
    root = tmp_path_factory.mktemp("goal") / "data"
    generate_dataset(WallPairSource("nav"), 6, 3, root)
    manip = WallPairSource("manip")
    with DatasetWriter(root, append=True) as w:
        for i in range(3):
            pair = manip.sample(np.random.default_rng([11, i]))
            record = {
                "id": f"manip-{i}",
                "kind": "manip",
                "instruction": "Grasp it.",
                "plan": pair.plan.to_json(),
                "step_sizes": {"translation": 0.05, "rotation": 0.1},
                "trajectory": pair.trajectory.tolist(),
            }
            w.add(record, pair.start_image, pair.goal_image)
    return root


def scripted_answers(ds):
    """Oracle answers, except: one garbage text (parse failure), one answer with only its first step."""
    answers, expected = {}, {}
    for i, s in enumerate(ds):
        text = render_answer(s.plan, s.kind)
        if i == 1:
            text = GARBAGE
        elif i == 2:
            text = (
                "Sure! ```json\n"
                + json.dumps({"step_1": s.plan.to_json()["step_1"]}, ensure_ascii=False)
                + "\n```"
            )
        answers[image_key(ds.load_image(s, "start"), ds.load_image(s, "goal"))] = text
        expected[s.id] = score_goal(text, s.reference()).value
    return answers, expected


@pytest.fixture
def fake_factory(monkeypatch):
    """Stand in for policies.backends.factory (another part of the project) and record how it is called."""
    calls = []
    module = types.ModuleType("policies.backends.factory")

    def make_backend(model, *, api_base=None, config=None):
        calls.append({"model": model, "api_base": api_base, "config": config})
        return ScriptedBackend(module.answers, config)

    module.make_backend = make_backend
    monkeypatch.setitem(sys.modules, "policies.backends.factory", module)
    return module, calls


def read_jsonl(path):
    return [json.loads(line) for line in Path(path).read_text().splitlines()]


def test_predict_then_score_end_to_end(dataset_dir, fake_factory, tmp_path, capsys):
    ds = load_dataset(dataset_dir)
    module, calls = fake_factory
    module.answers, expected = scripted_answers(ds)
    rc = main(
        [
            "predict",
            "--dataset",
            str(dataset_dir),
            "--policy",
            "mllm",
            "--model",
            "my-vlm",
            "--api-base",
            "http://127.0.0.1:8000/v1",
            "--output",
            str(tmp_path / "run"),
            "--batch-size",
            "4",
            "--max-new-tokens",
            "256",
        ]
    )
    assert rc == 0
    assert calls == [
        {
            "model": "my-vlm",
            "api_base": "http://127.0.0.1:8000/v1",
            "config": GenerationConfig(max_new_tokens=256, temperature=0.0, seed=0),
        }
    ]
    preds = read_jsonl(tmp_path / "run" / "predictions.jsonl")
    assert [p["id"] for p in preds] == [s.id for s in ds]
    assert (
        preds[1]["output"] == GARBAGE
        and preds[0]["model"] == "scripted-vlm"
        and preds[0]["prompt_tokens"] == 100
    )
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["benchmark"] == "goal_scoring.predict" and manifest["model"]["model_id"] == "scripted-vlm"
    assert manifest["dataset"]["n"] == 9 and len(manifest["dataset"]["samples_sha256"]) == 64
    assert manifest["packages"]["numpy"] == np.__version__ and set(manifest["git"]) == {"commit", "dirty"}
    assert manifest["config"]["model"] == "my-vlm" and manifest["machine"]["python"]

    rc = main(
        [
            "score",
            "--dataset",
            str(dataset_dir),
            "--predictions",
            str(tmp_path / "run" / "predictions.jsonl"),
            "--output",
            str(tmp_path / "scores"),
        ]
    )
    assert rc == 0
    out = tmp_path / "scores"
    summary = json.loads((out / "summary.json").read_text())
    assert summary["n"] == 9 and summary["parse_failures"] == 1 and summary["missing"] == 0
    assert summary["mean_score"] == pytest.approx(np.mean(list(expected.values())))
    assert summary["mean_score_parsed"] == pytest.approx(
        np.mean([v for k, v in expected.items() if k != ds.samples[1].id])
    )
    assert summary["baselines"]["answer-key"] == 1.0 and 0.0 <= summary["baselines"]["blind"] < 1.0
    assert set(summary["by_kind"]) == {"nav", "manip"} and summary["by_kind"]["manip"]["n"] == 3
    assert sum(summary["histogram"]["counts"]) == 9 and summary["failure_reasons"] == {"no_json": 1}
    records = read_jsonl(out / "records.jsonl")
    assert records[1]["parse_failed"] and records[1]["value"] == 0.0 and records[0]["value"] == 1.0
    assert records[2]["value"] == pytest.approx(expected[ds.samples[2].id]) and records[2]["steps"]
    table = (out / "summary.md").read_text()
    assert "| scripted-vlm | 9 |" in table and "| answer-key (reference) | 9 | 1.0000" in table
    assert "Parse failures (scored 0) by reason: no_json ×1" in table
    with Image.open(out / "plots" / "score_histogram.png") as im:
        assert im.size[0] > 100
    manifest = json.loads((out / "manifest.json").read_text())
    assert (
        manifest["predictions"]["sha256"]
        == hashlib.sha256((tmp_path / "run" / "predictions.jsonl").read_bytes()).hexdigest()
    )
    assert "| scripted-vlm |" in capsys.readouterr().out


def test_prompt_carries_the_sample_step_sizes_and_both_images(dataset_dir, fake_factory, tmp_path):
    ds = load_dataset(dataset_dir)
    module, _ = fake_factory
    module.answers, _ = scripted_answers(ds)
    backend = ScriptedBackend(module.answers)
    from benchmarks.goal_scoring.cli import run_predict
    from benchmarks.goal_scoring.config import PredictConfig

    run_predict(PredictConfig(dataset_dir, tmp_path / "r", num_steps=None, limit=2), backend=backend)
    system, user = backend.conversations[0]
    sample = ds.samples[0]
    assert (
        system["role"] == "system"
        and "Translation: 0.05 m per step. Rotation: 0.1 rad per step." in system["content"]
    )
    assert f"keys step_1 to step_{len(sample.plan.steps)}" in system["content"]
    images = [p["image"] for p in user["content"] if p["type"] == "image"]
    assert [img.dtype for img in images] == [np.uint8, np.uint8]
    assert np.array_equal(images[1], ds.load_image(sample, "goal"))
    assert user["content"][-1]["text"] == sample.instruction
    manip_conv = [c for c in backend.conversations if "robot end-effector" in c[0]["content"]]
    assert not manip_conv  # limit=2 kept only navigation samples
    assert len(read_jsonl(tmp_path / "r" / "predictions.jsonl")) == 2


def test_a_handed_in_backend_is_used_while_its_cache_is_empty(dataset_dir, fake_factory, tmp_path):
    """A CachedBackend has a length (its cache's rows), so it is falsy while empty: it must still answer."""
    from benchmarks.goal_scoring.cli import run_predict
    from benchmarks.goal_scoring.config import PredictConfig
    from policies.backends.cache import CachedBackend

    module, calls = fake_factory
    module.answers, _ = scripted_answers(load_dataset(dataset_dir))
    inner = ScriptedBackend(module.answers)
    backend = CachedBackend(inner, tmp_path / "cache.sqlite")
    assert len(backend) == 0
    run_predict(PredictConfig(dataset_dir, tmp_path / "r", num_steps=None, limit=2), backend=backend)
    assert calls == [] and len(inner.conversations) == 2 and len(backend) == 2


def test_builtin_answer_key_and_blind(dataset_dir, tmp_path, capsys):
    """The built-in references; ``oracle``, the answer key's former name, still works with a note."""
    assert (
        main(
            ["predict", "--dataset", str(dataset_dir), "--policy", "oracle", "--output", str(tmp_path / "o")]
        )
        == 0
    )
    assert "note: --policy oracle is deprecated; use --policy answer-key" in capsys.readouterr().err
    assert {r["model"] for r in read_jsonl(tmp_path / "o" / "predictions.jsonl")} == {"answer-key"}
    assert (
        main(
            [
                "score",
                "--dataset",
                str(dataset_dir),
                "--predictions",
                str(tmp_path / "o" / "predictions.jsonl"),
                "--output",
                str(tmp_path / "so"),
                "--no-baselines",
            ]
        )
        == 0
    )
    summary = json.loads((tmp_path / "so" / "summary.json").read_text())
    assert summary["mean_score"] == 1.0 and summary["baselines"] == {}
    assert (
        main(
            [
                "score",
                "--dataset",
                str(dataset_dir),
                "--predictions",
                "blind",
                "--output",
                str(tmp_path / "sb"),
            ]
        )
        == 0
    )
    blind = json.loads((tmp_path / "sb" / "summary.json").read_text())
    ds = load_dataset(dataset_dir)
    nav_blind = blind_plan([s.plan for s in ds if s.kind == "nav"])
    expected = [
        score_goal(render_answer(nav_blind, "nav"), s.reference()).value for s in ds if s.kind == "nav"
    ]
    assert blind["by_kind"]["nav"]["mean_score"] == pytest.approx(np.mean(expected))
    assert blind["mean_score"] == blind["baselines"]["blind"] < 1.0


def test_lmms_eval_scorer_by_name(dataset_dir, tmp_path):
    assert (
        main(
            [
                "score",
                "--dataset",
                str(dataset_dir),
                "--predictions",
                "answer-key",
                "--scorer",
                "lmms-eval",
                "--output",
                str(tmp_path / "l"),
            ]
        )
        == 0
    )
    summary = json.loads((tmp_path / "l" / "summary.json").read_text())
    assert summary["scorer"] == "lmms-eval" and 0.0 < summary["mean_score"] <= 1.0
    assert 0.0 <= summary["by_kind"]["manip"]["binary_success_rate"] <= 1.0
    assert set(summary["components"]) >= {"direction", "position", "rotation"}
    records = read_jsonl(tmp_path / "l" / "records.jsonl")
    assert records[0]["scorer"] == "lmms-eval" and "agenticnaveval" in records[0]["explanation"]
    rc = main(
        [
            "score",
            "--dataset",
            str(dataset_dir),
            "--predictions",
            "answer-key",
            "--scorer",
            "lmms-eval",
            "--weight-gripper",
            "0",
            "--output",
            str(tmp_path / "x"),
        ]
    )
    assert rc == 2


def test_missing_and_unknown_predictions(dataset_dir, tmp_path, capsys):
    ds = load_dataset(dataset_dir)
    path = tmp_path / "p.jsonl"
    path.write_text(
        "".join(
            json.dumps({"id": s.id, "output": render_answer(s.plan, s.kind)}) + "\n" for s in ds.samples[1:]
        )
    )
    args = [
        "score",
        "--dataset",
        str(dataset_dir),
        "--predictions",
        str(path),
        "--output",
        str(tmp_path / "s"),
    ]
    assert main(args) == 2
    assert "1 sample(s) have no prediction, e.g. ['nav-00000']. Fix:" in capsys.readouterr().err
    assert main([*args, "--allow-missing"]) == 0
    summary = json.loads((tmp_path / "s" / "summary.json").read_text())
    assert summary["missing"] == 1 and summary["mean_score"] == pytest.approx(8 / 9)
    path.write_text(json.dumps({"id": "ghost", "output": "{}"}) + "\n")
    assert main(args) == 2
    assert "name samples not in the dataset, e.g. ['ghost']" in capsys.readouterr().err


def test_predict_errors(dataset_dir, tmp_path, capsys, monkeypatch):
    assert main(["predict", "--dataset", str(dataset_dir), "--output", str(tmp_path / "p")]) == 2
    assert "--policy mllm needs --model" in capsys.readouterr().err
    monkeypatch.setitem(sys.modules, "policies.backends.factory", None)  # not installed
    assert (
        main(["predict", "--dataset", str(dataset_dir), "--model", "m", "--output", str(tmp_path / "p")]) == 2
    )
    assert "needs policies.backends.factory.make_backend" in capsys.readouterr().err


def test_backend_factory_arguments_follow_its_signature(monkeypatch):
    seen = {}
    module = types.ModuleType("policies.backends.factory")
    module.make_backend = lambda model, base_url=None, generation=None: seen.update(
        model=model, url=base_url, gen=generation
    )
    monkeypatch.setitem(sys.modules, "policies.backends.factory", module)
    config = GenerationConfig(max_new_tokens=7)
    make_model_backend("m", api_base="http://x/v1", generation=config)
    assert seen == {"model": "m", "url": "http://x/v1", "gen": config}
    module.make_backend = lambda model: None
    with pytest.raises(RuntimeError, match="takes no API base"):
        make_model_backend("m", api_base="http://x/v1", generation=config)
    with pytest.raises(RuntimeError, match="no response cache to turn off"):
        make_model_backend("m", api_base=None, generation=config, cache=False)
    # the project's factory signature: make_backend(model, *, api_base=None, cache=True, **options)
    module.make_backend = lambda model, *, api_base=None, cache=True, **options: seen.update(
        model=model, url=api_base, cache=cache, options=options
    )
    make_model_backend("m", api_base=None, generation=config, cache=False)
    assert seen["cache"] is False and seen["options"] == {"config": config}


def test_convert_command(tmp_path, capsys):
    plan = parse_plan(
        '{"step_1": {"actions": ["W", "←"], "step_nums": [2, 1]}, "step_2": {"actions": ["D"], "step_nums": [3]}}'
    )
    traj = plan_to_trajectory(plan, np.eye(4), 0.05, 0.1)
    np.save(tmp_path / "t.npy", traj)
    base = [
        "convert",
        "--trajectory",
        str(tmp_path / "t.npy"),
        "--num-steps",
        "0",
        "--step-translation",
        "0.05",
        "--step-rotation",
        "0.1",
    ]
    assert main(base) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed == {"step_sizes": {"translation": 0.05, "rotation": 0.1}, "plan": plan.to_json()}
    for name, pose in (("s.png", traj[0]), ("g.png", traj[-1])):
        Image.fromarray(render_wall(pose, 16)).save(tmp_path / name)
    assert (
        main(
            [
                *base,
                "--dataset",
                str(tmp_path / "d"),
                "--start-image",
                str(tmp_path / "s.png"),
                "--goal-image",
                str(tmp_path / "g.png"),
                "--kind",
                "manip",
                "--instruction",
                "Reach.",
            ]
        )
        == 0
    )
    sample = load_dataset(tmp_path / "d").samples[0]
    assert (sample.id, sample.kind, sample.source) == ("t", "manip", "trajectory:t.npy")
    assert sample.plan.to_json() == plan.to_json() and np.allclose(sample.trajectory, traj)
    assert main([*base, "--dataset", str(tmp_path / "d")]) == 2
    assert "needs --start-image and --goal-image" in capsys.readouterr().err


def test_generate_command(tmp_path, capsys):
    out = tmp_path / "gen"
    assert (
        main(
            [
                "generate",
                "--source",
                "tests.goal_data:WallPairSource",
                "--source-kwargs",
                '{"kind": "nav"}',
                "--n",
                "3",
                "--seed",
                "5",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    assert len(load_dataset(out)) == 3
    assert main(["generate", "--source", "no-such-source", "--out", str(tmp_path / "g2")]) == 2
    assert (
        "no pair source is registered under 'no-such-source' (registered: manip, nav"
        in capsys.readouterr().err
    )


def test_module_entry_point_runs(dataset_dir, tmp_path):
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "benchmarks.goal_scoring",
            "score",
            "--dataset",
            str(dataset_dir),
            "--predictions",
            "answer-key",
            "--output",
            str(tmp_path / "m"),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert "| answer-key | 9 | 1.0000" in result.stdout
