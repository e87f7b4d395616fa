"""The classical-vision tool backend (OpenCV): SIFT matching, RANSAC homography, Farneback optical flow,
and the relative camera pose from the essential matrix.

These are the paper's own OpenCV tools (SIFT, homography) plus the classical stand-ins for its learned
motion tools: Farneback flow for RAFT, essential-matrix pose for VGGT's extrinsics (translation up to scale,
``translation_scale: "unit"``). The pose needs the camera intrinsics: the item's calibration when the
context carries one (``context.meta["intrinsics"]``, a 3x3 matrix), else a guess (focal length = image
width, principal point at the centre), reported as such in the result.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import ModuleType
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from policies.agent.tools import ToolContext, ToolError

MIN_MATCHES = 8  # fewer matched points cannot fix a homography or an essential matrix robustly
_SHOWN_MATCHES = 50  # matched pairs returned to the core (the count is always the total)


def _cv2() -> ModuleType:
    try:
        import cv2
    except ImportError as error:
        raise ToolError(
            "unavailable",
            f"the OpenCV tools need opencv-python: pip install 'spatial-arena[agent]' ({error})",
        ) from None
    return cv2


def _gray(image: np.ndarray) -> np.ndarray:
    cv2 = _cv2()
    array = np.asarray(image)
    if array.ndim == 2:
        return array.astype(np.uint8)
    return cv2.cvtColor(array[..., :3].astype(np.uint8), cv2.COLOR_RGB2GRAY)


class OpenCVTools:
    """SIFT matching, homography, optical flow and essential-matrix camera pose on the question's images."""

    name = "opencv"

    def tools(self) -> Sequence[str]:
        return ("EstimateOpticalFlow", "MatchImagesSIFT", "EstimateHomographyMatrix", "GetCameraParameters")

    def run(self, tool: str, args: Mapping[str, Any], context: ToolContext) -> dict[str, Any]:
        images = [context.images[i] for i in args.get("images", [])]
        if tool == "GetCameraParameters":
            return self.camera_parameters(images, context.meta.get("intrinsics"))
        if len(images) != 2:
            raise ToolError("invalid_arguments", f"{tool}: expected exactly two images, got {len(images)}")
        source, target = images
        if tool == "EstimateOpticalFlow":
            return self.optical_flow(source, target)
        first, second = self.matches(
            source, target, args.get("num_keypoints", 1200), args.get("ratio_th", 0.75)
        )
        if tool == "MatchImagesSIFT":
            pairs = [
                [
                    [round(float(a[0]), 1), round(float(a[1]), 1)],
                    [round(float(b[0]), 1), round(float(b[1]), 1)],
                ]
                for a, b in zip(first[:_SHOWN_MATCHES], second[:_SHOWN_MATCHES])
            ]
            return {"matches": pairs, "num_matches": len(first)}
        return self.homography(first, second, args.get("ransac_reproj_threshold", 5.0))

    def matches(
        self, a: np.ndarray, b: np.ndarray, keypoints: int = 1200, ratio: float = 0.75
    ) -> tuple[np.ndarray, np.ndarray]:
        """Matched pixel coordinates (N, 2) in each image: SIFT with Lowe's ratio test."""
        cv2 = _cv2()
        sift = cv2.SIFT_create(nfeatures=max(1, min(int(keypoints), 10_000)))
        kp_a, des_a = sift.detectAndCompute(_gray(a), None)
        kp_b, des_b = sift.detectAndCompute(_gray(b), None)
        if des_a is None or des_b is None or len(kp_a) < 2 or len(kp_b) < 2:
            return np.zeros((0, 2)), np.zeros((0, 2))
        pairs = cv2.BFMatcher(cv2.NORM_L2).knnMatch(des_a, des_b, k=2)
        good = [p[0] for p in pairs if len(p) == 2 and p[0].distance < ratio * p[1].distance]
        first = np.array([kp_a[m.queryIdx].pt for m in good], dtype=float).reshape(-1, 2)
        second = np.array([kp_b[m.trainIdx].pt for m in good], dtype=float).reshape(-1, 2)
        return first, second

    def homography(self, first: np.ndarray, second: np.ndarray, threshold: float) -> dict[str, Any]:
        """RANSAC homography from matched points (``status: failure`` with too few)."""
        cv2 = _cv2()
        if len(first) < MIN_MATCHES:
            return {
                "homography_matrix": None,
                "inliers_count": 0,
                "total_matches": len(first),
                "status": "failure",
            }
        H, inliers = cv2.findHomography(first, second, cv2.RANSAC, float(threshold))
        if H is None:
            return {
                "homography_matrix": None,
                "inliers_count": 0,
                "total_matches": len(first),
                "status": "failure",
            }
        return {
            "homography_matrix": np.round(H / H[2, 2], 6).tolist(),
            "inliers_count": int(inliers.sum()),
            "total_matches": len(first),
            "status": "success",
        }

    def optical_flow(self, a: np.ndarray, b: np.ndarray) -> dict[str, Any]:
        """Mean Farneback flow from the first image to the second (pixels)."""
        cv2 = _cv2()
        flow = cv2.calcOpticalFlowFarneback(_gray(a), _gray(b), None, 0.5, 3, 15, 3, 5, 1.2, 0)
        return {
            "mean_flow_x": round(float(flow[..., 0].mean()), 3),
            "mean_flow_y": round(float(flow[..., 1].mean()), 3),
        }

    def camera_parameters(
        self, images: Sequence[np.ndarray], intrinsics: ArrayLike | None = None
    ) -> dict[str, Any]:
        """Each image's pose relative to the first: essential matrix (RANSAC) and ``recoverPose``."""
        cv2 = _cv2()
        height, width = np.asarray(images[0]).shape[:2]
        guessed = intrinsics is None
        K = (
            np.array([[width, 0, width / 2], [0, width, height / 2], [0, 0, 1]], float)
            if guessed
            else np.asarray(intrinsics, float)
        )
        output = [
            {
                "image_index": 0,
                "extrinsic": np.hstack([np.eye(3), np.zeros((3, 1))]).tolist(),
                "intrinsic": K.tolist(),
            }
        ]
        for index, image in enumerate(images[1:], start=1):
            first, second = self.matches(images[0], image)
            if len(first) < MIN_MATCHES:
                raise ToolError(
                    "backend_error",
                    f"GetCameraParameters: {len(first)} SIFT matches between image 0 and {index}, need {MIN_MATCHES}",
                )
            E, mask = cv2.findEssentialMat(first, second, K, method=cv2.RANSAC, prob=0.999, threshold=1.0)
            if E is None or E.shape != (3, 3):
                raise ToolError(
                    "backend_error", f"GetCameraParameters: no essential matrix between image 0 and {index}"
                )
            _, R, t, _ = cv2.recoverPose(E, first, second, K, mask=mask)
            output.append(
                {
                    "image_index": index,
                    "extrinsic": np.round(np.hstack([R, t]), 6).tolist(),
                    "intrinsic": K.tolist(),
                }
            )
        return {
            "output": output,
            "translation_scale": "unit",
            "intrinsics": "guessed" if guessed else "given",
        }
