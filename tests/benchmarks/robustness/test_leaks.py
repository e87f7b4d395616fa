"""Leak scan for every axis of EB navigation and manipulation: the prompts the MLLM agent sends, the
observation texts, the episode context and the ``info`` it is given hold no axis name, level, seed or file
name that the clean episode's do not hold too, and the instruction it reads is the paraphrase table's entry
or the original (the issue's rule 4; the envs' own tests scan observations and ``info`` alone)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

import envs  # noqa: F401  (registers the ids)
from benchmarks.core.episode import episode_context
from envs.manipulation import perturbations as manip_axes
from envs.manipulation.episodes import make_episode as make_manip_episode
from envs.navigation import perturbations as nav_axes
from envs.navigation.episodes import make_episode as make_nav_episode
from envs.perturbation import PerturbationSpec
from policies.backends.answer_key import AnswerKeyBackend
from policies.backends.base import Backend, Generation, Message
from policies.mllm.answer_key_eb import eb_truth
from policies.mllm.embodied import EBAgentPolicy

SEED = 918273645  # distinctive: its digits must not show up anywhere the policy looks
FAMILIES = {
    "nav": ("SpatialArena/EBNavigation-v0", {"width": 32, "height": 32}, "navigation", "rgb", nav_axes),
    "manip": ("SpatialArena/EBManipulation-v0", {"image_size": 32}, "manipulation", "front_rgb", manip_axes),
}
EPISODES = {
    "nav": lambda: make_nav_episode("complex_instruction", 1),
    "manip": lambda: make_manip_episode("wipe", "common_sense", 1),  # its instruction says "camera"
}


class Capture(Backend):
    """The answer key, keeping every conversation it is sent."""

    def __init__(self, inner: AnswerKeyBackend) -> None:
        self.inner, self.model_id, self.config = inner, inner.model_id, inner.config
        self.sent: list[Sequence[Message]] = []

    def bind(self, env: gym.Env) -> None:
        self.inner.bind(env)

    def start_episode(self, context: object) -> None:
        self.inner.start_episode(context)

    def generate(self, messages: Sequence[Message]) -> Generation:
        self.sent.append(messages)
        return self.inner.generate(messages)


def _json(data: Any) -> str:
    return json.dumps(data, default=lambda v: "<array>" if isinstance(v, np.ndarray) else repr(v))


@pytest.fixture(
    scope="module",
    params=["nav", pytest.param("manip", marks=pytest.mark.slow)],  # (manip: about 10 s a reset and a plan)
)
def agent(request):
    env_id, kwargs, task, image_key, _ = FAMILIES[request.param]
    env = gym.make(env_id, **kwargs)
    backend = Capture(AnswerKeyBackend(truth=eb_truth(task)))
    policy = EBAgentPolicy(backend, task=task, image_keys=(image_key,))
    policy.bind(env)
    yield request.param, env, policy, backend
    env.close()


def _seen(agent, spec: PerturbationSpec | None) -> tuple[str, str]:
    """Everything the policy was given for the first decision, as text, and the instruction it read."""
    family, env, policy, backend = agent
    episode = EPISODES[family]()
    options = {"episode": episode, **({"perturbation": spec} if spec else {})}
    obs, info = env.reset(seed=3, options=options)
    context = episode_context(obs, info, episode, 3, ("episode_id", "family", "subset"))
    backend.sent.clear()
    policy.reset(context)
    policy.act(obs)
    texts = {k: v for k, v in obs.items() if isinstance(v, str)}
    seen = [_json(backend.sent), _json(texts), _json(context.extras), _json(info)]
    return " ".join(seen), obs["instruction"]


def test_no_spec_reaches_the_prompts_the_context_or_info(agent):
    family, *_ = agent
    module = FAMILIES[family][4]
    clean, original = _seen(agent, None)
    assert original and len(clean) > 200  # (the scan reads real prompts)
    for axis in module.AXES:
        text, instruction = _seen(agent, PerturbationSpec(axis, 5, SEED))
        words = (axis, axis.replace("_", " "), str(SEED), "perturb", "paraphrases", '"level"', '"axis"')
        assert [w for w in words if w in text and w not in clean] == [], (family, axis)
        expected = module.paraphrase_instruction(original, 5) if axis == "paraphrase" else original
        assert instruction == expected and instruction in text, (family, axis)
