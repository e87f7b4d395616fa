"""``--perturb`` on EB navigation: the clean control arm and the variants run in one invocation, the expert
certifies each variant once (the cache holds it), and the records carry per-variant outcomes."""

from __future__ import annotations

import json

from benchmarks.core import RunDir
from benchmarks.embodied import main


def run(tmp_path, *args):
    return main(
        ["nav", "--output", str(tmp_path), "--no-progress", "--image-size", "48", "--subset", "base", *args]
    )


def test_perturbed_run_has_clean_arm_variants_and_cached_certificates(tmp_path):
    args = ("--episodes", "2", "--perturb", "paraphrase:2,image_noise:5", "--policy", "random")
    summary = run(tmp_path, *args)
    records = [r["result"] for r in RunDir(tmp_path / "embodied-nav" / "random").merged_records()]
    variants = [r for r in records if r["extras"].get("perturbation")]
    assert len(records) == 6 and len(variants) == 4
    assert all(
        isinstance(r["extras"]["certified"], bool) and not r["extras"]["certificate"]["cached"]
        for r in variants
    )
    table = summary.data["robustness"]
    assert set(table["axes"]) == {"paraphrase", "image_noise"} and table["clean"]["episodes"] == 2
    cell = table["axes"]["paraphrase"]["2"]
    assert cell["variants"] == 2 and cell["certification_rate"] is not None
    assert summary.data["episodes"] == 2  # the headline is the clean arm
    assert "| paraphrase | 2 |" in summary.markdown
    assert (
        tmp_path / "embodied-nav" / "random" / "plots" / "robustness_by_level.png"
    ).stat().st_size > 10_000
    cache = json.loads((tmp_path / "embodied-nav" / "certificates.json").read_text())
    assert len(cache["certificates"]) == 4

    run(tmp_path, *args, "--run-name", "again")
    again = [r["result"] for r in RunDir(tmp_path / "embodied-nav" / "again").merged_records()]
    assert all(r["extras"]["certificate"]["cached"] for r in again if r["extras"].get("perturbation"))
