"""Typed run configuration; the dataclass is the documentation and the command line.

Each field's docstring (the string literal under it) becomes its ``--help`` text, so the CLI has no special
cases: one flag per field, booleans as ``--flag/--no-flag``.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks.core.streak import DEFAULT_MAX_CONSECUTIVE_ERRORS
from benchmarks.static.registry import PROJECT_MODE, benchmark_names
from policies.backends.answer_key import ANSWER_KEY_MODEL, canonical_model
from policies.config_cli import InputError, config_parser, field_docs  # noqa: F401  (field_docs re-exported)


@dataclass
class RunConfig:
    """``python -m benchmarks.static``: run a static spatial benchmark, or rescore saved predictions.
    (``python -m benchmarks.static generate --help``: fresh sets from the simulator, in any of the five layouts.)"""

    bench: str = ""
    """Benchmark to run: spatialscore, space10, multihopspatial, spatialtree or vsibench."""
    data: Path = Path()
    """The benchmark's data file or folder (JSON, JSONL or parquet, in the benchmark's official layout)."""
    output: Path = Path("outputs")
    """Results root; a run writes to OUTPUT/BENCH/RUN_NAME/."""
    policy: str = "mllm"
    """Policy family answering the questions: mllm (the model answers) or agent (SpatialAgent: the model calls spatial tools)."""
    model: str | None = None
    """Model for the backend factory (a Hugging Face id, a local path, or a served model name), or 'answer-key': the gold answer of each item, written as its prompt asks ('oracle' is its deprecated name)."""
    api_base: str | None = None
    """OpenAI-compatible endpoint serving --model (for example http://127.0.0.1:8000/v1)."""
    cache: Path | None = None
    """Response-cache folder handed to the backend factory."""
    mode: str = PROJECT_MODE
    """Scoring mode: project (the default parsers) or an official-compatible mode of the benchmark."""
    prompt_style: str | None = None
    """Prompt format; defaults to the one the chosen mode's published numbers used."""
    image_root: Path | None = None
    """Folder that image paths in the data are relative to (default: next to the data file)."""
    limit: int | None = None
    """Evaluate only the first N items (in file order)."""
    resume: bool = False
    """Continue an interrupted run in the same folder: finished items are not asked again."""
    score_only: Path | None = None
    """Score saved predictions (JSONL/JSON with item_id and response) instead of querying a model."""
    run_name: str | None = None
    """Name of the run folder (default: from the model or the predictions file, plus the mode)."""
    batch_size: int = 8
    """Conversations handed to the backend at once."""
    max_new_tokens: int | None = None
    """Generation budget in tokens (default: the benchmark's published one: SpaCE-10 256, SpatialTree-Bench 16000, 512 otherwise)."""
    answer_key_error_rate: float = field(default=0.0, metadata={"former": ("--oracle-error-rate",)})
    """--model answer-key: probability of injecting a typical model error into an answer (empty, truncated or a refusal: unusable; the answer inside a sentence: usable)."""
    answer_key_error_seed: int = field(default=0, metadata={"former": ("--oracle-error-seed",)})
    """--model answer-key: seed of the injected errors."""
    allow_errors: bool = False
    """Exit 0 even when items errored (they are still counted, shown, and the run is marked incomplete)."""
    video_frames: int = 32
    """Frames sampled uniformly from a video file."""
    judge_model: str | None = None
    """Optional LLM judge for open answers, reported separately from the rule-based score ('answer-key': a perfect judge)."""
    judge_api_base: str | None = None
    """OpenAI-compatible endpoint of the judge."""
    weights: Path | None = None
    """Weight-tree file (JSON/YAML) for SpatialTree-Bench aggregation (default: the public lmms-eval weights)."""
    max_consecutive_errors: int = DEFAULT_MAX_CONSECUTIVE_ERRORS
    """Stop the run (exit status 3) after this many items in a row got no answer, e.g. a dead model server; --resume asks the failed items again; 0: never stop."""
    plot: bool = True
    """Write the bar chart by category."""
    agent_paradigm: str = "plan-execute"
    """--policy agent: plan-execute (planner -> tools -> executor -> summarizer) or react (observer <-> tools until Terminate, then the summarizer)."""
    agent_tools: str = "truth"
    """--policy agent: truth (simulator ground truth; generated sets), cv (OpenCV only), mixed (OpenCV where it has a tool, truth elsewhere), learned (the --agent-*-model folders given, OpenCV motion, truth elsewhere) or none (Terminate only)."""
    agent_depth_model: Path | None = None
    """--agent-tools learned: local folder of a transformers depth-estimation model (metric depth; never downloaded)."""
    agent_detector_model: Path | None = None
    """--agent-tools learned: local OWLv2 / OWL-ViT / Grounding DINO folder (LocalizeObjects, CountObjects; with a depth model also Detect3DObjects)."""
    agent_segmenter_model: Path | None = None
    """--agent-tools learned: local SAM / SAM-HQ / SAM2 folder (GetObjectMask, prompted with the detector's boxes; needs --agent-detector-model)."""
    agent_matcher_model: Path | None = None
    """--agent-tools learned: local LightGlue / SuperGlue / EfficientLoFTR folder (homography and camera pose from its matches)."""
    agent_max_attempts: int = 3
    """--policy agent, plan-execute: plans asked before answering without tools."""
    agent_max_turns: int = 10
    """--policy agent, react: observer turns before the summarizer."""
    agent_max_tokens: int = 16384
    """--policy agent: completion tokens over all calls for one question."""

    def __post_init__(self) -> None:
        self.model = canonical_model(self.model)  # the stand-in's former name "oracle", with a note
        self.judge_model = canonical_model(self.judge_model)

    def agent_models(self) -> dict[str, Path | None]:
        """The learned tools' model folders by flag."""
        return {
            "--agent-depth-model": self.agent_depth_model,
            "--agent-detector-model": self.agent_detector_model,
            "--agent-segmenter-model": self.agent_segmenter_model,
            "--agent-matcher-model": self.agent_matcher_model,
        }

    def validate(self) -> None:
        """Check combinations the types cannot express, with the fix in the message."""
        if self.bench not in benchmark_names():
            raise InputError(f"--bench must be one of {', '.join(benchmark_names())} (got {self.bench!r})")
        if self.data == Path():
            raise InputError("--data is required: the benchmark's data file or folder")
        if self.score_only is None and not self.model:
            raise InputError("--model is required to query a model (or pass --score-only PREDICTIONS.jsonl)")
        if self.policy not in ("mllm", "agent"):
            raise InputError(
                f"--policy {self.policy!r}: static benchmarks are answered by an MLLM (--policy mllm) or SpatialAgent (--policy agent)"
            )
        if self.policy == "agent":
            self._validate_agent()
        self._validate_for_benchmark()
        if self.limit is not None and self.limit < 1:
            raise InputError("--limit must be at least 1")
        if self.batch_size < 1:
            raise InputError("--batch-size must be at least 1")
        if self.max_consecutive_errors < 0:
            raise InputError(
                f"--max-consecutive-errors must be at least 0 (0: never stop), got {self.max_consecutive_errors}"
            )
        if self.max_new_tokens is not None and self.max_new_tokens < 1:
            raise InputError(f"--max-new-tokens must be at least 1 (got {self.max_new_tokens})")
        if not 0.0 <= self.answer_key_error_rate <= 1.0:
            raise InputError(f"--answer-key-error-rate must be in [0, 1] (got {self.answer_key_error_rate})")
        if self.answer_key_error_rate and self.model != ANSWER_KEY_MODEL:
            raise InputError("--answer-key-error-rate applies to --model answer-key only")

    def _validate_agent(self) -> None:
        """The SpatialAgent flags (``--policy agent``)."""
        if self.agent_paradigm not in ("plan-execute", "react"):
            raise InputError(f"--agent-paradigm must be plan-execute or react (got {self.agent_paradigm!r})")
        if self.agent_tools not in ("truth", "cv", "mixed", "learned", "none"):
            raise InputError(
                f"--agent-tools must be truth, cv, mixed, learned or none (got {self.agent_tools!r})"
            )
        given = [flag for flag, value in self.agent_models().items() if value is not None]
        if self.agent_tools == "learned" and not given:
            raise InputError(
                "--agent-tools learned needs a local model folder: --agent-depth-model, --agent-detector-model, "
                "--agent-segmenter-model or --agent-matcher-model"
            )
        if self.agent_tools != "learned" and given:
            raise InputError(f"{', '.join(given)} only go with --agent-tools learned")
        if min(self.agent_max_attempts, self.agent_max_turns, self.agent_max_tokens) < 1:
            raise InputError(
                "--agent-max-attempts, --agent-max-turns and --agent-max-tokens must be at least 1"
            )
        if self.score_only is not None:
            raise InputError(
                "--policy agent asks a model; --score-only rescores saved predictions with any policy (drop --policy agent)"
            )

    def _validate_for_benchmark(self) -> None:
        """The scoring mode, prompt style and ``--model answer-key`` are ones the chosen benchmark has."""
        from benchmarks.static.registry import get_benchmark

        spec = get_benchmark(self.bench)
        if self.mode not in spec.modes:
            raise InputError(
                f"--mode {self.mode}: {self.bench} has no such scoring mode; choose one of "
                f"{', '.join(spec.modes)}"
            )
        if self.prompt_style is not None and self.prompt_style not in spec.prompt_styles:
            raise InputError(
                f"--prompt-style {self.prompt_style}: {self.bench} has no such prompt style; choose one "
                f"of {', '.join(spec.prompt_styles)}"
            )
        if (
            self.model == ANSWER_KEY_MODEL
            and self.score_only is None
            and spec.gold_answer is None
            and self.policy != "agent"
        ):
            raise InputError(
                f"--model answer-key: {self.bench} does not say how its gold answer is written, so the "
                f"stand-in cannot answer it; pass a real --model"
            )

    def preflight(self) -> None:
        """Before the first question (nothing loaded): the data is there, a local model is a checkpoint folder or
        in the Hugging Face cache, a server (``--api-base``, ``--judge-api-base``) accepts connections, the agent's
        model folders exist. One-line :class:`InputError` otherwise."""
        from policies.preflight import check_model, check_path, check_server

        try:
            check_path("--data", self.data)
            check_path("--score-only", self.score_only, kind="predictions file")
            check_path("--weights", self.weights, kind="weight-tree file")
            check_path("--image-root", self.image_root, kind="folder")
            for flag, model, api_base in (
                ("--model", self.model, self.api_base),
                ("--judge-model", self.judge_model, self.judge_api_base),
            ):
                if (flag == "--model" and self.score_only is not None) or model in (None, ANSWER_KEY_MODEL):
                    continue
                if api_base:
                    check_server(flag.replace("model", "api-base"), api_base)
                else:
                    check_model(flag, str(model), allow_download=None, served=True)
            for flag, folder in self.agent_models().items():
                if folder is not None:
                    check_model(flag, str(folder), allow_download=None)
        except ValueError as error:
            raise InputError(str(error)) from None


def build_parser(cls: type = RunConfig) -> argparse.ArgumentParser:
    """An argparse parser with one flag per dataclass field (help: the docstring under each field)."""
    return config_parser(cls, "python -m benchmarks.static")


def parse_config(argv: list[str] | None = None) -> RunConfig:
    """A validated :class:`RunConfig` from command-line arguments."""
    namespace = build_parser().parse_args(argv)
    config = RunConfig(**vars(namespace))
    config.validate()
    config.preflight()
    return config
