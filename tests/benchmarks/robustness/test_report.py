"""The robustness table by hand: drops are paired against the clean arm, uncertified variants are left out
of the scores (unless asked) but counted in the certification rate."""

from __future__ import annotations

from benchmarks.robustness import robustness_markdown, robustness_table


def _record(episode: str, success: bool, axis: str | None = None, level: int = 1, certified: bool = True):
    extras: dict[str, object] = {"episode_id": episode}
    if axis is not None:
        extras.update(perturbation={"axis": axis, "level": level, "seed": 0}, certified=certified)
    return {"success": success, "extras": extras}


RECORDS = [
    _record("a", True),
    _record("b", True),
    _record("c", False),
    _record("a", False, "camera", 1),
    _record("b", True, "camera", 1),
    _record("c", True, "camera", 1, certified=False),
    _record("a", True, "camera", 5),
]


def test_cells_by_hand():
    table = robustness_table(RECORDS)
    assert table["clean"]["episodes"] == 3 and round(table["clean"]["success_rate"], 1) == 66.7
    one = table["axes"]["camera"]["1"]
    assert (one["variants"], one["scored"], one["success_rate"], one["clean_rate"], one["drop"]) == (
        3,
        2,
        50.0,
        100.0,
        50.0,
    )
    assert round(one["certification_rate"], 1) == 66.7 and one["drop_ci"][0] <= 50.0 <= one["drop_ci"][1]
    assert table["axes"]["camera"]["all"]["variants"] == 4
    kept = robustness_table(RECORDS, include_uncertified=True)["axes"]["camera"]["1"]
    assert (kept["scored"], round(kept["success_rate"], 1), round(kept["drop"], 1)) == (3, 66.7, 0.0)


def test_markdown_has_a_row_per_axis_and_level():
    text = robustness_markdown(robustness_table(RECORDS))
    assert (
        "| camera | 1 | 3 | 2 | 50.0" in text
        and "| camera | 5 | 1 | 1 |" in text
        and "Certified variants only" in text
    )
