"""Simulator-truth tools for SpatialAgent on the generated SpatialScore-style sets.

Each generated item's ``ground_truth.jsonl`` record names the home (its seed and content key) and the
camera of every image. From that, :class:`SimTruthTools` rebuilds the home, renders each image's camera
again (RGB, metric depth, entity mask: the renders the images were saved from) and answers every tool call
from the scene state in the tool's own schema: exact boxes, masks and counts, median depths, surface
distances (MuJoCo's geom distance), 3D boxes from the bodies, camera extrinsics from the recorded poses,
optical flow from reprojecting the depth. So the agent's answer with these tools is wrong only when its
reasoning is.

An object is named as the questions name it ("red mug", "the sofa", or a category noun); a name that
matches no visible entity, or several where one is needed, is a tool error the core sees.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.static.generate import TRUTH_FILE
from benchmarks.static.nav_questions import UNNAMEABLE_NOUNS, Entity, home_entities, plural
from policies.agent.tools import ToolContext, ToolError
from policies.cli import InputError

_DEFAULT_MIN_PIXELS = 150


def read_truth(data: Path) -> dict[str, dict[str, Any]]:
    """Truth records by item id (the item ``index``) from the ``ground_truth.jsonl`` next to ``data``."""
    path = (data if data.is_dir() else data.parent) / TRUTH_FILE
    if not path.is_file():
        raise InputError(f"simulator-truth tools need {path}: run them on a set written by "
                         "'python -m benchmarks.static generate', or choose --agent-tools cv")  # fmt: skip
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return {str(r["index"]): r for r in records}


def min_pixels_of(data: Path) -> int:
    """The set's visibility threshold (``generation.json``), used to count and name entities as its questions do."""
    settings = (data if data.is_dir() else data.parent) / "generation.json"
    if settings.is_file():
        return int(json.loads(settings.read_text(encoding="utf-8")).get("min_pixels", _DEFAULT_MIN_PIXELS))
    return _DEFAULT_MIN_PIXELS


@dataclass
class _Shot:
    """One image's render and what it shows."""

    c2w: np.ndarray
    depth: np.ndarray
    entity: np.ndarray
    pixels: dict[int, int]


class SimScenes:
    """Rebuilds homes from truth records and renders their cameras (one render per image, cached per item)."""

    def __init__(self, min_pixels: int = _DEFAULT_MIN_PIXELS) -> None:
        self.min_pixels = min_pixels
        self._renderer: Any = None
        self._key: tuple[str, int] | None = None
        self._shots: dict[int, _Shot] = {}
        self.entities: list[Entity] = []

    def load(self, truth: Mapping[str, Any]) -> None:
        """Make ``truth``'s home current (re-rendering only when the item changes)."""
        from envs.navigation.scene import generate_scene, scene_key
        from envs.navigation.views import HomeRenderer

        key = (str(truth.get("scene_key")), int(truth["index"]))
        if key == self._key:
            return
        camera = truth["camera"]
        if self._renderer is None or (self._renderer.intrinsics.width, self._renderer.intrinsics.height,
                                      self._renderer.intrinsics.fovy_deg) != (camera["width"], camera["height"], camera["fovy_deg"]):  # fmt: skip
            self.close()
            self._renderer = HomeRenderer(camera["width"], camera["height"], camera["fovy_deg"])
        scene = generate_scene(int(truth["home_seed"]))
        if scene_key(scene) != truth["scene_key"]:
            raise ToolError("backend_error", f"home seed {truth['home_seed']} no longer builds scene {truth['scene_key']} (generator changed)")
        self.world = self._renderer.load(scene)
        self.entities = home_entities(scene, self.world)
        self._key, self._shots, self._truth = key, {}, truth

    @property
    def intrinsics(self) -> Any:
        return self._renderer.intrinsics

    def shot(self, index: int) -> _Shot:
        """The render of image ``index`` of the current item."""
        from envs.navigation.camera import pose_from_c2w

        if index not in self._shots:
            c2w = np.asarray(self._truth["cameras_c2w"][index], dtype=float)
            frame = self._renderer.render(pose_from_c2w(c2w))
            counts = np.bincount(frame.entity.ravel(), minlength=len(self.entities) + 1)
            self._shots[index] = _Shot(c2w, frame.depth, frame.entity, {e.label: int(counts[e.label]) for e in self.entities})
        return self._shots[index]

    def names(self) -> dict[str, str]:
        """Entity id -> the name questions use for it."""
        return {e.id: e.name for e in self.entities}

    def matching(self, shot: _Shot, query: str) -> list[Entity]:
        """Visible entities (``min_pixels``) a description names: its full name, or its category noun."""
        text = query.strip().lower()
        text = text[4:] if text.startswith("the ") else text
        return [e for e in self.entities if shot.pixels[e.label] >= self.min_pixels and e.noun not in UNNAMEABLE_NOUNS
                and text in (e.name, e.noun, plural(e.noun))]  # fmt: skip

    def one(self, shot: _Shot, query: str) -> Entity:
        """The single visible entity ``query`` names, or a :class:`ToolError` saying why not."""
        found = self.matching(shot, query)
        if len(found) != 1:
            raise ToolError("not_found" if not found else "ambiguous",
                            f"{query[:60]!r}: {'no visible object' if not found else f'{len(found)} visible objects'} of that name")  # fmt: skip
        return found[0]

    def close(self) -> None:
        if self._renderer is not None:
            self._renderer.close()
            self._renderer, self._key = None, None


def _box(mask: np.ndarray) -> list[int]:
    rows, cols = np.nonzero(mask)
    return [int(cols.min()), int(rows.min()), int(cols.max()) + 1, int(rows.max()) + 1]


class SimTruthTools:
    """Every perception tool answered from the simulator (``context.privileged``: the item's truth record)."""

    name = "simulator-truth"

    def __init__(self, scenes: SimScenes) -> None:
        self.scenes = scenes

    def tools(self) -> Sequence[str]:
        return ("LocalizeObjects", "CountObjects", "GetObjectMask", "Detect3DObjects", "EstimateOpticalFlow",
                "GetCameraParameters", "EstimateObjectDepth", "EstimateRegionDepth", "Get3DDistance", "EstimateObjectDistance")  # fmt: skip

    def run(self, tool: str, args: Mapping[str, Any], context: ToolContext) -> dict[str, Any]:
        if not isinstance(context.privileged, Mapping) or "cameras_c2w" not in context.privileged:
            raise ToolError("unavailable", f"{tool}: simulator truth exists only for generated items (no truth record)")
        self.scenes.load(context.privileged)
        return getattr(self, "_" + tool)(args)

    # -- general perception
    def _LocalizeObjects(self, args: Mapping[str, Any]) -> dict[str, Any]:
        shot = self.scenes.shot(args["image"])
        regions = [{"label": q, "bbox": _box(shot.entity == e.label), "confidence": 1.0}
                   for q in args["objects"] for e in self.scenes.matching(shot, q)]  # fmt: skip
        return {"regions": regions}

    def _CountObjects(self, args: Mapping[str, Any]) -> dict[str, Any]:
        shot = self.scenes.shot(args["image"])
        found = self.scenes.matching(shot, args["object"])
        points = []
        for e in found:
            rows, cols = np.nonzero(shot.entity == e.label)
            points.append([round(float(cols.mean()), 1), round(float(rows.mean()), 1)])
        return {"count": len(found), "points": points}

    def _GetObjectMask(self, args: Mapping[str, Any]) -> dict[str, Any]:
        shot = self.scenes.shot(args["image"])
        results = []
        for q in args["objects"]:
            try:
                mask = shot.entity == self.scenes.one(shot, q).label
                results.append({"object": q, "mask_area": round(float(mask.mean()), 5), "bbox": _box(mask), "error": None})
            except ToolError as error:
                results.append({"object": q, "mask_area": None, "bbox": None, "error": str(error)})
        return {"results": results}

    def _Detect3DObjects(self, args: Mapping[str, Any]) -> dict[str, Any]:
        from envs.navigation import measure

        shot, world = self.scenes.shot(args["image"]), self.scenes.world
        objects = []
        for q in args["objects"]:
            for e in self.scenes.matching(shot, q):
                centre = (measure.centre(world, e.label) - shot.c2w[:3, 3]) @ shot.c2w[:3, :3]
                length, width, height = (float(v) for v in measure.extents(world, e.label))
                body_x = world.data.xmat[world.model.geom_bodyid[measure.entity_geoms(world, e.label)[0]]].reshape(3, 3)[:, 0]
                in_camera = body_x @ shot.c2w[:3, :3]
                objects.append({"label": q, "bbox_3d": {"x": float(centre[0]), "y": float(centre[1]), "z": float(centre[2]),
                                "width": width, "height": height, "length": length,
                                "yaw": float(math.atan2(in_camera[0], in_camera[2]))}})  # fmt: skip
        return {"objects": objects}

    # -- motion and transformation
    def _EstimateOpticalFlow(self, args: Mapping[str, Any]) -> dict[str, Any]:
        from envs.navigation.camera import backproject, pixel_rays, project

        if len(args["images"]) != 2:
            raise ToolError("invalid_arguments", "EstimateOpticalFlow: expected exactly two images")
        first, second = (self.scenes.shot(i) for i in args["images"])
        intr = self.scenes.intrinsics
        u, v, z = project(backproject(first.depth, intr, first.c2w), intr, second.c2w)
        rays = pixel_rays(intr) * intr.focal
        u0, v0 = rays[..., 0] + intr.width / 2, rays[..., 1] + intr.height / 2
        valid = z > 1e-6
        return {"mean_flow_x": round(float((u - u0)[valid].mean()), 3), "mean_flow_y": round(float((v - v0)[valid].mean()), 3)}

    def _GetCameraParameters(self, args: Mapping[str, Any]) -> dict[str, Any]:
        shots = [self.scenes.shot(i) for i in args["images"]]
        K = self.scenes.intrinsics.matrix()
        output = []
        for index, shot in zip(args["images"], shots):
            extrinsic = np.linalg.inv(shot.c2w) @ shots[0].c2w  # first camera's frame -> this camera's frame
            output.append({"image_index": index, "extrinsic": np.round(extrinsic[:3], 6).tolist(), "intrinsic": np.round(K, 4).tolist()})
        return {"output": output, "translation_scale": "metric"}

    # -- pose and geometry
    def _EstimateObjectDepth(self, args: Mapping[str, Any]) -> dict[str, Any]:
        shot = self.scenes.shot(args["image"])
        results = []
        for q in args["objects"]:
            try:
                depth = float(np.median(shot.depth[shot.entity == self.scenes.one(shot, q).label]))
                results.append({"object": q, "depth": round(depth, 4), "error": None})
            except ToolError as error:
                results.append({"object": q, "depth": None, "error": str(error)})
        return {"results": results}

    def _EstimateRegionDepth(self, args: Mapping[str, Any]) -> dict[str, Any]:
        shot = self.scenes.shot(args["image"])
        height, width = shot.depth.shape
        depths = []
        for box in args["bboxes"]:
            left, top = max(0, int(box[0])), max(0, int(box[1]))
            right, bottom = min(width, int(math.ceil(box[2]))), min(height, int(math.ceil(box[3])))
            if right <= left or bottom <= top:
                depths.append({"bbox": box, "depth": None, "error": "the box is empty inside the image"})
                continue
            region = shot.depth[top:bottom, left:right]
            value = region.mean() if args["mode"] != "center" else region[region.shape[0] // 2, region.shape[1] // 2]
            depths.append({"bbox": box, "depth": round(float(value), 4), "error": None})
        return {"depths": depths, "unit": "meters"}

    def _Get3DDistance(self, args: Mapping[str, Any]) -> dict[str, Any]:
        from envs.navigation.camera import backproject

        shot = self.scenes.shot(args["image"])
        height, width = shot.depth.shape
        points = backproject(shot.depth, self.scenes.intrinsics, shot.c2w)
        ends = []
        for x, y in (args["point_1"], args["point_2"]):
            if not (0 <= x < width and 0 <= y < height):
                raise ToolError("invalid_arguments", f"Get3DDistance: pixel ({x}, {y}) is outside the {width}x{height} image")
            ends.append(points[int(y), int(x)])
        return {"distance_meters": round(float(np.linalg.norm(ends[0] - ends[1])), 4)}

    def _EstimateObjectDistance(self, args: Mapping[str, Any]) -> dict[str, Any]:
        from envs.navigation import measure

        if len(args["objects"]) != 2:
            raise ToolError("invalid_arguments", "EstimateObjectDistance: expected exactly two objects")
        shot = self.scenes.shot(args["image"])
        a, b = (self.scenes.one(shot, q) for q in args["objects"])
        return {"distance_meters": round(measure.closest_distance(self.scenes.world, a.label, b.label), 4)}
