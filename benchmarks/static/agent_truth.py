"""Simulator-truth tools for SpatialAgent on the generated SpatialScore-style sets.

Each generated item's ``ground_truth.jsonl`` record names the home (its seed and content key) and the
camera of every image. From that, :class:`SimScenes` rebuilds the home and renders each image's camera
again (RGB, metric depth, entity mask: the renders the images were saved from), and
:class:`~policies.agent.truth_tools.TruthTools` answers every tool call from the scene state (see there).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from benchmarks.datagen.generate import TRUTH_FILE
from policies.agent.tools import ToolContext, ToolError
from policies.agent.truth_tools import DEFAULT_MIN_PIXELS as _DEFAULT_MIN_PIXELS
from policies.agent.truth_tools import TruthScenes, TruthTools
from policies.config_cli import InputError

SimTruthTools = TruthTools  # the name the static runner and tests use


def read_truth(data: Path) -> dict[str, dict[str, Any]]:
    """Truth records by item id (the item ``index``) from the ``ground_truth.jsonl`` next to ``data``."""
    path = (data if data.is_dir() else data.parent) / TRUTH_FILE
    if not path.is_file():
        raise InputError(
            f"simulator-truth tools need {path}: run them on a set written by "
            "'python -m benchmarks.static generate', or choose --agent-tools cv"
        )
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return {str(r["index"]): r for r in records}


def min_pixels_of(data: Path) -> int:
    """The set's visibility threshold (``generation.json``), used to count and name entities as its questions do."""
    settings = (data if data.is_dir() else data.parent) / "generation.json"
    if settings.is_file():
        return int(json.loads(settings.read_text(encoding="utf-8")).get("min_pixels", _DEFAULT_MIN_PIXELS))
    return _DEFAULT_MIN_PIXELS


class SimScenes(TruthScenes):
    """Rebuilds homes from generated items' truth records and renders their cameras (cached per item)."""

    def load(self, truth: Mapping[str, Any]) -> None:
        """Make ``truth``'s home current (re-rendering only when the item changes)."""
        from envs.navigation.scene import generate_scene, scene_key

        key = (str(truth.get("scene_key")), int(truth["index"]))
        if key == self._key:
            return
        scene = generate_scene(int(truth["home_seed"]))
        if scene_key(scene) != truth["scene_key"]:
            raise ToolError(
                "backend_error",
                f"home seed {truth['home_seed']} no longer builds scene {truth['scene_key']} (generator changed)",
            )
        camera = truth["camera"]
        self._use(key, scene, truth["cameras_c2w"], (camera["width"], camera["height"], camera["fovy_deg"]))

    def prepare(self, context: ToolContext) -> None:
        if not isinstance(context.privileged, Mapping) or "cameras_c2w" not in context.privileged:
            raise ToolError(
                "unavailable", "simulator truth exists only for generated items (no truth record)"
            )
        self.load(context.privileged)
