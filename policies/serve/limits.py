"""How much model work one request may ask for, checked before it reaches the model.

A prompt is sized in two steps, so an over-long one costs almost nothing: first its characters and turns
(a prompt of ``n`` characters has at least ``n / longest_token_chars`` tokens, and each message at least
one, so a 15 MB text or 500,000 one-letter messages are refused before any tokenising), then its tokens, counted by the backend's tokenizer when it has one
(:meth:`~policies.backends.transformers_backend.TransformersBackend.count_prompt_tokens`). A prompt over
``max_prompt_tokens``, or a prompt and ``max_tokens`` that together exceed the model's context, is refused
with HTTP 400 naming the limit and the flag. The count also sizes the request for the batcher's scheduling.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from policies.backends.base import Backend, Message
from policies.config_cli import InputError
from policies.serve.protocol import ChatRequest, RequestError

#: Default prompt limit: the model's context, but at most this (one prefill of it fits a 7B model on a GPU).
DEFAULT_MAX_PROMPT_TOKENS = 32768
#: Longest token assumed for a backend without a vocabulary to read it from.
FALLBACK_TOKEN_CHARS = 32
#: Characters per token assumed to size a prompt for scheduling when the backend cannot count tokens.
CHARS_PER_TOKEN_ESTIMATE = 4


@dataclass(frozen=True)
class PromptLimit:
    """The prompt limit of a server over one backend.

    Args:
        max_tokens: most prompt tokens (text and images).
        context: the model's context length (prompt plus completion), when known.
        token_chars: characters of the longest token (so ``max_tokens * token_chars`` characters are more
            than ``max_tokens`` tokens whatever the text).
    """

    max_tokens: int
    context: int | None
    token_chars: int

    @classmethod
    def for_backend(cls, backend: Backend, max_prompt_tokens: int | None = None) -> PromptLimit:
        """The limit for ``backend``: ``max_prompt_tokens``, or by default its context (at most
        :data:`DEFAULT_MAX_PROMPT_TOKENS`). A limit beyond the context is an error (the model could not
        attend over such a prompt)."""
        context = getattr(backend, "context_length", None)
        if max_prompt_tokens is not None and max_prompt_tokens < 1:
            raise InputError(f"--max-prompt-tokens must be at least 1, got {max_prompt_tokens}")
        if max_prompt_tokens is not None and context is not None and max_prompt_tokens > context:
            raise InputError(
                f"--max-prompt-tokens {max_prompt_tokens} is more than the model's context of "
                f"{context} tokens; pass at most {context}"
            )
        default = min(context, DEFAULT_MAX_PROMPT_TOKENS) if context else DEFAULT_MAX_PROMPT_TOKENS
        token_chars = getattr(backend, "longest_token_chars", None) or FALLBACK_TOKEN_CHARS
        return cls(max_prompt_tokens or default, context, int(token_chars))

    @property
    def max_chars(self) -> int:
        """Most characters of prompt text that can still be within :attr:`max_tokens`."""
        return self.max_tokens * self.token_chars

    def check(self, request: ChatRequest, backend: Backend) -> int:
        """The request's prompt tokens (counted, or estimated from characters when the backend cannot
        count); raises :class:`RequestError` (400) for a prompt over the limit or beyond the context."""
        turns, chars = len(request.messages), prompt_chars(request.messages)
        if turns > self.max_tokens:  # each turn takes a token of the chat template at least
            raise RequestError(
                400,
                f"the request has {turns} messages, so more than {self.max_tokens} prompt tokens; "
                f"this server accepts prompts of at most {self.max_tokens} tokens "
                f"(--max-prompt-tokens); send fewer messages",
                "messages",
            )
        if chars > self.max_chars:
            raise RequestError(
                400,
                f"the prompt has {chars} characters, so more than {self.max_tokens} tokens; "
                f"this server accepts prompts of at most {self.max_tokens} tokens "
                f"(--max-prompt-tokens); send a shorter prompt",
                "messages",
            )
        counter = getattr(backend, "count_prompt_tokens", None)
        tokens = counter(request.messages) if counter is not None else None
        if tokens is not None and tokens > self.max_tokens:
            raise RequestError(
                400,
                f"the prompt has {tokens} tokens; this server accepts prompts of at most "
                f"{self.max_tokens} tokens (--max-prompt-tokens); send a shorter prompt",
                "messages",
            )
        self._check_context(tokens or 0, request.config.max_new_tokens)
        return tokens if tokens is not None else math.ceil(chars / CHARS_PER_TOKEN_ESTIMATE)

    def _check_context(self, prompt_tokens: int, max_new_tokens: int) -> None:
        if self.context is not None and prompt_tokens + max_new_tokens > self.context:
            raise RequestError(
                400,
                f"the prompt has {prompt_tokens} tokens and max_tokens asks for {max_new_tokens} "
                f"more: {prompt_tokens + max_new_tokens} is more than the model's context of "
                f"{self.context} tokens; ask for fewer max_tokens",
                "max_tokens",
            )


def prompt_chars(messages: list[Message]) -> int:
    """Characters of text in ``messages`` (images aside)."""
    return sum(_content_chars(m["content"]) for m in messages)


def _content_chars(content: str | Sequence[Mapping[str, Any]]) -> int:
    if isinstance(content, str):
        return len(content)
    return sum(len(p["text"]) for p in content if p.get("type") == "text")
