"""The oracle core for SpatialAgent on generated sets: a perfect reasoner with no perception of its own.

Attached to the oracle backend (:meth:`OracleBackend.attach`) for one item, :class:`AgentOracleSource` answers
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

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from action_mapping import Category, Primitive
from action_mapping.se3 import axes_from_rotation
from benchmarks.scoring.parsers import normalize_text
from benchmarks.static.items import StaticItem
from benchmarks.static.nav_questions import CAMERA_MOTION_TEXT
from policies.agent import prompts
from policies.backends.base import Message

_ROTATION_DEG = 5.0  # a relative pose rotating more than this about some axis is a rotation, else a translation
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
    return Task(truth["kind"], tuple(names[i] for i in ids if i in names), item.task, dict(item.options), t.get("noun"),
                asked.group(1).lower() if asked and item.task == "judgment" else None)  # fmt: skip


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
    raise ValueError(f"the agent oracle has no plan for question kind {task.kind!r}")


def _available(plan: list[dict[str, Any]], prompt: str) -> list[dict[str, Any]]:
    """The calls whose tools the prompt lists (a competent core uses no other)."""
    return [c for c in plan if f"### {c['name']} (" in prompt]


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
        depths = {r["object"]: r["depth"] for e in evidence for r in e.get("results", []) if r.get("depth") is not None}
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
        extrinsic = np.asarray(next(o["extrinsic"] for o in pose["output"] if o["image_index"] == 1), dtype=float)
        return _letter(task, CAMERA_MOTION_TEXT[motion_primitive(extrinsic)])
    return None


def motion_primitive(extrinsic: np.ndarray) -> Primitive:
    """The single camera primitive closest to a relative pose ``[R|t]`` (first camera frame -> second's)."""
    R, t = extrinsic[:3, :3], extrinsic[:3, 3]
    moved_R, moved_t = R.T, -R.T @ t  # the second camera's pose in the first camera's frame
    angles = np.degrees(axes_from_rotation(moved_R))
    if np.abs(angles).max() > _ROTATION_DEG:
        category, axis, sign = Category.ROTATION, int(np.argmax(np.abs(angles))), int(np.sign(angles[np.argmax(np.abs(angles))]))
    else:
        category, axis, sign = Category.TRANSLATION, int(np.argmax(np.abs(moved_t))), int(np.sign(moved_t[np.argmax(np.abs(moved_t))]))
    return next(p for p in CAMERA_MOTION_TEXT if p.category is category and p.axis == axis and p.sign == sign)


def _letter(task: Task, text: str) -> str | None:
    wanted = normalize_text(text)
    letters = [k for k, v in task.options.items() if normalize_text(v) == wanted]
    return f"({letters[0]})" if len(letters) == 1 else None


# ------------------------------------------------------------------------------------------ the source


def _text(message: Message) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content if isinstance(part, Mapping) and part.get("type") == "text")


def _json_after(text: str, head: str) -> Any:
    """The JSON value right after ``head`` in ``text`` (prompts write tool results as one JSON value)."""
    start = text.index(head) + len(head)
    return json.JSONDecoder().raw_decode(text[start:].lstrip())[0]


class AgentOracleSource:
    """Writes each role's reply for one item (see the module docstring)."""

    def __init__(self, task: Task) -> None:
        self.task = task

    def answer(self, messages: Sequence[Message]) -> str:
        first, last = _text(messages[0]), _text(messages[-1])
        if first.startswith(prompts.PLANNER_GOAL):
            return json.dumps(_available(plan_for(self.task), first))
        if first.startswith(prompts.EXECUTOR_GOAL):
            return self._chain_of_thought(first)
        if first.startswith(prompts.SUMMARIZER_GOAL):
            evidence = _json_after(first, "Tool Results:")
            return f"<thinking>From the tool results.</thinking> <answer>{solve(self.task, evidence)}</answer>"
        if first.startswith(prompts.DIRECT_GOAL):
            return f"<thinking>Without tools I cannot measure this.</thinking> <answer>{guess(self.task)}</answer>"
        if first.startswith("USER REQUEST:"):
            return self._react(first, messages, last)
        raise ValueError("the agent oracle does not know this prompt")

    def _chain_of_thought(self, prompt: str) -> str:
        plan, results = _json_after(prompt, "Tool Plan:"), _json_after(prompt, "Tool Results:")
        steps = [f"<thinking>{call['name']} measures what the question asks.</thinking> <tool>{json.dumps(call)}</tool> "
                 f"<observation>{json.dumps(result)}</observation>" for call, result in zip(plan, results)]  # fmt: skip
        return "\n".join(steps) or "<thinking>No tool was used.</thinking>"

    def _react(self, first: str, messages: Sequence[Message], last: str) -> str:
        if last.startswith(prompts.ALL_OBSERVATION_HEAD):
            memory = _json_after(last, prompts.ALL_OBSERVATION_HEAD)
            evidence = [m["observation"] for m in memory if m.get("actions")]
            return _decision("All evidence is in.", "Terminate", {"answer": solve(self.task, evidence)})
        observations = [_json_after(_text(m), prompts.OBSERVATION_HEAD) for m in messages[1:]
                        if m.get("role") == "user" and _text(m).startswith(prompts.OBSERVATION_HEAD)]  # fmt: skip
        done = [o for o in observations if not str(o.get("error", "")).startswith("the output could not be read")]
        plan = _available(plan_for(self.task), first)
        if len(done) < len(plan):
            call = plan[len(done)]
            return _decision(f"{call['name']} measures what the question asks.", call["name"], call["arguments"])
        return _decision("The observations answer the question.", "Terminate", {"answer": solve(self.task, done)})


def _decision(thought: str, name: str, arguments: Mapping[str, Any]) -> str:
    return json.dumps({"thought": thought, "actions": [{"name": name, "arguments": dict(arguments)}]})
