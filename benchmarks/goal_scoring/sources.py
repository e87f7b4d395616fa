"""Where generated start/goal pairs come from: the :class:`PairSource` protocol and its registry.

A pair source renders a start view, moves the camera (navigation) or the end-effector (manipulation)
along a motion it chooses, renders the goal view and returns both with the exact motion as a C2W
trajectory and/or a plan. ``generate_dataset`` draws one independent generator per sample
(``np.random.default_rng([seed, index])``), so a dataset is reproducible from its seed and any sample can
be regenerated alone.

Simulator-based sources register a lazy entry point here (``BUILTIN_SOURCES``: one line per source, like
``envs/__init__.py``'s families); users pass their own as ``--source package.module:ClassName``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from action_mapping import Plan, StepSizes
from benchmarks.goal_scoring.dataset import DatasetError, DatasetWriter, GoalDataset, load_dataset
from benchmarks.scoring.goal import KINDS
from policies.entry_point import load_entry_point

# name -> "module:factory", imported only when used (the simulators are optional extras).
BUILTIN_SOURCES: dict[str, str] = {
    "nav": "benchmarks.goal_scoring.nav_source:NavigationPairSource",  # needs the `nav` extra (MuJoCo)
    "manip": "benchmarks.goal_scoring.manip_source:PlayTableManipSource",  # needs the `calvin` extra (PyBullet)
}
_REGISTRY: dict[str, tuple[str | Callable[..., PairSource], dict[str, Any]]] = {}


@dataclass
class GeneratedPair:
    """One sample as a source produces it. Give ``trajectory`` (C2W, one pose per step boundary) and/or
    ``plan``; images are ``uint8`` ``H x W x 3``."""

    start_image: np.ndarray
    goal_image: np.ndarray
    trajectory: np.ndarray | None = None
    plan: Plan | None = None
    instruction: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)


@runtime_checkable
class PairSource(Protocol):
    """What ``generate`` needs from a generator of start/goal pairs."""

    kind: str  # "nav" or "manip"
    step_sizes: StepSizes  # metres / radians per count of the plans it produces
    max_step_num: int  # cap on one primitive's count in a step (the paper: 10)

    def sample(self, rng: np.random.Generator) -> GeneratedPair:
        """Draw one pair using only ``rng`` for randomness."""
        ...

    def describe(self) -> dict[str, Any]:
        """JSON-safe identity and settings, recorded in ``dataset.json``."""
        ...


def register_source(name: str, entry_point: str | Callable[..., PairSource], **kwargs: Any) -> None:
    """Register a source factory (``"module:Class"`` or a callable) under ``name`` with default kwargs."""
    _REGISTRY[name] = (entry_point, kwargs)


def registered_sources() -> list[str]:
    return sorted({*BUILTIN_SOURCES, *_REGISTRY})


def make_source(name: str, **kwargs: Any) -> PairSource:
    """Build the source registered as ``name``, or the one at import path ``module:Class``."""
    if name in _REGISTRY:
        entry, defaults = _REGISTRY[name]
    elif name in BUILTIN_SOURCES:
        entry, defaults = BUILTIN_SOURCES[name], {}
    elif ":" in name:
        entry, defaults = name, {}
    else:
        raise DatasetError(_no_source_message(name))
    factory = _load(entry) if isinstance(entry, str) else entry
    try:
        source = factory(**{**defaults, **kwargs})
    except TypeError as e:
        raise DatasetError(
            f"cannot build pair source {name!r} with {kwargs}: {e}. Fix: check --source-kwargs "
            "against the source's arguments"
        ) from e
    if not isinstance(source, PairSource) or source.kind not in KINDS:
        raise DatasetError(
            f"source {name!r} built {type(source).__name__}, which does not implement PairSource "
            f"(kind in {KINDS}, step_sizes, max_step_num, sample(rng), describe())"
        )
    return source


def _no_source_message(name: str) -> str:
    known = ", ".join(registered_sources()) or "none"
    return (
        f"no pair source is registered under {name!r} (registered: {known}). Pass your own with --source "
        "package.module:ClassName (a class implementing benchmarks.goal_scoring.sources.PairSource), or build a "
        "dataset from your own trajectories with `convert`"
    )


def _load(entry_point: str) -> Callable[..., PairSource]:
    try:
        return load_entry_point(entry_point, what="pair source")
    except (ImportError, AttributeError, ValueError) as e:
        hint = (
            "install the simulator extra it needs (pip install -e '.[nav]' for nav, '.[calvin]' for manip)"
            if entry_point in BUILTIN_SOURCES.values()
            else "check the import path"
        )
        raise DatasetError(f"cannot load pair source {entry_point!r}: {e}. Fix: {hint}") from e


def generate_dataset(
    source: PairSource, n: int, seed: int, root: str | Path, *, name: str = ""
) -> GoalDataset:
    """Write ``n`` samples drawn from ``source`` to a new dataset at ``root``; sample i uses rng([seed, i])."""
    if n < 1:
        raise DatasetError(f"n must be >= 1, got {n}")
    header = {
        "name": name or Path(root).name,
        "generator": {"source": source.describe(), "seed": seed, "n": n},
    }
    with DatasetWriter(root, header) as writer:
        for index in range(n):
            pair = source.sample(np.random.default_rng([seed, index]))
            writer.add(
                _record(source, pair, f"{source.kind}-{index:05d}", seed, index),
                pair.start_image,
                pair.goal_image,
            )
    return load_dataset(root)


def _record(source: PairSource, pair: GeneratedPair, sid: str, seed: int, index: int) -> dict[str, Any]:
    if pair.trajectory is None and pair.plan is None:
        raise DatasetError(
            f"source {type(source).__name__} returned sample {sid} with neither trajectory nor plan"
        )
    record: dict[str, Any] = {
        "id": sid,
        "kind": source.kind,
        "instruction": pair.instruction,
        "step_sizes": {"translation": source.step_sizes.translation, "rotation": source.step_sizes.rotation},
        "max_step_num": source.max_step_num,
        "source": type(source).__name__,
        "metadata": {**pair.metadata, "seed": seed, "index": index},
    }
    if pair.plan is not None:
        record["plan"] = pair.plan.to_json()
    if pair.trajectory is not None:
        record["trajectory"] = np.asarray(pair.trajectory, dtype=float).tolist()
    return record
