"""VSI-Bench: loader, prompts, lmms-eval's scorer reproduced on hand-made answers, the project's mode, summary."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.scoring.official import vsibench as official
from benchmarks.static.items import DataError
from benchmarks.static.registry import LoadOptions, benchmark_names, get_benchmark
from tests import static_helpers as H

SPEC = get_benchmark("vsibench")


@pytest.fixture
def items(tmp_path: Path):
    return SPEC.load(H.write_vsibench(tmp_path), LoadOptions())


def by_type(items, question_type: str):
    return next(i for i in items if i.tags["question_type"] == question_type)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("3", 3.0),
        ("3.0 meters", 3.0),
        ("There are 3 boxes", 3.0),
        ("three", 3.0),
        ("Three boxes.", 3.0),
        ("twenty-one", 21.0),
        ("three hundred and twenty-one", 321.0),
        ("one apple, room 2", 1.0),
        ("room 2, one apple", 2.0),
        ("two thousand five hundred", 2500.0),
        ("a hundred", 100.0),
        ("-1.5", -1.5),
        ("three, four", 7.0),  # upstream sums a run of number words whatever separates them
        ("someone", None),
        ("", None),
        ("I'm sorry, I must skip this.", None),
        ("1,200", 1.0),
    ],
)
def test_extract_number_as_upstream(text, expected):
    assert official.extract_number(text) == expected


def test_mra_thresholds_and_float_edge():
    assert list(official.THRESHOLDS) == pytest.approx([0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95])
    assert official.na_score("10", "10").score == 1.0
    # error exactly 0.2: upstream's 1 - 0.8 is 0.19999999999999996, so C = 0.80 fails (6 of 10 pass) ...
    assert official.na_score("12", "10").score == pytest.approx(0.6)
    # ... where the project's MRA counts the exact threshold as the published "<=" (7 of 10).
    from benchmarks.scoring.metrics import mean_relative_accuracy

    assert mean_relative_accuracy(12, 10) == pytest.approx(0.7)
    assert official.na_score("20 cm", "10").score == 0.0  # error 1.0: no threshold
    assert official.na_score("no idea", "10").score == 0.0
    zero = official.na_score("1", "0")
    assert zero.score == 0.0 and "ZeroDivisionError" in zero.problem


def test_mca_first_token():
    assert (
        official.mca_score("A", "A")
        == official.mca_score("a.", "A")
        == official.mca_score("A. left", "A")
        == 1.0
    )
    assert official.mca_score("A\n", "A") == 1.0
    assert (
        official.mca_score("The answer is A", "A")
        == official.mca_score("(A)", "A")
        == official.mca_score("Answer: A", "A")
        == 0.0
    )


def test_aggregate_averages_direction_levels_and_types():
    scores = [
        ("object_rel_direction_easy", 1.0),
        ("object_rel_direction_medium", 0.0),
        ("object_rel_direction_hard", 0.5),
        ("object_counting", 1.0),
        ("object_counting", 0.0),
        ("route_planning", 1.0),
    ]
    result = official.aggregate(scores)
    assert result["sub_scores"] == {
        "object_counting": 0.5,
        "route_planning": 1.0,
        "object_rel_direction": 0.5,
    }
    assert result["overall"] == pytest.approx((0.5 + 1.0 + 0.5) / 3)
    assert "object_abs_distance" in result["missing"]
    partial = official.aggregate([("object_rel_direction_easy", 1.0)])
    assert partial["sub_scores"]["object_rel_direction"] == 1.0
    assert any("object_rel_direction_hard" in m for m in partial["missing"])


def test_registered_and_loaded(items):
    assert "vsibench" in benchmark_names()
    assert len(items) == 10 and {i.modality for i in items} == {"video"}
    counting = by_type(items, "object_counting")
    assert counting.task == "numeric" and counting.meta == {"value": 4.0, "unit": None}
    assert by_type(items, "object_abs_distance").meta["unit"] == "m"
    assert by_type(items, "object_size_estimation").meta["unit"] == "cm"
    assert by_type(items, "room_size_estimation").meta["unit"] == "m2"
    hard = by_type(items, "object_rel_direction_hard")
    assert (
        hard.options == {"A": "front-left", "B": "front-right", "C": "back-left", "D": "back-right"}
        and hard.meta["key"] == "D"
    )
    assert len(counting.media) == 2 and counting.media[0].endswith("arkitscenes/42446540/000.png")
    assert counting.tags["subset"] == "full"


def test_prompts_are_lmms_eval_s(items):
    hard = SPEC.build_prompt(by_type(items, "object_rel_direction_hard"), "paper").text
    assert hard == (
        "These are frames of a video.\nStanding by the bed facing the tv, where is the sink?\nOptions:\nA. front-left\n"
        "B. front-right\nC. back-left\nD. back-right\nAnswer with the option's letter from the given choices directly."
    )
    counting = by_type(items, "object_counting")
    assert SPEC.build_prompt(counting, "paper").text == (
        "These are frames of a video.\nHow many chair(s) are in this room?\nPlease answer the question using a single word or phrase."
    )
    assert SPEC.build_prompt(counting, "api").text.endswith(
        "Do not response anything other than a single number!"
    )


def test_modes_on_hand_made_answers(items):
    official_mode, project = SPEC.mode("vsibench-lmms-eval"), SPEC.mode("project")
    distance = by_type(items, "object_abs_distance")  # 2.3 m
    assert official_mode.score(distance, "2.3").score == project.score(distance, "2.3").score == 1.0
    # 230 cm: upstream ignores the unit (230 vs 2.3 -> 0); the project converts to metres.
    assert official_mode.score(distance, "230 cm").score == 0.0
    assert project.score(distance, "230 cm").score == 1.0
    # "about 2 to 2.3 meters": upstream takes the first number (2, error 0.13 -> C 0.50..0.85: 8/10); the
    # project the range max.
    assert official_mode.score(distance, "about 2 to 2.3 meters").score == pytest.approx(0.8)
    assert project.score(distance, "about 2 to 2.3 meters").score == 1.0
    counting = by_type(items, "object_counting")
    assert official_mode.score(counting, "four").score == project.score(counting, "four").score == 1.0
    relation = by_type(items, "object_rel_distance")  # key B "tv"
    assert official_mode.score(relation, "The answer is B.").score == 0.0
    assert project.score(relation, "The answer is B.").score == 1.0
    assert project.score(relation, "tv").score == 1.0 and official_mode.score(relation, "tv").score == 0.0
    refusal = official_mode.score(relation, "I'm sorry, I must skip this.")
    assert refusal.score == 0.0 and not refusal.parse.ok


def test_summary_headline_is_lmms_eval_overall(items):
    answers = {i.item_id: SPEC.gold_answer(i, "paper") for i in items}
    answers[by_type(items, "object_rel_direction_easy").item_id] = (
        "B"  # wrong: rel-direction = (0 + 1 + 1) / 3
    )
    answers[by_type(items, "object_counting").item_id] = "5"  # 4 vs 5: error 0.25 -> C 0.50..0.75 pass: 6/10
    mode = SPEC.mode("vsibench-lmms-eval")
    records = [{"tags": dict(i.tags), **mode.score(i, answers[i.item_id]).to_dict()} for i in items]
    summary = mode.summarize(items, records, {})
    head = summary["headline"]
    assert head["object_rel_direction"] == pytest.approx(100 * 2 / 3, abs=1e-3)
    assert head["object_counting"] == pytest.approx(60.0)
    assert head["overall"] == pytest.approx(100 * (6 + 0.6 + 2 / 3) / 8, abs=1e-3)
    assert [r["sub_score"] for r in summary["tables"]["sub_scores"]["rows"]][-1] == "object_rel_direction"
    # every headline number with its interval (issue 34), each around its value
    bounds = summary["headline_ci"]
    assert set(bounds) == set(head)
    assert all(lo <= head[name] + 1e-9 and head[name] - 1e-9 <= hi for name, (lo, hi) in bounds.items())
    assert bounds["object_counting"] == pytest.approx([60.0, 60.0])  # one item: the bootstrap has no spread
    assert bounds["overall"][0] < head["overall"] < bounds["overall"][1]


def test_loader_layouts_and_errors(tmp_path: Path):
    rows = H.vsibench_rows()
    # Hub parquet of the debiased subset + a video file per scene.
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    root = tmp_path / "hub"
    root.mkdir()
    pq.write_table(pa.Table.from_pylist(rows), root / "test_debiased.parquet")
    for dataset, scene in {(r["dataset"], r["scene_name"]) for r in rows}:
        (root / "videos" / dataset).mkdir(parents=True, exist_ok=True)
        (root / "videos" / dataset / f"{scene}.mp4").write_bytes(b"\x00")
    items = SPEC.load(root / "test_debiased.parquet", LoadOptions())
    assert {i.tags["subset"] for i in items} == {"debiased"}
    assert items[0].media == (str(root / "videos" / "arkitscenes" / "42446540.mp4"),)
    # No media anywhere: one error naming the scene and the fix; scoring-only loads do not need media.
    bare = H.write_vsibench(tmp_path / "bare", frames=False)
    with pytest.raises(DataError, match=r"arkitscenes/42446540.*--image-root"):
        SPEC.load(bare, LoadOptions())
    assert len(SPEC.load(bare, LoadOptions(check_media=False))) == 10
    # Unknown question type: lmms-eval raises on it too, so the loader refuses it.
    bad = tmp_path / "bad-type.jsonl"
    bad.write_text(json.dumps({**rows[4], "question_type": "object_color"}) + "\n")
    with pytest.raises(DataError, match="unknown question_type"):
        SPEC.load(bad, LoadOptions(check_media=False))
    # Ground truths lmms-eval scores (never matched) are kept with the problem: 0 there, unscored in the
    # project.
    odd = tmp_path / "odd.jsonl"
    odd.write_text(
        json.dumps({**rows[4], "ground_truth": "E"})
        + "\n"
        + json.dumps({**rows[0], "id": 99, "ground_truth": "many"})
        + "\n"
    )
    letter, number = SPEC.load(odd, LoadOptions(check_media=False))
    for item, answer in ((letter, "B"), (number, "4")):
        official_score = SPEC.mode("vsibench-lmms-eval").score(item, answer)
        assert official_score.score == 0.0 and official_score.metrics["problem"]
        assert SPEC.mode("project").score(item, answer).score is None
    assert SPEC.mode("vsibench-lmms-eval").score(letter, "E").score == 1.0  # upstream compares strings only
