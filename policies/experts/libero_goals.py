"""LIBERO goals and grasps as data: BDDL goal parsing, the order of a conjunction, the grasp a shape asks for.

No simulator here (the fast tests run it on text and numbers); :mod:`policies.experts.libero` applies it
to the scene the expert is bound to.

A BDDL problem's goal is ``(:goal (And (Pred arg ...) ...))``; LIBERO's checker knows ``In``, ``On``,
``Open``, ``Close``, ``TurnOn``, ``TurnOff`` (and the debug ``Up``, ``true``, ``false``, never used in a
task). The expert works on the goals in the order a person would: open what must be open, put things
in / on their places, close, then switch on or off; a drawer to close comes before another to open.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

#: Predicates LIBERO tasks use, each with its number of arguments.
PREDICATE_ARITY: dict[str, int] = {"in": 2, "on": 2, "open": 1, "close": 1, "turnon": 1, "turnoff": 1}
#: The predicates this expert works on; others are refused by name.
SOLVED_PREDICATES: frozenset[str] = frozenset(PREDICATE_ARITY)
_ORDER = {"open": 0, "in": 1, "on": 1, "close": 2, "turnon": 3, "turnoff": 3}

GraspKind = Literal["top", "upper", "rim", "handle"]
GRIPPER_SPAN = 0.07  # m: the widest an object may be across the fingers (Panda opens 8 cm)
TALL = 0.10  # m: an object taller than this is gripped near its top, not at its middle
HANDLE_REACH = (
    0.02  # m: a part reaching this much farther out on one side than the other side does is a handle
)
HANDLE_WIDTH = 0.04  # m: ... when it is at most this wide across (the fingers close across it)
HANDLE_GRIP = 0.02  # m: a handle is gripped this far below its top
LONG_HANDLE = 0.08  # m: a handle reaching this far out is taken even on a low object (a pan's)


@dataclass(frozen=True)
class Goal:
    """One goal predicate: ``predicate`` lower-case, ``args`` the BDDL object / region names."""

    predicate: str
    args: tuple[str, ...]

    def __str__(self) -> str:
        return f"({self.predicate} {' '.join(self.args)})"


def parse_goal(goal_state: Sequence[Sequence[str]], solved: frozenset[str] = SOLVED_PREDICATES) -> list[Goal]:
    """The goal predicates of a parsed BDDL goal (LIBERO's ``parsed_problem["goal_state"]``), in working order.

    Raises ``ValueError`` naming the first predicate that is not LIBERO's, has the wrong number of
    arguments, or that the expert does not solve (``solved``)."""
    goals = []
    for clause in goal_state:
        if not clause or not all(isinstance(part, str) for part in clause):
            raise ValueError(f"BDDL goal clause {list(clause)!r} is not (predicate arg ...)")
        predicate, args = clause[0].lower(), tuple(clause[1:])
        if predicate not in PREDICATE_ARITY:
            raise ValueError(
                f"the LIBERO expert does not know the goal predicate {clause[0]!r} "
                f"(it knows {', '.join(sorted(PREDICATE_ARITY))})"
            )
        if len(args) != PREDICATE_ARITY[predicate]:
            raise ValueError(
                f"BDDL goal ({' '.join(clause)}): {clause[0]} takes {PREDICATE_ARITY[predicate]} "
                f"argument(s), got {len(args)}"
            )
        if predicate not in solved:
            raise ValueError(
                f"the LIBERO expert cannot solve the goal predicate {clause[0]!r} yet "
                f"(it solves {', '.join(sorted(solved))})"
            )
        goals.append(Goal(predicate, args))
    if not goals:
        raise ValueError("the BDDL goal is empty")
    return sorted(goals, key=lambda g: _rank(g, goals))  # stable: ties keep the file's order


def _rank(goal: Goal, goals: Sequence[Goal]) -> int:
    """A goal's place in the working order: open, put, close, switch; but a drawer is closed before
    another is opened (opened first, it may stand out over the one to close, in the hand's way)."""
    opened = [g.args[0] for g in goals if g.predicate == "open"]
    if goal.predicate == "close" and opened and goal.args[0] not in opened:
        return -1
    return _ORDER[goal.predicate]


def goal_of_bddl(text: str) -> list[list[str]]:
    """The clauses of a BDDL problem's ``(:goal (And ...))`` (or single-clause goal), as name lists.

    One pass over the text (linear time); raises ``ValueError`` when there is no well-formed goal."""
    start = text.lower().find("(:goal")
    if start < 0:
        raise ValueError("the BDDL problem has no (:goal ...) section")
    tree = _sexpr(text, start)
    body = tree[1:]
    if len(body) != 1 or not isinstance(body[0], list) or not body[0]:
        raise ValueError("the BDDL (:goal ...) section must hold one expression")
    expr = body[0]
    clauses = expr[1:] if isinstance(expr[0], str) and expr[0].lower() == "and" else [expr]
    if not all(isinstance(c, list) and all(isinstance(x, str) for x in c) for c in clauses):
        raise ValueError(
            "the LIBERO expert reads goals that are a conjunction of (predicate arg ...) clauses"
        )
    return clauses


def _sexpr(text: str, start: int) -> list:
    """The s-expression opening at ``text[start]`` (a ``(``), as nested lists of atoms."""
    stack: list[list] = []
    atom: list[str] = []
    for ch in text[start:]:
        if ch in "() \t\r\n" and atom:
            stack[-1].append("".join(atom))
            atom = []
        if ch == "(":
            stack.append([])
        elif ch == ")":
            if not stack:
                break
            done = stack.pop()
            if not stack:
                return done
            stack[-1].append(done)
        elif ch not in " \t\r\n":
            if not stack:
                break
            atom.append(ch)
    raise ValueError("the BDDL (:goal ...) section is not closed")


@dataclass(frozen=True)
class GraspChoice:
    """How to take an object: ``kind``, and the height of the grasp above the object's base (m)."""

    kind: GraspKind
    height: float


@dataclass(frozen=True)
class Handle:
    """A handle on an object: the grasp point (object frame, m from its origin) and the object axis the
    fingers close along."""

    point: tuple[float, float, float]
    across: int
    reach: float  # m: how far it reaches past the opposite side
    along: int = 0  # the object axis it reaches out along
    span: tuple[float, float] = (
        0.0,
        0.0,
    )  # its protruding part along that axis: from the far side's reach to its end


def find_handle(boxes: Sequence[tuple[np.ndarray, np.ndarray]], horizontal: tuple[int, int]) -> Handle | None:
    """The handle of an object whose collision geoms have the boxes ``(low, high)`` (object frame), or None.

    A handle is the group of geoms reaching more than HANDLE_REACH past the farthest the object reaches on
    the opposite side, along one of its ``horizontal`` axes, no wider than HANDLE_WIDTH across: a moka
    pot's or a pan's handle, not a mug's short ear nor a box. The grasp is across it, halfway between
    the opposite side's reach and its end, HANDLE_GRIP below its top."""
    lows, highs = np.array([b[0] for b in boxes]), np.array([b[1] for b in boxes])
    up = 3 - sum(horizontal)
    best: tuple[float, Handle] | None = None
    for axis in horizontal:
        other = horizontal[0] if axis == horizontal[1] else horizontal[1]
        for sign in (1.0, -1.0):
            far = np.where(sign > 0, highs[:, axis], -lows[:, axis])  # how far each geom reaches this way
            near = np.where(sign > 0, -lows[:, axis], highs[:, axis]).max()  # the other side's reach
            part = far > near + HANDLE_REACH  # not the body's own walls a little off centre
            reach = float(far.max() - near)
            across = float(highs[part, other].max() - lows[part, other].min()) if part.any() else np.inf
            if reach < HANDLE_REACH or across > HANDLE_WIDTH or (best and best[0] >= reach):
                continue
            point = np.zeros(3)
            point[axis] = sign * (near + float(far.max())) / 2
            point[other] = float(highs[part, other].max() + lows[part, other].min()) / 2
            top, bottom = float(highs[part, up].max()), float(lows[part, up].min())
            point[up] = max(top - HANDLE_GRIP, (top + bottom) / 2)
            span = (sign * float(near), sign * float(far.max()))
            best = (
                reach,
                Handle((float(point[0]), float(point[1]), float(point[2])), other, reach, axis, span),
            )
    return best[1] if best else None


def choose_grasp(width: float, depth: float, height: float, handle: Handle | None = None) -> GraspChoice:
    """The grasp for an object ``width`` x ``depth`` (horizontal extents, m) and ``height`` tall, with a
    ``handle`` (:func:`find_handle`) or not.

    - ``top``: from above, fingers across the narrower side, a little below the top (boxes, cans);
    - ``upper``: from above around the top part of a tall narrow object (bottles, cartons), so that it
      hangs below the fingers;
    - ``rim``: fingers across the wall at the edge, for bowls and plates wider than the gripper;
    - ``handle``: from above across the handle of an object too wide for the gripper that is tall (a
      moka pot, whose closed top has no rim to take) or whose handle is long (a pan); the grasp point
      is the handle's (see :func:`find_handle`).
    """
    narrow = min(width, depth)
    if narrow > GRIPPER_SPAN and handle is not None and (height > TALL or handle.reach >= LONG_HANDLE):
        return GraspChoice("handle", height - HANDLE_GRIP)
    if narrow > GRIPPER_SPAN:
        return GraspChoice("rim", max(height - 0.015, 0.008))
    if height > TALL:
        return GraspChoice("upper", height - 0.035)
    return GraspChoice("top", max(height - 0.025, min(0.012, height / 2)))
