"""Simulator-truth perception tools: every tool answered from the navigation homes' scene state.

:class:`TruthTools` answers each call in the tool's own schema from renders of the scene (RGB, metric
depth, entity mask) and its MuJoCo state: exact boxes, masks and counts, median depths, surface distances
(MuJoCo's geom distance), 3D boxes and headings from the bodies, camera extrinsics from the poses, optical
flow from reprojecting the depth. So the agent's answer with these tools is wrong only when its reasoning is.

Where the scene and cameras come from is a :class:`TruthScenes`: :class:`EnvScenes` here (closed loop: the
live env's scene, the current camera and, for goal-image tasks, the goal camera), or the static
benchmarks' ``SimScenes`` (rebuilt from a generated set's ``ground_truth.jsonl``).

An object is named as questions and instructions name it ("red mug", "the sofa", or a category noun); a name
that matches no visible entity, or several where one is needed, is a tool error the core sees.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from envs.navigation.entities import UNNAMEABLE_NOUNS, Entity, home_entities, plural
from policies.agent.tools import ToolContext, ToolError

DEFAULT_MIN_PIXELS = 150  # an entity is visible (nameable, countable) from this many mask pixels on


@dataclass
class Shot:
    """One image's render and what it shows."""

    c2w: np.ndarray
    depth: np.ndarray
    entity: np.ndarray
    pixels: dict[int, int]


class TruthScenes:
    """A home's renderer and its cameras: one render per image of the current question, cached.

    Subclasses say where the home and the cameras come from (:meth:`prepare`)."""

    def __init__(self, min_pixels: int = DEFAULT_MIN_PIXELS) -> None:
        self.min_pixels = min_pixels
        self._renderer: Any = None
        self._key: Any = None
        self._cameras: list[np.ndarray] = []
        self._shots: dict[int, Shot] = {}
        self.entities: list[Entity] = []
        self.world: Any = None

    def prepare(self, context: ToolContext) -> None:
        """Make the home and cameras of ``context`` current, or raise ``ToolError("unavailable")``."""
        raise NotImplementedError

    def _use(
        self, key: Any, scene: Mapping[str, Any], cameras: Sequence[Any], size: tuple[int, int, float]
    ) -> None:
        """Make ``scene`` (compiled once per ``key``) with ``cameras`` (camera-to-world, one per image) current."""
        from envs.navigation.views import HomeRenderer

        if key == self._key:
            return
        if (
            self._renderer is None
            or (
                self._renderer.intrinsics.width,
                self._renderer.intrinsics.height,
                self._renderer.intrinsics.fovy_deg,
            )
            != size
        ):
            self.close()
            self._renderer = HomeRenderer(*size)
        self.world = self._renderer.load(dict(scene))
        self.entities = home_entities(dict(scene), self.world)
        self._key, self._shots = key, {}
        self._cameras = [np.asarray(c, dtype=float) for c in cameras]

    @property
    def intrinsics(self) -> Any:
        return self._renderer.intrinsics

    def shot(self, index: int) -> Shot:
        """The render of image ``index`` of the current question."""
        from envs.navigation.camera import pose_from_c2w

        if index >= len(self._cameras):
            raise ToolError("unavailable", f"image-{index}: the simulator has no camera for this image")
        if index not in self._shots:
            c2w = self._cameras[index]
            frame = self._renderer.render(pose_from_c2w(c2w))
            counts = np.bincount(frame.entity.ravel(), minlength=len(self.entities) + 1)
            self._shots[index] = Shot(
                c2w, frame.depth, frame.entity, {e.label: int(counts[e.label]) for e in self.entities}
            )
        return self._shots[index]

    def names(self) -> dict[str, str]:
        """Entity id -> the name questions use for it."""
        return {e.id: e.name for e in self.entities}

    def matching(self, shot: Shot, query: str) -> list[Entity]:
        """Visible entities (``min_pixels``) a description names: its full name, or its category noun (not for
        nouns that also name structure, e.g. "lamp": every room has a ceiling lamp)."""
        text = query.strip().lower()
        text = text[4:] if text.startswith("the ") else text
        return [
            e
            for e in self.entities
            if shot.pixels[e.label] >= self.min_pixels
            and (text == e.name or (e.noun not in UNNAMEABLE_NOUNS and text in (e.noun, plural(e.noun))))
        ]

    def one(self, shot: Shot, query: str) -> Entity:
        """The single visible entity ``query`` names, or a :class:`ToolError` saying why not."""
        found = self.matching(shot, query)
        if len(found) != 1:
            raise ToolError(
                "not_found" if not found else "ambiguous",
                f"{query[:60]!r}: {'no visible object' if not found else f'{len(found)} visible objects'} of that name",
            )
        return found[0]

    def close(self) -> None:
        if self._renderer is not None:
            self._renderer.close()
            self._renderer, self._key = None, None


class EnvScenes(TruthScenes):
    """Closed loop: the scene of the navigation env the policy acts in. ``context.privileged`` is
    ``{"scene": dict, "scene_key": str, "cameras_c2w": [...], "size": (width, height, fovy)}``, written by
    the policy for each decision (the current camera first, then e.g. the goal camera of a goal-image task)."""

    def prepare(self, context: ToolContext) -> None:
        p = context.privileged
        if not isinstance(p, Mapping) or "scene" not in p or "cameras_c2w" not in p:
            raise ToolError(
                "unavailable",
                "simulator truth needs the env's scene (the policy was not bound to a navigation env)",
            )
        key = (p["scene_key"], tuple(np.asarray(c, dtype=float).tobytes() for c in p["cameras_c2w"]))
        self._use(key, p["scene"], p["cameras_c2w"], tuple(p["size"]))


def _box(mask: np.ndarray) -> list[int]:
    rows, cols = np.nonzero(mask)
    return [int(cols.min()), int(rows.min()), int(cols.max()) + 1, int(rows.max()) + 1]


class TruthTools:
    """Every perception tool answered from the simulator; ``scenes`` says which home and cameras."""

    name = "simulator-truth"

    def __init__(self, scenes: TruthScenes) -> None:
        self.scenes = scenes

    def tools(self) -> Sequence[str]:
        return (
            "LocalizeObjects",
            "CountObjects",
            "GetObjectMask",
            "Detect3DObjects",
            "EstimateOpticalFlow",
            "GetCameraParameters",
            "EstimateObjectDepth",
            "EstimateRegionDepth",
            "Get3DDistance",
            "EstimateObjectDistance",
        )

    def run(self, tool: str, args: Mapping[str, Any], context: ToolContext) -> dict[str, Any]:
        self.scenes.prepare(context)
        return getattr(self, "_" + tool)(args)

    # -- general perception
    def _LocalizeObjects(self, args: Mapping[str, Any]) -> dict[str, Any]:
        shot = self.scenes.shot(args["image"])
        regions = [
            {"label": q, "bbox": _box(shot.entity == e.label), "confidence": 1.0}
            for q in args["objects"]
            for e in self.scenes.matching(shot, q)
        ]
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
                results.append(
                    {
                        "object": q,
                        "mask_area": round(float(mask.mean()), 5),
                        "bbox": _box(mask),
                        "error": None,
                    }
                )
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
                body_x = world.data.xmat[
                    world.model.geom_bodyid[measure.entity_geoms(world, e.label)[0]]
                ].reshape(3, 3)[:, 0]
                in_camera = body_x @ shot.c2w[:3, :3]
                objects.append(
                    {
                        "label": q,
                        "bbox_3d": {
                            "x": float(centre[0]),
                            "y": float(centre[1]),
                            "z": float(centre[2]),
                            "width": width,
                            "height": height,
                            "length": length,
                            "yaw": float(math.atan2(in_camera[0], in_camera[2])),
                        },
                    }
                )
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
        return {
            "mean_flow_x": round(float((u - u0)[valid].mean()), 3),
            "mean_flow_y": round(float((v - v0)[valid].mean()), 3),
        }

    def _GetCameraParameters(self, args: Mapping[str, Any]) -> dict[str, Any]:
        shots = [self.scenes.shot(i) for i in args["images"]]
        K = self.scenes.intrinsics.matrix()
        output = []
        for index, shot in zip(args["images"], shots):
            extrinsic = np.linalg.inv(shot.c2w) @ shots[0].c2w  # first camera's frame -> this camera's frame
            output.append(
                {
                    "image_index": index,
                    "extrinsic": np.round(extrinsic[:3], 6).tolist(),
                    "intrinsic": np.round(K, 4).tolist(),
                }
            )
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
            value = (
                region.mean()
                if args["mode"] != "center"
                else region[region.shape[0] // 2, region.shape[1] // 2]
            )
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
                raise ToolError(
                    "invalid_arguments",
                    f"Get3DDistance: pixel ({x}, {y}) is outside the {width}x{height} image",
                )
            ends.append(points[int(y), int(x)])
        return {"distance_meters": round(float(np.linalg.norm(ends[0] - ends[1])), 4)}

    def _EstimateObjectDistance(self, args: Mapping[str, Any]) -> dict[str, Any]:
        from envs.navigation import measure

        if len(args["objects"]) != 2:
            raise ToolError("invalid_arguments", "EstimateObjectDistance: expected exactly two objects")
        shot = self.scenes.shot(args["image"])
        a, b = (self.scenes.one(shot, q) for q in args["objects"])
        return {"distance_meters": round(measure.closest_distance(self.scenes.world, a.label, b.label), 4)}
