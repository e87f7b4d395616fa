"""An anytime-valid sequential test: does a model's mean (success rate, CALVIN length / 5) differ from a reference?

The test is the betting (hedged capital) test of Waudby-Smith & Ramdas (2024), "Estimating means of bounded
random variables by betting", JRSS-B 86(1):1-27, section 4 and the aGRAPA bet of section B.2. For values
x_1, x_2, ... in [0, 1] and the null mean m, two gamblers bet on the mean lying above or below m:

    K⁺_t = Π_{i≤t} (1 + λ⁺_i (x_i - m)),   K⁻_t = Π_{i≤t} (1 - λ⁻_i (x_i - m)),

with bets λ±_i ≥ 0 chosen from x_1..x_{i-1} only (predictable): the aGRAPA bet
λ_i = (μ̂ - m) / (σ̂² + (μ̂ - m)²) from the running mean μ̂ and variance σ̂² (started at 1/2 and 1/4 as in the
paper), λ⁺ = clip(λ, 0, c/m), λ⁻ = clip(-λ, 0, c/(1-m)), c = 1/2, so each factor stays positive. Under the
null (E[x_i | past] = m) both are non-negative martingales starting at 1, so is their average, and Ville's
inequality gives P(sup_t (K⁺_t + K⁻_t)/2 ≥ 1/α) ≤ α: stopping at the first t with max(K⁺_t, K⁻_t) ≥ 2/α
(the average is then ≥ 1/α) is a level-α test at every stopping time, however often it is checked. The
side whose capital crossed says which way the mean differs (``better``: above m; ``worse``: below).

Against a reference *run* the units are paired: x_i = (1 + a_i - b_i) / 2 with a_i the model's and b_i the
reference's value of unit i, tested against m = 1/2 (no difference of the means). For success/failure units
a tie gives x_i = 1/2 and leaves both capitals unchanged, so only the discordant pairs move the test, each a
fair coin under the null (the sequential form of McNemar's test).

Vectorised over streams (rows) so that the type-I error can be checked on thousands of simulated streams.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

#: Level of the test: the chance that a run stops with ``better`` or ``worse`` when the model equals the reference.
ALPHA = 0.05
#: Largest bet as a share of the most that keeps the capital positive (the paper's truncation c).
MAX_BET = 0.5

Verdict = Literal["better", "worse", "undecided"]


@dataclass(frozen=True)
class SequentialResult:
    """Where a stream's test stands: ``verdict`` after ``n`` values (the first crossing, or all values when
    undecided), and the two capitals then (their log10: evidence ``> log10(2/alpha)`` decides)."""

    verdict: Verdict
    n: int
    log10_capital_above: float
    log10_capital_below: float
    threshold: float


def check_null(null: float) -> None:
    """The null mean is a rate in [0, 1]."""
    if not 0.0 <= null <= 1.0:
        raise ValueError(f"the reference rate must be in [0, 1], got {null}")


def _predictable_bets(x: np.ndarray, null: float) -> tuple[np.ndarray, np.ndarray]:
    """The aGRAPA bets λ⁺, λ⁻ for every step of every row, each from the values before it."""
    t = np.arange(1, x.shape[1] + 1)
    mean = (0.5 + np.cumsum(x, axis=1)) / (t + 1)  # μ̂_t after t values (the paper's prior 1/2)
    var = (0.25 + np.cumsum((x - mean) ** 2, axis=1)) / (t + 1)
    before = np.ones_like(x[:, :1])
    mean_prev = np.concatenate([0.5 * before, mean[:, :-1]], axis=1)
    var_prev = np.concatenate([0.25 * before, var[:, :-1]], axis=1)
    gap = mean_prev - null
    bet = gap / (var_prev + gap**2)
    up = np.clip(bet, 0.0, MAX_BET / max(null, 1e-12))
    down = np.clip(-bet, 0.0, MAX_BET / max(1.0 - null, 1e-12))
    return up, down


def log_capitals(values: np.ndarray, null: float) -> tuple[np.ndarray, np.ndarray]:
    """Natural-log capitals log K⁺_t, log K⁻_t of each row of ``values`` (in [0, 1]) against mean ``null``."""
    check_null(null)
    x = np.atleast_2d(np.asarray(values, dtype=float))
    if x.size and (x.min() < 0.0 or x.max() > 1.0):
        raise ValueError("sequential test values must lie in [0, 1]")
    if x.shape[1] == 0:
        zeros = np.zeros((x.shape[0], 0))
        return zeros, zeros
    up, down = _predictable_bets(x, null)
    return np.cumsum(np.log1p(up * (x - null)), axis=1), np.cumsum(np.log1p(-down * (x - null)), axis=1)


def first_crossings(values: np.ndarray, null: float, alpha: float = ALPHA) -> tuple[np.ndarray, np.ndarray]:
    """Per row: the 1-based step where a capital first reached 2/alpha (0: never) and its side (+1 above, -1 below)."""
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    above, below = log_capitals(values, null)
    if above.shape[1] == 0:  # no value yet: nothing crossed
        nothing = np.zeros(above.shape[0], dtype=int)
        return nothing, nothing
    bar = np.log(2.0 / alpha)
    crossed = (above >= bar) | (below >= bar)
    hit = crossed.any(axis=1)
    step = np.where(hit, crossed.argmax(axis=1) + 1, 0)
    rows = np.arange(above.shape[0])
    at = np.maximum(step - 1, 0)
    side = (
        np.where(hit, np.where(above[rows, at] >= bar, 1, -1), 0) if above.shape[1] else np.zeros_like(step)
    )
    return step, side


def sequential_test(values: Sequence[float], null: float, alpha: float = ALPHA) -> SequentialResult:
    """The test of one stream of values in [0, 1] against the mean ``null``: decided at the first crossing."""
    x = np.asarray(values, dtype=float).reshape(1, -1)
    step, side = first_crossings(x, null, alpha)
    above, below = log_capitals(x, null)
    n = int(step[0]) or x.shape[1]
    verdict: Verdict = "undecided" if not step[0] else ("better" if side[0] > 0 else "worse")
    at = n - 1
    return SequentialResult(
        verdict,
        n,
        round(float(above[0, at]) / np.log(10), 4) + 0.0 if n else 0.0,  # + 0.0: no -0.0
        round(float(below[0, at]) / np.log(10), 4) + 0.0 if n else 0.0,
        round(float(np.log10(2.0 / alpha)), 4),
    )


def paired_values(model: Sequence[float], reference: Sequence[float]) -> np.ndarray:
    """Paired units as values for the test against 1/2: (1 + model - reference) / 2, each in [0, 1]."""
    a, b = np.asarray(model, dtype=float), np.asarray(reference, dtype=float)
    if a.shape != b.shape:
        raise ValueError(f"paired values need equal lengths, got {a.shape} and {b.shape}")
    return (1.0 + a - b) / 2.0
