"""Latency-aware closed loop: simulated time advances while the policy thinks (off by default).

Every published protocol freezes the world during inference. With a :class:`Latency`, the shared step loop
(:class:`benchmarks.core.episode.ActionStream`) charges each policy decision ``floor(latency * control_hz)``
control steps, the whole control periods that passed while it ran from the decision's observation (an
inference shorter than one period costs nothing, as in the frozen protocol). Those steps are spent in the
env before the new actions run:

- ``continue``: the previous chunk's not-yet-executed actions (a policy's ``pending_actions()``, e.g. the
  tail of a VLA chunk beyond ``execute_steps``), then holding still once they run out;
- ``hold``: holding still (the env's ``noop_action()``) for all of them.

``real`` uses the measured wall time of the policy call; ``fixed:MS`` charges exactly MS milliseconds per
decision and ``steps:N`` exactly N control steps (both deterministic, so results do not depend on the
machine; ``steps:N`` is ``N / control_hz`` seconds, given in the unit a latency curve is drawn in).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, cast

import numpy as np

LatencyMode = Literal["continue", "hold"]
LATENCY_MODES: tuple[str, ...] = ("continue", "hold")


@dataclass(frozen=True)
class Latency:
    """How long a decision takes (``fixed_ms``, or measured when ``None``) and what the env does meanwhile;
    ``fixed_steps`` (``steps:N``) charges exactly that many control steps (``fixed_ms`` is then their time)."""

    fixed_ms: float | None
    mode: LatencyMode
    control_hz: float
    fixed_steps: int | None = None

    def steps(self, latency_ms: float) -> int:
        """Whole control periods that pass during an inference of ``latency_ms`` (``fixed_steps`` if set)."""
        if self.fixed_steps is not None:
            return self.fixed_steps
        # 100 ms at 30 Hz: 3.0, not 2.999
        return max(0, math.floor(latency_ms * self.control_hz / 1000.0 + 1e-9))

    def describe(self) -> dict[str, object]:
        """JSON-safe description for manifests and records."""
        return {
            "latency": self.spec(),
            "mode": self.mode,
            "control_hz": self.control_hz,
        }

    def spec(self) -> str:
        """The ``--latency`` value that gives this setting."""
        if self.fixed_steps is not None:
            return f"steps:{self.fixed_steps}"
        return "real" if self.fixed_ms is None else f"fixed:{self.fixed_ms:g}"


def parse_latency(text: str | None, mode: str = "continue", control_hz: float = 30.0) -> Latency | None:
    """``None``/``"off"`` -> no latency (the published protocol); ``real``, ``fixed:MS`` or ``steps:N`` -> a
    :class:`Latency`."""
    if text is None or text == "off":
        return None
    if mode not in LATENCY_MODES:
        raise ValueError(f"--latency-mode {mode!r}: use one of {', '.join(LATENCY_MODES)}")
    checked = cast("LatencyMode", mode)  # one of LATENCY_MODES
    if control_hz <= 0:
        raise ValueError(f"latency: control rate must be positive, got {control_hz}")
    if text == "real":
        return Latency(None, checked, float(control_hz))
    kind, _, value = text.partition(":")
    if kind == "steps" and value.isdigit() and value.isascii():
        return Latency(int(value) * 1000.0 / control_hz, checked, float(control_hz), fixed_steps=int(value))
    try:
        ms = float(value)
    except ValueError:
        ms = -1.0
    if kind != "fixed" or not math.isfinite(ms) or ms < 0:
        raise ValueError(
            f"--latency {text!r}: use off, real, fixed:MS with MS a non-negative number (e.g. fixed:100), "
            "or steps:N with N a whole number of control steps (e.g. steps:5)"
        )
    return Latency(ms, checked, float(control_hz))


def latency_stats(latencies_ms: Sequence[float]) -> dict[str, float | int | None]:
    """Distribution of per-decision latencies: count, mean, p50, p90, max (``None`` without decisions)."""
    values = np.asarray(latencies_ms, dtype=float)
    if values.size == 0:
        return {"decisions": 0, "mean_ms": None, "p50_ms": None, "p90_ms": None, "max_ms": None}
    return {
        "decisions": int(values.size),
        "mean_ms": round(float(values.mean()), 3),
        "p50_ms": round(float(np.percentile(values, 50)), 3),
        "p90_ms": round(float(np.percentile(values, 90)), 3),
        "max_ms": round(float(values.max()), 3),
    }


def latency_arg(control_hz: float | str) -> Any:
    """The ``--latency`` option of a closed-loop benchmark config whose env runs at ``control_hz`` (a rate
    in Hz, or words naming the rates of the families a config serves)."""
    from policies.config_cli import arg

    rate = f"{control_hz:g} Hz" if isinstance(control_hz, (int, float)) else control_hz
    return arg(
        "off",
        f"off (the protocol: the world waits for the policy) | real | fixed:MS | steps:N: the env runs on "
        f"at {rate} while the policy computes each decision (measured wall time, MS ms, or N control steps)",
    )


def latency_mode_arg() -> Any:
    """The ``--latency-mode`` option (``continue`` or ``hold``) that goes with :func:`latency_arg`."""
    from policies.config_cli import arg

    return arg(
        "continue",
        "with --latency: during inference keep executing the previous chunk's remaining "
        "actions, or hold still",
    )


def checked_latency(text: str, mode: str, control_hz: float) -> Latency | None:
    """:func:`parse_latency` for a config's ``__post_init__``: a bad value is a one-line input error."""
    from policies.config_cli import InputError

    try:
        return parse_latency(text, mode, control_hz)
    except ValueError as error:
        raise InputError(str(error)) from None


def summarize_latency(recorded: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """``{"latency": ...}`` over the ``latency`` entries of a run's records (``{}`` when none has one):
    the setting, the distribution over every decision, and the env steps spent during inference."""
    if not recorded:
        return {}
    stats = latency_stats([v for r in recorded for v in r["latencies_ms"]])
    setting = {k: recorded[0][k] for k in ("latency", "mode", "control_hz")}
    return {
        "latency": {
            **setting,
            **stats,
            "steps": sum(r["steps"] for r in recorded),
            "held_steps": sum(r["held_steps"] for r in recorded),
        }
    }


def latency_markdown(summary: Mapping[str, Any]) -> str:
    """One summary line for the ``latency`` entry of :func:`summarize_latency`."""
    lat = summary["latency"]
    return (
        f"Latency {lat['latency']} ({lat['mode']}, {lat['control_hz']:g} Hz): {lat['decisions']} decisions, "
        f"mean {lat['mean_ms']} ms, p50 {lat['p50_ms']} ms, p90 {lat['p90_ms']} ms; {lat['steps']} env steps "
        f"ran during inference ({lat['held_steps']} holding still)."
    )
