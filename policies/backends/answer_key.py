"""The answer-key model: a competent stand-in that answers every prompt as a perfect model would.

It is named ``answer-key`` (``--model answer-key``); ``--model oracle``, its former name, still works and prints
a one-line deprecation note (the name collided with CALVIN's task oracle, :mod:`envs.calvin.tasks`).

Only ``generate`` differs from a real backend. Prompt building, parsing, wrappers, envs and scoring are the
code a real model goes through, so a route the stand-in cannot succeed on is broken for every model. Nothing
downstream knows which backend it has: the stand-in is built with its *truth*, a callable from a
conversation to its answer, where the CLI builds backends (the composition root):

- **offline** (static benchmarks, goal-image scoring): an :class:`AnswerKey` made from each item's gold
  answer, written as the benchmark's prompt asks (``benchmarks.static.backends``, ``benchmarks.goal_scoring``);
- **closed loop**: an :class:`EnvTruth`, whose privileged source (e.g. the env family's scripted expert, which
  reads the prompt's format and writes the expert's next motion in it) is made from the env the policy binds;
  policies only tell their backend ``bind(env)`` and ``start_episode(context)``, which models ignore.

``error_rate`` injects typical model errors (:mod:`policies.backends.injection`) at a seeded rate, so
parse-failure accounting can be checked against known counts. Whether a call is corrupted, and how, depends
only on ``error_seed`` and the conversation's content, never on call order, so results do not depend on worker
count or sharding. The kind injected comes back in :attr:`Generation.injected_error`, the only way it reaches
policies and records.
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np

from policies.backends.base import Backend, Generation, GenerationConfig, Message
from policies.backends.images import validate_messages
from policies.backends.injection import DEFAULT_ERROR_KINDS, ERROR_KINDS

if TYPE_CHECKING:
    import gymnasium as gym

ANSWER_KEY_MODEL = "answer-key"
#: Former names, still accepted with a deprecation note (:func:`canonical_model`).
DEPRECATED_NAMES = {"oracle": ANSWER_KEY_MODEL}
_warned: set[tuple[str, str]] = set()


def canonical_model(name: str | None, flag: str = "--model") -> str | None:
    """``name``, or the stand-in's name for a former one (a one-line note on stderr naming ``flag``, once per
    process and flag)."""
    if name not in DEPRECATED_NAMES:
        return name
    if (flag, name) not in _warned:
        _warned.add((flag, name))
        print(
            f"note: {flag} {name} is deprecated; use {flag} {DEPRECATED_NAMES[name]} (the same stand-in)",
            file=sys.stderr,
        )
    return DEPRECATED_NAMES[name]


@runtime_checkable
class TruthSource(Protocol):
    """Writes the answer a perfect model would give to one conversation (privileged)."""

    def answer(self, messages: Sequence[Message]) -> str:
        """The ideal answer text, in exactly the format the conversation's prompt asks for."""
        ...


#: A truth: the answer a perfect model gives to one conversation, written as its prompt asks.
Truth = Callable[[Sequence[Message]], str]


class AnswerKey:
    """The truth of the offline routes, made from (conversation, gold answer) pairs read lazily in order.

    A conversation is matched by its content (:func:`_fingerprint`: text and image bytes); the pairs are
    read only as far as the conversation asked, so a run that asks its items in order builds each
    conversation twice at most. Two identical conversations get the first one's answer.
    """

    def __init__(self, pairs: Iterable[tuple[Sequence[Message], str]]) -> None:
        self._pairs: Iterator[tuple[Sequence[Message], str]] = iter(pairs)
        self._known: dict[str, str] = {}

    def __call__(self, messages: Sequence[Message]) -> str:
        key = _fingerprint(messages)
        while key not in self._known:
            conversation, answer = next(self._pairs, (None, ""))
            if conversation is None:
                raise RuntimeError("the answer key has no gold answer for this conversation")
            self._known.setdefault(_fingerprint(conversation), answer)
        return self._known[key]


class EnvTruth:
    """The truth of the closed-loop routes: a privileged source made from the env the policy is bound to.

    ``make_source(env)`` is called when the policy binds (:meth:`Backend.bind`); a source with a ``reset``
    (plan sources) hears each new episode (:meth:`Backend.start_episode`).
    """

    def __init__(self, make_source: Callable[[gym.Env], TruthSource]) -> None:
        self.make_source = make_source
        self.source: TruthSource | None = None

    def bind(self, env: gym.Env) -> None:
        self.source = None
        self.source = self.make_source(env)

    def start_episode(self, context: object) -> None:
        reset = getattr(self.source, "reset", None)
        if reset is not None:
            reset(context)

    def __call__(self, messages: Sequence[Message]) -> str:
        if self.source is None:
            raise RuntimeError("the closed-loop truth has no env: the policy never bound one")
        return self.source.answer(messages)


# ------------------------------------------------------------------------------------------ backend


class AnswerKeyBackend(Backend):
    """Answers with the truth it was built with: offline an :class:`AnswerKey`, in closed loop an
    :class:`EnvTruth`; any callable from a conversation to its answer (``bind``/``start_episode`` are passed on
    to a truth that has them).

    Args:
        config: generation settings (recorded; the stand-in's answers do not depend on them, except that an
            answer longer than ``max_new_tokens`` whitespace-separated tokens is cut there, as a real model's).
        truth: what it answers from (``None``: every call is a ``RuntimeError``).
        error_rate: probability that an answer is corrupted with one of ``error_kinds``.
        error_seed: seed of the corruption draws.
        error_kinds: which kinds of :data:`ERROR_KINDS` to draw from (uniformly); default
            :data:`DEFAULT_ERROR_KINDS` (offline short-answer routes pass :data:`ANSWER_ERROR_KINDS`).
        model: the name recorded as ``model_id`` (``make_backend`` gives every backend its model).
    """

    privileged = True
    #: Never cached: its answers come from the attached truth, not from the conversation alone.
    cacheable = False

    def __init__(
        self,
        config: GenerationConfig | None = None,
        *,
        truth: Truth | None = None,
        error_rate: float = 0.0,
        error_seed: int = 0,
        error_kinds: Sequence[str] = DEFAULT_ERROR_KINDS,
        model: str = ANSWER_KEY_MODEL,
    ) -> None:
        if not 0.0 <= error_rate <= 1.0:
            raise ValueError(f"answer-key error_rate must be in [0, 1], got {error_rate}")
        unknown = sorted(set(error_kinds) - set(ERROR_KINDS))
        if unknown or not error_kinds:
            raise ValueError(f"answer-key error_kinds {list(error_kinds)}: choose from {sorted(ERROR_KINDS)}")
        self.model_id = model  # the name it was built under (make_backend passes every backend its model)
        self.config = config or GenerationConfig()
        self.error_rate, self.error_seed, self.error_kinds = error_rate, error_seed, tuple(error_kinds)
        self.source: Truth | None = truth

    def bind(self, env: gym.Env) -> None:
        """Pass the policy's env to a closed-loop truth (:class:`EnvTruth`); an answer key ignores it."""
        bind = getattr(self.source, "bind", None)
        if bind is not None:
            bind(env)

    def start_episode(self, context: object) -> None:
        start = getattr(self.source, "start_episode", None)
        if start is not None:
            start(context)

    def generate(self, messages: Sequence[Message]) -> Generation:
        validate_messages(messages)
        key = _fingerprint(messages)
        text = self._truth(messages)
        kind = self._draw_error(key)
        if kind is not None:
            text = ERROR_KINDS[kind][0](text, np.random.default_rng(_seed(self.error_seed, key, "kind")))
        text = _cap_tokens(text, self.config.max_new_tokens)
        return Generation(
            text=text,
            prompt_tokens=None,
            completion_tokens=len(text.split()),
            latency_s=0.0,
            injected_error=kind,
        )

    def _truth(self, messages: Sequence[Message]) -> str:
        if self.source is None:
            raise RuntimeError(
                "the answer-key model has no ground truth: build it with truth= (offline: an "
                "AnswerKey of the gold answers, closed loop: an EnvTruth)"
            )
        return self.source(messages)

    def _draw_error(self, key: str) -> str | None:
        if self.error_rate <= 0.0:
            return None
        rng = np.random.default_rng(_seed(self.error_seed, key, "rate"))
        if rng.random() >= self.error_rate:
            return None
        return self.error_kinds[int(rng.integers(len(self.error_kinds)))]

    def describe(self) -> dict[str, Any]:
        return {
            **super().describe(),
            "privileged": True,
            "error_rate": self.error_rate,
            "error_seed": self.error_seed,
            "error_kinds": list(self.error_kinds),
        }


# ------------------------------------------------------------------------------------------ helpers


def _fingerprint(messages: Sequence[Message]) -> str:
    from policies.backends.cache import canonical_messages

    blob = json.dumps(canonical_messages(messages), sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()


def _seed(seed: int, key: str, purpose: str) -> int:
    return int.from_bytes(hashlib.sha256(f"{seed}:{purpose}:{key}".encode()).digest()[:8], "little")


def _cap_tokens(text: str, max_new_tokens: int) -> str:
    words = text.split(" ")
    return text if len(words) <= max_new_tokens else " ".join(words[:max_new_tokens])
