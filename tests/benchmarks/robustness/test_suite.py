"""Variant units: the clean arm first, then each unit's variants with the clean unit's seed."""

from __future__ import annotations

import pytest

import envs.navigation.perturbations  # noqa: F401  (registers the axes)
from benchmarks.core import WorkUnit
from benchmarks.robustness import variant_units
from policies.config_cli import InputError

CLEAN = [WorkUnit(0, "e0", 11, {"episode": {"id": 0}}), WorkUnit(1, "e1", 12, {"episode": {"id": 1}})]


def test_clean_arm_then_variants():
    units = variant_units(CLEAN, "camera:2,paraphrase", "eb_navigation")
    assert units[:2] == CLEAN and len(units) == 2 + 2 * 6
    assert [u.index for u in units] == list(range(len(units)))
    assert units[2].key == "e0~camera:2" and units[2].spec["perturbation"] == {
        "axis": "camera",
        "level": 2,
        "seed": 11,
    }
    assert units[2].spec["episode"] == {"id": 0} and units[-1].seed == 12


def test_all_is_every_axis_at_every_level():
    assert len(variant_units(CLEAN[:1], "all", "eb_navigation")) == 1 + 10 * 5


def test_bad_values_are_input_errors():
    with pytest.raises(InputError, match="--perturb"):
        variant_units(CLEAN, "camera:7", "eb_navigation")
