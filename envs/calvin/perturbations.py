"""CALVIN's robustness axes on the built-in play-table: each edits a copy of a CALVIN episode (see
:mod:`envs.perturbation`).

A CALVIN episode here is what one reset sets up (:func:`clean_episode`): ``scene`` (A-D), ``robot_obs``
and ``scene_obs`` (CALVIN's vectors), the static ``camera`` (eye, target, up, fov), the renderer's
``light``, the table's ``looks`` (``{}``: as built), the ``distractors`` (extra blocks) and the
``instructions`` of its tasks. Scene axes change only the fields they name (tests check it):

- ``camera``: the static camera's pose (an orbit about its target, the target moved) and field of view;
  the gripper camera stays on the hand.
- ``lighting``: the light's direction, intensity (ambient and diffuse) and colour, for both cameras.
- ``textures``: the table's wood tinted, its handles, switch and button recoloured, the floor tinted.
- ``distractors``: blocks in colours no task names (:data:`envs.calvin.constants.EXTRA_BLOCK_RGBA`) and
  CALVIN's block sizes, on the free table top, clear of the button and of the table blocks' push lanes.
- ``block_positions``: every block moved off its evaluation spot (staying on its surface) and turned
  beyond the evaluation's yaw range.
- ``robot_joints``: the start joints moved off CALVIN's neutral pose.
- ``paraphrase``: the instructions, from the shipped table ``paraphrases.json``.
- ``scene``: the chain played in CALVIN's scene A, C or B (levels 1-2, 3-4, 5: the scenes ordered by how
  much of scene D's furniture they move), from the same symbolic state at that scene's spots.

The channel axes (image noise, blur and JPEG on both cameras; action noise on the six motion
components, the gripper untouched) are the shared ones. ``camera``, ``lighting``, ``textures``,
``paraphrase`` and the image axes are ``same_physics``: they change what a policy sees or reads, never the
simulation nor the scripted expert's inputs (it takes the task name), so their variants share the clean
chain's certificate.
"""

from __future__ import annotations

import copy
import functools
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from envs.calvin import constants as C
from envs.calvin.instructions import instruction_for
from envs.calvin.scenes import BLOCK_SIZES, Rect, SceneSpec, scene_spec
from envs.perturbation import CHANNEL_AXIS_DOCS, Axis, PerturbationSpec, level_texts, register_axes

FAMILY = "calvin"
PARAPHRASES = Path(__file__).with_name("paraphrases.json")
COLORS = ("red", "blue", "pink")

_ORBIT = (1.5, 3.0, 4.5, 6.5, 9.0)  # degrees of azimuth about the target, either sign (elevation: half)
_TARGET_SHIFT = (0.01, 0.02, 0.03, 0.045, 0.06)  # metres, in a drawn direction on the table plane
_FOV = (0.04, 0.08, 0.12, 0.16, 0.2)  # field of view x (1 +- this)
_LIGHT_SCALE = (0.15, 0.3, 0.45, 0.6, 0.75)  # ambient and diffuse x (1 +- this)
_LIGHT_TINT = (0.1, 0.2, 0.3, 0.4, 0.5)  # blend of the white light toward a drawn hue
_LIGHT_TILT = (10.0, 20.0, 30.0, 40.0, 50.0)  # degrees the direction turns
_TEXTURE_BLEND = (0.2, 0.4, 0.6, 0.8, 1.0)
_DISTRACTORS = (1, 2, 3, 4, 5)
_BLOCK_SHIFT = (0.015, 0.03, 0.045, 0.06, 0.08)  # metres off the spot, at most (kept on the surface)
_BLOCK_TURN = (10.0, 20.0, 30.0, 45.0, 60.0)  # degrees added to the yaw, either sign
_JOINT_OFFSET = (0.02, 0.04, 0.07, 0.1, 0.14)  # radians, each arm joint, either sign (x U(0.5, 1))
SCENE_LEVELS = ("A", "A", "C", "C", "B")
_HUES = ((1.0, 0.55, 0.2), (0.35, 0.55, 1.0), (1.0, 0.3, 0.6), (0.4, 1.0, 0.5), (0.7, 0.4, 1.0))
_IMAGE_AXES = ("image_noise", "image_blur", "image_jpeg")
_TABLE_FRONT: Rect = ((-0.41, -0.155), (0.41, -0.01))  # the free table top in front of the cabinet


def clean_episode(
    robot_obs: Sequence[float] | np.ndarray,
    scene_obs: Sequence[float] | np.ndarray,
    scene: str,
    tasks: Sequence[str] = (),
) -> dict[str, Any]:
    """The unperturbed episode of one reset: CALVIN's camera, light, looks, no distractors, and the
    evaluation instructions of ``tasks``."""
    return {
        "scene": scene,
        "robot_obs": [float(v) for v in robot_obs],
        "scene_obs": [float(v) for v in scene_obs],
        "camera": {
            "eye": list(C.STATIC_EYE),
            "target": list(C.STATIC_TARGET),
            "up": list(C.STATIC_UP),
            "fov": C.STATIC_CAMERA.fov,
        },
        "light": copy.deepcopy(C.DEFAULT_LIGHT),
        "looks": {},
        "distractors": [],
        "tasks": list(tasks),
        "instructions": [instruction_for(t) for t in tasks],
    }


def _sign(rng: np.random.Generator) -> float:
    return 1.0 if rng.random() < 0.5 else -1.0


def _rounded(values: Any) -> list[float]:
    return [round(float(v), 6) for v in values]


def _rotate(v: np.ndarray, axis: np.ndarray, angle: float) -> np.ndarray:
    """``v`` turned by ``angle`` (radians) about the unit ``axis`` (Rodrigues)."""
    return (
        v * math.cos(angle)
        + np.cross(axis, v) * math.sin(angle)
        + axis * np.dot(axis, v) * (1 - math.cos(angle))
    )


def camera(episode: dict[str, Any], spec: PerturbationSpec) -> dict[str, Any]:
    """The static camera orbited about its target (azimuth, and half that in elevation), the target moved
    on the table plane, the field of view scaled; ``up`` kept square to the new view direction."""
    rng, i, out = spec.rng(), spec.level - 1, copy.deepcopy(episode)
    cam = out["camera"]
    eye, target, up = (np.asarray(cam[k], float) for k in ("eye", "target", "up"))
    back = _rotate(eye - target, np.array([0.0, 0.0, 1.0]), math.radians(_sign(rng) * _ORBIT[i]))
    side = np.cross(back, [0.0, 0.0, 1.0])
    back = _rotate(back, side / np.linalg.norm(side), math.radians(_sign(rng) * _ORBIT[i] / 2))
    heading = rng.uniform(0, 2 * math.pi)
    target = target + _TARGET_SHIFT[i] * np.array([math.cos(heading), math.sin(heading), 0.0])
    forward = -back / np.linalg.norm(back)
    up = up - np.dot(up, forward) * forward
    cam.update(
        eye=_rounded(target + back),
        target=_rounded(target),
        up=_rounded(up / np.linalg.norm(up)),
        fov=round(cam["fov"] * (1 + _sign(rng) * _FOV[i]), 4),
    )
    return out


def lighting(episode: dict[str, Any], spec: PerturbationSpec) -> dict[str, Any]:
    """The light turned by a fixed angle about a drawn axis, brighter or darker, tinted toward a hue."""
    rng, i, out = spec.rng(), spec.level - 1, copy.deepcopy(episode)
    light = out["light"]
    direction = np.asarray(light["direction"], float)
    direction /= np.linalg.norm(direction)
    axis = np.cross(direction, rng.normal(size=3))
    direction = _rotate(direction, axis / np.linalg.norm(axis), math.radians(_LIGHT_TILT[i]))
    factor = 1.0 + _sign(rng) * _LIGHT_SCALE[i]
    hue = np.asarray(_HUES[int(rng.integers(len(_HUES)))])
    light.update(
        direction=_rounded(direction),
        color=_rounded((1 - _LIGHT_TINT[i]) * np.asarray(light["color"]) + _LIGHT_TINT[i] * hue),
        ambient=round(float(np.clip(light["ambient"] * factor, 0.1, 1.0)), 4),
        diffuse=round(float(np.clip(light["diffuse"] * factor, 0.05, 1.0)), 4),
    )
    return out


def textures(episode: dict[str, Any], spec: PerturbationSpec) -> dict[str, Any]:
    """The wood and the floor multiplied by a drawn tint, the plain parts blended toward a drawn colour;
    blocks and lights keep their colours (the tasks name them, the lights show state)."""
    rng, a, out = spec.rng(), _TEXTURE_BLEND[spec.level - 1], copy.deepcopy(episode)

    def tint() -> list[float]:
        return _rounded((1 - a) + a * rng.uniform(0.3, 1.0, 3))

    out["looks"] = {
        "wood": tint(),
        "floor": tint(),
        "parts": _rounded(rng.uniform(0.05, 0.95, 3)),
        "blend": a,
    }
    return out


# ------------------------------------------------------------------------------------ scene layout


def block_positions_xy(episode: Mapping[str, Any]) -> dict[str, np.ndarray]:
    """Each block's ``scene_obs`` position, by colour (the scene's block order)."""
    spec, obs = scene_spec(episode["scene"]), np.asarray(episode["scene_obs"])
    return {c: obs[spec.block_slice(c)][:3] for c in spec.block_colors}


def _on_table_front(pos: np.ndarray) -> bool:
    (x0, y0), (x1, y1) = _TABLE_FRONT
    return x0 <= pos[0] <= x1 and y0 - 0.03 <= pos[1] <= y1 + 0.03 and pos[2] < 0.5


def _distractor_clear(
    xy: np.ndarray, scene: SceneSpec, blocks: list[np.ndarray], placed: list[np.ndarray]
) -> bool:
    """Away from the button, from the push lanes of the blocks on the table (0.24 m along x either way)
    and from the distractors placed before."""
    if np.hypot(*(xy - scene.button[:2])) < 0.085:
        return False
    if any(abs(xy[0] - b[0]) < 0.24 and abs(xy[1] - b[1]) < 0.08 for b in blocks):
        return False
    return all(np.hypot(*(xy - p)) >= 0.075 for p in placed)


def distractors(episode: dict[str, Any], spec: PerturbationSpec) -> dict[str, Any]:
    """Up to ``_DISTRACTORS`` blocks of colours no task names, on the free table top (drawn; a block that
    finds no clear spot in 200 draws is left out)."""
    rng, out = spec.rng(), copy.deepcopy(episode)
    scene = scene_spec(out["scene"])
    blocks = [p for p in block_positions_xy(out).values() if _on_table_front(p)]
    colors = list(rng.permutation(list(C.EXTRA_BLOCK_RGBA)))
    (x0, y0), (x1, y1) = _TABLE_FRONT
    placed: list[np.ndarray] = []
    for color in colors[: _DISTRACTORS[spec.level - 1]]:
        size = str(rng.choice(list(BLOCK_SIZES)))
        half = BLOCK_SIZES[size][0] / 2
        for _ in range(200):
            xy = rng.uniform((x0 + half, y0 + 0.02), (x1 - half, y1 - 0.02))
            if _distractor_clear(xy, scene, blocks, placed):
                placed.append(xy)
                pose = [*xy, C.WORK_SURFACE_Z + 0.02, rng.uniform(0, math.pi)]
                out["distractors"].append({"color": str(color), "size": size, "pose": _rounded(pose)})
                break
    return out


def _surface_of(pos: np.ndarray, scene: SceneSpec) -> Rect:
    """The sampling surface (CALVIN's rectangles of the scene) nearest to a block."""

    def distance(rect: Rect) -> float:
        (x0, y0), (x1, y1) = rect
        return float(np.hypot(max(x0 - pos[0], 0, pos[0] - x1), max(y0 - pos[1], 0, pos[1] - y1)))

    return min(scene.surfaces.values(), key=distance)


def _moved_blocks(obs: np.ndarray, scene: SceneSpec, rng: np.random.Generator, level: int) -> np.ndarray:
    """One draw of every block moved (on its surface rectangle) and turned."""
    out = obs.copy()
    for color in scene.block_colors:
        s = scene.block_slice(color)
        (x0, y0), (x1, y1) = _surface_of(obs[s][:3], scene)
        radius, heading = _BLOCK_SHIFT[level - 1] * rng.uniform(0.5, 1.0), rng.uniform(0, 2 * math.pi)
        x = np.clip(obs[s.start] + radius * math.cos(heading), x0, x1)
        y = np.clip(obs[s.start + 1] + radius * math.sin(heading), y0, y1)
        out[s.start : s.start + 2] = (x, y)
        out[s.start + 5] += _sign(rng) * math.radians(_BLOCK_TURN[level - 1])
    return out


def _blocks_apart(obs: np.ndarray, scene: SceneSpec) -> bool:
    """Blocks on one level at least 0.1 m apart (the longest block is 0.08 m), off the button."""
    xyz = [obs[scene.block_slice(c)][:3] for c in scene.block_colors]
    for k, p in enumerate(xyz):
        if p[2] < 0.5 and np.hypot(*(p[:2] - scene.button[:2])) < 0.09:
            return False
        if any(abs(p[2] - q[2]) < 0.02 and np.hypot(*(p[:2] - q[:2])) < 0.1 for q in xyz[:k]):
            return False
    return True


def block_positions(episode: dict[str, Any], spec: PerturbationSpec) -> dict[str, Any]:
    """Every block moved up to ``_BLOCK_SHIFT`` off its spot (kept inside its surface's rectangle: the
    table top or its cabinet compartment, so the chain's symbolic state holds) and turned by
    ``_BLOCK_TURN``; redrawn (up to 50 times) until the blocks stand apart and off the button."""
    rng, out = spec.rng(), copy.deepcopy(episode)
    scene, obs = scene_spec(out["scene"]), np.asarray(out["scene_obs"], float)
    for _ in range(50):
        moved = _moved_blocks(obs, scene, rng, spec.level)
        if _blocks_apart(moved, scene):
            out["scene_obs"] = [float(v) for v in moved]
            break
    return out


def robot_joints(episode: dict[str, Any], spec: PerturbationSpec) -> dict[str, Any]:
    """Each arm joint of the start pose moved by ``_JOINT_OFFSET`` x U(0.5, 1), either sign, within the
    joint limits (the TCP fields are recomputed by the reset)."""
    rng, out = spec.rng(), copy.deepcopy(episode)
    joints = np.asarray(out["robot_obs"][7:14], float)
    offsets = [_sign(rng) * _JOINT_OFFSET[spec.level - 1] * rng.uniform(0.5, 1.0) for _ in range(7)]
    moved = np.clip(joints + offsets, C.JOINT_LOWER, C.JOINT_UPPER)
    out["robot_obs"][7:14] = [float(v) for v in moved]
    return out


def scene_obs_in(scene_obs: Sequence[float], source: SceneSpec, target: SceneSpec) -> list[float]:
    """``scene_obs`` of ``source`` placed in ``target``: the door at the same share of its travel, each
    block at the same offset from the centre of its surface (table, or cabinet compartment), in
    ``target``'s block order."""
    obs = np.asarray(scene_obs, float)
    out = obs.copy()
    out[0] = obs[0] / source.slide_travel * target.slide_travel
    for color in source.block_colors:
        pose = obs[source.block_slice(color)].copy()
        surface = next(n for n, r in source.surfaces.items() if r == _surface_of(pose[:3], source))
        (sx, sy), (tx, ty) = source._region_centre(surface), target._region_centre(surface)
        pose[:2] += (tx - sx, ty - sy)
        out[target.block_slice(color)] = pose
    return [float(v) for v in out]


def scene(episode: dict[str, Any], spec: PerturbationSpec) -> dict[str, Any]:
    out = copy.deepcopy(episode)
    source, target = scene_spec(out["scene"]), scene_spec(SCENE_LEVELS[spec.level - 1])
    if target.name == source.name:  # (a chain already in that scene plays in D instead)
        target = scene_spec("D")
    out["scene_obs"] = scene_obs_in(out["scene_obs"], source, target)
    out["scene"] = target.name
    return out


# -------------------------------------------------------------------------------------- paraphrase


@functools.cache
def paraphrase_table() -> dict[str, tuple[str, ...]]:
    """Task name -> its five paraphrases (levels 1-5), from the shipped table."""
    table: dict[str, tuple[str, ...]] = {}
    for row in json.loads(PARAPHRASES.read_text())["rows"]:
        colors = COLORS if "{color}" in row["task"] else ("",)
        for color in colors:
            table[row["task"].format(color=color)] = tuple(t.format(color=color) for t in row["levels"])
    return table


def paraphrase_instruction(task: str, level: int) -> str:
    """The table's level-``level`` wording of ``task``'s evaluation instruction."""
    return paraphrase_table()[task][level - 1]


def variant_instruction(task: str, perturbation: Mapping[str, Any] | PerturbationSpec | None) -> str:
    """The instruction a policy gets for ``task`` in a variant: the paraphrase table's entry on the
    ``paraphrase`` axis, CALVIN's evaluation instruction otherwise."""
    spec = None if perturbation is None else PerturbationSpec.from_json(perturbation)
    if spec is not None and spec.axis == "paraphrase":
        return paraphrase_instruction(task, spec.level)
    return instruction_for(task)


def paraphrase(episode: dict[str, Any], spec: PerturbationSpec) -> dict[str, Any]:
    out = copy.deepcopy(episode)
    out["instructions"] = [paraphrase_instruction(t, spec.level) for t in out["tasks"]]
    return out


AXES: dict[str, Axis] = {
    "camera": Axis(
        "camera",
        "static camera pose (orbit about its target, target moved) and field of view",
        level_texts(
            "orbit +-{:g} deg (elevation half), target +-{:g} m, fov 10 x (1+-{:g})",
            _ORBIT,
            _TARGET_SHIFT,
            _FOV,
        ),
        camera,
        same_physics=True,
    ),
    "lighting": Axis(
        "lighting",
        "light direction, intensity and colour (both cameras)",
        level_texts(
            "turned {:g} deg, ambient/diffuse x(1+-{:g}), tint {:g}", _LIGHT_TILT, _LIGHT_SCALE, _LIGHT_TINT
        ),
        lighting,
        same_physics=True,
    ),
    "textures": Axis(
        "textures",
        "table wood and floor tinted, handles, switch and button recoloured",
        level_texts("colour blend {:g}", _TEXTURE_BLEND),
        textures,
        same_physics=True,
    ),
    "distractors": Axis(
        "distractors",
        "extra blocks in colours no task names, on the free table top",
        level_texts("{:d} blocks", _DISTRACTORS),
        distractors,
    ),
    "block_positions": Axis(
        "block_positions",
        "blocks moved off their spots on the same surface and turned",
        level_texts("up to {:g} m, yaw +-{:g} deg", _BLOCK_SHIFT, _BLOCK_TURN),
        block_positions,
    ),
    "robot_joints": Axis(
        "robot_joints",
        "start joints moved off the neutral pose",
        level_texts("each joint +-{:g} rad x U(0.5, 1)", _JOINT_OFFSET),
        robot_joints,
    ),
    "paraphrase": Axis(
        "paraphrase",
        "instruction wording, from the shipped paraphrase table",
        level_texts("table entry {:d}", (1, 2, 3, 4, 5)),
        paraphrase,
        same_physics=True,
    ),
    "scene": Axis(
        "scene",
        "the chain played in another CALVIN scene (furniture, woods, blocks)",
        level_texts("scene {}", SCENE_LEVELS),
        scene,
    ),
    **{
        name: replace(axis, same_physics=name in _IMAGE_AXES)  # (action noise changes what happens)
        for name, axis in CHANNEL_AXIS_DOCS.items()
    },
}
register_axes(FAMILY, AXES)
