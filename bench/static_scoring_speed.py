"""Scoring speed of the static benchmarks: 5,000 samples per benchmark and mode, against a trivial loop.

Builds 5,000 items per benchmark in the official file formats (temporary files, loaded without images),
pairs them with varied responses (bare letters, sentences, refusals, numbers with units, boxes), then
times scoring every sample plus the summary. The baseline is a loop that only compares the stripped,
upper-cased response with the answer string over the same samples, measured in the same run.
Prints the median of several repeats; the target is under one second per 5,000 samples.

    python bench/static_scoring_speed.py [--samples 5000] [--repeats 5]
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
from pathlib import Path
from typing import Any

from benchmarks.core.timing import median_time
from benchmarks.static import get_benchmark
from benchmarks.static.registry import LoadOptions

LETTER_FORMS = [
    "{}",
    "({})",
    "{}.",
    "Answer: {}",
    "The answer is ({}).",
    "I think {} because it is closer.",
    "I cannot tell.",
]


def spatialscore_rows(n: int, rng: random.Random) -> tuple[list[dict[str, Any]], list[str]]:
    rows, responses = [], []
    for i in range(n):
        kind = i % 3
        if kind == 0:
            rows.append(
                {
                    "index": i,
                    "question_type": "multi-choice",
                    "question": "Which is closer?\n(A) chair\n(B) table\n(C) lamp\n(D) sofa",
                    "answer": "(B)",
                    "img_paths": ["x.jpg"],
                    "category": f"cat{i % 10}",
                    "source": "cvbench",
                }
            )
            responses.append(rng.choice([*LETTER_FORMS, "the table"]).format(rng.choice("ABCD")))
        elif kind == 1:
            rows.append(
                {
                    "index": i,
                    "question_type": "judgment",
                    "question": "Is the cup left of the plate?",
                    "answer": "Yes",
                    "img_paths": ["x.jpg"],
                    "category": f"cat{i % 10}",
                    "source": "SpatialSense",
                }
            )
            responses.append(
                rng.choice(["Yes", "No.", "No, that is not correct.", "yes, it is", "I cannot determine it."])
            )
        else:
            rows.append(
                {
                    "index": i,
                    "question_type": "open-ended",
                    "question": "What is the distance between the table and the tv (in meters)?",
                    "answer": "2.7",
                    "img_paths": ["f0.jpg", "f1.jpg"],
                    "category": f"cat{i % 10}",
                    "source": "VSI-Bench_8",
                }
            )
            responses.append(
                rng.choice(
                    [
                        "2.5 m",
                        "about 300 cm",
                        "between 2 and 3 meters",
                        "three",
                        "\\scalar{2.4} \\distance_unit{m}",
                        "no idea",
                    ]
                )
            )
    return rows, responses


def multihop_rows(n: int, rng: random.Random) -> tuple[list[dict[str, Any]], list[str]]:
    rows, responses = [], []
    for i in range(n):
        rows.append(
            {
                "id": i,
                "image_path": f"{i}.jpg",
                "image_resolution": "640x480",
                "view": "ego" if i % 2 else "exo",
                "hop": f"{i % 3 + 1}hop",
                "answer": "(a) fork",
                "bbox": [450.4, 274.9, 189.1, 99.5],
                "question": "Which object is farthest? <choice>(a) fork, (b) knife, (c) coffee cup, (d) apple</choice> And provide the box.",
            }
        )
        x = rng.randint(0, 800)
        responses.append(f"Answer: ({rng.choice('abcd')}) fork\nBounding Box: [{x}, 570, {x + 200}, 780]")
    return rows, responses


def space10_rows(n: int, rng: random.Random) -> tuple[list[dict[str, Any]], list[str]]:
    rows, responses = [], []
    for i in range(n):
        rows.append(
            {
                "index": i,
                "question": "How many beds are in the scene?",
                "A": "1",
                "B": "2",
                "C": "3",
                "D": "4",
                "E": "5",
                "answer": "B" if i % 4 else "BD",
                "qa_type": ["EQ", "SA", "OO", "EP"][i % 4],
                "image": ["x.png"],
            }
        )
        responses.append(
            rng.choice(LETTER_FORMS).format(rng.choice("ABCD"))
            if i % 4
            else rng.choice(["B, D", "BD", "['B', 'D']", "B and C"])
        )
    return rows, responses


def spatialtree_rows(n: int, rng: random.Random) -> tuple[list[dict[str, Any]], list[str]]:
    rows, responses = [], []
    for i in range(n):
        if i % 2:
            extra = {
                "metricfunc": "multichoiceeval",
                "spatree0": "L1",
                "spatree1": "Relation",
                "spatree2": "RelativeDirection",
            }
            rows.append(
                {
                    "session_id": str(i),
                    "question": "Which is left?",
                    "option": ["A. cup", "B. plate", "C. fork"],
                    "answer": "B",
                    "question_type": "mcq",
                    "extra_info": json.dumps(extra),
                    "image": ["x.png"],
                }
            )
            responses.append(rng.choice(["answer: B", "B", "The answer is A", "(C) fork", "hmm"]))
        else:
            extra = {
                "metricfunc": "meanrelativeacc",
                "spatree0": "L1",
                "spatree1": "Geometry",
                "spatree2": "Distance",
            }
            rows.append(
                {
                    "session_id": str(i),
                    "question": "How far?",
                    "option": [],
                    "answer": "2.0",
                    "question_type": "open",
                    "extra_info": json.dumps(extra),
                    "image": ["x.png"],
                }
            )
            responses.append(rng.choice(["2.1", "about 3 meters", "1,950 mm", "unknown"]))
    return rows, responses


BUILDERS = {
    "spatialscore": spatialscore_rows,
    "multihopspatial": multihop_rows,
    "space10": space10_rows,
    "spatialtree": spatialtree_rows,
}


def load_items(name: str, rows: list[dict[str, Any]], folder: Path) -> list[Any]:
    path = folder / f"{name}.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return get_benchmark(name).load(path, LoadOptions(check_media=False))


def score_all(mode: Any, items: list[Any], responses: list[str]) -> None:
    records = []
    for item, response in zip(items, responses):
        record = {
            "index": item.index,
            "item_id": item.item_id,
            "category": item.category,
            "tags": dict(item.tags),
        }
        record.update(mode.score(item, response).to_dict())
        records.append(record)
    mode.summarize(items, records, {})


def baseline(items: list[Any], responses: list[str]) -> None:
    hits = 0
    for item, response in zip(items, responses):
        hits += response.strip().upper() == str(item.answer).strip().upper()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=5000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    rng = random.Random(0)
    print(
        f"{'benchmark':16} {'mode':22} {'samples':>7} {'score+summary s':>15} {'per sample us':>13} {'baseline s':>10} {'ratio':>7}"
    )
    worst = 0.0
    with tempfile.TemporaryDirectory() as tmp:
        for name, build in BUILDERS.items():
            rows, responses = build(args.samples, rng)
            items = load_items(name, rows, Path(tmp))
            base = median_time(
                lambda items=items, responses=responses: baseline(items, responses), args.repeats
            )
            for mode in get_benchmark(name).modes.values():
                seconds = median_time(lambda m=mode, i=items, r=responses: score_all(m, i, r), args.repeats)
                worst = max(worst, seconds)
                print(
                    f"{name:16} {mode.name:22} {len(items):7d} {seconds:15.3f} {1e6 * seconds / len(items):13.1f} {base:10.4f} {seconds / base:7.0f}x"
                )
    verdict = "under" if worst < 1.0 else "OVER"
    print(f"slowest: {worst:.3f} s per {args.samples} samples ({verdict} the 1 s target)")


if __name__ == "__main__":
    main()
