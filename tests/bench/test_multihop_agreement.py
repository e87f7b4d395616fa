"""bench/multihop_agreement.py: upstream's records agree with multihop-repo, and a differing record is reported."""

import json

import pytest

from bench import multihop_agreement as bench

needs_records = pytest.mark.skipif(
    not bench.RECORDS.is_file(), reason="needs shared/data's MultihopSpatial records"
)


@needs_records
def test_upstream_records_agree_and_a_changed_one_is_named():
    rows = json.loads(bench.RECORDS.read_text())
    measured = bench.compare(rows)
    assert measured["items"] == len(rows) and measured["items_agreeing"] == len(rows)
    assert measured["mcq_accuracy_here"] == measured["mcq_accuracy_upstream"]
    rows[3] = {**rows[3], "score": not rows[3]["score"], "iou": 0.123}
    measured = bench.compare(rows)
    assert measured["items_agreeing"] == len(rows) - 1
    assert measured["differing"] == [
        {
            "id": rows[3]["id"],
            "upstream_vs_here": {
                "iou": [0.123, bench.rescore(rows[3])["iou"]],
                "score": [rows[3]["score"], not rows[3]["score"]],
            },
        }
    ]
    assert measured["mcq_accuracy_here"] != measured["mcq_accuracy_upstream"]


@needs_records
def test_main_writes_a_results_file_and_exits_1_on_a_difference(tmp_path, capsys):
    out = tmp_path / "agreement.json"
    assert bench.main(["--json", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data["metrics"]["items_agreeing"] == data["metrics"]["items"] and data["differing"] == []
    assert all(data[key] for key in ("title", "date", "machine", "source"))
    rows = json.loads(bench.RECORDS.read_text())
    rows[0]["prediction"] = "(z) nothing"
    changed = tmp_path / "changed.json"
    changed.write_text(json.dumps(rows))
    assert bench.main(["--records", str(changed)]) == 1


def test_a_missing_records_file_is_bad_input(tmp_path, capsys):
    assert bench.main(["--records", str(tmp_path / "none.json")]) == 2
    assert "none.json: no such file" in capsys.readouterr().err
