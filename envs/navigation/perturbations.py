"""EB-Navigation's robustness axes: each edits a copy of an episode dict (see :mod:`envs.perturbation`).

Scene axes change only the fields they name (tests check it): ``camera`` the start pitch, camera height
and field of view; ``lighting`` the ambient, headlight and room lights; ``textures`` floor, wall and
furniture colours and floor styles; ``distractors`` adds objects of categories the home does not hold;
``initial_position`` the start pose; ``paraphrase`` the instruction, from the shipped table
``paraphrases.json``. The channel axes (image noise, blur, JPEG; action noise) are the shared ones.
"""

from __future__ import annotations

import json
import math
from collections import OrderedDict
from pathlib import Path
from typing import Any

import numpy as np

from envs import perturbation
from envs.navigation.catalog import CATEGORIES, COLOURS, FLOOR_STYLES
from envs.navigation.episodes import SUCCESS_DISTANCE, copy_episode
from envs.navigation.planner import UNREACHABLE, Lattice
from envs.navigation.scene import house_bounds, place_extra_object, scene_obstacles
from envs.navigation.world import PITCH_LIMITS, camera_height_limits
from envs.perturbation import (
    CHANNEL_AXIS_DOCS,
    Axis,
    PerturbationSpec,
    level_texts,
    register_axes,
)

FAMILY = "eb_navigation"
PARAPHRASES = Path(__file__).with_name("paraphrases.json")

_CAMERA_PITCH = (3.0, 6.0, 10.0, 15.0, 20.0)  # degrees, either sign
_CAMERA_HEIGHT = (0.05, 0.1, 0.2, 0.3, 0.4)  # metres, either sign
_CAMERA_FOV = (5.0, 10.0, 20.0, 30.0, 40.0)  # degrees off 100, either sign
_LIGHT_SCALE = (0.15, 0.3, 0.45, 0.6, 0.75)  # intensity factor 1 +- this
_LIGHT_TINT = (0.1, 0.2, 0.3, 0.4, 0.5)  # blend of the light colour toward a random hue
_LIGHT_TILT = (10.0, 20.0, 30.0, 40.0, 50.0)  # degrees off straight down
_TEXTURE_BLEND = (0.2, 0.4, 0.6, 0.8, 1.0)  # blend of each colour toward a random one
_DISTRACTORS = (1, 2, 3, 4, 6)
_EXTRA_STEPS = (1, 2, 4, 6, 8)  # shortest-path actions added to the start
# Categories whose descriptions could fit each other (as the instruction writer keeps apart).
_CONFUSABLE = ({"apple", "banana"}, {"lamp", "candle"}, {"mug", "bottle"}, {"bowl", "pot"})


def _sign(rng: np.random.Generator) -> float:
    return 1.0 if rng.random() < 0.5 else -1.0


def camera(episode: dict[str, Any], spec: PerturbationSpec) -> dict[str, Any]:
    rng, i, out = spec.rng(), spec.level - 1, copy_episode(episode)
    lo, hi = PITCH_LIMITS
    agent = out["agent"]
    agent["pitch_deg"] = float(np.clip(agent.get("pitch_deg", 0.0) + _sign(rng) * _CAMERA_PITCH[i], lo, hi))
    floor, ceiling = camera_height_limits(out["scene"])
    height = agent.get("height", 1.5) + _sign(rng) * _CAMERA_HEIGHT[i]
    agent["height"] = round(float(np.clip(height, floor, ceiling)), 4)
    out["camera_fov"] = 100.0 + _sign(rng) * _CAMERA_FOV[i]
    return out


def lighting(episode: dict[str, Any], spec: PerturbationSpec) -> dict[str, Any]:
    rng, i, out = spec.rng(), spec.level - 1, copy_episode(episode)
    factor = 1.0 + _sign(rng) * _LIGHT_SCALE[i]
    light = out["scene"]["lighting"]
    light["ambient"] = round(float(np.clip(light["ambient"] * factor, 0.03, 1.0)), 4)
    light["headlight"] = round(float(np.clip(light["headlight"] * factor, 0.03, 1.0)), 4)
    hue = np.asarray(rng.choice(list(COLOURS.values())), float)
    tilt, azimuth = math.radians(_LIGHT_TILT[i]), rng.uniform(0, 2 * math.pi)
    direction = [math.sin(tilt) * math.cos(azimuth), math.sin(tilt) * math.sin(azimuth), -math.cos(tilt)]
    for room in out["scene"]["rooms"]:
        rgb = (1 - _LIGHT_TINT[i]) * np.asarray(room["light"]["rgb"]) + _LIGHT_TINT[i] * hue
        room["light"]["rgb"] = [round(float(c), 4) for c in rgb]
        room["light"]["intensity"] = round(float(np.clip(room["light"]["intensity"] * factor, 0.05, 2.0)), 4)
        room["light"]["dir"] = [round(c, 4) for c in direction]
    return out


def _blend(rgb: list[float], rng: np.random.Generator, amount: float) -> list[float]:
    other = rng.uniform(0.05, 0.95, 3)
    return [round(float(c), 4) for c in (1 - amount) * np.asarray(rgb) + amount * other]


def textures(episode: dict[str, Any], spec: PerturbationSpec) -> dict[str, Any]:
    """Floor, wall and furniture colours (and, from level 3, floor styles); objects keep theirs (the
    visual-appearance instructions name them)."""
    rng, i, out = spec.rng(), spec.level - 1, copy_episode(episode)
    for room in out["scene"]["rooms"]:
        floor = room["floor"]
        if spec.level >= 3:
            floor["style"] = str(rng.choice([s for s in FLOOR_STYLES if s != floor["style"]]))
        floor["rgb1"], floor["rgb2"] = (_blend(floor[k], rng, _TEXTURE_BLEND[i]) for k in ("rgb1", "rgb2"))
        room["wall_rgb"] = _blend(room["wall_rgb"], rng, _TEXTURE_BLEND[i])
    for item in out["scene"]["furniture"]:
        item["rgb"] = _blend(item["rgb"], rng, _TEXTURE_BLEND[i])
        item["accent_rgb"] = _blend(item["accent_rgb"], rng, _TEXTURE_BLEND[i])
    return out


def distractors(episode: dict[str, Any], spec: PerturbationSpec) -> dict[str, Any]:
    """Objects of categories the home does not hold (none confusable with the target), so every
    instruction still names one object; placed by the scene generator's own rules."""
    rng, out = spec.rng(), copy_episode(episode)
    scene = out["scene"]
    target = out["target"]["category"]
    present = {o["category"] for o in scene["objects"]}
    banned = present | set().union(*(g for g in _CONFUSABLE if target in g))
    pool = [c for c in sorted(CATEGORIES) if c not in banned]
    added = 0
    for category in rng.permutation(pool):
        if added == _DISTRACTORS[spec.level - 1]:
            break
        room = int(rng.integers(len(scene["rooms"])))
        added += place_extra_object(rng, str(category), room, scene)
    return out


_SEARCHES: OrderedDict[str, tuple[Lattice, np.ndarray]] = OrderedDict()  # recent episodes' searches
_SEARCHES_KEPT = 16


def _search(episode: dict[str, Any]) -> tuple[Lattice, np.ndarray]:
    """The movement lattice through the episode's start and every state's actions to the target.

    Kept for the last few episodes: a ``--perturb all`` run builds the same search for the five levels of
    an episode, each run by the expert and then the policy (ten times), and the search is most of the
    variant's cost."""
    scene, agent, goal = episode["scene"], episode["agent"], episode["target"]["position"][:2]
    key = json.dumps([scene, agent["x"], agent["y"], agent["heading_deg"], goal], sort_keys=True)
    if key in _SEARCHES:
        _SEARCHES.move_to_end(key)
        return _SEARCHES[key]
    lattice = Lattice.build(
        scene_obstacles(scene), house_bounds(scene), (agent["x"], agent["y"]), agent["heading_deg"]
    )
    _SEARCHES[key] = (lattice, lattice.steps_to_goal(goal, SUCCESS_DISTANCE))
    while len(_SEARCHES) > _SEARCHES_KEPT:
        _SEARCHES.popitem(last=False)
    return _SEARCHES[key]


def initial_position(episode: dict[str, Any], spec: PerturbationSpec) -> dict[str, Any]:
    """A start pose further from the target: ``_EXTRA_STEPS`` more shortest-path actions than the
    original start, on the same movement lattice (so the shortest path stays exact)."""
    rng = spec.rng()
    lattice, dist = _search(episode)
    # (only the start pose changes: a copy of it, not of the whole home)
    out = {**episode, "agent": dict(episode["agent"])}
    agent = out["agent"]
    node, k = lattice.nearest((agent["x"], agent["y"])), lattice.heading_index(agent["heading_deg"])
    assert node is not None and k is not None  # the lattice is anchored at the start pose
    reachable = dist < UNREACHABLE
    want = int(dist[node, k]) + _EXTRA_STEPS[spec.level - 1]
    gap = np.where(reachable, np.abs(dist - want), UNREACHABLE)
    nodes, heads = np.nonzero(gap == gap.min())
    pick = int(rng.integers(len(nodes)))
    x, y = lattice.points[nodes[pick]]
    agent.update(
        x=round(float(x), 4),
        y=round(float(y), 4),
        heading_deg=float(lattice.heading0 + 90 * heads[pick]) % 360,
    )
    out.pop("shortest_path", None)  # (the original start's; stale)
    return out


SHIPPED_PARAPHRASES = perturbation.ShippedParaphrases(PARAPHRASES)
paraphrase_table, paraphrase_instruction = SHIPPED_PARAPHRASES.rows, SHIPPED_PARAPHRASES.wording
paraphrase = SHIPPED_PARAPHRASES.axis()


AXES: dict[str, Axis] = {
    "camera": Axis(
        "camera",
        "start camera pitch and height, field of view",
        level_texts(
            "pitch +-{:g} deg, height +-{:g} m, fov 100+-{:g} deg", _CAMERA_PITCH, _CAMERA_HEIGHT, _CAMERA_FOV
        ),
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
        "floor, wall and furniture colours; floor styles from level 3",
        level_texts("colour blend {:g}", _TEXTURE_BLEND),
        textures,
    ),
    "distractors": Axis(
        "distractors",
        "extra objects of categories the home lacks",
        level_texts("{:d} objects", _DISTRACTORS),
        distractors,
    ),
    "initial_position": Axis(
        "initial_position",
        "start pose further from the target",
        level_texts("+{:d} shortest-path actions", _EXTRA_STEPS),
        initial_position,
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
