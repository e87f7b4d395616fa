"""The composition root of a static run: the conversations it sends and the models it sends them to.

:func:`build_backend` builds the model under test and :func:`build_judge` the LLM judge, both through
:func:`policies.backends.factory.make_backend`. The stand-in model (``--model answer-key``) is built here with its
truth, an answer key made offline from the benchmark's gold answers (a perfect judge's from the mode's
``judge_gold``), so the runner asks it as it asks any model and never knows which one it has.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Protocol

from benchmarks.static.config import RunConfig
from benchmarks.static.items import StaticItem
from benchmarks.static.media import load_media
from benchmarks.static.registry import Prompt, ScoringMode, get_benchmark
from policies.backends.answer_key import ANSWER_KEY_MODEL, AnswerKey, Truth
from policies.backends.base import Backend, GenerationConfig, Message
from policies.backends.injection import ANSWER_ERROR_KINDS
from policies.config_cli import InputError

JUDGE_MAX_NEW_TOKENS = 1024


class Answered(Protocol):
    """A prediction as the judge's key reads it (``runner.Prediction``)."""

    @property
    def response(self) -> str | None: ...

    @property
    def error(self) -> str | None: ...


def to_messages(prompt: Prompt, video_frames: int) -> list[Message]:
    """OpenAI-style messages: an optional preamble turn, then the images and the text in one user turn."""
    content: list[dict[str, Any]] = [
        {"type": "image", "image": image} for image in load_media(prompt.media, video_frames)
    ]
    content.append({"type": "text", "text": prompt.text})
    preamble = [{"role": prompt.preamble_role, "content": prompt.preamble}] if prompt.preamble else []
    return [*preamble, {"role": "user", "content": content}]


def judge_request(mode: ScoringMode, item: StaticItem, response: str) -> str | None:
    """The judge prompt for one sample; ``None`` (no judge) when building it raises on this answer."""
    try:
        return mode.judge_prompt(item, response)
    except Exception:  # recorded as unscored-by-judge; the rule-based score already carries the error
        return None


def judge_messages(prompt: str) -> list[Message]:
    return [{"role": "user", "content": prompt}]


def build_backend(
    config: RunConfig,
    max_new_tokens: int,
    *,
    items: Sequence[StaticItem] = (),
    model: str | None = None,
    api_base: str | None = None,
    truth: Truth | None = None,
) -> Backend:
    """The model under test (``model=None``) or another one (the judge) from ``make_backend``; the stand-in gets
    ``truth``, by default the gold answers of ``items`` written as the run's prompt style asks."""
    try:
        from policies.backends.factory import make_backend
    except ImportError as error:
        raise InputError(
            f"policies.backends.factory is not available ({error}); install the 'mllm' extra"
        ) from None
    name = model or config.model
    assert name is not None, "RunConfig.check requires --model for a run that queries one"
    kwargs: dict[str, Any] = {"config": GenerationConfig(max_new_tokens=max_new_tokens)}
    if name == ANSWER_KEY_MODEL:  # never cached; short answers get the short-answer error kinds
        kwargs.update(cache=False, error_kinds=ANSWER_ERROR_KINDS)
        # the agent's calls are JSON tool calls and tagged answers
        if model is None and config.policy == "agent":
            from benchmarks.static.agent_run import AGENT_ERROR_KINDS

            kwargs["error_kinds"] = AGENT_ERROR_KINDS
        if model is None:  # the model under test, not a perfect judge
            kwargs.update(error_rate=config.answer_key_error_rate, error_seed=config.answer_key_error_seed)
            truth = truth if truth is not None else _truth(config, items)
        return make_backend(name, truth=truth, **kwargs)
    kwargs["api_base"] = api_base if model else config.api_base
    if config.cache is not None:
        kwargs["cache"] = config.cache
    return make_backend(name, **kwargs)


def build_judge(
    config: RunConfig, items: Sequence[StaticItem], predictions: Mapping[str, Answered]
) -> Backend:
    """The LLM judge of ``--judge-model``; a perfect judge (``answer-key``) replies what the mode says it would."""
    truth = None
    if config.judge_model == ANSWER_KEY_MODEL:
        mode = get_benchmark(config.bench).mode(config.mode)
        if mode.judge_gold is not None:
            truth = AnswerKey(_judge_pairs(mode, items, predictions))
        elif mode.judge_score is not None:  # a mode without a judge never asks it
            raise ValueError(
                f"--judge-model answer-key: the {mode.name} mode does not say what a perfect judge replies"
            )
    return build_backend(
        config, JUDGE_MAX_NEW_TOKENS, model=config.judge_model, api_base=config.judge_api_base, truth=truth
    )


def _truth(config: RunConfig, items: Sequence[StaticItem]) -> Truth:
    """The stand-in's truth: the agent's per-item source (``--policy agent``), else the gold answers."""
    if config.policy == "agent":
        from benchmarks.static.answer_key_agent import StaticAgentTruth

        return StaticAgentTruth()
    return AnswerKey(_gold_pairs(config, items))


def _gold_pairs(config: RunConfig, items: Sequence[StaticItem]) -> Iterator[tuple[list[Message], str]]:
    spec = get_benchmark(config.bench)
    style = config.prompt_style or spec.mode(config.mode).prompt_style
    assert spec.gold_answer is not None  # checked when the run starts
    for item in items:
        yield to_messages(spec.build_prompt(item, style), config.video_frames), spec.gold_answer(item, style)


def _judge_pairs(
    mode: ScoringMode, items: Sequence[StaticItem], predictions: Mapping[str, Answered]
) -> Iterator[tuple[list[Message], str]]:
    assert mode.judge_gold is not None
    for item in items:
        prediction = predictions.get(item.item_id)
        response = (prediction.response or "") if prediction is not None else ""
        prompt = (
            judge_request(mode, item, response)
            if prediction is not None and prediction.error is None
            else None
        )
        if prompt is not None:
            yield judge_messages(prompt), mode.judge_gold(item, response)
