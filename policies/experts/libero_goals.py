"""LIBERO goals and grasps as data: BDDL goal parsing, the order of a conjunction, the grasp a shape asks for.

No simulator here (the fast tests run it on text and numbers); :mod:`policies.experts.libero` applies it
to the scene the expert is bound to.

A BDDL problem's goal is ``(:goal (And (Pred arg ...) ...))``; LIBERO's checker knows ``In``, ``On``,
``Open``, ``Close``, ``TurnOn``, ``TurnOff`` (and the debug ``Up``, ``true``, ``false``, never used in a
task). The expert works on the goals in the order a person would: open what must be open, put things
in / on their places, close, then switch on or off.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

#: Predicates LIBERO tasks use, each with its number of arguments.
PREDICATE_ARITY: dict[str, int] = {"in": 2, "on": 2, "open": 1, "close": 1, "turnon": 1, "turnoff": 1}
#: The predicates this expert works on; others are refused by name.
SOLVED_PREDICATES: frozenset[str] = frozenset(PREDICATE_ARITY)
_ORDER = {"open": 0, "in": 1, "on": 1, "close": 2, "turnon": 3, "turnoff": 3}

GraspKind = Literal["top", "upper", "rim"]
GRIPPER_SPAN = 0.07  # m: the widest an object may be across the fingers (Panda opens 8 cm)
TALL = 0.10  # m: an object taller than this is gripped near its top, not at its middle


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
    return sorted(goals, key=lambda g: _ORDER[g.predicate])  # stable: ties keep the file's order


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


def choose_grasp(width: float, depth: float, height: float) -> GraspChoice:
    """The grasp for an object ``width`` x ``depth`` (horizontal extents, m) and ``height`` tall.

    - ``top``: from above, fingers across the narrower side, a little below the top (boxes, cans);
    - ``upper``: from above around the top part of a tall narrow object (bottles, cartons), so that it
      hangs below the fingers;
    - ``rim``: fingers across the wall at the edge, for bowls and plates wider than the gripper.
    """
    narrow = min(width, depth)
    if narrow > GRIPPER_SPAN:
        return GraspChoice("rim", max(height - 0.015, 0.008))
    if height > TALL:
        return GraspChoice("upper", height - 0.035)
    return GraspChoice("top", max(height - 0.025, min(0.012, height / 2)))
