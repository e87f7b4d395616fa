"""Units needed to detect a difference δ with a two-sided test at level α and power 1 - β.

With z_a = z_{1-α/2} and z_b = z_{1-β} (standard normal quantiles):

- two success rates, independent runs (Fleiss, Levin & Paik 2003, *Statistical Methods for Rates and
  Proportions*, 3rd ed., eq. 4.14 without continuity correction), per run, p2 = p1 + δ, p̄ = (p1 + p2)/2:
  n = (z_a √(2 p̄ (1 - p̄)) + z_b √(p1 (1 - p1) + p2 (1 - p2)))² / δ²
- two success rates on the same units, the McNemar test (Connor 1987, Biometrics 43:207, eq. 3), with ψ the
  share of discordant units: n = (z_a √ψ + z_b √(ψ - δ²))² / δ²
- a mean on the same units (paired), σ_d the SD of the per-unit differences: n = ((z_a + z_b) σ_d / δ)²
- a mean in two independent runs, σ the per-unit SD: n = 2 ((z_a + z_b) σ / δ)² per run.

All are normal approximations; each n is rounded up.
"""

from __future__ import annotations

import math
from statistics import NormalDist

from benchmarks.stats.intervals import check_level


def _quantiles(alpha: float, power: float) -> tuple[float, float]:
    """z_{1-α/2} and z_{1-β}."""
    check_level("alpha", alpha)
    check_level("power", power)
    return NormalDist().inv_cdf(1 - alpha / 2), NormalDist().inv_cdf(power)


def _check_difference(difference: float) -> None:
    if not difference > 0:
        raise ValueError(f"the difference to detect must be > 0, got {difference!r}")


def two_rates(p1: float, difference: float, *, alpha: float = 0.05, power: float = 0.8) -> int:
    """Units per run to tell rate ``p1`` from ``p1 + difference`` (or ``p1 - difference`` when that would
    pass 1) with two independent runs."""
    _check_difference(difference)
    if not 0 <= p1 <= 1:
        raise ValueError(f"the pilot's success rate must be in [0, 1], got {p1!r}")
    p2 = p1 + difference if p1 + difference <= 1 else p1 - difference
    if not 0 <= p2 <= 1:
        raise ValueError(f"a difference of {difference} does not fit around a rate of {p1}")
    za, zb = _quantiles(alpha, power)
    pbar = (p1 + p2) / 2
    root = za * math.sqrt(2 * pbar * (1 - pbar)) + zb * math.sqrt(p1 * (1 - p1) + p2 * (1 - p2))
    return math.ceil(root**2 / difference**2 - 1e-9)


def paired_rates(discordant: float, difference: float, *, alpha: float = 0.05, power: float = 0.8) -> int:
    """Units to detect a difference of rates on the same units (McNemar), ψ = ``discordant`` share."""
    _check_difference(difference)
    if not difference**2 < discordant <= 1:
        raise ValueError(
            f"the discordant share ψ={discordant!r} must exceed the squared difference ({difference**2:g}) "
            "and be at most 1"
        )
    za, zb = _quantiles(alpha, power)
    root = za * math.sqrt(discordant) + zb * math.sqrt(discordant - difference**2)
    return math.ceil(root**2 / difference**2 - 1e-9)


def _mean_units(sd: float, difference: float, alpha: float, power: float) -> float:
    _check_difference(difference)
    if not sd > 0:
        raise ValueError(f"the SD must be > 0, got {sd!r}")
    za, zb = _quantiles(alpha, power)
    return ((za + zb) * sd / difference) ** 2


def paired_mean(sd_difference: float, difference: float, *, alpha: float = 0.05, power: float = 0.8) -> int:
    """Units to detect a mean paired difference ``difference``, the per-unit differences of SD ``sd``."""
    return math.ceil(_mean_units(sd_difference, difference, alpha, power) - 1e-9)


def two_means(sd: float, difference: float, *, alpha: float = 0.05, power: float = 0.8) -> int:
    """Units per run to detect a difference of means between two independent runs (per-unit SD ``sd``)."""
    return math.ceil(2 * _mean_units(sd, difference, alpha, power) - 1e-9)
