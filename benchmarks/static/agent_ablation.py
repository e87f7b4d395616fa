"""``python -m benchmarks.static agent-ablation``: seeing versus reasoning, per question kind, on a generated set.

The same core (``--model``) answers the set through SpatialAgent once per tool set: ``none`` (no perception
tools), ``cv`` (OpenCV only), ``mixed`` (OpenCV where it has a tool, simulator truth elsewhere) and ``truth``
(every tool from the simulator), and ``learned`` with ``--depth-model`` (depth from that model). With truth tools the remaining error is the core's reasoning (reading,
planning, combining); the gap between truth tools and a perception backend is that backend's perception error.
Writes ``ablation.json`` and ``ablation.md`` next to the four runs (each a normal run folder).
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.static.config import RunConfig, build_parser
from policies.backends.answer_key import ANSWER_KEY_MODEL
from policies.config_cli import InputError

ORDER = ("none", "cv", "mixed", "learned", "truth")


@dataclass
class AblationConfig:
    """Run SpatialAgent on a generated set with no tools, OpenCV tools, mixed and simulator-truth tools."""

    data: Path = Path()
    """The generated set's SpatialScore.json (python -m benchmarks.static generate)."""
    model: str = ANSWER_KEY_MODEL
    """The core model (as for --model; 'answer-key': a perfect reasoner that sees only tool outputs)."""
    api_base: str | None = None
    """OpenAI-compatible endpoint serving --model."""
    output: Path = Path("outputs")
    """Results root; the runs go to OUTPUT/agent-ablation-PARADIGM/spatialscore/TOOLS/."""
    agent_paradigm: str = "plan-execute"
    """plan-execute or react."""
    tool_sets: str = "none,cv,mixed,truth"
    """Comma-separated tool sets to compare (truth must be one: it is the reference; learned needs --depth-model)."""
    depth_model: Path | None = None
    """Local depth-model folder for the learned tool set."""
    limit: int | None = None
    """Only the first N items."""
    answer_key_error_rate: float = field(default=0.0, metadata={"former": ("--oracle-error-rate",)})
    """--model answer-key: rate of injected output errors (as for a normal run)."""


def run_ablation(config: AblationConfig) -> dict[str, Any]:
    """Run every tool set and compare them per question kind; returns the report (also written to disk)."""
    from benchmarks.static.runner import run

    sets = [s.strip() for s in config.tool_sets.split(",") if s.strip()]
    if "truth" not in sets or any(s not in ORDER for s in sets):
        raise InputError(f"--tool-sets {config.tool_sets!r}: choose from {', '.join(ORDER)}, truth included")
    root = config.output / f"agent-ablation-{config.agent_paradigm}"
    rows: dict[str, dict[str, float]] = {}
    overall: dict[str, float | None] = {}
    for tools in sets:
        result = run(
            RunConfig(
                bench="spatialscore",
                data=config.data,
                output=root,
                model=config.model,
                api_base=config.api_base,
                policy="agent",
                agent_paradigm=config.agent_paradigm,
                agent_tools=tools,
                run_name=tools,
                agent_depth_model=config.depth_model if tools == "learned" else None,
                limit=config.limit,
                plot=False,
                answer_key_error_rate=config.answer_key_error_rate,
            )
        )
        rows[tools] = by_kind(result.records)
        overall[tools] = result.summary["headline"]["overall"]
    report = compare(rows, overall, config)
    (root / "ablation.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    (root / "ablation.md").write_text(markdown(report), encoding="utf-8")
    return report


def by_kind(records: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """Mean score (0-100) per question subcategory over the scored records."""
    scores: dict[str, list[float]] = defaultdict(list)
    for record in records:
        if record.get("error") is None and record.get("score") is not None:
            scores[str((record.get("tags") or {}).get("subcategory", "unknown"))].append(
                100.0 * float(record["score"])
            )
    return {kind: sum(v) / len(v) for kind, v in sorted(scores.items())}


def compare(
    rows: Mapping[str, Mapping[str, float]], overall: Mapping[str, float | None], config: AblationConfig
) -> dict[str, Any]:
    """Per kind: each tool set's score, reasoning error (100 - truth) and perception error (truth - set)."""
    kinds = sorted({k for row in rows.values() for k in row})
    table = []
    for kind in [*kinds, "overall"]:
        scores = {t: (overall[t] if kind == "overall" else rows[t].get(kind)) for t in rows}
        truth = scores["truth"]
        entry: dict[str, Any] = {
            "kind": kind,
            "scores": scores,
            "reasoning_error": None if truth is None else 100.0 - truth,
        }
        entry["perception_error"] = {
            t: (None if truth is None or s is None else truth - s) for t, s in scores.items() if t != "truth"
        }
        table.append(entry)
    return {
        "model": config.model,
        "paradigm": config.agent_paradigm,
        "data": str(config.data),
        "tool_sets": list(rows),
        "table": table,
        "notes": [
            "reasoning_error = 100 - score with truth tools; perception_error[X] = truth score - score with tool set X"
        ],
    }


def markdown(report: Mapping[str, Any]) -> str:
    """The comparison as a Markdown table."""
    sets = report["tool_sets"]
    others = [s for s in sets if s != "truth"]
    head = ["kind", *sets, "reasoning error", *(f"perception error ({s})" for s in others)]
    lines = [
        f"# SpatialAgent ablation: {report['model']}, {report['paradigm']}",
        "",
        "| " + " | ".join(head) + " |",
        "|" + "---|" * len(head),
    ]
    fmt = lambda v: "n/a" if v is None else f"{v:.1f}"  # noqa: E731
    for row in report["table"]:
        cells = [
            row["kind"],
            *(fmt(row["scores"][s]) for s in sets),
            fmt(row["reasoning_error"]),
            *(fmt(row["perception_error"][s]) for s in others),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join([*lines, "", *report["notes"]]) + "\n"


def main(argv: list[str] | None = None) -> int:
    """``python -m benchmarks.static agent-ablation --data SET/SpatialScore.json [--model M] ...``."""
    parser = build_parser(AblationConfig)
    parser.prog = "python -m benchmarks.static agent-ablation"
    config = AblationConfig(**vars(parser.parse_args(argv)))
    if config.data == Path():
        raise InputError("--data is required: a generated set's SpatialScore.json")
    report = run_ablation(config)
    print(markdown(report), end="")
    print(f"results: {config.output / f'agent-ablation-{config.agent_paradigm}'}", file=sys.stderr)
    return 0
