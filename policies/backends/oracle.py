"""The oracle backend: a competent stand-in model that answers every prompt as a perfect model would.

Only ``generate`` differs from a real backend. Prompt building, parsing, wrappers, envs and scoring are the
code a real model goes through, so a route the oracle cannot succeed on is broken for every model.

Where the truth comes from depends on the route, and is given to the backend by the code that knows it:

- **closed loop**: a privileged *source* (``attach(source)``), e.g. the scripted expert of the env the
  policy is bound to, which reads the prompt's format (step sizes, plan length, action list) and writes the
  expert's next motion in it; see :func:`attach_oracle`.
- **offline** (static benchmarks, goal-image scoring): the runner registers each conversation's ground-truth
  answer with :meth:`OracleBackend.expect` before asking.

``error_rate`` injects typical model errors at a seeded rate, so parse-failure accounting can be checked
against known counts. Whether a call is corrupted, and how, depends only on ``error_seed`` and the
conversation's content, never on call order, so results do not depend on worker count or sharding. The
kind injected comes back in :attr:`Generation.injected_error` (and is counted by the policies).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

from policies.backends.base import Backend, Generation, GenerationConfig, Message
from policies.backends.images import validate_messages

ORACLE_MODEL = "oracle"


@runtime_checkable
class OracleSource(Protocol):
    """Writes the answer a perfect model would give to one conversation (privileged)."""

    def answer(self, messages: Sequence[Message]) -> str:
        """The ideal answer text, in exactly the format the conversation's prompt asks for."""
        ...


# ------------------------------------------------------------------------------------------ injection
# Each kind says what a parser must make of it: "unusable" answers count as parse errors (no action, no
# parsed answer), "repaired" ones are usable after a repair (parse_repairs). Tests compare these counts
# with the recorded ones exactly.

Corruption = Callable[[str, np.random.Generator], str]


def _unknown_primitive(text: str, rng: np.random.Generator) -> str:
    """Every action name replaced by a word no parser knows (a model inventing its own vocabulary); a
    manipulation step's gripper state too, since parsers rightly keep a step whose gripper alone is valid."""
    return _rewrite_json(text, lambda value: _replace_actions(value, "teleport"), fallback="teleport")


def _malformed_json(text: str, rng: np.random.Generator) -> str:
    """Structure lost: braces, brackets and colons gone, as a model that half-forgot the format writes."""
    broken = "".join(" " if c in "{}[]:" else c for c in text)
    return f"My answer is {broken.replace(chr(34), '')} and nothing else"


def _truncated(text: str, rng: np.random.Generator) -> str:
    """Cut off after the first few characters, as by a tiny token budget: nothing usable survives."""
    return text[: min(len(text) // 4, 6)]


def _prose(text: str, rng: np.random.Generator) -> str:
    """The right answer wrapped in chatter and a code fence (usable: parsers extract it)."""
    return f"Let me look at the images carefully.\n\n```json\n{text}\n```\n\nThis should do it."


def _empty(text: str, rng: np.random.Generator) -> str:
    """No text at all (a model that stops at once): nothing to read, whatever the answer format."""
    return ""


def _refusal(text: str, rng: np.random.Generator) -> str:
    """A refusal instead of the answer (short-answer routes). Worded without option letters a-f, the
    words yes/no (nor a substring such as "know") or digits, so even the public scorers' lenient rules,
    which take the first letter a-f anywhere or the last "no" substring, find no answer in it."""
    return "I'm sorry, I must skip this."


def _answer_sentence(text: str, rng: np.random.Generator) -> str:
    """The right answer said in a short sentence (short-answer routes; usable: parsers read past it)."""
    return f"Answer: {text}"


#: kind -> (corruption, expected effect on the parser: "unusable" or "usable")
ERROR_KINDS: dict[str, tuple[Corruption, str]] = {
    "unknown_primitive": (_unknown_primitive, "unusable"),
    "malformed_json": (_malformed_json, "unusable"),
    "truncated": (_truncated, "unusable"),
    "prose": (_prose, "usable"),
    "empty": (_empty, "unusable"),
    "refusal": (_refusal, "unusable"),
    "answer_sentence": (_answer_sentence, "usable"),
}
#: What the closed-loop routes draw from by default (plans: JSON that can lose its structure or vocabulary).
DEFAULT_ERROR_KINDS: tuple[str, ...] = ("unknown_primitive", "malformed_json", "truncated", "prose")
#: What the offline short-answer routes draw from (static benchmarks: a letter, yes/no, a number, a box).
ANSWER_ERROR_KINDS: tuple[str, ...] = ("truncated", "empty", "refusal", "answer_sentence")


def _rewrite_json(text: str, rewrite: Callable[[Any], Any], *, fallback: str) -> str:
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return fallback
    return json.dumps(rewrite(value))


def _replace_actions(value: Any, word: str) -> Any:
    if isinstance(value, dict):
        # EB navigation names an action twice ({"action_id": 4, "action_name": ...}): both are invented
        return {k: ([word] * len(v) if k == "actions" and isinstance(v, list) else
                    word if k in ("action", "action_name", "action_id", "gripper") else _replace_actions(v, word))
                for k, v in value.items()}  # fmt: skip
    if isinstance(value, list):
        return [_replace_actions(v, word) for v in value]
    return value


# ------------------------------------------------------------------------------------------ backend


class OracleBackend(Backend):
    """Answers with the truth from its source (closed loop) or from :meth:`expect` (offline).

    Args:
        config: generation settings (recorded; the oracle's answers do not depend on them, except that an
            answer longer than ``max_new_tokens`` whitespace-separated tokens is cut there, as a real model's).
        error_rate: probability that an answer is corrupted with one of ``error_kinds``.
        error_seed: seed of the corruption draws.
        error_kinds: which kinds of :data:`ERROR_KINDS` to draw from (uniformly); default
            :data:`DEFAULT_ERROR_KINDS` (offline short-answer routes pass :data:`ANSWER_ERROR_KINDS`).
        model: the name recorded as ``model_id`` (``make_backend`` gives every backend its model).
    """

    privileged = True
    #: Never cached: its answers come from the attached truth, not from the conversation alone.
    cacheable = False

    def __init__(self, config: GenerationConfig | None = None, *, error_rate: float = 0.0, error_seed: int = 0,
                 error_kinds: Sequence[str] = DEFAULT_ERROR_KINDS, model: str = ORACLE_MODEL) -> None:
        if not 0.0 <= error_rate <= 1.0:
            raise ValueError(f"oracle error_rate must be in [0, 1], got {error_rate}")
        unknown = sorted(set(error_kinds) - set(ERROR_KINDS))
        if unknown or not error_kinds:
            raise ValueError(f"oracle error_kinds {list(error_kinds)}: choose from {sorted(ERROR_KINDS)}")
        self.model_id = model  # the name it was built under (make_backend passes every backend its model)
        self.config = config or GenerationConfig()
        self.error_rate, self.error_seed, self.error_kinds = error_rate, error_seed, tuple(error_kinds)
        self.source: OracleSource | None = None
        self._expected: dict[str, str] = {}

    def attach(self, source: OracleSource) -> None:
        """Answer from ``source`` from now on (closed loop: the bound env's privileged expert)."""
        self.source = source

    def expect(self, messages: Sequence[Message], answer: str) -> None:
        """Register the ground-truth ``answer`` of one conversation (offline routes), before it is asked."""
        self._expected[_fingerprint(messages)] = answer

    def generate(self, messages: Sequence[Message]) -> Generation:
        validate_messages(messages)
        key = _fingerprint(messages)
        text = self._truth(messages, key)
        kind = self._draw_error(key)
        if kind is not None:
            text = ERROR_KINDS[kind][0](text, np.random.default_rng(_seed(self.error_seed, key, "kind")))
        text = _cap_tokens(text, self.config.max_new_tokens)
        return Generation(text=text, prompt_tokens=None, completion_tokens=len(text.split()), latency_s=0.0,
                          injected_error=kind)

    def _truth(self, messages: Sequence[Message], key: str) -> str:
        if key in self._expected:
            return self._expected[key]
        if self.source is None:
            raise RuntimeError("the oracle has no ground truth for this conversation: closed-loop routes attach "
                               "a source (attach_oracle), offline runners call expect() before generate()")
        return self.source.answer(messages)

    def _draw_error(self, key: str) -> str | None:
        if self.error_rate <= 0.0:
            return None
        rng = np.random.default_rng(_seed(self.error_seed, key, "rate"))
        if rng.random() >= self.error_rate:
            return None
        return self.error_kinds[int(rng.integers(len(self.error_kinds)))]

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "privileged": True, "error_rate": self.error_rate,
                "error_seed": self.error_seed, "error_kinds": list(self.error_kinds)}


def unwrap_oracle(backend: Backend) -> OracleBackend | None:
    """The oracle, also behind a wrapper that exposes ``inner`` (the cache); ``None`` for a real model."""
    while not isinstance(backend, OracleBackend) and hasattr(backend, "inner"):
        backend = backend.inner
    return backend if isinstance(backend, OracleBackend) else None


def attach_oracle(backend: Backend, make_source: Callable[[], OracleSource]) -> bool:
    """Give an oracle backend its privileged source; a real backend is left alone. Returns whether attached."""
    oracle = unwrap_oracle(backend)
    if oracle is None:
        return False
    oracle.attach(make_source())
    return True


def expected_effect(kind: str | None) -> str:
    """``"clean"`` for no injection, else the kind's expected parser outcome (``unusable`` / ``usable``)."""
    return "clean" if kind is None else ERROR_KINDS[kind][1]


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
