"""The family-agnostic robustness flow: clean units run alone, a variant is certified by the expert (once,
through the cache) before the policy runs it, and the summary's headline is the clean arm."""

from __future__ import annotations

import json

from benchmarks.core import Summary, WorkUnit
from benchmarks.robustness import (
    CertificateCache,
    RobustnessArgs,
    certificates_path,
    robustness_summary,
    robustness_units,
    run_certified,
)
from envs.calvin.perturbations import FAMILY as CALVIN
from envs.navigation.perturbations import FAMILY

EPISODE = {"episode_id": "e0", "n": 1}
_RECORD = {"steps": 3, "policy_calls": 3, "idle_steps": 0, "policy_stats": {}}


def _run(unit, cache, calls, expert_success=True):
    def policy(perturbation):
        calls.append(("policy", perturbation))
        return {**_RECORD, "success": perturbation is None, "extras": {"episode_id": "e0"}}

    def expert(perturbation):
        calls.append(("expert", perturbation))
        return {**_RECORD, "success": expert_success, "extras": {}}

    return run_certified(
        unit,
        cache,
        family="fam",
        expert="exp",
        episode=EPISODE,
        episode_id="e0",
        run_policy=policy,
        run_expert=expert,
    )


def test_clean_unit_runs_the_policy_alone_and_a_variant_is_certified_first(tmp_path):
    args = RobustnessArgs(perturb="paraphrase:2")
    path = certificates_path(None, tmp_path / "run")
    assert path == tmp_path / "certificates.json"
    clean, variant = robustness_units([WorkUnit(0, "e0", 7, {"episode": EPISODE})], args, path, FAMILY)
    cache, calls = CertificateCache(path), []
    record = _run(clean, cache, calls)
    assert calls == [("policy", None)] and "certified" not in record["extras"]
    calls.clear()
    record = _run(variant, cache, calls, expert_success=False)
    spec = {"axis": "paraphrase", "level": 2, "seed": 7}
    assert calls == [("expert", spec), ("policy", spec)]
    assert record["extras"]["perturbation"] == spec and record["extras"]["certified"] is False
    calls.clear()
    again = _run(variant, cache, calls)
    assert calls == [("policy", spec)] and again["extras"]["certificate"]["cached"]


def test_summary_headline_is_the_clean_arm_and_certificates_are_saved(tmp_path):
    args, path = RobustnessArgs(perturb="paraphrase:2"), tmp_path / "c.json"
    units = robustness_units([WorkUnit(0, "e0", 7, {"episode": EPISODE})], args, path, FAMILY)
    cache = CertificateCache(path)
    records = [{"key": u.key, "status": "ok", "result": _run(u, cache, [])} for u in units]
    seen = []

    def clean_summary(results, tally):
        seen.append((len(results), tally.total, tally.completed))
        return Summary({"episodes": len(results)}, "# clean\n", {})

    summary = robustness_summary(records, args, path, clean_summary, 1)
    assert seen == [(1, 1, 1)]
    assert summary.data["robustness"]["axes"]["paraphrase"]["2"]["certification_rate"] == 100.0
    assert summary.markdown.startswith("# clean\n") and "| paraphrase | 2 |" in summary.markdown
    assert len(json.loads(path.read_text())["certificates"]) == 1


def test_a_same_physics_variant_gets_the_clean_episodes_certificate(tmp_path):
    """With ``axes_family``, variants on axes declared same_physics share one expert run of the clean
    episode; other axes are certified on their own spec; without it every variant is."""
    cache, calls = CertificateCache(tmp_path / "c.json"), []

    def certify(axis, level, axes_family=CALVIN):
        unit = WorkUnit(
            0, f"e0~{axis}:{level}", 7, {"perturbation": {"axis": axis, "level": level, "seed": 7}}
        )
        record = run_certified(
            unit,
            cache,
            family="fam",
            expert="exp",
            episode=EPISODE,
            episode_id="e0",
            run_policy=lambda p: {**_RECORD, "success": True, "extras": {}},
            run_expert=lambda p: calls.append(p) or {**_RECORD, "success": True, "extras": {}},
            axes_family=axes_family,
        )
        return record["extras"]["certificate"]

    first, second = certify("camera", 1), certify("paraphrase", 5)
    assert calls == [None] and first["key"] == second["key"] and second["cached"]
    assert first["axis"] is None and first["certified"]
    certify("block_positions", 2)
    assert calls == [None, {"axis": "block_positions", "level": 2, "seed": 7}]
    certify("lighting", 3, axes_family=None)
    assert calls[-1] == {"axis": "lighting", "level": 3, "seed": 7}
