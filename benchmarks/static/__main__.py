"""Command line: ``python -m benchmarks.static --bench NAME --data PATH (--model M | --score-only FILE) ...``,
and ``python -m benchmarks.static generate --out DIR [--format NAME]`` for fresh sets from the simulator."""

from __future__ import annotations

import sys

from benchmarks.static.config import parse_config
from benchmarks.static.report import headline_cells
from benchmarks.static.runner import run
from policies.config_cli import EXIT_UNITS_ERRORED, run_cli


def main(argv: list[str] | None = None) -> int:
    """Run one benchmark through the shared error handler; returns the exit status."""
    return run_cli(_main, argv)


def _main(argv: list[str] | None = None) -> int:
    """Run one benchmark; print the headline numbers and where the results are."""
    args = sys.argv[1:] if argv is None else list(argv)
    if args[:1] == ["generate"]:
        from benchmarks.datagen.generate import main as generate_main  # needs the `nav` extra (MuJoCo)

        return generate_main(args[1:])
    if args[:1] == ["agent-ablation"]:
        from benchmarks.static.agent_ablation import main as ablation_main

        return ablation_main(args[1:])
    config = parse_config(args)
    result = run(config)
    for name, shown in headline_cells(result.summary).items():
        print(f"{name}: {shown}")
    if result.summary.get("headline_note"):
        print(f"note: {result.summary['headline_note']}")
    counts = result.summary["counts"]
    print(
        f"items: {counts['items']} ({counts['completed']} completed, {counts['errors']} errored); {result.summary['status']}"
    )
    print(f"results: {result.out_dir}")
    if result.summary["status"] != "complete" and not config.allow_errors:
        print(
            "error: the run is incomplete (see the counts above); --resume retries errored items, "
            "--allow-errors exits 0 anyway",
            file=sys.stderr,
        )
        return EXIT_UNITS_ERRORED
    return 0


if __name__ == "__main__":
    sys.exit(main())
