"""SpaCE-10: the fork's statistics script on a hand-made dump file, and the single / double task modes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.scoring.official import space10_stats as stats
from benchmarks.static.registry import LoadOptions, get_benchmark
from tests.static_helpers import write_space10

SPEC = get_benchmark("space10")


def dump(records: list[dict]) -> str:
    """What the fork's process_results leaves: json.dump(indent=4) appended once per item, no separator."""
    return "".join(json.dumps(r, ensure_ascii=False, indent=4) for r in records)


RECORDS = [
    {"index": 1, "answer": "B", "prediction": ["B"], "category": "eq"},  # single, one character: right
    {"index": 2, "answer": "C", "prediction": ["C. black table"], "category": "eq"},  # single, "X.": right
    # single, no "X.": wrong
    {
        "index": 3,
        "answer": "A",
        "prediction": ["The answer is A"],
        "category": "eq",
    },
    {"index": 4, "answer": "AC", "prediction": ["A. chair and C. lamp"], "category": "ep"},  # multiple: right
    {"index": 5, "answer": "AC", "prediction": ["A, C"], "category": "ep"},  # letters without dots: wrong
    # key with ", ": never right
    {
        "index": 6,
        "answer": "A, C",
        "prediction": ["A. chair, C. lamp"],
        "category": "ep",
    },
]


def test_statistics_script_on_a_dump_file(tmp_path: Path):
    path = tmp_path / "oo_2_eval.json"
    path.write_text(dump(RECORDS) + "{broken", encoding="utf-8")  # a cut-off last record is skipped
    assert [r["index"] for r in stats.parse_json_objects(path.read_text())] == [1, 2, 3, 4, 5, 6]
    result = stats.statistics_of_file(path)
    assert result["single"] == {"total": 3, "correct": 2, "accuracy": pytest.approx(2 / 3)}
    assert result["multiple"] == {"total": 3, "correct": 1, "accuracy": pytest.approx(1 / 3)}
    assert result["all"] == {"total": 6, "correct": 3, "accuracy": 0.5}
    assert stats.statistics([]) == {g: {"total": 0, "correct": 0, "accuracy": 0.0} for g in stats.GROUPS}


def test_predicted_options():
    assert stats.predicted_options("B") == ["B"]
    assert stats.predicted_options("E. gray sofa, purple curtain; A. red chair") == ["A", "E"]
    assert stats.predicted_options("B, E") == [] and stats.predicted_options("") == []


def test_modes_name_the_task_they_reproduce(tmp_path: Path):
    items = SPEC.load(write_space10(tmp_path), LoadOptions(check_media=False))
    single_item = next(i for i in items if i.tags["answer_kind"] == "single")
    double_item = next(i for i in items if i.tags["answer_kind"] == "multiple")
    assert "space-10-single" in SPEC.mode("space10-single").description
    assert "space-10-double" in SPEC.mode("space10-double").description
    assert SPEC.build_prompt(single_item, "double").text.endswith("You need to choose two options.")
    assert SPEC.build_prompt(double_item, "single").text.endswith("not multiple choices.")
    key = "".join(double_item.meta["key"])
    gold = ", ".join(double_item.meta["key"])
    # The double task's rules miss the list string "['A, C']"; its judge's reply "A, C" is read by the same
    # rule.
    double = SPEC.mode("space10-double")
    assert double.judge_score(double_item, gold, gold).score == 1.0
    # one letter never matches two
    assert SPEC.mode("space10-single").judge_score(double_item, gold, gold[0]).score == 0.0
    # The statistics script: one character or "X." letters.
    script = SPEC.mode("space10-stats")
    dotted = " ".join(f"{k}. {double_item.options[k]}" for k in key)
    assert script.score(double_item, dotted).score == 1.0
    assert script.score(double_item, gold).score == 0.0
    assert script.score(single_item, single_item.meta["key"][0]).score == 1.0
