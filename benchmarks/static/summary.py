"""Building blocks shared by the benchmarks' summaries: counts, grouped tables, judge sections.

A summary is a JSON-safe dict: ``headline`` (the numbers a paper reports), ``counts`` (what could not be
parsed or scored), ``tables`` (name -> {"columns", "rows"}), ``chart`` (which table to plot) and ``notes``.
Scores in summaries are percentages.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any

from benchmarks.scoring.aggregate import group_table, percent
from benchmarks.scoring.metrics import mean
from benchmarks.stats import intervals

Record = Mapping[str, Any]


def counts(records: Sequence[Record]) -> dict[str, int]:
    """How many samples were scored, unscored, unparsable, failed, judged."""
    return {
        "samples": len(records),
        "scored": sum(1 for r in records if r.get("score") is not None),
        "unscored": sum(1 for r in records if r.get("score") is None and not r.get("error")),
        "parse_failures": sum(1 for r in records if not (r.get("parse") or {}).get("ok", True)),
        "errors": sum(1 for r in records if r.get("error")),
        "judged": sum(1 for r in records if (r.get("judge") or {}).get("ok")),
    }


def mean_score(records: Sequence[Record]) -> float | None:
    """Mean rule-based score (percent) over scored records."""
    return percent(mean(float(r["score"]) for r in records if r.get("score") is not None))


def table(rows: list[dict[str, Any]], columns: Sequence[str] | None = None) -> dict[str, Any]:
    """A table in summary form; columns default to the first row's keys."""
    return {"columns": list(columns or (rows[0].keys() if rows else [])), "rows": rows}


def grouped(records: Sequence[Record], key: Callable[[Record], Hashable], label: str) -> dict[str, Any]:
    """Per-group table ``label, n, scored, score, score_ci, parse_failures`` (``score_ci``: the 95 % interval
    of the group's score, in percent)."""
    return table(
        group_table(records, key, label), [label, "n", "scored", "score", "score_ci", "parse_failures"]
    )


def score_estimate(records: Sequence[Record]) -> intervals.Interval:
    """:func:`mean_score` (percent) with its 95 % interval: :func:`benchmarks.stats.intervals.score_interval`
    over the scored records, clustered by their ``cluster`` key (the runner sets it from the item's media)."""
    scored = [r for r in records if r.get("score") is not None]
    clusters = [r.get("cluster", i) for i, r in enumerate(scored)]
    return intervals.score_interval([float(r["score"]) for r in scored], clusters).scaled(100)


def score_ci(records: Sequence[Record]) -> list[float] | None:
    """The 95 % interval (percent) of :func:`mean_score`, as :func:`score_estimate` makes it."""
    return score_estimate(records).bounds()


def macro_ci(rows: Sequence[Mapping[str, Any]]) -> list[float] | None:
    """The 95 % interval (percent) of :func:`macro_mean`: the rows' intervals combined as independent
    estimates (:func:`benchmarks.stats.intervals.macro_mean`)."""
    parts = [
        intervals.Interval(r["score"], r["score_ci"][0], r["score_ci"][1], r.get("scored", 0), "")
        if r.get("score_ci")
        else intervals.Interval(r["score"], None, None, r.get("scored", 0), "")
        for r in rows
        if r.get("score") is not None
    ]
    return intervals.macro_mean(parts, bounds=(0.0, 100.0)).bounds()


def tag(name: str, default: str = "unknown") -> Callable[[Record], Hashable]:
    """Key function reading ``record["tags"][name]``."""
    return lambda record: (record.get("tags") or {}).get(name, default)


def macro_mean(rows: Sequence[Mapping[str, Any]]) -> float | None:
    """Unweighted mean of the ``score`` column over rows that have one."""
    return mean(r["score"] for r in rows if r.get("score") is not None)


def judge_section(records: Sequence[Record]) -> dict[str, Any] | None:
    """Judge results, separate from the rule-based score; ``None`` when no sample went to a judge."""
    asked = [r for r in records if r.get("judge") is not None]
    if not asked:
        return None
    ok = [r for r in asked if r["judge"].get("ok")]
    return {
        "asked": len(asked),
        "answered": len(ok),
        "unusable_replies": len(asked) - len(ok),
        "mean_judge_score": percent(mean(float(r["judge"]["score"]) for r in ok)),
    }


def by_item(items: Sequence[Any]) -> dict[str, Any]:
    """Items keyed by id."""
    return {item.item_id: item for item in items}
