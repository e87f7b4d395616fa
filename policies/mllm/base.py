"""The part both closed-loop MLLM policies share: setup, per-episode bookkeeping, the model call, fallbacks.

:class:`MLLMPolicy` is the base of :class:`~policies.mllm.spatial.SpatialPlanPolicy` (SpatialTree plans,
CALVIN/LIBERO) and :class:`~policies.mllm.embodied.EBAgentPolicy` (the EmbodiedBench agent loop). A
subclass says what differs: the prompt, how an answer becomes actions (the ``parse`` of :meth:`ask`),
and its extra settings and counters. The base keeps the rest the same in both:

- every model call goes through :meth:`ask`: counted (:class:`EpisodeCounters`: calls, tokens, cache hits,
  injected errors, malformed responses), recorded (:class:`ModelCall`, the run's decisions), and
  its parse error or repair counted from the subclass's verdict;
- unusable output is followed by the configured fallback (:meth:`fall_back`): a counted "stay", and with
  ``fallback="stop"`` no further calls in the episode; never a random action.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from action_mapping import Plan
from policies.backends.base import Backend, Message
from policies.base import EpisodeContext, Policy
from policies.mllm.atomic import AtomicPrompting
from policies.mllm.common import EpisodeCounters, ModelCall, check_fallback, query, stay_plan

if TYPE_CHECKING:
    import gymnasium as gym

#: Fills a call's ``parsed``/``errors``/``usable`` from the model's text; returns whether it needed repairs.
Parse = Callable[[str, ModelCall], bool]


class MLLMPolicy(Policy):
    """An MLLM in the loop: the backend, the episode's counters and calls, the fallback after unusable output.

    Args:
        backend: the model.
        task: ``"navigation"`` or ``"manipulation"`` (checked by the subclass, whose formats differ).
        image_keys: observation keys of the camera images (default: the first RGB image).
        atomic: extra low-level inputs (depth, correspondence, size), see :mod:`policies.mllm.atomic`.
        fallback: after unusable output, ``"noop"`` stays put and asks again next step; ``"stop"`` stays put
            for the rest of the episode without further model calls (``policy.stopped`` becomes true).
    """

    name: ClassVar[str] = "mllm"  # each loop names itself (mllm-spatial, mllm-eb)

    def __init__(
        self,
        backend: Backend,
        *,
        task: str,
        image_keys: Sequence[str] = (),
        atomic: AtomicPrompting | None = None,
        fallback: str = "noop",
    ) -> None:
        self.backend, self.task = backend, task
        self.image_keys = tuple(image_keys)
        self.atomic = atomic or AtomicPrompting()
        self.fallback = check_fallback(fallback)

    # ------------------------------------------------------------------------------------------ episode

    def bind(self, env: gym.Env) -> None:
        """The backend hears the env (:meth:`Backend.bind`: a model ignores it)."""
        self.backend.bind(env)

    def start_episode(self, context: EpisodeContext) -> None:
        """The bookkeeping every episode starts from; a subclass's ``reset`` calls it, then adds its own."""
        self.context = context
        self.counters = EpisodeCounters()
        self.calls: list[ModelCall] = []
        self.queue: list[Any] = []
        self.steps_taken = 0
        self.stopped = False
        self.backend.start_episode(context)

    # ------------------------------------------------------------------------------------------ model call

    def ask(self, messages: Sequence[Message], step: int, parse: Parse) -> str:
        """One model call with its bookkeeping; returns the answer's text (``""`` for a malformed response).

        ``parse(text, call)`` fills the call record and says whether the output needed repairs; an unusable
        call (``call.usable`` false, or a malformed response) counts as a parse error, a usable repaired one
        as a repair. The call is kept for :meth:`episode_calls`."""
        generation = query(self.backend, messages, self.counters)
        call = ModelCall.of(step, messages, generation)
        if generation is not None:
            repaired = parse(generation.text, call)
            self.counters.parse_repairs += int(call.usable and repaired)
        self.counters.parse_errors += int(not call.usable)
        self.calls.append(call)
        return generation.text if generation is not None else ""

    def fall_back(self) -> Plan:
        """After unusable output: a counted fallback "stay"; with ``fallback="stop"``, for the whole episode."""
        self.counters.fallbacks += 1
        self.stopped = self.fallback == "stop"
        return self.stay(f"unusable model output, fallback {self.fallback!r}")

    def stay(self, reason: str) -> Plan:
        """A one-step plan that does not move (the fallback action), marked with ``reason``."""
        return stay_plan(reason)

    # ------------------------------------------------------------------------------------------ report

    def loop_stats(self) -> dict[str, float]:
        """The loop's own counters for :meth:`episode_stats` (default: the steps taken)."""
        return {"steps": float(self.steps_taken)}

    def episode_stats(self) -> dict[str, float]:
        return {**self.counters.as_dict(), **self.loop_stats(), "stopped": float(self.stopped)}

    def episode_calls(self) -> list[dict[str, Any]]:
        """Every model call of the episode: raw text, parser errors, cache and token information."""
        return [c.to_json() for c in self.calls]

    def settings(self) -> Mapping[str, Any]:
        """The loop's own settings for :meth:`describe`."""
        return {}

    def describe(self) -> dict[str, Any]:
        return {
            **super().describe(),
            "backend": self.backend.describe(),
            "task": self.task,
            **self.settings(),
            "image_keys": list(self.image_keys),
            "atomic": self.atomic.enabled,
            "fallback": self.fallback,
        }
