"""The HTML of ``spatial-arena report``: one self-contained page (inline CSS, script and plots; nothing
fetched), built from :class:`.report_data.ReportRun` values and :func:`.compare.compare_runs` results.

Every piece of run text (instructions, model outputs, errors, file names) goes through :func:`html.escape`:
model outputs are untrusted. The run's ``summary.md`` and the comparison table are rendered by a small
line-by-line Markdown reader (headings, lists, pipe tables, bold and code spans), linear in the text.
"""

from __future__ import annotations

import base64
import html
import io
import json
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from benchmarks.evidence.report_data import Call, ReportRun, UnitView
from benchmarks.evidence.runs import Run
from benchmarks.stats.intervals import Interval, bootstrap_mean, wilson

#: A unit's video is inlined as a data URI up to this size; a larger one is linked by its relative path.
VIDEO_INLINE_BYTES = 2_000_000
#: At most this many bytes of videos are inlined in one report; later ones are linked.
REPORT_INLINE_BYTES = 20_000_000

CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:0 auto;max-width:1100px;padding:1em 2em;color:#1b1f24}
h1{font-size:1.6em}h2{border-bottom:1px solid #ccd;padding-bottom:.2em;margin-top:1.6em}
table{border-collapse:collapse;margin:.6em 0}td,th{border:1px solid #ccd;padding:.25em .6em;text-align:left}
th{background:#f1f3f7}.headline{font-size:1.3em;background:#f6f8fb;border:1px solid #ccd;padding:.8em 1em}
.error{color:#a4161a;font-weight:600}.success{color:#1a7f37}.failure{color:#9a6700}
pre{background:#f6f8fa;padding:.5em;white-space:pre-wrap;word-break:break-all;max-height:18em;overflow:auto}
details{margin:.3em 0}summary{cursor:pointer}img{max-width:520px;margin:.3em}video{max-width:480px;display:block;margin:.5em 0}
.call{border-left:3px solid #ccd;padding-left:.6em;margin:.5em 0}nav a{margin-right:1em}
"""

# Records script errors on the page into data-js-errors, so a headless browser's DOM dump shows them.
ERROR_PROBE = """
document.documentElement.dataset.jsErrors = "0";
window.addEventListener("error", function (e) {
  var d = document.documentElement.dataset;
  d.jsErrors = String(Number(d.jsErrors) + 1);
  d.jsErrorText = String(e.message);
});
"""

# Shows only the errored or failed units of the drill-down; shows all again.
FILTER_SCRIPT = """
document.querySelectorAll("input.only-failures").forEach(function (box) {
  box.addEventListener("change", function () {
    document.querySelectorAll("details.unit[data-outcome=success]").forEach(function (u) {
      u.hidden = box.checked;
    });
  });
});
"""


def esc(value: object) -> str:
    return html.escape(str(value), quote=True)


def page(title: str, body: Iterable[str]) -> str:
    """The whole document: head with inline style and the error probe, body, the page's script."""
    return "\n".join(
        [
            "<!DOCTYPE html>",
            '<html lang="en"><head><meta charset="utf-8">',
            '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; img-src data:; '
            "media-src data: 'self' file:; style-src 'unsafe-inline'; script-src 'unsafe-inline'\">",
            f"<title>{esc(title)}</title><style>{CSS}</style><script>{ERROR_PROBE}</script></head><body>",
            *body,
            f"<script>{FILTER_SCRIPT}</script></body></html>",
        ]
    )


# --------------------------------------------------------------------------------------------- markdown


_BOLD = re.compile(r"\*\*([^*]+)\*\*")
_CODE = re.compile(r"`([^`]+)`")


def inline(text: str) -> str:
    """Escaped text with ``**bold**`` and ```code``` spans."""
    return _CODE.sub(r"<code>\1</code>", _BOLD.sub(r"<strong>\1</strong>", esc(text)))


def markdown_html(text: str) -> str:
    """The subset of Markdown the summaries and the comparison use, as HTML (every line escaped)."""
    out: list[str] = []
    block: list[str] = []
    kind = ""
    for line in [*text.splitlines(), ""]:
        line_kind = _line_kind(line)
        if line_kind != kind and block:
            out.append(_block(kind, block))
            block = []
        kind = line_kind
        if line_kind == "heading":
            level = min(len(line) - len(line.lstrip("#")) + 1, 4)
            out.append(f"<h{level}>{inline(line.lstrip('#').strip())}</h{level}>")
        elif line_kind:
            block.append(line)
    return "\n".join(out)


def _line_kind(line: str) -> str:
    stripped = line.strip()
    if not stripped:
        return ""
    if stripped.startswith("#"):
        return "heading"
    if stripped.startswith("|"):
        return "table"
    return "list" if stripped.startswith("- ") else "paragraph"


def _block(kind: str, lines: list[str]) -> str:
    if kind == "list":
        return "<ul>" + "".join(f"<li>{inline(x.strip()[2:])}</li>" for x in lines) + "</ul>"
    if kind == "paragraph":
        return f"<p>{inline(' '.join(x.strip() for x in lines))}</p>"
    rows = [[c.strip() for c in x.strip().strip("|").split("|")] for x in lines]
    rows = [r for r in rows if not all(set(c) <= set("-: ") and c for c in r)]
    head, body = rows[0], rows[1:]
    return table(head, body, raw=True)


def table(head: Sequence[object], rows: Iterable[Sequence[object]], raw: bool = False) -> str:
    """A table; ``raw`` cells are Markdown inline text (escaped by :func:`inline`), others plain values."""
    cell = inline if raw else esc
    th = "".join(f"<th>{cell(str(h))}</th>" for h in head)
    trs = "".join("<tr>" + "".join(f"<td>{cell(str(c))}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{th}</tr></thead><tbody>{trs}</tbody></table>"


# ----------------------------------------------------------------------------------- headline, groups


def headline_interval(run: Run) -> tuple[str, Interval]:
    """The run's headline over its result units (errored ones left out), with its interval."""
    results = [u for u in run.units.values() if u.is_result]
    if run.headline == "success":
        hits = sum(bool(u.success) for u in results)
        return "success rate (%)", wilson(hits, len(results)).scaled(100)
    name = "avg. len" if run.family == "calvin" else "mean score"
    return name, bootstrap_mean([float(u.score or 0.0) for u in results])


def group_intervals(run: Run) -> dict[str, Interval]:
    """Per task, category, subset or chain position: Wilson for right/wrong outcomes, else the bootstrap."""
    values: dict[str, list[bool | float]] = {}
    for unit in run.units.values():
        if unit.is_result:
            for group, value in unit.breakdown.items():
                values.setdefault(group, []).append(value)
    out: dict[str, Interval] = {}
    for group, vs in values.items():
        if all(isinstance(v, bool) for v in vs):
            out[group] = wilson(sum(bool(v) for v in vs), len(vs)).scaled(100)
        else:
            out[group] = bootstrap_mean([float(v) for v in vs])
    return out


def headline_html(rr: ReportRun, index: int) -> str:
    """The run's headline card: the estimate with n and its interval, errored units counted apart."""
    name, interval = headline_interval(rr.run)
    units = list(rr.run.units.values())
    errored = sum(not u.is_result for u in units)
    fmt = ".1f" if rr.run.headline == "success" else ".3f"
    errors = f'<span class="error">{errored} errored (shown as errors, never counted)</span>'
    return (
        f'<div class="headline" data-run="{index}"><strong>{esc(rr.run.label)}</strong> on '
        f"{esc(rr.run.family)}: {esc(name)} <strong>{interval.cell(fmt)}</strong> [95 % interval, "
        f"{esc(interval.method)}] over n = {interval.n} units; {len(units)} units run, "
        f"{errors if errored else '0 errored'}.<br><small>{esc(rr.run.path)}</small></div>"
    )


def groups_html(rr: ReportRun) -> str:
    groups = group_intervals(rr.run)
    if not groups:
        return ""
    rows = [(g, i.n, i.cell(".1f" if i.method == "wilson" else ".3f"), i.method) for g, i in groups.items()]
    head = (rr.run.breakdown_name, "n", "estimate [95 % interval]", "method")
    return f"<h3>By {esc(rr.run.breakdown_name)}</h3>" + table(head, rows) + interval_plot(groups)


def interval_plot(groups: Mapping[str, Interval]) -> str:
    """The groups' estimates with their intervals as an inline SVG (matplotlib, no display needed)."""
    from matplotlib.figure import Figure

    shown = [(g, i) for g, i in groups.items() if i.estimate is not None][:40]
    if not shown:
        return ""
    fig = Figure(figsize=(6.5, 0.35 * len(shown) + 0.9))
    ax = fig.add_subplot()
    ys = list(range(len(shown)))
    est = [float(i.estimate or 0) for _, i in shown]
    low = [e - float(i.low or 0) for e, (_, i) in zip(est, shown)]
    high = [float(i.high or 0) - e for e, (_, i) in zip(est, shown)]
    ax.errorbar(est, ys, xerr=[low, high], fmt="o", capsize=3)
    ax.set_yticks(ys, [g for g, _ in shown])
    ax.invert_yaxis()
    ax.set_xlabel("estimate with its 95 % interval")
    fig.tight_layout()
    buffer = io.StringIO()
    fig.savefig(buffer, format="svg")
    svg = buffer.getvalue()
    return '<figure class="plot">' + svg[svg.find("<svg") :] + "</figure>"


def image_html(path: Path) -> str:
    kind = "svg+xml" if path.suffix == ".svg" else "png"
    data = base64.b64encode(path.read_bytes()).decode("ascii")
    return f'<img alt="{esc(path.name)}" src="data:image/{kind};base64,{data}">'


# ------------------------------------------------------------------------------------------ drill-down


class VideoBudget:
    """Inlines videos while they fit :data:`VIDEO_INLINE_BYTES` each and :data:`REPORT_INLINE_BYTES` in
    all; otherwise links them by their path relative to the report."""

    def __init__(self, report_dir: Path, total: int = REPORT_INLINE_BYTES) -> None:
        self.report_dir, self.left = report_dir, total

    def html(self, video: Path) -> str:
        if not video.is_file():
            return f'<p class="error">video {esc(video.name)} is missing from the run folder</p>'
        size = video.stat().st_size
        if size <= min(VIDEO_INLINE_BYTES, self.left):
            self.left -= size
            src = "data:video/mp4;base64," + base64.b64encode(video.read_bytes()).decode("ascii")
            how = f"inlined, {size / 1e6:.2f} MB"
        else:
            src = Path(os.path.relpath(video.resolve(), self.report_dir.resolve())).as_posix()
            how = f"linked beside the report ({size / 1e6:.1f} MB, over the inline budget)"
        return (
            f'<video class="unit-video" controls muted preload="metadata" src="{esc(src)}"></video>'
            f"<small>{esc(video.name)}: {esc(how)}</small>"
        )


def call_html(index: int, call: Call) -> str:
    tokens = f"{_opt(call.prompt_tokens)} prompt / {_opt(call.completion_tokens)} completion"
    latency = "n/a" if call.latency_s is None else f"{call.latency_s:.3f} s"
    errors = (
        f'<p class="error">parse errors: {esc("; ".join(call.errors))}</p>'
        if call.errors
        else "<p>parsed</p>"
    )
    injected = f'<p class="failure">injected error: {esc(call.injected)}</p>' if call.injected else ""
    parsed = json.dumps(call.parsed, ensure_ascii=False, indent=1, default=str)
    return (
        f'<div class="call"><strong>call {index}</strong> {esc(call.where)} · prompt id '
        f"<code>{esc(call.prompt_id or 'n/a')}</code> · latency {esc(latency)} · tokens {esc(tokens)}"
        f'{errors}{injected}<details><summary>raw text</summary><pre class="raw">{esc(call.text or "")}'
        f'</pre></details><details><summary>parsed plan</summary><pre class="parsed">{esc(parsed)}</pre>'
        "</details></div>"
    )


def _opt(value: object) -> str:
    return "n/a" if value is None else str(value)


def unit_html(unit: UnitView, videos: VideoBudget) -> str:
    if unit.error is not None:
        status, shown = "error", f'<span class="error">error: {esc(unit.error)}</span>'
    else:
        status = "success" if unit.succeeded else "failure"
        shown = f'<span class="{status}">{esc(unit.outcome)}</span>'
    facts = " · ".join(f"{esc(k)} {esc(v)}" for k, v in unit.facts.items() if v is not None)
    body = [
        f'<details class="unit" data-key="{esc(unit.key)}" data-outcome="{status}">',
        f"<summary><code>{esc(unit.key)}</code> {shown} · {len(unit.calls)} model calls</summary>",
        '<ol class="instructions">' + "".join(f"<li>{esc(i)}</li>" for i in unit.instructions) + "</ol>",
        f"<p>{facts}</p>" if facts else "",
        videos.html(unit.video) if unit.video is not None else "",
        *(call_html(i, c) for i, c in enumerate(unit.calls)),
        "</details>",
    ]
    return "".join(body)


# ---------------------------------------------------------------------------- provenance, throughput


def provenance_html(manifest: Mapping[str, Any]) -> str:
    git = manifest.get("git") or {}
    policy = manifest.get("policy") or {}
    rows: list[tuple[str, object]] = [
        ("command", " ".join(str(a) for a in manifest.get("command") or [])),
        ("started", manifest.get("started_at", "n/a")),
        ("git revision", f"{git.get('commit', 'n/a')}{' (dirty)' if git.get('dirty') else ''}"),
        ("seed", (manifest.get("config") or {}).get("seed", "n/a")),
        ("policy", policy.get("label") or policy.get("name") or "n/a"),
        ("versions", ", ".join(f"{k} {v}" for k, v in (manifest.get("packages") or {}).items())),
        ("machine", json.dumps(manifest.get("machine") or {}, default=str)),
    ]
    options = json.dumps(
        {"config": manifest.get("config"), "policy options": policy.get("options")}, indent=1, default=str
    )
    return (
        table(("field", "value"), rows)
        + f"<details><summary>options</summary><pre>{esc(options)}</pre></details>"
    )


def throughput_html(rr: ReportRun) -> str:
    t = rr.throughput
    steps = rr.throughput.rate(t.steps)
    decisions = rr.throughput.rate(t.decisions)
    rows = [
        ("units timed", t.units),
        ("unit wall time (s, summed)", f"{t.wall_s:.2f}"),
        ("steps", _opt(t.steps)),
        ("steps/s", "n/a" if steps is None else f"{steps:.2f}"),
        ("model decisions", t.decisions),
        ("decisions/s", "n/a" if decisions is None else f"{decisions:.2f}"),
    ]
    return table(("throughput", "value"), rows)
