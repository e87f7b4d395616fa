"""CALVIN's 34 evaluation tasks and the fixed language instruction the evaluation gives for each.

The public evaluation instructs every subtask with the first validation annotation of that task
(``new_playtable_validation.yaml``), so one task always gets one sentence. The task order is that of the
evaluation's task table: chain generation draws task *indices*, so the order is part of the protocol.
Both live in ``eval_instructions.json`` next to this module.
"""

from __future__ import annotations

import difflib
import json
from functools import cache
from importlib import resources
from types import MappingProxyType
from typing import Any

_DATA_FILE = "eval_instructions.json"
_TRAIN_FILE = "train_instructions.json"


@cache
def _load_data() -> dict[str, Any]:
    text = resources.files(__package__).joinpath(_DATA_FILE).read_text(encoding="utf-8")
    data = json.loads(text)
    if sorted(data["tasks"]) != sorted(data["instructions"]) or len(data["tasks"]) != 34:
        raise RuntimeError(f"{_DATA_FILE} is inconsistent: it must list the same 34 tasks twice")
    return data


CALVIN_TASKS: tuple[str, ...] = tuple(_load_data()["tasks"])
"""The 34 task names in the order of CALVIN's evaluation task table."""

EVAL_INSTRUCTIONS: MappingProxyType[str, str] = MappingProxyType(dict(_load_data()["instructions"]))
"""Task name -> the fixed evaluation instruction (read-only)."""


def instruction_for(task: str) -> str:
    """Return the fixed evaluation instruction of a CALVIN task, e.g. ``"open_drawer"``.

    Raises ``ValueError`` naming the closest task names when ``task`` is not one of the 34.
    """
    try:
        return EVAL_INSTRUCTIONS[task]
    except (KeyError, TypeError):
        raise ValueError(_unknown_task_message(task)) from None


def _unknown_task_message(task: object) -> str:
    close = difflib.get_close_matches(str(task), CALVIN_TASKS, n=3)
    hint = f" Did you mean {', '.join(map(repr, close))}?" if close else ""
    return (
        f"unknown CALVIN task {task!r}: expected one of the 34 task names of the CALVIN evaluation "
        f"(envs.calvin.instructions.CALVIN_TASKS).{hint}"
    )


@cache
def train_instructions() -> MappingProxyType[str, tuple[str, ...]]:
    """Task name -> CALVIN's training annotations for it (``new_playtable.yaml``, in
    ``train_instructions.json``), the sentences CALVIN's play data is annotated with.

    The evaluation instruction of every task is held out: it is dropped here even if a future copy of
    the training set listed it, so generated training data never carries an evaluation sentence."""
    text = resources.files(__package__).joinpath(_TRAIN_FILE).read_text(encoding="utf-8")
    data = json.loads(text)["instructions"]
    if sorted(data) != sorted(CALVIN_TASKS):
        raise RuntimeError(f"{_TRAIN_FILE} must list the 34 CALVIN tasks")
    held_out = set(EVAL_INSTRUCTIONS.values())
    kept = {task: tuple(s for s in data[task] if s not in held_out) for task in CALVIN_TASKS}
    empty = [task for task, sentences in kept.items() if not sentences]
    if empty:
        raise RuntimeError(f"{_TRAIN_FILE}: no training instruction left for {empty}")
    return MappingProxyType(kept)
