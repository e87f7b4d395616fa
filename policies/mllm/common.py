"""What every MLLM policy shares: episode counters, the model call, fallbacks, camera images."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, TypeGuard

import numpy as np

from action_mapping import Plan, PlanStep, Primitive
from policies.backends.base import Backend, Generation, Message
from policies.backends.cache import canonical_messages
from policies.backends.errors import MalformedResponseError
from policies.backends.injection import expected_effect

FALLBACKS = ("noop", "stop")


@dataclass
class EpisodeCounters:
    """Per-episode accounting, reported by ``Policy.episode_stats()``.

    Token counts include cached answers (they describe the model's work); ``cost_usd`` counts only answers
    paid for in this run. ``parse_errors`` are model calls that produced no usable action (including
    malformed server responses); ``parse_repairs`` are calls whose output needed repairs but was usable.
    """

    model_calls: int = 0
    parse_errors: int = 0
    parse_repairs: int = 0
    malformed_responses: int = 0
    fallbacks: int = 0
    dropped_actions: int = 0
    cache_hits: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    model_latency_s: float = 0.0
    #: Answers the backend corrupted on purpose (``Generation.injected_error``); 0 for every real model.
    injected_errors: int = 0
    #: Of those, the ones whose kind must leave nothing usable: each must show up as one parse error.
    injected_unusable: int = 0

    def add_generation(self, g: Generation) -> None:
        self.model_calls += 1
        self.cache_hits += int(g.cached)
        self.prompt_tokens += g.prompt_tokens or 0
        self.completion_tokens += g.completion_tokens or 0
        self.cost_usd += 0.0 if g.cached else (g.cost_usd or 0.0)
        self.model_latency_s += g.latency_s
        self.injected_errors += int(g.injected_error is not None)
        self.injected_unusable += int(expected_effect(g.injected_error) == "unusable")

    def as_dict(self) -> dict[str, float]:
        return {k: float(v) for k, v in asdict(self).items()}


MODEL_CALL_TOTALS = (
    "model_calls",
    "parse_errors",
    "parse_repairs",
    "fallbacks",
    "injected_errors",
    "injected_unusable",
)


def model_call_totals(episode_stats: Iterable[Mapping[str, float]]) -> dict[str, int]:
    """:data:`MODEL_CALL_TOTALS` summed over episodes' ``policy_stats`` ({} when no model was called), for
    benchmark summaries: parse errors next to the injected ones, so a reader can check them."""
    totals = dict.fromkeys(MODEL_CALL_TOTALS, 0)
    for stats in episode_stats:
        for key in MODEL_CALL_TOTALS:
            totals[key] += int(stats.get(key, 0))
    return totals if totals["model_calls"] else {}


def model_calls_markdown(totals: Mapping[str, int]) -> str:
    """One summary line for :func:`model_call_totals` ("" when there were no model calls)."""
    if not totals:
        return ""
    line = (
        f"Model calls: {totals['model_calls']}, parse errors: {totals['parse_errors']} "
        f"(repaired: {totals['parse_repairs']}), fallbacks: {totals['fallbacks']}"
    )
    if totals["injected_errors"]:
        line += (
            f"; injected errors: {totals['injected_errors']}, of which must be unusable: "
            f"{totals['injected_unusable']}"
        )
    return line + "."


@dataclass
class ModelCall:
    """One model call of an episode, for the run folder's ``decisions.jsonl``: which prompt was sent
    (``prompt_id``), what came back, what the parser made of it (``parsed``, JSON-safe) and its accounting."""

    step: int
    text: str
    prompt_id: str = ""
    parsed: Any = None
    errors: list[str] = field(default_factory=list)
    usable: bool = False
    cached: bool = False
    latency_s: float = 0.0
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    injected_error: str | None = None

    @classmethod
    def of(cls, step: int, messages: Sequence[Message], generation: Generation | None) -> ModelCall:
        """The call's record before parsing; ``generation is None`` is a malformed server response."""
        if generation is None:
            return cls(
                step=step,
                text="",
                prompt_id=prompt_id(messages),
                errors=["malformed_response: the server's answer was not a chat completion"],
            )
        return cls(
            step=step,
            text=generation.text,
            prompt_id=prompt_id(messages),
            cached=generation.cached,
            latency_s=round(generation.latency_s, 4),
            prompt_tokens=generation.prompt_tokens,
            completion_tokens=generation.completion_tokens,
            injected_error=generation.injected_error,
        )

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def prompt_id(messages: Sequence[Message]) -> str:
    """SHA-256 of the conversation (images as pixel hashes, :func:`canonical_messages`): the same prompt
    has the same id for every model and run, so decisions can be matched across runs."""
    blob = json.dumps(canonical_messages(messages), sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(blob.encode()).hexdigest()


def query(backend: Backend, messages: Sequence[Message], counters: EpisodeCounters) -> Generation | None:
    """One model call with accounting; a malformed server response counts and returns ``None``.

    Other backend errors (server unreachable after retries, request refused) propagate: the runner records
    them as the episode's error, which is better than scoring a run against a dead server.
    """
    try:
        generation = backend.generate(messages)
    except MalformedResponseError:
        counters.model_calls += 1
        counters.malformed_responses += 1
        return None
    counters.add_generation(generation)
    return generation


def check_fallback(fallback: str) -> str:
    if fallback not in FALLBACKS:
        raise ValueError(
            f"fallback must be one of {FALLBACKS} (what to do after unusable model output), got {fallback!r}"
        )
    return fallback


def stay_plan(reason: str) -> Plan:
    """A one-step plan that does not move (SpatialTree's STOP / "stay"), marked as a fallback."""
    return Plan(
        steps=[PlanStep(actions=[Primitive.STOP], step_nums=[1])],
        errors=[f"fallback: {reason}"],
        format="fallback",
    )


def camera_images(observation: Mapping[str, Any], keys: Sequence[str] = ()) -> list[tuple[str, np.ndarray]]:
    """``(key, image)`` for the requested keys, or for the first RGB image when ``keys`` is empty.

    RGB images follow the observation convention: ``uint8`` arrays ``H x W x 3``.
    """
    if keys:
        missing = [k for k in keys if k not in observation]
        if missing:
            raise KeyError(f"observation has no image key(s) {missing}; it has {sorted(observation)}")
        return [(k, _checked_image(observation[k], k)) for k in keys]
    for key, value in observation.items():
        if _is_rgb(value):
            return [(key, value)]
    raise ValueError(
        f"observation has no RGB image (uint8 H x W x 3); keys: {sorted(observation)}; set image_keys"
    )


def _is_rgb(value: object) -> TypeGuard[np.ndarray]:
    return (
        isinstance(value, np.ndarray) and value.dtype == np.uint8 and value.ndim == 3 and value.shape[2] == 3
    )


def _checked_image(value: object, key: str) -> np.ndarray:
    if not _is_rgb(value):
        shape = getattr(value, "shape", None)
        raise ValueError(
            f"observation[{key!r}] must be an RGB uint8 array H x W x 3, got {type(value).__name__} {shape}"
        )
    return value


def instruction_for(context_instruction: str, observation: Mapping[str, Any]) -> str:
    """The episode's instruction, or the observation's ``"instruction"`` when the runner passed none."""
    return context_instruction or str(observation.get("instruction") or "")


def image_part(image: np.ndarray) -> dict[str, Any]:
    return {"type": "image", "image": image}


def text_part(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}
