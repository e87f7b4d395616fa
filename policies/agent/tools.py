"""SpatialAgent's toolbox: typed tool specifications and interchangeable backends (SpatialScore Sec. 3.4).

A :class:`ToolSpec` is what the core model sees: name, group, description, typed arguments, the fields
it returns, and a usage example rendered into the prompt. A :class:`ToolBackend` is what answers a call:
the same tool can be served by the simulator's ground truth, by classical computer vision (OpenCV), or by
a learned model, and the agent cannot tell which, so swapping backends separates seeing from reasoning.

Arguments are checked against the spec before a backend runs (wrong names, types or image references are
a counted ``invalid_arguments`` failure, never a crash), and a backend's answer is checked to carry every
field the spec promises.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

GROUPS = ("general perception", "motion and transformation", "pose and geometry", "auxiliary")
_IMAGE_REF = "image-"
MAX_LIST_ITEMS = 16  # longest list argument a call may pass (objects, boxes): a plan is a few items


class ToolError(Exception):
    """A call that cannot be answered; ``kind`` is counted in the trace (invalid_arguments, unavailable...)."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


@dataclass(frozen=True)
class Arg:
    """One typed argument: ``type`` is one of image, images, text, texts, box, boxes, point, number, integer."""

    name: str
    type: str
    doc: str
    required: bool = True
    default: Any = None


@dataclass(frozen=True)
class ToolSpec:
    """A tool as the core model sees it (name, group, description, typed arguments, returns, example)."""

    name: str
    group: str
    description: str
    args: tuple[Arg, ...]
    returns: Mapping[str, str]
    example: Mapping[str, Any]

    def render(self) -> str:
        """The spec as it goes into the prompt (stable text: pinned by snapshot tests)."""
        args = {
            a.name: f"({a.type}{'' if a.required else f', optional, default {a.default}'}) {a.doc}"
            for a in self.args
        }
        return "\n".join(
            [
                f"### {self.name} ({self.group})",
                f"description: {self.description}",
                f"args_spec: {json.dumps(args, ensure_ascii=False)}",
                f"rets_spec: {json.dumps(dict(self.returns), ensure_ascii=False)}",
                f"example: {json.dumps({'name': self.name, 'arguments': dict(self.example)}, ensure_ascii=False)}",
            ]
        )


@dataclass(frozen=True)
class ToolCall:
    """A parsed call: tool name and raw arguments (checked by :func:`check_arguments` before running)."""

    name: str
    arguments: Mapping[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "arguments": dict(self.arguments)}


@dataclass
class ToolContext:
    """What a backend may look at for one question: the images (RGB uint8) and, for simulator-truth
    backends, a privileged handle on the scene the images were rendered from."""

    images: Sequence[np.ndarray]
    privileged: Any = None
    meta: dict[str, Any] = field(default_factory=dict)


class ToolBackend(Protocol):
    """Answers calls of the tools it names (already checked against their specs)."""

    name: str

    def tools(self) -> Sequence[str]:
        """Names of the tools this backend serves."""
        ...

    def run(self, tool: str, args: Mapping[str, Any], context: ToolContext) -> dict[str, Any]:
        """The tool's result (the fields of its spec's ``returns``); raise :class:`ToolError` to fail."""
        ...


# ------------------------------------------------------------------------------------------ the specs

_IMG = Arg("image", "image", "The image to analyze, e.g. 'image-0'.")
_PAIR = Arg("images", "images", "Exactly two images, earlier first, e.g. ['image-0', 'image-1'].")
_OBJECTS = Arg("objects", "texts", "List of object descriptions, e.g. ['red mug', 'sofa'].")

SPECS: dict[str, ToolSpec] = {
    s.name: s
    for s in (
        ToolSpec(
            "LocalizeObjects",
            GROUPS[0],
            "Localize objects in an image. Returns one 2D bounding box per detected instance, in pixels "
            "[left, top, right, bottom]; several boxes for one description mean the reference is ambiguous.",
            (_IMG, _OBJECTS),
            {"regions": "List of {label: str, bbox: [left, top, right, bottom], confidence: float}."},
            {"image": "image-0", "objects": ["red mug", "sofa"]},
        ),
        ToolSpec(
            "CountObjects",
            GROUPS[0],
            "Count the instances of one object category visible in an image; returns one point per instance.",
            (_IMG, Arg("object", "text", "The object category to count, e.g. 'chair'.")),
            {
                "count": "Number of instances (int).",
                "points": "List of [x, y] pixel points, one per instance.",
            },
            {"image": "image-0", "object": "chair"},
        ),
        ToolSpec(
            "GetObjectMask",
            GROUPS[0],
            "Segment objects (box-prompted segmentation). Returns each object's mask area as a fraction of the "
            "image and its bounding box.",
            (_IMG, _OBJECTS),
            {
                "results": "List of {object: str, mask_area: float, bbox: [left, top, right, bottom], error: str or null}."
            },
            {"image": "image-0", "objects": ["coffee mug"]},
        ),
        ToolSpec(
            "Detect3DObjects",
            GROUPS[0],
            "Detect objects and estimate their 3D boxes: x, y, z = centre in camera coordinates (meters; x right, "
            "y down, z forward); width, height, length = physical size along the object's own axes (meters); "
            "yaw = heading about the vertical axis relative to the camera (radians).",
            (_IMG, _OBJECTS),
            {"objects": "List of {label: str, bbox_3d: {x, y, z, width, height, length, yaw}} (floats)."},
            {"image": "image-0", "objects": ["sofa"]},
        ),
        ToolSpec(
            "EstimateOpticalFlow",
            GROUPS[1],
            "Dense optical flow between two images. Returns the mean displacement in pixels: mean_flow_x > 0: "
            "content moves right (camera turns or moves left); mean_flow_y > 0: content moves down.",
            (_PAIR,),
            {
                "mean_flow_x": "Mean horizontal displacement (pixels).",
                "mean_flow_y": "Mean vertical displacement (pixels).",
            },
            {"images": ["image-0", "image-1"]},
        ),
        ToolSpec(
            "MatchImagesSIFT",
            GROUPS[1],
            "Match SIFT keypoints between two images; returns matched pixel pairs.",
            (
                _PAIR,
                Arg("num_keypoints", "integer", "Max keypoints per image.", False, 1200),
                Arg("ratio_th", "number", "Lowe ratio-test threshold.", False, 0.75),
            ),
            {
                "matches": "Up to 50 matched pairs [[x1, y1], [x2, y2]].",
                "num_matches": "Total number of matches.",
            },
            {"images": ["image-0", "image-1"]},
        ),
        ToolSpec(
            "EstimateHomographyMatrix",
            GROUPS[1],
            "3x3 homography mapping points of the first image to the second (SIFT matches and RANSAC).",
            (
                _PAIR,
                Arg(
                    "ransac_reproj_threshold",
                    "number",
                    "Max reprojection error in RANSAC (pixels).",
                    False,
                    5.0,
                ),
            ),
            {
                "homography_matrix": "3x3 matrix (list of rows).",
                "inliers_count": "Inlier matches.",
                "total_matches": "Matches found.",
                "status": "'success' or 'failure'.",
            },
            {"images": ["image-0", "image-1"]},
        ),
        ToolSpec(
            "GetCameraParameters",
            GROUPS[2],
            "Camera intrinsics (3x3) and extrinsics (3x4 [R|t], OpenCV camera axes: x right, y down, z forward) "
            "of each image relative to the first image: a point X in the first camera's frame is R X + t in "
            "image i's frame. translation_scale says whether t is in meters ('metric') or a unit direction ('unit').",
            (Arg("images", "images", "One or more images, e.g. ['image-0', 'image-1']."),),
            {
                "output": "List of {image_index: int, extrinsic: 3x4, intrinsic: 3x3}.",
                "translation_scale": "'metric' or 'unit'.",
            },
            {"images": ["image-0", "image-1"]},
        ),
        ToolSpec(
            "EstimateObjectDepth",
            GROUPS[2],
            "Metric depth (meters) of objects: distance from the camera along the viewing direction, taken as the "
            "median over the object's visible surface. Not the distance between objects, not object size.",
            (_IMG, _OBJECTS),
            {"results": "List of {object: str, depth: float (m), error: str or null}."},
            {"image": "image-0", "objects": ["red mug", "sofa"]},
        ),
        ToolSpec(
            "EstimateRegionDepth",
            GROUPS[2],
            "Metric depth (meters) of image regions given as pixel boxes; mode 'mean' or 'center'.",
            (
                _IMG,
                Arg("bboxes", "boxes", "Boxes in pixels [[left, top, right, bottom], ...]."),
                Arg("mode", "text", "'mean' or 'center'.", False, "mean"),
            ),
            {
                "depths": "List of {bbox: list, depth: float (m), error: str or null}.",
                "unit": "Always 'meters'.",
            },
            {"image": "image-0", "bboxes": [[100, 50, 200, 150]]},
        ),
        ToolSpec(
            "Get3DDistance",
            GROUPS[2],
            "Absolute 3D distance (meters) between the scene points seen at two pixels of an image.",
            (
                _IMG,
                Arg("point_1", "point", "[x, y] pixel of the first point."),
                Arg("point_2", "point", "[x, y] pixel of the second point."),
            ),
            {"distance_meters": "The 3D distance (float, meters)."},
            {"image": "image-0", "point_1": [40, 100], "point_2": [180, 120]},
        ),
        ToolSpec(
            "EstimateObjectDistance",
            GROUPS[2],
            "Least 3D distance (meters) between the surfaces of two objects (closest point of each).",
            (_IMG, Arg("objects", "texts", "Exactly two object descriptions.")),
            {"distance_meters": "The least surface-to-surface distance (float, meters)."},
            {"image": "image-0", "objects": ["sofa", "tv stand"]},
        ),
        ToolSpec(
            "Terminate",
            GROUPS[3],
            "Give the final answer. Multiple choice: the option letter in parentheses, e.g. '(B)'; yes/no: 'yes' "
            "or 'no'; numbers: value and unit, e.g. '3.25 meters'. Call it only when confident.",
            (Arg("answer", "text", "The final answer, formatted as the question asks."),),
            {"answer": "The submitted answer."},
            {"answer": "(B)"},
        ),
    )
}
TERMINATE = "Terminate"


# ------------------------------------------------------------------------------------------ checking


def check_arguments(spec: ToolSpec, arguments: object, n_images: int) -> dict[str, Any]:
    """The call's arguments typed per ``spec`` (defaults filled in), or :class:`ToolError` naming the problem."""
    if not isinstance(arguments, Mapping):
        raise ToolError(
            "invalid_arguments", f"{spec.name}: 'arguments' must be an object, got {type(arguments).__name__}"
        )
    aliases = {"image": "images", "images": "image"}  # the paper's own examples mix the two names
    known = {a.name for a in spec.args}
    out: dict[str, Any] = {}
    for arg in spec.args:
        raw = arguments.get(arg.name, arguments.get(aliases.get(arg.name, ""), None))
        if raw is None:
            if arg.required:
                raise ToolError("invalid_arguments", f"{spec.name}: missing argument {arg.name!r}")
            out[arg.name] = arg.default
            continue
        out[arg.name] = _typed(arg, raw, n_images, spec.name)
    extra = sorted(set(arguments) - known - {aliases[k] for k in known if k in aliases})
    if extra:
        raise ToolError(
            "invalid_arguments", f"{spec.name}: unknown argument(s) {', '.join(map(str, extra[:5]))}"
        )
    return out


def _typed(arg: Arg, raw: Any, n_images: int, tool: str) -> Any:
    where = f"{tool}.{arg.name}"
    if arg.type == "image":
        raw = raw[0] if isinstance(raw, list) and len(raw) == 1 else raw
        return _image_index(raw, n_images, where)
    if arg.type == "images":
        values = raw if isinstance(raw, list) else [raw]
        if not values or len(values) > MAX_LIST_ITEMS:
            raise ToolError("invalid_arguments", f"{where}: expected 1 to {MAX_LIST_ITEMS} images")
        return [_image_index(v, n_images, where) for v in values]
    if arg.type == "text":
        if not isinstance(raw, str) or not raw.strip():
            raise ToolError("invalid_arguments", f"{where}: expected a non-empty string")
        return raw.strip()
    if arg.type == "texts":
        values = [raw] if isinstance(raw, str) else raw
        if (
            not isinstance(values, list)
            or not values
            or len(values) > MAX_LIST_ITEMS
            or not all(isinstance(v, str) and v.strip() for v in values)
        ):
            raise ToolError("invalid_arguments", f"{where}: expected 1 to {MAX_LIST_ITEMS} non-empty strings")
        return [v.strip() for v in values]
    if arg.type in ("number", "integer"):
        if isinstance(raw, bool) or not isinstance(raw, (int, float)) or not math.isfinite(raw):
            raise ToolError("invalid_arguments", f"{where}: expected a finite number")
        return int(raw) if arg.type == "integer" else float(raw)
    if arg.type == "point":
        return _numbers(raw, 2, where)
    if arg.type in ("box", "boxes"):
        boxes = raw if isinstance(raw, list) and raw and isinstance(raw[0], list) else [raw]
        if len(boxes) > MAX_LIST_ITEMS:
            raise ToolError("invalid_arguments", f"{where}: at most {MAX_LIST_ITEMS} boxes")
        return [_numbers(b, 4, where) for b in boxes]
    # a spec bug, shown as such
    raise ToolError("invalid_arguments", f"{where}: unknown argument type {arg.type!r}")


def _image_index(raw: object, n_images: int, where: str) -> int:
    text = str(raw).strip()
    digits = text[len(_IMAGE_REF) :] if text.startswith(_IMAGE_REF) else ""
    if not digits.isdecimal() or len(digits) > 3 or int(digits) >= n_images:
        raise ToolError(
            "invalid_arguments", f"{where}: {text[:40]!r} is not one of image-0..image-{n_images - 1}"
        )
    return int(digits)


def _numbers(raw: object, n: int, where: str) -> list[float]:
    if (
        not isinstance(raw, list)
        or len(raw) != n
        or not all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in raw)
    ):
        raise ToolError("invalid_arguments", f"{where}: expected {n} finite numbers")
    return [float(v) for v in raw]


# ------------------------------------------------------------------------------------------ toolbox


class Toolbox:
    """The tools the agent may call, each served by the first backend (in order) that offers it.

    Args:
        backends: tool backends in priority order (e.g. OpenCV before simulator truth for a mixed box).
    """

    def __init__(self, backends: Sequence[ToolBackend]) -> None:
        self.backends = list(backends)
        self.served: dict[str, ToolBackend] = {}
        for backend in self.backends:
            for name in backend.tools():
                if name not in SPECS:
                    raise ValueError(
                        f"backend {backend.name!r} offers unknown tool {name!r}; known: {', '.join(SPECS)}"
                    )
                self.served.setdefault(name, backend)

    def specs(self) -> list[ToolSpec]:
        """Available tools in the spec order, ``Terminate`` last (it needs no backend)."""
        return [s for s in SPECS.values() if s.name in self.served] + [SPECS[TERMINATE]]

    def render(self) -> str:
        """All available specs, as the prompt lists them."""
        return "\n\n".join(s.render() for s in self.specs())

    def describe(self) -> dict[str, str]:
        """Tool -> backend name (for manifests and traces)."""
        return {name: backend.name for name, backend in self.served.items()}

    def run(self, call: ToolCall, context: ToolContext) -> dict[str, Any]:
        """Check and run one call; raise :class:`ToolError` (unknown tool, bad arguments, backend failure)."""
        spec = SPECS.get(call.name)
        if spec is None or (call.name not in self.served and call.name != TERMINATE):
            raise ToolError(
                "unknown_tool",
                f"no tool named {call.name[:60]!r}; available: {', '.join(s.name for s in self.specs())}",
            )
        args = check_arguments(spec, call.arguments, len(context.images))
        if call.name == TERMINATE:
            return {"answer": args["answer"]}
        try:
            result = self.served[call.name].run(call.name, args, context)
        except ToolError:
            raise
        except (
            Exception
        ) as error:  # a backend bug or a model that failed: recorded on the call, the agent goes on
            raise ToolError(
                "backend_error", f"{call.name}: {type(error).__name__}: {str(error)[:200]}"
            ) from None
        missing = [k for k in spec.returns if k not in result]
        if missing:
            raise ToolError(
                "backend_error",
                f"{call.name}: backend {self.served[call.name].name!r} returned no {', '.join(missing)}",
            )
        return result
