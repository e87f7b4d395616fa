"""Metrics and aggregation with hand-worked examples."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from benchmarks.scoring.aggregate import (
    WeightTreeError,
    aggregate_tree,
    capability_scores,
    flatten_tree,
    load_weight_tree,
    weight_tree_from_dict,
)
from benchmarks.scoring.metrics import (
    MRA_THRESHOLDS,
    accuracy,
    bbox_reward,
    gaussian_kernel_score,
    giou,
    hit_at_iou,
    iou,
    mean_relative_accuracy,
    mra_with_units,
    normalize_box,
    orientation_score,
    relative_error,
    set_exact_match,
    xywh_to_xyxy,
)
from benchmarks.scoring.units import Quantity


def test_mra_thresholds_are_the_published_ten() -> None:
    assert MRA_THRESHOLDS == (0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95)


@pytest.mark.parametrize(
    ("pred", "gt", "expected"),
    [
        (50, 50, 1.0),  # exact: every threshold
        (45, 50, 0.9),  # error 0.10 <= 1 - C for C = 0.50 ... 0.90 (9 of 10); on the 0.90 boundary, counted
        (62, 50, 0.6),  # error 0.24: C <= 0.76 -> 0.50 ... 0.75 (6 of 10)
        (12, 10, 0.7),  # error 0.20 on the 0.80 boundary: 0.50 ... 0.80 (7 of 10)
        (70, 50, 0.3),  # error 0.40: C <= 0.60 -> 0.50, 0.55, 0.60
        (75, 50, 0.1),  # error 0.50: only C = 0.50
        (100, 50, 0.0),  # error 1.0 passes nothing
        (0.55, 0.5, 0.9),  # 0.1 relative error written in floats that round above 0.1
        (3, 0, 0.0),  # zero ground truth: infinite error
        (None, 5, 0.0),  # no prediction
    ],
)
def test_mra_published_definition(pred: float | None, gt: float, expected: float) -> None:
    assert mean_relative_accuracy(pred, gt) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("pred", "gt", "expected"),
    [
        (Quantity(40, "cm"), Quantity(0.4, "m"), 1.0),  # 40 cm = 0.4 m
        (Quantity(1, "ft"), Quantity(30, "cm"), 1.0),  # 30.48 cm vs 30: error 0.016
        (Quantity(1, "ft"), Quantity(25, "cm"), 0.6),  # 30.48 vs 25: error 0.219 -> C <= 0.78 -> 6 of 10
        # 76.2 cm vs 100 cm: error 0.238 -> C <= 0.762 -> 6 of 10
        (
            Quantity(30, "in"),
            Quantity(1, "m"),
            0.6,
        ),
        (Quantity(400, "mm"), Quantity(16, "in"), 1.0),  # 40 cm vs 40.64 cm: error 0.016 passes all
        (Quantity(2, "m2"), Quantity(20000, "cm2"), 1.0),  # areas convert with the squared factor
        (Quantity(2.0, None), Quantity(2.0, "m"), 1.0),  # a bare number borrows the ground truth's unit
        (Quantity(2.0, "m"), Quantity(2.0, "m2"), 0.0),  # length vs area cannot be compared
    ],
)
def test_mra_with_unit_conversion(pred: Quantity, gt: Quantity, expected: float) -> None:
    score, explanation = mra_with_units(pred, gt)
    assert score == pytest.approx(expected) and explanation


def test_relative_error_and_accuracy() -> None:
    assert relative_error(3, 4) == 0.25
    assert relative_error(-5, -4) == 0.25
    assert math.isinf(relative_error(1, 0))
    assert accuracy([True, False, True, True]) == 0.75
    assert accuracy([]) is None


def test_iou_and_giou_hand_worked() -> None:
    a, b = (0, 0, 2, 2), (1, 1, 3, 3)
    assert iou(a, b) == pytest.approx(1 / 7)  # intersection 1, union 4 + 4 - 1
    assert giou(a, b) == pytest.approx(1 / 7 - (9 - 7) / 9)  # hull 3 x 3
    assert iou((0, 0, 1, 1), (2, 2, 3, 3)) == 0.0
    assert giou((0, 0, 1, 1), (2, 2, 3, 3)) == pytest.approx(-7 / 9)
    assert iou(a, a) == giou(a, a) == 1.0
    assert bbox_reward(-1.0) == 0.0 and bbox_reward(1.0) == 1.0 and bbox_reward(0.0) == 0.5


def test_acc_at_iou_needs_both_answer_and_box() -> None:
    assert hit_at_iou(True, 0.5) and not hit_at_iou(True, 0.4999) and not hit_at_iou(False, 0.9)
    assert not hit_at_iou(True, None)


def test_box_conversions() -> None:
    assert xywh_to_xyxy([10, 20, 30, 40]) == (10, 20, 40, 60)
    assert normalize_box((64, 48, 320, 240), 640, 480) == (0.1, 0.1, 0.5, 0.5)


@given(
    st.tuples(*[st.floats(0, 0.45)] * 2, *[st.floats(0.55, 1)] * 2),
    st.tuples(*[st.floats(0, 0.45)] * 2, *[st.floats(0.55, 1)] * 2),
)
def test_iou_properties(a: tuple[float, ...], b: tuple[float, ...]) -> None:
    assert 0.0 <= iou(a, b) <= 1.0
    assert iou(a, b) == pytest.approx(iou(b, a))
    assert -1.0 <= giou(a, b) <= iou(a, b) + 1e-12


def test_gaussian_kernel_orientation_score() -> None:
    assert gaussian_kernel_score(3.0, 1.0, 2.0) == pytest.approx(math.exp(-0.5))  # (3-1)^2 / (2 * 2^2)
    assert gaussian_kernel_score(1.0, 1.0, 0.1) == 1.0
    assert gaussian_kernel_score(359.0, 1.0, 2.0, period=360) == pytest.approx(math.exp(-0.5))
    with pytest.raises(ValueError, match="sigma"):
        gaussian_kernel_score(1.0, 1.0, 0.0)
    gt, sigma = {"pitch": 1.0, "roll": 0.0, "vfov": 60.0}, {"pitch": 2.0, "roll": 1.0, "vfov": 5.0}
    assert orientation_score({"pitch": 3.0, "roll": 0.0}, gt, sigma) == pytest.approx(
        (math.exp(-0.5) + 1.0 + 0.0) / 3
    )


def test_set_match() -> None:
    assert set_exact_match(("C", "A"), ("A", "C"))
    assert not set_exact_match(("A",), ("A", "C"))


def test_capability_scores_paper_toy_example() -> None:
    """SpaCE-10 Sec. E: Q1 -> C1 (80), Q2 -> {C1, C2} (90) gives C1 = 85, C2 = 90; C3 has no question."""
    scores = capability_scores([(80.0, ["C1"]), (90.0, ["C1", "C2"])], ["C1", "C2", "C3"])
    assert scores == {
        "C1": {"n": 2, "score": 85.0},
        "C2": {"n": 1, "score": 90.0},
        "C3": {"n": 0, "score": None},
    }


TREE = {
    "name": "root",
    "children": [
        {"name": "A", "weight": 0.75, "children": [{"name": "a1", "weight": 1}, {"name": "a2", "weight": 3}]},
        {"name": "B", "weight": 0.25, "children": [{"name": "b", "weight": 1}]},
    ],
}


def test_weight_tree_aggregation_hand_worked() -> None:
    tree = weight_tree_from_dict(TREE)
    leaves = {("A", "a1"): 0.8, ("A", "a2"): 0.4, ("B", "b"): 1.0}
    result = aggregate_tree(tree, leaves.get)
    # A = (0.8 * 1 + 0.4 * 3) / 4 = 0.5; root = 0.75 * 0.5 + 0.25 * 1.0
    assert result["children"][0]["score"] == pytest.approx(0.5)
    assert result["score"] == pytest.approx(0.625)
    partial = {("A", "a1"): 0.8, ("A", "a2"): 0.4}
    assert aggregate_tree(tree, partial.get, missing="exclude")["score"] == pytest.approx(0.5)
    assert aggregate_tree(tree, partial.get, missing="zero")["score"] == pytest.approx(0.375)
    rows = flatten_tree(result)
    assert rows[0] == {"node": "root", "depth": 0, "weight": 1.0, "score": pytest.approx(62.5)}
    assert tree.leaves() == [("A", "a1"), ("A", "a2"), ("B", "b")]


def test_weight_tree_files(tmp_path) -> None:
    json_path = tmp_path / "w.json"
    json_path.write_text(json.dumps(TREE))
    yaml_path = tmp_path / "w.yaml"
    yaml_path.write_text("name: root\nchildren:\n  - name: A\n    weight: 2\n  - name: B\n    weight: 1\n")
    assert load_weight_tree(json_path).children[0].weight == 0.75
    assert [c.weight for c in load_weight_tree(yaml_path).children] == [2.0, 1.0]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"name": "root", "children": [{"name": "A", "weight": -1}]}))
    with pytest.raises(WeightTreeError, match="root/A: 'weight' must be a number >= 0"):
        load_weight_tree(bad)
    with pytest.raises(FileNotFoundError, match="--weights"):
        load_weight_tree(tmp_path / "missing.json")
