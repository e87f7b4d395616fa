"""``spatial-arena report RUN [RUN ...] -o report.html``: one self-contained HTML page about finished runs.

Per run: the headline with n and its 95 % interval (errored units counted apart, never as results); the
run's own summary tables; per task, category, subset or chain position the estimates with intervals as a
table and a plot; a drill-down per unit (instruction, outcome or error, the unit's video, every model call
with its prompt id, raw text, parsed plan, parse errors, latency and tokens); provenance from the manifest;
throughput from the records' timing. With several runs, the paired comparison of each later run with the
first (:func:`.compare.compare_runs`).

The page fetches nothing (inline style, script and plots; a Content-Security-Policy forbids the rest).
Videos up to :data:`.report_html.VIDEO_INLINE_BYTES` each (and :data:`.report_html.REPORT_INLINE_BYTES` in
all) are inlined; larger ones are linked by their path relative to the report, so keep the run folders
beside it.

Refused in one line (exit 2): a missing run folder, ``-o`` into a folder that does not exist, several runs
that cannot be compared (different benchmarks or protocol options, no shared unit).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from benchmarks.evidence import report_html as H
from benchmarks.evidence.compare import compare_runs, comparison_markdown
from benchmarks.evidence.report_data import ReportRun, read_report_run
from policies.config_cli import InputError, OneLineParser, run_cli


def build_parser() -> OneLineParser:
    parser = OneLineParser(
        prog="spatial-arena report",
        description="A self-contained HTML report of finished runs (several: with their paired comparison).",
    )
    parser.add_argument("runs", nargs="+", metavar="RUN", help="run folders (the first is the baseline A)")
    parser.add_argument(
        "-o",
        "--output",
        type=Path,
        default=Path("report.html"),
        help="the HTML written (default report.html)",
    )
    parser.add_argument("--title", default=None, help="the page title (default: from the runs)")
    parser.add_argument(
        "--no-compare", action="store_true", help="several runs side by side, without the paired comparison"
    )
    return parser


def render_report(
    runs: Sequence[ReportRun], report_path: Path, title: str | None = None, compare: bool = True
) -> str:
    """The whole page; ``report_path`` places linked videos relative to it. With ``compare``, each later
    run is compared with the first (refused in one line when they cannot be)."""
    comparisons = [_compare(runs[0], r) for r in runs[1:]] if compare else []
    videos = H.VideoBudget(report_path.parent)
    title = title or "Report: " + ", ".join(f"{r.run.label} ({r.run.family})" for r in runs)
    nav = "".join(f'<a href="#run-{i}">{H.esc(r.run.label)}</a>' for i, r in enumerate(runs))
    if comparisons:
        nav += '<a href="#comparison">comparison</a>'
    body = [
        f"<h1>{H.esc(title)}</h1>",
        f"<nav>{nav}</nav>",
        *(H.headline_html(r, i) for i, r in enumerate(runs)),
        *_comparison_section(comparisons),
        *(section for i, r in enumerate(runs) for section in _run_sections(i, r, videos)),
    ]
    return H.page(title, body)


def _compare(a: ReportRun, b: ReportRun) -> dict[str, Any]:
    try:
        return compare_runs(a.run, b.run)
    except InputError as error:
        raise InputError(f"{error} (or pass --no-compare to show the runs side by side)") from None


def _comparison_section(comparisons: Sequence[dict[str, Any]]) -> Iterator[str]:
    if not comparisons:
        return
    yield '<section id="comparison"><h2>Paired comparison (each run against the first)</h2>'
    for result in comparisons:
        yield f'<div class="comparison">{H.markdown_html(comparison_markdown(result))}</div>'
    yield "</section>"


def _run_sections(index: int, rr: ReportRun, videos: H.VideoBudget) -> Iterator[str]:
    yield f'<section class="run" id="run-{index}"><h2>{H.esc(rr.run.label)}: {H.esc(rr.run.path)}</h2>'
    yield H.headline_html(rr, index)
    yield H.groups_html(rr)
    if rr.summary_md:
        yield f'<details class="summary" open><summary>The run\'s summary</summary>{H.markdown_html(rr.summary_md)}</details>'
    yield "".join(H.image_html(p) for p in rr.plots)
    yield '<h3>Units</h3><label><input type="checkbox" class="only-failures"> only failures and errors</label>'
    yield f'<div class="drilldown">{"".join(H.unit_html(u, videos) for u in rr.units)}</div>'
    yield f"<h3>Provenance</h3>{H.provenance_html(rr.manifest)}"
    yield f"<h3>Throughput</h3>{H.throughput_html(rr)}</section>"


def check_output(path: Path) -> None:
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        raise InputError(
            f"-o {path}: the folder {folder} does not exist; create it or write the report elsewhere"
        )
    if path.is_dir():
        raise InputError(
            f"-o {path} is a folder; name the HTML file to write, e.g. -o {path / 'report.html'}"
        )


def main(argv: Sequence[str] | None = None) -> int:
    return run_cli(_main, argv)


def _main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(sys.argv[1:] if argv is None else list(argv))
    check_output(args.output)
    runs = [read_report_run(path) for path in args.runs]
    args.output.write_text(
        render_report(runs, args.output, args.title, not args.no_compare), encoding="utf-8"
    )
    size = args.output.stat().st_size
    print(f"written: {args.output} ({size / 1e6:.2f} MB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
