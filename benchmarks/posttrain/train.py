"""``python -m benchmarks.posttrain sft|grpo``: spatial post-training of an image-text-to-text model with TRL.

- ``sft``: TRL's ``SFTTrainer`` on the corpus's ``images`` + ``messages`` (SpatialScore's SpatialCorpus recipe:
  supervised fine-tuning on spatial QA). Loss is on the assistant turn only (``assistant_only_loss`` needs a
  template with generation markers, so TRL's ``completion_only_loss`` on prompt/completion pairs is used:
  the dataset is handed over as ``prompt`` + ``completion``).
- ``grpo``: TRL's ``GRPOTrainer`` on the corpus's ``images`` + ``prompt`` with MultihopSpatial's reward
  functions (:mod:`benchmarks.posttrain.multihop_rewards`: format, answer letter and box GIoU, paper Eq. 1;
  ``--rewards recipe`` adds the public recipe's truncation penalty). ``response`` and ``bbox_normalized``
  reach the reward functions as dataset columns. With these rewards GRPO trains by default on the rows
  all three terms are defined for: a lettered answer and a box (the ``multihop`` kind of every family:
  ``multihop``, ``calvin_multihop``, ``manip_multihop``, ``libero_multihop``). ``--rewards spatial``
  (:mod:`benchmarks.posttrain.spatial_rewards`) scores every kind (letters, numbers by MRA, boxes by GIoU)
  and trains on all rows by default.

The data is a corpus written by ``python -m benchmarks.datagen.corpus`` (or any ``datasets`` folder with the
same columns). The processor is the checkpoint's, image-only for Qwen-VL when torchvision is missing
(:func:`policies.backends.hf_processing.load_processor`).

Launch: the trainers run on accelerate, so the same command runs

- on one CPU or GPU:  ``python -m benchmarks.posttrain sft --model DIR --data CORPUS --output RUN``
- on many GPUs:       ``accelerate launch --multi_gpu --num_processes 8 -m benchmarks.posttrain grpo ...``
  (``accelerate config`` selects DeepSpeed/FSDP; ``--batch-size`` is per device).

Run folder: ``posttrain_config.json``; ``metrics.jsonl`` (every log TRL emits: loss, learning rate,
per-reward means and standard deviations, mean reward, eval loss and token accuracy, from step 0 when
``--eval-steps`` is given; one JSON line each, with the step);
``checkpoint-<step>/`` every ``--save-steps`` (``--resume`` continues from the newest); ``final/`` (model
and processor, loadable by ``AutoModelForImageTextToText`` and the project's transformers backend).
``--report-to tensorboard`` or ``wandb`` also sends the curves there.
"""

from __future__ import annotations

import json
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from policies.config_cli import InputError, arg, parse_config

if TYPE_CHECKING:  # the training stack is imported where it runs
    from datasets import Dataset
    from transformers import (
        ProcessorMixin,
        Trainer,
        TrainerCallback,
        TrainerControl,
        TrainerState,
        TrainingArguments,
    )

CONFIG_FILE, METRICS_FILE, FINAL_DIR = "posttrain_config.json", "metrics.jsonl", "final"
SFT_COLUMNS = ("images", "prompt", "completion")
GRPO_COLUMNS = ("images", "prompt", "response", "bbox_normalized")


@dataclass
class PostTrainConfig:
    """Post-train an image-text-to-text model on a spatial corpus with TRL (SFT or GRPO)."""

    mode: Literal["sft", "grpo"] = arg(
        "sft", "sft (SFTTrainer) or grpo (GRPOTrainer with MultihopSpatial rewards)"
    )
    model: str = arg("", "model to start from: a checkpoint directory (AutoModelForImageTextToText)")
    data: str = arg(
        "", "corpus directory written by python -m benchmarks.datagen.corpus (datasets.load_from_disk)"
    )
    output: str = arg("outputs/posttrain", "run folder: config, metrics.jsonl, checkpoints, final/")
    split: str = arg("train", "split of the corpus to train on")
    eval_split: str = arg("validation", "split evaluated every --eval-steps (SFT; '' for none)")
    kinds: str = arg(
        "",
        "comma-separated question kinds to keep (default: all; grpo with paper/recipe rewards: rows with a letter and a box)",
    )
    max_items: int | None = arg(None, "train on the first N items only", minimum=1)
    max_steps: int = arg(-1, "optimizer steps (-1: --epochs passes)")
    epochs: float = arg(1.0, "passes over the data when --max-steps is -1", minimum=0.0001)
    batch_size: int = arg(4, "per-device batch size", minimum=1)
    grad_accum: int = arg(1, "gradient-accumulation steps", minimum=1)
    lr: float = arg(1e-5, "peak learning rate", minimum=0)
    max_length: int | None = arg(
        None,
        "SFT: truncate sequences to this many tokens (default: none; truncation can cut image tokens)",
        minimum=1,
    )
    num_generations: int = arg(
        4, "GRPO: completions per prompt (the batch must be a multiple of it)", minimum=2
    )
    max_completion_length: int = arg(64, "GRPO: most tokens generated per completion", minimum=1)
    temperature: float = arg(1.0, "GRPO: sampling temperature", minimum=0)
    beta: float = arg(0.0, "GRPO: KL coefficient (0: no reference model, TRL's default)", minimum=0)
    rewards: Literal["paper", "recipe", "spatial"] = arg(
        "paper",
        "GRPO rewards: paper (format, mcq, bbox), recipe (+ truncation penalty) or spatial (every corpus kind)",
    )
    logging_steps: int = arg(1, "log every N steps", minimum=1)
    save_steps: int = arg(100, "checkpoint every N steps", minimum=1)
    save_total_limit: int | None = arg(2, "keep at most this many checkpoints", minimum=1)
    eval_steps: int | None = arg(
        None, "SFT: evaluate on --eval-split every N steps (default: never)", minimum=1
    )
    time_budget_s: float | None = arg(
        None, "stop (and save) after this many seconds of training", minimum=0.001
    )
    resume: bool = arg(False, "continue from the newest checkpoint in --output")
    report_to: str = arg("none", "also report to: none, tensorboard, wandb (comma-separated)")
    seed: int = arg(0, "seed of data order, sampling and initialisation")
    bf16: bool = arg(False, "train in bfloat16 mixed precision (GPUs that support it)")
    gradient_checkpointing: bool = arg(False, "trade compute for memory on large models")

    def validate(self) -> None:
        """Check paths and combinations, with the fix in the message."""
        if not self.model or not Path(self.model).is_dir():
            raise InputError(
                f"--model {self.model!r}: not a checkpoint directory; pass a folder with config.json"
            )
        if not self.data or not Path(self.data).is_dir():
            raise InputError(
                f"--data {self.data!r}: not a folder; write one with python -m benchmarks.datagen.corpus --out DIR"
            )
        if self.mode == "grpo" and (self.batch_size * self.grad_accum) % self.num_generations:
            raise InputError(
                f"--batch-size x --grad-accum ({self.batch_size * self.grad_accum}) must be a multiple of "
                f"--num-generations ({self.num_generations})"
            )
        import importlib.util

        for target in (r for r in self.report_to.split(",") if r and r != "none"):
            if target not in ("tensorboard", "wandb"):
                raise InputError(f"--report-to {target!r}: choose none, tensorboard or wandb")
            if (
                importlib.util.find_spec(target) is None
                and importlib.util.find_spec("tensorboardX" if target == "tensorboard" else target) is None
            ):
                raise InputError(
                    f"--report-to {target}: the {target} package is not installed; pip install {target}"
                )
        if self.resume and last_checkpoint(Path(self.output)) is None:
            raise InputError(
                f"--resume: no checkpoint-* folder in {self.output}; train without --resume first"
            )


# -------------------------------------------------------------------------------------------- data


def load_split(config: PostTrainConfig, split: str) -> Dataset:
    """One split of the corpus, filtered to ``--kinds`` (GRPO with the paper's rewards: rows with a letter
    and a box) and ``--max-items``."""
    from datasets import DatasetDict, load_from_disk

    try:
        loaded = load_from_disk(config.data)
    except FileNotFoundError as error:
        raise InputError(
            f"--data {config.data}: not a datasets folder ({error}); write one with python -m benchmarks.datagen.corpus"
        ) from None
    if isinstance(loaded, DatasetDict):
        if split not in loaded:
            raise InputError(f"--data {config.data} has no split {split!r}; it has {sorted(loaded)}")
        loaded = loaded[split]
    kinds = [k for k in config.kinds.split(",") if k]
    if kinds:
        if "kind" not in loaded.column_names:
            raise InputError(f"--kinds given but {config.data} has no 'kind' column; drop --kinds")
        loaded = loaded.filter(lambda kind: kind in kinds, input_columns="kind")
    elif (
        config.mode == "grpo"
        and config.rewards != "spatial"
        and {"response", "bbox_normalized"} <= set(loaded.column_names)
    ):
        from benchmarks.posttrain.spatial_rewards import reference_kind

        kinds = ["rows with a letter and a box"]
        loaded = loaded.filter(
            lambda r, b: reference_kind(r, b) == "letter+box", input_columns=["response", "bbox_normalized"]
        )
    if config.max_items is not None:
        loaded = loaded.select(range(min(config.max_items, len(loaded))))
    if len(loaded) == 0:
        raise InputError(
            f"--data {config.data}: no {split} items of kinds {kinds}; change --kinds or generate more"
        )
    return loaded


def as_prompt_completion(dataset: Dataset) -> Dataset:
    """``messages`` -> ``prompt`` (all turns but the last) + ``completion`` (the assistant's answer), so
    SFT's loss covers the answer only; keeps ``images``."""
    missing = {"images", "messages"} - set(dataset.column_names)
    if missing:
        raise InputError(
            f"SFT data lacks columns {sorted(missing)}; use a corpus from python -m benchmarks.datagen.corpus"
        )
    split = dataset.map(
        lambda m: {"prompt": m[:-1], "completion": m[-1:]},
        input_columns="messages",
        remove_columns=["messages"] + [c for c in ("prompt",) if c in dataset.column_names],
    )
    return split.select_columns(list(SFT_COLUMNS))


def grpo_columns(dataset: Dataset) -> Dataset:
    """The columns GRPO reads: the prompt with its images, and the reward functions' references."""
    missing = set(GRPO_COLUMNS) - set(dataset.column_names)
    if missing:
        raise InputError(
            f"GRPO data lacks columns {sorted(missing)}; use a corpus from python -m benchmarks.datagen.corpus"
        )
    return dataset.select_columns(list(GRPO_COLUMNS))


# ------------------------------------------------------------------------------------------ logging


def last_checkpoint(output: Path) -> Path | None:
    """The newest ``checkpoint-<step>`` folder in ``output``, or ``None``."""
    steps = [
        (int(p.name.split("-")[1]), p) for p in output.glob("checkpoint-*") if p.name.split("-")[1].isdigit()
    ]
    return max(steps)[1] if steps else None


def metrics_callback(path: Path) -> TrainerCallback:
    """A ``TrainerCallback`` appending each of TRL's logs (with its step) to ``path`` as a JSON line, on the
    main process only."""
    from transformers import TrainerCallback

    class JsonlMetrics(TrainerCallback):
        def on_log(
            self,
            args: TrainingArguments,
            state: TrainerState,
            control: TrainerControl,
            logs: dict[str, Any] | None = None,
            **kwargs: Any,
        ) -> None:
            if logs and state.is_world_process_zero:
                with path.open("a", encoding="utf-8") as handle:
                    handle.write(json.dumps({"step": state.global_step, **logs}) + "\n")

    return JsonlMetrics()


def time_budget_callback(seconds: float) -> TrainerCallback:
    """A ``TrainerCallback`` that ends training (the trainer then saves as usual) once ``seconds`` of
    training have passed, checked after every optimizer step."""
    import time

    from transformers import TrainerCallback

    class TimeBudget(TrainerCallback):
        def on_train_begin(
            self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs: Any
        ) -> None:
            self.start = time.monotonic()

        def on_step_end(
            self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs: Any
        ) -> None:
            if time.monotonic() - self.start >= seconds:
                control.should_training_stop = True
                control.should_save = True

    return TimeBudget()


def read_metrics(output: str | Path) -> list[dict[str, Any]]:
    """The run's ``metrics.jsonl`` as a list of dicts."""
    path = Path(output) / METRICS_FILE
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


# ------------------------------------------------------------------------------------------ training


def _common_args(config: PostTrainConfig) -> dict[str, Any]:
    """TrainingArguments shared by both trainers."""
    import torch

    report = [r for r in config.report_to.split(",") if r and r != "none"]
    return {
        "output_dir": config.output,
        "max_steps": config.max_steps,
        "num_train_epochs": config.epochs,
        "per_device_train_batch_size": config.batch_size,
        "gradient_accumulation_steps": config.grad_accum,
        "learning_rate": config.lr,
        "logging_steps": config.logging_steps,
        "save_strategy": "steps",
        "save_steps": config.save_steps,
        "save_total_limit": config.save_total_limit,
        "report_to": report,
        "seed": config.seed,
        "data_seed": config.seed,
        "bf16": config.bf16,
        "use_cpu": not torch.cuda.is_available(),
        "gradient_checkpointing": config.gradient_checkpointing,
        "disable_tqdm": True,
    }


def _sft_trainer(
    config: PostTrainConfig,
    common: dict[str, Any],
    processor: ProcessorMixin,
    callbacks: list[TrainerCallback],
) -> Trainer:
    """TRL's SFT trainer on the prompt-completion split, evaluated every ``--eval-steps`` when asked."""
    from trl import SFTConfig, SFTTrainer

    train = as_prompt_completion(load_split(config, config.split))
    evaluate = config.eval_steps is not None and bool(config.eval_split)
    args = SFTConfig(
        **common,
        max_length=config.max_length,
        completion_only_loss=True,
        eval_strategy="steps" if evaluate else "no",
        eval_steps=config.eval_steps,
        eval_on_start=evaluate,
    )
    eval_set = as_prompt_completion(load_split(config, config.eval_split)) if evaluate else None
    return SFTTrainer(
        model=config.model,
        args=args,
        train_dataset=train,
        eval_dataset=eval_set,
        processing_class=processor,
        callbacks=callbacks,
    )


def _grpo_trainer(
    config: PostTrainConfig,
    common: dict[str, Any],
    processor: ProcessorMixin,
    callbacks: list[TrainerCallback],
) -> Trainer:
    """TRL's GRPO trainer with the ``--rewards`` reward functions."""
    from trl import GRPOConfig, GRPOTrainer

    from benchmarks.posttrain.multihop_rewards import PAPER_REWARD_FUNCS, RECIPE_REWARD_FUNCS
    from benchmarks.posttrain.spatial_rewards import SPATIAL_REWARD_FUNCS

    args = GRPOConfig(
        **common,
        num_generations=config.num_generations,
        max_completion_length=config.max_completion_length,
        temperature=config.temperature,
        beta=config.beta,
    )
    table = {"paper": PAPER_REWARD_FUNCS, "recipe": RECIPE_REWARD_FUNCS, "spatial": SPATIAL_REWARD_FUNCS}
    rewards = list(table[config.rewards])
    return GRPOTrainer(
        model=config.model,
        reward_funcs=rewards,
        args=args,
        train_dataset=grpo_columns(load_split(config, config.split)),
        processing_class=processor,
        callbacks=callbacks,
    )


def build_trainer(config: PostTrainConfig) -> Trainer:
    """The TRL trainer for ``config`` (model loaded from ``--model``, processor the checkpoint's)."""
    from policies.backends.hf_processing import load_processor

    processor = load_processor(config.model)
    common = _common_args(config)
    callbacks = [metrics_callback(Path(config.output) / METRICS_FILE)]
    if config.time_budget_s is not None:
        callbacks.append(time_budget_callback(config.time_budget_s))
    if config.mode == "sft":
        return _sft_trainer(config, common, processor, callbacks)
    return _grpo_trainer(config, common, processor, callbacks)


def posttrain(config: PostTrainConfig) -> Path:
    """Train; returns the ``final/`` model directory."""
    config.validate()
    output = Path(config.output)
    output.mkdir(parents=True, exist_ok=True)
    (output / CONFIG_FILE).write_text(json.dumps(asdict(config), indent=2) + "\n", encoding="utf-8")
    trainer = build_trainer(config)
    resume = str(last_checkpoint(output)) if config.resume else None
    trainer.train(resume_from_checkpoint=resume)
    final = output / FINAL_DIR
    trainer.save_model(str(final))
    trainer.processing_class.save_pretrained(str(final))
    return final


#: The modes, the first argument: each has its own options (``python -m benchmarks.posttrain MODE --help``).
MODES = {
    "sft": "supervised fine-tuning on the corpus's answers (TRL SFTTrainer)",
    "grpo": "reinforcement learning with MultihopSpatial's rewards (TRL GRPOTrainer)",
}


def usage() -> str:
    """What ``python -m benchmarks.posttrain --help`` prints: the modes, and where each one's options are."""
    return (
        f"usage: python -m benchmarks.posttrain {{{','.join(MODES)}}} --model DIR --data DIR --output DIR "
        "[options]\n\n"
        + "\n".join(f"  {name}: {summary}" for name, summary in MODES.items())
        + "\n\nThe options: python -m benchmarks.posttrain MODE --help"
    )


def main(argv: list[str] | None = None) -> None:
    """``python -m benchmarks.posttrain sft|grpo --model DIR --data DIR --output DIR [...]``."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] in (["-h"], ["--help"]):
        print(usage())
        return
    if not args or args[0] not in MODES:
        raise InputError(
            "first argument must be the mode: python -m benchmarks.posttrain sft|grpo --model DIR --data DIR --output DIR"
            " (modes and options: python -m benchmarks.posttrain --help)"
        )
    config = parse_config(
        PostTrainConfig, ["--mode", args[0], *args[1:]], prog=f"python -m benchmarks.posttrain {args[0]}"
    )
    print(f"saved {posttrain(config)}")
