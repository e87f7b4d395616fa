"""``generate --format``: sample sets in each static benchmark's own layout, read by the real loader, prompted,
parsed and scored by the runner: the oracle (a competent model) scores 100 in the project mode, a model that
answers nothing usable scores 0, a constant-letter guess scores low."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from benchmarks.command import main as arena_main
from benchmarks.datagen.sample_formats import FORMATS
from benchmarks.static.__main__ import main
from benchmarks.static.config import RunConfig
from benchmarks.static.registry import LoadOptions, get_benchmark
from benchmarks.static.runner import run
from tests.static_helpers import ScriptedBackend

SEED = 5


def generate(out: Path, fmt: str, n: int) -> Path:
    """Generate through the command line; returns the --data path it printed."""
    assert main(["generate", "--format", fmt, "--out", str(out), "--n", str(n), "--seed", str(SEED)]) == 0
    return out / FORMATS[fmt].data


@pytest.fixture(scope="module")
def sets(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("formats")
    return {fmt: generate(root / fmt, fmt, len(f.kinds)) for fmt, f in FORMATS.items()}


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_oracle_scores_every_generated_item(sets, tmp_path, fmt):
    bench = FORMATS[fmt].bench
    items = get_benchmark(bench).load(sets[fmt], LoadOptions())
    truths = [json.loads(line) for line in (sets[fmt].parent / "ground_truth.jsonl").read_text().splitlines()]
    assert len(items) == len(truths) == len(FORMATS[fmt].kinds)
    assert sorted(t["kind"] for t in truths) == sorted(FORMATS[fmt].kinds)  # every kind the format asks, once
    result = run(RunConfig(bench=bench, data=sets[fmt], output=tmp_path, model="answer-key", plot=False))
    assert result.summary["status"] == "complete" and result.summary["counts"]["parse_failures"] == 0
    assert all(r["score"] == 1.0 and r["parse"]["ok"] for r in result.records), result.records
    numbers = [v for v in result.summary["headline"].values() if isinstance(v, float)]
    assert numbers and all(v == pytest.approx(100.0) for v in numbers), result.summary["headline"]


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_unusable_and_guessing_models_score_low(sets, tmp_path, fmt):
    bench = FORMATS[fmt].bench
    mute = run(
        RunConfig(bench=bench, data=sets[fmt], output=tmp_path, model="mute", plot=False),
        backend=ScriptedBackend(lambda prompt: "I cannot tell from this picture."),
    )
    assert mute.summary["counts"]["parse_failures"] == mute.summary["counts"]["items"]
    assert all(r["score"] == 0.0 for r in mute.records)
    guess = run(
        RunConfig(bench=bench, data=sets[fmt], output=tmp_path, model="guess", plot=False),
        backend=ScriptedBackend(lambda prompt: "A"),
    )
    assert sum(r["score"] for r in guess.records) < 0.75 * len(guess.records)


def test_layouts_are_the_benchmarks_own(sets):
    space10 = sorted(p.relative_to(sets["space10"]).as_posix() for p in sets["space10"].rglob("*.parquet"))
    assert space10 == ["eq_single/test.parquet", "oo_single/test.parquet"]
    row = pq.read_table(sets["space10"] / "eq_single" / "test.parquet").to_pylist()[0]
    assert row["answer"] in "ABCD" and row["category"] == "EQ" and row["image"][0][:4] == b"\x89PNG"
    multihop = json.loads(sets["multihop"].read_text())[0]
    assert "<choice>(a) " in multihop["question"] and multihop["answer"].startswith("(")
    x, y, w, h = multihop["bbox"]
    width, height = (int(v) for v in multihop["image_resolution"].split("x"))
    assert 0 <= x < x + w <= width and 0 <= y < y + h <= height and w * h >= 1
    vsi = [json.loads(line) for line in sets["vsibench"].read_text().splitlines()]
    for row in vsi:
        assert (sets["vsibench"].parent / row["dataset"] / row["scene_name"] / "000.png").is_file()
    counting = next(r for r in vsi if r["question_type"] == "object_counting")
    assert (
        counting["options"] is None
        and int(counting["ground_truth"]) >= 1
        and "Select" not in counting["question"]
    )
    tree = [json.loads(line) for line in sets["spatialtree"].read_text().splitlines()]
    assert {json.loads(r["extra_info"])["metricfunc"] for r in tree} == {"multichoiceeval", "meanrelativeacc"}


def test_same_seed_same_files(sets, tmp_path):
    again = generate(tmp_path / "again", "space10", len(FORMATS["space10"].kinds))
    files = {p.relative_to(again.parent): p.read_bytes() for p in again.parent.rglob("*") if p.is_file()}
    assert files == {
        p.relative_to(sets["space10"].parent): p.read_bytes()
        for p in sets["space10"].parent.rglob("*")
        if p.is_file()
    }


def test_format_errors_are_one_line(tmp_path, capsys):
    assert main(["generate", "--format", "gqa", "--out", str(tmp_path / "a")]) == 2
    assert (
        capsys.readouterr().err.strip()
        == "error: --format 'gqa': choose one of spatialscore, space10, multihop, spatialtree, vsibench"
    )
    assert (
        main(["generate", "--format", "multihop", "--kinds", "counting", "--out", str(tmp_path / "b")]) == 2
    )
    assert "unknown ['counting']; choose from closest_object" in capsys.readouterr().err


def test_spatial_arena_static_generate_route(tmp_path, capsys):
    assert arena_main(["static", "generate", "--format", "multihop", "--out", str(tmp_path), "--n", "1"]) == 0
    assert "--bench multihopspatial --data" in capsys.readouterr().out
    assert len(json.loads((tmp_path / "multihop_test.json").read_text())) == 1
