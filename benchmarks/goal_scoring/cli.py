"""``python -m benchmarks.goal_scoring {predict,score,convert,generate}``: flags come from the config dataclasses."""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import inspect
import json
import sys
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from action_mapping import StepSizes
from benchmarks.goal_scoring.config import ConvertConfig, GenerateConfig, PredictConfig, ScoreConfig
from benchmarks.goal_scoring.convert import Conversion, convert_by_pose, convert_by_velocity, read_trajectory
from benchmarks.goal_scoring.dataset import (
    DatasetError,
    DatasetWriter,
    GoalDataset,
    load_dataset,
    load_predictions,
    write_jsonl,
)
from benchmarks.goal_scoring.predict import (
    blind_outputs,
    gold_conversations,
    gold_outputs,
    make_model_backend,
    predict_with_backend,
    reference_records,
)
from benchmarks.goal_scoring.report import (
    markdown_table,
    match_predictions,
    score_dataset,
    summarize,
    write_manifest,
    write_report,
)
from benchmarks.goal_scoring.sources import generate_dataset, make_source
from benchmarks.scoring.goal import ManipulationWeights
from benchmarks.static.spatialtree import MAX_NEW_TOKENS as SPATIALTREE_MAX_NEW_TOKENS
from policies.backends.answer_key import ANSWER_KEY_MODEL, AnswerKey
from policies.backends.base import Backend, GenerationConfig
from policies.backends.injection import expected_effect
from policies.config_cli import (
    EXIT_UNITS_ERRORED,
    OneLineParser,
    add_config_arguments,
    config_from_namespace,
    run_cli,
)

#: The built-in reference answers by name: the answer key (each sample's ground truth, the answers of
#: ``--policy mllm --model answer-key`` without a backend) and the blind baseline (the most common plan).
BUILTIN_PREDICTIONS: dict[str, Callable[[GoalDataset, str], dict[str, str]]] = {
    ANSWER_KEY_MODEL: gold_outputs,
    "blind": blind_outputs,
}


def builtin_records(dataset: GoalDataset, name: str, scorer: str = "paper") -> list[dict[str, Any]]:
    """Prediction records of the built-in reference ``name``, written as ``scorer`` reads answers."""
    return reference_records(BUILTIN_PREDICTIONS[name](dataset, scorer), name)


class IncompleteRun(RuntimeError):
    """Results were written, but some units errored: the command exits 1 (``--allow-errors``: 0)."""


# --------------------------------------------------------------------------------------------------------
# Commands


def _dataset_identity(dataset: GoalDataset) -> dict[str, Any]:
    digest = hashlib.sha256((dataset.root / "samples.jsonl").read_bytes()).hexdigest()
    return {
        "path": str(dataset.root.resolve()),
        "samples_sha256": digest,
        "n": len(dataset),
        "header": dataset.header,
    }


def run_predict(config: PredictConfig, backend: Backend | None = None) -> Path:
    """Write ``predictions.jsonl`` (+ manifest) for ``config``; ``backend`` overrides the factory (tests)."""
    dataset = load_dataset(config.dataset)
    if config.limit is not None:
        dataset = GoalDataset(dataset.root, dataset.samples[: config.limit], dataset.header)
    if config.policy in BUILTIN_PREDICTIONS and (config.answer_key_error_rate or config.model):
        raise DatasetError(
            f"--policy {config.policy} writes its answers without a model; drop --model and "
            "--answer-key-error-rate, or use --policy mllm --model answer-key for the stand-in backend"
        )
    extra: dict[str, Any] = {}
    if config.policy in BUILTIN_PREDICTIONS:
        records, identity = builtin_records(dataset, config.policy), {"policy": config.policy}
    else:
        backend = backend if backend is not None else _backend(config, dataset)  # a cache may be falsy
        records = predict_with_backend(
            dataset, backend, num_steps=config.num_steps, batch_size=config.batch_size
        )
        identity = backend.describe()
        extra["max_new_tokens"] = backend.config.max_new_tokens  # what the backend uses, not the flag
    errored = sum(1 for r in records if r.get("error"))
    extra.update(status="complete" if not errored else "incomplete", errored=errored, samples=len(records))
    config.output.mkdir(parents=True, exist_ok=True)
    path = config.output / "predictions.jsonl"
    write_jsonl(path, records)
    write_manifest(
        config.output,
        "predict",
        dataclasses.asdict(config),
        {"dataset": _dataset_identity(dataset), "model": identity, **extra},
    )
    print(f"wrote {len(records)} predictions to {path} ({errored} of {len(records)} samples errored)")
    if errored and not config.allow_errors:
        raise IncompleteRun(
            f"{errored} of {len(records)} samples errored (their records hold the error); "
            "rerun the prediction, or pass --allow-errors to exit 0"
        )
    return path


def _backend(config: PredictConfig, dataset: GoalDataset) -> Backend:
    if not config.model:
        raise DatasetError("--policy mllm needs --model (a checkpoint path, hub id, or server model name)")
    if config.answer_key_error_rate and config.model != ANSWER_KEY_MODEL:
        raise DatasetError("--answer-key-error-rate applies to --model answer-key only")
    if not 0.0 <= config.answer_key_error_rate <= 1.0:
        raise DatasetError(f"--answer-key-error-rate must be in [0, 1], got {config.answer_key_error_rate}")
    budget = SPATIALTREE_MAX_NEW_TOKENS if config.max_new_tokens is None else config.max_new_tokens
    if budget < 1:
        raise DatasetError(f"--max-new-tokens must be at least 1, got {budget}")
    generation = GenerationConfig(max_new_tokens=budget, temperature=config.temperature, seed=config.seed)
    if config.model == ANSWER_KEY_MODEL:  # the stand-in, built with its answer key: never cached, no endpoint
        from policies.backends.factory import make_backend

        return make_backend(
            config.model,
            config=generation,
            truth=AnswerKey(gold_conversations(dataset, config.num_steps)),
            error_rate=config.answer_key_error_rate,
            error_seed=config.answer_key_error_seed,
        )
    return make_model_backend(
        config.model, api_base=config.api_base, generation=generation, cache=config.cache
    )


def _outputs(
    config: ScoreConfig, dataset: GoalDataset
) -> tuple[dict[str, str], str, dict[str, Any], set[str]]:
    """Outputs by sample id, the label, the provenance, and the ids whose prediction call errored."""
    if config.predictions in BUILTIN_PREDICTIONS:
        builtin = builtin_records(dataset, config.predictions, config.scorer)
        return (
            {r["id"]: r["output"] for r in builtin},
            config.predictions,
            {"builtin": config.predictions},
            set(),
        )
    path = Path(config.predictions)
    records = load_predictions(path)
    models = sorted({str(r.get("model")) for r in records.values() if r.get("model")})
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    label = ", ".join(models) or path.stem
    # not the answer-key backend's answers: keep the built-in reference row apart
    if label in BUILTIN_PREDICTIONS:
        label = f"{label} (model)"
    outputs = {k: r["output"] for k, r in records.items() if r["output"] is not None}
    injected = Counter(
        str(r["injected_error"])
        for r in records.values()
        if r.get("injected_error") and r["output"] is not None
    )
    provenance = {
        "path": str(path.resolve()),
        "sha256": digest,
        "injected_errors": dict(sorted(injected.items())),
    }
    return outputs, label, provenance, set(records) - set(outputs)


def _baseline_scores(
    dataset: GoalDataset, scorer: str, weights: ManipulationWeights | None
) -> dict[str, Any]:
    """The scores of each built-in prediction set on ``dataset``, by name."""
    baselines = {}
    for name in BUILTIN_PREDICTIONS:
        reference = {r["id"]: r["output"] for r in builtin_records(dataset, name, scorer)}
        baselines[name] = score_dataset(dataset, [reference[s.id] for s in dataset], scorer, weights)
    return baselines


def _score_status(errored: int, total: int, missing: int) -> str:
    """``complete``, or what kept the run from it."""
    if not errored and not missing:
        return "complete"
    return f"incomplete: {errored} of {total} samples errored (left out of the means), {missing} missing (scored 0)"


def run_score(config: ScoreConfig) -> dict[str, Any]:
    """Score, write the report files, print the markdown table; returns the summary."""
    dataset = load_dataset(config.dataset, check_images=False)
    weights = ManipulationWeights(config.weight_translation, config.weight_rotation, config.weight_gripper)
    if config.scorer != "paper" and weights != ManipulationWeights():
        raise DatasetError("--weight-* apply to the paper scorer only; drop them for --scorer lmms-eval")
    weights_arg = weights if config.scorer == "paper" else None
    outputs, label, provenance, errored = _outputs(config, dataset)
    unknown = sorted(errored - {s.id for s in dataset})
    if unknown:
        raise DatasetError(
            f"{len(unknown)} prediction(s) name samples not in the dataset, e.g. {unknown[:3]}. "
            "Fix: score against the dataset the predictions were made for"
        )
    full, total = dataset, len(dataset)
    completed = [s for s in dataset if s.id not in errored]
    dataset = GoalDataset(dataset.root, completed, dataset.header)
    texts = match_predictions(dataset, outputs, allow_missing=config.allow_missing)
    scores = score_dataset(dataset, texts, config.scorer, weights_arg)
    baselines = _baseline_scores(dataset, config.scorer, weights_arg) if config.baselines else {}
    summary = summarize(dataset, scores, config.scorer, baselines)
    summary.update(samples=total, errored=len(errored), errored_ids=sorted(errored))
    # the stand-in's seeded errors, next to the parse failures they cause
    if provenance.get("injected_errors"):
        summary["injected_errors"] = provenance["injected_errors"]
        summary["injected_unusable"] = sum(
            n for k, n in provenance["injected_errors"].items() if expected_effect(k) == "unusable"
        )
    missing = summary["missing"]
    summary["status"] = _score_status(len(errored), total, missing)
    write_report(config.output, dataset, scores, summary, label)
    write_manifest(
        config.output,
        "score",
        dataclasses.asdict(config),
        {
            "dataset": _dataset_identity(full),
            "predictions": provenance,
            "status": "complete" if summary["status"] == "complete" else "incomplete",
        },
    )
    print(markdown_table(summary, label), end="")
    if errored and not config.allow_errors:
        raise IncompleteRun(
            f"{len(errored)} of {total} samples have no answer (their prediction call errored), e.g. "
            f"{sorted(errored)[:3]}; rerun `predict`, or pass --allow-errors to exit 0"
        )
    return summary


def _convert(config: ConvertConfig, poses: Any, sizes: StepSizes) -> Conversion:
    """The trajectory's plan, by velocity (``--mode velocity``, needs ``--fps``) or by pose."""
    if config.mode == "velocity":
        if config.fps is None:
            raise DatasetError("--mode velocity needs --fps (the frame rate of the trajectory)")
        return convert_by_velocity(
            poses,
            sizes,
            fps=config.fps,
            frames_per_step=config.frames_per_step,
            max_step_num=config.max_step_num,
        )
    return convert_by_pose(
        poses,
        sizes,
        num_steps=config.num_steps or None,
        max_step_num=config.max_step_num,
        fit=config.fit_step_sizes,
    )


def run_convert(config: ConvertConfig) -> Conversion:
    """Convert a trajectory; add it to ``--dataset`` as a sample, or print the plan."""
    poses = read_trajectory(config.trajectory, config.convention)
    sizes = StepSizes(config.step_translation, config.step_rotation)
    conv = _convert(config, poses, sizes)
    if config.dataset is None:
        print(
            json.dumps(
                {"step_sizes": dataclasses.asdict(conv.step_sizes), "plan": conv.plan.to_json()},
                ensure_ascii=False,
            )
        )
        return conv
    if config.start_image is None or config.goal_image is None:
        raise DatasetError(
            "--dataset needs --start-image and --goal-image (the first and last views of the motion)"
        )
    record = {
        "id": config.id or config.trajectory.stem,
        "kind": config.kind,
        "instruction": config.instruction,
        "step_sizes": dataclasses.asdict(conv.step_sizes),
        "max_step_num": config.max_step_num,
        "plan": conv.plan.to_json(),
        "trajectory": conv.poses.tolist(),
        "source": config.source or f"trajectory:{config.trajectory.name}",
        "metadata": {"convert": {k: str(v) for k, v in dataclasses.asdict(config).items()}},
    }
    with DatasetWriter(
        config.dataset, {"name": config.dataset.name, "generator": {"source": "convert"}}, append=True
    ) as w:
        sample = w.add(record, config.start_image, config.goal_image)
    print(f"added sample {sample.id!r} ({len(sample.plan.steps)} steps) to {config.dataset}")
    return conv


def run_generate(config: GenerateConfig) -> GoalDataset:
    """Generate ``n`` samples from the source into a new dataset directory."""
    try:
        kwargs = json.loads(config.source_kwargs)
    except ValueError as e:
        raise DatasetError(f"--source-kwargs must be a JSON object ({e})") from e
    if not isinstance(kwargs, dict):
        raise DatasetError(f"--source-kwargs must be a JSON object, got {config.source_kwargs!r}")
    source = make_source(config.source, **kwargs)
    try:
        dataset = generate_dataset(source, config.n, config.seed, config.output, name=config.output.name)
    finally:
        close = getattr(source, "close", None)
        if callable(close):
            close()
    print(f"wrote {len(dataset)} samples to {config.output}")
    return dataset


COMMANDS: dict[str, tuple[type, Callable[[Any], Any]]] = {
    "predict": (PredictConfig, run_predict),
    "score": (ScoreConfig, run_score),
    "convert": (ConvertConfig, run_convert),
    "generate": (GenerateConfig, run_generate),
}


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="python -m benchmarks.goal_scoring",
        description="SpatialTree L4 goal-image scoring: predict plans from start/goal images, score them offline.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    for name, (cls, _) in COMMANDS.items():
        doc = inspect.getdoc(cls) or ""
        add_config_arguments(sub.add_parser(name, help=doc.splitlines()[0], description=doc), cls)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one subcommand through the shared error handler; returns the exit status."""
    return run_cli(_main, argv)


def _main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    cls, run = COMMANDS[args.command]
    try:
        run(config_from_namespace(cls, args))
    except IncompleteRun as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_UNITS_ERRORED
    return 0
