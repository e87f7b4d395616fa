"""The static-benchmark runner: load items, ask a model (or read saved predictions), score, report.

Output folder ``OUTPUT/BENCH/RUN_NAME/``:

- ``predictions.jsonl``: raw responses as they arrive (appended, so an interrupted run can ``--resume``);
- ``samples.jsonl``: one scored record per item, in file order (response, parse result, score, judge);
- ``summary.json`` / ``summary.md``, ``tables/*.csv``, ``plots/by_category.png``;
- ``judgments.jsonl``: judge replies (reused on resume); ``manifest.json``: config, versions, git revision.

Models are reached only through :class:`policies.backends.base.Backend`.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from benchmarks.core.manifest import build_manifest, utc_now
from benchmarks.core.rundir import load_manifest, quarantine_lines
from benchmarks.core.streak import ErrorStreak, describe_endpoint
from benchmarks.scoring.parsers import failed
from benchmarks.scoring.result import JudgeScore, ScoreFields, no_response
from benchmarks.static import report
from benchmarks.static.backends import build_backend, build_judge, judge_messages, judge_request, to_messages
from benchmarks.static.config import RunConfig
from benchmarks.static.items import DataError, StaticItem, data_files, media_cluster
from benchmarks.static.registry import BenchmarkSpec, LoadOptions, ScoringMode, get_benchmark
from benchmarks.static.sample_record import SampleRecord, StaticSummary, static_summary
from benchmarks.stats.intervals import CONFIDENCE
from policies.backends.base import Backend, Generation, Message
from policies.backends.injection import expected_effect
from policies.config_cli import InputError

if TYPE_CHECKING:
    from benchmarks.static.agent_run import AgentAnswerer

_ID_KEYS = ("item_id", "id", "index")
_RESPONSE_KEYS = ("response", "raw_response", "pred_answer", "prediction")
_ANSWER_LIMIT = 500  # long ground truths (base64 masks) are shortened in per-sample records


@dataclass(frozen=True)
class Prediction:
    """A model's answer to one item, or why there is none."""

    response: str | None
    error: str | None = None
    generation: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class RunResult:
    """What a run produced."""

    out_dir: Path
    summary: StaticSummary
    records: list[SampleRecord]


def run(config: RunConfig, backend: Backend | None = None, judge: Backend | None = None) -> RunResult:
    """Run (or rescore) one benchmark as configured.

    Args:
        config: the run's settings (see :class:`RunConfig`).
        backend: the model to ask; built with ``policies.backends.factory.make_backend`` when ``None``.
        judge: the LLM judge; built from ``config.judge_model`` when ``None`` and a judge model is set.
    """
    config.validate()
    spec = get_benchmark(config.bench)
    mode = spec.mode(config.mode)
    style = config.prompt_style or mode.prompt_style
    if style not in spec.prompt_styles:
        raise ValueError(
            f"{spec.name} has no prompt style {style!r}; choose one of {', '.join(spec.prompt_styles)}"
        )
    all_items = spec.load(config.data, LoadOptions(config.image_root, check_media=config.score_only is None))
    items = all_items[: config.limit] if config.limit else all_items
    out_dir = run_folder(config)
    manifest = start_manifest(config, spec, mode, style, out_dir, len(items))
    if config.score_only is not None:
        predictions = read_predictions(config.score_only, all_items)
    else:
        predictions = predict(items, spec, style, config, backend, out_dir, manifest)
    if judge is None and config.judge_model:  # `is None`: a cached backend is falsy while its cache is empty
        judge = build_judge(config, items, predictions)
    records = score_items(items, predictions, mode, judge, out_dir)
    summary = summarize(spec, mode, items, records, config, predictions)
    write_results(out_dir, spec, mode, style, config, records, summary)
    finish_manifest(out_dir, manifest, summary)
    return RunResult(out_dir, summary, records)


# --------------------------------------------------------------------------------------------------------
# Run folder and manifest


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-.") or "run"


def run_folder(config: RunConfig) -> Path:
    """``OUTPUT/BENCH/RUN_NAME``; the default name comes from the model (or predictions file) and mode."""
    name = config.run_name
    if name is None:
        if config.score_only is not None:
            stem = (
                config.score_only.parent.name
                if config.score_only.stem in ("predictions", "samples")
                else config.score_only.stem
            )
            name = f"{_slug(stem)}-rescored"
        else:
            name = _slug(str(config.model).rstrip("/").split("/")[-1])
            if config.policy == "agent":
                name += f"-agent-{config.agent_paradigm}-{config.agent_tools}"
        if config.mode != "project":
            name += f"-{config.mode}"
    folder = config.output / config.bench / name
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _data_digest(path: Path) -> dict[str, Any]:
    files = data_files(path)
    digest = hashlib.sha256()
    for file in files:
        digest.update(file.name.encode())
        with file.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    return {"path": str(path), "files": len(files), "sha256": digest.hexdigest()}


def start_manifest(
    config: RunConfig, spec: BenchmarkSpec, mode: ScoringMode, style: str, out_dir: Path, n_items: int
) -> dict[str, Any]:
    """Write ``manifest.json`` (status "running"); a resumed run must match the earlier one."""
    manifest = build_manifest(
        spec.name,
        config,
        {
            "mode": mode.name,
            "prompt_style": style,
            "data": _data_digest(config.data),
            "items": n_items,
            "status": "running",
        },
    )
    path = out_dir / "manifest.json"
    predictions = out_dir / "predictions.jsonl"
    if config.resume and (path.is_file() or predictions.is_file()):
        _check_resumable(load_manifest(out_dir), manifest, out_dir)
        moved = quarantine_lines(predictions, _is_prediction_line)
        if moved is not None:
            print(moved.message("their items are asked again"), file=sys.stderr)
            manifest["damaged_lines"] = {predictions.name: list(moved.lines)}
    report.write_json(path, manifest)
    return manifest


def _is_prediction_line(row: object) -> bool:
    """A ``predictions.jsonl`` line as :func:`predict` writes it."""
    return (
        isinstance(row, dict)
        and isinstance(row.get("item_id"), str)
        and isinstance(row.get("response"), (str, type(None)))
        and isinstance(row.get("error"), (str, type(None)))
    )


def _check_resumable(previous: Mapping[str, Any], current: Mapping[str, Any], out_dir: Path) -> None:
    for key in ("benchmark", "prompt_style"):
        if previous.get(key) != current.get(key):
            raise ValueError(
                f"cannot resume {out_dir}: it ran {key}={previous.get(key)!r}, this run asks {current.get(key)!r}"
            )
    if previous["config"].get("model") != current["config"].get("model"):
        raise ValueError(
            f"cannot resume {out_dir}: it ran model {previous['config'].get('model')!r}; use another --run-name"
        )
    # an agent run is its tools and paradigm too
    for key in (
        "policy",
        "agent_paradigm",
        "agent_tools",
        "agent_depth_model",
        "agent_detector_model",
        "agent_segmenter_model",
        "agent_matcher_model",
    ):
        if key in previous["config"] and previous["config"][key] != current["config"].get(key):
            raise InputError(
                f"cannot resume {out_dir}: it ran {key.replace('_', '-')}={previous['config'][key]!r}; use another --run-name"
            )
    data = previous.get("data")
    if not isinstance(data, dict) or data.get("sha256") != current["data"]["sha256"]:
        raise ValueError(f"cannot resume {out_dir}: the data file changed since the run started")


def finish_manifest(out_dir: Path, manifest: dict[str, Any], summary: Mapping[str, Any]) -> None:
    """Mark the run finished with its counts: ``complete``, or ``incomplete`` when items errored or lack a prediction."""
    status = "complete" if summary["status"] == "complete" else "incomplete"
    manifest.update(status=status, finished=utc_now(), counts=summary["counts"])
    report.write_json(out_dir / "manifest.json", manifest)


# --------------------------------------------------------------------------------------------------------
# Predictions


def read_predictions(path: Path, items: Sequence[StaticItem]) -> dict[str, Prediction]:
    """Predictions by item id from JSONL or a JSON list (ours, or upstream files with ``id`` and
    ``raw_response``/``pred_answer``). Later lines win, except that an error never replaces an answer."""
    if not path.is_file():
        raise DataError(f"predictions file {path} does not exist")
    rows = _prediction_rows(path)
    predictions: dict[str, Prediction] = {}
    for number, row in enumerate(rows, 1):
        item_id = next((str(row[k]) for k in _ID_KEYS if row.get(k) is not None), None)
        if item_id is None:
            raise DataError(f"{path}, entry {number}: no item id (expected one of {', '.join(_ID_KEYS)})")
        prediction = _prediction(row)
        if prediction.error is None or item_id not in predictions or predictions[item_id].error is not None:
            predictions[item_id] = prediction
    unknown = sorted(set(predictions) - {item.item_id for item in items})
    if unknown:
        raise DataError(
            f"{path}: {len(unknown)} predictions name items not in the data (e.g. {unknown[:5]}); check --data and --bench"
        )
    return predictions


def _prediction_rows(path: Path) -> list[Mapping[str, Any]]:
    text = path.read_text(encoding="utf-8")
    if path.suffix.lower() == ".json":
        data = json.loads(text)
        return data if isinstance(data, list) else data.get("data", [])
    try:
        return [json.loads(line) for line in text.splitlines() if line.strip()]
    except json.JSONDecodeError as error:
        raise DataError(f"{path}: not JSON lines ({error})") from None


def _prediction(row: Mapping[str, Any]) -> Prediction:
    response = next((row[k] for k in _RESPONSE_KEYS if isinstance(row.get(k), str)), None)
    if response is None:
        return Prediction(None, str(row.get("error") or "no response in the predictions file"))
    return Prediction(response, None, row.get("generation"))


def _answer_chunk(
    chunk: Sequence[StaticItem],
    spec: BenchmarkSpec,
    style: str,
    config: RunConfig,
    agent: AgentAnswerer | None,
    backend: Backend | None,
) -> list[Prediction]:
    """The answers to one batch of items, from the agent when there is one, else from the backend."""
    if agent is not None:  # the agent reads the same prompts; its answer goes to the same scorer
        return [
            Prediction(*answer)
            for answer in agent.ask(chunk, [spec.build_prompt(item, style) for item in chunk])
        ]
    conversations = [to_messages(spec.build_prompt(item, style), config.video_frames) for item in chunk]
    assert backend is not None  # predict builds one for the items to answer
    return _ask(backend, conversations)


def _prediction_line(item: StaticItem, answer: Prediction) -> str:
    """The ``predictions.jsonl`` line of one answer."""
    record = {
        "item_id": item.item_id,
        "response": answer.response,
        "error": answer.error,
        "generation": answer.generation,
    }
    return json.dumps(record, ensure_ascii=False) + "\n"


def predict(
    items: Sequence[StaticItem],
    spec: BenchmarkSpec,
    style: str,
    config: RunConfig,
    backend: Backend | None,
    out_dir: Path,
    manifest: dict[str, Any],
) -> dict[str, Prediction]:
    """Ask the model about every item without an answer yet, appending to ``predictions.jsonl``."""
    path = out_dir / "predictions.jsonl"
    if path.is_file() and not config.resume:
        raise ValueError(
            f"{out_dir} already holds predictions; pass --resume to continue that run or --run-name for a new one"
        )
    done = read_predictions(path, items) if path.is_file() else {}
    todo = [item for item in items if item.item_id not in done or done[item.item_id].error is not None]
    if todo and backend is None:  # not `backend or ...`: a cached backend is falsy while its cache is empty
        backend = build_backend(config, generation_budget(config, spec), items=todo)
    manifest["backend"] = backend.describe() if backend is not None else None
    # what the backend was built with, not what was asked: the two differ when a backend is handed in
    manifest["max_new_tokens"] = backend.config.max_new_tokens if backend is not None else None
    manifest["resumed_with_done"] = len(items) - len(todo)
    agent = None
    if backend is not None and todo and config.policy == "agent":
        agent = _agent(config, backend, out_dir)
        manifest["agent"] = agent.describe()
    streak = ErrorStreak(
        config.max_consecutive_errors,
        what="items",
        endpoint=describe_endpoint({"model": config.model, "api_base": config.api_base}),
    )
    with path.open("a", encoding="utf-8") as sink:
        for chunk in _chunks(todo, config.batch_size):
            answers = _answer_chunk(chunk, spec, style, config, agent, backend)
            for item, answer in zip(chunk, answers):
                done[item.item_id] = answer
                sink.write(_prediction_line(item, answer))
                streak.add(answer.error)
            sink.flush()
            _progress(
                sum(1 for item in items if item.item_id in done and done[item.item_id].error is None),
                len(items),
            )
            streak.check()  # after the whole batch is saved
    if agent is not None:
        agent.close()
    return done


def _agent(config: RunConfig, backend: Backend, out_dir: Path) -> AgentAnswerer:
    """The SpatialAgent answerer of ``--policy agent`` (imported only then)."""
    from benchmarks.static.agent_run import AgentAnswerer
    from policies.agent import AgentConfig

    agent_config = AgentConfig(
        config.agent_paradigm, config.agent_max_attempts, config.agent_max_turns, config.agent_max_tokens
    )
    return AgentAnswerer(
        backend,
        config.agent_tools,
        agent_config,
        config.data,
        out_dir,
        config.video_frames,
        config.agent_depth_model,
        detector_model=config.agent_detector_model,
        segmenter_model=config.agent_segmenter_model,
        matcher_model=config.agent_matcher_model,
    )


def generation_budget(config: RunConfig, spec: BenchmarkSpec) -> int:
    """``--max-new-tokens`` when given, else the benchmark's published budget (the agent's per-call 4,096)."""
    if config.max_new_tokens is not None:
        return config.max_new_tokens
    return 4096 if config.policy == "agent" else spec.max_new_tokens


def _chunks(items: Sequence[StaticItem], size: int) -> Iterator[Sequence[StaticItem]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _progress(done: int, total: int) -> None:
    print(f"[benchmarks.static] {done}/{total} items answered", file=sys.stderr, flush=True)


def _ask(backend: Backend, conversations: list[list[Message]]) -> list[Prediction]:
    """Batch call; when the batch fails, ask one by one so a bad item does not sink the others."""
    try:
        return [_as_prediction(g) for g in backend.generate_batch(conversations)]
    except Exception:  # any backend failure: ask one by one below
        answers = []
        for conversation in conversations:
            try:
                answers.append(_as_prediction(backend.generate(conversation)))
            except Exception as error:  # recorded on the item, retried by --resume
                answers.append(Prediction(None, f"{type(error).__name__}: {error}"))
        return answers


def _as_prediction(generation: Generation) -> Prediction:
    info: dict[str, object] = {
        "latency_s": generation.latency_s,
        "prompt_tokens": generation.prompt_tokens,
        "completion_tokens": generation.completion_tokens,
        "cached": generation.cached,
    }
    if generation.injected_error is not None:  # an error seeded on purpose, checked against the parse counts
        info["injected_error"] = generation.injected_error
    return Prediction(generation.text, None, info)


# --------------------------------------------------------------------------------------------------------
# Scoring


def _short(value: Any) -> Any:
    if isinstance(value, bytes):
        return f"<{len(value)} bytes>"
    if isinstance(value, str) and len(value) > _ANSWER_LIMIT:
        return value[:100] + f"... ({len(value)} characters)"
    return value


def make_record(item: StaticItem, mode: ScoringMode, prediction: Prediction) -> SampleRecord:
    """The per-sample record: item identity, response, and the rule-based score (or the error)."""
    scored = (
        no_response() if prediction.error is not None else safe_score(item, mode, prediction.response or "")
    )
    generation = None if prediction.generation is None else dict(prediction.generation)
    record = SampleRecord(
        index=item.index,
        item_id=item.item_id,
        benchmark=item.benchmark,
        mode=mode.name,
        category=item.category,
        tags=dict(item.tags),
        task=item.task,
        answer=_short(item.answer),
        response=prediction.response,
        generation=generation,
        judge=None,
        error=prediction.error,
        **scored,
    )
    injected = (prediction.generation or {}).get("injected_error")
    if prediction.error is None and injected is not None:
        record["injected_error"] = injected
    return record


def safe_score(item: StaticItem, mode: ScoringMode, response: str) -> ScoreFields:
    """The mode's score of ``response``; an answer the scorer cannot handle (it raises) scores 0 with the
    error recorded on the item, so one answer never stops a run. The record keeps the shape the mode's
    summary reads: it is the mode's own record of an empty answer, with the score and parse replaced."""
    try:
        return mode.score(item, response).to_dict()
    except Exception as error:  # any scorer failure on this answer: recorded below, the run goes on
        why = f"{type(error).__name__}: {_clip(str(error))}"
    try:
        record = mode.score(item, "").to_dict()
    except Exception:  # the mode cannot even score an empty answer: a bare record
        record = cast(ScoreFields, {"metrics": {}})  # its score fields follow, after metrics as before
    failure = failed("scoring_error", f"the scorer raised on this answer: {why}")
    record.update(
        {
            "score": 0.0,
            "correct": False if record.get("correct") is not None else None,
            "parse": failure.to_dict(),
            "scorer": record.get("scorer") or mode.name,
            "explanation": f"scored 0: the scorer raised {why}",
            "scoring_error": why,
        }
    )
    return record


def _clip(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[:limit] + f"... ({len(text)} characters)"


def score_items(
    items: Sequence[StaticItem],
    predictions: Mapping[str, Prediction],
    mode: ScoringMode,
    judge: Backend | None,
    out_dir: Path,
) -> list[SampleRecord]:
    """Score every item that has a prediction; judge the ones the mode sends to a judge."""
    records = [
        make_record(item, mode, predictions[item.item_id]) for item in items if item.item_id in predictions
    ]
    by_id = {item.item_id: item for item in items}
    if judge is not None and mode.judge_score is not None:
        _judge_records(records, by_id, mode, judge, out_dir)
    else:
        for record in records:
            if record["error"] is None and judge_request(
                mode, by_id[record["item_id"]], record["response"] or ""
            ):
                record["needs_judge"] = True
    return records


def _judge_records(
    records: list[SampleRecord],
    by_id: Mapping[str, StaticItem],
    mode: ScoringMode,
    judge: Backend,
    out_dir: Path,
) -> None:
    cache_path = out_dir / "judgments.jsonl"
    cache = _read_judgments(cache_path)
    judge_id = json.dumps(judge.describe(), sort_keys=True, default=str)
    with cache_path.open("a", encoding="utf-8") as sink:
        for record in records:
            item = by_id[record["item_id"]]
            prompt = None if record["error"] else judge_request(mode, item, record["response"] or "")
            if prompt is None:
                continue
            key = hashlib.sha256((judge_id + prompt).encode()).hexdigest()
            if key not in cache:
                cache[key] = _judge_reply(judge, prompt)
                sink.write(
                    json.dumps({"key": key, "item_id": item.item_id, **cache[key]}, ensure_ascii=False) + "\n"
                )
            reply = cache[key]
            verdict = _judge_verdict(mode, item, record["response"] or "", reply["reply"])
            judged: dict[str, Any] = (
                verdict.to_dict() if verdict else {"score": None, "ok": False, "explanation": reply["error"]}
            )
            judged["reply"] = reply["reply"]
            record["judge"] = judged


def _judge_verdict(
    mode: ScoringMode, item: StaticItem, response: str, reply: str | None
) -> JudgeScore | None:
    """The judge's verdict; a reply the mode cannot read (it raises) is an unusable verdict, not a crash."""
    if reply is None or mode.judge_score is None:
        return None
    try:
        return mode.judge_score(item, response, reply)
    except Exception as error:  # an unreadable judge reply is counted as unusable in the judge section
        return JudgeScore(
            None, False, f"the judge reply could not be read: {type(error).__name__}: {_clip(str(error))}"
        )


def _read_judgments(path: Path) -> dict[str, dict[str, Any]]:
    if not path.is_file():
        return {}
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return {
        row["key"]: {"reply": row.get("reply"), "error": row.get("error")}
        for row in rows
        if row.get("reply") is not None
    }


def _judge_reply(judge: Backend, prompt: str) -> dict[str, Any]:
    try:
        return {"reply": judge.generate(judge_messages(prompt)).text, "error": None}
    except Exception as error:  # a judge failure is reported on the sample, never replaced
        return {"reply": None, "error": f"judge failed: {type(error).__name__}: {error}"}


# --------------------------------------------------------------------------------------------------------
# Summary and files


def summarize(
    spec: BenchmarkSpec,
    mode: ScoringMode,
    items: Sequence[StaticItem],
    records: Sequence[SampleRecord],
    config: RunConfig,
    predictions: Mapping[str, Prediction],
) -> StaticSummary:
    """The mode's summary over the completed items, plus coverage: errored items (no answer: the backend
    failed), items without predictions, answers the scorer could not handle, samples that needed a judge,
    the errors the backend injected on purpose. A run with errored or missing items is marked incomplete."""
    completed = [r for r in records if r["error"] is None]
    clusters = {item.item_id: media_cluster(item) for item in items}
    # the cluster key travels to the mode's summary only (intervals), never into samples.jsonl
    clustered = [{**r, "cluster": clusters.get(r["item_id"], r["item_id"])} for r in completed]
    mode_summary = mode.summarize(items, clustered, {"weights": config.weights})
    mode_summary.setdefault("headline_ci", {})
    mode_summary["intervals"] = {
        "confidence": CONFIDENCE,
        "cluster_key": "the item's media: image paths, the video, or image bytes' SHA-256",
        "clusters": len({clusters[r["item_id"]] for r in completed if r["item_id"] in clusters}),
        "method": "right/wrong: Wilson, or the clustered SE when items share media; graded: the "
        "(cluster) percentile bootstrap; macro means: the groups' intervals combined",
    }
    counts = mode_summary["counts"]
    counts.update(items=len(items), completed=len(completed), errors=len(records) - len(completed))
    counts["missing_predictions"] = sum(1 for item in items if item.item_id not in predictions)
    counts["scoring_errors"] = sum(1 for r in completed if r.get("scoring_error"))
    counts["needs_judge_unavailable"] = sum(1 for r in completed if r.get("needs_judge"))
    agent = [g["agent"] for r in completed if (g := r.get("generation")) and g.get("agent")]
    if agent:
        from benchmarks.static.agent_run import sum_counters

        counts["agent"] = sum_counters(agent)
    injected = [r["injected_error"] for r in completed if r.get("injected_error")]
    if injected:
        counts["injected_errors"] = {kind: injected.count(kind) for kind in sorted(set(injected))}
        counts["injected_unusable"] = sum(1 for kind in injected if expected_effect(kind) == "unusable")
    summary = static_summary(
        mode_summary, status=run_status(counts), benchmark=spec.name, mode=mode.name, reference=spec.reference
    )
    if mode.differences:
        summary["mode_differences"] = list(mode.differences)
    if mode.headline_note:
        summary["headline_note"] = mode.headline_note
    return summary


def run_status(counts: Mapping[str, Any]) -> str:
    """``"complete"``, or ``"incomplete: ..."`` saying how many of how many items have no result and why."""
    errors, missing, total = counts["errors"], counts["missing_predictions"], counts["items"]
    if not errors and not missing:
        return "complete"
    parts = [f"{errors} of {total} items errored"] if errors else []
    parts += [f"{missing} of {total} items have no prediction"] if missing else []
    return f"incomplete: {', '.join(parts)}; metrics are over the {counts['completed']} completed items"


def write_results(
    out_dir: Path,
    spec: BenchmarkSpec,
    mode: ScoringMode,
    style: str,
    config: RunConfig,
    records: Sequence[SampleRecord],
    summary: StaticSummary,
) -> None:
    """samples.jsonl, summary.json/.md, tables/*.csv and the bar chart."""
    report.write_jsonl(out_dir / "samples.jsonl", report.records_in_order(records))
    report.write_json(out_dir / "summary.json", summary)
    context = {
        "benchmark": spec.title,
        "mode": mode.name,
        "prompt_style": style,
        "model": config.model or f"predictions {config.score_only.name if config.score_only else ''}",
    }
    if config.policy == "agent":
        context["policy"] = f"SpatialAgent {config.agent_paradigm}, {config.agent_tools} tools"
    (out_dir / "summary.md").write_text(
        report.summary_markdown(f"{spec.title}: {mode.name}", summary, context), encoding="utf-8"
    )
    report.write_tables(out_dir / "tables", summary["tables"])
    chart = summary.get("chart")
    if config.plot and chart:
        report.bar_chart(
            out_dir / "plots" / "by_category.png",
            summary["tables"][chart["table"]],
            chart["label"],
            chart["value"],
            f"{spec.title} ({mode.name})",
        )
