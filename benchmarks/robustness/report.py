"""The robustness report: per axis and level, the certified variants' success, the drop from the clean
control arm on the same episodes (paired, 95 % interval) and the expert's certification rate."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from benchmarks.stats.intervals import wilson
from benchmarks.stats.paired import mcnemar_exact

Record = Mapping[str, Any]


def _episode(record: Record) -> str:
    return str(record["extras"]["episode_id"])


def _cell(records: Sequence[Record], clean: Mapping[str, bool], include_uncertified: bool) -> dict[str, Any]:
    certified = [r for r in records if r["extras"]["certified"]]
    scored = list(records) if include_uncertified else certified
    paired = [r for r in scored if _episode(r) in clean]
    drop = mcnemar_exact([bool(r["success"]) for r in paired], [clean[_episode(r)] for r in paired])
    rate = wilson(sum(bool(r["success"]) for r in scored), len(scored)).scaled(100)
    cert = wilson(len(certified), len(records)).scaled(100)
    return {
        "variants": len(records),
        "scored": len(scored),
        "success_rate": rate.estimate,
        "success_ci": rate.bounds(3),
        "clean_rate": None if drop.b is None else 100 * drop.b,
        "drop": None if drop.difference is None else 100 * drop.difference,
        "drop_ci": None if drop.low is None else [round(100 * drop.low, 3), round(100 * drop.high, 3)],  # type: ignore[operator]
        "certification_rate": cert.estimate,
        "certification_ci": cert.bounds(3),
    }


def robustness_table(records: Sequence[Record], include_uncertified: bool = False) -> dict[str, Any]:
    """``{"clean": {...}, "axes": {axis: {"all": cell, "1": cell, ... "5": cell}}}`` from ok records.

    A cell's drop is clean minus perturbed success on the episodes it holds (percentage points; McNemar
    pairs, percentile-bootstrap interval); uncertified variants are left out unless
    ``include_uncertified``, and the certification rate counts them."""
    clean_records = [r for r in records if r["extras"].get("perturbation") is None]
    clean = {_episode(r): bool(r["success"]) for r in clean_records}
    groups: dict[str, dict[str, list[Record]]] = defaultdict(lambda: defaultdict(list))
    for r in records:
        spec = r["extras"].get("perturbation")
        if spec is not None:
            groups[spec["axis"]][str(spec["level"])].append(r)
            groups[spec["axis"]]["all"].append(r)
    clean_rate = wilson(sum(clean.values()), len(clean)).scaled(100)
    return {
        "clean": {
            "episodes": len(clean),
            "success_rate": clean_rate.estimate,
            "success_ci": clean_rate.bounds(3),
        },
        "include_uncertified": include_uncertified,
        "axes": {
            axis: {level: _cell(rs, clean, include_uncertified) for level, rs in sorted(levels.items())}
            for axis, levels in groups.items()
        },
    }


def _fmt(value: float | None, bounds: Sequence[float] | None) -> str:
    if value is None:
        return "n/a"
    return f"{value:.1f}" + ("" if bounds is None else f" [{bounds[0]:.1f}, {bounds[1]:.1f}]")


def robustness_markdown(
    table: Mapping[str, Any],
    blind: Mapping[str, Mapping[str, float]] | None = None,
    blind_note: str | None = None,
) -> str:
    """The per-axis / per-level table as Markdown (success, drop from clean, certification; 95 % CIs), with
    a blind column (the best blind baseline of that axis and level, ``blind_note`` under the table) when
    ``blind`` is given."""
    clean = table["clean"]
    lines = [
        "## Robustness",
        "",
        f"Clean control arm: {_fmt(clean['success_rate'], clean['success_ci'])} % success over "
        f"{clean['episodes']} episodes.",
        "Drop: clean minus perturbed success on the same episodes (points). "
        + ("Uncertified variants included." if table["include_uncertified"] else "Certified variants only."),
        "",
        "| axis | level | variants | scored | success % | drop (pts) | certified % |"
        + (" blind % |" if blind else ""),
        "|---|---|---:|---:|---|---|---|" + ("---:|" if blind else ""),
    ]
    for axis, levels in table["axes"].items():
        for level, c in levels.items():
            row = (
                f"| {axis} | {level} | {c['variants']} | {c['scored']} | {_fmt(c['success_rate'], c['success_ci'])} "
                f"| {_fmt(c['drop'], c['drop_ci'])} | {_fmt(c['certification_rate'], c['certification_ci'])} |"
            )
            if blind:
                row += f" {_fmt(blind.get(axis, {}).get(level), None)} |"
            lines.append(row)
    if blind and blind_note:
        lines += ["", blind_note]
    return "\n".join(lines) + "\n"
