"""SpatialAgent (SpatialScore Sec. 3.3): an MLLM core calling spatial tools in two paradigms.

- **Plan-Execute**: the planner writes a k-step tool plan (Eq. 3), the plan runs in order (Eq. 4), the executor
  writes a chain of thought over the results and the summarizer answers from them (Eq. 5). A plan that cannot be
  read, or that calls a tool wrongly, is asked again with the reason (at most ``max_attempts`` plans); then, as
  in the paper, the core answers directly without tools.
- **ReAct**: the observer decides one action at a time from the question and the memory of every (decision,
  result) pair (Eqs. 6-7) until it calls ``Terminate`` (or ``max_turns``); the summarizer then answers from the
  whole memory (Eq. 8) with a ``Terminate`` call.

Every model call and tool run goes into the trace; budgets (plans, turns, completion tokens per question) end
the loop with the reason recorded. An output that cannot be read is a counted parse failure; the agent never
invents an answer for the model: when no answer is found, the raw text goes to the benchmark's own parser.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from policies.agent import prompts
from policies.agent.calls import ParsedCalls, parse_answer, parse_calls
from policies.agent.tools import TERMINATE, Toolbox, ToolCall, ToolContext, ToolError
from policies.backends.base import Backend, Generation, Message
from policies.backends.injection import expected_effect

PARADIGMS = ("plan-execute", "react")
#: Roles whose output must be JSON tool calls (their parse failures are the counted tool-call failures).
TOOL_CALL_ROLES = ("planner", "observer", "react_summarizer")
#: Added to the question when the episode has a goal view (the second image).
GOAL_VIEW_LINE = (
    "image-0 is your current view; image-1 is the goal view: reach the place and heading it was taken from."
)
#: Injected error kinds for the agent's calls: each is unusable (or usable) as JSON tool calls as labelled
#: (``unknown_primitive`` is left out: a tool plan has no action names for it to replace).
AGENT_ERROR_KINDS: tuple[str, ...] = ("malformed_json", "truncated", "empty", "prose")
#: Tool failures that are the core's fault (a plan with one of them is asked again); others are perception's.
_CALLER_FAULTS = ("unknown_tool", "invalid_arguments")


@dataclass(frozen=True)
class AgentConfig:
    """Paradigm and budgets (defaults: the paper's 3 plan attempts and 10 ReAct turns, Appendix B.1)."""

    paradigm: str = "plan-execute"
    max_attempts: int = 3
    max_turns: int = 10
    max_tokens: int = 16384  # completion tokens over all calls for one question

    def validate(self) -> None:
        if self.paradigm not in PARADIGMS:
            raise ValueError(f"agent paradigm {self.paradigm!r}: choose one of {', '.join(PARADIGMS)}")
        if min(self.max_attempts, self.max_turns, self.max_tokens) < 1:
            raise ValueError("agent budgets (max_attempts, max_turns, max_tokens) must be at least 1")


@dataclass
class AgentResult:
    """The final response (what the benchmark's parser reads), the full trace and the counts."""

    response: str | None
    answered: bool
    trace: list[dict[str, Any]]
    counters: dict[str, Any]


class _CoreFailed(Exception):
    """The core's backend raised: the question ends without an answer (recorded in the trace)."""


@dataclass
class _Run:
    """State of one question: its images and context, the trace, token use."""

    images: Sequence[np.ndarray]
    context: ToolContext
    trace: list[dict[str, Any]] = field(default_factory=list)
    tokens: int = 0
    counts: Counter[str] = field(default_factory=Counter)
    stopped: str | None = None


class SpatialAgent:
    """Plan-Execute or ReAct over a :class:`Toolbox`, with ``backend`` as the core for every role."""

    def __init__(self, backend: Backend, toolbox: Toolbox, config: AgentConfig | None = None) -> None:
        self.backend, self.toolbox, self.config = backend, toolbox, config or AgentConfig()
        self.config.validate()

    def describe(self) -> dict[str, Any]:
        return {
            "paradigm": self.config.paradigm,
            "budgets": {
                "max_attempts": self.config.max_attempts,
                "max_turns": self.config.max_turns,
                "max_tokens": self.config.max_tokens,
            },
            "tools": self.toolbox.describe(),
        }

    def answer(
        self,
        question: str,
        images: Sequence[np.ndarray],
        privileged: Any = None,
        meta: dict[str, Any] | None = None,
    ) -> AgentResult:
        """Answer one question about ``images`` (RGB arrays). ``privileged`` reaches simulator-truth tools only;
        ``meta`` is what every tool may know (e.g. the camera calibration). ``response`` is ``None`` only when
        the core failed (a backend error: the item errored, as for a plain model)."""
        run = _Run(images, ToolContext(images, privileged, dict(meta or {})))
        try:
            text = (
                self._plan_execute(question, run)
                if self.config.paradigm == "plan-execute"
                else self._react(question, run)
            )
        except _CoreFailed:
            return AgentResult(None, False, run.trace, self._counters(run, False))
        answered = text is not None
        if text is None:  # nothing readable: the last output goes to the benchmark's parser as it is
            text = next((e["response"] for e in reversed(run.trace) if e.get("response") is not None), "")
        return AgentResult(text, answered, run.trace, self._counters(run, answered))

    # ---------------------------------------------------------------------------------- Plan-Execute

    def _plan_execute(self, question: str, run: _Run) -> str | None:
        n, toolbox = len(run.images), self.toolbox.render()
        note: str | None = None
        for attempt in range(1, self.config.max_attempts + 1):
            reply = self._ask(
                run, "planner", [self._user(run, prompts.planner(question, toolbox, n, note))], attempt
            )
            if reply is None:
                return None
            parsed = self._parse_calls(run, reply)
            if not parsed.usable:
                note = "; ".join(parsed.errors[-2:])
                continue
            plan = [c.to_dict() for c in parsed.calls if c.name != TERMINATE]
            results = [self._execute(run, call, attempt) for call in parsed.calls if call.name != TERMINATE]
            faults = [r["error"] for r in results if r.get("error_kind") in _CALLER_FAULTS]
            if faults:
                run.counts["plans_with_bad_calls"] += 1
                note = "; ".join(faults[:2])
                continue
            cot = self._ask(
                run, "executor", [self._user(run, prompts.executor(question, plan, results, n))], attempt
            )
            if cot is None:
                return None
            summary = self._ask(
                run, "summarizer", [self._user(run, prompts.summarizer(question, results, cot, n))], attempt
            )
            if summary is None:
                return None
            answer = self._read_answer(run, summary)
            if answer is not None:
                return answer
            break  # the summarizer gave no answer: the paper's fallback to the core alone
        return self._direct(question, run)

    def _direct(self, question: str, run: _Run) -> str | None:
        run.counts["fallback_direct"] += 1
        reply = self._ask(run, "direct", [self._user(run, prompts.direct(question, len(run.images)))], 0)
        return None if reply is None else self._read_answer(run, reply)

    # ---------------------------------------------------------------------------------- ReAct

    def _react(self, question: str, run: _Run) -> str | None:
        conversation: list[Message] = [
            self._user(run, prompts.observer(question, self.toolbox.render(), len(run.images)))
        ]
        memory: list[dict[str, Any]] = []
        final: str | None = None
        for turn in range(1, self.config.max_turns + 1):
            reply = self._ask(run, "observer", conversation, turn)
            if reply is None:
                break
            conversation.append({"role": "assistant", "content": reply})
            parsed = self._parse_calls(run, reply)
            if not parsed.usable:
                result: dict[str, Any] = {
                    "error": "the output could not be read as an action: " + "; ".join(parsed.errors[-2:])
                }
                memory.append({"thought": None, "actions": [], "observation": result})
            elif not parsed.calls:
                result = {}
                memory.append({"thought": parsed.thought, "actions": [], "observation": result})
            else:
                # one action at a time (task instruction 2); the rest is ignored, counted
                call = parsed.calls[0]
                run.counts["extra_actions_ignored"] += len(parsed.calls) - 1
                result = self._execute(run, call, turn)
                memory.append({"thought": parsed.thought, "actions": [call.to_dict()], "observation": result})
                if call.name == TERMINATE and "answer" in result:
                    final = result["answer"]
                    break
            conversation.append(self._user(run, prompts.observation(result), images=False))
        else:
            run.stopped = run.stopped or "max_turns"
        if run.stopped == "max_tokens":
            return final
        conversation.append(self._user(run, prompts.react_summarizer(memory), images=False))
        reply = self._ask(run, "react_summarizer", conversation, 0)
        if reply is not None:
            parsed = self._parse_calls(run, reply)
            terminate = next((c for c in parsed.calls if c.name == TERMINATE), None)
            if terminate is not None:
                result = self._execute(run, terminate, 0)
                if "answer" in result:
                    return str(result["answer"])
        return (
            final
            if final is not None
            else (None if run.stopped == "max_tokens" else self._direct(question, run))
        )

    # ---------------------------------------------------------------------------------- calls

    def _user(self, run: _Run, text: str, images: bool = True) -> Message:
        content: list[dict[str, Any]] = (
            [{"type": "image", "image": image} for image in run.images] if images else []
        )
        return {"role": "user", "content": [*content, {"type": "text", "text": text}]}

    def _ask(self, run: _Run, role: str, messages: list[Message], step: int) -> str | None:
        """One core call, traced; ``None`` (and ``run.stopped``) when the token budget is spent or it fails."""
        if run.tokens >= self.config.max_tokens:
            run.stopped = "max_tokens"
            return None
        started = time.perf_counter()
        try:
            generation: Generation = self.backend.generate(messages)
        except (
            Exception
        ) as error:  # a backend failure ends this question: errored, never answered by a fallback
            run.trace.append(
                {"role": role, "step": step, "error": f"{type(error).__name__}: {str(error)[:300]}"}
            )
            run.stopped = "backend_error"
            raise _CoreFailed from error
        used = (
            generation.completion_tokens
            if generation.completion_tokens is not None
            else len(generation.text.split())
        )
        run.tokens += used
        run.counts[f"calls.{role}"] += 1
        entry = {
            "role": role,
            "step": step,
            "prompt": messages[-1]["content"][-1]["text"],
            "images": len(run.images),
            "turns": len(messages),
            "response": generation.text,
            "completion_tokens": used,
            "prompt_tokens": generation.prompt_tokens,
            "latency_s": round(time.perf_counter() - started, 4),
        }
        if generation.injected_error is not None:
            entry["injected_error"] = generation.injected_error
            run.counts[f"injected.{role}.{expected_effect(generation.injected_error)}"] += 1
        run.trace.append(entry)
        return generation.text

    def _parse_calls(self, run: _Run, text: str) -> ParsedCalls:
        parsed = parse_calls(text)
        run.trace[-1]["parse"] = parsed.to_dict()
        run.counts["tool_call_outputs"] += 1
        run.counts["tool_call_parse_failures"] += int(not parsed.usable)
        run.counts["tool_call_repairs"] += int(parsed.usable and bool(parsed.repairs))
        return parsed

    def _read_answer(self, run: _Run, text: str) -> str | None:
        parsed = parse_answer(text)
        run.trace[-1]["parse"] = {"answer": parsed.answer, "method": parsed.method, "errors": parsed.errors}
        run.counts["answer_parse_failures"] += int(parsed.answer is None)
        return parsed.answer

    def _execute(self, run: _Run, call: ToolCall, step: int) -> dict[str, Any]:
        """Run one call; a failure becomes ``{"error", "error_kind"}`` in the result the core sees."""
        started = time.perf_counter()
        try:
            result = self.toolbox.run(call, run.context)
        except ToolError as error:
            result = {"error": str(error), "error_kind": error.kind}
            run.counts[f"tool_errors.{error.kind}"] += 1
        run.counts["tool_runs"] += 1
        run.trace.append(
            {
                "role": "tool",
                "step": step,
                "call": call.to_dict(),
                "backend": self.toolbox.describe().get(call.name),
                "result": result,
                "latency_s": round(time.perf_counter() - started, 4),
            }
        )
        return result

    def _counters(self, run: _Run, answered: bool) -> dict[str, Any]:
        counts: dict[str, int | bool | str | None] = dict(sorted(run.counts.items()))
        counts.update(completion_tokens=run.tokens, answered=answered, stopped=run.stopped)
        return counts
