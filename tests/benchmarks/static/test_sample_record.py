"""The static run's typed per-sample record and summary (``benchmarks.static.sample_record``): what the runner
writes reads back through the schema unchanged, a record written before the schema reads the same, and a
mapping that is not a record is refused naming what it lacks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.static.config import RunConfig
from benchmarks.static.runner import run
from benchmarks.static.sample_record import SAMPLE_FIELDS, SUMMARY_FIELDS, read_sample, read_summary
from tests.static_helpers import ScriptedBackend, write_spatialscore

#: A samples.jsonl line as the runner wrote it before the schema (an errored item), byte for byte.
OLD_ERRORED = (
    '{"answer": "A", "benchmark": "spatialscore", "category": "Point and Object Tracking", "correct": null, '
    '"error": "ConnectionError: scripted failure", "explanation": "no response", "generation": null, "index": 1, '
    '"item_id": "8740", "judge": null, "metrics": {}, "mode": "project", "parse": null, "response": null, '
    '"score": null, "scorer": null, "tags": {"input_modality": "multi-images", "question_type": "multi-choice", '
    '"source": "MMIU", "subcategory": "Point Correspondence"}, "task": "mcq"}'
)


def test_the_written_records_and_summary_read_back_through_the_schema(tmp_path: Path) -> None:
    backend = ScriptedBackend(
        lambda prompt: "A", fail_on=lambda n, prompt: "Which point corresponds" in prompt
    )
    config = RunConfig(
        bench="spatialscore",
        data=write_spatialscore(tmp_path / "data"),
        output=tmp_path / "out",
        model="scripted-fake",
        batch_size=1,
    )
    result = run(config, backend=backend)
    lines = (result.out_dir / "samples.jsonl").read_text(encoding="utf-8").splitlines()
    records = [read_sample(json.loads(line)) for line in lines]
    assert records == result.records and len(records) == 4
    assert all(list(record)[: len(SAMPLE_FIELDS)] == list(SAMPLE_FIELDS) for record in result.records)
    errored = records[1]
    assert errored["error"] == "ConnectionError: scripted failure" and errored["score"] is None
    # the file as before the schema
    assert json.dumps(errored, sort_keys=True, ensure_ascii=False) == OLD_ERRORED
    summary = read_summary(json.loads((result.out_dir / "summary.json").read_text(encoding="utf-8")))
    assert summary == result.summary and [k for k in result.summary if k in SUMMARY_FIELDS] == list(
        SUMMARY_FIELDS
    )
    assert (
        summary["status"].startswith("incomplete: 1 of 4 items errored") and summary["counts"]["errors"] == 1
    )


def test_an_old_record_reads_unchanged_and_a_non_record_is_refused() -> None:
    old = json.loads(OLD_ERRORED)
    assert read_sample(old) == old
    with pytest.raises(ValueError, match=r"not a static sample record: no score, correct, parse, scorer"):
        read_sample({k: v for k, v in old.items() if k not in ("score", "correct", "parse", "scorer")})
    with pytest.raises(ValueError, match=r"not a static summary: no status"):
        read_summary(
            {
                "headline": {},
                "counts": {},
                "judge": None,
                "tables": {},
                "chart": None,
                "notes": [],
                "benchmark": "x",
                "mode": "project",
                "reference": {},
            }
        )
