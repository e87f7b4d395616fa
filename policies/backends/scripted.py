"""A backend that replays canned answers: for tests of policies and scorers, and dry runs of a benchmark."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from policies.backends.base import Backend, Generation, GenerationConfig, Message
from policies.backends.images import validate_messages

Script = Sequence[str | Generation | Exception] | Callable[[Sequence[Message]], str | Generation]


class ScriptedBackend(Backend):
    """Answers from ``script``: a list consumed in order, or a function of the messages.

    A list entry that is an exception is raised (to rehearse backend failures). ``calls`` keeps every
    conversation received. Running out of answers is an error, never a silent repeat.
    """

    def __init__(
        self, script: Script, *, model_id: str = "scripted", config: GenerationConfig | None = None
    ) -> None:
        self.script = script
        self.model_id = model_id
        self.config = config or GenerationConfig()
        self.calls: list[list[Message]] = []

    def generate(self, messages: Sequence[Message]) -> Generation:
        validate_messages(messages)
        self.calls.append(list(messages))
        answer = self._next(messages)
        if isinstance(answer, Exception):
            raise answer
        return answer if isinstance(answer, Generation) else Generation(text=str(answer))

    def _next(self, messages: Sequence[Message]) -> Any:
        if callable(self.script):
            return self.script(messages)
        if len(self.calls) > len(self.script):
            raise RuntimeError(
                f"ScriptedBackend ran out of answers: call {len(self.calls)}, script has {len(self.script)}"
            )
        return self.script[len(self.calls) - 1]

    def cache_identity(self) -> dict[str, Any]:
        return {"backend": "scripted"}
