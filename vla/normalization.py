"""Action normalisation for the action head, with the training data's statistics kept alongside.

The head's arm outputs pass through ``tanh``, so arm targets must live in [-1, 1]. VLM4VLA (after
RoboVLMs) clips each arm dimension to ``[low, high] = [-0.65, 0.65]`` and maps that interval linearly onto
[-1, 1]; the gripper dimension is left alone (it is a binary target). :class:`ActionNormalizer` does that
per dimension, with either the published bounds (``mode="published"``) or bounds taken from the training
data's 1st/99th percentiles (``mode="quantile"``). Either way the statistics of the data it was fitted on
(min, max, mean, std, percentiles, and the fraction of values the bounds clip) are stored with it, so a
checkpoint says what its normalisation did to its data.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

ARM_DIMS = 6
PUBLISHED_BOUND = 0.65  # VLM4VLA / RoboVLMs configs: "norm_min": -0.65, "norm_max": 0.65
NORM_MODES: tuple[str, ...] = ("published", "quantile")


@dataclass
class ActionStatistics:
    """Per-dimension statistics of the arm actions a normaliser was fitted on (raw units)."""

    count: int
    min: list[float]
    max: list[float]
    mean: list[float]
    std: list[float]
    q01: list[float]
    q99: list[float]

    @classmethod
    def of(cls, arm: np.ndarray) -> ActionStatistics:
        arm = np.asarray(arm, dtype=np.float64).reshape(-1, arm.shape[-1])
        as_list = lambda a: [float(x) for x in a]  # noqa: E731 - JSON-safe floats
        return cls(
            count=int(arm.shape[0]),
            min=as_list(arm.min(0)),
            max=as_list(arm.max(0)),
            mean=as_list(arm.mean(0)),
            std=as_list(arm.std(0)),
            q01=as_list(np.quantile(arm, 0.01, axis=0)),
            q99=as_list(np.quantile(arm, 0.99, axis=0)),
        )


@dataclass
class ActionNormalizer:
    """Clip each arm dimension to ``[low[i], high[i]]`` and map it linearly onto [-1, 1] (and back).

    ``gripper_open_value`` is the raw gripper value that means "open" in the training data (CALVIN: 1,
    LIBERO: -1); the gripper target is the probability that the gripper is open.
    """

    low: list[float]
    high: list[float]
    mode: str = "published"
    gripper_open_value: float = 1.0
    statistics: ActionStatistics | None = None
    clipped_fraction: list[float] = field(default_factory=list)

    def __post_init__(self) -> None:
        low, high = np.asarray(self.low, float), np.asarray(self.high, float)
        if low.shape != (ARM_DIMS,) or high.shape != (ARM_DIMS,):
            raise ValueError(
                f"normaliser bounds need {ARM_DIMS} values each, got {low.shape} and {high.shape}"
            )
        if not np.all(high > low):
            raise ValueError(
                f"normaliser bounds need high > low in every dimension, got low={self.low} high={self.high}"
            )

    # ------------------------------------------------------------------------------------------ fitting

    @classmethod
    def fit(
        cls, actions: np.ndarray, mode: str = "published", gripper_open_value: float = 1.0
    ) -> ActionNormalizer:
        """A normaliser for raw ``actions`` (``(..., 7)``: 6 arm values + gripper), with their statistics."""
        if mode not in NORM_MODES:
            raise ValueError(f"action normalisation mode must be one of {NORM_MODES}, got {mode!r}")
        arm = np.asarray(actions, dtype=np.float64)[..., :ARM_DIMS].reshape(-1, ARM_DIMS)
        if arm.shape[0] == 0:
            raise ValueError("cannot fit an action normaliser on an empty dataset")
        stats = ActionStatistics.of(arm)
        if mode == "published":
            low, high = np.full(ARM_DIMS, -PUBLISHED_BOUND), np.full(ARM_DIMS, PUBLISHED_BOUND)
        else:
            low, high = _widen_degenerate(np.asarray(stats.q01), np.asarray(stats.q99))
        clipped = ((arm < np.asarray(low)) | (arm > np.asarray(high))).mean(0)
        return cls(
            low=list(map(float, low)),
            high=list(map(float, high)),
            mode=mode,
            gripper_open_value=float(gripper_open_value),
            statistics=stats,
            clipped_fraction=[float(c) for c in clipped],
        )

    # ------------------------------------------------------------------------------------- transforms

    def normalize_arm(self, arm: np.ndarray) -> np.ndarray:
        """Raw arm values ``(..., 6)`` -> [-1, 1] (clipped to the bounds first)."""
        low, high = np.asarray(self.low), np.asarray(self.high)
        clipped = np.clip(np.asarray(arm, dtype=np.float64), low, high)
        return (2.0 * (clipped - low) / (high - low) - 1.0).astype(np.float32)

    def unnormalize_arm(self, arm: np.ndarray) -> np.ndarray:
        """[-1, 1] arm values ``(..., 6)`` -> raw units (inputs outside [-1, 1] are clipped)."""
        low, high = np.asarray(self.low), np.asarray(self.high)
        unit = np.clip(np.asarray(arm, dtype=np.float64), -1.0, 1.0)
        return ((unit + 1.0) / 2.0 * (high - low) + low).astype(np.float32)

    def gripper_target(self, gripper: np.ndarray) -> np.ndarray:
        """Raw gripper values -> 1.0 where open, 0.0 where closed (the BCE target)."""
        open_sign = np.sign(self.gripper_open_value)
        return (np.sign(np.asarray(gripper, dtype=np.float64)) == open_sign).astype(np.float32)

    def gripper_value(self, open_probability: np.ndarray, open_value: float | None = None) -> np.ndarray:
        """Open probabilities -> ``open_value`` (default: the training data's) where > 0.5, else its negative."""
        value = self.gripper_open_value if open_value is None else float(open_value)
        return np.where(np.asarray(open_probability) > 0.5, value, -value).astype(np.float32)

    def targets(self, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Raw actions ``(..., 7)`` -> (normalised arm ``(..., 6)``, gripper open target ``(...)``)."""
        actions = np.asarray(actions)
        return self.normalize_arm(actions[..., :ARM_DIMS]), self.gripper_target(actions[..., ARM_DIMS])

    # -------------------------------------------------------------------------------------------- files

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ActionNormalizer:
        data = dict(data)
        stats = data.pop("statistics", None)
        return cls(**data, statistics=ActionStatistics(**stats) if stats else None)

    def save(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.to_dict(), indent=2) + "\n")

    @classmethod
    def load(cls, path: str | Path) -> ActionNormalizer:
        return cls.from_dict(json.loads(Path(path).read_text()))

    @classmethod
    def published(cls, gripper_open_value: float = 1.0) -> ActionNormalizer:
        """The published bounds without data (an untrained model's normaliser)."""
        bound = [PUBLISHED_BOUND] * ARM_DIMS
        return cls(low=[-b for b in bound], high=bound, gripper_open_value=gripper_open_value)


def _widen_degenerate(
    low: np.ndarray, high: np.ndarray, min_width: float = 1e-3
) -> tuple[np.ndarray, np.ndarray]:
    """Dimensions the data never moves get a small symmetric interval, so the mapping stays defined."""
    narrow = (high - low) < min_width
    centre = (high + low) / 2.0
    return np.where(narrow, centre - min_width / 2, low), np.where(narrow, centre + min_width / 2, high)
