"""Latency-aware closed loop: simulated time advances while the policy thinks (off by default).

Every published protocol freezes the world during inference. With a :class:`Latency`, the shared step loop
(:class:`benchmarks.core.episode.ActionStream`) charges each policy decision ``ceil(latency * control_hz)``
control steps: the inference starts at the decision's observation and its first action can only be applied
at the first control tick after it finished. Those steps are spent in the env before the new actions run:

- ``continue``: the previous chunk's not-yet-executed actions (a policy's ``pending_actions()``, e.g. the
  tail of a VLA chunk beyond ``execute_steps``), then holding still once they run out;
- ``hold``: holding still (the env's ``noop_action()``) for all of them.

``real`` uses the measured wall time of the policy call; ``fixed:MS`` charges exactly MS milliseconds per
decision (deterministic, so results do not depend on the machine).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

LatencyMode = Literal["continue", "hold"]
LATENCY_MODES: tuple[str, ...] = ("continue", "hold")


@dataclass(frozen=True)
class Latency:
    """How long a decision takes (``fixed_ms``, or measured when ``None``) and what the env does meanwhile."""

    fixed_ms: float | None
    mode: LatencyMode
    control_hz: float

    def steps(self, latency_ms: float) -> int:
        """Control steps that pass during an inference of ``latency_ms`` (the first tick after it ends)."""
        return max(0, math.ceil(latency_ms * self.control_hz / 1000.0 - 1e-9))  # 100 ms at 30 Hz is 3, not 4

    def describe(self) -> dict[str, object]:
        """JSON-safe description for manifests and records."""
        return {"latency": "real" if self.fixed_ms is None else f"fixed:{self.fixed_ms:g}", "mode": self.mode,
                "control_hz": self.control_hz}


def parse_latency(text: str | None, mode: str = "continue", control_hz: float = 30.0) -> Latency | None:
    """``None``/``"off"`` -> no latency (the published protocol); ``real`` or ``fixed:MS`` -> a :class:`Latency`."""
    if text is None or text == "off":
        return None
    if mode not in LATENCY_MODES:
        raise ValueError(f"--latency-mode {mode!r}: use one of {', '.join(LATENCY_MODES)}")
    if control_hz <= 0:
        raise ValueError(f"latency: control rate must be positive, got {control_hz}")
    if text == "real":
        return Latency(None, mode, float(control_hz))  # type: ignore[arg-type]
    kind, _, value = text.partition(":")
    try:
        ms = float(value)
    except ValueError:
        ms = -1.0
    if kind != "fixed" or not math.isfinite(ms) or ms < 0:
        raise ValueError(f"--latency {text!r}: use off, real, or fixed:MS with MS a non-negative number (e.g. fixed:100)")
    return Latency(ms, mode, float(control_hz))  # type: ignore[arg-type]


def latency_stats(latencies_ms: Sequence[float]) -> dict[str, float | int | None]:
    """Distribution of per-decision latencies: count, mean, p50, p90, max (``None`` without decisions)."""
    values = np.asarray(latencies_ms, dtype=float)
    if values.size == 0:
        return {"decisions": 0, "mean_ms": None, "p50_ms": None, "p90_ms": None, "max_ms": None}
    return {"decisions": int(values.size), "mean_ms": round(float(values.mean()), 3),
            "p50_ms": round(float(np.percentile(values, 50)), 3), "p90_ms": round(float(np.percentile(values, 90)), 3),
            "max_ms": round(float(values.max()), 3)}
