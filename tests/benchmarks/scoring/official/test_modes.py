"""Official-compatible modes reproduce the public scorers' documented behaviours, quirks included."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.scoring.aggregate import load_weight_tree
from benchmarks.scoring.metrics import mean_relative_accuracy, mra_with_units
from benchmarks.scoring.official import multihop, space10, spatialscore, spatialtree
from benchmarks.scoring.parsers import parse_option, parse_yes_no
from benchmarks.scoring.units import Quantity
from benchmarks.static.spatialtree import DEFAULT_WEIGHTS, tree_path

EXCERPT = Path("/work/shared/data/multihop_results_ckpt800_excerpt.json")

# --------------------------------------------------------------------------------------------------------
# SpatialScore


def test_spatialscore_first_letter_anywhere() -> None:
    assert spatialscore.extract_option("Left") == "E"  # the "e" of "Left"
    assert parse_option("Left", {"A": "Left", "B": "Right"}).value == "A"
    assert spatialscore.score_item("multi-choice", "MMVP", "Left", "(a)").score == 0.0
    assert spatialscore.extract_option("(B)") == "B" and spatialscore.extract_option("Answer: c") == "C"
    assert spatialscore.extract_option("123") == "123"  # no letter: compared as text


def test_spatialscore_yes_words_win() -> None:
    assert spatialscore.extract_yes_no("No, that is not correct.") == "Yes"  # "correct" is a yes-word
    assert parse_yes_no("No, that is not correct.").value == "no"
    assert spatialscore.score_item("judgment", "SpatialSense", "No, that is not correct.", "No").score == 0.0


def test_spatialscore_vsi_numbers_ignore_units() -> None:
    result = spatialscore.score_item("open-ended", "VSI-Bench_8", "0.4 m", "40")
    assert result.score == 0.0 and result.rule == "vsi_mra"  # 0.4 against 40
    assert mra_with_units(Quantity(0.4, "m"), Quantity(40, "cm"))[0] == 1.0  # the project converts units
    assert spatialscore.score_item("open-ended", "VSI-Bench_8", "0", "0").score == 1.0
    assert spatialscore.score_item("open-ended", "VSI-Bench_8", "zero", "3").score == 0.0


def test_spatialscore_unit_answers_use_the_ratio_test() -> None:
    # 1.2 m vs 1.72 m: ratio 1.43 < 2 counts as fully correct; MRA would give 0.4 (error 0.30)
    assert spatialscore.score_item("open-ended", "VGBench", "about 1.2 meters", "1.72 meters").score == 1.0
    assert mra_with_units(Quantity(1.2, "m"), Quantity(1.72, "m"))[0] == pytest.approx(0.4)
    # ratio 1.91 < 2
    assert spatialscore.score_item("open-ended", "VGBench", "90 cm", "1.72 meters").score == 1.0
    correct, why = spatialscore.numeric_with_unit_correct("80 cm", "1.72 meters")
    assert not correct and "ratio 2.15" in why


def test_spatialscore_mra_boundary_float_quirk() -> None:
    """An error exactly on a threshold: the published definition counts it; numpy floats do not."""
    # 12 for 10: error 0.2, and 1 - 0.8 = 0.19999999999999996 in floating point
    assert mean_relative_accuracy(12, 10) == pytest.approx(0.7)
    assert spatialscore.mean_relative_accuracy(12, 10) == pytest.approx(0.6)
    # linspace's 0.8999... lets this one pass
    assert spatialscore.mean_relative_accuracy(45, 50) == pytest.approx(0.9)


def test_spatialscore_number_words_in_scan_order() -> None:
    assert spatialscore.extract_number("seventeen") == "7"  # "seventeen" starts with "seven"
    assert spatialscore.extract_number("There are 3 chairs") == "3"
    assert spatialscore.score_item("open-ended", "spatialbench", "3.0", "3").score == 1.0


def test_spatialscore_open_truth_without_number_raises_like_the_script() -> None:
    with pytest.raises(ValueError):
        spatialscore.score_item("open-ended", "spatialbench", "down", "up")
    # "left" contains "ft", so this text answer takes the unit branch and finds no number
    assert spatialscore.score_item("open-ended", "spatialbench", "left", "to the left").rule == "unit_ratio"


# --------------------------------------------------------------------------------------------------------
# SpaCE-10

EQ = {"A": "1", "B": "2", "C": "3", "D": "4"}
SA = {
    "A": "The door is lower.",
    "B": "The door is wider.",
    "C": "The lamp is taller.",
    "D": "The plant is lower.",
}


def test_space10_list_string_misses_plain_letters() -> None:
    assert space10.as_prediction_string("B") == "['B']"
    assert space10.read_answer("B", SA, multiple=False) == (("E",), "fallback")  # E: never a correct answer
    assert parse_option("B", SA).value == "B"


def test_space10_rules_that_do_fire() -> None:
    assert space10.read_answer("2", EQ, multiple=False) == (("B",), "rule")  # option text "2" inside "['2']"
    # a whitespace token
    assert space10.read_answer("The answer is B .", SA, multiple=False) == (
        ("B",),
        "rule",
    )


def test_space10_judge_path_and_fallbacks() -> None:
    assert space10.read_answer("B", SA, multiple=False, judge_text="B") == (("B",), "judge")
    # "no match"
    assert space10.read_answer("B", SA, multiple=False, judge_text="I think E") == (
        ("E",),
        "judge",
    )
    assert space10.read_answer("B", SA, multiple=False, judge_text="unsure") == (("E",), "fallback")
    assert space10.read_answer("A, C", {**SA, "E": "x"}, multiple=True) == (("F",), "fallback")
    assert space10.read_answer("A, C", {**SA, "E": "x"}, multiple=True, judge_text="A, C") == (
        ("A", "C"),
        "judge",
    )
    assert space10.fallback_letter(False) == "E" and space10.fallback_letter(True) == "F"
    prompt = space10.judge_prompt("Which is right", SA, "['B']", multiple=False)
    assert "A. The door is lower.\nB. The door is wider." in prompt and prompt.endswith(
        "Answer: ['B']\nYour output: "
    )


def test_space10_prompt_format() -> None:
    text = space10.build_prompt_text("How many beds?", EQ, multiple=False)
    assert text == (
        "How many beds? There are several options:\nA. 1\nB. 2\nC. 3\nD. 4\n\n"
        "Please use the letters provided as the answer. You only need to output one choice, not multiple choices."
    )


# --------------------------------------------------------------------------------------------------------
# MultihopSpatial


def test_multihop_repo_reproduces_upstream_records() -> None:
    """Every upstream-computed prediction, box, IoU and score in the excerpt, recomputed from the raw response."""
    rows = json.loads(EXCERPT.read_text())
    for row in rows:
        width, height = (int(v) for v in row["image_resolution"].split("x"))
        record = multihop.score_repo(row["raw_response"], row["answer"], row["bbox"], width, height)
        assert record.prediction == row["prediction"], row["id"]
        assert record.pred_box == row["pred_bbox"], row["id"]
        assert record.iou == row["iou"], row["id"]
        assert record.correct == row["score"], row["id"]


def test_multihop_repo_summary_matches_excerpt_fields() -> None:
    rows = json.loads(EXCERPT.read_text())
    records = []
    for row in rows:
        width, height = (int(v) for v in row["image_resolution"].split("x"))
        records.append(multihop.score_repo(row["raw_response"], row["answer"], row["bbox"], width, height))
    correct = [r for r in rows if r["score"]]
    expected_iou = round(sum(r["iou"] for r in correct) / len(correct), 4)
    expected_hits = round(100 * sum(1 for r in correct if r["iou"] >= 0.5) / len(rows), 2)
    assert multihop.summarize_repo(records) == {
        "evaluated": 30,
        "mcq_accuracy": round(100 * len(correct) / 30, 2),
        "acc_at_50_iou": expected_hits,
        "avg_iou": expected_iou,
    }


GT = [0, 0, 100, 100]  # xywh on a 1000 x 1000 image: (0, 0, 0.1, 0.1) normalised


def test_multihop_iou_rounded_before_threshold() -> None:
    response = "Answer: (a) cup\nBounding Box: [0, 0, 100, 49.996]"  # IoU 0.49996
    for scorer in (multihop.score_repo, multihop.score_lmms):
        record = scorer(response, "(a) cup", GT, 1000, 1000)
        assert record.iou == 0.5 and record.correct  # rounds up to 0.5: a hit
    from benchmarks.scoring.metrics import iou
    from benchmarks.scoring.parsers import parse_box

    assert iou(parse_box(response).value, (0, 0, 0.1, 0.1)) == pytest.approx(0.49996)  # the project: a miss


def test_multihop_two_denominators() -> None:
    responses = [
        "Answer: (a) cup\nBounding Box: [0, 0, 100, 100]",  # right, IoU 1
        "Answer: (a) cup\nBounding Box: [0, 0, 100, 40]",  # right, IoU 0.4
        "Answer: (b) plate\nBounding Box: [0, 0, 100, 100]",  # wrong
        "I cannot tell which object it is.",  # refusal: no letter
    ]
    repo = [multihop.score_repo(r, "(a) cup", GT, 1000, 1000) for r in responses]
    lmms = [multihop.score_lmms(r, "(a) cup", GT, 1000, 1000) for r in responses]
    assert multihop.summarize_repo(repo) == {
        "evaluated": 3,
        "mcq_accuracy": 66.67,
        "acc_at_50_iou": 33.33,
        "avg_iou": 0.7,
    }
    assert multihop.summarize_lmms(lmms) == {
        "evaluated": 4,
        "mcq_accuracy": 50.0,
        "acc_at_50_iou": 25.0,
        "avg_iou": 70.0,
    }


def test_multihop_invalid_and_malformed_boxes() -> None:
    outside = "Answer: (a) cup\nBounding Box: [0, 0, 1200, 1100]"  # exceeds the image once rescaled
    # computed anyway
    assert multihop.score_repo(outside, "(a) cup", GT, 1000, 1000).iou == pytest.approx(0.0076)
    assert multihop.score_lmms(outside, "(a) cup", GT, 1000, 1000).iou is None  # invalid: no IoU
    malformed = "Answer: (a) cup\nBounding Box: [1.2.3, 0, 100, 100]"
    crashed = multihop.score_repo(malformed, "(a) cup", GT, 1000, 1000)
    assert crashed.error and crashed.pred_letter is None and not crashed.correct  # the whole item is lost
    survived = multihop.score_lmms(malformed, "(a) cup", GT, 1000, 1000)
    assert survived.correct and survived.pred_box is None and survived.iou is None  # box not found, item kept
    assert multihop.summarize_repo([crashed])["evaluated"] == 0


# --------------------------------------------------------------------------------------------------------
# SpatialTree-Bench


def test_spatialtree_missing_ability_counts_zero_and_names_match_anywhere() -> None:
    tree = load_weight_tree(DEFAULT_WEIGHTS)
    scored = [
        ({"spatree0": "L1", "spatree1": "Relation"}, 1.0),
        ({"spatree0": "L1", "spatree1": "Geometry", "spatree2": "Distance"}, 1.0),
    ]
    result = spatialtree.aggregate_by_name(tree, scored)
    levels = {c["name"]: c for c in result["children"]}
    causal = next(c for c in levels["L3"]["children"] if c["name"] == "Caus. Reas.")
    relation = next(c for c in causal["children"] if c["name"] == "Relation")
    assert relation["score"] == 1.0  # an L1 item tagged "Relation" lands in L3's Relation leaf
    assert levels["L4"]["score"] == 0.0  # no items: counts as 0
    geometry = next(c for c in levels["L1"]["children"] if c["name"] == "Geometry")
    assert geometry["score"] == pytest.approx(0.65)  # Distance 1.0 * 0.65, Shape and Size 0
    assert tree_path(tree, ["L1", "Relation"]) is None  # the project matches full paths: unmatched
    assert tree_path(tree, ["L2", "Understanding", "RelationUnderstanding"]) == (
        "L2",
        "Underst.",
        "Relation Understanding",
    )


def test_spatialtree_random_letter_is_seeded_and_flagged() -> None:
    options = ["A. chair", "B. table", "C. lamp"]
    first = spatialtree.parse_multiple_choice("no idea", options, "q-7")
    again = spatialtree.parse_multiple_choice("no idea", options, "q-7")
    assert first == again and first[1] == "random_fallback" and first[0] in "ABC"
    assert spatialtree.parse_multiple_choice("answer: B", options, "x") == ("B", "token")
    assert spatialtree.parse_multiple_choice("The answer is C", options, "x") == ("C", "answer_phrase")


def test_spatialtree_numeric_and_yes_no_quirks() -> None:
    assert spatialtree.find_number("about 1,200 cm") == "1200"  # commas deleted first
    assert spatialtree.mean_relative_accuracy("2.0", "2.0") == (1.0, "2.0")
    assert spatialtree.mean_relative_accuracy("no idea", "2.0") == (0.0, "")
    assert spatialtree.mean_relative_accuracy("3", "0") == (0.0, "3")
    assert spatialtree.last_yes_no("I don't know") == "no"  # "no" inside "know"
    assert parse_yes_no("I don't know").ok is False


def test_spatialtree_gravity_all_or_nothing() -> None:
    answer, hint = (
        json.dumps({"roll": 2.0, "pitch": -5.0, "vfov": 60.0}),
        {"roll_unc": 1.0, "pitch_unc": 2.0, "vfov_unc": 5.0},
    )
    score, _ = spatialtree.gravity_score(
        '```json\n{"roll": 2.0, "pitch": -3.0, "vfov": 60.0}\n```', answer, hint
    )
    assert score == pytest.approx((1 + 0.6065306597 + 1) / 3)
    # one missing: all lost
    assert spatialtree.gravity_score('{"roll": 2.0, "pitch": -5.0}', answer, hint)[0] == 0.0
