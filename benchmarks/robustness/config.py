"""The robustness flags every closed-loop benchmark config takes (a dataclass mixin)."""

from __future__ import annotations

from dataclasses import dataclass

from policies.config_cli import arg


@dataclass
class RobustnessArgs:
    """Robustness (perturbed variants next to the clean arm)"""

    perturb: str | None = arg(
        None,
        "run perturbed variants too: AXIS[:LEVEL], several separated by commas, or all (every axis, "
        "levels 1-5); the unperturbed episodes run as the clean control arm",
    )
    include_uncertified: bool = arg(
        False, "keep variants the family's expert could not solve in the perturbed scores"
    )
    certificates: str | None = arg(
        None,
        "certificate cache (JSON) of expert-checked variants (default: OUTPUT/BENCHMARK/certificates.json)",
    )
