"""Reading the agent core's output: JSON tool calls (plans, ReAct decisions) and tagged final answers.

Both parsers never raise on model text, run in linear time (the JSON cascade of
:func:`action_mapping.parsing.extract_json`, bounded by its input cap), and say what they did: ``usable`` is
False when nothing could be read (a counted parse failure), ``repairs`` lists what was fixed on the way.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from action_mapping.parsing import MAX_PLAN_CHARS, extract_json
from policies.agent.tools import ToolCall

MAX_CALLS = (
    16  # calls read from one output; a longer plan is runaway generation (the rest is dropped, counted)
)
_CALL_LIST_KEYS = ("actions", "plan", "tool_calls", "calls", "steps")


@dataclass
class ParsedCalls:
    """Tool calls read from one output."""

    calls: list[ToolCall] = field(default_factory=list)
    thought: str | None = None
    usable: bool = False
    errors: list[str] = field(default_factory=list)

    @property
    def repairs(self) -> list[str]:
        return [
            e for e in self.errors if e.startswith(("repaired_json", "too_many_calls", "input_truncated"))
        ]

    def to_dict(self) -> dict[str, Any]:
        return {
            "calls": [c.to_dict() for c in self.calls],
            "thought": self.thought,
            "usable": self.usable,
            "errors": list(self.errors),
        }


def parse_calls(text: str) -> ParsedCalls:
    """Tool calls from a planner's JSON list or an observer's ``{"thought": ..., "actions": [...]}``.

    Accepted shapes: a list of ``{"name", "arguments"}``; an object holding such a list under ``actions``
    (the paper's ReAct format), ``plan``, ``tool_calls``, ``calls`` or ``steps``; a single call object. An empty
    list is a usable decision (no tool). Anything else is unusable, with the reason in ``errors``.
    """
    value, errors = extract_json(text)
    out = ParsedCalls(errors=errors)
    if value is None:
        return out
    entries, out.thought = _entries(value)
    if entries is None:
        out.errors.append(
            f"not_tool_calls: decoded a {type(value).__name__} without 'name'/'arguments' calls"
        )
        return out
    if len(entries) > MAX_CALLS:
        out.errors.append(f"too_many_calls: {len(entries)} calls, kept the first {MAX_CALLS}")
        entries = entries[:MAX_CALLS]
    for number, entry in enumerate(entries, 1):
        call = _call(entry)
        if call is None:
            out.errors.append(f"bad_call: call {number} is not an object with a string 'name'")
            return ParsedCalls(errors=out.errors, thought=out.thought)
        out.calls.append(call)
    out.usable = True
    return out


def _entries(value: object) -> tuple[list[Any] | None, str | None]:
    if isinstance(value, list):
        return value, None
    if not isinstance(value, Mapping):
        return None, None
    thought = value.get("thought") if isinstance(value.get("thought"), str) else None
    for key in _CALL_LIST_KEYS:
        if isinstance(value.get(key), list):
            return value[key], thought
    if "name" in value:
        return [value], thought
    return None, thought


def _call(entry: object) -> ToolCall | None:
    if not isinstance(entry, Mapping) or not isinstance(entry.get("name"), str) or not entry["name"].strip():
        return None
    arguments = entry.get("arguments", entry.get("args", {}))
    return ToolCall(
        entry["name"].strip(), arguments if isinstance(arguments, Mapping) else {"_invalid": arguments}
    )


@dataclass
class ParsedAnswer:
    """The final answer read from ``<answer>...</answer>`` (or ``None``) and how."""

    answer: str | None
    method: str
    errors: list[str] = field(default_factory=list)


_OPEN, _CLOSE = "<answer>", "</answer>"


def parse_answer(text: str) -> ParsedAnswer:
    """The text inside the last ``<answer>`` tag. An unclosed last tag (output cut off) is read to the end
    (a repair); no tag, or an empty one, is unusable. Linear: two ``rfind`` on the lower-cased text."""
    if not isinstance(text, str) or not text.strip():
        return ParsedAnswer(None, "none", ["empty_output: no text to parse"])
    errors = []
    if len(text) > MAX_PLAN_CHARS:
        errors.append(f"input_truncated: {len(text):,} characters, read the last {MAX_PLAN_CHARS:,}")
        text = text[-MAX_PLAN_CHARS:]
    lower = text.lower()
    start = lower.rfind(_OPEN)
    if start < 0:
        return ParsedAnswer(None, "none", [*errors, "no_answer_tag: no <answer> in the output"])
    body_start = start + len(_OPEN)
    end = lower.find(_CLOSE, body_start)
    method = "tag"
    if end < 0:
        end, method = len(text), "unclosed_tag"
        errors.append("repaired_answer: <answer> not closed, read to the end")
    answer = text[body_start:end].strip().strip("*").strip()
    if not answer:
        return ParsedAnswer(None, "none", [*errors, "empty_answer: the <answer> tag is empty"])
    return ParsedAnswer(answer, method, errors)
