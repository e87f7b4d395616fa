"""Sample sizes against hand-computed and published values (issue 34)."""

import pytest

from benchmarks.stats.power import paired_mean, paired_rates, two_means, two_rates


def test_two_rates_by_hand():
    # p1 = 0.5, p2 = 0.6, α = 0.05, 1 - β = 0.8: (1.95996 · sqrt(2 · 0.55 · 0.45) + 0.84162 · sqrt(0.25 +
    # 0.24))² / 0.01 = (1.37898 + 0.58913)² / 0.01 = 387.35 -> 388 per run
    assert two_rates(0.5, 0.1) == 388
    assert two_rates(0.95, 0.1) == two_rates(0.85, 0.1)  # p2 past 1: the difference downward
    assert two_rates(0.5, 0.1, power=0.9) > 388 and two_rates(0.5, 0.1, alpha=0.01) > 388


def test_means_match_the_textbook_normal_values():
    # δ = σ/2 (Cohen's d 0.5), α = 0.05, power 0.8: (1.95996 + 0.84162)² / 0.25 = 31.4 -> 32 paired;
    # twice that, 62.8 -> 63 per group for two independent groups (Cohen 1988 gives 64 with the t test)
    assert paired_mean(1.0, 0.5) == 32
    assert two_means(1.0, 0.5) == 63
    assert paired_mean(2.0, 0.5) == 126


def test_mcnemar_sample_size_by_hand():
    # Connor 1987: ψ = 0.3, δ = 0.1: (1.95996 sqrt(0.3) + 0.84162 sqrt(0.29))² / 0.01 = 233.1 -> 234
    assert paired_rates(0.3, 0.1) == 234


def test_bad_numbers():
    for call, word in [
        (lambda: two_rates(0.5, 0.1, alpha=1.5), "alpha"),
        (lambda: two_rates(0.5, 0.1, power=0), "power"),
        (lambda: two_rates(0.5, -0.1), "difference"),
        (lambda: two_rates(1.5, 0.1), "rate"),
        (lambda: paired_rates(0.005, 0.1), "discordant"),
        (lambda: paired_mean(0.0, 0.1), "SD"),
    ]:
        with pytest.raises(ValueError, match=word):
            call()
