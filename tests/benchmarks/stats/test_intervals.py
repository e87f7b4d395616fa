"""Intervals against published and hand-computed values (issue 34)."""

import math

import numpy as np
import pytest

from benchmarks.stats.intervals import (
    Interval,
    bootstrap_mean,
    cell,
    clustered_mean,
    clustered_se,
    macro_mean,
    score_interval,
    weighted_mean,
    wilson,
    z_value,
)


def test_wilson_matches_published_values():
    # Newcombe 1998 (Stat. Med. 17:857), Table I, method 3 (Wilson score without continuity correction)
    assert wilson(81, 263).low == pytest.approx(0.2553, abs=1e-4)
    assert wilson(81, 263).high == pytest.approx(0.3662, abs=1e-4)
    assert (wilson(15, 148).low, wilson(15, 148).high) == pytest.approx((0.0624, 0.1605), abs=1e-4)
    assert (wilson(0, 20).low, wilson(0, 20).high) == pytest.approx((0.0, 0.1611), abs=1e-4)
    assert (wilson(1, 29).low, wilson(1, 29).high) == pytest.approx((0.0061, 0.1718), abs=1e-4)
    # 7 of 10: centre (0.7 + 0.19207) / 1.38415, half-width 1.96 sqrt(0.021 + 0.009604) / 1.38415
    seven = wilson(7, 10)
    assert (seven.estimate, seven.n, seven.method) == (0.7, 10, "wilson")
    assert (seven.low, seven.high) == pytest.approx((0.3968, 0.8922), abs=1e-4)


def test_wilson_edges_and_bad_counts():
    assert wilson(10, 10).high == 1.0 and wilson(0, 10).low == 0.0
    assert wilson(0, 0).estimate is None and wilson(0, 0).bounds() is None
    with pytest.raises(ValueError, match="successes"):
        wilson(11, 10)
    assert z_value() == pytest.approx(1.959964, abs=1e-6)
    with pytest.raises(ValueError, match="confidence"):
        z_value(1.5)


def test_clustered_se_by_hand():
    # y = 1 0 | 1 1 | 0 0 in three clusters, mean 1/2: cluster sums of (y - 1/2) are 0, 1, -1;
    # CR1: SE² = 3/2 · (0 + 1 + 1) / 6² = 1/12.
    y, g = [1, 0, 1, 1, 0, 0], ["a", "a", "b", "b", "c", "c"]
    assert clustered_se(y, g) == pytest.approx(math.sqrt(1 / 12))
    # every item its own cluster: the plain SE, sqrt(Σ(y - ȳ)² / (N (N - 1))) = sqrt(1.5 / 30)
    assert clustered_se(y) == pytest.approx(math.sqrt(1.5 / 30))
    assert clustered_se(y, range(6)) == pytest.approx(clustered_se(y))
    assert clustered_se([1, 0], ["a", "a"]) is None  # one cluster: no spread to estimate
    mean = clustered_mean(y, g)
    half = 1.959964 * math.sqrt(1 / 12)
    assert (mean.low, mean.high, mean.method) == pytest.approx((0.5 - half, 0.5 + half, "clustered-se"))
    # shared clusters widen the interval when items within a cluster agree
    agree = [1, 1, 0, 0, 1, 1, 0, 0]
    pairs = ["a", "a", "b", "b", "c", "c", "d", "d"]
    assert clustered_se(agree, pairs) > clustered_se(agree)


def test_bootstrap_is_seeded_and_covers_the_plug_in_value():
    lengths = [5, 2, 0, 3, 4, 1, 5, 0, 2, 3]
    a, b = bootstrap_mean(lengths, seed=3), bootstrap_mean(lengths, seed=3)
    assert a == b and a.estimate == 2.5 and a.low < 2.5 < a.high
    assert bootstrap_mean(lengths, seed=4) != a  # another seed, other replicates
    # close to the normal interval for a mean: 2.5 ± 1.96 · sd / sqrt(n)
    half = 1.959964 * np.std(lengths, ddof=1) / math.sqrt(len(lengths))
    assert a.low == pytest.approx(2.5 - half, abs=0.35) and a.high == pytest.approx(2.5 + half, abs=0.35)
    assert bootstrap_mean([4, 4, 4]).bounds() == [4.0, 4.0]
    assert bootstrap_mean([]).estimate is None
    clustered = bootstrap_mean([1.0, 0.9, 0.1, 0.0], ["x", "x", "y", "y"])
    assert clustered.method == "cluster-bootstrap" and clustered.low <= 0.5 <= clustered.high


def test_score_interval_picks_the_method():
    assert score_interval([1, 0, 1]).method == "wilson"
    assert score_interval([1, 0, 1, 1], ["a", "a", "b", "c"]).method == "clustered-se"
    assert score_interval([0.5, 0.25, 1.0]).method == "bootstrap"
    assert score_interval([0.5, 0.25, 1.0], ["a", "a", "b"]).method == "cluster-bootstrap"


def test_macro_mean_combines_independent_parts():
    parts = [clustered_mean([1, 0, 1, 0]), clustered_mean([1, 1, 1, 0])]
    se = [(p.high - p.low) / (2 * 1.959964) for p in parts]
    combined = macro_mean(parts)
    half = 1.959964 * math.sqrt(se[0] ** 2 + se[1] ** 2) / 2
    assert combined.estimate == pytest.approx(0.625)
    assert (combined.low, combined.high) == pytest.approx((0.625 - half, 0.625 + half))
    assert macro_mean(parts, bounds=(0.0, 0.7)).high == 0.7


def test_weighted_mean_by_hand():
    # parts 0.2 ± 0.1 and 0.6 ± 0.2 (half-widths), weights 3 and 1: mean (0.6 + 0.6) / 4 = 0.3;
    # SE = sqrt((3 · 0.1/z)² + (1 · 0.2/z)²) / 4, so the half-width is sqrt(0.09 + 0.04) / 4
    parts = [
        Interval(0.2, 0.1, 0.3, 10, "x"),
        Interval(0.6, 0.4, 0.8, 5, "x"),
        Interval(None, None, None, 0, "x"),
    ]
    combined = weighted_mean(parts, [3, 1, 7])
    assert combined.estimate == pytest.approx(0.3) and combined.n == 15
    assert combined.high - 0.3 == pytest.approx(math.sqrt(0.13) / 4)
    assert weighted_mean(parts[2:], [1]).estimate is None


def test_cells():
    assert cell(0.7, [0.3968, 0.8922], scale=100) == "70.0 [39.7, 89.2]"
    assert cell(None, None) == "n/a" and cell(2.5, None, ".2f") == "2.50"
    assert wilson(7, 10).scaled(100).cell() == "70.0 [39.7, 89.2]"
