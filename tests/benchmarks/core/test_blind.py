"""Blind baselines: the committed measurement, and the rows summaries build from it."""

import json

import pytest

from benchmarks.core.blind import BLIND_RESULTS, blind_baselines, blind_table_rows

FAMILIES = ("nav", "manip", "calvin", "libero")


@pytest.fixture(scope="module")
def committed():
    return json.loads(BLIND_RESULTS.read_text())


@pytest.mark.parametrize("family", FAMILIES)
def test_every_closed_loop_family_has_random_and_the_best_constant(committed, family):
    entry = committed["families"][family]
    assert {"n", "seed", "date", "machine", "scope", "best_constant"} <= set(entry)
    policies = entry["policies"]
    assert "error" not in policies["random"] and "errored_units" not in policies["random"]
    constants = {k: v for k, v in policies.items() if k.startswith("constant-")}
    assert len(constants) >= 2 and all("action" in v for v in constants.values())
    best = entry["best_constant"]
    assert policies[best]["score"] == max(v["score"] for v in constants.values() if "error" not in v)


def test_navigation_sampling_keeps_constant_actions_at_most_10_percent_and_the_expert_at_95(committed):
    """Issue 16's acceptance rule for the revised EB navigation sets, on the committed measurement."""
    policies = committed["families"]["nav"]["policies"]
    assert sum(k.startswith("constant-") for k in policies) == 8  # every Discrete(8) action
    for name, values in policies.items():
        if name.startswith("constant-"):
            assert max(values["by_subset"].values()) <= 10.0, name
    assert min(policies["expert"]["by_subset"].values()) >= 95.0
    assert policies["oracle"]["success_rate"] >= policies["expert"]["success_rate"] - 5.0


def test_summary_rows_come_from_the_results_file(tmp_path):
    path = tmp_path / "blind.json"
    assert blind_table_rows("nav", lambda v: [], path) == ([], None)  # nothing measured: no rows
    path.write_text(
        json.dumps(
            {
                "date": "2026-01-02",
                "machine": "m",
                "families": {
                    "nav": {
                        "n": 2,
                        "total_units": 10,
                        "units": "episodes",
                        "scope": "5 subsets x 2",
                        "seed": 0,
                        "best_constant": "constant-3",
                        "policies": {
                            "random": {"score": 4.0, "by_subset": {"base": 4.0}, "blind": True},
                            "constant-0": {"score": 1.0, "action": 0, "blind": True},
                            "constant-3": {
                                "score": 2.0,
                                "action": 3,
                                "blind": True,
                                "by_subset": {"base": 2.0},
                            },
                            "expert": {"score": 100.0, "blind": False},
                        },
                    }
                },
            }
        )
    )
    rows, note = blind_table_rows("nav", lambda v: [f"{v['by_subset']['base']:.1f}"], path)
    assert rows == ["| blind: random | 4.0 |", "| blind: best constant action (3) | 2.0 |"]
    assert "10 episodes" in note and "2026-01-02" in note and "best of 2 constant actions" in note
    assert blind_baselines("calvin", path) is None
    path.write_text("{not json")
    assert blind_baselines("nav", path) is None


def test_summaries_show_the_blind_rows_under_the_model_row(committed):
    from benchmarks.calvin import chain_markdown as calvin_markdown
    from benchmarks.calvin import chain_metrics
    from benchmarks.core import UnitTally
    from benchmarks.embodied import subset_markdown as embodied_markdown

    table = {
        "base": {
            "episodes": 1,
            "success_rate": 100.0,
            "avg_steps": 5.0,
            "avg_planner_calls": 1.0,
            "avg_invalid_actions": 0.0,
            "planner_output_errors": 0.0,
        }
    }
    lines = embodied_markdown(
        "EB-Navigation", "mllm-x", table, 100.0, UnitTally(1, 1, 0), family="nav"
    ).splitlines()
    at = lines.index("| **episodes errored** | 0 / 1 | | | | | |")
    random_base = committed["families"]["nav"]["policies"]["random"]["by_subset"]["base"]
    assert lines[at + 1].split("|") == ["", " blind: random ", "  ", f" {random_base:.1f} ", *["  "] * 4, ""]
    assert lines[at + 2].startswith("| blind: best constant action (")
    calvin = calvin_markdown("vla-x", chain_metrics([2, 3]), {}, UnitTally(2, 2, 0), "builtin")
    assert "| blind: random | " in calvin and "| blind: best constant action ([" in calvin
