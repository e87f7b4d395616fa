"""``--perturb`` on CALVIN: the clean control arm and the variants run in one invocation, the scripted expert
certifies each variant once (the cache holds it), and the policy sees the paraphrase table's entry or the
original instruction, never the variant's key."""

from __future__ import annotations

import json

from benchmarks.calvin import main
from benchmarks.core import RunDir
from envs.calvin.instructions import instruction_for
from envs.calvin.perturbations import paraphrase_instruction


def run(tmp_path, *args):
    return main(["--output", str(tmp_path), "--no-progress", "--cameras", "none", *args])


def records_of(tmp_path, label):
    return [r["result"] for r in RunDir(tmp_path / "calvin" / label).merged_records()]


def test_perturbed_run_has_clean_arm_certified_variants_and_cached_certificates(tmp_path):
    args = ("--tasks", "open_drawer", "--num-sequences", "1", "--perturb", "paraphrase:2,block_positions:1")
    summary = run(tmp_path, *args)
    records = records_of(tmp_path, "expert")
    variants = [r for r in records if r["extras"].get("perturbation")]
    assert len(records) == 3 and len(variants) == 2
    assert all(r["extras"]["certified"] and not r["extras"]["certificate"]["cached"] for r in variants)
    assert {r["extras"]["episode_id"] for r in records} == {"chain-0004"}  # the clean key, for pairing
    table = summary.data["robustness"]
    assert set(table["axes"]) == {"paraphrase", "block_positions"} and table["clean"]["episodes"] == 1
    assert table["axes"]["paraphrase"]["2"]["certification_rate"] == 100.0
    assert summary.data["chains"] == 1  # the headline is the clean arm
    assert "| block_positions | 1 |" in summary.markdown
    cache = json.loads((tmp_path / "calvin" / "certificates.json").read_text())
    assert len(cache["certificates"]) == 2

    run(tmp_path, *args, "--run-name", "again")
    again = records_of(tmp_path, "again")
    assert all(r["extras"]["certificate"]["cached"] for r in again if r["extras"].get("perturbation"))


def test_the_policy_gets_the_paraphrase_and_the_clean_replay_key(tmp_path):
    log = tmp_path / "instructions.txt"
    common = ("--tasks", "open_drawer", "--num-sequences", "1", "--ep-len", "2", "--perturb", "paraphrase:3")
    kwargs = json.dumps({"path": str(log)})
    run(
        tmp_path,
        *common,
        "--policy",
        "tests.user_policy_example:InstructionRecorder",
        "--policy-kwargs",
        kwargs,
    )
    seen = set(log.read_text().splitlines())
    assert seen == {instruction_for("open_drawer"), paraphrase_instruction("open_drawer", 3)}

    actions = tmp_path / "actions.jsonl"
    actions.write_text(json.dumps({"key": "chain-0004/0", "actions": [[0, 0, 0, 0, 0, 0, 1]] * 2}) + "\n")
    run(tmp_path, *common, "--policy", "replay", "--replay-file", str(actions))
    replayed = [r["extras"]["subtasks"][0] for r in records_of(tmp_path, "replay")]
    assert [s["idle_steps"] for s in replayed] == [0, 0]  # the variant found the clean chain's actions
