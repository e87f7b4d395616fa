"""Sample sets in each static benchmark's own file layout, from the navigation homes' exact questions.

``python -m benchmarks.static generate --format NAME`` draws questions as for SpatialScore
(:mod:`benchmarks.datagen.nav_questions`) and writes them the way the benchmark publishes its data, so its
loader, prompts and parsers run on them unchanged:

| format | data (``--data``) | media | kinds asked |
|---|---|---|---|
| spatialscore | ``SpatialScore.json`` | ``images/*.png`` | the seven SpatialScore kinds |
| space10 | ``space10/`` (lmms-eval: ``eq_single/test.parquet``, ``oo_single/test.parquet``) | PNG bytes in the ``image`` column | counting (EQ), relative depth, closest object, left/right (OO) |
| multihop | ``multihop_test.json`` | ``images/*.png`` | closest object of four, with its box |
| spatialtree | ``spatialtree.jsonl`` (lmms-eval rows, ``extra_info`` tags) | ``images/*.png`` | depth, distance, size (MRA); relative depth, closest object (L1 Geometry); left/right (L1 Relation); camera motion (L1 Motion) |
| vsibench | ``test.jsonl`` (the hub's rows) | ``spatialarena/<scene_name>/NNN.png`` frames | counting, distance, size (numerical); left/right, relative depth, closest object |

Each format asks only what its benchmark can express: a question it cannot (a yes/no question in a
letter-only benchmark, a count of zero for VSI-Bench's relative accuracy) is redrawn, never rewritten.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from benchmarks.datagen.nav_questions import KINDS, LETTERS, SELECT, Question

#: ``(index, question)`` as ``generate`` draws them.
Generated = tuple[int, Question]
SOURCE = "SpatialArena-Nav"
VSI_DATASET = "spatialarena"
_MULTIHOP_TAIL = "And provide the bounding box coordinate of the region related to your answer."


def png_bytes(image: np.ndarray) -> bytes:
    """An RGB (or grey) array as PNG bytes."""
    buffer = io.BytesIO()
    Image.fromarray(image).save(buffer, format="PNG")
    return buffer.getvalue()


def write_parquet(path: Path, rows: list[dict[str, Any]]) -> Path:
    """Rows as a parquet file written with pyarrow (parents created)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows), path)
    return path


def write_images(folder: Path, stem: str, images: Sequence[np.ndarray]) -> list[str]:
    """Save an item's images as PNG under ``folder``; returns their file names (``stem.png`` or ``stem_K.png``)."""
    folder.mkdir(parents=True, exist_ok=True)
    names = [f"{stem}.png"] if len(images) == 1 else [f"{stem}_{k}.png" for k in range(len(images))]
    for name, image in zip(names, images):
        (folder / name).write_bytes(png_bytes(image))
    return names


def answer_letter(question: Question) -> str:
    """A multi-choice question's right letter, ``"(B)"`` -> ``"B"``."""
    return question.answer.strip("()")


def is_multi_choice(question: Question) -> bool:
    return question.question_type == "multi-choice"


def lettered(question: Question, separator: str = ". ") -> list[str]:
    """The options as ``["A. left", "B. right"]``."""
    return [f"{LETTERS[i]}{separator}{text}" for i, text in enumerate(question.options)]


# ----------------------------------------------------------------------------------------------- writers


def write_spatialscore(out: Path, generated: Iterable[Generated]) -> Path:
    """``SpatialScore.json`` (its public fields) with the renders in ``images/``."""
    items = []
    for index, question in generated:
        names = [f"images/{n}" for n in write_images(out / "images", f"{index:05d}", question.images)]
        items.append(
            {
                "index": index,
                "category": question.category,
                "subcategory": question.subcategory,
                "question_type": question.question_type,
                "input_modality": "single-image" if len(names) == 1 else "multi-images",
                "question": question.question,
                "answer": question.answer,
                "img_paths": names,
                "source": SOURCE,
            }
        )
    path = out / "SpatialScore.json"
    path.write_text(json.dumps(items, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


SPACE10_TYPES = {"counting": "EQ", "relative_depth": "OO", "closest_object": "OO", "relative_direction": "OO"}


def write_space10(out: Path, generated: Iterable[Generated]) -> Path:
    """lmms-eval's SpaCE-10 folders, one per QA type (``eq_single/test.parquet``...), images as PNG bytes."""
    by_type: dict[str, list[dict[str, Any]]] = {}
    for index, question in generated:
        qa_type = SPACE10_TYPES[question.kind]
        by_type.setdefault(qa_type, []).append(
            {
                "index": index,
                "question": question.stem,
                **{
                    letter: question.options[i] if i < len(question.options) else None
                    for i, letter in enumerate(LETTERS)
                },
                "answer": answer_letter(question),
                "category": qa_type,
                "image": [png_bytes(image) for image in question.images],
            }
        )
    root = out / "space10"
    for qa_type, rows in sorted(by_type.items()):
        write_parquet(root / f"{qa_type.lower()}_single" / "test.parquet", rows)
    return root


def write_multihop(out: Path, generated: Iterable[Generated]) -> Path:
    """``multihop_test.json`` rows (options inside ``<choice>``, the answer's box in pixels), images in ``images/``."""
    rows = []
    for index, question in generated:
        assert question.region is not None  # closest_object always names a box
        (name,) = write_images(out / "images", f"{index:05d}", question.images)
        height, width = question.images[0].shape[:2]
        choices = ", ".join(f"({LETTERS[i].lower()}) {text}" for i, text in enumerate(question.options))
        letter = answer_letter(question)
        rows.append(
            {
                "id": index,
                "image_path": name,
                "image_resolution": f"{width}x{height}",
                "view": "ego",
                "hop": "1hop",
                "question": f"{question.stem} <choice>{choices}</choice> {_MULTIHOP_TAIL}",
                "answer": f"({letter.lower()}) {question.options[LETTERS.index(letter)]}",
                "bbox": question.region,
            }
        )
    path = out / "multihop_test.json"
    path.write_text(json.dumps(rows, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


#: Question kind -> SpatialTree-Bench's (level, ability, sub-ability), as its weight tree names them.
SPATIALTREE_TAGS = {
    "absolute_depth": ("L1", "Geometry", "Distance"),
    "object_distance": ("L1", "Geometry", "Distance"),
    "object_size": ("L1", "Geometry", "Size"),
    "relative_depth": ("L1", "Geometry", "Distance"),
    "closest_object": ("L1", "Geometry", "Distance"),
    "relative_direction": ("L1", "Relation", "Relative Direction"),
    "camera_motion": ("L1", "Motion", "Ego"),
}


def write_spatialtree(out: Path, generated: Iterable[Generated]) -> Path:
    """lmms-eval's SpatialTree-Bench rows (``extra_info`` with the scorer and tags), images in ``images/``."""
    lines = []
    for index, question in generated:
        names = [f"images/{n}" for n in write_images(out / "images", f"{index:05d}", question.images)]
        tags = {f"spatree{i}": tag for i, tag in enumerate(SPATIALTREE_TAGS[question.kind])}
        mcq = is_multi_choice(question)
        lines.append(
            json.dumps(
                {
                    "session_id": f"gen-{index:05d}",
                    "question": question.stem if mcq else question.question,
                    "option": lettered(question) if mcq else [],
                    "answer": answer_letter(question) if mcq else question.answer,
                    "question_type": "mcq" if mcq else "open",
                    "hint": "",
                    "extra_info": json.dumps(
                        {"metricfunc": "multichoiceeval" if mcq else "meanrelativeacc", **tags}
                    ),
                    "image": names,
                },
                ensure_ascii=False,
            )
        )
    path = out / "spatialtree.jsonl"
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


VSI_TYPES = {
    "counting": "object_counting",
    "object_distance": "object_abs_distance",
    "object_size": "object_size_estimation",
    "relative_direction": "object_rel_direction_easy",
    "relative_depth": "object_rel_distance",
    "closest_object": "object_rel_distance",
}


def write_vsibench(out: Path, generated: Iterable[Generated]) -> Path:
    """The hub's ``test.jsonl`` rows, each item a scene of its own: a folder of frames ``spatialarena/<scene>/``."""
    lines = []
    for index, question in generated:
        scene = f"gen{index:05d}"
        for k, image in enumerate(question.images):
            (out / VSI_DATASET / scene).mkdir(parents=True, exist_ok=True)
            (out / VSI_DATASET / scene / f"{k:03d}.png").write_bytes(png_bytes(image))
        text, truth, options = _vsi_fields(question)
        lines.append(
            json.dumps(
                {
                    "id": index,
                    "dataset": VSI_DATASET,
                    "scene_name": scene,
                    "question_type": VSI_TYPES[question.kind],
                    "question": text,
                    "ground_truth": truth,
                    "options": options,
                },
                ensure_ascii=False,
            )
        )
    path = out / "test.jsonl"
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def _vsi_fields(question: Question) -> tuple[str, str, list[str] | None]:
    """VSI-Bench's question, ground truth and options: counts, distances and sizes as numbers (a count's
    question without its options), the rest as letters."""
    stem = question.stem.removesuffix(" " + SELECT)
    if question.kind == "counting":
        return stem, str(question.truth["count"]), None
    if question.kind in ("object_distance", "object_size"):
        return question.question, question.answer, None
    return stem, answer_letter(question), lettered(question)


# ------------------------------------------------------------------------------------------------ formats


@dataclass(frozen=True)
class SampleFormat:
    """One benchmark's layout: what it can ask and how its files are written.

    Attributes:
        name: ``--format`` value.
        bench: the ``--bench`` that reads it.
        data: the ``--data`` file or folder, relative to the set's folder.
        kinds: question kinds it can express (the default set).
        accepts: whether a drawn question fits (others are redrawn).
        write: ``(out, generated) -> --data path``.
    """

    name: str
    bench: str
    data: str
    kinds: tuple[str, ...]
    accepts: Callable[[Question], bool]
    write: Callable[[Path, Iterable[Generated]], Path]


def _any(question: Question) -> bool:
    return True


def _vsi_accepts(question: Question) -> bool:
    """Numerical kinds, counts above zero (a zero truth has no relative accuracy), or multi-choice."""
    if question.kind == "counting":
        return int(question.truth["count"]) > 0
    return question.kind in ("object_distance", "object_size") or is_multi_choice(question)


FORMATS: dict[str, SampleFormat] = {
    f.name: f
    for f in (
        SampleFormat("spatialscore", "spatialscore", "SpatialScore.json", KINDS, _any, write_spatialscore),
        SampleFormat("space10", "space10", "space10", tuple(SPACE10_TYPES), is_multi_choice, write_space10),
        SampleFormat(
            "multihop",
            "multihopspatial",
            "multihop_test.json",
            ("closest_object",),
            is_multi_choice,
            write_multihop,
        ),
        SampleFormat(
            "spatialtree",
            "spatialtree",
            "spatialtree.jsonl",
            tuple(SPATIALTREE_TAGS),
            lambda q: q.question_type != "judgment",
            write_spatialtree,
        ),
        SampleFormat("vsibench", "vsibench", "test.jsonl", tuple(VSI_TYPES), _vsi_accepts, write_vsibench),
    )
}


def sample_format(name: str) -> SampleFormat:
    """The format called ``name`` (one-line error with the choices)."""
    if name not in FORMATS:
        raise ValueError(f"--format {name!r}: choose one of {', '.join(FORMATS)}")
    return FORMATS[name]
