"""Robustness suites shared by every closed-loop family: ``--perturb`` units next to a clean control arm,
expert certification with a JSON certificate cache, and the per-axis / per-level report.

The perturbations themselves are applied by the envs (:mod:`envs.perturbation`); this room decides which
variants run (:mod:`~benchmarks.robustness.suite`), which the family's expert solved
(:mod:`~benchmarks.robustness.certificates`) and how they score (:mod:`~benchmarks.robustness.report`);
:mod:`~benchmarks.robustness.runner` is the flow a family's benchmark calls (its contract is there).
"""

from benchmarks.robustness.certificates import CertificateCache, certificate_key, certify
from benchmarks.robustness.config import RobustnessArgs
from benchmarks.robustness.report import robustness_markdown, robustness_table
from benchmarks.robustness.runner import (
    certificates_path,
    robustness_summary,
    robustness_units,
    run_certified,
)
from benchmarks.robustness.suite import variant_units

__all__ = [
    "CertificateCache",
    "RobustnessArgs",
    "certificate_key",
    "certificates_path",
    "certify",
    "robustness_markdown",
    "robustness_summary",
    "robustness_table",
    "robustness_units",
    "run_certified",
    "variant_units",
]
