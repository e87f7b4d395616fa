"""CALVIN's 34-task oracle over two JSON-safe scene snapshots; it never touches a simulator.

A snapshot (produced by :meth:`envs.calvin.env.PlayTableEnv.snapshot`, by the official-env bridge, or
read back from a log) is::

    {"robot_obs": [15 floats], "scene_obs": [24 floats],
     "robot_contacts": [[body_name, link_name], ...],
     "blocks": {"red" | "blue" | "pink": {"pos": [3], "orn_xyzw": [4], "lin_vel": [3], "ang_vel": [3],
                                          "contacts": [[body_name, link_name], ...]}}}

with body names ``table``, ``robot``, ``block_red``, ``block_blue``, ``block_pink``, ``plane`` and the
table's link names (``base_link``, ``plank_link``, ``drawer_link``, ...). Thresholds and contact rules
are CALVIN's (see calvin.md and docs/guide/calvin.md); contacts are compared per body unless a rule names a link.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import partial
from typing import Any

import numpy as np
from scipy.spatial.transform import Rotation

from envs.calvin.constants import BLOCK_BODIES, BLOCK_COLORS, BODY_ROBOT, BODY_TABLE

Snapshot = Mapping[str, Any]
Check = Callable[[Snapshot, Snapshot], bool]

ROTATE_MIN_DEG, ROTATE_MAX_DEG, ROTATE_TILT_DEG, ROTATE_MAX_MOVE = 60.0, 180.0, 30.0, 0.1
PUSH_DISTANCE = 0.1
SLIDER_DISTANCE, DRAWER_DISTANCE = 0.15, 0.12
LIFT_HEIGHT = {"table": 0.05, "slider": 0.03, "drawer": 0.05}
LIFT_SURFACE = {"table": "base_link", "slider": "plank_link", "drawer": "drawer_link"}
STACK_MAX_VELOCITY = 1.0
_BLOCK_NAMES = frozenset(BLOCK_BODIES.values())
_SNAPSHOT_KEYS = ("robot_obs", "scene_obs", "robot_contacts", "blocks")
_BLOCK_KEYS = ("pos", "orn_xyzw", "lin_vel", "ang_vel", "contacts")

# ------------------------------------------------------------------------------------------ helpers


def _bodies(contacts: Iterable[Sequence[str]]) -> set[str]:
    return {c[0] for c in contacts}


def _pairs(contacts: Iterable[Sequence[str]]) -> set[tuple[str, str]]:
    return {(c[0], c[1]) for c in contacts}


def _block(snapshot: Snapshot, color: str) -> Mapping[str, Any]:
    return snapshot["blocks"][color]


def _slow(values: Iterable[float]) -> bool:
    return bool(np.all(np.abs(np.asarray(list(values), dtype=float)) < STACK_MAX_VELOCITY))


# ------------------------------------------------------------------------------------------- checks


def rotated(color: str, sign: int, start: Snapshot, end: Snapshot) -> bool:
    """Yaw of end * start^-1 in (60, 180) deg (left, sign +1) or (-180, -60) (right, sign -1), tilt < 30
    deg, moved at most 0.1 m, and at the end the block touches something other than the robot."""
    a, b = _block(start, color), _block(end, color)
    x, y, z = (Rotation.from_quat(b["orn_xyzw"]) * Rotation.from_quat(a["orn_xyzw"]).inv()).as_euler(
        "xyz", degrees=True
    )
    if np.linalg.norm(np.subtract(b["pos"], a["pos"])) > ROTATE_MAX_MOVE:
        return False
    if not _bodies(b["contacts"]) - {BODY_ROBOT}:
        return False
    in_range = ROTATE_MIN_DEG < sign * z < ROTATE_MAX_DEG
    return bool(in_range and abs(x) < ROTATE_TILT_DEG and abs(y) < ROTATE_TILT_DEG)


def pushed(color: str, sign: int, start: Snapshot, end: Snapshot) -> bool:
    """x moved by more than 0.1 m in direction ``sign``, with non-robot contacts (body, link) at start
    and end and the start ones a subset of the end ones."""
    a, b = _block(start, color), _block(end, color)
    before = {p for p in _pairs(a["contacts"]) if p[0] != BODY_ROBOT}
    after = {p for p in _pairs(b["contacts"]) if p[0] != BODY_ROBOT}
    if not before or not after or not before <= after:
        return False
    return bool(sign * (b["pos"][0] - a["pos"][0]) > PUSH_DISTANCE)


def moved_joint(index: int, threshold: float, sign: int, start: Snapshot, end: Snapshot) -> bool:
    """``scene_obs[index]`` changed by more than ``threshold`` in direction ``sign``."""
    return bool(sign * (end["scene_obs"][index] - start["scene_obs"][index]) > threshold)


def lifted(color: str, surface: str, start: Snapshot, end: Snapshot) -> bool:
    """Raised by more than the surface's height threshold, held by the robot alone at the end, having
    started on the surface's table link."""
    a, b = _block(start, color), _block(end, color)
    if not b["pos"][2] - a["pos"][2] > LIFT_HEIGHT[surface]:
        return False
    on_surface = (BODY_TABLE, LIFT_SURFACE[surface]) in _pairs(a["contacts"])
    return on_surface and _bodies(b["contacts"]) == {BODY_ROBOT}


def placed(link: str, start: Snapshot, end: Snapshot) -> bool:
    """At the start the robot touches exactly one body, a block touching only the robot; at the end the
    robot no longer touches it and it touches the table's ``link``."""
    held = _bodies(start["robot_contacts"])
    if len(held) != 1:
        return False
    body = next(iter(held))
    if body not in _BLOCK_NAMES or body in _bodies(end["robot_contacts"]):
        return False
    color = body.removeprefix("block_")
    if _bodies(_block(start, color)["contacts"]) != {BODY_ROBOT}:
        return False
    return (BODY_TABLE, link) in _pairs(_block(end, color)["contacts"])


def stacked(start: Snapshot, end: Snapshot) -> bool:
    """Some block touched no block at the start and, at the end, touches only blocks and is at rest
    (every linear and angular velocity component below 1)."""
    for color in BLOCK_COLORS:
        a, b = _bodies(_block(start, color)["contacts"]), _bodies(_block(end, color)["contacts"])
        if not a & _BLOCK_NAMES and b & _BLOCK_NAMES and not b - _BLOCK_NAMES:
            block = _block(end, color)
            if _slow(block["lin_vel"]) and _slow(block["ang_vel"]):
                return True
    return False


def unstacked(start: Snapshot, end: Snapshot) -> bool:
    """The reverse of :func:`stacked`, with the velocities read at the start."""
    for color in BLOCK_COLORS:
        a, b = _bodies(_block(start, color)["contacts"]), _bodies(_block(end, color)["contacts"])
        if a & _BLOCK_NAMES and not a - _BLOCK_NAMES and not b & _BLOCK_NAMES:
            block = _block(start, color)
            if _slow(block["lin_vel"]) and _slow(block["ang_vel"]):
                return True
    return False


def toggled(index: int, before: int, after: int, start: Snapshot, end: Snapshot) -> bool:
    """A light's logical state (``scene_obs[index]``) went from ``before`` to ``after``."""
    return (
        round(float(start["scene_obs"][index])) == before and round(float(end["scene_obs"][index])) == after
    )


def pushed_into_drawer(start: Snapshot, end: Snapshot) -> bool:
    """Some block whose only start contact is the table top ends touching the drawer, and the robot
    touches it neither at the start nor at the end."""
    for color in BLOCK_COLORS:
        a, b = _block(start, color)["contacts"], _block(end, color)["contacts"]
        if BODY_ROBOT in _bodies(a) | _bodies(b):
            continue
        if _pairs(a) == {(BODY_TABLE, "base_link")} and (BODY_TABLE, "drawer_link") in _pairs(b):
            return True
    return False


# ------------------------------------------------------------------------------------------ registry


def _registry() -> dict[str, Check]:
    checks: dict[str, Check] = {}
    for color in BLOCK_COLORS:
        checks[f"rotate_{color}_block_right"] = partial(rotated, color, -1)
        checks[f"rotate_{color}_block_left"] = partial(rotated, color, +1)
    for color in BLOCK_COLORS:
        checks[f"push_{color}_block_right"] = partial(pushed, color, +1)
        checks[f"push_{color}_block_left"] = partial(pushed, color, -1)
    checks["move_slider_left"] = partial(moved_joint, 0, SLIDER_DISTANCE, +1)
    checks["move_slider_right"] = partial(moved_joint, 0, SLIDER_DISTANCE, -1)
    checks["open_drawer"] = partial(moved_joint, 1, DRAWER_DISTANCE, +1)
    checks["close_drawer"] = partial(moved_joint, 1, DRAWER_DISTANCE, -1)
    for color in BLOCK_COLORS:
        for surface in ("table", "slider", "drawer"):
            checks[f"lift_{color}_block_{surface}"] = partial(lifted, color, surface)
    checks["place_in_slider"] = partial(placed, "plank_link")
    checks["place_in_drawer"] = partial(placed, "drawer_link")
    checks["stack_block"] = stacked
    checks["unstack_block"] = unstacked
    checks["turn_on_lightbulb"] = partial(toggled, 4, 0, 1)
    checks["turn_off_lightbulb"] = partial(toggled, 4, 1, 0)
    checks["turn_on_led"] = partial(toggled, 5, 0, 1)
    checks["turn_off_led"] = partial(toggled, 5, 1, 0)
    checks["push_into_drawer"] = pushed_into_drawer
    return checks


CHECKS: dict[str, Check] = _registry()
TASKS: tuple[str, ...] = tuple(CHECKS)  # CALVIN's task order


def validate_snapshot(snapshot: Snapshot, name: str = "snapshot") -> None:
    """Raise a ``ValueError`` naming the first missing or malformed field."""
    for key in _SNAPSHOT_KEYS:
        if key not in snapshot:
            raise ValueError(f"{name} lacks {key!r}; a snapshot has {', '.join(_SNAPSHOT_KEYS)}")
    if len(snapshot["robot_obs"]) != 15 or len(snapshot["scene_obs"]) != 24:
        raise ValueError(f"{name}: robot_obs must have 15 values and scene_obs 24")
    for color in BLOCK_COLORS:
        block = snapshot["blocks"].get(color)
        if block is None or any(k not in block for k in _BLOCK_KEYS):
            raise ValueError(f"{name}['blocks'][{color!r}] must have {', '.join(_BLOCK_KEYS)}")


def completed_tasks(start: Snapshot, end: Snapshot, tasks: Iterable[str] | None = None) -> set[str]:
    """The CALVIN tasks achieved between two snapshots (only among ``tasks`` when given)."""
    validate_snapshot(start, "start snapshot")
    validate_snapshot(end, "end snapshot")
    names = TASKS if tasks is None else tuple(tasks)
    unknown = [t for t in names if t not in CHECKS]
    if unknown:
        raise ValueError(f"unknown CALVIN task(s) {unknown}; known: {', '.join(TASKS)}")
    return {t for t in names if CHECKS[t](start, end)}
