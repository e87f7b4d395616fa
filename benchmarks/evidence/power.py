"""``spatial-arena power``: units needed to detect a difference, from a pilot run or given numbers.

    spatial-arena power --difference 0.1 RUN              # from one pilot run: two independent runs
    spatial-arena power --difference 0.1 RUN_A RUN_B      # from a paired pilot: the same units
    spatial-arena power --difference 0.1 --rate 0.6       # no pilot: a success rate
    spatial-arena power --difference 0.5 --sd 1.4         # no pilot: a per-unit SD (paired: of differences)

A right/wrong headline (LIBERO, EB, static accuracy) uses the pilot's success rate (one run) or its share
of discordant units (two runs); a graded one (CALVIN's completed length, MRA/IoU scores) the per-unit SD
(one run) or the SD of the paired differences (two runs). The formulas, with their sources, are in
:mod:`benchmarks.stats.power`. ``--difference`` is in the headline's units: a rate as a fraction (0.1 = 10
points), CALVIN's avg. len in subtasks.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any, cast

import numpy as np

from benchmarks.evidence.compare import check_comparable, shared_units
from benchmarks.evidence.runs import load_run
from benchmarks.stats import power as P
from benchmarks.stats.intervals import check_level
from policies.config_cli import InputError, OneLineParser, run_cli


def build_parser() -> OneLineParser:
    parser = OneLineParser(
        prog="spatial-arena power",
        description="Units needed to detect --difference at level --alpha with power --power.",
    )
    parser.add_argument("runs", nargs="*", metavar="RUN", help="a pilot run, or two runs of the same units")
    parser.add_argument("--difference", type=float, required=True, help="the difference to detect (> 0)")
    parser.add_argument(
        "--alpha", type=float, default=0.05, help="level of the two-sided test (default 0.05)"
    )
    parser.add_argument("--power", type=float, default=0.8, help="power 1 - beta (default 0.8)")
    parser.add_argument("--rate", type=float, help="without a pilot: the success rate to start from")
    parser.add_argument(
        "--sd", type=float, help="without a pilot: the per-unit SD (with --paired: of differences)"
    )
    parser.add_argument("--paired", action="store_true", help="with --sd: the SD is of paired differences")
    return parser


def from_numbers(args: argparse.Namespace) -> dict[str, Any]:
    """The sample size from ``--rate`` or ``--sd``."""
    if (args.rate is None) == (args.sd is None):
        raise InputError("power needs a pilot RUN, or exactly one of --rate P and --sd S")
    if args.rate is not None:
        n = P.two_rates(args.rate, args.difference, alpha=args.alpha, power=args.power)
        return {"design": "two independent runs, success rate", "rate": args.rate, "units_per_run": n}
    if args.paired:
        n = P.paired_mean(args.sd, args.difference, alpha=args.alpha, power=args.power)
        return {"design": "paired runs, mean difference", "sd_difference": args.sd, "units": n}
    n = P.two_means(args.sd, args.difference, alpha=args.alpha, power=args.power)
    return {"design": "two independent runs, mean", "sd": args.sd, "units_per_run": n}


def from_pilot(paths: Sequence[str], args: argparse.Namespace) -> dict[str, Any]:
    """The sample size from one pilot run (independent runs) or two (paired on their shared units)."""
    runs = [load_run(p) for p in paths]
    a = runs[0]
    if len(runs) == 1:
        results = [u for u in a.units.values() if u.is_result]
        if not results:
            raise InputError(f"{a.path} has no completed unit to estimate from; finish the pilot run first")
        if a.headline == "success":
            rate = float(np.mean(cast("list[bool]", [u.success for u in results])))  # every result has one
            n = P.two_rates(rate, args.difference, alpha=args.alpha, power=args.power)
            return {
                "design": "two independent runs, success rate",
                "rate": rate,
                "pilot_units": len(results),
                "units_per_run": n,
            }
        scores = cast("list[float]", [u.score for u in results])  # a graded run: every result has a score
        sd = float(np.std(scores, ddof=1)) if len(results) > 1 else 0.0
        n = P.two_means(_positive(sd, a.path), args.difference, alpha=args.alpha, power=args.power)
        return {
            "design": "two independent runs, mean",
            "sd": sd,
            "pilot_units": len(results),
            "units_per_run": n,
        }
    check_comparable(a, runs[1])
    keys, _ = shared_units(a, runs[1])
    ua, ub = [a.units[k] for k in keys], [runs[1].units[k] for k in keys]
    if a.headline == "success":
        discordant = float(np.mean([x.success != y.success for x, y in zip(ua, ub)]))
        n = P.paired_rates(discordant, args.difference, alpha=args.alpha, power=args.power)
        return {
            "design": "paired runs, McNemar",
            "discordant": discordant,
            "pilot_units": len(keys),
            "units": n,
        }
    d = np.array([float(y.score or 0.0) - float(x.score or 0.0) for x, y in zip(ua, ub)])
    sd = float(np.std(d, ddof=1)) if len(d) > 1 else 0.0
    n = P.paired_mean(_positive(sd, a.path), args.difference, alpha=args.alpha, power=args.power)
    return {
        "design": "paired runs, mean difference",
        "sd_difference": sd,
        "pilot_units": len(keys),
        "units": n,
    }


def _positive(sd: float, where: object) -> float:
    if sd > 0:
        return sd
    raise InputError(
        f"{where}: the pilot's values do not vary (SD 0), so they give no sample size; run more units or pass --sd"
    )


def check_flags(args: argparse.Namespace) -> None:
    """``--alpha`` and ``--power`` in (0, 1), ``--difference`` and ``--sd`` > 0, ``--rate`` in [0, 1]."""
    try:
        check_level("--alpha", args.alpha)
        check_level("--power", args.power)
    except ValueError as error:
        raise InputError(f"{error} (e.g. --alpha 0.05 --power 0.8)") from None
    for flag, value in (("--difference", args.difference), ("--sd", args.sd)):
        if value is not None and not value > 0:
            raise InputError(f"{flag} must be > 0, got {value}")
    if args.rate is not None and not 0 <= args.rate <= 1:
        raise InputError(f"--rate must be a success rate in [0, 1], got {args.rate}")


def main(argv: Sequence[str] | None = None) -> int:
    return run_cli(_main, argv)


def _main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(sys.argv[1:] if argv is None else list(argv))
    check_flags(args)
    if len(args.runs) > 2:
        raise InputError("power takes one pilot run, or two runs of the same units")
    try:
        result = from_pilot(args.runs, args) if args.runs else from_numbers(args)
    except ValueError as error:
        if isinstance(error, InputError):
            raise
        raise InputError(f"{error} (--difference, --alpha, --power)") from None
    result = {**result, "difference": args.difference, "alpha": args.alpha, "power": args.power}
    needed = result.get("units", result.get("units_per_run"))
    per = " per run" if "units_per_run" in result else ""
    print(
        f"{needed} units{per} to detect a difference of {args.difference:g} at alpha {args.alpha:g} with power {args.power:g} ({result['design']})"
    )
    print(json.dumps({k: round(v, 6) if isinstance(v, float) else v for k, v in result.items()}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
