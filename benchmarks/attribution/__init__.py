"""State probes and perception-vs-action attribution of closed-loop failures (``--probe``).

At the decisions a schedule picks (:mod:`~benchmarks.attribution.config`), a :class:`Prober`
(:mod:`~benchmarks.attribution.prober`) keeps the images the policy saw and the simulator state; after the
episode the family's generator (:mod:`~benchmarks.attribution.navigation`) writes exact-answer questions about
the target from that state, asked in SpatialScore's format and scored by its scorer
(:mod:`~benchmarks.attribution.questions`); :mod:`~benchmarks.attribution.report` splits failed decisions into
"perceived correctly, acted wrongly" and "misperceived". The method: docs/guide/attribution.md.
"""

from benchmarks.attribution.config import ProbeArgs, ProbeSchedule, probe_model
from benchmarks.attribution.prober import ProbeFamily, Prober, prober_for
from benchmarks.attribution.report import (
    attributed,
    attribution_files,
    attribution_markdown,
    attribution_table,
    probe_lines,
)

__all__ = [
    "ProbeArgs",
    "ProbeFamily",
    "ProbeSchedule",
    "Prober",
    "attributed",
    "attribution_files",
    "attribution_markdown",
    "attribution_table",
    "probe_lines",
    "probe_model",
    "prober_for",
]
