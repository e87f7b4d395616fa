"""Parser time against input size: every parser of model output on every pathological pattern, 1 KB to 1 MB.

For each parser and pattern (``benchmarks.parser_catalog``), times one parse of inputs of 1 KB,
10 KB, 100 KB and 1 MB (best of ``--repeats`` runs, CPU time of this process, so that other work on the
machine does not count) and prints the time and its growth per 10x of input: about 10 is linear, about 1
means the input was cut at the parser's cap, 100 would be quadratic. Ends with the goals:

- any input up to 1 MB parses in under 1 s;
- time grows at most linearly: fitting time ~ size^k between the smallest and the largest size timed above
  1 ms (shorter times are timer noise), k stays under ``--max-exponent`` (1 is linear, 2 quadratic; the
  per-10x ratios printed wobble by 1.5x on a loaded machine, the fitted exponent much less);
- no parser raises.

Inputs beyond a parser's cap (``parsers.MAX_RESPONSE_CHARS``, ``parsing.MAX_PLAN_CHARS``) are cut, so the
growth above the cap is about 1; ``--uncapped`` lifts the caps to show each algorithm's own growth to 1 MB.

    python bench/parser_speed.py [--sizes 1000,10000,100000,1000000] [--repeats 3] [--parsers parse_plan,...]
        [--patterns "huge cognitive map,..."] [--uncapped]
"""

from __future__ import annotations

import argparse
import itertools
import math
import time

from action_mapping import parsing as plan_parsing
from benchmarks.parser_catalog import PARSERS, PATTERNS
from benchmarks.scoring import parsers

GOAL_SECONDS = 1.0
NOISE_FLOOR_S = 0.001  # below this, a time measures timer noise, not growth


def time_one(parse, text: str, repeats: int) -> tuple[float, str]:
    """Best CPU time of ``repeats`` parses, and the exception's name if one was raised ("" if none)."""
    best = float("inf")
    for _ in range(repeats):
        start = time.process_time()
        try:
            parse(text)
        except Exception as error:  # counted and reported: the goal is zero
            return time.process_time() - start, type(error).__name__
        best = min(best, time.process_time() - start)
    return best, ""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--sizes", default="1000,10000,100000,1000000", help="input sizes in characters, ascending"
    )
    parser.add_argument("--repeats", type=int, default=3, help="runs per input; the best is kept")
    parser.add_argument("--parsers", default="", help="comma-separated subset of parser names")
    parser.add_argument("--patterns", default="", help="comma-separated subset of pattern names")
    parser.add_argument(
        "--max-exponent", type=float, default=1.25, help="largest fitted k (time ~ size^k) counted as linear"
    )
    parser.add_argument(
        "--uncapped", action="store_true", help="lift the input caps, to see each algorithm's own growth"
    )
    args = parser.parse_args(argv)
    if args.uncapped:
        parsers.MAX_RESPONSE_CHARS = plan_parsing.MAX_PLAN_CHARS = 10**12
    print(
        f"input caps: static parsers {parsers.MAX_RESPONSE_CHARS:,} characters, plans {plan_parsing.MAX_PLAN_CHARS:,}"
    )
    sizes = [int(s) for s in args.sizes.split(",")]
    names, patterns = (
        _selected(parser, PARSERS, args.parsers, "--parsers"),
        _selected(parser, PATTERNS, args.patterns, "--patterns"),
    )
    if args.repeats < 1:
        parser.error("--repeats must be at least 1")

    header = (
        "".join(f"{_size(n):>10}" for n in sizes)
        + "".join(f"{'x' + _size(b):>8}" for b in sizes[1:])
        + f"{'k':>6}"
    )
    worst_time, worst_exponent, exceptions = (0.0, ""), (0.0, ""), []
    for name in names:
        print(f"\n{name}\n  {'pattern':36s}{header}")
        for pattern in patterns:
            times = []
            for n in sizes:
                seconds, error = time_one(PARSERS[name], PATTERNS[pattern](n), args.repeats)
                times.append(seconds)
                if error:
                    exceptions.append(f"{name} / {pattern} / {n}: {error}")
            ratios = [b / a if a > 0 else float("inf") for a, b in itertools.pairwise(times)]
            exponent = _fitted_exponent(sizes, times)
            worst_time = max(worst_time, (max(times), f"{name} / {pattern}"))
            if exponent is not None:
                worst_exponent = max(worst_exponent, (exponent, f"{name} / {pattern}"))
            cells = "".join(f"{t * 1e3:>8.1f}ms" for t in times) + "".join(f"{r:>8.1f}" for r in ratios)
            print(f"  {pattern[:35]:36s}{cells}{'-' if exponent is None else f'{exponent:.2f}':>6}")

    print(f"\nlargest input: {_size(sizes[-1])}; {len(names)} parsers x {len(patterns)} patterns")
    verdict = "PASS" if worst_time[0] < GOAL_SECONDS else "FAIL"
    print(
        f"GOAL any input up to {_size(sizes[-1])} parses in under {GOAL_SECONDS:.0f} s: {verdict} (slowest {worst_time[0]:.3f} s: {worst_time[1]})"
    )
    verdict = "PASS" if worst_exponent[0] <= args.max_exponent else "FAIL"
    print(
        f"GOAL time grows at most linearly (time ~ size^k, k <= {args.max_exponent:g} over the times > {NOISE_FLOOR_S * 1e3:.0f} ms): {verdict} (largest k {worst_exponent[0]:.2f}: {worst_exponent[1]})"
    )
    print(f"GOAL no exception: {'PASS' if not exceptions else 'FAIL'} ({len(exceptions)} raised)")
    for line in exceptions:
        print(f"  raised: {line}")
    return (
        0 if not exceptions and worst_time[0] < GOAL_SECONDS and worst_exponent[0] <= args.max_exponent else 1
    )


def _selected(parser: argparse.ArgumentParser, catalog: dict, wanted: str, flag: str) -> list[str]:
    """The catalogue's names listed in ``wanted`` (comma-separated; all when empty), in catalogue order."""
    chosen = [name.strip() for name in wanted.split(",") if name.strip()]
    unknown = [name for name in chosen if name not in catalog]
    if unknown:
        parser.error(
            f"{flag}: unknown name(s) {', '.join(map(repr, unknown))}; known: {', '.join(map(repr, catalog))}"
        )
    return [name for name in catalog if not chosen or name in chosen]


def _fitted_exponent(sizes: list[int], times: list[float]) -> float | None:
    """k in time ~ size^k from the first to the last time above the noise floor; None with fewer than two."""
    points = [(n, t) for n, t in zip(sizes, times) if t > NOISE_FLOOR_S]
    if len(points) < 2:
        return None
    (n0, t0), (n1, t1) = points[0], points[-1]
    return math.log(t1 / t0) / math.log(n1 / n0)


def _size(n: int) -> str:
    return f"{n // 1_000_000}MB" if n >= 1_000_000 else f"{n // 1000}KB" if n >= 1000 else f"{n}B"


if __name__ == "__main__":
    raise SystemExit(main())
