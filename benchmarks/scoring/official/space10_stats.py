"""The SpaCE-10 fork's statistics script (``lmms_eval/tasks/space_10/evaluator.py``), reproduced.

The fork's tasks append every scored record to a JSON file (``json.dump(..., indent=4)`` once per item, no
separator, so records meet as ``}{``); the script reads that file back and counts, without a judge:

- an item is *single* when its answer string has one character (``"B"``), else *multiple* (``"AC"``);
- the prediction is the first element of the recorded result list (the model's text);
- a one-character prediction is taken as the chosen option; any longer prediction counts only the letters
  A-F written as ``"X."`` (``"B. chair, E. lamp"`` reads B and E; ``"B, E"`` and ``"The answer is B"`` read
  nothing);
- correct when the sorted letters equal the sorted characters of the answer string (so an answer written
  ``"A, C"`` can never be matched);
- accuracy of the single items, of the multiple items, and of all (0 when a group is empty).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

_LETTER_DOT = re.compile(r"([A-F]\.)")
GROUPS = ("single", "multiple", "all")


def parse_json_objects(text: str) -> list[dict[str, Any]]:
    """The records of a dump file: split at ``}{``, each piece re-wrapped in braces, pieces that do not
    parse skipped (as the script does)."""
    pieces = ["{" + piece + "}" for piece in text.split("}{")]
    pieces[0] = pieces[0][1:]
    pieces[-1] = pieces[-1][:-1]
    records = []
    for piece in pieces:
        try:
            value = json.loads(piece)
        except (ValueError, RecursionError):  # a JSONDecodeError, an int over 4,300 digits, deep nesting
            continue
        if isinstance(value, dict):
            records.append(value)
    return records


def predicted_options(prediction: str) -> list[str]:
    """The options the script reads from one prediction text."""
    if len(prediction) == 1:
        return [prediction]
    return sorted({match[:-1] for match in _LETTER_DOT.findall(prediction)})


def is_single(answer: str) -> bool:
    """The script's split: a one-character answer string is a single-answer item."""
    return len(answer) == 1


def is_correct(prediction: str, answer: str) -> bool:
    """The read options equal the sorted characters of the answer string."""
    return predicted_options(prediction) == sorted(answer)


def first_prediction(record: Mapping[str, Any]) -> str:
    """``record["prediction"][0]``: the model's text in a dumped record (a list of one string)."""
    prediction = record.get("prediction")
    if isinstance(prediction, list | tuple):
        return str(prediction[0]) if prediction else ""
    return str(prediction or "")


def statistics(pairs: Iterable[tuple[str, str]]) -> dict[str, dict[str, float | int]]:
    """``{"single" | "multiple" | "all": {"total", "correct", "accuracy"}}`` from (prediction, answer) pairs."""
    stats = {g: {"total": 0, "correct": 0} for g in GROUPS}
    for prediction, answer in pairs:
        hit = is_correct(prediction, answer)
        for group in ("single" if is_single(answer) else "multiple", "all"):
            stats[group]["total"] += 1
            stats[group]["correct"] += int(hit)
    return {g: {**s, "accuracy": s["correct"] / s["total"] if s["total"] else 0.0} for g, s in stats.items()}


def statistics_of_records(records: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, float | int]]:
    """The script's statistics over dumped records (``answer`` and ``prediction`` fields)."""
    return statistics((first_prediction(r), str(r.get("answer", ""))) for r in records)


def statistics_of_file(path: str | Path) -> dict[str, dict[str, float | int]]:
    """The script's statistics of one dump file (what ``evaluator.py --path FILE`` prints)."""
    return statistics_of_records(parse_json_objects(Path(path).read_text(encoding="utf-8")))
