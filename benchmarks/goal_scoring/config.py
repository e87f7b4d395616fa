"""One config dataclass per command; each field's docstring is its ``--help`` text (see ``cli.py``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from action_mapping import NAVIGATION_STEP_SIZES
from policies.backends.answer_key import canonical_model


@dataclass
class PredictConfig:
    """Run a policy on every sample of a dataset and write its raw answers to predictions.jsonl."""

    dataset: Path
    """Dataset directory (samples.jsonl, dataset.json, images/)."""
    output: Path
    """Run directory; predictions.jsonl and manifest.json are written there."""
    policy: Literal["mllm", "answer-key", "blind", "oracle"] = "mllm"
    """mllm: a model through the backend factory; answer-key: the ground truth ('oracle' is its deprecated name); blind: the dataset's most common plan."""
    model: str | None = None
    """For --policy mllm: a local checkpoint directory, a hub id, the model name on the --api-base server, or 'answer-key' (the ground-truth plan through the backend interface; 'oracle' is its deprecated name)."""
    api_base: str | None = None
    """OpenAI-compatible server URL (e.g. http://localhost:8000/v1); unset runs the model locally."""
    max_new_tokens: int | None = None
    """Token budget of one answer (default: SpatialTree-Bench's published 16000)."""
    temperature: float = 0.0
    """Sampling temperature; 0 is greedy decoding, as the protocols ask."""
    seed: int = 0
    """Sampling seed passed to the backend."""
    cache: bool = True
    """Use the backends' response cache (re-running costs nothing); --no-cache always asks the model."""
    batch_size: int = 8
    """Conversations handed to the backend at once (backends that batch or run requests concurrently use it)."""
    num_steps: int | None = None
    """Steps the prompt asks for; default: each sample's ground-truth step count (the paper's prompts say 6)."""
    limit: int | None = None
    """Predict only the first N samples (smoke tests)."""
    answer_key_error_rate: float = field(default=0.0, metadata={"former": ("--oracle-error-rate",)})
    """--model answer-key: probability of injecting a typical model error (unknown action, malformed JSON, truncation, prose)."""
    answer_key_error_seed: int = field(default=0, metadata={"former": ("--oracle-error-seed",)})
    """--model answer-key: seed of the injected errors."""
    allow_errors: bool = False
    """Exit 0 even when samples errored (they are still written with their error and counted)."""

    def __post_init__(self) -> None:
        self.model = canonical_model(self.model)  # the stand-in's former name "oracle", with a note
        self.policy = canonical_model(self.policy, "--policy")  # type: ignore[assignment]


@dataclass
class ScoreConfig:
    """Score predictions against a dataset: records.jsonl, summary.json, summary.md, a histogram, manifest.json."""

    dataset: Path
    """Dataset directory the predictions were made for."""
    predictions: str
    """predictions.jsonl written by `predict`, or `answer-key` / `blind` for the built-in reference answers ('oracle' is answer-key's deprecated name)."""
    output: Path
    """Run directory for the results."""
    scorer: Literal["paper", "lmms-eval"] = "paper"
    """paper: SpatialTree Appendix C.3 (the project's default); lmms-eval: the public spatialtreebench scorer."""
    weight_translation: float = 1 / 3
    """Manipulation (paper scorer): weight of the translation score s_step."""
    weight_rotation: float = 1 / 3
    """Manipulation (paper scorer): weight of the rotation score s_rot."""
    weight_gripper: float = 1 / 3
    """Manipulation (paper scorer): weight of the gripper score."""
    allow_missing: bool = False
    """Score samples without a prediction as 0 (reported as missing) instead of stopping with an error."""
    baselines: bool = True
    """Also score the answer key (the ground truth) and the blind answers and report them next to the predictions."""
    allow_errors: bool = False
    """Exit 0 even when predictions errored (they are counted, left out of the means, and the run is marked incomplete)."""

    def __post_init__(self) -> None:
        self.predictions = canonical_model(self.predictions, "--predictions") or ""  # "oracle", with a note


@dataclass
class ConvertConfig:
    """Turn a camera-to-world trajectory (e.g. a video reconstruction) into a ground-truth plan or a dataset sample."""

    trajectory: Path
    """Trajectory file: .npy (N,4,4), .json (list of 4x4, {"c2w": ...} or NeRF frames), or text rows of 16/12/8 (TUM)/7 numbers."""
    kind: Literal["nav", "manip"] = "nav"
    """Task kind of the sample."""
    convention: Literal["opencv", "opengl"] = "opencv"
    """Camera axes of the file: opencv (COLMAP; +Y down, +Z forward) or opengl (NeRF/Blender; +Y up, -Z forward)."""
    mode: Literal["pose", "velocity"] = "pose"
    """pose: one step between evenly spaced keyframes, counts = motion / step size; velocity: the paper's speed thresholds per frame."""
    num_steps: int = 6
    """pose mode: plan steps (keyframes evenly spaced over the trajectory); 0 uses every consecutive pose pair."""
    step_translation: float = NAVIGATION_STEP_SIZES.translation
    """Metres per translation count (default: the paper's navigation prompt)."""
    step_rotation: float = NAVIGATION_STEP_SIZES.rotation
    """Radians per rotation count (default: the paper's navigation prompt)."""
    fit_step_sizes: bool = False
    """pose mode: enlarge the step sizes just enough that no count exceeds --max-step-num (as the paper does)."""
    max_step_num: int = 10
    """Cap on one primitive's count in a step."""
    fps: float | None = None
    """velocity mode: frame rate of the trajectory."""
    frames_per_step: int | None = None
    """velocity mode: frame intervals per plan step (default: one second of frames)."""
    dataset: Path | None = None
    """Add the sample to this dataset directory (created when missing); without it the plan is printed as JSON."""
    start_image: Path | None = None
    """Start image of the sample (needed with --dataset)."""
    goal_image: Path | None = None
    """Goal image of the sample (needed with --dataset)."""
    instruction: str = ""
    """Instruction shown to the model with the two images."""
    id: str | None = None
    """Sample id (default: the trajectory file's name)."""
    source: str | None = None
    """Where the trajectory comes from, recorded with the sample (default: trajectory:<file name>)."""


@dataclass
class GenerateConfig:
    """Generate a dataset from a registered pair source (simulator renders with exact ground truth)."""

    source: str
    """Registered source (nav: camera motions in the navigation env's homes; manip: end-effector motions on the CALVIN play-table) or package.module:ClassName."""
    output: Path = field(metadata={"aliases": ("--out",)})
    """New dataset directory."""
    n: int = 200
    """Number of samples."""
    seed: int = 0
    """Seed; sample i draws from numpy.random.default_rng([seed, i])."""
    source_kwargs: str = "{}"
    """JSON object of keyword arguments for the source's constructor."""
