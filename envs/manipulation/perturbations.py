"""EB-Manipulation's robustness axes: each edits a copy of an episode dict (see :mod:`envs.perturbation`).

Scene axes change only what they name (tests check it): ``camera`` the front and overhead cameras' pose and
field of view (``episode["cameras"]``); ``lighting`` the scene light's intensity, colour and direction and
the headlight (``episode["lighting"]``); ``textures`` the tint of the table, its legs, the floor and the
walls (``episode["surfaces"]``; objects keep their colours, which instructions name); ``distractors`` adds
boxes from the scene's own distractor pool (:data:`envs.manipulation.objects.DISTRACTORS`) to
``episode["objects"]``; ``initial_position`` shifts the whole layout (every object's ``xy``, so spatial
relations hold); ``robot_joints`` offsets the arm's start joints (``episode["robot_joints"]``);
``paraphrase`` the instruction, from the shipped table ``paraphrases.json``. The env applies the fields at
reset (:meth:`envs.manipulation.env.EBManipulationEnv.reset`). The channel axes are the shared ones.
"""

from __future__ import annotations

import copy
import math
import re
from pathlib import Path
from typing import Any

import numpy as np

from envs import perturbation
from envs.manipulation import language, objects, workspace
from envs.manipulation.shapes import SHAPES
from envs.manipulation.tasks.base import LAYOUT_MARGIN
from envs.manipulation.tasks.pick import CONTAINER_INNER, CONTAINER_WALL
from envs.manipulation.tasks.place import SORTER_INNER, SORTER_WALL
from envs.manipulation.tasks.wipe import AREA_LENGTH, AREA_WIDTH, SPONGE_HALF
from envs.perturbation import (
    CHANNEL_AXIS_DOCS,
    Axis,
    PerturbationSpec,
    level_texts,
    register_axes,
)

FAMILY = "eb_manipulation"
PARAPHRASES = Path(__file__).with_name("paraphrases.json")
CAMERAS = ("eb_front", "eb_overhead")
SURFACES = ("table_ceramic", "table_legs_metal", "floorplane", "walls_mat")  # robosuite's arena materials

_CAMERA_SHIFT = (0.02, 0.04, 0.06, 0.09, 0.12)  # metres, random direction
_CAMERA_AIM = (0.01, 0.02, 0.03, 0.04, 0.05)  # metres the look-at point moves
_CAMERA_FOV = (3.0, 6.0, 9.0, 12.0, 15.0)  # degrees, either sign
_LIGHT_SCALE = (0.15, 0.3, 0.45, 0.6, 0.75)  # intensity factor 1 +- this
_LIGHT_TINT = (0.1, 0.2, 0.3, 0.4, 0.5)  # blend of the light colour toward a random hue
_LIGHT_TILT = (10.0, 20.0, 30.0, 40.0, 50.0)  # degrees off straight down
_TEXTURE_BLEND = (0.2, 0.4, 0.6, 0.8, 1.0)  # blend of each surface tint toward a random colour
_DISTRACTORS = (1, 2, 3, 4, 6)
_LAYOUT_SHIFT = (0.02, 0.04, 0.06, 0.08, 0.1)  # metres the whole layout moves, random direction
_JOINT_OFFSET = (0.04, 0.08, 0.12, 0.16, 0.2)  # radians, uniform +- this on each arm joint
_DISTRACTOR_REGION = 0.03  # metres beyond the placement region where distractors may stand
_RELATION = re.compile(r"the object (to the left of|to the right of|in front of|behind) the ([a-z ]+?) and")


def _sign(rng: np.random.Generator) -> float:
    return 1.0 if rng.random() < 0.5 else -1.0


def _unit(rng: np.random.Generator, dims: int) -> np.ndarray:
    v = rng.normal(size=dims)
    return v / np.linalg.norm(v)


def _copy(episode: dict[str, Any]) -> dict[str, Any]:
    return copy.deepcopy(episode)


def _rounded(values: np.ndarray | list[float], digits: int = 5) -> list[float]:
    return [round(float(v), digits) for v in values]


def camera(episode: dict[str, Any], spec: PerturbationSpec) -> dict[str, Any]:
    """The front and overhead cameras moved, re-aimed and zoomed (the wrist camera rides on the arm)."""
    rng, i, out = spec.rng(), spec.level - 1, _copy(episode)
    defaults: dict[str, dict[str, Any]] = {
        "eb_front": workspace.FRONT_CAMERA,
        "eb_overhead": workspace.OVERHEAD_CAMERA,
    }
    cameras = {}
    for name in CAMERAS:
        base = defaults[name]
        pos = np.asarray(base["pos"]) + _CAMERA_SHIFT[i] * _unit(rng, 3)
        target = np.asarray(base["target"]) + _CAMERA_AIM[i] * _unit(rng, 3)
        cameras[name] = {
            "pos": _rounded(pos),
            "target": _rounded(target),
            "fovy": round(float(base["fovy"]) + _sign(rng) * _CAMERA_FOV[i], 3),
            "up": list(base.get("up", (0.0, 0.0, 1.0))),
        }
    out["cameras"] = cameras
    return out


def lighting(episode: dict[str, Any], spec: PerturbationSpec) -> dict[str, Any]:
    rng, i, out = spec.rng(), spec.level - 1, _copy(episode)
    tilt, azimuth = math.radians(_LIGHT_TILT[i]), rng.uniform(0, 2 * math.pi)
    out["lighting"] = {
        "scale": round(1.0 + _sign(rng) * _LIGHT_SCALE[i], 4),
        "tint": _rounded(np.asarray(rng.choice(list(language.COLORS.values())), float), 4),
        "tint_amount": _LIGHT_TINT[i],
        "dir": _rounded(
            [math.sin(tilt) * math.cos(azimuth), math.sin(tilt) * math.sin(azimuth), -math.cos(tilt)], 4
        ),
    }
    return out


def textures(episode: dict[str, Any], spec: PerturbationSpec) -> dict[str, Any]:
    """Each arena surface's tint (white by default, over its texture) blended toward a random colour."""
    rng, i, out = spec.rng(), spec.level - 1, _copy(episode)
    amount = _TEXTURE_BLEND[i]
    out["surfaces"] = {
        name: [*_rounded((1 - amount) * np.ones(3) + amount * rng.uniform(0.05, 0.95, 3), 4), 1.0]
        for name in SURFACES
    }
    return out


def footprint(obj: dict[str, Any]) -> tuple[float, float]:
    """Half extents (x, y) of an episode object's footprint on the table, at its yaw."""
    kind, yaw = obj["kind"], float(obj.get("yaw", 0.0))
    if obj["slot"] in objects.DISTRACTORS:
        hx, hy, _ = objects.DISTRACTORS[obj["slot"]][1]
    elif kind == "container":
        hx = hy = CONTAINER_INNER / 2 + CONTAINER_WALL
    elif kind == "sorter":
        hx = hy = SORTER_INNER / 2 + SORTER_WALL
    elif kind == "area":
        hx, hy = AREA_LENGTH / 2, AREA_WIDTH / 2
    elif kind == "sponge":
        hx, hy = SPONGE_HALF[0], SPONGE_HALF[1]
    else:
        return SHAPES[kind].radius, SHAPES[kind].radius
    c, s = abs(math.cos(yaw)), abs(math.sin(yaw))
    return c * hx + s * hy, s * hx + c * hy


def _free(xy: np.ndarray, half: tuple[float, float], placed: list[dict[str, Any]]) -> bool:
    for other in placed:
        ox, oy = footprint(other)
        if abs(xy[0] - other["xy"][0]) < half[0] + ox + LAYOUT_MARGIN and abs(xy[1] - other["xy"][1]) < (
            half[1] + oy + LAYOUT_MARGIN
        ):
            return False
    return True


def _keeps_relation(episode: dict[str, Any], xy: np.ndarray) -> bool:
    """A pick instruction that names "the object <relation> the <shape>" still names one object."""
    match = _RELATION.search(episode["instruction"])
    if match is None:
        return True
    relation = next(k for k, v in language.RELATIONS.items() if v == match.group(1))
    noun = match.group(2)
    references = [o for o in episode["objects"] if o["kind"] in SHAPES and SHAPES[o["kind"]].noun == noun]
    return not any(language.relation_holds(xy, np.asarray(r["xy"]), relation) for r in references)


def distractors(episode: dict[str, Any], spec: PerturbationSpec) -> dict[str, Any]:
    """Boxes of the scene's distractor pool (kinds no instruction names, any colour, plain) on free table;
    none in the relation a spatial pick instruction names, so every instruction still names one object."""
    rng, out = spec.rng(), _copy(episode)
    (x_lo, x_hi), (y_lo, y_hi) = workspace.PLACEMENT_X, workspace.PLACEMENT_Y
    margin = _DISTRACTOR_REGION
    slots = [str(s) for s in rng.permutation(list(objects.DISTRACTORS))][: _DISTRACTORS[spec.level - 1]]
    for slot in slots:
        kind, _ = objects.DISTRACTORS[slot]
        yaw = float(rng.uniform(0, math.pi))
        colour = str(rng.choice(list(language.COLORS)))
        entry = {
            "slot": slot,
            "kind": kind,
            "color": colour,
            "pattern": "plain",
            "xy": [0.0, 0.0],
            "yaw": yaw,
        }
        half = footprint(entry)
        for _ in range(200):
            xy = np.array(
                [rng.uniform(x_lo - margin, x_hi + margin), rng.uniform(y_lo - margin, y_hi + margin)]
            )
            if _free(xy, half, out["objects"]) and _keeps_relation(out, xy):
                out["objects"].append({**entry, "xy": _rounded(xy), "yaw": round(yaw, 5)})
                break
    return out


def initial_position(episode: dict[str, Any], spec: PerturbationSpec) -> dict[str, Any]:
    """Every object moved by one shift (so spatial relations and gaps hold), past the default region."""
    rng, out = spec.rng(), _copy(episode)
    shift = _LAYOUT_SHIFT[spec.level - 1] * _unit(rng, 2)
    for obj in out["objects"]:
        obj["xy"] = _rounded(np.asarray(obj["xy"]) + shift)
    return out


def robot_joints(episode: dict[str, Any], spec: PerturbationSpec) -> dict[str, Any]:
    """Offsets added to the arm's seven home joints at reset (the gripper keeps its start)."""
    rng, out = spec.rng(), _copy(episode)
    amplitude = _JOINT_OFFSET[spec.level - 1]
    out["robot_joints"] = _rounded(rng.uniform(-amplitude, amplitude, 7))
    return out


SHIPPED_PARAPHRASES = perturbation.ShippedParaphrases(PARAPHRASES)
paraphrase_table, paraphrase_instruction = SHIPPED_PARAPHRASES.rows, SHIPPED_PARAPHRASES.wording
paraphrase = SHIPPED_PARAPHRASES.axis()


AXES: dict[str, Axis] = {
    "camera": Axis(
        "camera",
        "front and overhead camera position, aim and field of view",
        level_texts("move {:g} m, aim {:g} m, fov +-{:g} deg", _CAMERA_SHIFT, _CAMERA_AIM, _CAMERA_FOV),
        camera,
    ),
    "lighting": Axis(
        "lighting",
        "light intensity, colour and direction",
        level_texts("intensity x(1+-{:g}), tint {:g}, tilt {:g} deg", _LIGHT_SCALE, _LIGHT_TINT, _LIGHT_TILT),
        lighting,
    ),
    "textures": Axis(
        "textures",
        "table, table-leg, floor and wall tints",
        level_texts("colour blend {:g}", _TEXTURE_BLEND),
        textures,
    ),
    "distractors": Axis(
        "distractors",
        "extra boxes from the scene's distractor pool",
        level_texts("{:d} boxes", _DISTRACTORS),
        distractors,
    ),
    "initial_position": Axis(
        "initial_position",
        "the whole object layout shifted",
        level_texts("{:g} m", _LAYOUT_SHIFT),
        initial_position,
    ),
    "robot_joints": Axis(
        "robot_joints",
        "the arm's start joints",
        level_texts("+-{:g} rad per joint", _JOINT_OFFSET),
        robot_joints,
    ),
    "paraphrase": Axis(
        "paraphrase",
        "instruction wording, from the shipped paraphrase table",
        level_texts("table template {:d}", (1, 2, 3, 4, 5)),
        paraphrase,
    ),
    **CHANNEL_AXIS_DOCS,
}
register_axes(FAMILY, AXES)
