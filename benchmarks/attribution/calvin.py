"""CALVIN probes: what a decision's state says about the objects its subtask names.

:func:`calvin_state` reads, at a decision, the subtask's task, the scene snapshot's articulations and lights
(``scene_obs``), the blocks' centres and the gripper's (TCP), and where the static camera sees them
(:meth:`envs.calvin.camera.Cameras.project`); :func:`calvin_questions` asks about what the task names:

| the task names | kind | type | answer from the state |
|---|---|---|---|
| a block colour | block_distance | open-ended, metres (MRA) | distance from the gripper (TCP) to the block's centre |
| a block colour | block_side | multi-choice: left, right | the block's projected column against the gripper's, in the static image (10+ px apart) |
| a block colour | block_in_cabinet | yes/no | the block's centre lies in the sliding cabinet (world y > 0) |
| a block colour | block_box | box, 0-1000 (IoU) | the bounds of the block's eight projected cuboid corners in the static image, clipped to it; asked only when the block is visible (the rendered depth at its projected centre is the centre's, as the corpus's ``calvin_localisation`` asks) |
| a block, no colour (stack, unstack, place, push) | nearest_block | multi-choice: the three blocks | the block nearest the gripper (3+ cm nearer than the next) |
| the drawer | drawer_open | yes/no | the drawer joint is open (> 0.1 m; closed < 0.03 m; not asked between) |
| the sliding door | slider_left | yes/no | the door is on the left (> 0.2 m; right < 0.08 m; not asked between) |
| the light bulb / the LED | light_on | yes/no | the bulb's (the LED's) state |

The image asked about is the policy's own (the static camera's unless it reads others).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from benchmarks.attribution.prober import ProbeFamily
from benchmarks.attribution.questions import ProbeQuestion, multi_choice
from benchmarks.datagen.corpus_format import localisation_text
from benchmarks.scoring.units import Quantity

if TYPE_CHECKING:
    import gymnasium as gym

    from envs.calvin.env import PlayTableEnv

COLORS = ("red", "blue", "pink")
SIDE_PX = 10.0
NEAREST_MARGIN_M = 0.03
DRAWER_OPEN, DRAWER_CLOSED = 0.1, 0.03
SLIDER_LEFT, SLIDER_RIGHT = 0.2, 0.08
BLOCK_TASK_WORDS = ("stack", "place_in", "push_into")


def calvin_state(env: gym.Env) -> dict[str, Any]:
    """What the probes of a decision need, read from the play table (JSON-safe; the env is not changed)."""
    table = cast("PlayTableEnv", env.unwrapped)
    snapshot = table.snapshot()
    tcp = [float(v) for v in snapshot["robot_obs"][:3]]
    centres = {c: [float(v) for v in snapshot["blocks"][c]["pos"]] for c in COLORS}
    pixels, _ = table.sim.cameras.project("static", np.array([tcp, *centres.values()]))
    task = table.evaluate()["task"]
    return {
        "task": task,
        "scene_obs": [float(v) for v in snapshot["scene_obs"][:6]],
        "tcp": tcp,
        "blocks": centres,
        "columns_px": dict(zip(("gripper", *COLORS), (float(p[0]) for p in pixels))),
        "boxes_1000": _boxes(table, snapshot, _named_color(str(task or ""))),
    }


def _named_color(task: str) -> str | None:
    return next((c for c in COLORS if c in task.split("_")), None)


def _boxes(table: PlayTableEnv, snapshot: dict[str, Any], color: str | None) -> dict[str, list[int]]:
    """The named block's box on 0-1000 in the static image, when it is visible there (one depth render,
    only when the task names a colour; rendering steps nothing)."""
    if color is None:
        return {}
    # (imported here: its question helpers import MuJoCo, which a run without probes never needs)
    from benchmarks.datagen.calvin_corpus import Scene

    rgb, depth = table.sim.cameras.render("static", depth=True)
    assert depth is not None
    scene = Scene(0, rgb, depth, snapshot, table.sim.cameras)
    return {color: scene.box_1000(color)} if scene.visible(color) else {}


def calvin_questions(state: Mapping[str, Any], rng: np.random.Generator) -> list[ProbeQuestion]:
    """The probes of one decision's state (those its task names and that are fair to ask)."""
    task = str(state.get("task") or "")
    color = _named_color(task)
    made: list[ProbeQuestion | None] = []
    if color is not None:
        made += [
            _distance(state, color),
            _side(state, color, rng),
            _cabinet(state, color),
            _box(state, color),
        ]
    elif "block" in task or any(word in task for word in BLOCK_TASK_WORDS):
        made.append(_nearest(state, rng))
    slide, drawer, _, _, bulb, led = state["scene_obs"]
    if "drawer" in task:
        made.append(_threshold("drawer_open", "Is the drawer open?", drawer, DRAWER_OPEN, DRAWER_CLOSED))
    if "slider" in task:
        made.append(
            _threshold(
                "slider_left", "Is the sliding door on the left side?", slide, SLIDER_LEFT, SLIDER_RIGHT
            )
        )
    if "lightbulb" in task or "led" in task.split("_"):
        value, name = (bulb, "the light bulb") if "lightbulb" in task else (led, "the green LED")
        made.append(ProbeQuestion("light_on", "judgment", f"Is {name} on?", "yes" if value > 0.5 else "no"))
    return [q for q in made if q is not None]


def _gap(state: Mapping[str, Any], color: str) -> float:
    return float(np.linalg.norm(np.subtract(state["blocks"][color], state["tcp"])))


def _distance(state: Mapping[str, Any], color: str) -> ProbeQuestion | None:
    gap = _gap(state, color)
    if gap < 0.03:  # MRA needs a truth clearly above zero
        return None
    text = f"How far is the centre of the {color} block from the robot's gripper (in meters)?"
    return ProbeQuestion(
        "block_distance", "numeric", text, Quantity(round(gap, 2), "m"), truth={"distance_m": gap}
    )


def _side(state: Mapping[str, Any], color: str, rng: np.random.Generator) -> ProbeQuestion | None:
    block, gripper = state["columns_px"][color], state["columns_px"]["gripper"]
    if abs(block - gripper) < SIDE_PX:
        return None
    right = "left" if block < gripper else "right"
    text = f"In the image, is the {color} block to the left or to the right of the robot's gripper?"
    truth = {"block_px": block, "gripper_px": gripper}
    return multi_choice("block_side", text, right, ["right" if right == "left" else "left"], rng, truth)


def _cabinet(state: Mapping[str, Any], color: str) -> ProbeQuestion:
    inside = state["blocks"][color][1] > 0.0
    text = f"Is the {color} block inside the sliding cabinet (rather than on the table)?"
    return ProbeQuestion("block_in_cabinet", "judgment", text, "yes" if inside else "no")


def _box(state: Mapping[str, Any], color: str) -> ProbeQuestion | None:
    box = state.get("boxes_1000", {}).get(color)
    if box is None:
        return None
    text = localisation_text(f"the {color} block")
    return ProbeQuestion("block_box", "box", text, tuple(box), truth={"bbox_1000": box})


def _nearest(state: Mapping[str, Any], rng: np.random.Generator) -> ProbeQuestion | None:
    gaps = {c: _gap(state, c) for c in COLORS}
    ranked = sorted(gaps, key=gaps.__getitem__)
    if gaps[ranked[1]] - gaps[ranked[0]] < NEAREST_MARGIN_M:
        return None
    text = "Which block is nearest to the robot's gripper? Select from the following choices."
    names = [f"the {c} block" for c in ranked]
    return multi_choice("nearest_block", text, names[0], names[1:], rng, {"distances_m": gaps})


def _threshold(kind: str, text: str, value: float, yes_above: float, no_below: float) -> ProbeQuestion | None:
    if no_below <= value <= yes_above:
        return None
    return ProbeQuestion(kind, "judgment", text, "yes" if value > yes_above else "no", truth={"joint": value})


#: CALVIN's probes (the CALVIN benchmark's ``--probe`` uses them).
PROBES = ProbeFamily(calvin_state, calvin_questions)
