"""Leak scan for every CALVIN axis: the prompts the spatial MLLM loop sends (the answer key behind it), the
episode context and the ``info`` it is given hold no axis name, level, seed or file name that the clean
chain's do not hold too, and the instruction in the prompt is the paraphrase table's entry or the original."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

import envs  # noqa: F401  (registers the ids)
from benchmarks.calvin.chain import run_chain
from envs.calvin import initial_env_state
from envs.calvin.perturbations import AXES, variant_instruction
from envs.calvin.sequences import get_sequences
from envs.perturbation import PerturbationSpec
from policies.backends.answer_key import AnswerKeyBackend
from policies.backends.base import Backend, Generation, Message
from policies.base import EpisodeContext
from policies.mllm.answer_key_spatial import spatial_truth
from policies.mllm.spatial import SpatialPlanPolicy

SEED = 918273645  # distinctive: its digits must not show up anywhere the policy looks


class Capture(Backend):
    """The answer key, keeping every conversation it is sent and every context it starts with."""

    def __init__(self, inner: AnswerKeyBackend) -> None:
        self.inner, self.model_id, self.config = inner, inner.model_id, inner.config
        self.sent: list[Sequence[Message]] = []
        self.contexts: list[Any] = []

    def bind(self, env: gym.Env) -> None:
        self.inner.bind(env)

    def start_episode(self, context: object) -> None:
        self.contexts.append(context)
        self.inner.start_episode(context)

    def generate(self, messages: Sequence[Message]) -> Generation:
        self.sent.append(messages)
        return self.inner.generate(messages)


def _json(data: Any) -> str:
    return json.dumps(data, default=lambda v: "<array>" if isinstance(v, np.ndarray) else repr(v))


@pytest.fixture(scope="module")
def loop():
    env = gym.make("SpatialArena/CalvinPlayTable-Static-v0")
    backend = Capture(AnswerKeyBackend(truth=spatial_truth("manipulation")))
    policy = SpatialPlanPolicy(backend, task="manipulation")
    policy.bind(env)
    yield env, policy, backend
    env.close()


def _seen(loop, spec: PerturbationSpec | None) -> tuple[str, str]:
    """Everything the policy was given in the first subtask's first decision, as text."""
    env, policy, backend = loop
    state, tasks = get_sequences(1000)[2]
    robot_obs, scene_obs = initial_env_state(state, "D")
    perturbation = None if spec is None else spec.to_json()
    instruction = variant_instruction(tasks[0], perturbation)
    backend.sent.clear()
    backend.contexts.clear()
    run_chain(
        env, policy, robot_obs, scene_obs, tasks[:1], [instruction], ep_len=2, perturbation=perturbation
    )
    contexts = [
        {"instruction": c.instruction, "extras": c.extras, "info": c.info}
        if isinstance(c, EpisodeContext)
        else c
        for c in backend.contexts
    ]
    return " ".join([_json(backend.sent), _json(contexts)]), instruction


def test_no_spec_reaches_the_prompts_or_the_context(loop):
    clean, original = _seen(loop, None)
    assert len(clean) > 200 and original in clean  # (the scan reads real prompts)
    for axis in AXES:
        text, instruction = _seen(loop, PerturbationSpec(axis, 5, SEED))
        words = (axis, axis.replace("_", " "), str(SEED), "perturb", "paraphrases", '"level"', '"axis"')
        assert [w for w in words if w in text and w not in clean] == [], axis
        assert instruction in text, axis
