"""Which units a robustness run holds: the clean control arm (the family's units, unchanged) and, for each
of them, one variant per requested axis and level."""

from __future__ import annotations

from collections.abc import Sequence

from benchmarks.core import WorkUnit
from envs.perturbation import PerturbationError, PerturbationSpec, parse_perturb
from policies.config_cli import InputError


def variant_units(clean: Sequence[WorkUnit], perturb: str, family: str) -> list[WorkUnit]:
    """``clean`` followed by its variants: unit key ``KEY~AXIS:LEVEL``, spec ``{..., "perturbation": spec}``.

    A variant's seed is its clean unit's seed, so every axis and level of one episode draws from the same
    run seed (each axis salts its own generator)."""
    try:
        pairs = parse_perturb(perturb, family)
    except PerturbationError as error:
        raise InputError(str(error)) from None
    units = list(clean)
    for unit in clean:
        for axis, levels in pairs:
            for level in levels:
                spec = PerturbationSpec(axis, level, unit.seed)
                units.append(
                    WorkUnit(
                        len(units),
                        f"{unit.key}~{axis}:{level}",
                        unit.seed,
                        {**unit.spec, "perturbation": spec.to_json()},
                    )
                )
    return units
