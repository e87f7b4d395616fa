"""Attribution: probe accuracy on successful and failed episodes, and failed decisions split into "perceived
correctly, acted wrongly" and "misperceived", per run and per group (subset, task), with intervals.

A probed decision is *perceived correctly* when its probes' mean score is at least :data:`PERCEIVED_AT`
(half: letters and yes/no score 0 or 1, distances their MRA), so one hard question does not decide it alone;
a failed decision is a probed decision of a failed episode. Intervals:
probe accuracy by :func:`~benchmarks.stats.intervals.score_interval` clustered by episode (the questions of
one episode share its states), the split likewise over decisions clustered by episode (Wilson over the
episodes where every value is the same, which a clustered SE would call certain); the correlation
across groups is Pearson's r of group probe accuracy against group success rate.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.core import RunDir, Summary
from benchmarks.core.episode_record import read_episode
from benchmarks.core.plots import bar_plot
from benchmarks.stats.intervals import Interval, score_interval, wilson

ALL = "all"
#: A decision is perceived correctly at this mean probe score or above.
PERCEIVED_AT = 0.5


def probe_lines(decisions: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The probe lines of a run's ``decisions.jsonl`` (the policy's own calls left out)."""
    return [line for line in decisions if line.get("probe") is True]


def attribution_table(
    records: Sequence[Mapping[str, Any]], lines: Sequence[Mapping[str, Any]], group: str = "subset"
) -> dict[str, Any]:
    """The attribution of ``records`` (ok records of the run) from their probe ``lines``: ``groups`` (``all``
    first, then each value of ``extras[group]``), ``kinds`` (accuracy per question kind), ``failures`` (each
    failed episode's split), ``correlation`` and ``costs``."""
    by_key: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for line in lines:
        by_key[str(line["key"])].append(line)
    episodes = [e for r in records for e in _episodes(r, by_key.get(str(r["key"]), []), group)]
    names = [ALL, *sorted({e["group"] for e in episodes})]
    groups = {n: _group([e for e in episodes if n in (ALL, e["group"])]) for n in names}
    return {
        "groups": groups,
        "kinds": _kinds(lines),
        "failures": [_failure(e) for e in episodes if not e["success"] and e["decisions"]],
        "correlation": _correlation([groups[n] for n in names[1:]]),
        "costs": _costs(episodes, lines),
        "intervals": "probe accuracy: score_interval clustered by episode; split: clustered by episode",
    }


def _episodes(record: Mapping[str, Any], lines: list[Mapping[str, Any]], group: str) -> list[dict[str, Any]]:
    """The attributed episodes of a record: the episode, or each subtask a CALVIN chain ran (grouped by its
    task, judged by its own success)."""
    result = read_episode(dict(record["result"]))
    subtasks = result["extras"].get("subtasks")
    if not subtasks:
        return [_episode(str(record["key"]), result, lines, str(result["extras"].get(group)), record)]
    timing = list((record.get("timing") or {}).get("subtasks") or [])
    timing += [{}] * (len(subtasks) - len(timing))
    return [
        _episode(
            f"{record['key']}#{i}",
            read_episode(subtask),
            [x for x in lines if x.get("subtask") == i],
            str(subtask["extras"].get("task")),
            {"timing": timing[i]},
        )
        for i, subtask in enumerate(subtasks)
    ]


def _episode(
    key: str, result: Mapping[str, Any], lines: list[Mapping[str, Any]], group: str, record: Mapping[str, Any]
) -> dict[str, Any]:
    decisions: dict[int, list[float]] = defaultdict(list)
    for line in lines:
        decisions[int(line["decision"])].append(float(line["score"]))
    return {
        "key": key,
        "group": group,
        "success": bool(result["success"]),
        "scores": [float(line["score"]) for line in lines],
        "decisions": {d: float(np.mean(v)) >= PERCEIVED_AT for d, v in sorted(decisions.items())},
        "model_calls": float(result["policy_stats"].get("model_calls", 0.0)),
        "episode_s": float((record.get("timing") or {}).get("episode_s") or 0.0),
    }


def _accuracy(episodes: Sequence[Mapping[str, Any]]) -> Interval:
    scores = [s for e in episodes for s in e["scores"]]
    clusters = [e["key"] for e in episodes for _ in e["scores"]]
    return _interval(scores, clusters)


def _interval(values: Sequence[float], clusters: Sequence[str]) -> Interval:
    """:func:`score_interval` clustered by episode; where every value is the same 0 or 1 (a clustered SE of
    0, no interval at all), Wilson over the episodes instead, which still says how few they were."""
    interval = score_interval(values, clusters)
    same = len(set(values)) == 1 and values[0] in (0.0, 1.0)
    if not values or not same or len(set(clusters)) == len(clusters):
        return interval
    episodes = len(set(clusters))
    return wilson(round(values[0]) * episodes, episodes)


def _group(episodes: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    failed = [e for e in episodes if not e["success"]]
    flags = [float(p) for e in failed for p in e["decisions"].values()]
    clusters = [e["key"] for e in failed for _ in e["decisions"]]
    split = _interval(flags, clusters)
    wins = sum(e["success"] for e in episodes)
    every = [float(p) for e in episodes for p in e["decisions"].values()]
    every_split = _interval(every, [e["key"] for e in episodes for _ in e["decisions"]])
    return {
        "episodes": len(episodes),
        "success_rate": _json(wilson(wins, len(episodes))),
        "probe_accuracy": _json(_accuracy(episodes)),
        "probe_accuracy_successes": _json(_accuracy([e for e in episodes if e["success"]])),
        "probe_accuracy_failures": _json(_accuracy(failed)),
        "failed_decisions": len(flags),
        "perceived_acted_wrongly": _json(split),
        "misperceived": _json(_complement(split)),
        "probed_decisions": len(every),
        "misperceived_all": _json(_complement(every_split)),
    }


def _complement(share: Interval) -> Interval:
    def flip(x: float | None) -> float | None:
        return None if x is None else 1.0 - x

    return Interval(flip(share.estimate), flip(share.high), flip(share.low), share.n, share.method)


def _json(interval: Interval) -> dict[str, Any]:
    return {"estimate": interval.estimate, "ci": interval.bounds(), "n": interval.n}


def _kinds(lines: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    kinds: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for line in lines:
        kinds[str(line["kind"])].append(line)
    return {
        kind: {
            **_json(_interval([float(x["score"]) for x in rows], [str(x["key"]) for x in rows])),
            "questions": len(rows),
        }
        for kind, rows in sorted(kinds.items())
    }


def _failure(episode: Mapping[str, Any]) -> dict[str, Any]:
    perceived = sum(episode["decisions"].values())
    scores = episode["scores"]
    return {
        "key": episode["key"],
        "group": episode["group"],
        "decisions": len(episode["decisions"]),
        "perceived_acted_wrongly": perceived,
        "misperceived": len(episode["decisions"]) - perceived,
        "probe_accuracy": float(np.mean(scores)) if scores else None,
    }


def _correlation(groups: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Pearson's r of probe accuracy against success rate across groups (``None`` below 3 groups or when
    either does not vary)."""
    pairs = [
        (g["probe_accuracy"]["estimate"], g["success_rate"]["estimate"])
        for g in groups
        if g["probe_accuracy"]["estimate"] is not None
    ]
    r = None
    if len(pairs) >= 3:
        x, y = np.array(pairs).T
        if x.std() > 0 and y.std() > 0:
            r = float(np.corrcoef(x, y)[0, 1])
    return {"pearson_r": r, "groups": len(pairs)}


def _costs(episodes: Sequence[Mapping[str, Any]], lines: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    probed = [e for e in episodes if e["decisions"]]
    seconds = sum(float(x.get("latency_s") or 0.0) for x in lines)
    calls = sum(e["model_calls"] for e in episodes)
    return {
        "episodes_probed": len(probed),
        "decisions_probed": sum(len(e["decisions"]) for e in episodes),
        "decisions_per_probed_episode": _mean([len(e["decisions"]) for e in probed]),
        "probe_calls": len(lines),
        "probe_calls_per_episode": len(lines) / len(episodes) if episodes else None,
        "policy_model_calls": calls,
        "extra_calls_ratio": len(lines) / calls if calls else None,
        "probe_model_s": round(seconds, 3),
        "episode_s": round(sum(e["episode_s"] for e in episodes), 3),
    }


def _mean(values: Sequence[float]) -> float | None:
    return float(np.mean(values)) if values else None


def _pct(cell: Mapping[str, Any]) -> str:
    estimate, ci = cell["estimate"], cell["ci"]
    if estimate is None or math.isnan(estimate):
        return "n/a"
    if ci is None:  # (one episode: no spread between episodes to take an interval from)
        return f"{100 * estimate:.1f} (n = {cell['n']}, no interval)"
    return f"{100 * estimate:.1f} [{100 * ci[0]:.1f}, {100 * ci[1]:.1f}]"


def attribution_markdown(table: Mapping[str, Any], schedule: str) -> str:
    """The attribution section of summary.md: the split table, accuracy per kind, correlation and costs."""
    lines = [
        f"## Attribution (state probes, `--probe {schedule}`)",
        "",
        "| group | episodes | success % | probe acc. % (successes) | probe acc. % (failures) | failed decisions "
        "| perceived, acted wrongly % | misperceived % | misperceived % (all probed decisions) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, g in table["groups"].items():
        lines.append(
            f"| {name} | {g['episodes']} | {_pct(g['success_rate'])} | {_pct(g['probe_accuracy_successes'])} | "
            f"{_pct(g['probe_accuracy_failures'])} | {g['failed_decisions']} | "
            f"{_pct(g['perceived_acted_wrongly'])} | {_pct(g['misperceived'])} | {_pct(g['misperceived_all'])} |"
        )
    lines += ["", "| probe kind | questions | accuracy % |", "|---|---|---|"]
    lines += [f"| {k} | {v['questions']} | {_pct(v)} |" for k, v in table["kinds"].items()]
    return "\n".join([*lines, "", *_notes(table)]) + "\n"


def attribution_files(table: Mapping[str, Any], title: str) -> dict[str, Callable[[Path], Path]]:
    """``plots/attribution.png``: per group, the misperceived share of its failed decisions (none without
    failed decisions)."""
    groups = {n: g for n, g in table["groups"].items() if g["failed_decisions"]}
    if not groups:
        return {}
    values = [100 * g["misperceived"]["estimate"] for g in groups.values()]
    notes = [f"{g['failed_decisions']} failed decisions" for g in groups.values()]
    return {
        "plots/attribution.png": lambda path: bar_plot(
            path,
            list(groups),
            values,
            value_label="misperceived share of failed decisions (%)",
            title=title,
            notes=notes,
        )
    }


def attributed(
    summary: Summary,
    records: Sequence[Mapping[str, Any]],
    run_dir: RunDir,
    group: str,
    schedule: str | None,
    title: str,
) -> Summary:
    """``summary`` with the run's attribution added when probes ran (``schedule``: the ``--probe`` value, or
    ``None``: ``summary`` as it is): the table under ``attribution`` in ``summary.json``, its section in
    ``summary.md`` and ``plots/attribution.png``; errored records left out."""
    if schedule is None:
        return summary
    ok = [r for r in records if r.get("status") == "ok"]
    table = attribution_table(ok, probe_lines(run_dir.load_decisions()), group)
    summary.data["attribution"] = table
    summary.markdown += "\n\n" + attribution_markdown(table, schedule)
    summary.files.update(attribution_files(table, title))
    return summary


def _notes(table: Mapping[str, Any]) -> list[str]:
    corr, costs = table["correlation"], table["costs"]
    r = "n/a" if corr["pearson_r"] is None else f"{corr['pearson_r']:.2f}"
    per = costs["decisions_per_probed_episode"]
    ratio = costs["extra_calls_ratio"]
    return [
        f"Probe accuracy vs success across groups: Pearson r = {r} ({corr['groups']} groups).",
        f"Costs: {costs['episodes_probed']} episodes probed, {costs['decisions_probed']} decisions "
        f"({'n/a' if per is None else f'{per:.1f}'} per probed episode), {costs['probe_calls']} extra model "
        f"calls ({'n/a' if ratio is None else f'{ratio:.2f}'} per policy call), {costs['probe_model_s']:.1f} s "
        f"of probe model time next to {costs['episode_s']:.1f} s of episodes.",
        "A decision is perceived correctly when its probes' mean score is at least 0.5 (distances: MRA; boxes: IoU); "
        "failed decisions are the probed decisions of failed episodes. Intervals: 95 %, clustered by episode. "
        "See docs/guide/attribution.md for what the split means and does not.",
    ]
