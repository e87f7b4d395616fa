"""``--policy agent``: SpatialAgent as a closed-loop policy for EB-style navigation (and goal-image tasks).

At every planning turn of the EmbodiedBench loop (:class:`~policies.mllm.embodied.EBAgentPolicy`: same
prompt, history, feedback, replanning and parser) the question put to SpatialAgent is the EB turn text and
its images are the current observation (and, for a goal-image task, the goal image as ``image-1``). The
agent runs its paradigm (Plan-Execute or ReAct) with tools that see that observation:

- ``truth``: every perception tool from the env's privileged state (the scene re-rendered from the current
  camera: exact boxes, masks, depths, 3D boxes, poses);
- ``cv``: OpenCV's matching, homography, flow and essential-matrix pose on the images;
- ``learned``: local transformers models on the image (``--detector-model`` OWLv2 / Grounding DINO,
  ``--segmenter-model`` SAM, ``--depth-model`` Depth Anything..., ``--matcher-model`` LightGlue /
  SuperGlue / EfficientLoFTR; see :mod:`policies.agent.learned_tools`), OpenCV for what they leave;
- ``mixed``: OpenCV where it has a tool, simulator truth for the rest;
- ``none``: only ``Terminate`` (the same core without perception).

The agent's final answer (the summarizer's ``<answer>`` or ReAct's ``Terminate``) is read by EB's parser as
a plain model's output would be. Every agent call and tool run of the episode goes to the run folder's
``decisions.jsonl`` (one record per planning turn, with the agent's trace and counters); unusable answers
are counted as EB's planner output errors and followed by the configured fallback, never a random action.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Literal, cast

import numpy as np

from policies.agent.core import AGENT_ERROR_KINDS, GOAL_VIEW_LINE, TOOL_CALL_ROLES, AgentConfig, SpatialAgent
from policies.agent.tools import Toolbox
from policies.backends.answer_key import ANSWER_KEY_MODEL, canonical_model
from policies.backends.base import Backend
from policies.backends.injection import expected_effect
from policies.base import Policy
from policies.config_cli import arg
from policies.mllm.common import ModelCall
from policies.mllm.embodied import EBAgentPolicy

if TYPE_CHECKING:
    import gymnasium as gym

    from envs.navigation.env import EBNavigationEnv
    from policies.agent.truth_tools import TruthScenes
    from policies.base import EpisodeContext
    from policies.mllm.config import MLLMPolicyConfig

TOOL_SETS = ("truth", "cv", "mixed", "learned", "none")
CLOSED_LOOP_MIN_PIXELS = 20  # a target this many pixels large is seen (the env's visibility counts any pixel)


@dataclass(frozen=True)
class AgentPolicyConfig:
    """SpatialAgent in the loop: the core model, the paradigm and budgets, the tools and their models."""

    model: str = field(
        metadata={
            "help": "the core model (as --policy mllm's --model; 'answer-key': a core that "
            "reads tool results and acts on them; 'oracle' is its deprecated name)"
        }
    )
    api_base: str | None = arg(None, "OpenAI-compatible server serving --model (omit: local transformers)")
    agent_paradigm: Literal["plan-execute", "react"] = arg("plan-execute", "plan-execute or react")
    agent_tools: Literal["truth", "cv", "mixed", "learned", "none"] = arg(
        "truth",
        "truth (env's privileged state), cv (OpenCV), mixed (OpenCV + truth), learned "
        "(local models + OpenCV) or none (Terminate only)",
    )
    detector_model: str | None = arg(
        None, "--agent-tools learned: local OWLv2 / Grounding DINO folder (detection, counting)"
    )
    segmenter_model: str | None = arg(
        None, "--agent-tools learned: local SAM / SAM-HQ / SAM2 folder (masks from the detector's boxes)"
    )
    depth_model: str | None = arg(None, "--agent-tools learned: local metric depth model folder")
    matcher_model: str | None = arg(
        None, "--agent-tools learned: local LightGlue / SuperGlue / EfficientLoFTR folder"
    )
    agent_max_attempts: int = arg(3, "plan-execute: plans asked before answering without tools", minimum=1)
    agent_max_turns: int = arg(10, "react: observer turns before the summarizer", minimum=1)
    agent_max_tokens: int = arg(16384, "completion tokens over all agent calls of one decision", minimum=1)
    max_steps: int | None = arg(None, "EB step budget (default 20)", minimum=1)
    n_examples: int | None = arg(None, "EB in-context examples (default 3)", minimum=0)
    goal_key: str = arg("goal_image", "EpisodeContext.extras key of a goal image (shown as image-1)")
    fallback: str = arg("noop", "after an unusable answer: 'noop' (stay, ask again) or 'stop'")
    min_pixels: int = arg(
        CLOSED_LOOP_MIN_PIXELS, "truth tools: pixels from which an object counts as visible", minimum=1
    )
    cache: bool = arg(True, "reuse answers from the SQLite response cache")
    cache_path: str | None = arg(None, "cache file (default: the MLLM policy's)")
    max_new_tokens: int = arg(4096, "most tokens per agent call (the paper's budget)", minimum=1)
    temperature: float = arg(0.0, "0 = greedy decoding", minimum=0)
    seed: int = arg(0, "sampling seed")
    answer_key_error_rate: float = arg(
        0.0,
        "--model answer-key: probability of injecting a typical model error",
        minimum=0,
        maximum=1,
        former=("--oracle-error-rate",),
    )
    answer_key_error_seed: int = arg(
        0, "--model answer-key: seed of the injected errors", former=("--oracle-error-seed",)
    )
    device: str = arg("cpu", "cpu, cuda, cuda:N, mps or auto (core model and tool models)")
    dtype: Literal["auto", "float32", "bfloat16", "float16"] = arg(
        "auto", "auto, float32, bfloat16 or float16 (core model)"
    )

    def __post_init__(self) -> None:
        # the stand-in's former name, with a note
        object.__setattr__(self, "model", canonical_model(self.model))

    @property
    def privileged(self) -> bool:
        """Truth tools read the env's scene and the answer-key core knows the target: recorded in the manifest."""
        return self.agent_tools in ("truth", "mixed") or self.model == ANSWER_KEY_MODEL

    def check_inputs(self) -> None:
        """Raise ``ValueError`` naming the option and the fix for a bad combination."""
        if self.agent_tools not in TOOL_SETS:
            raise ValueError(f"--agent-tools {self.agent_tools!r}: choose one of {', '.join(TOOL_SETS)}")
        AgentConfig(
            self.agent_paradigm, self.agent_max_attempts, self.agent_max_turns, self.agent_max_tokens
        ).validate()
        models = {
            "--detector-model": self.detector_model,
            "--segmenter-model": self.segmenter_model,
            "--depth-model": self.depth_model,
            "--matcher-model": self.matcher_model,
        }
        given = [flag for flag, value in models.items() if value]
        if self.agent_tools == "learned" and not given:
            raise ValueError(
                "--agent-tools learned needs at least one local model folder: --detector-model, "
                "--segmenter-model, --depth-model or --matcher-model"
            )
        if self.agent_tools != "learned" and given:
            raise ValueError(f"{', '.join(given)} only go with --agent-tools learned")

    def preflight(self) -> None:
        """Before any worker starts: the core model (as ``--policy mllm``'s), the tool model folders and the
        device are there. ``ValueError`` naming the flag otherwise."""
        from policies.preflight import check_device, check_model

        self.mllm().preflight()
        models = {
            "--detector-model": self.detector_model,
            "--segmenter-model": self.segmenter_model,
            "--depth-model": self.depth_model,
            "--matcher-model": self.matcher_model,
        }
        for flag, folder in models.items():
            if folder:
                check_model(flag, folder, allow_download=None)
        check_device("--device", self.device)

    def mllm(self) -> MLLMPolicyConfig:
        """The core model's settings as an :class:`MLLMPolicyConfig` (one place builds backends)."""
        from policies.mllm.config import MLLMPolicyConfig

        return MLLMPolicyConfig(
            model=self.model,
            api_base=self.api_base,
            cache=self.cache,
            cache_path=self.cache_path,
            max_new_tokens=self.max_new_tokens,
            temperature=self.temperature,
            seed=self.seed,
            answer_key_error_rate=self.answer_key_error_rate,
            answer_key_error_seed=self.answer_key_error_seed,
            device=self.device,
            dtype=self.dtype,
        )

    def generation(self) -> dict[str, Any]:
        return self.mllm().generation()


def build_agent_policy(config: AgentPolicyConfig, backend: Backend | None = None) -> Policy:
    """The closed-loop agent ``config`` describes; ``backend`` replaces the core it would build (tests)."""
    config.check_inputs()
    if backend is None:
        from policies.backends import make_backend

        mllm = config.mllm()
        mllm.check_inputs()
        options = mllm.backend_options()
        # errors that break tool calls (the EB kinds replace action names)
        if config.model == ANSWER_KEY_MODEL:
            from policies.agent.answer_key_nav import NavigationAnswerKeyCore
            from policies.backends.answer_key import EnvTruth

            options.update(error_kinds=AGENT_ERROR_KINDS, truth=EnvTruth(NavigationAnswerKeyCore))
        backend = make_backend(config.model, **options)
    agent = AgentConfig(
        config.agent_paradigm, config.agent_max_attempts, config.agent_max_turns, config.agent_max_tokens
    )
    return SpatialAgentPolicy(backend, config, agent)


def toolbox_for(config: AgentPolicyConfig, scenes: TruthScenes) -> Toolbox:
    """The tool backends of ``config.agent_tools`` in priority order (truth from ``scenes``)."""
    from policies.agent.cv_tools import OpenCVTools
    from policies.agent.truth_tools import TruthTools

    backends: list[Any] = []
    if config.agent_tools == "learned":
        from policies.agent.learned_tools import learned_backends

        backends += learned_backends(
            detector=config.detector_model,
            segmenter=config.segmenter_model,
            depth=config.depth_model,
            matcher=config.matcher_model,
            device=config.device,
        )
    if config.agent_tools in ("cv", "mixed", "learned"):
        backends.append(OpenCVTools())
    if config.agent_tools in ("truth", "mixed"):
        backends.append(TruthTools(scenes))
    return Toolbox(backends)


class SpatialAgentPolicy(EBAgentPolicy):
    """EB's agent loop whose every planning turn is answered by SpatialAgent (see the module docstring)."""

    name: ClassVar[str] = "agent-eb"

    def __init__(self, backend: Backend, config: AgentPolicyConfig, agent: AgentConfig) -> None:
        from policies.agent.truth_tools import EnvScenes

        super().__init__(
            backend,
            task="navigation",
            max_steps=config.max_steps,
            n_examples=config.n_examples,
            chat_history=False,
            fallback=config.fallback,
        )
        self.config = config
        self.env: gym.Env | None = None
        self.scenes = EnvScenes(config.min_pixels)
        self.agent = SpatialAgent(backend, toolbox_for(config, self.scenes), agent)
        self.agent_totals: defaultdict[str, float] = defaultdict(int)  # counts and sums of floats
        self.turns: list[dict[str, Any]] = []

    def bind(self, env: gym.Env) -> None:
        """Keep the env (the truth tools' scene and cameras); the core's backend hears it."""
        if not hasattr(env.unwrapped, "agent_pose"):
            raise ValueError(
                f"--policy agent acts in EB-Navigation (python -m benchmarks.embodied nav); "
                f"{type(env.unwrapped).__name__} is not a navigation env"
            )
        self.env = env
        self.backend.bind(env)

    def reset(self, context: EpisodeContext) -> None:
        super().reset(context)
        self.agent_totals = defaultdict(int)
        self.turns = []

    def _plan(self, observation: Mapping[str, Any]) -> None:
        content = self.turn_content(observation)
        images = [part["image"] for part in content if part.get("type") == "image"][:1]
        question = content[-1]["text"]
        goal = self.context.extras.get(self.config.goal_key)
        if goal is not None:
            images.append(np.asarray(goal))
            question = f"{question}\n{GOAL_VIEW_LINE}"
        result = self.agent.answer(question, images, self._privileged(len(images)), self._meta())
        self._account(result)
        call = ModelCall(step=self.steps_taken + 1, text=result.response or "")
        if result.response is None:  # the core's backend failed: the episode errors, as for a plain model
            failure = next(
                (e["error"] for e in reversed(result.trace) if e.get("error") and e["role"] != "tool"),
                "no response",
            )
            raise RuntimeError(f"the agent's core failed: {failure}")
        self.queue, call.errors = self._actions(result.response)
        call.parsed = [action.shown for action in self.queue]
        call.usable = bool(self.queue)
        self.counters.parse_errors += int(not call.usable)
        self.calls.append(call)
        self.turns.append(
            {
                "step": call.step,
                "answered": result.answered,
                "counters": result.counters,
                "trace": result.trace,
            }
        )

    def _account(self, result: Any) -> None:
        """The agent's model calls into EB's counters; its own counters summed over the episode."""
        for entry in result.trace:
            if entry["role"] == "tool" or "response" not in entry:
                continue
            self.counters.model_calls += 1
            self.counters.completion_tokens += int(entry.get("completion_tokens") or 0)
            self.counters.prompt_tokens += int(entry.get("prompt_tokens") or 0)
            kind = entry.get("injected_error")
            self.counters.injected_errors += int(kind is not None)
            if kind is not None and entry["role"] in TOOL_CALL_ROLES and expected_effect(kind) == "unusable":
                self.agent_totals["injected_unusable_tool_calls"] += 1
        for key, value in result.counters.items():
            if isinstance(value, bool):
                self.agent_totals[key] += int(value)
            elif isinstance(value, (int, float)):
                self.agent_totals[key] += value

    def _privileged(self, n_images: int) -> dict[str, Any] | None:
        """What the truth tools may read: the env's scene and the camera of each image (current, goal)."""
        if self.env is None or self.config.agent_tools not in ("truth", "mixed"):
            return None  # not bound (or no truth tools): the truth tools answer "unavailable"
        from envs.navigation.camera import c2w_from_pose

        nav = cast("EBNavigationEnv", self.env.unwrapped)  # bind() checked it
        cameras = [c2w_from_pose(nav.agent_pose)]
        goal_c2w = self.context.extras.get("goal_c2w")
        if n_images > 1 and goal_c2w is not None:
            cameras.append(np.asarray(goal_c2w, dtype=float))
        episode = nav.episode
        assert episode is not None  # the policy acts after the env's reset
        return {
            "scene": episode["scene"],
            "scene_key": nav.world.key,
            "cameras_c2w": cameras,
            "size": (nav.width, nav.height, nav.fov),
        }

    def _meta(self) -> dict[str, Any]:
        """The camera calibration (what the camera's owner knows; OpenCV's pose uses it)."""
        if self.env is None:
            return {}
        from envs.navigation.camera import Intrinsics

        nav = cast("EBNavigationEnv", self.env.unwrapped)  # bind() checked it
        return {"intrinsics": Intrinsics(nav.width, nav.height, nav.fov).matrix().tolist()}

    def episode_stats(self) -> dict[str, float]:
        stats = super().episode_stats()
        stats.update({f"agent.{k}": float(v) for k, v in sorted(self.agent_totals.items())})
        return stats

    def episode_calls(self) -> list[dict[str, Any]]:
        """One record per planning turn: EB's parse of the agent's answer, and the agent's full trace."""
        return [{**call.to_json(), "agent": turn} for call, turn in zip(self.calls, self.turns)]

    def describe(self) -> dict[str, Any]:
        return {
            **super().describe(),
            "privileged": self.config.privileged,
            "agent": self.agent.describe(),
            "tool_set": self.config.agent_tools,
        }
