"""``--policy mllm``: the config dataclass every benchmark turns into flags, and its builder.

Importing this module is cheap; the backend (torch/transformers or HTTP) is imported by
:func:`build_mllm_policy` only.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypedDict

from policies.backends.answer_key import ANSWER_KEY_MODEL, canonical_model
from policies.base import Policy
from policies.config_cli import arg

if TYPE_CHECKING:
    from action_mapping import StepSizes
    from policies.backends.answer_key import EnvTruth
    from policies.backends.base import Backend

#: The closed-loop generation budget: room for a real model's reasoning before its plan (EB's JSON answer with
#: a visual description and a reflection, SpatialTree's plan); a cut answer is a parse error, so the default
#: stays this size and a local CPU run at it gets a one-line hint instead
#: (:meth:`MLLMPolicyConfig.budget_hint`).
DEFAULT_MAX_NEW_TOKENS = 1024


class _Benchmarks(TypedDict):
    benchmarks: tuple[str, ...]


# the EB agent loop: options on embodied only
EB_ONLY: _Benchmarks = {"benchmarks": ("embodied-nav", "embodied-manip")}


@dataclass(frozen=True)
class MLLMPolicyConfig:
    """An MLLM in the loop: which model, which agent loop, how to decode, what to do with bad output."""

    model: str = field(
        metadata={
            "help": "checkpoint directory or hub id (local), the model name on the server, "
            "or 'answer-key' (a competent stand-in that answers as the privileged expert; "
            "'oracle' is its deprecated name)"
        }
    )
    api_base: str | None = arg(
        None, "OpenAI-compatible server, e.g. http://localhost:8000/v1 (omit: local transformers)"
    )
    model_backend: str | None = arg(
        None,
        "registered model backend: transformers, openai, answer-key or one of your own "
        "(policies.backends.factory.register_backend); default: answer-key for "
        "--model answer-key, openai with --api-base, else transformers",
    )
    loop: Literal["spatial", "eb"] = arg(
        "spatial",
        "'spatial': SpatialTree primitive plans (goal image or instruction); 'eb': EmbodiedBench agent loop",
        **EB_ONLY,
    )
    task: Literal["navigation", "manipulation"] = arg(
        "manipulation", "'navigation' or 'manipulation': action format and prompt"
    )
    fallback: Literal["noop", "stop"] = arg(
        "noop",
        "after unusable model output: 'noop' (stay, ask again) or 'stop' (stay for the rest of the episode)",
    )
    cache: bool = arg(True, "reuse answers from the SQLite response cache")
    cache_path: str | None = arg(
        None, "cache file (default $SPATIAL_ARENA_CACHE_DIR or ~/.cache/spatial_arena/responses.sqlite)"
    )
    max_new_tokens: int = arg(
        DEFAULT_MAX_NEW_TOKENS, "most tokens the model may write per call (a smoke run on CPU: 16)", minimum=1
    )
    temperature: float = arg(0.0, "0 = greedy decoding (the benchmarks' protocols)", minimum=0)
    top_p: float = arg(1.0, "nucleus sampling mass when temperature > 0", minimum=0, maximum=1)
    seed: int = arg(0, "sampling seed (sent to servers too)")
    # answer-key (the stand-in)
    answer_key_error_rate: float = arg(
        0.0,
        "--model answer-key: probability of injecting a typical model error into an answer",
        minimum=0,
        maximum=1,
        former=("--oracle-error-rate",),
    )
    answer_key_error_seed: int = arg(
        0, "--model answer-key: seed of the injected errors", former=("--oracle-error-seed",)
    )
    # transformers
    device: str = arg("cpu", "cpu, cuda, cuda:N, mps or auto")
    dtype: Literal["auto", "float32", "bfloat16", "float16"] = arg(
        "auto", "auto (float32 on CPU), float32, bfloat16 or float16"
    )
    allow_download: bool = arg(False, "download hub ids that are not in the local Hugging Face cache")
    batch_size: int = arg(4, "conversations per forward pass in batched generation", minimum=1)
    max_pixels: int | None = arg(
        None, "largest image area in pixels for Qwen-VL processors (default: the checkpoint's)", minimum=1
    )
    # HTTP
    api_key_env: str = arg("OPENAI_API_KEY", "environment variable holding the server's API key")
    timeout_s: float = arg(120.0, "seconds before one HTTP attempt times out", minimum=0.001)
    max_retries: int = arg(5, "retries on HTTP 5xx/429, timeouts and connection errors", minimum=0)
    max_concurrency: int = arg(8, "most HTTP requests in flight at once", minimum=1)
    price_prompt_per_mtok: float | None = arg(
        None, "USD per million prompt tokens, for cost accounting", minimum=0
    )
    price_completion_per_mtok: float | None = arg(
        None, "USD per million completion tokens, for cost accounting", minimum=0
    )
    # loop 'spatial'
    translation_step: float | None = arg(
        None,
        "metres per translation step count (default: the env's plan_step_sizes, "
        "else SpatialTree Listing 2's 0.019375)",
        minimum=1e-09,
    )
    rotation_step: float | None = arg(
        None,
        "radians per rotation step count (default: the env's plan_step_sizes, "
        "else SpatialTree Listing 2's 0.4509)",
        minimum=1e-09,
    )
    num_steps: int = arg(6, "plan steps asked for", minimum=1)
    max_step_num: int = arg(10, "cap on one action's step count", minimum=1)
    replan_every: int | None = arg(
        None, "plan steps executed before asking again (default: the whole plan)", minimum=1
    )
    goal_key: str = arg(
        "goal_image", "EpisodeContext.extras key of the goal image (absent: the instruction is the goal)"
    )
    # loop 'eb'
    max_steps: int | None = arg(
        None, "EB step budget (default 20 navigation, 15 manipulation)", minimum=1, **EB_ONLY
    )
    n_examples: int | None = arg(
        None, "in-context examples (default 3 navigation, 4 manipulation)", minimum=0, **EB_ONLY
    )
    chat_history: bool = arg(True, "send earlier turns with each call", **EB_ONLY)
    history_messages: int = arg(5, "most chat messages per call with chat_history", minimum=1, **EB_ONLY)
    object_info_key: str = arg(
        "object_info",
        "observation key of the object-coordinates text (EB-Manipulation)",
        benchmarks=("embodied-manip",),
    )
    # both loops
    image_keys: tuple[str, ...] = arg(
        (), "observation keys of the camera images (default: the first RGB image)"
    )
    atomic_depth: bool = arg(False, "atomic prompting: add the depth map ('w/ Depth')")
    atomic_correspondence: bool = arg(False, "atomic prompting: add start-goal correspondences ('w/ Corres')")
    atomic_size: bool = arg(False, "atomic prompting: add object size hints ('w/ Size')")

    def __post_init__(self) -> None:
        # the stand-in's former name, with a note
        object.__setattr__(self, "model", canonical_model(self.model))
        object.__setattr__(self, "model_backend", canonical_model(self.model_backend))

    def check_inputs(self) -> None:
        """What would otherwise fail in every worker: a model backend nobody registered, half of the step
        sizes, a cache file that is not a response cache.

        Raises ``ValueError`` naming the option and the fix."""
        _step_sizes(self)
        if self.model_backend:
            from policies.backends.factory import registered_backends

            if self.model_backend not in registered_backends():
                raise ValueError(
                    f"--model-backend {self.model_backend}: unknown; choose one of "
                    f"{registered_backends()} or register yours (policies.backends.factory.register_backend)"
                )
        if not (self.cache and self.cache_path and self.model != ANSWER_KEY_MODEL):
            return
        import sqlite3
        from pathlib import Path

        path = Path(self.cache_path)
        if not path.exists():
            return
        try:
            with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
                db.execute("SELECT name FROM sqlite_master").fetchall()
        except sqlite3.DatabaseError as e:
            raise ValueError(
                f"--cache-path {path}: not a SQLite response cache ({e}); delete it, pass another "
                f"--cache-path, or --no-cache"
            ) from None

    def budget_hint(self) -> str | None:
        """One line for a local checkpoint folder run on CPU at the default budget: each call may write up to
        1,024 tokens, which takes minutes on CPU (a random-weight smoke model never stops early); ``None``
        otherwise (a model that is not a local folder is left to the input checks, whose error is one line)."""
        from pathlib import Path

        from policies.backends.factory import default_backend

        kind = self.model_backend or default_backend(self.model, self.api_base)
        if kind != "transformers" or self.device != "cpu" or self.max_new_tokens != DEFAULT_MAX_NEW_TOKENS:
            return None
        if not Path(self.model).expanduser().is_dir():
            return None
        return (
            f"note: --max-new-tokens {DEFAULT_MAX_NEW_TOKENS} (the default) on CPU: a call may take minutes; "
            "for a smoke run pass --max-new-tokens 16 --limit 1"
        )

    def preflight(self) -> None:
        """Before any worker starts (no model is loaded): a local model is a checkpoint folder or in the Hugging
        Face cache, its device exists, a server (``--api-base``) accepts connections. ``ValueError`` otherwise."""
        from policies.backends.factory import default_backend
        from policies.preflight import check_device, check_model, check_server

        kind = self.model_backend or default_backend(self.model, self.api_base)
        if kind == "transformers":
            check_model("--model", self.model, allow_download=self.allow_download, served=True)
            check_device("--device", self.device)
        if self.api_base and kind not in (ANSWER_KEY_MODEL, "transformers"):
            check_server("--api-base", self.api_base)
        if hint := self.budget_hint():  # printed once every check passed, so an input error stays one line
            import sys

            print(hint, file=sys.stderr)

    @property
    def privileged(self) -> bool:
        """The stand-in answers from the simulator's truth: the run is privileged (recorded in the manifest)."""
        return ANSWER_KEY_MODEL in (self.model, self.model_backend)

    def label(self) -> str:
        """``mllm-`` and the model's last path part, for run folders (``/ckpt/Qwen2.5-VL/`` -> ``mllm-Qwen2.5-VL``)."""
        return "mllm-" + self.model.rstrip("/").split("/")[-1]

    def generation(self) -> dict[str, Any]:
        """The decoding settings the backend is built with (what ``make_backend`` receives), for manifests."""
        return {
            "max_new_tokens": self.max_new_tokens,
            "temperature": self.temperature,
            "top_p": self.top_p,
            "seed": self.seed,
        }

    def closed_loop_truth(self) -> EnvTruth:
        """What the stand-in (``--model answer-key``) answers from: the privileged expert of the env the policy binds."""
        if self.loop == "eb":
            from policies.mllm.answer_key_eb import eb_truth

            return eb_truth(self.task)
        from policies.mllm.answer_key_spatial import spatial_truth

        return spatial_truth(self.task)

    def backend_options(self) -> dict[str, Any]:
        """Keyword arguments of :func:`policies.backends.make_backend` for this config: the options of the
        built-in backend it picks; a user's backend (``--model-backend``) gets the generation settings, the
        cache and ``api_base`` (when given)."""
        from policies.backends.factory import default_backend

        common = {**self.generation(), "cache": (self.cache_path or True) if self.cache else False}
        if self.model_backend:
            common["backend"] = self.model_backend
        kind = self.model_backend or default_backend(self.model, self.api_base)
        if kind == ANSWER_KEY_MODEL:
            return {
                **common,
                "cache": False,
                "error_rate": self.answer_key_error_rate,
                "error_seed": self.answer_key_error_seed,
                "truth": self.closed_loop_truth(),
            }
        if kind == "openai":
            return {
                **common,
                "api_base": self.api_base,
                "api_key_env": self.api_key_env,
                "timeout_s": self.timeout_s,
                "max_retries": self.max_retries,
                "max_concurrency": self.max_concurrency,
                "price_prompt_per_mtok": self.price_prompt_per_mtok,
                "price_completion_per_mtok": self.price_completion_per_mtok,
            }
        if kind == "transformers":
            return {
                **common,
                "device": self.device,
                "dtype": self.dtype,
                "allow_download": self.allow_download,
                "batch_size": self.batch_size,
                "max_pixels": self.max_pixels,
            }
        return {**common, "api_base": self.api_base} if self.api_base else common


def build_mllm_policy(config: MLLMPolicyConfig, backend: Backend | None = None) -> Policy:
    """The policy ``config`` describes; ``backend`` replaces the one it would build (tests, shared models)."""
    from policies.mllm.atomic import AtomicPrompting

    if config.loop not in ("spatial", "eb"):
        raise ValueError(f"loop must be 'spatial' or 'eb', got {config.loop!r}")
    if backend is None:
        from policies.backends import make_backend

        backend = make_backend(config.model, **config.backend_options())
    atomic = AtomicPrompting(
        depth=config.atomic_depth, correspondence=config.atomic_correspondence, size=config.atomic_size
    )
    if config.loop == "eb":
        from policies.mllm.embodied import EBAgentPolicy

        return EBAgentPolicy(
            backend,
            task=config.task,
            max_steps=config.max_steps,
            n_examples=config.n_examples,
            chat_history=config.chat_history,
            history_messages=config.history_messages,
            image_keys=config.image_keys,
            object_info_key=config.object_info_key,
            atomic=atomic,
            fallback=config.fallback,
        )
    from policies.mllm.spatial import SpatialPlanPolicy

    return SpatialPlanPolicy(
        backend,
        task=config.task,
        step_sizes=_step_sizes(config),
        num_steps=config.num_steps,
        max_step_num=config.max_step_num,
        replan_every=config.replan_every,
        image_keys=config.image_keys,
        goal_key=config.goal_key,
        atomic=atomic,
        fallback=config.fallback,
    )


def _step_sizes(config: MLLMPolicyConfig) -> StepSizes | None:
    """The user's step sizes, or ``None`` (the policy then takes the env's ``plan_step_sizes`` in ``bind``)."""
    from action_mapping import StepSizes

    translation, rotation = config.translation_step, config.rotation_step
    if translation is None and rotation is None:
        return None
    if translation is None or rotation is None:
        raise ValueError(
            "set both --translation-step and --rotation-step, or neither (then the env's plan units are used)"
        )
    return StepSizes(float(translation), float(rotation))
