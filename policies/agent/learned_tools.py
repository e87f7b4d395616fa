"""A learned tool backend: monocular metric depth with a transformers depth model from a local folder.

The paper's depth tools are Depth-Anything-V2 (metric, indoor/outdoor checkpoints); transformers loads it, and
DepthPro or ZoeDepth, through ``AutoModelForDepthEstimation``. Weights come only from a local folder
(``local_files_only``: nothing is downloaded). The model's output is read as metres, so give a metric
checkpoint; a relative-depth checkpoint makes every depth answer wrong, which the ablation will show.

``EstimateRegionDepth`` reads the depth map inside pixel boxes. ``EstimateObjectDepth`` needs the objects'
regions: as the paper pairs its detector with the depth model, this backend asks another backend's
``GetObjectMask`` (e.g. the simulator's, to isolate the depth model's error) for each object's box and takes
the median depth inside it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from policies.agent.tools import ToolBackend, ToolContext, ToolError


class LearnedDepthTools:
    """Depth tools from a local transformers depth-estimation model (CPU unless ``device`` says otherwise)."""

    def __init__(self, model_path: str | Path, regions: ToolBackend | None = None, device: str = "cpu") -> None:
        path = Path(model_path)
        if not path.is_dir():
            raise ValueError(f"depth model {path}: not a folder; give a local model folder (weights are never downloaded)")
        from transformers import AutoImageProcessor, AutoModelForDepthEstimation

        self.processor = AutoImageProcessor.from_pretrained(str(path), local_files_only=True)
        self.model = AutoModelForDepthEstimation.from_pretrained(str(path), local_files_only=True).to(device).eval()
        self.device, self.regions, self.name = device, regions, f"depth-model:{path.name}"
        self._cache: dict[tuple[int, int], np.ndarray] = {}

    def tools(self) -> Sequence[str]:
        return ("EstimateRegionDepth", "EstimateObjectDepth") if self.regions is not None else ("EstimateRegionDepth",)

    def depth_map(self, context: ToolContext, index: int) -> np.ndarray:
        """The model's depth (H, W) for image ``index``, resized to the image (cached per question)."""
        import torch

        key = (id(context), index)
        if key not in self._cache:
            self._cache = {k: v for k, v in self._cache.items() if k[0] == id(context)}  # one question at a time
            image = np.asarray(context.images[index])[..., :3]
            inputs = self.processor(images=[image], return_tensors="pt").to(self.device)
            with torch.no_grad():
                predicted = self.model(**inputs).predicted_depth
            resized = torch.nn.functional.interpolate(predicted[:, None].float(), size=image.shape[:2], mode="bilinear", align_corners=False)
            self._cache[key] = resized[0, 0].cpu().numpy()
        return self._cache[key]

    def run(self, tool: str, args: Mapping[str, Any], context: ToolContext) -> dict[str, Any]:
        depth = self.depth_map(context, args["image"])
        if tool == "EstimateRegionDepth":
            return {"depths": [self._region(depth, box, args["mode"]) for box in args["bboxes"]], "unit": "meters"}
        assert self.regions is not None  # tools() offers EstimateObjectDepth only with a region source
        masks = self.regions.run("GetObjectMask", {"image": args["image"], "objects": args["objects"]}, context)["results"]
        results = []
        for found in masks:
            if found.get("bbox") is None:
                results.append({"object": found["object"], "depth": None, "error": found.get("error") or "not found"})
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
