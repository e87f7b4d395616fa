"""The backend interface shared by MLLM policies, goal-image scoring and the static benchmarks.

Messages are OpenAI-style chat turns whose content is a string or a list of parts::

    {"role": "user", "content": [{"type": "image", "image": rgb_uint8_array_or_PIL},
                                 {"type": "text", "text": "..."}]}

Sampling settings live in :class:`GenerationConfig`, fixed when the backend is built, so a response
cache can key on (model, config, messages) alone.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    import gymnasium as gym

Message = dict[str, Any]
#: ``Generation.finish_reason`` of an answer stopped at its deadline (``Backend.supports_deadlines``).
FINISH_DEADLINE = "deadline"


@dataclass(frozen=True)
class GenerationConfig:
    """Decoding settings. Greedy by default (``temperature=0``), as the benchmarks' protocols ask."""

    max_new_tokens: int = 512
    temperature: float = 0.0
    top_p: float = 1.0
    seed: int = 0


@dataclass(frozen=True)
class Generation:
    """One model response with its accounting. Token counts are ``None`` when the backend cannot tell."""

    text: str
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    latency_s: float = 0.0
    cached: bool = False
    cost_usd: float | None = None
    #: The kind of model error the backend injected into this answer on purpose (``None`` for real models):
    #: the only way an injected error reaches policies and records (:mod:`policies.backends.injection`).
    injected_error: str | None = None
    #: Why decoding ended, where the backend tells: ``"stop"`` (end of turn), ``"length"`` (the token
    #: budget) or ``"deadline"`` (stopped at its deadline, see ``Backend.supports_deadlines``).
    finish_reason: str | None = None


class Backend(ABC):
    """A model that turns chat messages (with images) into text."""

    model_id: str
    config: GenerationConfig
    #: Whether ``make_backend`` may put the response cache in front (answers depend on the messages alone).
    cacheable: ClassVar[bool] = True
    #: Whether ``generate_batch(conversations, deadlines=[...])`` stops each conversation at its deadline
    #: (``time.monotonic()`` values); the model server bounds a request's time on the model with it.
    supports_deadlines: ClassVar[bool] = False

    @abstractmethod
    def generate(self, messages: Sequence[Message]) -> Generation:
        """Answer one conversation."""

    def generate_batch(self, conversations: Sequence[Sequence[Message]]) -> list[Generation]:
        """Answer several conversations; backends that can batch or run concurrently override this."""
        return [self.generate(c) for c in conversations]

    def bind(self, env: gym.Env) -> None:
        """Hear the env the calling policy acts in (its ``bind``). A model answers from the conversation
        alone and ignores it; a backend that answers from the simulator's truth reads it from the env."""
        return None

    def start_episode(self, context: object) -> None:
        """Hear that the caller starts an episode (a policy's ``reset``, with its ``EpisodeContext``; the static
        agent, with the item it starts); ignored by models, as :meth:`bind`."""
        return None

    def describe(self) -> dict[str, Any]:
        """Identity for run manifests and cache keys."""
        return {"backend": type(self).__name__, "model_id": self.model_id, "config": asdict(self.config)}
