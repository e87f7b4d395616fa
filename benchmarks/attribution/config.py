"""The probe flags every closed-loop benchmark config takes (a dataclass mixin), the ``--probe`` schedule, and the
composition root of the model the probes ask (:func:`probe_model`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from policies.config_cli import InputError, arg

if TYPE_CHECKING:
    from benchmarks.attribution.questions import ProbeBook
    from policies.backends.base import Backend
    from policies.base import Policy

#: ``--probe`` values besides ``every:K``.
MODES = ("decisions", "failures")


@dataclass(frozen=True)
class ProbeSchedule:
    """Which decisions get probed: every one (``decisions``), every K-th of each episode (``every:K``: the 1st,
    the K+1-th, ...), or every one of the episodes that failed (``failures``)."""

    mode: str
    every: int = 1

    @classmethod
    def parse(cls, text: str) -> ProbeSchedule:
        """``decisions``, ``failures`` or ``every:K`` (K >= 1); ``ValueError`` naming the flag otherwise."""
        value = text.strip()
        if value in MODES:
            return cls(value)
        head, _, count = value.partition(":")
        if head == "every" and count.isdigit() and int(count) >= 1:
            return cls("every", int(count))
        raise ValueError(
            f"--probe {text!r}: unknown schedule; use every:K (K >= 1, every K-th decision), decisions (every "
            "decision) or failures (every decision of the episodes that failed)"
        )

    def keeps(self, decision: int) -> bool:
        """Whether the ``decision``-th decision of an episode (0-based) is recorded."""
        return decision % self.every == 0

    def asks(self, success: bool) -> bool:
        """Whether an episode that ended with ``success`` is probed (``failures``: failed ones only)."""
        return not (self.mode == "failures" and success)

    def describe(self) -> str:
        return f"every:{self.every}" if self.mode == "every" else self.mode


@dataclass
class ProbeArgs:
    """State probes (why did it fail: perception or action)"""

    probe: str | None = arg(
        None,
        "after each episode, ask the same model exact spatial questions about the states it acted in: "
        "every:K (every K-th decision), decisions (every decision) or failures (every decision of the "
        "episodes that failed); off by default; needs --policy mllm",
    )
    answer_key_probe_error_rate: float = arg(
        0.0,
        "--model answer-key with --probe: probability that a probe answer is a confident wrong one (a "
        "misperception stand-in; the closed loop is untouched)",
        minimum=0,
        maximum=1,
    )

    def probe_schedule(self) -> ProbeSchedule | None:
        """The parsed ``--probe`` (``None``: probes off)."""
        return None if self.probe is None else ProbeSchedule.parse(self.probe)

    def check_probe_policy(self, policy: str, privileged: bool) -> None:
        """``--probe`` needs a model to ask (``--policy mllm``); the probe error rate needs the stand-in."""
        if self.probe is not None and policy != "mllm":
            raise InputError(f"--probe: --policy {policy} has no model to ask; probes need --policy mllm")
        if self.answer_key_probe_error_rate > 0 and not (self.probe is not None and privileged):
            raise InputError(
                "--answer-key-probe-error-rate: only with --probe and --model answer-key (it corrupts the "
                "stand-in's probe answers); drop it"
            )


def probe_model(policy: Policy, args: ProbeArgs, error_seed: int) -> tuple[Backend, ProbeBook | None]:
    """The model the probes ask: the policy's own; for the answer-key stand-in, its probe twin
    (:mod:`benchmarks.attribution.answer_key_probes`) with the book it answers from."""
    from benchmarks.attribution.answer_key_probes import probe_twin
    from policies.mllm.base import MLLMPolicy

    if not isinstance(policy, MLLMPolicy):
        raise InputError("--probe: the policy has no model to ask; probes need --policy mllm")
    twin = probe_twin(policy.backend, args.answer_key_probe_error_rate, error_seed)
    return (policy.backend, None) if twin is None else twin
