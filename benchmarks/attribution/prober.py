"""Recording a closed-loop episode's decisions and asking their probes once it is over.

A :class:`Prober` lives in a worker next to its env and policy. During an episode its :meth:`Prober.hook`
hears each decision (:class:`~benchmarks.core.episode.ActionStream`'s ``on_decision``) and keeps, for the
decisions the schedule picks, the exact images the policy was shown and the family's state at that moment
(read only: the episode runs exactly as without probes). After the episode, if the schedule asks, each kept
decision's questions go to the model and come back scored, as lines for the run's ``decisions.jsonl``
(``"probe": true``), never into the episode's record.

The model is the policy's own, as the composition root gives it (:func:`benchmarks.attribution.config.probe_model`);
the gold answer of every question asked goes into the prober's :class:`ProbeBook` first.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from benchmarks.attribution.config import ProbeArgs, ProbeSchedule, probe_model
from benchmarks.attribution.questions import ProbeBook, ProbeQuestion, ask
from policies.backends.base import Backend
from policies.base import Policy
from policies.mllm.base import MLLMPolicy
from policies.mllm.common import camera_images

if TYPE_CHECKING:
    import gymnasium as gym

#: Reads a decision's state from the env (JSON-safe, read only).
ReadState = Callable[["gym.Env"], dict[str, Any]]
#: Writes the questions of one decision's state.
MakeQuestions = Callable[[Mapping[str, Any], np.random.Generator], list[ProbeQuestion]]


@dataclass(frozen=True)
class ProbeFamily:
    """What a closed-loop family gives the probes: its state reader and its question generator."""

    read_state: ReadState
    questions: MakeQuestions


@dataclass
class Decision:
    """One recorded decision: its number in the episode, the images the policy saw, the state, and the
    subtask it belongs to (a CALVIN chain's; ``None`` in a one-task episode)."""

    index: int
    images: list[np.ndarray]
    state: dict[str, Any]
    subtask: int | None = None


class Prober:
    """Keeps an episode's scheduled decisions and asks their probes after it (see the module)."""

    def __init__(
        self,
        schedule: ProbeSchedule,
        family: ProbeFamily,
        env: gym.Env | None,
        policy: Policy,
        model: Backend,
        book: ProbeBook | None = None,
    ) -> None:
        self.schedule, self.family, self.env = schedule, family, env
        self.image_keys = tuple(policy.image_keys) if isinstance(policy, MLLMPolicy) else ()
        self.policy = policy
        self.model, self.book = model, book
        self.decisions: list[Decision] = []
        self._heard, self._seed = 0, 0

    def start(self, seed: int, env: gym.Env | None = None) -> Callable[[Mapping[str, Any]], None]:
        """Forget the last episode; the decision hook of the next one (``seed``: its option shuffles; ``env``:
        where it runs, when the worker changed its env, as LIBERO's does per task)."""
        self.decisions, self._heard, self._seed = [], 0, seed
        self.env = env if env is not None else self.env
        return self.hook

    def hook(self, observation: Mapping[str, Any]) -> None:
        index, self._heard = self._heard, self._heard + 1
        if not self.schedule.keeps(index):
            return
        assert self.env is not None, "Prober.start(seed, env) before an episode of a worker without an env"
        images = [np.array(image, copy=True) for _, image in camera_images(observation, self.image_keys)]
        state = self.family.read_state(self.env)
        self.decisions.append(Decision(index, images, state, self._subtask()))

    def _subtask(self) -> int | None:
        """The subtask the policy is in (a CALVIN chain's ``subtask_index``; ``None`` elsewhere)."""
        if not isinstance(self.policy, MLLMPolicy):
            return None
        value = self.policy.context.extras.get("subtask_index")
        return None if value is None else int(value)

    def finish(self, success: bool | Sequence[bool]) -> list[dict[str, Any]]:
        """The probe lines of the episode that just ended: ``success`` is the episode's, or one per subtask
        of a chain (each decision is judged by its subtask's); a decision the schedule skips has none."""
        lines = []
        for decision in self.decisions:
            won = success if isinstance(success, bool) else bool(success[decision.subtask or 0])
            if not self.schedule.asks(won):
                continue
            rng = np.random.default_rng([self._seed, decision.index])
            where = {"decision": decision.index, "success": won}
            if decision.subtask is not None:
                where["subtask"] = decision.subtask
            for number, question in enumerate(self.family.questions(decision.state, rng)):
                line = ask(self.model, question, decision.images, self.book, f"{decision.index}.{number}")
                lines.append({"probe": True, **where, **line})
        return lines


def prober_for(
    args: ProbeArgs, seed: int, family: ProbeFamily, env: gym.Env | None, policy: Policy
) -> Prober | None:
    """The state prober a run's ``--probe`` asks for (``None`` when probes are off): it asks the policy's
    own model, or the answer-key stand-in's probe twin, seeded with the run's ``seed``."""
    schedule = args.probe_schedule()
    if schedule is None:
        return None
    model, book = probe_model(policy, args, seed)
    return Prober(schedule, family, env, policy, model, book)
