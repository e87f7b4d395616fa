"""What every family of the spatial corpus shares in how it asks and answers (MultihopSpatial's box format),
and how ``corpus check`` reads a test file's lines.

A multi-hop item (kind ``multihop`` or ``<family>_multihop``) lists lettered options in ``<choice>`` tags
and asks for the recipe's two-line answer, ``Answer: (c) red mug`` then ``Bounding Box: [x1, y1, x2, y2]`` on
0-1000: what :mod:`benchmarks.posttrain.multihop_rewards` scores (format, letter, box GIoU).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

BOX_FORMAT = (
    "\n\nPlease respond in the following format:\n"
    'Answer: (your choice, e.g., "(a) object name")\n'
    "Bounding Box: [x1, y1, x2, y2]\n\n"
    "where [x1, y1] is the top-left corner and [x2, y2] the bottom-right corner, as integers from 0 to 1000."
)


def is_multihop(kind: str) -> bool:
    """Whether a corpus kind is a multi-hop item answered in the recipe's format."""
    return kind == "multihop" or kind.endswith("_multihop")


def localisation_text(name: str) -> str:
    """The corpus's localisation question about ``name`` ("the red block"), answered as :func:`box_answer`."""
    return (
        f"Locate {name} in the image. Give its bounding box as Bounding Box: [x1, y1, x2, y2], "
        "integers from 0 to 1000 (top-left and bottom-right corners)."
    )


def box_answer(box: Sequence[int]) -> str:
    """The answer to a localisation question: ``Bounding Box: [x1, y1, x2, y2]`` on 0-1000."""
    return f"Bounding Box: [{', '.join(map(str, box))}]"


def recipe_answer(answer: str, box: Sequence[int]) -> str:
    """The assistant turn of a multi-hop item: ``Answer: (c) red mug`` and its box."""
    return f"Answer: {answer}\n{box_answer(box)}"


def lettered_choice(rng: np.random.Generator, right: str, wrong: Sequence[str]) -> tuple[str, str]:
    """Shuffled options ``(a) x, (b) y, ...`` (the multi-hop prompt's style) and the answer ``(b) y``."""
    texts = [right, *wrong]
    order = [texts[int(i)] for i in rng.permutation(len(texts))]
    letter = "abcd"[order.index(right)]
    return ", ".join(f"({'abcd'[i]}) {t}" for i, t in enumerate(order)), f"({letter}) {right}"


def box_1000(mask: np.ndarray) -> list[int] | None:
    """Tight box of a mask's pixels, ``[x1, y1, x2, y2]`` on 0-1000 (edges of the pixel cells); ``None`` if empty."""
    rows, cols = np.nonzero(mask)
    if rows.size == 0:
        return None
    height, width = mask.shape
    return [
        int(cols.min() * 1000 // width),
        int(rows.min() * 1000 // height),
        int(-(-(cols.max() + 1) * 1000 // width)),
        int(-(-(rows.max() + 1) * 1000 // height)),
    ]


def json_line(path: str | Path, number: int, line: str) -> dict[str, Any]:
    """One JSON-lines record (``{}`` for a blank line); a ``ValueError`` naming the file and line otherwise."""
    if not line.strip():
        return {}
    try:
        record = json.loads(line)
    except json.JSONDecodeError as error:
        raise ValueError(
            f"{path} line {number} is not a JSON record ({error.msg}); pass JSON-lines test files: "
            "ground_truth.jsonl, samples.jsonl or EB-Manipulation episode files"
        ) from None
    if not isinstance(record, dict):
        raise ValueError(f"{path} line {number} is not a JSON object; pass JSON-lines test files")
    return record
