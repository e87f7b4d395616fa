"""The role dispatch of the answer-key core for SpatialAgent: a competent reasoner with no perception of its own.

Attached to the answer-key backend, an :class:`AnswerKeyCore` answers each role's prompt as a competent core
would: the planner calls the right tools (only those the prompt lists), the executor writes the chain of
thought over the results it is shown, the observer calls the next tool or ``Terminate``, and the
summarizers derive the answer **from the tool outputs in the prompt**. Subclasses say which tools a
question needs (:meth:`plan`), how the answer follows from their results (:meth:`solve`) and what a reasoner
that sees nothing answers (:meth:`guess`): the static benchmarks' question kinds
(``benchmarks.static.answer_key_agent``) and closed-loop navigation (:mod:`policies.agent.answer_key_nav`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from policies.agent import prompts
from policies.backends.base import Message

_UNREADABLE = "the output could not be read"


def message_text(message: Message) -> str:
    """The text parts of one message, joined."""
    content = message["content"]  # a string, or a list of parts
    if isinstance(content, str):
        return content
    return "".join(
        part.get("text", "") for part in content if isinstance(part, Mapping) and part.get("type") == "text"
    )


def json_after(text: str, head: str) -> Any:
    """The JSON value right after ``head`` in ``text`` (prompts write tool results as one JSON value)."""
    start = text.index(head) + len(head)
    return json.JSONDecoder().raw_decode(text[start:].lstrip())[0]


_QUESTION_ENDS = (
    "\nTool Plan:",
    "\nTool Results:",
    "\nNow, output",
    "\nYour previous plan",
    "\n*** Do not answer",
)


def question_of(prompt: str) -> str:
    """The question (request) a role prompt carries: after ``Question:`` or ``USER REQUEST:``, up to the
    prompt's next fixed part (the images line of the observer; the plan, results or closing line of others)."""
    if prompt.startswith("USER REQUEST:"):
        end = prompt.find("\n" + prompts.OBSERVER_GOAL)
        return prompt[len("USER REQUEST:") : end].rsplit("\n", 1)[0].strip()
    start = prompt.find("\nQuestion: ")
    if start < 0:
        return ""
    start += len("\nQuestion: ")
    ends = [i for i in (prompt.find(marker, start) for marker in _QUESTION_ENDS) if i >= 0]
    return prompt[start : min(ends, default=len(prompt))]


def available(plan: Sequence[Mapping[str, Any]], prompt: str) -> list[dict[str, Any]]:
    """The calls whose tools the prompt lists (a competent core uses no other)."""
    return [dict(c) for c in plan if f"### {c['name']} (" in prompt]


def decision(thought: str, name: str, arguments: Mapping[str, Any]) -> str:
    """A ReAct decision in the observer's JSON format."""
    return json.dumps({"thought": thought, "actions": [{"name": name, "arguments": dict(arguments)}]})


class AnswerKeyCore:
    """Writes each role's reply (see the module docstring); subclasses implement plan, solve and guess."""

    def plan(self, question: str) -> list[dict[str, Any]]:
        """The tool calls that answer ``question``, in order."""
        raise NotImplementedError

    def solve(self, question: str, evidence: Sequence[Mapping[str, Any]]) -> str:
        """The answer derived from the tool results in ``evidence`` (a guess when they do not suffice)."""
        raise NotImplementedError

    def guess(self, question: str) -> str:
        """The answer of a reasoner that sees nothing (no tools)."""
        raise NotImplementedError

    def answer(self, messages: Sequence[Message]) -> str:
        first, last = message_text(messages[0]), message_text(messages[-1])
        question = question_of(first)
        if first.startswith(prompts.PLANNER_GOAL):
            return json.dumps(available(self.plan(question), first))
        if first.startswith(prompts.EXECUTOR_GOAL):
            return self._chain_of_thought(first)
        if first.startswith(prompts.SUMMARIZER_GOAL):
            evidence = json_after(first, "Tool Results:")
            return f"<thinking>From the tool results.</thinking> <answer>{self.solve(question, evidence)}</answer>"
        if first.startswith(prompts.DIRECT_GOAL):
            return f"<thinking>Without tools I cannot measure this.</thinking> <answer>{self.guess(question)}</answer>"
        if first.startswith("USER REQUEST:"):
            return self._react(first, question, messages, last)
        raise ValueError("the answer-key core does not know this prompt")

    def _chain_of_thought(self, prompt: str) -> str:
        plan, results = json_after(prompt, "Tool Plan:"), json_after(prompt, "Tool Results:")
        steps = [
            f"<thinking>{call['name']} measures what the question asks.</thinking> <tool>{json.dumps(call)}</tool> "
            f"<observation>{json.dumps(result)}</observation>"
            for call, result in zip(plan, results)
        ]
        return "\n".join(steps) or "<thinking>No tool was used.</thinking>"

    def _react(self, first: str, question: str, messages: Sequence[Message], last: str) -> str:
        if last.startswith(prompts.ALL_OBSERVATION_HEAD):
            memory = json_after(last, prompts.ALL_OBSERVATION_HEAD)
            evidence = [m["observation"] for m in memory if m.get("actions")]
            return decision("All evidence is in.", "Terminate", {"answer": self.solve(question, evidence)})
        observations = [
            json_after(message_text(m), prompts.OBSERVATION_HEAD)
            for m in messages[1:]
            if m.get("role") == "user" and message_text(m).startswith(prompts.OBSERVATION_HEAD)
        ]
        done = [o for o in observations if not str(o.get("error", "")).startswith(_UNREADABLE)]
        plan = available(self.plan(question), first)
        if len(done) < len(plan):
            call = plan[len(done)]
            return decision(
                f"{call['name']} measures what the question asks.", call["name"], call["arguments"]
            )
        return decision(
            "The observations answer the question.", "Terminate", {"answer": self.solve(question, done)}
        )
