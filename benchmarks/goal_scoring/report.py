"""Scoring a dataset's predictions and writing the results: records, summary, markdown table, histogram.

Outputs in the run directory: ``records.jsonl`` (one scored sample per line), ``summary.json``,
``summary.md``, ``plots/score_histogram.png`` and ``manifest.json`` (config, versions, git revision).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.core.jsonsafe import json_safe
from benchmarks.core.manifest import build_manifest
from benchmarks.goal_scoring.dataset import DatasetError, GoalDataset, write_jsonl
from benchmarks.scoring.goal import BatchScorer, GoalReference, GoalScore, ManipulationWeights, get_scorer
from benchmarks.stats.intervals import BOOTSTRAP, WILSON, bootstrap_mean, cell, described, wilson

HISTOGRAM_BINS = 20


def match_predictions(
    dataset: GoalDataset, outputs: Mapping[str, str], *, allow_missing: bool = False
) -> list[str | None]:
    """The output text of each sample in dataset order; ``None`` for a missing one (only if allowed)."""
    extra = sorted(set(outputs) - {s.id for s in dataset})
    if extra:
        raise DatasetError(
            f"{len(extra)} prediction(s) name samples not in the dataset, e.g. {extra[:3]}. "
            "Fix: score against the dataset the predictions were made for"
        )
    missing = [s.id for s in dataset if s.id not in outputs]
    if missing and not allow_missing:
        raise DatasetError(
            f"{len(missing)} sample(s) have no prediction, e.g. {missing[:3]}. Fix: finish the "
            "`predict` run, or pass --allow-missing to score them 0 (reported as missing)"
        )
    return [outputs.get(s.id) for s in dataset]


def score_dataset(
    dataset: GoalDataset, texts: Sequence[str | None], scorer: str, weights: ManipulationWeights | None = None
) -> list[GoalScore | None]:
    """Scores in dataset order; ``None`` where the prediction is missing. An answer the scorer cannot
    handle (it raises) scores 0 as a parse failure with the error recorded, and the others are scored."""
    present = [i for i, t in enumerate(texts) if t is not None]
    batch = get_scorer(scorer, weights=weights)
    answers, refs = [texts[i] for i in present], [dataset.samples[i].reference() for i in present]
    try:
        scores = batch(answers, refs)  # type: ignore[arg-type]
    except Exception:  # some answer breaks the batch: score one by one so only that answer is lost
        scores = [_score_one(batch, text, ref, scorer) for text, ref in zip(answers, refs)]  # type: ignore[arg-type]
    out: list[GoalScore | None] = [None] * len(texts)
    for i, score in zip(present, scores):
        out[i] = score
    return out


def _score_one(batch: BatchScorer, text: str, ref: GoalReference, scorer: str) -> GoalScore:
    try:
        return batch([text], [ref])[0]
    except Exception as error:  # recorded on the sample: value 0, a parse failure with code scoring_error
        why = f"the scorer raised {type(error).__name__}: {str(error)[:200]}"
        return GoalScore(
            0.0,
            scorer,
            ref.kind,
            True,
            f"parse failure, scored 0: {why}",
            parse_errors=[f"scoring_error: {why}"],
            metadata={"failure": "scoring_error"},
        )


def _values(scores: Sequence[GoalScore | None]) -> np.ndarray:
    return np.array([0.0 if s is None else s.value for s in scores])


def _group_summary(scores: Sequence[GoalScore | None], kinds: Sequence[str], scorer: str) -> dict[str, Any]:
    values = _values(scores)
    parsed = [s for s in scores if s is not None and not s.parse_failed]
    out: dict[str, Any] = {
        "n": len(scores),
        "mean_score": float(values.mean()) if len(values) else None,
        # a graded score: the percentile bootstrap over samples (missing answers count 0, as in the mean)
        "mean_score_ci": bootstrap_mean(values).bounds(),
        "mean_score_parsed": float(np.mean([s.value for s in parsed])) if parsed else None,
        "parse_failures": sum(1 for s in scores if s is not None and s.parse_failed),
        "failure_reasons": dict(
            sorted(
                Counter(
                    s.metadata.get("failure", "?") for s in scores if s is not None and s.parse_failed
                ).items()
            )
        ),
        "missing": sum(1 for s in scores if s is None),
    }
    names = sorted({k for s in parsed for k, v in s.components.items() if isinstance(v, float)})
    out["components"] = {k: _nanmean([s.components.get(k, np.nan) for s in parsed]) for k in names}
    manip = [s for s, k in zip(scores, kinds) if k == "manip"]
    if scorer == "lmms-eval" and manip:  # failed and missing answers count as failures, as in lmms-eval
        wins = sum(bool(s and s.metadata.get("binary_success")) for s in manip)
        out["binary_success_rate"] = wins / len(manip)
        out["binary_success_ci"] = wilson(wins, len(manip)).bounds()
    return out


def _nanmean(values: Sequence[float]) -> float | None:
    a = np.array(values, dtype=float)
    a = a[~np.isnan(a)]
    return float(a.mean()) if len(a) else None


def summarize(
    dataset: GoalDataset,
    scores: Sequence[GoalScore | None],
    scorer: str,
    baselines: Mapping[str, Sequence[GoalScore | None]] | None = None,
) -> dict[str, Any]:
    """Overall and per-kind means, parse failures, parser notes, histogram and the baselines' means."""
    kinds = [s.kind for s in dataset]
    notes = Counter(e.split(":", 1)[0] for s in scores if s is not None for e in s.parse_errors)
    counts, edges = np.histogram(_values(scores), bins=HISTOGRAM_BINS, range=(0.0, 1.0))
    parsed = [s.value for s in scores if s is not None and not s.parse_failed]
    parsed_counts, _ = np.histogram(parsed, bins=HISTOGRAM_BINS, range=(0.0, 1.0))
    by_kind = {}
    for kind in sorted(set(kinds)):
        subset = [sc for sc, k in zip(scores, kinds) if k == kind]
        by_kind[kind] = _group_summary(subset, [kind] * len(subset), scorer)
    summary = {
        "scorer": scorer,
        **_group_summary(scores, kinds, scorer),
        "by_kind": by_kind,
        "parser_notes": dict(sorted(notes.items())),
        "histogram": {
            "edges": edges.tolist(),
            "counts": counts.tolist(),
            "counts_parsed": parsed_counts.tolist(),
        },
        "baselines": {
            name: _group_summary(b, kinds, scorer)["mean_score"] for name, b in (baselines or {}).items()
        },
        "intervals": described(mean_score=BOOTSTRAP, binary_success_rate=WILSON),
    }
    return json_safe(summary)


def markdown_table(summary: Mapping[str, Any], label: str) -> str:
    """A markdown table: the predictions, then the baselines, overall and per kind."""
    kinds = list(summary["by_kind"])
    head = [
        "predictions",
        "n",
        "score [95 % interval]",
        "score (parsed only)",
        "parse failures",
        "missing",
        "errored",
        *[f"{k} score" for k in kinds],
    ]
    lines = [
        f"# Goal-image scoring ({summary['scorer']} scorer)",
        "",
        "| " + " | ".join(head) + " |",
        "|" + "---|" * len(head),
    ]
    row = [
        label,
        summary["n"],
        cell(summary["mean_score"], summary.get("mean_score_ci"), ".4f"),
        _fmt(summary["mean_score_parsed"]),
        summary["parse_failures"],
        summary["missing"],
        summary.get("errored", 0),
        *[
            cell(summary["by_kind"][k]["mean_score"], summary["by_kind"][k].get("mean_score_ci"), ".4f")
            for k in kinds
        ],
    ]
    lines.append("| " + " | ".join(map(str, row)) + " |")
    for name, value in summary["baselines"].items():
        if name == label:
            continue
        lines.append(
            "| "
            + " | ".join(
                [f"{name} (reference)", str(summary["n"]), _fmt(value), "", "", "", ""] + [""] * len(kinds)
            )
            + " |"
        )
    lines += _table_notes(summary)
    return "\n".join(lines) + "\n"


def _table_notes(summary: Mapping[str, Any]) -> list[str]:
    """The notes under the table: run status, injected errors, binary success, failure reasons, parser notes."""
    lines: list[str] = []
    if summary.get("status", "complete") != "complete":
        lines += ["", f"**Run {summary['status']}**"]
    if summary.get("injected_errors"):
        kinds = ", ".join(f"{k} ×{v}" for k, v in summary["injected_errors"].items())
        lines += ["", f"Errors injected on purpose: {kinds} ({summary['injected_unusable']} unusable)"]
    if "binary_success_rate" in summary:
        rate = cell(summary["binary_success_rate"], summary.get("binary_success_ci"), ".4f")
        lines += ["", f"lmms-eval binary success rate (manipulation) [95 % Wilson interval]: {rate}"]
    if summary["failure_reasons"]:
        reasons = ", ".join(f"{k} ×{v}" for k, v in summary["failure_reasons"].items())
        lines += ["", f"Parse failures (scored 0) by reason: {reasons}"]
    if summary["parser_notes"]:
        notes = ", ".join(f"{k} ×{v}" for k, v in summary["parser_notes"].items())
        lines += ["", f"Parser notes (kept, see records.jsonl): {notes}"]
    return lines


def _fmt(x: float | None) -> str:
    return "–" if x is None else f"{x:.4f}"


def plot_histogram(summary: Mapping[str, Any], path: Path, label: str) -> None:
    """Bar chart of the score distribution (matplotlib, Agg backend: no display needed)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    edges, counts = summary["histogram"]["edges"], summary["histogram"]["counts"]
    fig, ax = plt.subplots(figsize=(6, 3.5), dpi=100)
    try:
        parsed = summary["histogram"]["counts_parsed"]
        failed = np.subtract(counts, parsed)  # parse failures and missing answers, all scored 0
        bar = {"width": np.diff(edges), "align": "edge", "edgecolor": "black", "linewidth": 0.5}
        ax.bar(edges[:-1], parsed, label="parsed", **bar)
        ax.bar(edges[:-1], failed, bottom=parsed, color="tab:red", label="parse failure / missing (0)", **bar)
        ax.set_ylim(0, max(1, max(counts)) * 1.3)  # headroom for the legend
        ax.legend(loc="upper left", fontsize=8)
        ax.set_xlabel(f"score ({summary['scorer']} scorer)")
        ax.set_ylabel("samples")
        ax.set_title(
            f"{label}: mean {_fmt(summary['mean_score'])}, {summary['parse_failures']} parse failures (score 0)"
        )
        fig.tight_layout()
        path.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path)
    finally:
        plt.close(fig)


def sample_records(dataset: GoalDataset, scores: Sequence[GoalScore | None]) -> list[dict[str, Any]]:
    """``records.jsonl`` rows: the sample's identity and its full scored breakdown."""
    rows = []
    for sample, score in zip(dataset, scores):
        base = {"id": sample.id, "kind": sample.kind, "source": sample.source}
        rows.append({**base, "missing": True, "value": 0.0} if score is None else {**base, **score.to_json()})
    return rows


def write_report(
    out_dir: Path,
    dataset: GoalDataset,
    scores: Sequence[GoalScore | None],
    summary: Mapping[str, Any],
    label: str,
) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    write_jsonl(out_dir / "records.jsonl", sample_records(dataset, scores))
    (out_dir / "summary.json").write_text(
        json.dumps(summary, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    (out_dir / "summary.md").write_text(markdown_table(summary, label), encoding="utf-8")
    plot_histogram(summary, out_dir / "plots" / "score_histogram.png", label)


# --------------------------------------------------------------------------------------------------------
# Provenance: the shared manifest schema of every benchmark run


def write_manifest(
    out_dir: Path, command: str, config: Mapping[str, Any], extra: Mapping[str, Any] | None = None
) -> None:
    """``manifest.json`` via :func:`benchmarks.core.manifest.build_manifest`: the command and its config,
    package versions, git revision, machine and start time, plus ``extra`` (dataset and predictions hashes)."""
    manifest = build_manifest(f"goal_scoring.{command}", dict(config), dict(extra or {}))
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "manifest.json").write_text(
        json.dumps(json_safe(manifest), indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
    )
