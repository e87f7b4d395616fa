import math

import numpy as np
import pytest

from benchmarks.stats.sequential import (
    MAX_BET,
    first_crossings,
    log_capitals,
    paired_values,
    sequential_test,
)

STREAMS, LENGTH = 2000, 300


def _loop_capitals(x, null):
    """The betting test written out one step at a time, as in Waudby-Smith & Ramdas (2024), for one stream."""
    up = down = 0.0
    total, squares, out = 0.0, 0.0, []
    for t, value in enumerate(x, start=1):
        mean, var = (0.5 + total) / t, (0.25 + squares) / t  # from the t - 1 values before this one
        gap = mean - null
        bet = gap / (var + gap * gap)
        lam_up = min(max(bet, 0.0), MAX_BET / max(null, 1e-12))
        lam_down = min(max(-bet, 0.0), MAX_BET / max(1 - null, 1e-12))
        up += math.log1p(lam_up * (value - null))
        down += math.log1p(-lam_down * (value - null))
        total += value
        squares += (value - (0.5 + total) / (t + 1)) ** 2
        out.append((up, down))
    return out


def test_vectorised_capitals_match_the_step_by_step_formulas():
    rng = np.random.default_rng(3)
    for null in (0.2, 0.5, 0.85):
        x = rng.integers(0, 6, size=40) / 5
        above, below = log_capitals(x, null)
        expected = np.array(_loop_capitals(x, null))
        assert np.allclose(above[0], expected[:, 0]) and np.allclose(below[0], expected[:, 1])


def test_hand_computed_first_step():
    # Before any value the bet uses mean 1/2 and variance 1/4: against 0.3, λ = 0.2 / (0.25 + 0.04).
    above, below = log_capitals(np.array([1.0]), 0.3)
    assert above[0, 0] == pytest.approx(math.log(1 + (0.2 / 0.29) * 0.7))
    assert below[0, 0] == 0.0


@pytest.mark.parametrize("null", [0.05, 0.3, 0.5, 0.9])
def test_type_one_error_is_at_most_alpha_under_the_null(null):
    rng = np.random.default_rng(int(null * 100))
    x = (rng.random((STREAMS, LENGTH)) < null).astype(float)
    step, _ = first_crossings(x, null, alpha=0.05)
    assert (step > 0).mean() <= 0.05


def test_type_one_error_for_bounded_scores_and_paired_runs():
    rng = np.random.default_rng(7)
    lengths = rng.choice(6, size=(STREAMS, LENGTH), p=[0.1, 0.1, 0.2, 0.2, 0.2, 0.2]) / 5
    step, _ = first_crossings(lengths, float((np.arange(6) / 5) @ [0.1, 0.1, 0.2, 0.2, 0.2, 0.2]))
    assert (step > 0).mean() <= 0.05
    a, b = rng.random((STREAMS, LENGTH)) < 0.6, rng.random((STREAMS, LENGTH)) < 0.6
    step, _ = first_crossings(paired_values(a, b), 0.5)
    assert (step > 0).mean() <= 0.05


def test_a_real_difference_is_found_early_and_on_the_right_side():
    rng = np.random.default_rng(11)
    better = (rng.random((STREAMS, LENGTH)) < 0.7).astype(float)
    step, side = first_crossings(better, 0.5)
    assert (step > 0).mean() > 0.99 and (side[step > 0] == 1).all() and np.median(step[step > 0]) < 100
    worse = (rng.random((STREAMS, LENGTH)) < 0.6).astype(float)
    step, side = first_crossings(worse, 0.9)
    assert (step > 0).all() and (side == -1).all() and np.median(step) < 40


def test_one_stream_reports_its_verdict_and_where():
    result = sequential_test([1.0] * 30, 0.5)
    assert result.verdict == "better" and result.n < 30
    assert max(result.log10_capital_above, result.log10_capital_below) >= result.threshold
    undecided = sequential_test([1.0, 0.0] * 20, 0.5)
    assert undecided.verdict == "undecided" and undecided.n == 40
    assert sequential_test([], 0.5).verdict == "undecided"
    assert sequential_test([0.0] * 30, 0.5).verdict == "worse"


def test_ties_do_not_move_a_paired_test():
    above, below = log_capitals(paired_values([1, 0, 1, 0], [1, 0, 1, 0]), 0.5)
    assert (above == 0).all() and (below == 0).all()


def test_bad_inputs_are_refused():
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        log_capitals(np.array([0.5]), 1.5)
    with pytest.raises(ValueError, match="values"):
        log_capitals(np.array([2.0]), 0.5)
    with pytest.raises(ValueError, match="alpha"):
        first_crossings(np.array([0.5]), 0.5, alpha=1.0)
    with pytest.raises(ValueError, match="equal lengths"):
        paired_values([1, 0], [1])
