"""Intervals for the numbers a run reports, each with its n and the method that made it.

- :func:`wilson`: a success rate (Wilson score interval; Wilson 1927, JASA 22:209).
- :func:`bootstrap_mean`: a mean over units such as CALVIN chains or graded scores (MRA, IoU): the seeded
  percentile bootstrap (Efron & Tibshirani 1993, ch. 13), resampling units, or whole clusters of them.
- :func:`clustered_mean`: a mean over items that share an image, scene or video: the normal interval with
  the cluster-robust (CR1) standard error (Cameron & Miller 2015, J. Human Resources 50:317, eq. 11 with the
  G/(G-1) factor); with every item its own cluster it is the plain standard error of the mean.
- :func:`score_interval`: the rule a static benchmark's table uses to pick one of the three.

Everything is deterministic: the bootstrap draws from ``numpy.random.default_rng(seed)``.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

#: Values of one sample, as a sequence or a NumPy array.
Values = Sequence[float] | np.ndarray

#: The level of every interval a summary shows.
CONFIDENCE = 0.95
#: Bootstrap resamples and the seed every summary uses, so a summary is the same from run to run. At 2,000
#: the end points of a CALVIN avg. len interval over 1000 chains move by at most 0.02 subtasks from seed to
#: seed (measured over 20 seeds; the interval is about 0.23 wide): the second decimal shown, no more.
RESAMPLES = 2000
SEED = 0


@dataclass(frozen=True)
class Interval:
    """An estimate with its two-sided interval: ``low <= estimate <= high``, over ``n`` units.

    ``estimate``, ``low`` and ``high`` are ``None`` when there is nothing to estimate from (``n == 0``)."""

    estimate: float | None
    low: float | None
    high: float | None
    n: int
    method: str

    def scaled(self, factor: float) -> Interval:
        """The same interval in other units (``100``: a rate as a percentage)."""

        def scale(x: float | None) -> float | None:
            return None if x is None else factor * x

        return Interval(scale(self.estimate), scale(self.low), scale(self.high), self.n, self.method)

    def bounds(self, digits: int = 6) -> list[float] | None:
        """``[low, high]`` for JSON (rounded: the last digits are bootstrap noise), ``None`` without data."""
        if self.low is None or self.high is None:
            return None
        return [round(self.low, digits), round(self.high, digits)]

    def cell(self, fmt: str = ".1f") -> str:
        """A table cell: ``72.0 [52.4, 85.7]``; ``n/a`` without data."""
        if self.estimate is None or self.low is None or self.high is None:
            return "n/a"
        return f"{self.estimate:{fmt}} [{self.low:{fmt}}, {self.high:{fmt}}]"


def z_value(confidence: float = CONFIDENCE) -> float:
    """The two-sided normal quantile: 1.959964 for 95 %."""
    check_level("confidence", confidence)
    return NormalDist().inv_cdf(0.5 + confidence / 2)


def check_level(name: str, value: float) -> None:
    """A probability strictly between 0 and 1 (a level, an alpha, a power), or a ``ValueError`` naming it."""
    if not (isinstance(value, int | float) and 0.0 < value < 1.0):
        raise ValueError(f"{name} must be between 0 and 1 (exclusive), got {value!r}")


def wilson(successes: int, n: int, confidence: float = CONFIDENCE) -> Interval:
    """The Wilson score interval of ``successes`` out of ``n`` (estimate: the plain rate).

    centre = (p + z²/2n) / (1 + z²/n), half-width = z √(p(1-p)/n + z²/4n²) / (1 + z²/n).
    Unlike p ± z√(p(1-p)/n) it stays inside [0, 1] and does not collapse at 0 or n successes."""
    if not 0 <= successes <= n:
        raise ValueError(f"successes must be between 0 and n={n}, got {successes}")
    if n == 0:
        return Interval(None, None, None, 0, "wilson")
    z, p = z_value(confidence), successes / n
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    low = 0.0 if successes == 0 else max(0.0, centre - half)  # exact ends: no rounding residue
    high = 1.0 if successes == n else min(1.0, centre + half)
    return Interval(p, low, high, n, "wilson")


def _as_array(values: Values) -> np.ndarray:
    return np.asarray(values, dtype=float).reshape(-1)


def cluster_sums(values: Values, clusters: Sequence[Hashable]) -> np.ndarray:
    """The sum of ``values`` per cluster (clusters in first-seen order)."""
    if len(values) != len(clusters):
        raise ValueError(f"{len(values)} values but {len(clusters)} cluster keys")
    codes: dict[Hashable, int] = {}
    index = np.array([codes.setdefault(c, len(codes)) for c in clusters], dtype=int)
    return np.bincount(index, weights=_as_array(values), minlength=len(codes))


def clustered_se(values: Values, clusters: Sequence[Hashable] | None = None) -> float | None:
    """The standard error of the mean of ``values`` with items correlated within a cluster (CR1):

        SE² = G/(G-1) · Σ_g (Σ_{i∈g} (y_i - ȳ))² / N²

    over G clusters and N items; ``clusters=None`` puts every item in its own cluster, which gives the plain
    SE² = Σ (y_i - ȳ)² / (N(N-1)). ``None`` with fewer than two clusters (no spread to estimate)."""
    y = _as_array(values)
    keys = list(range(len(y))) if clusters is None else list(clusters)
    sums = cluster_sums(y - y.mean() if len(y) else y, keys)
    groups = len(sums)
    if groups < 2:
        return None
    return math.sqrt(groups / (groups - 1) * float(np.sum(sums**2)) / len(y) ** 2)


def clustered_mean(
    values: Values,
    clusters: Sequence[Hashable] | None = None,
    confidence: float = CONFIDENCE,
    bounds: tuple[float, float] | None = None,
) -> Interval:
    """The mean ± z·SE with the clustered SE (:func:`clustered_se`), cut to ``bounds`` (e.g. (0, 1))."""
    y = _as_array(values)
    method = "plain-se" if clusters is None else "clustered-se"
    if len(y) == 0:
        return Interval(None, None, None, 0, method)
    mean, se = float(y.mean()), clustered_se(y, clusters)
    if se is None:
        return Interval(mean, None, None, len(y), method)
    low, high = mean - z_value(confidence) * se, mean + z_value(confidence) * se
    if bounds is not None:
        low, high = max(bounds[0], low), min(bounds[1], high)
    return Interval(mean, low, high, len(y), method)


def bootstrap_means(
    values: Values,
    clusters: Sequence[Hashable] | None = None,
    *,
    seed: int = SEED,
    resamples: int = RESAMPLES,
) -> np.ndarray:
    """``resamples`` bootstrap replicates of the mean: draw the units (or whole clusters) with replacement,
    as many as there are, and take the mean of the values drawn."""
    y = _as_array(values)
    rng = np.random.default_rng(seed)
    if clusters is None:
        return y[rng.integers(0, len(y), size=(resamples, len(y)))].mean(axis=1)
    sums = cluster_sums(y, clusters)
    sizes = cluster_sums(np.ones(len(y)), clusters)
    drawn = rng.integers(0, len(sums), size=(resamples, len(sums)))
    return sums[drawn].sum(axis=1) / sizes[drawn].sum(axis=1)


def percentile_interval(replicates: np.ndarray, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """The percentile interval of bootstrap replicates: their (1-c)/2 and (1+c)/2 quantiles."""
    check_level("confidence", confidence)
    low, high = np.quantile(replicates, [(1 - confidence) / 2, (1 + confidence) / 2])
    return float(low), float(high)


def bootstrap_mean(
    values: Values,
    clusters: Sequence[Hashable] | None = None,
    *,
    confidence: float = CONFIDENCE,
    seed: int = SEED,
    resamples: int = RESAMPLES,
) -> Interval:
    """The mean of ``values`` with its seeded percentile-bootstrap interval (over clusters when given)."""
    y = _as_array(values)
    method = "bootstrap" if clusters is None else "cluster-bootstrap"
    if len(y) == 0:
        return Interval(None, None, None, 0, method)
    low, high = percentile_interval(bootstrap_means(y, clusters, seed=seed, resamples=resamples), confidence)
    mean = float(y.mean())
    return Interval(mean, min(low, mean), max(high, mean), len(y), method)


def shares_clusters(clusters: Sequence[Hashable] | None) -> bool:
    """Whether any two items share a cluster."""
    return clusters is not None and len(set(clusters)) < len(clusters)


def score_interval(
    scores: Values, clusters: Sequence[Hashable] | None = None, confidence: float = CONFIDENCE
) -> Interval:
    """The interval of a mean score in [0, 1], as a static benchmark's tables show it.

    Right/wrong scores (every score 0 or 1): Wilson when no two items share a cluster, else the clustered
    SE (Wilson assumes independent items). Graded scores (MRA, IoU, partial credit): the percentile
    bootstrap, over clusters when items share one."""
    y = _as_array(scores)
    shared = shares_clusters(clusters)
    if len(y) and np.all((y == 0) | (y == 1)) and not shared:
        return wilson(int(y.sum()), len(y), confidence)
    if len(y) and np.all((y == 0) | (y == 1)):
        return clustered_mean(y, clusters, confidence, bounds=(0.0, 1.0))
    return bootstrap_mean(y, clusters if shared else None, confidence=confidence)


def macro_mean(
    parts: Sequence[Interval], confidence: float = CONFIDENCE, bounds: tuple[float, float] | None = None
) -> Interval:
    """The unweighted mean of several independent estimates (subsets, categories): :func:`weighted_mean`
    with equal weights."""
    return weighted_mean(parts, [1.0] * len(parts), confidence, bounds, method="macro-mean")


def weighted_mean(
    parts: Sequence[Interval],
    weights: Sequence[float],
    confidence: float = CONFIDENCE,
    bounds: tuple[float, float] | None = None,
    method: str = "weighted-mean",
) -> Interval:
    """Σ w_k x_k / Σ w_k of independent estimates x_k, with the normal interval of
    SE² = Σ w_k² SE_k² / (Σ w_k)², each SE_k read back from its part's interval as half its width / z.

    Parts without an estimate are left out and the other weights renormalised; ``None`` bounds when a part
    has no interval; the interval is cut to ``bounds`` (e.g. (0, 1) for rates)."""
    kept = [(p, w) for p, w in zip(parts, weights) if p.estimate is not None]
    total = sum(w for _, w in kept)
    n = sum(p.n for p, _ in kept)
    if not kept or total <= 0:
        return Interval(None, None, None, n, method)
    mean = sum(w * estimate for p, w in kept if (estimate := p.estimate) is not None) / total
    spans = [(w, p.high - p.low) for p, w in kept if p.high is not None and p.low is not None]
    if len(spans) < len(kept):
        return Interval(mean, None, None, n, method)
    z = z_value(confidence)
    se = math.sqrt(sum((w * span / (2 * z)) ** 2 for w, span in spans)) / total
    low, high = mean - z * se, mean + z * se
    if bounds is not None:
        low, high = max(bounds[0], low), min(bounds[1], high)
    return Interval(mean, low, high, n, method)


def cell(value: float | None, bounds: Sequence[float] | None, fmt: str = ".1f", scale: float = 1.0) -> str:
    """A table cell from a summary's value and its ``[low, high]``: ``72.0 [52.4, 85.7]`` (times ``scale``,
    e.g. 100 for a rate shown in percent); the value alone without bounds; ``n/a`` without a value."""
    if value is None:
        return "n/a"
    if bounds is None:
        return format(scale * value, fmt)
    return f"{scale * value:{fmt}} [{scale * bounds[0]:{fmt}}, {scale * bounds[1]:{fmt}}]"


def described(confidence: float = CONFIDENCE, **methods: str) -> dict[str, object]:
    """The ``intervals`` entry of a summary: the level, and per field the method that made its interval."""
    return {"confidence": confidence, **methods}


#: How each method is named in a summary's ``intervals`` entry.
WILSON = "wilson"
BOOTSTRAP = f"percentile bootstrap over units ({RESAMPLES} resamples, seed {SEED})"
