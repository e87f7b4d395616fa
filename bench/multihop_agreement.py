"""Agreement of ``--mode multihop-repo`` with MultihopSpatial's own scoring, item by item (a benchmark, not a unit
test).

MultihopSpatial's public evaluation results record, for each item, the model's raw response and what the
repository's script computed from it: the parsed prediction, the box, its IoU and the score. This rescores every
raw response with the project's reproduction (``benchmarks.scoring.official.multihop.score_repo``) and counts the
items where all four agree; it also compares the MCQ accuracy from upstream's scores with the one from ours. It
prints one JSON line (``--json`` also writes it as a results file) and exits 1 when any item differs.

    python bench/multihop_agreement.py --json bench/results/multihop_repo_agreement.json
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from benchmarks.scoring.official import multihop

#: The public records (30 of MultihopSpatial's evaluation results of a fine-tuned Qwen3-VL-4B, checkpoint 800).
RECORDS = Path("/work/shared/data/multihop_results_ckpt800_excerpt.json")
FIELDS = ("prediction", "pred_bbox", "iou", "score")


def rescore(row: Mapping[str, Any]) -> dict[str, Any]:
    """The four upstream-computed fields of one record, computed here from its raw response."""
    width, height = (int(v) for v in str(row["image_resolution"]).split("x"))
    record = multihop.score_repo(row["raw_response"], row["answer"], row["bbox"], width, height)
    return {
        "prediction": record.prediction,
        "pred_bbox": record.pred_box,
        "iou": record.iou,
        "score": record.correct,
    }


def compare(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Items compared, agreeing, and each differing item with the fields that differ (upstream's vs ours)."""
    differing = []
    ours = [rescore(row) for row in rows]
    for row, here in zip(rows, ours, strict=True):
        fields = {f: [row[f], here[f]] for f in FIELDS if row[f] != here[f]}
        if fields:
            differing.append({"id": row["id"], "upstream_vs_here": fields})
    n = len(rows)
    return {
        "items": n,
        "items_agreeing": n - len(differing),
        "mcq_accuracy_upstream": round(100 * sum(bool(r["score"]) for r in rows) / n, 2),
        "mcq_accuracy_here": round(100 * sum(bool(r["score"]) for r in ours) / n, 2),
        "differing": differing,
    }


def results_file(records: Path, measured: Mapping[str, Any]) -> dict[str, Any]:
    """The measurement with its provenance, as ``bench/results/*.json`` files state it."""
    return {
        "title": "MultihopSpatial: multihop-repo against the repository's own scoring, item by item",
        "date": datetime.date.today().isoformat(),
        "machine": "any (deterministic: pure functions on committed public records)",
        "source": "bench/multihop_agreement.py, benchmarks/scoring/official/multihop.py",
        "command": f"python bench/multihop_agreement.py --records {records}",
        "setup": f"{records.name}: MultihopSpatial's public evaluation results of a fine-tuned Qwen3-VL-4B "
        "(checkpoint 800), every raw response rescored; agreeing = prediction, box, IoU and score all equal",
        "official": "MultihopSpatial public evaluation results, checkpoint 800",
        "metrics": {k: v for k, v in measured.items() if k != "differing"},
        "differing": measured["differing"],
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--records", type=Path, default=RECORDS, help="MultihopSpatial results file (JSON list)"
    )
    parser.add_argument("--json", type=Path, help="also write the results file here")
    args = parser.parse_args(argv)
    if not args.records.is_file():
        print(f"--records {args.records}: no such file; pass MultihopSpatial's results JSON", file=sys.stderr)
        return 2
    data = results_file(args.records, compare(json.loads(args.records.read_text())))
    if args.json:
        args.json.write_text(json.dumps(data, indent=1) + "\n")
    print(json.dumps(data["metrics"]))
    return 0 if not data["differing"] else 1


if __name__ == "__main__":
    sys.exit(main())
