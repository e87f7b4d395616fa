"""EB-Navigation probes: what a decision's state says about the target the instruction names.

:func:`nav_state` reads, at a decision, what the questions need (the agent's pose, the target's entry, how
many of the target's pixels the observation shows, the success radius); :func:`nav_questions` writes the
questions from it. Every answer is exact geometry of that state; a question whose answer sits too close to a
boundary to be fair (a bearing near a sector edge, a distance near the success radius, a target showing only
a few pixels) is not asked.

| kind | type | answer from the state |
|---|---|---|
| target_direction | multi-choice: ahead, left, right, behind | the target's bearing from the camera's heading (ahead: within 30 deg, behind: beyond 150 deg) |
| target_distance | open-ended, metres (MRA) | horizontal distance from the camera to the target's centre |
| target_visible | yes/no | the target is the nearest surface at 30+ pixels of the observation (no: at none) |
| target_reached | yes/no | the horizontal distance is within the success radius (EB's 1 m) |
| turn_to_face | multi-choice: turn left, turn right, no turn needed | the sign of the bearing (no turn: within 15 deg) |
| target_box | box, 0-1000 (IoU) | the tight box of the pixels where the target is the nearest surface (the env's own visibility pass, :attr:`~envs.navigation.env.EBNavigationEnv.target_mask`); asked at 30+ such pixels |
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from benchmarks.attribution.prober import ProbeFamily
from benchmarks.attribution.questions import ProbeQuestion, multi_choice
from benchmarks.datagen.corpus_format import box_1000, localisation_text
from benchmarks.scoring.units import Quantity

if TYPE_CHECKING:
    import gymnasium as gym

    from envs.navigation.env import EBNavigationEnv

#: Fewest target pixels for "visible"; between none and this many the question is not asked.
VISIBLE_PIXELS = 30
#: Degrees a bearing must keep from a sector edge, metres a distance from the success radius.
ANGLE_MARGIN, DISTANCE_MARGIN = 8.0, 0.15


def nav_state(env: gym.Env) -> dict[str, Any]:
    """What the probes of a decision need, read from the env (JSON-safe; the env is not changed)."""
    nav = cast("EBNavigationEnv", env.unwrapped)
    return {
        "agent": nav.agent_pose.to_json(),
        "target": nav.target,
        "target_pixels": nav.target_pixels,
        "target_box_1000": _box_1000(nav.target_mask),
        "success_distance": float(nav.success_distance),
    }


def _box_1000(mask: np.ndarray | None) -> list[int] | None:
    return box_1000(mask) if mask is not None and np.count_nonzero(mask) >= VISIBLE_PIXELS else None


def target_name(target: Mapping[str, Any]) -> str:
    """``"the red mug"``: the target as the instruction names it (colour and category)."""
    return f"the {target['colour']} {target['category']}".replace("_", " ")


def geometry(state: Mapping[str, Any]) -> tuple[float, float]:
    """The target's horizontal distance (m) and bearing (degrees, positive to the left) from the camera."""
    agent, target = state["agent"], state["target"]
    dx, dy = (float(t) - float(a) for t, a in zip(target["position"][:2], (agent["x"], agent["y"])))
    bearing = (math.degrees(math.atan2(dy, dx)) - float(agent["heading_deg"]) + 180.0) % 360.0 - 180.0
    return math.hypot(dx, dy), bearing


def nav_questions(state: Mapping[str, Any], rng: np.random.Generator) -> list[ProbeQuestion]:
    """The probes of one decision's state (those fair to ask), in a fixed order of kinds."""
    distance, bearing = geometry(state)
    name = target_name(state["target"])
    truth = {"distance_m": round(distance, 4), "bearing_deg": round(bearing, 3)}
    made = [
        _direction(name, bearing, rng, truth),
        _distance(name, distance, truth),
        _visible(name, int(state["target_pixels"]), truth),
        _reached(name, distance, float(state["success_distance"]), truth),
        _turn(name, bearing, rng, truth),
        _box(name, state.get("target_box_1000")),
    ]
    return [q for q in made if q is not None]


def _box(name: str, box: list[int] | None) -> ProbeQuestion | None:
    if box is None:
        return None
    return ProbeQuestion("target_box", "box", localisation_text(name), tuple(box), truth={"bbox_1000": box})


def _sector(bearing: float) -> str | None:
    """The sector of ``bearing``, or ``None`` within :data:`ANGLE_MARGIN` of an edge."""
    b = abs(bearing)
    if min(abs(b - 30.0), abs(b - 150.0)) < ANGLE_MARGIN:
        return None
    if b < 30.0:
        return "ahead"
    if b >= 150.0:
        return "behind"
    return "to the left" if bearing > 0 else "to the right"


def _direction(
    name: str, bearing: float, rng: np.random.Generator, truth: dict[str, Any]
) -> ProbeQuestion | None:
    right = _sector(bearing)
    if right is None:
        return None
    labels = ["ahead", "to the left", "to the right", "behind"]
    text = (
        f"Where is {name} relative to the direction the camera faces, whether or not it is in view? "
        "Select from the following choices."
    )
    return multi_choice("target_direction", text, right, [x for x in labels if x != right], rng, truth)


def _distance(name: str, distance: float, truth: dict[str, Any]) -> ProbeQuestion | None:
    if distance < 0.2:  # MRA needs a truth clearly above zero
        return None
    text = f"How far is {name} from the camera, measured along the floor (in meters)?"
    return ProbeQuestion("target_distance", "numeric", text, Quantity(round(distance, 2), "m"), truth=truth)


def _visible(name: str, pixels: int, truth: dict[str, Any]) -> ProbeQuestion | None:
    if 0 < pixels < VISIBLE_PIXELS:
        return None
    text = f"Is {name} visible in the image?"
    return ProbeQuestion("target_visible", "judgment", text, "yes" if pixels else "no", truth=truth)


def _reached(name: str, distance: float, radius: float, truth: dict[str, Any]) -> ProbeQuestion | None:
    if abs(distance - radius) < DISTANCE_MARGIN:
        return None
    text = f"Is {name} within {radius:g} meter(s) of the camera, measured along the floor?"
    return ProbeQuestion(
        "target_reached", "judgment", text, "yes" if distance <= radius else "no", truth=truth
    )


def _turn(name: str, bearing: float, rng: np.random.Generator, truth: dict[str, Any]) -> ProbeQuestion | None:
    if abs(abs(bearing) - 15.0) < ANGLE_MARGIN / 2:
        return None
    right = "no turn needed" if abs(bearing) < 15.0 else ("turn left" if bearing > 0 else "turn right")
    text = (
        f"Which way must the camera turn to face {name}, whether or not it is in view? "
        "Select from the following choices."
    )
    others = [x for x in ("turn left", "turn right", "no turn needed") if x != right]
    return multi_choice("turn_to_face", text, right, others, rng, truth)


#: EB-Navigation's probes (``Family.probes`` names this).
PROBES = ProbeFamily(nav_state, nav_questions)
