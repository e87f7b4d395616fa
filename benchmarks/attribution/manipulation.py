"""EB-Manipulation probes: what a decision's state says about the objects the episode's goal names.

:func:`manip_state` reads, at a decision, the goal's objects (the first two slots the goal names: the
target and its container, the bottom and top of a stack, the target and the sorter, the area and the
sponge), their centres and the gripper's; :func:`manip_questions` asks:

| kind | type | answer from the state |
|---|---|---|
| object_distance | open-ended, metres (MRA) | distance from the gripper to the first goal object's centre (3+ cm) |
| closer_to_gripper | multi-choice: the two goal objects | the one nearer the gripper (3+ cm nearer than the other) |
| gripper_closed | yes/no | the gripper's last command was to close |
| object_box | box, 0-1000 (IoU) | the tight box of the first goal object's visible pixels in the front camera's image (MuJoCo's segmentation of its rendered geoms, as the env's own box annotation reads it; 20+ pixels visible) |

Objects are named by colour and kind ("the orange container"), as the instructions name them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from benchmarks.attribution.prober import ProbeFamily
from benchmarks.attribution.questions import ProbeQuestion, multi_choice
from benchmarks.datagen.corpus_format import box_1000, localisation_text
from benchmarks.scoring.units import Quantity

if TYPE_CHECKING:
    import gymnasium as gym

    from envs.manipulation.env import EBManipulationEnv

MARGIN_M = 0.03
MIN_BOX_PIXELS = 20


def manip_state(env: gym.Env) -> dict[str, Any]:
    """What the probes of a decision need, read from the env (JSON-safe; the env is not changed)."""
    manip = cast("EBManipulationEnv", env.unwrapped)
    snapshot = manip.task.snapshot()
    names = {o["slot"]: f"the {o['color']} {o['kind']}" for o in manip.task.objects_in_episode()}
    slots = [s for s in manip.task.goal().values() if isinstance(s, str) and s in snapshot["objects"]][:2]
    return {
        "objects": [{"name": names[s], "position": snapshot["objects"][s]["position"]} for s in slots],
        "boxes_1000": _boxes(manip, slots[:1], names),
        "grip_position": snapshot["grip_position"],
        "gripper_closed": bool(snapshot["gripper_closed"]),
    }


def _boxes(manip: EBManipulationEnv, slots: list[str], names: dict[str, str]) -> dict[str, list[int]]:
    """The box on 0-1000 of each slot's visible pixels in the front camera (the policy's first image); one
    segmentation render, which changes no state."""
    from envs.manipulation.env import CAMERAS

    if not slots:
        return {}
    seg = manip.cameras.segmentation(manip.scene.mj_data, CAMERAS["front_rgb"])
    masks = {s: np.isin(seg, manip.task.visual_geoms(s)) for s in slots}
    return {names[s]: box for s, m in masks.items() if m.sum() >= MIN_BOX_PIXELS and (box := box_1000(m))}


def manip_questions(state: Mapping[str, Any], rng: np.random.Generator) -> list[ProbeQuestion]:
    """The probes of one decision's state (those fair to ask)."""
    grip = np.asarray(state["grip_position"], dtype=float)
    gaps = [float(np.linalg.norm(np.subtract(o["position"], grip))) for o in state["objects"]]
    made: list[ProbeQuestion | None] = []
    if gaps and gaps[0] >= MARGIN_M:
        name = state["objects"][0]["name"]
        text = f"How far is the centre of {name} from the robot's gripper (in meters)?"
        key = Quantity(round(gaps[0], 2), "m")
        made.append(ProbeQuestion("object_distance", "numeric", text, key, truth={"distance_m": gaps[0]}))
    if len(gaps) == 2 and abs(gaps[0] - gaps[1]) >= MARGIN_M:
        a, b = (o["name"] for o in state["objects"])
        near, far = (a, b) if gaps[0] < gaps[1] else (b, a)
        text = f"Which is closer to the robot's gripper, {a} or {b}? Select from the following choices."
        made.append(multi_choice("closer_to_gripper", text, near, [far], rng, {"distances_m": gaps}))
    box = state.get("boxes_1000", {}).get(state["objects"][0]["name"]) if state["objects"] else None
    if box is not None:
        text = localisation_text(state["objects"][0]["name"])
        made.append(ProbeQuestion("object_box", "box", text, tuple(box), truth={"bbox_1000": box}))
    if "gripper_closed" in state:  # (EB's gripper command; LIBERO's state has none)
        closed = "yes" if state["gripper_closed"] else "no"
        made.append(ProbeQuestion("gripper_closed", "judgment", "Is the robot's gripper closed?", closed))
    return [q for q in made if q is not None]


#: EB-Manipulation's probes (``Family.probes`` names this).
PROBES = ProbeFamily(manip_state, manip_questions)
