"""``python -m benchmarks.goal_scoring {predict,score,convert,generate}``: flags come from the config dataclasses."""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import inspect
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from action_mapping import StepSizes
from benchmarks.core.cli import OneLineParser, add_config_arguments, config_from_namespace
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
from benchmarks.goal_scoring.predict import builtin_records, make_model_backend, predict_with_backend
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
from policies.backends.base import Backend, GenerationConfig

BUILTIN_PREDICTIONS = ("oracle", "blind")

# --------------------------------------------------------------------------------------------------------
# Commands


def _dataset_identity(dataset: GoalDataset) -> dict[str, Any]:
    digest = hashlib.sha256((dataset.root / "samples.jsonl").read_bytes()).hexdigest()
    return {"path": str(dataset.root.resolve()), "samples_sha256": digest, "n": len(dataset), "header": dataset.header}


def run_predict(config: PredictConfig, backend: Backend | None = None) -> Path:
    """Write ``predictions.jsonl`` (+ manifest) for ``config``; ``backend`` overrides the factory (tests)."""
    dataset = load_dataset(config.dataset)
    if config.limit is not None:
        dataset = GoalDataset(dataset.root, dataset.samples[: config.limit], dataset.header)
    if config.policy in BUILTIN_PREDICTIONS:
        records, identity = builtin_records(dataset, config.policy), {"policy": config.policy}
    else:
        backend = backend or _backend(config)
        records = predict_with_backend(dataset, backend, num_steps=config.num_steps, batch_size=config.batch_size)
        identity = backend.describe()
    config.output.mkdir(parents=True, exist_ok=True)
    path = config.output / "predictions.jsonl"
    write_jsonl(path, records)
    write_manifest(config.output, "predict", dataclasses.asdict(config),
                   {"dataset": _dataset_identity(dataset), "model": identity})  # fmt: skip
    print(f"wrote {len(records)} predictions to {path}")
    return path


def _backend(config: PredictConfig) -> Backend:
    if not config.model:
        raise DatasetError("--policy mllm needs --model (a checkpoint path, hub id, or server model name)")
    generation = GenerationConfig(max_new_tokens=config.max_new_tokens, temperature=config.temperature, seed=config.seed)
    return make_model_backend(config.model, api_base=config.api_base, generation=generation, cache=config.cache)


def _outputs(config: ScoreConfig, dataset: GoalDataset) -> tuple[dict[str, str], str, dict[str, Any]]:
    if config.predictions in BUILTIN_PREDICTIONS:
        records = builtin_records(dataset, config.predictions, config.scorer)
        return {r["id"]: r["output"] for r in records}, config.predictions, {"builtin": config.predictions}
    path = Path(config.predictions)
    records = load_predictions(path)
    models = sorted({str(r.get("model")) for r in records.values() if r.get("model")})
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    label = ", ".join(models) or path.stem
    return {k: r["output"] for k, r in records.items()}, label, {"path": str(path.resolve()), "sha256": digest}


def run_score(config: ScoreConfig) -> dict[str, Any]:
    """Score, write the report files, print the markdown table; returns the summary."""
    dataset = load_dataset(config.dataset, check_images=False)
    weights = ManipulationWeights(config.weight_translation, config.weight_rotation, config.weight_gripper)
    if config.scorer != "paper" and weights != ManipulationWeights():
        raise DatasetError("--weight-* apply to the paper scorer only; drop them for --scorer lmms-eval")
    weights_arg = weights if config.scorer == "paper" else None
    outputs, label, provenance = _outputs(config, dataset)
    texts = match_predictions(dataset, outputs, allow_missing=config.allow_missing)
    scores = score_dataset(dataset, texts, config.scorer, weights_arg)
    baselines = {}
    if config.baselines:
        for name in BUILTIN_PREDICTIONS:
            reference = {r["id"]: r["output"] for r in builtin_records(dataset, name, config.scorer)}
            baselines[name] = score_dataset(dataset, [reference[s.id] for s in dataset], config.scorer, weights_arg)
    summary = summarize(dataset, scores, config.scorer, baselines)
    write_report(config.output, dataset, scores, summary, label)
    write_manifest(config.output, "score", dataclasses.asdict(config),
                   {"dataset": _dataset_identity(dataset), "predictions": provenance})  # fmt: skip
    print(markdown_table(summary, label), end="")
    return summary


def run_convert(config: ConvertConfig) -> Conversion:
    """Convert a trajectory; add it to ``--dataset`` as a sample, or print the plan."""
    poses = read_trajectory(config.trajectory, config.convention)
    sizes = StepSizes(config.step_translation, config.step_rotation)
    if config.mode == "velocity":
        if config.fps is None:
            raise DatasetError("--mode velocity needs --fps (the frame rate of the trajectory)")
        conv = convert_by_velocity(poses, sizes, fps=config.fps, frames_per_step=config.frames_per_step,
                                   max_step_num=config.max_step_num)  # fmt: skip
    else:
        conv = convert_by_pose(poses, sizes, num_steps=config.num_steps or None, max_step_num=config.max_step_num,
                               fit=config.fit_step_sizes)  # fmt: skip
    if config.dataset is None:
        print(json.dumps({"step_sizes": dataclasses.asdict(conv.step_sizes), "plan": conv.plan.to_json()}, ensure_ascii=False))
        return conv
    if config.start_image is None or config.goal_image is None:
        raise DatasetError("--dataset needs --start-image and --goal-image (the first and last views of the motion)")
    record = {
        "id": config.id or config.trajectory.stem, "kind": config.kind, "instruction": config.instruction,
        "step_sizes": dataclasses.asdict(conv.step_sizes), "max_step_num": config.max_step_num,
        "plan": conv.plan.to_json(), "trajectory": conv.poses.tolist(),
        "source": config.source or f"trajectory:{config.trajectory.name}",
        "metadata": {"convert": {k: str(v) for k, v in dataclasses.asdict(config).items()}},
    }  # fmt: skip
    with DatasetWriter(config.dataset, {"name": config.dataset.name, "generator": {"source": "convert"}}, append=True) as w:
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
    args = build_parser().parse_args(argv)
    cls, run = COMMANDS[args.command]
    try:
        run(config_from_namespace(cls, args))
    except (DatasetError, RuntimeError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0
