import json

from benchmarks.embodied import main
from benchmarks.evidence.runs import load_run


def test_a_decided_sequential_run_holds_only_the_units_its_verdict_rests_on(tmp_path):
    main(["nav", "--output", str(tmp_path), "--no-progress", "--image-size", "64", "--episodes", "3"])
    stop = ["--stop-when-decided", "--against", "0.3"]
    main(
        [
            "nav",
            "--output",
            str(tmp_path / "seq"),
            "--no-progress",
            "--image-size",
            "64",
            "--episodes",
            "3",
            *stop,
        ]
    )
    folder = tmp_path / "seq" / "embodied-nav" / "expert"
    used = json.loads((folder / "summary.json").read_text())["sequential"]["units_used"]
    # a unit another worker finished after the decision: in records.jsonl, but not a result
    later = (tmp_path / "embodied-nav" / "expert" / "records.jsonl").read_text().splitlines()[used]
    with (folder / "records.jsonl").open("a") as f:
        f.write(later + "\n")
    assert len(load_run(folder).units) == used < 15
    assert len(load_run(tmp_path / "embodied-nav" / "expert").units) == 15
