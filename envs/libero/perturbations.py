"""LIBERO's robustness axes: each edits a copy of a scene description (see :mod:`envs.perturbation`).

The description is a plain dict the env reads from its simulator after loading the initial state
(:func:`envs.libero.scene_edit.describe_scene`) and writes back after the axis edited it; every axis
changes only the fields it names (tests check it):

- ``camera``: the agentview camera's pose (an orbit about the point it looks at: yaw, pitch, distance)
  and field of view; the wrist camera stays on the hand.
- ``lighting``: every light's direction, intensity and colour, and the headlight's intensity.
- ``textures``: the colours of the materials of the floor, walls, table and background furniture
  (MuJoCo materials tint their textures); objects and the robot keep theirs.
- ``object_position``: the task objects resting on the table (or floor) move together by a shift and
  each by a jitter, beyond LIBERO's init-state spread; objects resting on them move with them, those in
  or on fixtures stay. A draw is kept only if no two objects overlap, none meets a fixture, all stay on
  the table, and every pair keeps its left/right and front/back order (so "the bowl next to the
  ramekin" and "the left plate" still name the same object).
- ``robot_init``: the arm's start joints, offset within their limits (the env halves an offset that
  would make the arm touch anything).
- ``distractors``: objects added from the scene's pool (LIBERO's small objects and LIBERO-PRO's variants
  of them, :mod:`envs.libero.distractors`), none sharing a word other than a colour or size with the
  instruction or a scene object's category; each placed by rejection sampling on the table inside the
  objects' bounds and in the agentview camera's picture, at least the level's gap clear of every object (at most its reach from the nearest,
  unless no draw meets that), clear of fixtures, goal regions and each other, standing as LIBERO stands
  it, turned at random. Fewer than the level's count when no free spot is found. The env builds the
  scene with them (``scene["distractors"]``).
- ``paraphrase``: the instruction, from the shipped table ``paraphrases.json``.

The channel axes (image noise, blur and JPEG on both cameras; action noise) are the shared ones.
"""

from __future__ import annotations

import copy
import functools
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
from scipy.spatial.transform import Rotation

from envs.perturbation import (
    CHANNEL_AXIS_DOCS,
    Axis,
    PerturbationSpec,
    instruction_paraphrase,
    level_texts,
    register_axes,
)

FAMILY = "libero"
PARAPHRASES = Path(__file__).with_name("paraphrases.json")

_CAMERA_YAW = (
    3.0,
    6.0,
    10.0,
    15.0,
    20.0,
)  # degrees about the vertical through the look-at point, either sign
_CAMERA_PITCH = (2.0, 4.0, 6.0, 8.0, 10.0)  # degrees of elevation, either sign
_CAMERA_DISTANCE = (0.03, 0.06, 0.09, 0.12, 0.15)  # distance to the look-at point x(1 +- this)
_CAMERA_FOV = (2.0, 4.0, 6.0, 8.0, 10.0)  # degrees, either sign
_LIGHT_SCALE = (0.15, 0.3, 0.45, 0.6, 0.75)  # intensity x(1 +- this)
_LIGHT_TINT = (0.1, 0.2, 0.3, 0.4, 0.5)  # blend of each light's colour toward a random hue
_LIGHT_TILT = (10.0, 20.0, 30.0, 40.0, 50.0)  # degrees each light's direction turns
_TEXTURE_BLEND = (0.2, 0.4, 0.6, 0.8, 1.0)  # blend of each material colour toward a random one
_OBJECT_SHIFT = (0.02, 0.04, 0.06, 0.08, 0.10)  # m, the layout's common shift
_OBJECT_JITTER = (0.01, 0.015, 0.02, 0.025, 0.03)  # m, at most, each object on top of the shift
_JOINT_OFFSET = (0.05, 0.1, 0.15, 0.2, 0.3)  # rad, at most, per arm joint
_DISTRACTORS = (1, 2, 3, 4, 5)  # extra objects
_DISTRACTOR_GAP = (0.1, 0.08, 0.06, 0.045, 0.03)  # m: each at least this clear of every object
_DISTRACTOR_REACH = (0.3, 0.25, 0.2, 0.15, 0.12)  # m: and at most this far from the nearest one
_DROP = 0.003  # m: distractors start this far above the surface and settle onto it
# words that tell objects of one kind apart: a distractor sharing any other word with the instruction or
# a scene object's category is left out ("yellow bowl" next to "the black bowl")
_PLAIN_WORDS = frozenset({"red", "green", "blue", "yellow", "white", "black", "bigger", "new", "akita"})
_GAP = 0.01  # m: objects keep this clear of each other and of fixtures
_ORDERED = 0.03  # m: objects this far apart along x (or y) keep their order along it
_JOINT_MARGIN = 0.05  # rad kept inside each joint's limits
_TRIES = 64
_HUES = np.array(
    [[1.0, 0.6, 0.3], [0.4, 0.6, 1.0], [1.0, 0.4, 0.6], [0.5, 1.0, 0.5], [1.0, 0.95, 0.5], [0.7, 0.5, 1.0]]
)


def _sign(rng: np.random.Generator) -> float:
    return 1.0 if rng.random() < 0.5 else -1.0


def _rounded(values: np.ndarray | list[float]) -> list[float]:
    return [round(float(v), 6) for v in values]


def camera(scene: dict[str, Any], spec: PerturbationSpec) -> dict[str, Any]:
    """Orbit the agentview camera about the point it looks at, move it nearer or further, change its fov."""
    rng, i, out = spec.rng(), spec.level - 1, copy.deepcopy(scene)
    cam = out["camera"]
    target, offset = np.asarray(cam["target"]), np.asarray(cam["pos"]) - np.asarray(cam["target"])
    yaw, pitch = _sign(rng) * math.radians(_CAMERA_YAW[i]), _sign(rng) * math.radians(_CAMERA_PITCH[i])
    scale = 1.0 + _sign(rng) * _CAMERA_DISTANCE[i]
    side = np.cross(offset, [0.0, 0.0, 1.0])
    side /= np.linalg.norm(side)
    turn = Rotation.from_rotvec([0.0, 0.0, yaw]) * Rotation.from_rotvec(side * pitch)
    w, x, y, z = cam["quat"]
    quat = (turn * Rotation.from_quat([x, y, z, w])).as_quat()
    cam["pos"] = _rounded(target + turn.apply(offset) * scale)
    cam["quat"] = _rounded([quat[3], quat[0], quat[1], quat[2]])
    cam["fovy"] = round(float(cam["fovy"] + _sign(rng) * _CAMERA_FOV[i]), 6)
    return out


def lighting(scene: dict[str, Any], spec: PerturbationSpec) -> dict[str, Any]:
    """Every light dimmer or brighter, tinted toward one hue and turned; the headlight dimmer or brighter."""
    rng, i, out = spec.rng(), spec.level - 1, copy.deepcopy(scene)
    factor = 1.0 + _sign(rng) * _LIGHT_SCALE[i]
    hue = _HUES[int(rng.integers(len(_HUES)))]
    azimuth, tilt = rng.uniform(0, 2 * math.pi), math.radians(_LIGHT_TILT[i])
    turn = Rotation.from_rotvec(tilt * np.array([math.cos(azimuth), math.sin(azimuth), 0.0]))
    for light in out["lights"]:
        diffuse = np.asarray(light["diffuse"])
        tinted = (1 - _LIGHT_TINT[i]) * diffuse + _LIGHT_TINT[i] * hue * diffuse.mean()
        light["diffuse"] = _rounded(np.clip(tinted * factor, 0.0, 1.0))
        light["dir"] = _rounded(turn.apply(light["dir"]))
    head = out["headlight"]
    head["diffuse"] = _rounded(np.clip(np.asarray(head["diffuse"]) * factor, 0.0, 1.0))
    head["ambient"] = _rounded(np.clip(np.asarray(head["ambient"]) * factor, 0.0, 1.0))
    return out


def textures(scene: dict[str, Any], spec: PerturbationSpec) -> dict[str, Any]:
    """Floor, wall, table and background-furniture material colours blended toward random ones."""
    rng, i, out = spec.rng(), spec.level - 1, copy.deepcopy(scene)
    for material in out["materials"]:
        rgba = np.asarray(material["rgba"])
        other = rng.uniform(0.1, 1.0, 3)
        material["rgba"] = _rounded(
            [*((1 - _TEXTURE_BLEND[i]) * rgba[:3] + _TEXTURE_BLEND[i] * other), rgba[3]]
        )
    return out


def robot_init(scene: dict[str, Any], spec: PerturbationSpec) -> dict[str, Any]:
    """Each arm joint offset by up to the level's angle (at least half of it), inside its limits."""
    rng, i, out = spec.rng(), spec.level - 1, copy.deepcopy(scene)
    robot = out["robot"]
    q, low, high = (np.asarray(robot[k]) for k in ("q", "low", "high"))
    offset = rng.uniform(0.5, 1.0, q.shape) * _JOINT_OFFSET[i] * np.where(rng.random(q.shape) < 0.5, -1, 1)
    robot["q"] = _rounded(np.clip(q + offset, low + _JOINT_MARGIN, high - _JOINT_MARGIN))
    return out


def object_position(scene: dict[str, Any], spec: PerturbationSpec) -> dict[str, Any]:
    """The table's objects shifted together and jittered one by one (a feasible draw; see the module)."""
    rng, i, out = spec.rng(), spec.level - 1, copy.deepcopy(scene)
    movers = [o["name"] for o in out["objects"] if o["rests_on"] == "surface"]
    for scale in (1.0, 0.75, 0.5, 0.25):
        for _ in range(_TRIES):
            angle = rng.uniform(0, 2 * math.pi)
            shift = scale * _OBJECT_SHIFT[i] * np.array([math.cos(angle), math.sin(angle)])
            moves = {n: shift + scale * _OBJECT_JITTER[i] * _in_disc(rng) for n in movers}
            if _feasible(out, moves):
                return _moved(out, moves)
    return out  # (no feasible layout near this one: the objects stay; the certificate still runs)


def _in_disc(rng: np.random.Generator) -> np.ndarray:
    radius, angle = math.sqrt(rng.random()), rng.uniform(0, 2 * math.pi)
    return radius * np.array([math.cos(angle), math.sin(angle)])


def _total_moves(scene: dict[str, Any], moves: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """``moves`` of the table's objects, extended to what rests on them (and on those, ...)."""
    by_name = {o["name"]: o for o in scene["objects"]}

    def of(name: str, depth: int = 0) -> np.ndarray:
        if name in moves:
            return moves[name]
        support = by_name[name]["rests_on"]
        if support in by_name and depth < len(by_name):
            return of(support, depth + 1)
        return np.zeros(2)

    return {name: of(name) for name in by_name}


def _boxes(scene: dict[str, Any], moves: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    total = _total_moves(scene, moves)
    return {o["name"]: np.asarray([o["lo"], o["hi"]]) + total[o["name"]] for o in scene["objects"]}


def _overlap(a: np.ndarray, b: np.ndarray, gap: float) -> bool:
    return bool(np.all(a[0] < b[1] + gap) and np.all(b[0] < a[1] + gap))


def _feasible(scene: dict[str, Any], moves: dict[str, np.ndarray]) -> bool:
    before, after = _boxes(scene, {}), _boxes(scene, moves)
    low, high = (np.asarray(b) for b in scene["bounds"])
    names = [n for n in after if n in moves]
    if any(np.any(after[n][0] < low) or np.any(after[n][1] > high) for n in names):
        return False
    obstacles = [np.asarray(b) for b in scene["obstacles"]]
    for n in names:
        if any(_overlap(after[n], ob, _GAP) and not _overlap(before[n], ob, _GAP) for ob in obstacles):
            return False
    for k, a in enumerate(names):
        for b in names[k + 1 :]:
            if _overlap(after[a], after[b], _GAP) and not _overlap(before[a], before[b], _GAP):
                return False
            gap0 = before[a].mean(axis=0) - before[b].mean(axis=0)
            gap1 = after[a].mean(axis=0) - after[b].mean(axis=0)
            if np.any((np.abs(gap0) > _ORDERED) & (np.sign(gap0) != np.sign(gap1))):
                return False
    return True


def _moved(scene: dict[str, Any], moves: dict[str, np.ndarray]) -> dict[str, Any]:
    total = _total_moves(scene, moves)
    for o in scene["objects"]:
        d = total[o["name"]]
        if np.any(d != 0):
            o["pos"] = _rounded([o["pos"][0] + d[0], o["pos"][1] + d[1], o["pos"][2]])
            o["lo"], o["hi"] = _rounded(np.asarray(o["lo"]) + d), _rounded(np.asarray(o["hi"]) + d)
    return scene


def distractors(scene: dict[str, Any], spec: PerturbationSpec) -> dict[str, Any]:
    """Objects from the scene's pool (``scene["pool"]``) that nothing in the scene or the instruction could
    be mistaken for, placed on free table near the task objects (see the module)."""
    rng, i, out = spec.rng(), spec.level - 1, copy.deepcopy(scene)
    pool = [p for p in out["pool"] if not confusable(p["category"], out)]
    placed: list[dict[str, Any]] = []
    for k in rng.permutation(len(pool)):
        if len(placed) == _DISTRACTORS[i]:
            break
        spot = _free_spot(rng, out, pool[int(k)], placed, i)
        if spot is not None:
            placed.append(spot)
    out["distractors"] = placed
    return out


def _words(text: str) -> set[str]:
    """A name's or sentence's words that name a kind of thing (colours and sizes dropped), singular."""
    words = set(text.lower().replace("_", " ").split()) - _PLAIN_WORDS
    return {w[:-1] if w.endswith("s") else w for w in words}


def confusable(category: str, scene: dict[str, Any]) -> bool:
    """Whether an object of ``category`` shares a word naming a kind of thing with the scene's instruction
    or one of its object or fixture categories."""
    taken = _words(scene["instruction"]).union(*(_words(c) for c in scene["categories"]))
    return bool(_words(category) & taken)


def _free_spot(
    rng: np.random.Generator,
    scene: dict[str, Any],
    entry: dict[str, Any],
    placed: list[dict[str, Any]],
    i: int,
) -> dict[str, Any] | None:
    """A pose for ``entry`` by rejection sampling: inside the bounds and the agentview camera's picture
    (``scene["view"]``), clear of every object by the level's
    gap and of fixtures, goal regions and other distractors by ``_GAP``, the nearest object within the
    level's reach (dropped when no draw meets it)."""
    low, high = np.asarray(scene["bounds"]) + np.array([[1.0], [-1.0]]) * entry["radius"]
    if np.any(low >= high):
        return None
    objects = [np.asarray([o["lo"], o["hi"]]) for o in scene["objects"]]
    others = [np.asarray(b) for b in (*scene["obstacles"], *scene["keepout"])]
    view = np.asarray(scene["view"])
    for reach in (_DISTRACTOR_REACH[i], math.inf):
        for _ in range(4 * _TRIES):
            xy = rng.uniform(low, high)
            gaps = [_box_gap(xy, box) - entry["radius"] for box in objects]
            if gaps and (min(gaps) < _DISTRACTOR_GAP[i] or min(gaps) > reach):
                continue
            if not _in_polygon(xy, view) or any(_box_gap(xy, box) < entry["radius"] + _GAP for box in others):
                continue
            if any(np.hypot(*(xy - p["pos"][:2])) < entry["radius"] + p["radius"] + _GAP for p in placed):
                continue
            return _standing(rng, scene, entry, xy)
    return None


def _in_polygon(xy: np.ndarray, corners: np.ndarray) -> bool:
    """Whether ``xy`` lies inside the convex polygon ``corners`` (in order, either way round)."""
    edges, to_point = np.roll(corners, -1, axis=0) - corners, xy - corners
    cross = edges[:, 0] * to_point[:, 1] - edges[:, 1] * to_point[:, 0]
    return bool(np.all(cross >= 0) or np.all(cross <= 0))


def _box_gap(xy: np.ndarray, box: np.ndarray) -> float:
    """Distance from a point to an x-y box (0 inside)."""
    return float(np.hypot(*np.maximum(np.maximum(box[0] - xy, 0.0), xy - box[1])))


def _standing(
    rng: np.random.Generator, scene: dict[str, Any], entry: dict[str, Any], xy: np.ndarray
) -> dict[str, Any]:
    """``entry`` at ``xy`` resting on the surface (just above it), turned about the vertical at random."""
    yaw = rng.uniform(0, 2 * math.pi)
    w, x, y, z = entry["quat"]
    quat = (Rotation.from_rotvec([0.0, 0.0, yaw]) * Rotation.from_quat([x, y, z, w])).as_quat()
    return {
        "category": entry["category"],
        "pos": _rounded([xy[0], xy[1], scene["surface_z"] + entry["bottom"] + _DROP]),
        "quat": _rounded([quat[3], quat[0], quat[1], quat[2]]),
        "radius": entry["radius"],
    }


@functools.cache
def paraphrase_table() -> dict[str, tuple[str, ...]]:
    """The shipped paraphrases: instruction -> its five wordings (levels 1-5)."""
    rows = json.loads(PARAPHRASES.read_text())["instructions"]
    return {text: tuple(levels) for text, levels in rows.items()}


def paraphrase_instruction(instruction: str, level: int) -> str:
    """The table's wording of ``instruction`` at ``level``, or the instruction itself when it has none."""
    levels = paraphrase_table().get(instruction)
    return instruction if levels is None else levels[level - 1]


paraphrase = instruction_paraphrase(paraphrase_instruction)


AXES: dict[str, Axis] = {
    "camera": Axis(
        "camera",
        "agentview camera orbit (yaw, pitch) about its look-at point, distance and field of view",
        level_texts(
            "yaw +-{:g} deg, pitch +-{:g} deg, distance x(1+-{:g}), fov 45+-{:g} deg",
            _CAMERA_YAW,
            _CAMERA_PITCH,
            _CAMERA_DISTANCE,
            _CAMERA_FOV,
        ),
        camera,
    ),
    "lighting": Axis(
        "lighting",
        "light intensity, colour and direction; headlight intensity",
        level_texts("intensity x(1+-{:g}), tint {:g}, turn {:g} deg", _LIGHT_SCALE, _LIGHT_TINT, _LIGHT_TILT),
        lighting,
    ),
    "textures": Axis(
        "textures",
        "floor, wall, table and background-furniture material colours",
        level_texts("colour blend {:g}", _TEXTURE_BLEND),
        textures,
    ),
    "object_position": Axis(
        "object_position",
        "the table's objects shifted together and jittered (feasible, order kept)",
        level_texts("shift {:g} m + jitter <= {:g} m", _OBJECT_SHIFT, _OBJECT_JITTER),
        object_position,
    ),
    "robot_init": Axis(
        "robot_init",
        "the arm's start joints",
        level_texts("each joint +-{:g}-{:g} rad", tuple(x / 2 for x in _JOINT_OFFSET), _JOINT_OFFSET),
        robot_init,
    ),
    "distractors": Axis(
        "distractors",
        "extra objects from LIBERO's and LIBERO-PRO's asset pool on free table near the task objects",
        level_texts(
            "{:g} objects, >= {:g} m clear, <= {:g} m away", _DISTRACTORS, _DISTRACTOR_GAP, _DISTRACTOR_REACH
        ),
        distractors,
    ),
    "paraphrase": Axis(
        "paraphrase",
        "instruction wording, from the shipped paraphrase table",
        (
            "synonyms (one or two)",
            "synonyms throughout",
            "reordered",
            "indirect references",
            "reordered, indirect, conversational",
        ),
        paraphrase,
    ),
    **CHANNEL_AXIS_DOCS,
}
register_axes(FAMILY, AXES)
