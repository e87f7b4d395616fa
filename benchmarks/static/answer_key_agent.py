"""The answer-key core for SpatialAgent on generated sets: a perfect reasoner with no perception of its own.

Made for each item by :class:`StaticAgentTruth` (the answer-key backend's truth), :class:`AgentTruthSource` answers
each role's prompt as a competent core would: the planner calls the right tools for the question (only tools
the prompt lists), the executor writes the chain of thought over the results it is shown, the observer calls
the next tool or ``Terminate``, and the summarizers derive the answer **from the tool outputs in the prompt**,
never from the answer key. The privileged part is only what the question is about (its kind and the entity
names, from the truth record), which a reader gets from the question text.

So with simulator-truth tools it answers every item correctly, and with other tools its errors are the tools'
errors: the perception share of the error. Without usable evidence (a failed or missing tool, the no-tool
direct prompt) it answers a fixed guess (the first option, "no", 1 meter / 100 centimeters), as a reasoner
that cannot see.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from action_mapping import Category, Primitive
from action_mapping.se3 import axes_from_rotation
from benchmarks.datagen.nav_questions import CAMERA_MOTION_TEXT
from benchmarks.scoring.parsers import normalize_text
from benchmarks.static.items import StaticItem
from policies.agent.answer_key_core import AnswerKeyCore
from policies.backends.base import Message

if TYPE_CHECKING:
    from benchmarks.static.agent_run import ItemEpisode

_ROTATION_DEG = (
    5.0  # a relative pose rotating more than this about some axis is a rotation, else a translation
)
_ASKED_SIDE = re.compile(r"\bto the (left|right) of\b", re.IGNORECASE)


@dataclass(frozen=True)
class Task:
    """What a question is about: its kind, the entity names it uses, its options and answer form."""

    kind: str
    names: tuple[str, ...]
    task: str  # the benchmark item's task: mcq, judgment, numeric
    options: Mapping[str, str] = field(default_factory=dict)
    noun: str | None = None
    asked_side: str | None = None


def task_of(item: StaticItem, truth: Mapping[str, Any], names: Mapping[str, str]) -> Task:
    """The :class:`Task` of a generated item from its truth record (entity ids -> names via ``names``)."""
    t = truth["truth"]
    ids = t.get("entities") or ([t["entity"]] if "entity" in t else [])
    asked = _ASKED_SIDE.search(item.question)
    return Task(
        truth["kind"],
        tuple(names[i] for i in ids if i in names),
        item.task,
        dict(item.options),
        t.get("noun"),
        asked.group(1).lower() if asked and item.task == "judgment" else None,
    )


def plan_for(task: Task) -> list[dict[str, Any]]:
    """The tool calls that answer ``task`` (the planner's plan, and the observer's calls in order)."""
    image, names = "image-0", list(task.names)
    if task.kind in ("absolute_depth", "relative_depth"):
        return [{"name": "EstimateObjectDepth", "arguments": {"image": image, "objects": names}}]
    if task.kind == "object_distance":
        return [{"name": "EstimateObjectDistance", "arguments": {"image": image, "objects": names}}]
    if task.kind in ("object_size", "relative_direction"):
        return [{"name": "Detect3DObjects", "arguments": {"image": image, "objects": names}}]
    if task.kind == "counting":
        return [{"name": "CountObjects", "arguments": {"image": image, "object": task.noun}}]
    if task.kind == "camera_motion":
        return [{"name": "GetCameraParameters", "arguments": {"images": ["image-0", "image-1"]}}]
    raise ValueError(f"the answer-key core has no plan for question kind {task.kind!r}")


# ------------------------------------------------------------------------------------------ reasoning


def solve(task: Task, evidence: Sequence[Mapping[str, Any]]) -> str:
    """The answer, in the summarizer's format, derived from the tool results in ``evidence``; a fixed guess
    when they do not hold what the question needs."""
    try:
        answer = _derive(task, evidence)
    except (KeyError, TypeError, ValueError, IndexError, StopIteration, np.linalg.LinAlgError):
        answer = None
    return answer if answer is not None else guess(task)


def guess(task: Task) -> str:
    """The answer of a reasoner that sees nothing."""
    if task.task == "mcq":
        return f"({next(iter(task.options), 'A')})"
    if task.task == "judgment":
        return "no"
    return "100 centimeters" if task.kind == "object_size" else "1 meters"


def _derive(task: Task, evidence: Sequence[Mapping[str, Any]]) -> str | None:
    if task.kind in ("absolute_depth", "relative_depth"):
        depths = {
            r["object"]: r["depth"]
            for e in evidence
            for r in e.get("results", [])
            if r.get("depth") is not None
        }
        if task.kind == "absolute_depth":
            return f"{depths[task.names[0]]:.2f} meters"
        nearer = min(task.names, key=lambda n: depths[n])
        return _letter(task, nearer)
    if task.kind == "object_distance":
        return f"{next(e['distance_meters'] for e in evidence if 'distance_meters' in e):.2f} meters"
    if task.kind in ("object_size", "relative_direction"):
        boxes = {o["label"]: o["bbox_3d"] for e in evidence for o in e.get("objects", [])}
        if task.kind == "object_size":
            box = boxes[task.names[0]]
            return f"{round(100 * max(box['width'], box['height'], box['length']))} centimeters"
        bearings = [math.atan2(boxes[n]["x"], boxes[n]["z"]) for n in task.names]
        side = "left" if bearings[0] < bearings[1] else "right"
        if task.task == "judgment":
            return "yes" if side == task.asked_side else "no"
        return _letter(task, side)
    if task.kind == "counting":
        return _letter(task, str(next(e["count"] for e in evidence if "count" in e)))
    if task.kind == "camera_motion":
        pose = next(e for e in evidence if "output" in e)
        extrinsic = np.asarray(
            next(o["extrinsic"] for o in pose["output"] if o["image_index"] == 1), dtype=float
        )
        return _letter(task, CAMERA_MOTION_TEXT[motion_primitive(extrinsic)])
    return None


def motion_primitive(extrinsic: np.ndarray) -> Primitive:
    """The single camera primitive closest to a relative pose ``[R|t]`` (first camera frame -> second's)."""
    R, t = extrinsic[:3, :3], extrinsic[:3, 3]
    moved_R, moved_t = R.T, -R.T @ t  # the second camera's pose in the first camera's frame
    angles = np.degrees(axes_from_rotation(moved_R))
    if np.abs(angles).max() > _ROTATION_DEG:
        category, axis, sign = (
            Category.ROTATION,
            int(np.argmax(np.abs(angles))),
            int(np.sign(angles[np.argmax(np.abs(angles))])),
        )
    else:
        category, axis, sign = (
            Category.TRANSLATION,
            int(np.argmax(np.abs(moved_t))),
            int(np.sign(moved_t[np.argmax(np.abs(moved_t))])),
        )
    return next(p for p in CAMERA_MOTION_TEXT if p.category is category and p.axis == axis and p.sign == sign)


def _letter(task: Task, text: str) -> str | None:
    wanted = normalize_text(text)
    letters = [k for k, v in task.options.items() if normalize_text(v) == wanted]
    return f"({letters[0]})" if len(letters) == 1 else None


# ------------------------------------------------------------------------------------------ the source


class AgentTruthSource(AnswerKeyCore):
    """Writes each role's reply for one item (see the module docstring and :class:`AnswerKeyCore`)."""

    def __init__(self, task: Task) -> None:
        self.task = task

    def plan(self, question: str) -> list[dict[str, Any]]:
        return plan_for(self.task)

    def solve(self, question: str, evidence: Sequence[Mapping[str, Any]]) -> str:
        return solve(self.task, evidence)

    def guess(self, question: str) -> str:
        return guess(self.task)


class StaticAgentTruth:
    """The answer-key model's truth for ``--policy agent`` on generated sets: each item's :class:`AgentTruthSource`,
    made when the agent starts the item (``Backend.start_episode`` with ``agent_run.ItemEpisode``)."""

    def __init__(self) -> None:
        self.source: AgentTruthSource | None = None

    def start_episode(self, episode: ItemEpisode) -> None:
        self.source = AgentTruthSource(task_of(episode.item, episode.truth, episode.scenes.names()))

    def __call__(self, messages: Sequence[Message]) -> str:
        if self.source is None:
            raise RuntimeError("the agent's answer key was asked before any item started")
        return self.source.answer(messages)
