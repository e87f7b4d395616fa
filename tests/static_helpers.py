"""Helpers for the static-benchmark tests: tiny hand-written data files in each benchmark's real format (edge cases
the generated sets of ``benchmarks.datagen.sample_formats`` do not have: judge items, masks, videos), a scripted
backend. The file writing itself (PNG, parquet) is the library's."""

from __future__ import annotations

import base64
import io
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from benchmarks.datagen.sample_formats import png_bytes as encode_png
from benchmarks.datagen.sample_formats import write_parquet
from policies.backends.base import Backend, Generation, GenerationConfig, Message


def png_bytes(width: int = 8, height: int = 6, value: int = 128) -> bytes:
    """A small solid PNG."""
    return encode_png(np.full((height, width, 3), value, dtype=np.uint8))


def write_png(path: Path, width: int = 8, height: int = 6) -> Path:
    """Write a small PNG (parents created)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(png_bytes(width, height))
    return path


def prompt_text(messages: Sequence[Message]) -> str:
    """The text part of the last user turn."""
    content = messages[-1]["content"]
    return (
        content
        if isinstance(content, str)
        else "".join(p.get("text", "") for p in content if p.get("type") == "text")
    )


class ScriptedBackend(Backend):
    """A fake model: answers from a function of the prompt text; can fail on chosen calls."""

    def __init__(
        self, answer: Callable[[str], str], fail_on: Callable[[int, str], bool] | None = None
    ) -> None:
        self.model_id = "scripted-fake"
        self.config = GenerationConfig()
        self.answer, self.fail_on = answer, fail_on
        self.calls: list[str] = []
        self.images_seen: list[int] = []

    def generate(self, messages: Sequence[Message]) -> Generation:
        text = prompt_text(messages)
        self.calls.append(text)
        content = messages[-1]["content"]
        self.images_seen.append(
            sum(1 for p in content if isinstance(p, dict) and p.get("type") == "image")
            if isinstance(content, list)
            else 0
        )
        if self.fail_on is not None and self.fail_on(len(self.calls), text):
            raise ConnectionError("scripted failure")
        return Generation(text=self.answer(text), latency_s=0.0)


# --------------------------------------------------------------------------------------------------------
# Data files in the official formats


def spatialscore_rows() -> list[dict[str, Any]]:
    """Four SpatialScore items: single image MCQ, multi-image MCQ, judgment, video open-ended (frame list)."""
    return [
        {
            "index": 258,
            "category": "Others",
            "subcategory": "Miscellaneous",
            "question_type": "multi-choice",
            "input_modality": "single-image",
            "question": "Are the people moving to the left or to the right?\n(a) Left (b) Right",
            "answer": "(a)",
            "img_paths": ["./dataset/MMVP/259.jpg"],
            "source": "MMVP",
        },
        {
            "index": 8740,
            "category": "Point and Object Tracking",
            "subcategory": "Point Correspondence",
            "question_type": "multi-choice",
            "input_modality": "multi-images",
            "question": "Which point corresponds?\nA: Point A\nB: Point B\nC: Point C\nD: Point D\n\nWhich point?",
            "answer": "A",
            "img_paths": ["./dataset/MMIU/a_0.jpg", "./dataset/MMIU/a_1.jpg"],
            "source": "MMIU",
        },
        {
            "index": 12603,
            "category": "3D Positional Relation",
            "subcategory": "Orientation",
            "question_type": "judgment",
            "input_modality": "single-image",
            "question": "Is the bowl next to the table? Answer with Yes or No.",
            "answer": "No",
            "img_paths": ["./dataset/SpatialSense/b.jpg"],
            "source": "SpatialSense",
        },
        {
            "index": 18025,
            "category": "Depth and Distance",
            "subcategory": "Absolute",
            "question_type": "open-ended",
            "input_modality": "video",
            "question": "Measuring from the closest point of each object, what is the distance between the fireplace and the sofa (in meters)?",
            "answer": "2.0",
            "img_paths": [f"./dataset/VSI/frame_{i}.jpg" for i in range(3)],
            "source": "VSI-Bench_8",
        },
    ]


def write_spatialscore(root: Path, rows: list[dict[str, Any]] | None = None, images: bool = True) -> Path:
    """``root/dataset/SpatialScore.json`` with images at the repository's ``./dataset/...`` paths."""
    rows = rows if rows is not None else spatialscore_rows()
    path = root / "dataset" / "SpatialScore.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(rows), encoding="utf-8")
    if images:
        for row in rows:
            for image in row["img_paths"]:
                write_png(root / image)
    return path


def space10_rows(multiple: bool) -> list[dict[str, Any]]:
    """Two SpaCE-10 rows in the lmms-eval layout (image column of encoded bytes)."""
    if multiple:
        return [
            {
                "index": 0,
                "question": "Which of the following options does not contain any objects in the given scene?",
                "A": "red chair",
                "B": "gray sofa",
                "C": "black table",
                "D": "beige ottoman",
                "E": "gray sofa, purple curtain",
                "answer": "BE",
                "category": "EP",
                "image": [png_bytes(), png_bytes(value=30)],
            },
        ]
    return [
        {
            "index": 0,
            "question": "How many beds are in the given scene?",
            "A": "1",
            "B": "2",
            "C": "3",
            "D": "4",
            "answer": "B",
            "category": "EQ",
            "image": [png_bytes(), png_bytes(value=60)],
        },
        {
            "index": 1,
            "question": "Which description is correct?",
            "A": "The door is lower than the TV.",
            "B": "The door is wider than the TV.",
            "C": "The lamp is taller than the bed.",
            "D": "The plant is lower than the bed.",
            "answer": "A",
            "category": "SA",
            "image": [png_bytes()],
        },
    ]


def write_space10(root: Path) -> Path:
    """An lmms-eval style folder: ``eq_single/test.parquet`` (EQ+SA rows) and ``double-choice/ep_double/test.parquet``."""
    write_parquet(root / "eq_single" / "test.parquet", space10_rows(False))
    write_parquet(root / "double-choice" / "ep_double" / "test.parquet", space10_rows(True))
    return root


def multihop_rows() -> list[dict[str, Any]]:
    """Two MultihopSpatial items as in ``multihop_test_4500.json``."""
    return [
        {
            "id": 13,
            "image_path": "000000169803.jpg",
            "image_resolution": "640x480",
            "view": "ego",
            "hop": "1hop",
            "question": "When I'm sitting on a chair and facing the camera, which object is farthest from me? <choice>(a) fork, (b) knife, (c) coffee cup, (d) apple</choice> And provide the bounding box coordinate of the region related to your answer.",
            "answer": "(a) fork",
            "bbox": [450.39, 274.87, 189.13, 99.46],
        },
        {
            "id": 3657,
            "image_path": "000000000002.jpg",
            "image_resolution": "640x480",
            "view": "exo",
            "hop": "3hop",
            "question": "Which <REL>object</REL> is it? <choice>(a) monitor, (b) keyboard, (c) mouse, (d) cup</choice> And provide the bounding box coordinate of the region related to your answer.",
            "answer": "(b) keyboard",
            "bbox": [536.98, 265.34, 68.15, 15.66],
        },
    ]


def write_multihop(root: Path, images: bool = True) -> Path:
    """``root/multihop_test.json`` with images in ``root/images/``."""
    rows = multihop_rows()
    path = root / "multihop_test.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(rows), encoding="utf-8")
    if images:
        for row in rows:
            write_png(root / "images" / row["image_path"], 64, 48)
    return path


def mask_b64(width: int = 10, height: int = 10) -> str:
    """A base64 PNG mask, white (255) on the left half."""
    mask = np.zeros((height, width), dtype=np.uint8)
    mask[:, : width // 2] = 255
    buffer = io.BytesIO()
    Image.fromarray(mask).save(buffer, format="PNG")
    return base64.b64encode(buffer.getvalue()).decode()


def spatialtree_rows() -> list[dict[str, Any]]:
    """SpatialTree-Bench rows in the lmms-eval layout, one per main scorer type."""

    def extra(metric: str, *tags: str) -> str:
        return json.dumps({"metricfunc": metric, **{f"spatree{i}": t for i, t in enumerate(tags)}})

    return [
        {
            "session_id": "mcq-1",
            "question": "Which object is closer?",
            "option": ["A. chair", "B. table"],
            "answer": "A",
            "question_type": "mcq",
            "hint": "",
            "extra_info": extra("multichoiceeval", "L1", "Relation", "RelativeDirection"),
            "image": ["images/a.png"],
        },
        {
            "session_id": "mra-1",
            "question": "How far is the lamp from the door (in meters)?",
            "option": [],
            "answer": "2.0",
            "question_type": "open",
            "hint": "",
            "extra_info": extra("meanrelativeacc", "L1", "Geometry", "Distance"),
            "image": ["images/a.png"],
        },
        {
            "session_id": "grav-1",
            "question": "Estimate pitch, roll and vfov.",
            "option": [],
            "answer": json.dumps({"roll": 2.0, "pitch": -5.0, "vfov": 60.0}),
            "question_type": "open",
            "hint": json.dumps({"roll_unc": 1.0, "pitch_unc": 2.0, "vfov_unc": 5.0}),
            "extra_info": extra("gravityeval", "L1", "Orientation", "Gravity"),
            "image": ["images/a.png"],
        },
        {
            "session_id": "judge-1",
            "question": "Is the cup left of the plate?",
            "option": [],
            "answer": "yes",
            "question_type": "open",
            "hint": "",
            "extra_info": extra("judge", "L2", "Underst.", "RelationUnderstanding"),
            "image": ["images/a.png"],
        },
        {
            "session_id": "caus-1",
            "question": "What happens next?",
            "option": ["A. falls", "B. stays"],
            "answer": "B",
            "question_type": "mcq",
            "hint": "",
            "extra_info": extra("multichoiceeval", "L3", "Caus. Reas.", "Relation"),
            "image": ["images/a.png"],
        },
        {
            "session_id": "aff-1",
            "question": "the handle of the mug",
            "option": [],
            "answer": mask_b64(),
            "question_type": "open",
            "hint": "",
            "extra_info": extra("affmask", "L2", "Underst.", "Affordance"),
            "image": ["images/a.png"],
        },
        {
            "session_id": "cap-1",
            "question": "Describe the camera motion.",
            "option": [],
            "answer": "The camera pans left.",
            "question_type": "open",
            "hint": "",
            "extra_info": extra("gpteval", "L2", "Underst.", "MotionUnderstanding"),
            "image": ["images/a.png"],
        },
    ]


def write_spatialtree(root: Path, images: bool = True) -> Path:
    """``root/spatialtree.jsonl`` with the image under ``root/images``."""
    path = root / "spatialtree.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(row) + "\n" for row in spatialtree_rows()), encoding="utf-8")
    if images:
        write_png(root / "images" / "a.png")
    return path


def vsibench_rows() -> list[dict[str, Any]]:
    """One VSI-Bench row per question type (the hub's ``test.jsonl`` fields), over two scenes."""
    directions = ["A. front-left", "B. front-right", "C. back-left", "D. back-right"]

    def row(
        i: int, qtype: str, question: str, truth: str, options: list[str] | None, scene: str = "42446540"
    ) -> dict[str, Any]:
        return {
            "id": i,
            "dataset": "arkitscenes" if scene == "42446540" else "scannet",
            "scene_name": scene,
            "question_type": qtype,
            "question": question,
            "ground_truth": truth,
            "options": options,
        }

    return [
        row(0, "object_counting", "How many chair(s) are in this room?", "4", None),
        row(
            1,
            "object_abs_distance",
            "What is the direct distance between the sofa and the tv (in meters)?",
            "2.3",
            None,
        ),
        row(
            2,
            "object_size_estimation",
            "What is the length of the longest dimension of the bed, measured in centimeters?",
            "195",
            None,
        ),
        row(
            3,
            "room_size_estimation",
            "What is the size of this room (in square meters)?",
            "16",
            None,
            scene="scene0011_00",
        ),
        row(
            4,
            "object_rel_distance",
            "Which is closest to the lamp?",
            "B",
            ["A. sofa", "B. tv", "C. bed", "D. sink"],
        ),
        row(
            5,
            "object_rel_direction_easy",
            "Is the sofa left or right of the bed?",
            "A",
            ["A. left", "B. right"],
        ),
        row(
            6,
            "object_rel_direction_medium",
            "Is the tv left, right or behind?",
            "C",
            ["A. left", "B. right", "C. back"],
        ),
        row(
            7,
            "object_rel_direction_hard",
            "Standing by the bed facing the tv, where is the sink?",
            "D",
            directions,
        ),
        row(
            8,
            "route_planning",
            "How do you get from the bed to the door?",
            "A",
            ["A. Turn left", "B. Turn right", "C. Go back"],
            scene="scene0011_00",
        ),
        row(
            9,
            "obj_appearance_order",
            "What is the first-time appearance order?",
            "B",
            ["A. tv, bed", "B. bed, tv"],
            scene="scene0011_00",
        ),
    ]


def write_vsibench(root: Path, frames: bool = True, name: str = "test.jsonl") -> Path:
    """``root/<name>`` with each scene as a folder of two PNG frames (``<dataset>/<scene_name>/``)."""
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(row) + "\n" for row in vsibench_rows()), encoding="utf-8")
    if frames:
        for dataset, scene in {("arkitscenes", "42446540"), ("scannet", "scene0011_00")}:
            for i in range(2):
                write_png(root / dataset / scene / f"{i:03d}.png")
    return path
