"""Robustness suites shared by every closed-loop family: ``--perturb`` units next to a clean control arm,
expert certification with a JSON certificate cache, and the per-axis / per-level report.

The perturbations themselves are applied by the envs (:mod:`envs.perturbation`); this room decides which
variants run (:mod:`~benchmarks.robustness.suite`), which the family's expert solved
(:mod:`~benchmarks.robustness.certificates`) and how they score (:mod:`~benchmarks.robustness.report`).
"""

from benchmarks.robustness.certificates import CertificateCache, certificate_key, certify
from benchmarks.robustness.config import RobustnessArgs
from benchmarks.robustness.report import robustness_markdown, robustness_table
from benchmarks.robustness.suite import variant_units

__all__ = [
    "CertificateCache",
    "RobustnessArgs",
    "certificate_key",
    "certify",
    "robustness_markdown",
    "robustness_table",
    "variant_units",
]
