"""Paired tests of two runs on the same units: the difference B - A with its interval and p-value.

- :func:`mcnemar_exact`: success on the same units: the exact McNemar test (McNemar 1947,
  Psychometrika 12:153), i.e. the two-sided binomial test of the discordant pairs b (A won) and c (B won)
  against p = 1/2: p = min(1, 2 · Σ_{k ≤ min(b,c)} C(b+c, k) / 2^(b+c)). The difference of the rates,
  (c - b)/n, gets the percentile interval of the paired bootstrap.
- :func:`paired_difference`: a continuous score (CALVIN's completed length, an MRA or IoU score): the mean
  of the per-unit differences, its paired percentile-bootstrap interval, and the p-value of the sign-flip
  permutation test (Fisher 1935; Good 2005, ch. 3): under "no difference" each unit's difference is as
  likely to be -d as d, so p = (1 + #{|mean(±d)| ≥ |mean(d)|}) / (1 + R) over R random sign flips.

Seeded (``numpy.random.default_rng``): the same runs give the same numbers.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from benchmarks.stats.intervals import CONFIDENCE, RESAMPLES, SEED, bootstrap_means, percentile_interval

#: Random sign flips of the permutation test (its p-value's Monte Carlo error is below 0.005 at p = 0.05).
PERMUTATIONS = 10000
#: Up to this many units the permutation test enumerates every sign pattern (4,096 at 12).
EXACT_UP_TO = 12


@dataclass(frozen=True)
class PairedResult:
    """B - A over ``n`` paired units: the difference, its interval, the p-value and the test's name."""

    n: int
    a: float | None
    b: float | None
    difference: float | None
    low: float | None
    high: float | None
    p_value: float | None
    test: str

    def to_json(self) -> dict[str, object]:
        """JSON fields: ``n``, ``a``, ``b``, ``difference``, ``ci`` ([low, high]), ``p_value``, ``test``."""
        return {
            "n": self.n,
            "a": self.a,
            "b": self.b,
            "difference": self.difference,
            "ci": None if self.low is None else [round(self.low, 6), round(self.high, 6)],  # type: ignore[arg-type]
            "p_value": self.p_value,
            "test": self.test,
        }


def mcnemar_p(b: int, c: int) -> float:
    """The exact two-sided McNemar p-value of ``b`` and ``c`` discordant pairs (1.0 when there are none)."""
    if b < 0 or c < 0:
        raise ValueError(f"discordant counts must be >= 0, got {b} and {c}")
    n = b + c
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, k) for k in range(min(b, c) + 1)) / 2**n
    return min(1.0, 2 * tail)


def mcnemar_one_sided_p(b: int, c: int) -> float:
    """The exact one-sided McNemar p-value that the second policy is the better one: with ``b`` pairs only
    the first solved and ``c`` only the second, P(X >= c) for X ~ Binomial(b + c, 1/2) (1.0 without
    discordant pairs)."""
    if b < 0 or c < 0:
        raise ValueError(f"discordant counts must be >= 0, got {b} and {c}")
    n = b + c
    return sum(math.comb(n, k) for k in range(c, n + 1)) / 2**n if n else 1.0


def mcnemar_exact(
    a: Sequence[bool], b: Sequence[bool], *, confidence: float = CONFIDENCE, seed: int = SEED
) -> PairedResult:
    """Success of A and of B on the same units (in the same order): rates, B - A, its paired-bootstrap
    interval and the exact McNemar p-value."""
    x, y = _pairs(a, b)
    if len(x) == 0:
        return PairedResult(0, None, None, None, None, None, None, "mcnemar-exact")
    a_won, b_won = int(np.sum(x & ~y)), int(np.sum(~x & y))
    diff = y.astype(float) - x.astype(float)
    low, high = percentile_interval(bootstrap_means(diff, seed=seed, resamples=RESAMPLES), confidence)
    return PairedResult(
        len(x),
        float(x.mean()),
        float(y.mean()),
        float(diff.mean()),
        low,
        high,
        mcnemar_p(a_won, b_won),
        "mcnemar-exact",
    )


def sign_flip_p(differences: Sequence[float], *, seed: int = SEED, permutations: int = PERMUTATIONS) -> float:
    """The two-sided p-value of the sign-flip permutation test of mean difference 0: exact over all 2^n
    sign patterns up to :data:`EXACT_UP_TO` units, else over ``permutations`` random ones (seeded)."""
    d = np.asarray(differences, dtype=float)
    if len(d) == 0 or not np.any(d):
        return 1.0
    observed = abs(float(d.mean())) - 1e-12
    if len(d) <= EXACT_UP_TO:
        patterns = np.arange(2 ** len(d))[:, None] >> np.arange(len(d)) & 1
        flipped = np.abs(((2.0 * patterns - 1) * d).mean(axis=1))
        return float(np.mean(flipped >= observed))
    signs = np.random.default_rng(seed).choice(np.array([-1.0, 1.0]), size=(permutations, len(d)))
    flipped = np.abs((signs * d).mean(axis=1))
    return float((1 + np.sum(flipped >= observed)) / (1 + permutations))


def paired_difference(
    a: Sequence[float], b: Sequence[float], *, confidence: float = CONFIDENCE, seed: int = SEED
) -> PairedResult:
    """A continuous score of A and B on the same units: means, B - A, the paired percentile-bootstrap
    interval and the sign-flip permutation p-value."""
    x, y = (np.asarray(v, dtype=float) for v in (a, b))
    if len(x) != len(y):
        raise ValueError(f"paired values need the same units: {len(x)} and {len(y)}")
    if len(x) == 0:
        return PairedResult(0, None, None, None, None, None, None, "sign-flip-permutation")
    d = y - x
    low, high = percentile_interval(bootstrap_means(d, seed=seed, resamples=RESAMPLES), confidence)
    return PairedResult(
        len(d),
        float(x.mean()),
        float(y.mean()),
        float(d.mean()),
        low,
        high,
        sign_flip_p(d, seed=seed),
        "sign-flip-permutation",
    )


def _pairs(a: Sequence[bool], b: Sequence[bool]) -> tuple[np.ndarray, np.ndarray]:
    if len(a) != len(b):
        raise ValueError(f"paired outcomes need the same units: {len(a)} and {len(b)}")
    return np.asarray(a, dtype=bool), np.asarray(b, dtype=bool)
