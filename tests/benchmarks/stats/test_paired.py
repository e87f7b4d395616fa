"""Paired tests against hand-computed values (issue 34)."""

import pytest

from benchmarks.stats.paired import (
    mcnemar_exact,
    mcnemar_one_sided_p,
    mcnemar_p,
    paired_difference,
    sign_flip_p,
)


def test_mcnemar_exact_p_by_hand():
    # b = 1, c = 9 discordant pairs: 2 · (C(10,0) + C(10,1)) / 2^10 = 22 / 1024
    assert mcnemar_p(1, 9) == pytest.approx(22 / 1024)
    assert mcnemar_p(9, 1) == mcnemar_p(1, 9)
    assert mcnemar_p(0, 5) == pytest.approx(2 / 32)
    assert mcnemar_p(3, 3) == 1.0 and mcnemar_p(0, 0) == 1.0
    with pytest.raises(ValueError):
        mcnemar_p(-1, 2)


def test_mcnemar_one_sided_p_by_hand():
    # 0 pairs won by A, 5 by B: P(X >= 5 | n = 5) = 1 / 32; 1 and 9: (C(10,9) + C(10,10)) / 2^10
    assert mcnemar_one_sided_p(0, 5) == pytest.approx(1 / 32)
    assert mcnemar_one_sided_p(1, 9) == pytest.approx(11 / 1024)
    assert mcnemar_one_sided_p(9, 1) == pytest.approx(1023 / 1024)  # the other direction: no evidence
    assert mcnemar_one_sided_p(0, 0) == 1.0
    with pytest.raises(ValueError):
        mcnemar_one_sided_p(2, -1)


def test_mcnemar_on_paired_outcomes():
    a = [True] * 5 + [False] * 5 + [True] * 2
    b = [True] * 5 + [True] * 5 + [False] * 2  # B wins 5 discordant pairs, A wins 2
    result = mcnemar_exact(a, b)
    assert result.n == 12 and result.test == "mcnemar-exact"
    assert result.difference == pytest.approx(3 / 12)
    assert result.p_value == pytest.approx(2 * (1 + 7 + 21) / 128)  # b=2, c=5
    assert result.low <= result.difference <= result.high
    assert mcnemar_exact(a, b) == result  # seeded


def test_sign_flip_exact_and_paired_difference():
    # five differences of +1: only the two all-equal sign patterns reach |mean| 1: p = 2/32
    assert sign_flip_p([1, 1, 1, 1, 1]) == pytest.approx(1 / 16)
    assert sign_flip_p([0, 0]) == 1.0
    result = paired_difference([3, 2, 5, 0], [4, 2, 5, 2])
    assert result.difference == pytest.approx(0.75) and result.a == 2.5 and result.b == 3.25
    # differences 1, 0, 0, 2: patterns with |mean| >= 0.75 are those keeping 1 and 2 the same sign: 8 of 16
    assert result.p_value == pytest.approx(0.5)
    assert result.low <= 0.75 <= result.high
    big = sign_flip_p([1.0] * 30)  # random flips past 12 units: tiny p, never exactly 0
    assert 0 < big < 0.001
    with pytest.raises(ValueError):
        paired_difference([1, 2], [1])
