"""``spatial-arena compare RUN_A RUN_B [RUN_C ...]``: paired comparison of runs on the units they share.

Each later run is compared with the first (B - A) on the units both ran, matched by key: the CALVIN chain
key, the LIBERO or EB episode key, the static item id. Right/wrong outcomes are compared with the exact
McNemar test, graded ones (CALVIN's completed length, MRA/IoU scores) with the paired bootstrap and the
sign-flip permutation test (:mod:`benchmarks.stats.paired`); overall and per task, category or chain
position. Units that errored in either run are listed and left out, never counted as results.

``--across OPTION`` lets runs differ in named protocol options, for a comparison across them on units
that mean the same in every value: CALVIN's chains in scenes A-D (``--across scene``: chain i starts from
the same symbolic state with the same subtasks in each scene, so the pairs show the scene gap).

Refused in one line (exit 2): a missing run folder, runs of different benchmarks or protocol options (the
option and both values are named), runs that share no unit, an ``--alpha`` outside (0, 1), an
``--across`` option the runs do not have.
"""

from __future__ import annotations

import sys
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

from benchmarks.core.rundir import write_json
from benchmarks.evidence.runs import Run, Unit, load_run
from benchmarks.stats.intervals import SEED, check_level
from benchmarks.stats.paired import PairedResult, mcnemar_exact, paired_difference
from policies.config_cli import InputError, OneLineParser, run_cli


def build_parser() -> OneLineParser:
    parser = OneLineParser(
        prog="spatial-arena compare",
        description="Paired comparison of runs on their shared units (each later run against the first).",
    )
    parser.add_argument("runs", nargs="+", metavar="RUN", help="run folders (the first is the baseline A)")
    parser.add_argument("--alpha", type=float, default=0.05, help="1 - the intervals' level (default 0.05)")
    parser.add_argument("--seed", type=int, default=SEED, help="seed of the bootstrap and permutations")
    parser.add_argument(
        "--output", type=Path, default=Path("compare.json"), help="the JSON written (default compare.json)"
    )
    parser.add_argument(
        "--across",
        default="",
        metavar="OPTION[,OPTION]",
        help="protocol options the runs may differ in (e.g. scene: one CALVIN checkpoint in scenes A-D)",
    )
    return parser


def check_comparable(a: Run, b: Run, across: Collection[str] = ()) -> None:
    """Refuse runs of different benchmarks or protocol options (except ``across``), naming the first."""
    unknown = sorted(set(across) - set(a.protocol) - set(b.protocol) - {"benchmark"})
    if unknown or "benchmark" in across:
        known = ", ".join(k for k in sorted(a.protocol) if k != "benchmark")
        raise InputError(
            f"--across {','.join(unknown) or 'benchmark'}: not a protocol option of these runs; "
            f"choose among {known}"
        )
    for key in sorted(set(a.protocol) | set(b.protocol)):
        if key not in across and a.protocol.get(key) != b.protocol.get(key):
            flag = "benchmark" if key == "benchmark" else f"--{key.replace('_', '-')}"
            raise InputError(
                f"{a.path} and {b.path} differ in {flag} ({a.protocol.get(key)!r} vs {b.protocol.get(key)!r}); "
                "compare runs made with the same protocol options"
            )


def shared_units(a: Run, b: Run) -> tuple[list[str], dict[str, str]]:
    """The keys both runs have results for (in A's order), and the shared keys left out with why."""
    keys = [k for k in a.units if k in b.units]
    if not keys:
        raise InputError(
            f"{a.path} and {b.path} share no units (e.g. {next(iter(a.units), 'none')} vs "
            f"{next(iter(b.units), 'none')}); compare runs of the same units"
        )
    left_out = {k: _why_not(a.units[k], b.units[k]) for k in keys}
    return [k for k in keys if not left_out[k]], {k: why for k, why in left_out.items() if why}


def _why_not(a: Unit, b: Unit) -> str:
    whys = [f"{side}: {u.error}" for side, u in (("A", a), ("B", b)) if not u.is_result]
    return "; ".join(whys)


def paired_test(
    a: Sequence[bool | float], b: Sequence[bool | float], confidence: float, seed: int
) -> PairedResult:
    """McNemar when every outcome is right/wrong, else the paired difference of the values."""
    if all(isinstance(v, bool) for v in (*a, *b)):
        return mcnemar_exact([bool(v) for v in a], [bool(v) for v in b], confidence=confidence, seed=seed)
    return paired_difference([float(v) for v in a], [float(v) for v in b], confidence=confidence, seed=seed)


def compare_runs(
    a: Run, b: Run, *, confidence: float = 0.95, seed: int = SEED, across: Collection[str] = ()
) -> dict[str, Any]:
    """The comparison of B with A as JSON: runs, units, the headline and per-group tests; the runs may
    differ in the protocol options ``across`` (their values are in ``"across"``)."""
    check_comparable(a, b, across)
    keys, left_out = shared_units(a, b)
    ua, ub = [a.units[k] for k in keys], [b.units[k] for k in keys]
    rows: dict[str, PairedResult] = {}
    if a.headline == "score" or b.headline == "score":
        name = "mean score" if a.family == "static" else "avg. len"
        rows[name] = paired_test(_scores(ua), _scores(ub), confidence, seed)
    if all(u.success is not None for u in (*ua, *ub)):
        rows["success"] = paired_test(_successes(ua), _successes(ub), confidence, seed)
    groups = {g: _group_test(g, ua, ub, confidence, seed) for g in _groups(ua, ub)}
    return {
        "a": {"path": str(a.path), "label": a.label},
        "b": {"path": str(b.path), "label": b.label},
        "benchmark": a.family,
        "protocol": dict(a.protocol),
        "across": {key: [a.protocol.get(key), b.protocol.get(key)] for key in across},
        "confidence": confidence,
        "seed": seed,
        "units": {
            "a": len(a.units),
            "b": len(b.units),
            "shared": len(keys) + len(left_out),
            "paired": len(keys),
        },
        "left_out": left_out,
        "overall": {name: r.to_json() for name, r in rows.items()},
        "by": a.breakdown_name,
        "groups": {name: r.to_json() for name, r in groups.items()},
    }


def _scores(units: Sequence[Unit]) -> list[bool | float]:
    """The units' graded values (a paired unit of a graded headline always has one; a length mismatch
    left by one without would be refused by the test, never paired wrongly)."""
    return [u.score for u in units if u.score is not None]


def _successes(units: Sequence[Unit]) -> list[bool | float]:
    return [u.success for u in units if u.success is not None]


def _group_test(
    group: str, ua: Sequence[Unit], ub: Sequence[Unit], confidence: float, seed: int
) -> PairedResult:
    pairs = [
        (x.breakdown[group], y.breakdown[group])
        for x, y in zip(ua, ub)
        if group in x.breakdown and group in y.breakdown
    ]
    return paired_test([p[0] for p in pairs], [p[1] for p in pairs], confidence, seed)


def _groups(ua: Sequence[Unit], ub: Sequence[Unit]) -> list[str]:
    """Breakdown keys both runs have on some paired unit, in A's order."""
    seen: dict[str, None] = {}
    for x, y in zip(ua, ub):
        for g in x.breakdown:
            if g in y.breakdown:
                seen.setdefault(g, None)
    return list(seen)


def _value(value: float | None, rate: bool) -> str:
    if value is None:
        return "n/a"
    return f"{100 * value:.1f}%" if rate else f"{value:.3f}"


def _line(name: str, row: Mapping[str, Any], rate: bool) -> str:
    ci = row["ci"]
    interval = "n/a" if ci is None else f"[{_value(ci[0], rate)}, {_value(ci[1], rate)}]"
    p = "n/a" if row["p_value"] is None else f"{row['p_value']:.4f}"
    return (
        f"| {name} | {row['n']} | {_value(row['a'], rate)} | {_value(row['b'], rate)} | "
        f"{_value(row['difference'], rate)} {interval} | {p} | {row['test']} |"
    )


def comparison_markdown(result: Mapping[str, Any]) -> str:
    """The comparison as the terminal shows it: one table, overall rows first, then per group."""
    level = f"{100 * result['confidence']:g} %"
    units = result["units"]
    lines = [
        f"## {result['benchmark']}: B = {result['b']['label']} vs A = {result['a']['label']}{_across(result)}",
        "",
        f"A: {result['a']['path']}; B: {result['b']['path']}. Units: {units['shared']} shared, "
        f"{units['paired']} paired (A ran {units['a']}, B ran {units['b']}).",
        "",
        f"| | n | A | B | B - A [{level} interval] | p | test |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, row in result["overall"].items():
        lines.append(_line(f"**{name}**", row, rate=name == "success"))
    for name, row in result["groups"].items():
        lines.append(
            _line(f"{result['by']} {name}" if result["by"] != "chain position" else name, row, _is_rate(row))
        )
    if result["left_out"]:
        shown = "; ".join(f"{k} ({why})" for k, why in list(result["left_out"].items())[:10])
        more = ", ..." if len(result["left_out"]) > 10 else ""
        lines += ["", f"Left out, errored or unscored in a run (never counted): {shown}{more}"]
    return "\n".join(lines)


def _across(result: Mapping[str, Any]) -> str:
    """`` (scene B vs A: D vs A)`` for a comparison across protocol options, else nothing."""
    pairs = [f"{k} {b} vs {a}" for k, (a, b) in (result.get("across") or {}).items()]
    return f" ({'; '.join(pairs)})" if pairs else ""


def _is_rate(row: Mapping[str, Any]) -> bool:
    return row["test"] == "mcnemar-exact"


def main(argv: Sequence[str] | None = None) -> int:
    return run_cli(_main, argv)


def _main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(sys.argv[1:] if argv is None else list(argv))
    try:
        check_level("--alpha", args.alpha)
    except ValueError as error:
        raise InputError(f"{error} (e.g. --alpha 0.05)") from None
    if len(args.runs) < 2:
        raise InputError("compare needs two run folders or more: spatial-arena compare RUN_A RUN_B")
    runs = [load_run(path) for path in args.runs]
    across = tuple(k.strip().replace("-", "_") for k in args.across.split(",") if k.strip())
    results = [
        compare_runs(runs[0], b, confidence=1 - args.alpha, seed=args.seed, across=across) for b in runs[1:]
    ]
    for result in results:
        print(comparison_markdown(result) + "\n")
    write_json(args.output, results[0] if len(results) == 1 else {"comparisons": results})
    print(f"written: {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
