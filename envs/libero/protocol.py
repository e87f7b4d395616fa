"""LIBERO's evaluation protocol as data: suites, task counts, episode budgets, trials. No simulator import.

Numbers follow the protocol most VLA papers report (OpenVLA's LIBERO evaluation, also used by
OpenVLA-OFT and pi0): 50 trials per task, one per fixed initial state; 10 settle steps with a no-op
action before the policy acts; images rendered at 256 x 256; per-suite maximum number of policy steps.
"""

from __future__ import annotations

import numpy as np

SUITES: tuple[str, ...] = ("libero_spatial", "libero_object", "libero_goal", "libero_10", "libero_90")

# Tasks per suite, in LIBERO's own order (`libero.libero.benchmark`, task order 0).
TASK_COUNTS: dict[str, int] = {
    "libero_spatial": 10,
    "libero_object": 10,
    "libero_goal": 10,
    "libero_10": 10,
    "libero_90": 90,
}

# Maximum policy steps per episode (OpenVLA protocol; LeRobot uses 280 for libero_spatial).
MAX_STEPS: dict[str, int] = {
    "libero_spatial": 220,
    "libero_object": 280,
    "libero_goal": 300,
    "libero_10": 520,
    "libero_90": 400,
}

TRIALS_PER_TASK = 50  # one trial per fixed initial state shipped with each task
NUM_INIT_STATES = 50
NUM_STEPS_WAIT = 10  # settle steps before the policy acts: objects are dropped onto the table
IMAGE_SIZE = 256  # protocol rendering size; models resize for themselves
CONTROL_FREQ = 20  # Hz, LIBERO's default

# The settle action: no motion, gripper open (robosuite: -1 open, +1 close).
SETTLE_ACTION: tuple[float, ...] = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, -1.0)


def settle_action() -> np.ndarray:
    """A fresh copy of the no-op settle action ``[0, 0, 0, 0, 0, 0, -1]`` (float32)."""
    return np.asarray(SETTLE_ACTION, dtype=np.float32)


def check_task(suite: str, task_index: int) -> None:
    """Raise ``ValueError`` naming the bad input when ``(suite, task_index)`` is not a LIBERO task."""
    if suite not in TASK_COUNTS:
        raise ValueError(f"unknown LIBERO suite {suite!r}; choose one of {', '.join(SUITES)}")
    count = TASK_COUNTS[suite]
    if isinstance(task_index, bool) or not isinstance(task_index, (int, np.integer)):
        raise ValueError(f"task_index must be an int, got {task_index!r}")
    if not 0 <= task_index < count:
        raise ValueError(f"task_index {task_index} out of range for {suite} (0..{count - 1})")


def parse_task_indices(text: str, suite: str) -> list[int]:
    """``--tasks`` as task indices of ``suite``: ``all``, or indices separated by commas (e.g. ``0,3``);
    ``ValueError`` naming the flag otherwise."""
    count = TASK_COUNTS[suite]
    if text.strip() == "all":
        return list(range(count))
    try:
        chosen = [int(t) for t in text.split(",") if t.strip()]
    except ValueError:
        raise ValueError(
            f"--tasks {text}: give task indices separated by commas (e.g. 0,3), or all"
        ) from None
    bad = [t for t in chosen if not 0 <= t < count]
    if bad or not chosen:
        raise ValueError(f"--tasks {bad or text!r}: {suite} has tasks 0..{count - 1}")
    return chosen


def parse_indices(text: str, count: int, flag: str) -> list[int]:
    """``"0-4,7"`` -> ``[0, 1, 2, 3, 4, 7]`` (sorted, unique), each in ``0..count-1``; ``"all"`` -> all;
    ``ValueError`` naming ``flag`` otherwise."""
    if text.strip() == "all":
        return list(range(count))
    chosen: set[int] = set()
    for part in text.split(","):
        low, dash, high = part.strip().partition("-")
        try:
            first, last = int(low), int(high if dash else low)
        except ValueError:
            raise ValueError(
                f"{flag} {text!r}: give indices and ranges separated by commas (e.g. 0-4,7), or all"
            ) from None
        if not 0 <= first <= last < count:
            raise ValueError(f"{flag} {part.strip()!r}: indices run 0..{count - 1}, low before high")
        chosen.update(range(first, last + 1))
    return sorted(chosen)


def env_id(suite: str, task_index: int) -> str:
    """The registered Gymnasium id of one task, e.g. ``SpatialArena/Libero-libero_10-0-v0``."""
    check_task(suite, task_index)
    return f"SpatialArena/Libero-{suite}-{int(task_index)}-v0"


def all_tasks() -> list[tuple[str, int]]:
    """Every ``(suite, task_index)`` of the five suites, in suite then task order (130 in all)."""
    return [(suite, i) for suite in SUITES for i in range(TASK_COUNTS[suite])]
