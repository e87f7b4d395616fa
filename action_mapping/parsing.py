"""Robust parsing of model-written action plans.

``parse_plan`` never raises on model text. It extracts a JSON value with the cascade public scorers use
(fenced ```json block -> any fenced block -> outermost braces -> whole text), repairs what models commonly
break (trailing commas, single quotes, Python literals, unquoted symbols, a missing outer object, output
cut off by the token limit), recognises the SpatialTree navigation / manipulation formats and
EmbodiedBench's ``executable_plan``, and records every problem in ``Plan.errors`` instead of guessing
silently.
"""

from __future__ import annotations

import ast
import json
import math
import re
import warnings
from collections.abc import Iterator, Sequence
from typing import Any

from action_mapping.plan import Plan, PlanStep
from action_mapping.primitives import EB_NAV_ACTIONS, Primitive, lookup_symbol

DEFAULT_MAX_STEP_NUM = 10
#: Longest output ``parse_plan`` reads, in characters (about 12,000 tokens; the prompting policies allow
#: 1,024 by default). A plan is a few hundred characters; longer output is runaway generation. It is cut to
#: this length (error ``input_truncated``) before parsing, which bounds the time of the repair cascade
#: (every step of it is linear in the text; ``bench/parser_speed.py``).
MAX_PLAN_CHARS = 50_000
#: Most characters the Python-literal repairs hand to ``ast.literal_eval`` in one call, over all spans: the
#: parser behind it costs a few microseconds per character, twenty times ``json.loads``. Python-style plans
#: are short; past this budget the other repairs are still tried.
LITERAL_REPAIR_BUDGET = 20_000
_EB_NAV_TABLE: tuple[Primitive, ...] = tuple(p for _, p in EB_NAV_ACTIONS)

# Fenced blocks are found by a scanner (_fenced_blocks), not by r"```\s*json\s*\n?(.*?)```": on an unclosed
# fence the lazy group rescans the rest of the text once per backtracking step (quadratic).
_FENCE_JSON_OPENING = re.compile(r"```\s*json\s*", re.IGNORECASE)
_FENCE_INFO = re.compile(r"[^\n`]*")
_TRAILING_COMMA = re.compile(r",\s*([}\]])")
_STEP_KEY = re.compile(r"^\s*step[\s_\-]*(\d+)\s*$", re.IGNORECASE)
_FIRST_STEP_KEY = re.compile(r"[\"']step[\s_\-]*\d+[\"']\s*:", re.IGNORECASE)
# An unquoted item inside a list, e.g. [W, ←, space]: anything that is not a number, literal or string.
# Found by _bare_items (the regex r"(?<=[\[,])(\s*)([^\s\"',\[\]{}:][^,\[\]{}\"':]*?)(\s*)(?=[,\]])" is
# quadratic on whitespace inside an item).
_ITEM_START = re.compile(r"[\[,]")
_ITEM_STOP = re.compile(r"[,\[\]{}\"':]")
_PLAIN_LITERAL = re.compile(r"-?\d+(\.\d*)?([eE][-+]?\d+)?|true|false|null|True|False|None")
# An action id written as a string: decimal digits int() reads, at most 4,000 of them (int() raises past
# 4,300, and on digits such as "²" that str.isdigit() accepts).
_ACTION_ID = re.compile(r"-?\d{1,4000}")
_NUMBER_WORDS = {
    w: i
    for i, w in enumerate(
        ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"]
    )
}
_GRIPPER_WORDS = {"open": 0, "opened": 0, "close": 1, "closed": 1}


def parse_plan(
    text: str,
    *,
    max_step_num: int = DEFAULT_MAX_STEP_NUM,
    max_steps: int | None = None,
    gesture: bool = False,
    action_table: Sequence[Primitive] | None = _EB_NAV_TABLE,
) -> Plan:
    """Turn raw model output into a :class:`Plan`; problems go to ``plan.errors``, never to exceptions.

    Args:
        text: the model's raw output.
        max_step_num: cap on one action's step count (the paper uses 10); larger counts are clipped.
        max_steps: keep at most this many steps (the prompts ask for 6); ``None`` keeps all.
        gesture: read Table 1's hand-gesture keys (``L`` = pull) instead of the prompts' (``L`` = roll CCW).
        action_table: the primitive each ``executable_plan`` action id stands for (default: EB-Navigation's
            eight actions); ``None`` keeps ids without primitives and does not range-check them.
    """
    plan = Plan(raw=text if isinstance(text, str) else None)
    if not isinstance(text, str) or not text.strip():
        plan.errors.append("empty_output: no text to parse")
        return plan
    if len(text) > MAX_PLAN_CHARS:
        plan.errors.append(f"input_truncated: {len(text):,} characters, read the first {MAX_PLAN_CHARS:,}")
        text = text[:MAX_PLAN_CHARS]
    value, found = _extract_json(text, plan.errors)
    if not found:
        return plan
    ctx = _StepContext(plan.errors, max_step_num, gesture, action_table)
    plan.steps, plan.format = _interpret(value, ctx)
    if plan.format == "none":
        plan.errors.append(f"not_a_plan: decoded a {type(value).__name__} with no plan structure")
    if max_steps is not None and len(plan.steps) > max_steps:
        plan.errors.append(f"too_many_steps: {len(plan.steps)} steps, kept the first {max_steps}")
        del plan.steps[max_steps:]
    return plan


def extract_json(text: str) -> tuple[Any, list[str]]:
    """The JSON object or list in model output, found and repaired as :func:`parse_plan` does, for other
    JSON formats (e.g. agent tool calls). Returns ``(value or None, problems)``; a repair is recorded as a
    ``repaired_json`` problem, an unusable output as ``empty_output`` / ``no_json`` / ``invalid_json``.
    Linear in the text, read up to :data:`MAX_PLAN_CHARS` (``input_truncated`` past it)."""
    errors: list[str] = []
    if not isinstance(text, str) or not text.strip():
        return None, ["empty_output: no text to parse"]
    if len(text) > MAX_PLAN_CHARS:
        errors.append(f"input_truncated: {len(text):,} characters, read the first {MAX_PLAN_CHARS:,}")
        text = text[:MAX_PLAN_CHARS]
    value, found = _extract_json(text, errors)
    return (value if found else None), errors


# --------------------------------------------------------------------------------------------------------
# Extraction and repair


def _candidate_spans(text: str) -> Iterator[tuple[str, str | None]]:
    """JSON-like spans in cascade order, each with the repair its construction implies (or None).

    Lazy and deduplicated: extraction usually succeeds on the first span, so the rest is never built.
    """
    fenced = _fenced_blocks(text, json_only=True)
    json_blocks = set(fenced)  # a set: testing each block against a list is quadratic in the block count
    fenced += [block for block in _fenced_blocks(text, json_only=False) if block not in json_blocks]
    seen: set[str] = set()
    for span, note in _raw_spans(text, fenced):
        span = span.strip()
        if span and span not in seen:
            seen.add(span)
            yield span, note


def _fenced_blocks(text: str, *, json_only: bool) -> list[str]:
    """The contents of fenced blocks, exactly as ``re.finditer`` finds ``r"```\\s*json\\s*\\n?(.*?)```"``
    (``json_only``, case-insensitive) or ``r"```[^\\n`]*\\n?(.*?)```"`` (DOTALL), in linear time.

    Each opening's header is matched greedily; the content then runs to the first closing fence after it.
    When there is none, no later opening can have one either, so the scan stops.
    """
    blocks: list[str] = []
    pos = text.find("```")
    while pos >= 0:
        if json_only:
            header = _FENCE_JSON_OPENING.match(text, pos)
            if header is None:  # not a json fence; the next opening may overlap this one ("````json")
                pos = text.find("```", pos + 1)
                continue
            start = header.end()  # the greedy \s* has taken any newline, so \n? matches nothing
        else:
            info = _FENCE_INFO.match(text, pos + 3)
            assert info is not None  # the pattern matches the empty string too
            start = info.end()
            if text.startswith("\n", start):
                start += 1
        end = text.find("```", start)
        if end < 0:
            break
        blocks.append(text[start:end])
        pos = text.find("```", end + 3)
    return blocks


def _raw_spans(text: str, fenced: list[str]) -> Iterator[tuple[str, str | None]]:
    for f in fenced:
        yield f, None
    for body in [*fenced, text]:
        first_key = _FIRST_STEP_KEY.search(body)
        start = body.find("{")
        # The paper's own example omits the outer braces: "step_1": {...}, "step_2": {...}
        if first_key and (start < 0 or first_key.start() < start):
            yield "{" + body[first_key.start() :].rstrip().rstrip(",") + "}", "missing outer braces"
        for open_, close in (("{", "}"), ("[", "]")):
            i, j = body.find(open_), body.rfind(close)
            if i >= 0:
                yield (body[i : j + 1], None) if j > i else (body[i:], None)
    yield text, None


def _extract_json(text: str, errors: list[str]) -> tuple[Any, bool]:
    spans: list[tuple[str, str | None]] = []
    for span, note in _candidate_spans(text):
        spans.append((span, note))
        # Only a span opening with '{' or '[' can decode to an object or list, so trying spans before the
        # no_json check below gives the same result as checking first.
        ok, value = _loads(span)
        if ok and isinstance(value, (dict, list)):
            if note:
                errors.append(f"repaired_json: decoded after repair ({note})")
            return value, True
    if not any(s[0] in "{[" for s, _ in spans):
        errors.append("no_json: no '{' or '[' in the output")
        return None, False
    literal_budget = LITERAL_REPAIR_BUDGET
    for span, note in spans:
        if span[0] not in "{[":
            continue
        for repair_name, repair in _REPAIRS:
            if repair.literal:
                if len(span) > literal_budget:
                    continue
                literal_budget -= len(span)
            ok, value = repair(span)
            if ok and isinstance(value, (dict, list)):
                names = f"{note}, {repair_name}" if note else repair_name
                errors.append(f"repaired_json: decoded after repair ({names})")
                return value, True
    errors.append(f"invalid_json: could not decode {spans[0][0][:60]!r}...")
    return None, False


def _loads(s: str) -> tuple[bool, Any]:
    try:
        return True, json.loads(s)
    except (ValueError, RecursionError):
        return False, None


def _literal(s: str) -> tuple[bool, Any]:
    # literal_eval raises many types on arbitrary text (SyntaxError, ValueError, MemoryError, ...), and
    # warns (SyntaxWarning) on text like "5m": model output is not code, so neither should reach the user.
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SyntaxWarning)
            # "invalid escape sequence" before Python 3.12
            warnings.simplefilter("ignore", DeprecationWarning)
            return True, ast.literal_eval(s)
    except Exception:
        return False, None


def _strip_trailing_commas(s: str) -> str:
    return _TRAILING_COMMA.sub(r"\1", s)


def _quote_bare_items(s: str) -> str:
    """Quote each unquoted list item that is not a number or literal: ``[W, ←]`` -> ``["W", "←"]``."""
    parts: list[str] = []
    done = 0
    for first, last in _bare_items(s):
        item = s[first:last]
        if not _PLAIN_LITERAL.fullmatch(item):
            parts += [s[done:first], '"', item, '"']
            done = last
    return "".join(parts) + s[done:] if parts else s


def _bare_items(s: str) -> Iterator[tuple[int, int]]:
    """``(start, end)`` of each item that follows ``[`` or ``,`` and runs, trimmed of whitespace, to the next
    ``,`` or ``]``, with none of ``[]{}"':`` inside (where the old lookbehind regex matched), in linear time."""
    for opener in _ITEM_START.finditer(s):
        begin = opener.end()
        stop = _ITEM_STOP.search(s, begin)
        if stop is None or stop.group() not in ",]":
            continue
        first, last = begin, stop.start()
        while first < last and s[first].isspace():
            first += 1
        while last > first and s[last - 1].isspace():
            last -= 1
        if first < last:
            yield first, last


def _close_truncated(s: str) -> str:
    """Close a JSON value cut off mid-way: drop the unfinished tail, append the missing closers."""
    stack: list[str] = []
    in_str, esc, last_complete = False, False, -1
    for i, ch in enumerate(s):
        if in_str:
            esc = not esc and ch == "\\"
            if ch == '"' and not esc:
                in_str = False
            continue
        if ch == '"':
            in_str = True
        elif ch in "{[":
            stack.append("}" if ch == "{" else "]")
        elif ch in "}]" and stack:
            stack.pop()
            last_complete = i
    if not stack or last_complete < 0:
        return s
    head = s[: last_complete + 1]
    # Recompute the closers needed after the last complete element.
    need: list[str] = []
    in_str = esc = False
    for ch in head:
        if in_str:
            esc = not esc and ch == "\\"
            if ch == '"' and not esc:
                in_str = False
            continue
        if ch == '"':
            in_str = True
        elif ch in "{[":
            need.append("}" if ch == "{" else "]")
        elif ch in "}]" and need:
            need.pop()
    return head + "".join(reversed(need))


def _via(*transforms: Any, literal: bool = False) -> Any:
    def run(s: str) -> tuple[bool, Any]:
        for t in transforms:
            s = t(s)
        return _literal(s) if literal else _loads(s)

    run.literal = literal  # type: ignore[attr-defined]  # these draw on LITERAL_REPAIR_BUDGET
    return run


_REPAIRS: tuple[tuple[str, Any], ...] = (
    ("trailing commas", _via(_strip_trailing_commas)),
    ("Python literal", _via(literal=True)),
    ("trailing commas, Python literal", _via(_strip_trailing_commas, literal=True)),
    ("unquoted symbols", _via(_strip_trailing_commas, _quote_bare_items)),
    ("single quotes", _via(_strip_trailing_commas, lambda s: s.replace("'", '"'))),
    ("truncated output", _via(_close_truncated, _strip_trailing_commas)),
    ("truncated output, unquoted symbols", _via(_close_truncated, _strip_trailing_commas, _quote_bare_items)),
)


# --------------------------------------------------------------------------------------------------------
# Interpretation


class _StepContext:
    def __init__(
        self, errors: list[str], cap: int, gesture: bool, action_table: Sequence[Primitive] | None
    ) -> None:
        self.errors, self.cap, self.gesture, self.action_table = errors, cap, gesture, action_table

    def flag(self, code: str, where: str, detail: str) -> None:
        self.errors.append(f"{code}: {where}: {detail}")


def _interpret(value: object, ctx: _StepContext, depth: int = 0) -> tuple[list[PlanStep], str]:
    if isinstance(value, dict):
        if "executable_plan" in value:
            return _executable_plan(value["executable_plan"], ctx), "executable_plan"
        step_items = [(k, v) for k, v in value.items() if isinstance(k, str) and _STEP_KEY.match(k)]
        if step_items:
            return _numbered_steps(step_items, ctx)
        if "actions" in value or "action" in value:
            step = _step(value, "step", ctx)
            return ([step] if step else []), "single_step"
        for key in ("steps", "plan"):
            if isinstance(value.get(key), list):
                return _interpret(value[key], ctx, depth + 1)
        if depth < 2:  # a plan nested one or two levels down, e.g. {"answer": {"step_1": ...}}
            for v in value.values():
                if isinstance(v, (dict, list)):
                    steps, fmt = _interpret(v, ctx, depth + 1)
                    if fmt != "none":
                        return steps, fmt
        return [], "none"
    if isinstance(value, list) and value:
        if all(isinstance(v, dict) for v in value) and (
            any("action_id" in v for v in value) or all(_vector(v.get("action")) is not None for v in value)
        ):
            return _executable_plan(value, ctx), "executable_plan"
        if all(isinstance(v, str) for v in value):
            return [
                s for i, v in enumerate(value) if (s := _step({"actions": [v]}, f"item {i}", ctx))
            ], "list"
        if any(isinstance(v, dict) for v in value):
            steps = []
            for i, v in enumerate(value):
                if not isinstance(v, dict):
                    ctx.flag("step_not_object", f"item {i}", f"{type(v).__name__} skipped")
                elif s := _step(v, f"item {i}", ctx):
                    steps.append(s)
            return steps, "list"
    return [], "none"


def _numbered_steps(items: list[tuple[str, Any]], ctx: _StepContext) -> tuple[list[PlanStep], str]:
    numbered = [(_step_number(_STEP_KEY.match(k).group(1)), k, v) for k, v in items]  # type: ignore[union-attr]
    order = sorted(numbered, key=lambda t: t[0])
    numbers = [n for n, _, _ in order]
    if numbers != list(range(1, len(numbers) + 1)) or order != numbered:
        ctx.flag("step_order", "steps", f"keys {[k for _, k, _ in numbered]} ordered by number")
    steps: list[PlanStep] = []
    has_gripper = False
    for _, key, v in order:
        if not isinstance(v, dict):
            ctx.flag("step_not_object", key, f"{type(v).__name__} skipped")
            continue
        has_gripper |= "gripper" in v
        step = _step(v, key, ctx)
        if step is not None:
            steps.append(step)
    return steps, "manipulation" if has_gripper else "navigation"


def _step_number(digits: str) -> float:
    """The number in a ``step_N`` key; past 4,000 digits (``int()`` raises beyond 4,300) it sorts last."""
    digits = digits.lstrip("0") or "0"
    return int(digits) if len(digits) <= 4000 else math.inf


def _shown(value: object) -> str:
    """``repr(value)`` for an error message; a description when repr fails (an int over 4,300 digits
    raises ValueError, a deeply nested list RecursionError), so a message never raises."""
    try:
        return repr(value)
    except (ValueError, RecursionError):
        return f"<{type(value).__name__} too large to print>"


def _as_list(x: object) -> list[Any]:
    if isinstance(x, str):
        # Split on commas and strip: the same parts as re.split(r"\s*,\s*"), which is quadratic on spaces.
        parts = [p for p in (part.strip() for part in x.strip().split(",")) if p]
        return parts if len(parts) > 1 else [x]
    return list(x) if isinstance(x, (list, tuple)) else [x]


def _step(obj: dict[str, Any], where: str, ctx: _StepContext) -> PlanStep | None:
    raw_actions = obj.get("actions", obj.get("action"))
    raw_nums = obj.get("step_nums", obj.get("step_num"))
    if raw_actions is None:
        ctx.flag("missing_key", where, "no 'actions'")
    actions = [] if raw_actions is None else _as_list(raw_actions)
    if raw_nums is None:
        if actions:
            ctx.flag("missing_key", where, "no 'step_nums', counts default to 1")
        nums: list[Any] = [1] * len(actions)
    else:
        nums = _as_list(raw_nums)
        if raw_actions is not None and len(nums) != len(actions):
            ctx.flag("length_mismatch", where, f"{len(actions)} actions, {len(nums)} step_nums")
            nums = (nums + [1] * len(actions))[: len(actions)]
    step = PlanStep(gripper=_gripper(obj, where, ctx))
    for sym, n in zip(actions, nums):
        prim = lookup_symbol(sym, gesture=ctx.gesture) if isinstance(sym, str) else None
        if prim is None:
            ctx.flag("unknown_action", where, _shown(sym))
            continue
        count = _count(n, where, ctx)
        if count is None:
            continue
        step.actions.append(prim)
        step.step_nums.append(count)
    if not step.actions and step.gripper is None:
        ctx.flag("empty_step", where, "no valid action")
    return step


def _count(n: object, where: str, ctx: _StepContext) -> int | None:
    if type(n) is int and 0 <= n <= ctx.cap:  # the common case, decided without the checks below
        return n
    value: float | None = None
    if isinstance(n, bool):
        value = None
    elif isinstance(n, int):
        value = n
    elif isinstance(n, float) and math.isfinite(n):
        value = n
        if n != int(n):
            ctx.flag("bad_step_num", where, f"{n!r} rounded")
    elif isinstance(n, str):
        s = n.strip().lower()
        if re.fullmatch(r"[+-]?\d+(\.\d+)?", s):
            value = float(s)
            if not math.isfinite(value):  # "1" * 400 is inf as a float
                value = None
        elif s in _NUMBER_WORDS:
            value = _NUMBER_WORDS[s]
        if value is not None:
            ctx.flag("bad_step_num", where, f"{n!r} is a string")
    if value is None or value < 0:
        ctx.flag("bad_step_num", where, f"{_shown(n)} dropped with its action")
        return None
    count = int(round(value))
    if count > ctx.cap:
        ctx.flag("step_num_capped", where, f"{_shown(count)} -> {ctx.cap}")
        count = ctx.cap
    return count


def _gripper(obj: dict[str, Any], where: str, ctx: _StepContext) -> int | None:
    if "gripper" not in obj:
        return None
    g = obj["gripper"]
    if isinstance(g, int) and not isinstance(g, bool) and g in (0, 1):
        return g
    coerced: int | None = None
    if isinstance(g, bool) or (isinstance(g, float) and g in (0.0, 1.0)):
        coerced = int(g)
    elif isinstance(g, str):
        s = g.strip().lower()
        coerced = {"0": 0, "1": 1, **_GRIPPER_WORDS}.get(s)
    if coerced is None:
        ctx.flag("bad_gripper", where, f"{_shown(g)} ignored")
    else:
        ctx.flag("bad_gripper", where, f"{_shown(g)} read as {coerced}")
    return coerced


def _executable_plan(entries: object, ctx: _StepContext) -> list[PlanStep]:
    if not isinstance(entries, list):
        ctx.flag("not_a_plan", "executable_plan", f"{type(entries).__name__}, not a list")
        return []
    steps: list[PlanStep] = []
    for i, entry in enumerate(entries):
        where = f"executable_plan[{i}]"
        if not isinstance(entry, dict):
            ctx.flag("step_not_object", where, f"{type(entry).__name__} skipped")
        elif "action_id" in entry:
            step = _action_id_step(entry["action_id"], where, ctx)
            if step is not None:
                steps.append(step)
        elif "action" in entry:
            vector = _vector(entry["action"])
            if vector is None:
                ctx.flag("bad_vector", where, _shown(entry["action"]))
            else:
                steps.append(PlanStep(vector=vector))
        else:
            ctx.flag("missing_key", where, "no 'action_id' or 'action'")
    return steps


def _action_id_step(raw: object, where: str, ctx: _StepContext) -> PlanStep | None:
    action_id: int | None = None
    if isinstance(raw, int) and not isinstance(raw, bool):
        action_id = raw
    elif isinstance(raw, str) and _ACTION_ID.fullmatch(raw.strip()):
        action_id = int(raw.strip())
        ctx.flag("bad_action_id", where, f"{raw!r} is a string")
    table = ctx.action_table
    if action_id is None or (table is not None and not 0 <= action_id < len(table)):
        ctx.flag("bad_action_id", where, f"{_shown(raw)} dropped")
        return None
    if table is None:
        return PlanStep(action_id=action_id)
    return PlanStep(actions=[table[action_id]], step_nums=[1], action_id=action_id)


def _vector(raw: object) -> list[float] | None:
    if isinstance(raw, str):
        ok, raw = _loads(raw.strip())
        if not ok:
            return None
    if not isinstance(raw, (list, tuple)) or len(raw) != 7:
        return None
    if not all(isinstance(x, (int, float)) and not isinstance(x, bool) and _finite(x) for x in raw):
        return None
    return [float(x) for x in raw]


def _finite(x: float) -> bool:
    """``math.isfinite`` that says False, instead of raising OverflowError, for an int beyond the float range."""
    try:
        return math.isfinite(x)
    except OverflowError:
        return False
