"""Provenance written next to every result: command, configuration, seeds, versions, git revision, machine.

:func:`build_manifest` is the one manifest of the project: the closed-loop runner, the static runner and the
goal-scoring commands all start from it and add their own sections (``extra``)."""

from __future__ import annotations

import dataclasses
import datetime as dt
import importlib.metadata
import os
import platform
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchmarks.core.jsonsafe import json_safe

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

# Distributions whose versions can change a number in a results table.
TRACKED_PACKAGES = (
    "spatial-arena",
    "numpy",
    "scipy",
    "gymnasium",
    "pybullet",
    "mujoco",
    "robosuite",
    "rpent-libero",
    "torch",
    "transformers",
    "tokenizers",
    "accelerate",
    "pillow",
    "ray",
    "pyarrow",
    "matplotlib",
)
_RENDER_ENV = ("MUJOCO_GL", "PYOPENGL_PLATFORM", "OMP_NUM_THREADS")
_REPO = Path(__file__).resolve().parents[2]


def package_versions(names: tuple[str, ...] = TRACKED_PACKAGES) -> dict[str, str | None]:
    versions: dict[str, str | None] = {}
    for name in names:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def git_revision(repo: Path = _REPO) -> dict[str, Any]:
    """Commit and dirty flag of the project checkout (``None`` when it is not a git checkout)."""

    def git(*args: str) -> str | None:
        try:
            out = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            return None
        return out.stdout.strip() if out.returncode == 0 else None

    commit = git("rev-parse", "HEAD")
    status = git("status", "--porcelain", "--untracked-files=no")
    return {"commit": commit, "dirty": None if status is None else bool(status)}


def machine() -> dict[str, Any]:
    return {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "processor": platform.machine(),
        "cpu_count": os.cpu_count(),
        "render_env": {k: os.environ.get(k) for k in _RENDER_ENV},
    }


def machine_line() -> str:
    """The machine in one line, for committed results files (load average: how busy it was when measured)."""
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return (
        f"{platform.machine()}, {os.cpu_count()} cores ({platform.processor() or 'unknown cpu'}), "
        f"Python {platform.python_version()}, load average {load:.1f} at start"
    )


def utc_now() -> str:
    """The current UTC time in ISO 8601 to the second (``started_at``, a run's ``finished``)."""
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


def build_manifest(
    benchmark: str, config: DataclassInstance | Mapping[str, Any], extra: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The manifest of a run: ``benchmark``, ``command``, ``config`` (JSON-safe: paths as strings),
    ``started_at``, ``git`` (``commit``, ``dirty``), ``packages``, ``machine``, then ``extra``'s sections.

    ``config`` is the command's config dataclass (or a mapping)."""
    cfg = dataclasses.asdict(config) if dataclasses.is_dataclass(config) else dict(config)
    return {
        "benchmark": benchmark,
        "command": [Path(sys.executable).name, *sys.argv],
        "config": json_safe(cfg),
        "started_at": utc_now(),
        "git": git_revision(),
        "packages": package_versions(),
        "machine": machine(),
        **(extra or {}),
    }
