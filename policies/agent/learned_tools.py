"""Learned tool backends: local transformers models for depth, detection, segmentation and matching.

Depth (:class:`LearnedDepthTools`): the paper's depth tools are Depth-Anything-V2 (metric, indoor/outdoor checkpoints); transformers loads it, and
DepthPro or ZoeDepth, through ``AutoModelForDepthEstimation``. Weights come only from a local folder
(``local_files_only``: nothing is downloaded). The model's output is read as metres, so give a metric
checkpoint; a relative-depth checkpoint makes every depth answer wrong, which the ablation will show.

``EstimateRegionDepth`` reads the depth map inside pixel boxes. ``EstimateObjectDepth`` needs the objects'
regions: as the paper pairs its detector with the depth model, this backend asks another backend's
``GetObjectMask`` (e.g. the simulator's, to isolate the depth model's error) for each object's box and takes
the median depth inside it.

Detection, box-prompted masks, keypoint matching and 3D boxes: see the table below the depth backend and
``docs/notes/agent.md``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from policies.agent.cv_tools import OpenCVTools
from policies.agent.tools import ToolBackend, ToolContext, ToolError


class LearnedDepthTools:
    """Depth tools from a local transformers depth-estimation model (CPU unless ``device`` says otherwise)."""

    def __init__(
        self, model_path: str | Path, regions: ToolBackend | None = None, device: str = "cpu"
    ) -> None:
        path = Path(model_path)
        if not path.is_dir():
            raise ValueError(
                f"depth model {path}: not a folder; give a local model folder (weights are never downloaded)"
            )
        from transformers import AutoImageProcessor, AutoModelForDepthEstimation

        self.processor = AutoImageProcessor.from_pretrained(str(path), local_files_only=True)
        self.model = (
            AutoModelForDepthEstimation.from_pretrained(str(path), local_files_only=True).to(device).eval()
        )
        self.device, self.regions, self.name = device, regions, f"depth-model:{path.name}"
        self._cache: dict[tuple[int, int], np.ndarray] = {}

    def tools(self) -> Sequence[str]:
        return (
            ("EstimateRegionDepth", "EstimateObjectDepth")
            if self.regions is not None
            else ("EstimateRegionDepth",)
        )

    def depth_map(self, context: ToolContext, index: int) -> np.ndarray:
        """The model's depth (H, W) for image ``index``, resized to the image (cached per question)."""
        import torch

        key = (id(context), index)
        if key not in self._cache:
            # one question at a time
            self._cache = {k: v for k, v in self._cache.items() if k[0] == id(context)}
            image = np.asarray(context.images[index])[..., :3]
            inputs = self.processor(images=[image], return_tensors="pt").to(self.device)
            with torch.no_grad():
                predicted = self.model(**inputs).predicted_depth
            resized = torch.nn.functional.interpolate(
                predicted[:, None].float(), size=image.shape[:2], mode="bilinear", align_corners=False
            )
            self._cache[key] = resized[0, 0].cpu().numpy()
        return self._cache[key]

    def run(self, tool: str, args: Mapping[str, Any], context: ToolContext) -> dict[str, Any]:
        depth = self.depth_map(context, args["image"])
        if tool == "EstimateRegionDepth":
            return {
                "depths": [self._region(depth, box, args["mode"]) for box in args["bboxes"]],
                "unit": "meters",
            }
        assert self.regions is not None  # tools() offers EstimateObjectDepth only with a region source
        masks = self.regions.run(
            "GetObjectMask", {"image": args["image"], "objects": args["objects"]}, context
        )["results"]
        results = []
        for found in masks:
            if found.get("bbox") is None:
                results.append(
                    {"object": found["object"], "depth": None, "error": found.get("error") or "not found"}
                )
                continue
            region = self._region(depth, found["bbox"], "median")
            results.append({"object": found["object"], "depth": region["depth"], "error": region["error"]})
        return {"results": results}

    @staticmethod
    def _region(depth: np.ndarray, box: Sequence[float], mode: str) -> dict[str, Any]:
        height, width = depth.shape
        left, top = max(0, int(box[0])), max(0, int(box[1]))
        right, bottom = min(width, int(np.ceil(box[2]))), min(height, int(np.ceil(box[3])))
        if right <= left or bottom <= top:
            return {"bbox": list(box), "depth": None, "error": "the box is empty inside the image"}
        region = depth[top:bottom, left:right]
        if mode == "center":
            value = region[region.shape[0] // 2, region.shape[1] // 2]
        else:
            value = np.median(region) if mode == "median" else region.mean()
        if not np.isfinite(value):
            raise ToolError("backend_error", "the depth model returned a non-finite depth")
        return {"bbox": list(box), "depth": round(float(value), 4), "error": None}


# ------------------------------------------------------------------------------------------ detection, masks,
# matching Which library models serve which tool (transformers >= 4.5x; every folder is local, nothing
# downloaded):
#   detection and counting: OWLv2 / OWL-ViT / Grounding DINO (AutoModelForZeroShotObjectDetection)
#   masks from box prompts: SAM, SAM-HQ, SAM2 (AutoModelForMaskGeneration; SAM2's processor needs torchvision)
#   keypoint matching:      LightGlue / SuperGlue / EfficientLoFTR (AutoModelForKeypointMatching)
#   3D boxes:               no library model: detector box + (SAM mask) + depth model, back-projected with the
#                           camera calibration; heading (OrientAnything's job) from the principal axis of the
#                           object's back-projected points on the floor plane
#   camera pose (VGGT):     no library model: essential matrix from the learned matches (translation up to
# scale)


def _local(path: str | Path, what: str) -> Path:
    folder = Path(path)
    if not folder.is_dir():
        raise ValueError(
            f"{what} {folder}: not a folder; give a local model folder (weights are never downloaded)"
        )
    return folder


class LearnedDetectionTools:
    """Open-vocabulary detection (``LocalizeObjects``, ``CountObjects``) with a local OWLv2 / OWL-ViT /
    Grounding DINO folder. Boxes scoring below ``threshold`` are dropped."""

    def __init__(self, model_path: str | Path, threshold: float = 0.3, device: str = "cpu") -> None:
        from transformers import AutoModelForZeroShotObjectDetection, AutoProcessor

        path = _local(model_path, "detector model")
        self.processor = AutoProcessor.from_pretrained(str(path), local_files_only=True)
        self.model = (
            AutoModelForZeroShotObjectDetection.from_pretrained(str(path), local_files_only=True)
            .to(device)
            .eval()
        )
        self.threshold, self.device, self.name = float(threshold), device, f"detector:{path.name}"
        self.grounding = "GroundingDino" in type(self.model).__name__

    def tools(self) -> Sequence[str]:
        return ("LocalizeObjects", "CountObjects")

    def detect(self, image: np.ndarray, queries: Sequence[str]) -> list[dict[str, Any]]:
        """``{label, bbox, confidence}`` per detection of any of ``queries`` (label: the query it matched)."""
        import torch

        image = np.asarray(image)[..., :3]
        size = [image.shape[:2]]
        if self.grounding:  # Grounding DINO reads one caption of period-separated phrases
            text: Any = [". ".join(q.lower() for q in queries) + "."]
        else:
            text = [list(queries)]
        inputs = self.processor(text=text, images=[image], return_tensors="pt", padding=True).to(self.device)
        with torch.no_grad():
            outputs = self.model(**inputs)
        if self.grounding:
            found = self.processor.post_process_grounded_object_detection(
                outputs,
                inputs["input_ids"],
                threshold=self.threshold,
                text_threshold=self.threshold,
                target_sizes=size,
            )[0]
            phrases = found["text_labels"] if "text_labels" in found else found["labels"]
            labels = [_closest_query(str(t), queries) for t in phrases]
        else:
            found = self.processor.post_process_grounded_object_detection(
                outputs, threshold=self.threshold, target_sizes=size, text_labels=[list(queries)]
            )[0]
            labels = [queries[int(i)] for i in found["labels"]]
        return [
            {"label": label, "bbox": [round(float(v), 1) for v in box], "confidence": round(float(score), 4)}
            for label, box, score in zip(labels, found["boxes"].tolist(), found["scores"].tolist())
        ]

    def run(self, tool: str, args: Mapping[str, Any], context: ToolContext) -> dict[str, Any]:
        image = context.images[args["image"]]
        if tool == "LocalizeObjects":
            return {"regions": self.detect(image, args["objects"])}
        found = self.detect(image, [args["object"]])
        points = [
            [round((b[0] + b[2]) / 2, 1), round((b[1] + b[3]) / 2, 1)] for b in (d["bbox"] for d in found)
        ]
        return {"count": len(found), "points": points}

    def best_box(self, image: np.ndarray, query: str) -> list[float] | None:
        """The most confident box of ``query`` (``None``: not detected)."""
        found = self.detect(image, [query])
        return max(found, key=lambda d: d["confidence"])["bbox"] if found else None


def _closest_query(text: str, queries: Sequence[str]) -> str:
    """The query a Grounding DINO phrase belongs to (it returns the caption words it matched)."""
    words = set(text.lower().split())
    return max(queries, key=lambda q: len(words & set(q.lower().split())))


class LearnedSegmentationTools:
    """``GetObjectMask``: boxes from a detector, masks from a local SAM (or SAM2 / SAM-HQ, through
    ``AutoModelForMaskGeneration``) folder prompted with them."""

    def __init__(self, model_path: str | Path, detector: LearnedDetectionTools, device: str = "cpu") -> None:
        from transformers import AutoModelForMaskGeneration, AutoProcessor

        path = _local(model_path, "segmenter model")
        self.processor = AutoProcessor.from_pretrained(str(path), local_files_only=True)
        self.model = (
            AutoModelForMaskGeneration.from_pretrained(str(path), local_files_only=True).to(device).eval()
        )
        self.detector, self.device, self.name = detector, device, f"segmenter:{path.name}"

    def tools(self) -> Sequence[str]:
        return ("GetObjectMask",)

    def mask(self, image: np.ndarray, box: Sequence[float]) -> np.ndarray:
        """The boolean mask (H, W) SAM draws for ``box``."""
        import torch

        image = np.asarray(image)[..., :3]
        inputs = self.processor(
            images=[image], input_boxes=[[list(map(float, box))]], return_tensors="pt"
        ).to(self.device)
        with torch.no_grad():
            outputs = self.model(**inputs, multimask_output=False)
        sizes = [inputs["original_sizes"].cpu()]
        if "reshaped_input_sizes" in inputs:  # SAM's processor also needs the resized size; SAM2's does not
            sizes.append(inputs["reshaped_input_sizes"].cpu())
        masks = self.processor.post_process_masks(outputs.pred_masks.cpu(), *sizes)
        return np.asarray(masks[0][0, 0]).astype(bool)

    def run(self, tool: str, args: Mapping[str, Any], context: ToolContext) -> dict[str, Any]:
        image = context.images[args["image"]]
        results = []
        for query in args["objects"]:
            box = self.detector.best_box(image, query)
            mask = None if box is None else self.mask(image, box)
            if mask is None or not mask.any():
                results.append(
                    {
                        "object": query,
                        "mask_area": None,
                        "bbox": None,
                        "error": "not detected" if box is None else "empty mask",
                    }
                )
                continue
            rows, cols = np.nonzero(mask)
            results.append(
                {
                    "object": query,
                    "mask_area": round(float(mask.mean()), 5),
                    "error": None,
                    "bbox": [int(cols.min()), int(rows.min()), int(cols.max()) + 1, int(rows.max()) + 1],
                }
            )
        return {"results": results}


class Learned3DBoxes:
    """``Detect3DObjects`` from learned parts: the detector's box, SAM's mask inside it (the box when no
    segmenter is given), the depth model's depth there, back-projected with the camera calibration
    (``context.meta["intrinsics"]``). Size: the extents of the points along their principal axes; heading
    (yaw): the principal axis of the points on the floor plane, the substitute for OrientAnything (no library
    model), ambiguous by 180 degrees as any axis is."""

    def __init__(
        self,
        detector: LearnedDetectionTools,
        depth: LearnedDepthTools,
        segmenter: LearnedSegmentationTools | None = None,
    ) -> None:
        self.detector, self.depth, self.segmenter = detector, depth, segmenter
        self.name = f"3d-boxes:{detector.name}+{depth.name}" + (f"+{segmenter.name}" if segmenter else "")

    def tools(self) -> Sequence[str]:
        return ("Detect3DObjects",)

    def run(self, tool: str, args: Mapping[str, Any], context: ToolContext) -> dict[str, Any]:
        if "intrinsics" not in context.meta:
            raise ToolError(
                "unavailable",
                "Detect3DObjects: the camera calibration is unknown (needed to back-project depth)",
            )
        image = context.images[args["image"]]
        depth = self.depth.depth_map(context, args["image"])
        K = np.asarray(context.meta["intrinsics"], dtype=float)
        objects = []
        for query in args["objects"]:
            for found in self.detector.detect(image, [query]):
                points = _region_points(
                    found["bbox"],
                    depth,
                    K,
                    self.segmenter.mask(image, found["bbox"]) if self.segmenter else None,
                )
                if len(points) >= 3:
                    objects.append({"label": query, "bbox_3d": box_from_points(points)})
        return {"objects": objects}


def _region_points(
    box: Sequence[float], depth: np.ndarray, K: np.ndarray, mask: np.ndarray | None
) -> np.ndarray:
    """Camera-frame points (N, 3) of the pixels inside ``box`` (and ``mask``) with a finite positive depth."""
    height, width = depth.shape
    left, top = max(0, int(box[0])), max(0, int(box[1]))
    right, bottom = min(width, int(np.ceil(box[2]))), min(height, int(np.ceil(box[3])))
    v, u = np.mgrid[top:bottom, left:right]
    keep = np.ones(u.shape, bool) if mask is None else mask[top:bottom, left:right]
    z = depth[top:bottom, left:right]
    keep &= np.isfinite(z) & (z > 0)
    u, v, z = u[keep] + 0.5, v[keep] + 0.5, z[keep]
    return np.stack([(u - K[0, 2]) * z / K[0, 0], (v - K[1, 2]) * z / K[1, 1], z], axis=1)


def box_from_points(points: np.ndarray) -> dict[str, float]:
    """A 3D box ``{x, y, z, width, height, length, yaw}`` (camera frame: x right, y down, z forward) from an
    object's points: centre at the middle of their extent, vertical extent as height, and on the floor
    plane (x, z) the principal axes (PCA) as length (major) and width (minor), yaw the major axis's angle
    from the optical axis."""
    lo, hi = points.min(axis=0), points.max(axis=0)
    flat = points[:, [0, 2]] - points[:, [0, 2]].mean(axis=0)
    _, vectors = np.linalg.eigh(flat.T @ flat)
    major, minor = vectors[:, 1], vectors[:, 0]
    along, across = flat @ major, flat @ minor
    centre = (lo + hi) / 2
    return {
        "x": round(float(centre[0]), 4),
        "y": round(float(centre[1]), 4),
        "z": round(float(centre[2]), 4),
        "width": round(float(np.ptp(across)), 4),
        "height": round(float(hi[1] - lo[1]), 4),
        "length": round(float(np.ptp(along)), 4),
        "yaw": round(float(np.arctan2(major[0], major[1])), 4),
    }


class LearnedMatchingTools(OpenCVTools):
    """``EstimateHomographyMatrix`` and ``GetCameraParameters`` with matches from a local LightGlue /
    SuperGlue / EfficientLoFTR folder instead of SIFT (RANSAC homography and essential-matrix pose as in
    :class:`OpenCVTools`). ``MatchImagesSIFT`` stays SIFT's: it is named for it."""

    def __init__(self, model_path: str | Path, threshold: float = 0.2, device: str = "cpu") -> None:
        from transformers import AutoImageProcessor, AutoModelForKeypointMatching

        path = _local(model_path, "matcher model")
        self.processor = AutoImageProcessor.from_pretrained(str(path), local_files_only=True)
        self.model = (
            AutoModelForKeypointMatching.from_pretrained(str(path), local_files_only=True).to(device).eval()
        )
        self.threshold, self.device, self.name = float(threshold), device, f"matcher:{path.name}"

    def tools(self) -> Sequence[str]:
        return ("EstimateHomographyMatrix", "GetCameraParameters")

    def matches(
        self, a: np.ndarray, b: np.ndarray, keypoints: int = 1200, ratio: float = 0.75
    ) -> tuple[np.ndarray, np.ndarray]:
        """Matched pixel coordinates (N, 2) in each image, from the learned matcher."""
        import torch

        a, b = np.asarray(a)[..., :3], np.asarray(b)[..., :3]
        inputs = self.processor([[a, b]], return_tensors="pt").to(self.device)
        with torch.no_grad():
            outputs = self.model(**inputs)
        found = self.processor.post_process_keypoint_matching(
            outputs, [[a.shape[:2], b.shape[:2]]], threshold=self.threshold
        )[0]
        return found["keypoints0"].cpu().numpy().astype(float).reshape(-1, 2), found[
            "keypoints1"
        ].cpu().numpy().astype(float).reshape(-1, 2)


def learned_backends(
    *,
    detector: str | None = None,
    segmenter: str | None = None,
    depth: str | None = None,
    matcher: str | None = None,
    device: str = "cpu",
    regions: ToolBackend | None = None,
) -> list[Any]:
    """The learned tool backends for the local model folders given (priority order), composed as the paper
    pairs them: the segmenter and the 3D boxes need the detector; object depth takes the segmenter's or the
    detector's boxes, else those of ``regions`` (a ``GetObjectMask`` backend, e.g. the simulator's, which
    isolates the depth model's error)."""
    if segmenter and not detector:
        raise ValueError(
            "--segmenter-model needs --detector-model (SAM is prompted with the detector's boxes)"
        )
    backends: list[Any] = []
    found = LearnedDetectionTools(detector, device=device) if detector else None
    masks = LearnedSegmentationTools(segmenter, found, device=device) if segmenter and found else None
    depths = (
        LearnedDepthTools(depth, regions=masks or (_BoxRegions(found) if found else regions), device=device)
        if depth
        else None
    )
    if found is not None and depths is not None:
        backends.append(Learned3DBoxes(found, depths, masks))
    backends += [b for b in (found, masks, depths) if b is not None]
    if matcher:
        backends.append(LearnedMatchingTools(matcher, device=device))
    return backends


class _BoxRegions:
    """``GetObjectMask``-shaped regions from the detector's boxes alone (object depth without a segmenter)."""

    def __init__(self, detector: LearnedDetectionTools) -> None:
        self.detector, self.name = detector, detector.name

    def tools(self) -> Sequence[str]:
        return ("GetObjectMask",)

    def run(self, tool: str, args: Mapping[str, Any], context: ToolContext) -> dict[str, Any]:
        image = context.images[args["image"]]
        results = []
        for query in args["objects"]:
            box = self.detector.best_box(image, query)
            results.append(
                {"object": query, "mask_area": None, "bbox": box, "error": None if box else "not detected"}
            )
        return {"results": results}
