"""Predictions for a goal-image dataset: an MLLM through the ``Backend`` interface, the ground truth, the blind baseline.

Every prediction is the raw text a model would write; scorers parse it. The MLLM sees the SpatialTree
system prompt (``action_mapping.render_navigation_prompt`` / ``render_manipulation_prompt`` with the
sample's step sizes) and a user turn with the start image, the goal image and the instruction.
"""

from __future__ import annotations

import inspect
import time
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from action_mapping import Plan, PlanStep, render_manipulation_prompt, render_navigation_prompt
from benchmarks.goal_scoring.dataset import GoalDataset, GoalSample
from benchmarks.scoring.goal import KINDS, render_answer
from policies.backends.base import Backend, Generation, GenerationConfig, Message
from policies.config_cli import InputError


def prompt_steps(sample: GoalSample, num_steps: int | None) -> int:
    """Steps the prompt asks for: ``num_steps``, or the sample's ground-truth step count when None."""
    return len(sample.plan.steps) if num_steps is None else num_steps


def build_messages(dataset: GoalDataset, sample: GoalSample, num_steps: int | None = None) -> list[Message]:
    """System prompt + one user turn with both images (``uint8`` arrays) and the instruction."""
    steps = prompt_steps(sample, num_steps)
    if sample.kind == "nav":
        system = render_navigation_prompt(
            sample.step_sizes, num_steps=steps, max_step_num=sample.max_step_num
        )
    else:
        system = render_manipulation_prompt(
            sample.step_sizes, max_steps=steps, max_step_num=sample.max_step_num
        )
    request = sample.instruction or "Give the plan that takes the start view to the goal view."
    content = [
        {"type": "text", "text": "Image 1 (start):"},
        {"type": "image", "image": dataset.load_image(sample, "start")},
        {"type": "text", "text": "Image 2 (goal):"},
        {"type": "image", "image": dataset.load_image(sample, "goal")},
        {"type": "text", "text": request},
    ]
    return [{"role": "system", "content": system}, {"role": "user", "content": content}]


def gold_answer(sample: GoalSample) -> str:
    """The ground-truth plan written as the prompt asks (``step_1``... JSON with symbols, counts in the
    sample's step sizes, gripper for manipulation): a perfect model's answer."""
    return render_answer(sample.plan, sample.kind, "paper")


def gold_conversations(
    dataset: GoalDataset, num_steps: int | None = None
) -> Iterator[tuple[list[Message], str]]:
    """Each sample's conversation (as :func:`predict_with_backend` asks it) with its :func:`gold_answer`."""
    for sample in dataset.samples:
        yield build_messages(dataset, sample, num_steps), gold_answer(sample)


def predict_with_backend(
    dataset: GoalDataset, backend: Backend, *, num_steps: int | None = None, batch_size: int = 8
) -> list[dict[str, Any]]:
    """One prediction record per sample, in dataset order, through ``backend.generate_batch``.

    When a batch fails, its samples are asked one by one; a sample whose call fails gets a record with
    ``output`` null and the ``error`` (never a made-up answer), so ``score`` counts it as errored."""
    records: list[dict[str, Any]] = []
    samples = dataset.samples
    for start in range(0, len(samples), batch_size):
        chunk = samples[start : start + batch_size]
        conversations = [build_messages(dataset, s, num_steps) for s in chunk]
        began = time.perf_counter()
        answers = _ask(backend, conversations)
        wall = (time.perf_counter() - began) / len(chunk)
        for sample, answer in zip(chunk, answers):
            records.append(_record(sample, backend, answer, wall))
    return records


def _ask(backend: Backend, conversations: Sequence[list[Message]]) -> list[Generation | str]:
    """Generations in order; where a call fails, its error text instead (the batch retried one by one)."""
    try:
        generations = backend.generate_batch(conversations)
        if len(generations) != len(conversations):
            raise RuntimeError(
                f"{type(backend).__name__}.generate_batch returned {len(generations)} answers for {len(conversations)}"
            )
        return list(generations)
    except Exception:  # any backend failure: ask one by one below, so one bad sample does not sink the others
        answers: list[Generation | str] = []
        for conversation in conversations:
            try:
                answers.append(backend.generate(conversation))
            except Exception as error:  # recorded on the sample; never replaced by an answer
                answers.append(f"{type(error).__name__}: {error}")
        return answers


def _record(sample: GoalSample, backend: Backend, answer: Generation | str, wall: float) -> dict[str, Any]:
    if isinstance(answer, str):
        return {"id": sample.id, "output": None, "error": answer, "model": backend.model_id}
    record = {
        "id": sample.id,
        "output": answer.text,
        "model": backend.model_id,
        "prompt_tokens": answer.prompt_tokens,
        "completion_tokens": answer.completion_tokens,
        "latency_s": answer.latency_s or wall,
        "cached": answer.cached,
        "cost_usd": answer.cost_usd,
    }
    if answer.injected_error is not None:  # an error seeded on purpose, to check parse-failure counts against
        record["injected_error"] = answer.injected_error
    return record


def make_model_backend(
    model: str,
    *,
    api_base: str | None,
    generation: GenerationConfig,
    cache: bool = True,
) -> Backend:
    """Build a backend with ``policies.backends.factory.make_backend`` (imported only when needed).

    Optional arguments are passed under the names the factory accepts (``api_base``/``base_url``,
    ``config``/``generation``/``generation_config``, ``cache``), so this stays valid as the factory grows.
    """
    try:
        from policies.backends.factory import make_backend
    except ImportError as e:
        raise InputError(
            f"--policy mllm needs policies.backends.factory.make_backend, which cannot be imported ({e}). "
            "Fix: install the MLLM backends (pip install -e '.[mllm]') in a checkout that has them"
        ) from e
    accepted = inspect.signature(make_backend).parameters
    kwargs: dict[str, Any] = {}
    if api_base is not None:
        name = _parameter_name(accepted, ("api_base", "base_url"))
        if name is None:
            raise RuntimeError(
                f"make_backend{inspect.signature(make_backend)} takes no API base; drop --api-base"
            )
        kwargs[name] = api_base
    name = _parameter_name(accepted, ("config", "generation", "generation_config"))
    if name is not None:
        kwargs[name] = generation
    if not cache:
        if "cache" not in accepted:
            raise RuntimeError(
                f"make_backend{inspect.signature(make_backend)} has no response cache to turn off"
            )
        kwargs["cache"] = False
    return make_backend(model, **kwargs)


def _parameter_name(accepted: Mapping[str, inspect.Parameter], names: tuple[str, ...]) -> str | None:
    """The first of ``names`` the function accepts (the first at all when it takes ``**kwargs``)."""
    found = next((n for n in names if n in accepted), None)
    takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in accepted.values())
    return found or (names[0] if takes_any else None)


# --------------------------------------------------------------------------------------------------------
# Reference points: the ground truth itself and the blind baseline


def gold_outputs(dataset: GoalDataset, scorer: str = "paper") -> dict[str, str]:
    """The ground-truth plan of every sample, written as the named scorer reads answers."""
    return {s.id: render_answer(s.plan, s.kind, scorer) for s in dataset}


def _step_signature(step: PlanStep) -> tuple[Any, ...]:
    return tuple(zip(step.actions, step.step_nums)), step.gripper


def blind_plan(plans: Sequence[Plan]) -> Plan:
    """The most common plan, step by step: the modal length, then at each index the modal step among the
    plans that have one (ties go to the one seen first). Fixed for the whole dataset: no image is used."""
    if not plans:
        raise ValueError("blind_plan needs at least one plan")
    lengths = Counter(len(p.steps) for p in plans)
    length = max(lengths.items(), key=lambda kv: (kv[1], -kv[0]))[0]
    steps = []
    for i in range(length):
        signature = Counter(_step_signature(p.steps[i]) for p in plans if len(p.steps) > i).most_common(1)[0][
            0
        ]
        pairs, gripper = signature
        steps.append(PlanStep([a for a, _ in pairs], [n for _, n in pairs], gripper=gripper))
    return Plan(steps=steps, format="blind")


def blind_plans(dataset: GoalDataset) -> dict[str, Plan]:
    """One blind plan per kind present in the dataset."""
    return {
        k: blind_plan([s.plan for s in dataset if s.kind == k])
        for k in KINDS
        if any(s.kind == k for s in dataset)
    }


def blind_outputs(dataset: GoalDataset, scorer: str = "paper") -> dict[str, str]:
    """The blind plan of each sample's kind, written as the named scorer reads answers."""
    plans = blind_plans(dataset)
    return {s.id: render_answer(plans[s.kind], s.kind, scorer) for s in dataset}


def reference_records(outputs: Mapping[str, str], name: str) -> list[dict[str, Any]]:
    """Prediction records of built-in reference answers (sample id -> text), recorded under ``name``."""
    return [{"id": sid, "output": text, "model": name} for sid, text in outputs.items()]
