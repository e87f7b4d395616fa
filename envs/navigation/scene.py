"""Procedural indoor scenes as data: a JSON-safe dict that regenerates the same MJCF every time.

``generate_scene(seed)`` lays out 1-3 rooms (rectangles sharing walls, a door in every shared wall),
gives each a type (kitchen, living room, bedroom, office), floor and wall materials and a ceiling light,
furnishes it, and places small target objects of distinct categories on furniture or the floor. Every
number it draws is stored in the dict (rounded to millimetres), so the dict alone determines the scene;
:func:`envs.navigation.mjcf.scene_to_mjcf` turns it into MJCF and :func:`scene_obstacles` into the 2-D
collision map the environment and the planners share.

Coordinates: metres, world frame z-up, the house spans ``[0, W] x [0, D]``. Yaws are degrees
counter-clockwise about +z; furniture yaws are multiples of 90 so footprints are axis-aligned.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from envs.navigation.assets import Surface, furniture_surfaces
from envs.navigation.catalog import (
    CATEGORIES,
    COLOURS,
    FABRIC_COLOURS,
    FLOOR_STYLES,
    FURNITURE,
    ROOM_TYPES,
    WALL_COLOURS,
    WOOD_COLOURS,
)
from envs.navigation.geometry import Obstacles, house_bounds
from envs.navigation.planner import Lattice

SCENE_FORMAT = "spatialarena.navigation.scene/1"
WALL_THICKNESS = 0.06  # each room's own wall slab; a shared wall is two slabs back to back
DOOR_HEIGHT = 2.1
_SIDES = ("south", "east", "north", "west")
_BACK_TO_WALL_YAW = {"north": 0, "west": 90, "south": 180, "east": 270}


class SceneError(ValueError):
    """A scene dict is malformed; the message names the field and what is expected."""


# ------------------------------------------------------------------------------------------ helpers


def _r(x: float) -> float:
    return round(float(x), 3)


def _rl(xs: Iterable[float]) -> list[float]:
    return [_r(x) for x in xs]


def _uniform(rng: np.random.Generator, lo_hi: Sequence[float]) -> float:
    return _r(rng.uniform(lo_hi[0], lo_hi[1]))


def scene_key(scene: dict[str, Any]) -> str:
    """A content hash of a scene dict (canonical JSON): equal keys mean identical scenes."""
    return hashlib.sha1(json.dumps(scene, sort_keys=True, separators=(",", ":")).encode()).hexdigest()[:16]


def rotate(local: Sequence[float], yaw_deg: float) -> tuple[float, float]:
    """Rotate a 2-D vector by ``yaw_deg`` counter-clockwise."""
    c, s = math.cos(math.radians(yaw_deg)), math.sin(math.radians(yaw_deg))
    return (local[0] * c - local[1] * s, local[0] * s + local[1] * c)


def footprint(center: Sequence[float], yaw: float, width: float, depth: float) -> list[float]:
    """World rectangle ``[x0, y0, x1, y1]`` of a ``width x depth`` footprint turned by a multiple of 90 deg."""
    half = (width / 2, depth / 2) if round(yaw) % 180 == 0 else (depth / 2, width / 2)
    return [center[0] - half[0], center[1] - half[1], center[0] + half[0], center[1] + half[1]]


def _overlaps(a: Sequence[float], b: Sequence[float], gap: float = 0.0) -> bool:
    return a[0] < b[2] + gap and b[0] < a[2] + gap and a[1] < b[3] + gap and b[1] < a[3] + gap


def _inside(rect: Sequence[float], bounds: Sequence[float], margin: float = 0.0) -> bool:
    return (
        rect[0] >= bounds[0] + margin
        and rect[1] >= bounds[1] + margin
        and rect[2] <= bounds[2] - margin
        and rect[3] <= bounds[3] - margin
    )


# ------------------------------------------------------------------------------------------- layout


def _layout(rng: np.random.Generator, n_rooms: int) -> tuple[list[list[float]], list[dict[str, Any]]]:
    """Room rectangles and doors; randomly transposed so either axis can be the long one."""
    if n_rooms == 1:
        rooms = [[0.0, 0.0, _uniform(rng, (4.5, 7.0)), _uniform(rng, (4.0, 6.0))]]
        doors: list[dict[str, Any]] = []
    elif n_rooms == 2:
        rooms, doors = _two_rooms(rng)
    elif rng.random() < 0.5:
        rooms, doors = _three_in_a_row(rng)
    else:
        rooms, doors = _three_l_shape(rng)
    if rng.random() < 0.5:
        rooms = [[r[1], r[0], r[3], r[2]] for r in rooms]
        doors = [{**d, "axis": "y" if d["axis"] == "x" else "x"} for d in doors]
    return rooms, doors


def _door(
    rng: np.random.Generator, rooms: list[int], axis: str, at: float, lo: float, hi: float
) -> dict[str, Any]:
    width = _uniform(rng, (0.95, 1.2))
    center = _uniform(rng, (lo + width / 2 + 0.25, hi - width / 2 - 0.25))
    return {"rooms": rooms, "axis": axis, "at": _r(at), "center": center, "width": width}


def _two_rooms(rng: np.random.Generator) -> tuple[list[list[float]], list[dict[str, Any]]]:
    w1, w2, d = _uniform(rng, (3.5, 5.0)), _uniform(rng, (3.5, 5.0)), _uniform(rng, (3.8, 5.5))
    rooms = [[0.0, 0.0, w1, d], [w1, 0.0, _r(w1 + w2), d]]
    return rooms, [_door(rng, [0, 1], "x", w1, 0.0, d)]


def _three_in_a_row(rng: np.random.Generator) -> tuple[list[list[float]], list[dict[str, Any]]]:
    ws = [_uniform(rng, (3.2, 4.3)) for _ in range(3)]
    d = _uniform(rng, (3.8, 5.0))
    xs = np.cumsum([0.0, *ws])
    rooms = [[_r(xs[i]), 0.0, _r(xs[i + 1]), d] for i in range(3)]
    return rooms, [_door(rng, [i, i + 1], "x", xs[i + 1], 0.0, d) for i in range(2)]


def _three_l_shape(rng: np.random.Generator) -> tuple[list[list[float]], list[dict[str, Any]]]:
    w1, w2, d = _uniform(rng, (3.5, 5.0)), _uniform(rng, (3.5, 5.0)), _uniform(rng, (6.0, 7.5))
    split = _uniform(rng, (2.9, d - 2.9))
    rooms = [[0.0, 0.0, w1, d], [w1, 0.0, _r(w1 + w2), split], [w1, split, _r(w1 + w2), d]]
    j = int(rng.integers(1, 3))  # the right-hand room the big room opens into
    lo, hi = (0.0, split) if j == 1 else (split, d)
    return rooms, [_door(rng, [0, j], "x", w1, lo, hi), _door(rng, [1, 2], "y", split, w1, w1 + w2)]


# ---------------------------------------------------------------------------------------- materials


def _room_style(rng: np.random.Generator, kind: str, bounds: list[float]) -> dict[str, Any]:
    style = str(rng.choice(FLOOR_STYLES))
    base = {
        "wood": WOOD_COLOURS,
        "tiles": ((0.85, 0.85, 0.82), (0.75, 0.78, 0.80), (0.80, 0.74, 0.66)),
        "carpet": FABRIC_COLOURS,
        "concrete": ((0.55, 0.55, 0.55), (0.62, 0.60, 0.57)),
    }[style]
    rgb1 = base[int(rng.integers(len(base)))]
    warmth = rng.uniform(-1, 1)
    return {
        "type": kind,
        "bounds": _rl(bounds),
        "floor": {"style": style, "rgb1": _rl(rgb1), "rgb2": _rl(np.array(rgb1) * rng.uniform(0.8, 0.92))},
        "wall_rgb": _rl(WALL_COLOURS[int(rng.integers(len(WALL_COLOURS)))]),
        "light": {
            "rgb": _rl((1.0, 0.96 + 0.04 * warmth, 0.9 + 0.1 * warmth)),
            "intensity": _uniform(rng, (0.45, 0.7)),
        },
    }


# ------------------------------------------------------------------------------------------- walls


def room_walls(scene: dict[str, Any], room_index: int) -> list[dict[str, Any]]:
    """The wall slabs of one room, split around its doors: ``{"side", "rect", "door_above"}`` each.

    ``door_above`` marks the lintel over a door opening (not an obstacle; it starts at door height).
    """
    x0, y0, x1, y1 = scene["rooms"][room_index]["bounds"]
    t = scene.get("wall_thickness", WALL_THICKNESS)
    lines = {
        "south": ("y", y0, x0, x1),
        "north": ("y", y1, x0, x1),
        "west": ("x", x0, y0, y1),
        "east": ("x", x1, y0, y1),
    }
    slabs = []
    for side, (axis, at, lo, hi) in lines.items():
        openings = sorted(
            (d["center"] - d["width"] / 2, d["center"] + d["width"] / 2)
            for d in scene["doors"]
            if room_index in d["rooms"] and d["axis"] == axis and abs(d["at"] - at) < 1e-6
        )
        start = lo
        for a, b in [*openings, (hi, hi)]:
            if a > start + 1e-6:
                slabs.append({"side": side, "rect": _slab(side, at, start, a, t), "door_above": False})
            if b > a:
                slabs.append({"side": side, "rect": _slab(side, at, a, b, t), "door_above": True})
            start = b
    return slabs


def _slab(side: str, at: float, lo: float, hi: float, t: float) -> list[float]:
    if side == "south":
        return [lo, at, hi, at + t]
    if side == "north":
        return [lo, at - t, hi, at]
    if side == "west":
        return [at, lo, at + t, hi]
    return [at - t, lo, at, hi]


def room_of(scene: dict[str, Any], xy: Sequence[float] | np.ndarray) -> int | None:
    """Index of the room containing the point ``xy`` (``None`` outside every room)."""
    for i, room in enumerate(scene["rooms"]):
        x0, y0, x1, y1 = room["bounds"]
        if x0 <= xy[0] <= x1 and y0 <= xy[1] <= y1:
            return i
    return None


# ------------------------------------------------------------------------------------- obstacles


def furniture_rect(item: dict[str, Any]) -> list[float]:
    """World footprint of a furniture entry."""
    return footprint(item["center"], item["yaw"], item["size"][0], item["size"][1])


def object_rect(obj: dict[str, Any]) -> list[float]:
    """World footprint (a square of the category's half-extent times the scale) of an object entry."""
    half = CATEGORIES[obj["category"]].footprint * obj["scale"]
    x, y = obj["pos"][0], obj["pos"][1]
    return [x - half, y - half, x + half, y + half]


def scene_obstacles(scene: dict[str, Any]) -> Obstacles:
    """Everything the agent cannot walk through: wall slabs, furniture and objects standing on the floor."""
    rects, labels = [], []
    for i in range(len(scene["rooms"])):
        for slab in room_walls(scene, i):
            if not slab["door_above"]:
                rects.append(slab["rect"])
                labels.append("wall")
    for item in scene["furniture"]:
        rects.append(furniture_rect(item))
        labels.append(item["kind"].replace("_", " "))
    for obj in scene["objects"]:
        if obj["support"] == "floor":
            rects.append(object_rect(obj))
            labels.append(CATEGORIES[obj["category"]].noun)
    return Obstacles(np.array(rects, dtype=float).reshape(-1, 4), tuple(labels))


# -------------------------------------------------------------------------------------- furniture


def _door_zones(scene_doors: list[dict[str, Any]], depth: float = 1.0) -> list[list[float]]:
    """Keep-out rectangles in front of and behind every door, so furniture never blocks a doorway."""
    zones = []
    for d in scene_doors:
        lo, hi = d["center"] - d["width"] / 2 - 0.2, d["center"] + d["width"] / 2 + 0.2
        if d["axis"] == "x":
            zones.append([d["at"] - depth, lo, d["at"] + depth, hi])
        else:
            zones.append([lo, d["at"] - depth, hi, d["at"] + depth])
    return zones


def _against_wall(
    rng: np.random.Generator, kind: str, size: list[float], room: list[float]
) -> tuple[list[float], int]:
    side = str(rng.choice(_SIDES))
    yaw = _BACK_TO_WALL_YAW[side]
    w, d = size[0], size[1]
    x0, y0, x1, y1 = room
    gap = WALL_THICKNESS + 0.02
    if side in ("north", "south"):
        x = rng.uniform(x0 + gap + w / 2, x1 - gap - w / 2)
        y = y1 - gap - d / 2 if side == "north" else y0 + gap + d / 2
    else:
        y = rng.uniform(y0 + gap + w / 2, y1 - gap - w / 2)
        x = x1 - gap - d / 2 if side == "east" else x0 + gap + d / 2
    return [_r(x), _r(y)], yaw


def _free_standing(rng: np.random.Generator, size: list[float], room: list[float]) -> tuple[list[float], int]:
    yaw = int(rng.choice([0, 90]))
    margin = 0.9 + max(size[0], size[1]) / 2
    x0, y0, x1, y1 = room
    cx = rng.uniform(x0 + margin, x1 - margin) if x1 - x0 > 2 * margin else (x0 + x1) / 2
    cy = rng.uniform(y0 + margin, y1 - margin) if y1 - y0 > 2 * margin else (y0 + y1) / 2
    return [_r(cx), _r(cy)], yaw


def _furniture_colour(rng: np.random.Generator, material: str) -> list[float]:
    palette = {
        "wood": WOOD_COLOURS,
        "fabric": FABRIC_COLOURS,
        "white": ((0.9, 0.9, 0.88), (0.95, 0.94, 0.9)),
        "black": ((0.12, 0.12, 0.13), (0.18, 0.17, 0.16)),
        "grey": ((0.5, 0.52, 0.55), (0.6, 0.6, 0.6)),
    }
    options = palette[material]
    return _rl(options[int(rng.integers(len(options)))])


def _try_place(
    rng: np.random.Generator, kind: str, room: list[float], taken: list[list[float]], zones: list[list[float]]
) -> dict[str, Any] | None:
    spec = FURNITURE[kind]
    for _ in range(30):
        size = [_uniform(rng, spec.width), _uniform(rng, spec.depth), _uniform(rng, spec.height)]
        if spec.against_wall:
            center, yaw = _against_wall(rng, kind, size, room)
        else:
            center, yaw = _free_standing(rng, size, room)
        rect = footprint(center, yaw, size[0], size[1])
        if not _inside(rect, room, WALL_THICKNESS) or any(_overlaps(rect, z) for z in zones):
            continue
        if any(_overlaps(rect, t, gap=0.55) for t in taken):
            continue
        material = str(rng.choice(spec.materials))
        return {
            "kind": kind,
            "center": center,
            "yaw": yaw,
            "size": size,
            "material": material,
            "rgb": _furniture_colour(rng, material),
            "accent_rgb": _rl(FABRIC_COLOURS[int(rng.integers(len(FABRIC_COLOURS)))]),
        }
    return None


def _chairs_for(
    rng: np.random.Generator,
    table: dict[str, Any],
    room: list[float],
    taken: list[list[float]],
    zones: list[list[float]],
) -> list[dict[str, Any]]:
    """One or two chairs tucked at the long sides of a table, facing it."""
    spec = FURNITURE["chair"]
    size = [_uniform(rng, spec.width), _uniform(rng, spec.depth), _uniform(rng, spec.height)]
    material = str(rng.choice(spec.materials))
    rgb = _furniture_colour(rng, material)
    chairs = []
    for side in rng.permutation([1, -1])[: int(rng.integers(1, 3))]:
        # table frame: its long sides are +-y; a chair there faces the table (its front points to -side*y)
        offset = rotate(
            (rng.uniform(-0.2, 0.2) * table["size"][0], side * (table["size"][1] / 2 + size[1] / 2 - 0.12)),
            table["yaw"],
        )
        center = [_r(table["center"][0] + offset[0]), _r(table["center"][1] + offset[1])]
        yaw = int((table["yaw"] + (0 if side > 0 else 180)) % 360)
        rect = footprint(center, yaw, size[0], size[1])
        if (
            _inside(rect, room, WALL_THICKNESS + 0.3)
            and not any(_overlaps(rect, z) for z in zones)
            and not any(_overlaps(rect, t, gap=0.45) for t in taken)
        ):
            chairs.append(
                {
                    "kind": "chair",
                    "center": center,
                    "yaw": yaw,
                    "size": size,
                    "material": material,
                    "rgb": rgb,
                    "accent_rgb": rgb,
                }
            )
    return chairs


def _furnish(
    rng: np.random.Generator, room_index: int, room: dict[str, Any], zones: list[list[float]]
) -> list[dict[str, Any]]:
    spec = ROOM_TYPES[room["type"]]
    optional = list(rng.permutation(spec["optional"])[: int(rng.integers(0, 3))])
    items: list[dict[str, Any]] = []
    for kind in [*spec["required"], *optional]:
        taken = [furniture_rect(i) for i in items]
        item = _try_place(rng, kind, room["bounds"], taken, zones)
        if item is None:
            continue
        item["room"] = room_index
        items.append(item)
        if kind == "table":
            for chair in _chairs_for(
                rng, item, room["bounds"], [furniture_rect(i) for i in items[:-1]], zones
            ):
                chair["room"] = room_index
                items.append(chair)
    return items


# ---------------------------------------------------------------------------------------- objects


def _surface_slots(
    furniture: list[dict[str, Any]], room_index: int, height: float
) -> list[tuple[int, Surface]]:
    return [
        (k, s)
        for k, f in enumerate(furniture)
        if f["room"] == room_index
        for s in furniture_surfaces(f["kind"], f["size"])
        if s.clearance >= height + 0.03
    ]


def _place_on_surface(
    rng: np.random.Generator, item: dict[str, Any], surface: Surface, half: float
) -> list[float] | None:
    x0, y0, x1, y1 = surface.rect
    if x1 - x0 < 2 * half or y1 - y0 < 2 * half:
        return None
    local = (rng.uniform(x0 + half, x1 - half), rng.uniform(y0 + half, y1 - half))
    dx, dy = rotate(local, item["yaw"])
    return [_r(item["center"][0] + dx), _r(item["center"][1] + dy), _r(surface.z)]


def _place_on_floor(
    rng: np.random.Generator,
    room: list[float],
    half: float,
    furniture: list[dict[str, Any]],
    zones: list[list[float]],
) -> list[float] | None:
    margin = WALL_THICKNESS + half + 0.05
    x = rng.uniform(room[0] + margin, room[2] - margin)
    y = rng.uniform(room[1] + margin, room[3] - margin)
    rect = [x - half, y - half, x + half, y + half]
    if any(_overlaps(rect, z) for z in zones) or any(
        _overlaps(rect, furniture_rect(f), gap=0.1) for f in furniture
    ):
        return None
    return [_r(x), _r(y), 0.0]


def _place_object(
    rng: np.random.Generator, category: str, room_index: int, scene: dict[str, Any], zones: list[list[float]]
) -> dict[str, Any] | None:
    cat = CATEGORIES[category]
    scale = _uniform(rng, cat.scale_range)
    half = cat.footprint * scale
    slots = (
        _surface_slots(scene["furniture"], room_index, cat.height * scale) if "surface" in cat.places else []
    )
    for _ in range(25):
        on_floor = "floor" in cat.places and (not slots or rng.random() < 0.5)
        if on_floor:
            pos, support = (
                _place_on_floor(rng, scene["rooms"][room_index]["bounds"], half, scene["furniture"], zones),
                "floor",
            )
        else:
            k, surface = slots[int(rng.integers(len(slots)))]
            item = scene["furniture"][k]
            pos, support = _place_on_surface(rng, item, surface, half), item["id"]
        if pos is None or _crowded(pos, half, support, scene["objects"]):
            continue
        return {
            "category": category,
            "colour": str(rng.choice(cat.colours)),
            "scale": scale,
            "pos": pos,
            "yaw": _r(rng.uniform(0, 360)),
            "room": room_index,
            "support": support,
        }
    return None


def place_extra_object(
    rng: np.random.Generator, category: str, room_index: int, scene: dict[str, Any]
) -> bool:
    """Place one more ``category`` object in room ``room_index`` of ``scene`` (in place) by the generator's
    own rules (floor or furniture surface, clear of doors and other objects); False if it found no spot."""
    obj = _place_object(rng, category, room_index, scene, _door_zones(scene["doors"]))
    if obj is None:
        return False
    obj["id"] = f"{obj['category']}_{len(scene['objects'])}"
    scene["objects"].append(obj)
    return True


def _crowded(pos: list[float], half: float, support: str, objects: list[dict[str, Any]]) -> bool:
    for o in objects:
        other = CATEGORIES[o["category"]].footprint * o["scale"]
        gap = 0.05 if o["support"] == support else 0.35  # floor objects keep a walkway around them
        related = support == "floor" or o["support"] in ("floor", support)
        if related and math.dist(pos[:2], o["pos"][:2]) < half + other + gap:
            return True
    return False


def _populate(rng: np.random.Generator, scene: dict[str, Any], zones: list[list[float]]) -> None:
    used: set[str] = set()
    for i, room in enumerate(scene["rooms"]):
        pool = [c for c in ROOM_TYPES[room["type"]]["objects"] if c not in used]
        count = int(rng.integers(2, 5))
        for category in rng.permutation(pool):
            if count == 0:
                break
            obj = _place_object(rng, str(category), i, scene, zones)
            if obj is not None:
                obj["id"] = f"{obj['category']}_{len(scene['objects'])}"
                scene["objects"].append(obj)
                used.add(obj["category"])
                count -= 1


# ------------------------------------------------------------------------------------------ decor


def _decorate(rng: np.random.Generator, scene: dict[str, Any]) -> list[dict[str, Any]]:
    """Rugs, paintings and windows: purely visual (not obstacles, never targets)."""
    decor: list[dict[str, Any]] = []
    for i, room in enumerate(scene["rooms"]):
        x0, y0, x1, y1 = room["bounds"]
        if room["type"] in ("living room", "bedroom") and rng.random() < 0.7:
            w, d = rng.uniform(1.4, 2.2), rng.uniform(1.0, 1.6)
            cx, cy = (x0 + x1) / 2 + rng.uniform(-0.4, 0.4), (y0 + y1) / 2 + rng.uniform(-0.4, 0.4)
            decor.append(
                {
                    "kind": "rug",
                    "room": i,
                    "rect": _rl([cx - w / 2, cy - d / 2, cx + w / 2, cy + d / 2]),
                    "rgb": _rl(FABRIC_COLOURS[int(rng.integers(len(FABRIC_COLOURS)))]),
                }
            )
        for kind in ("painting", "window"):
            item = _wall_decor(rng, scene, i, kind)
            if item is not None:
                decor.append(item)
    return decor


def _wall_decor(
    rng: np.random.Generator, scene: dict[str, Any], room_index: int, kind: str
) -> dict[str, Any] | None:
    """A painting or window on a solid stretch of wall that no tall furniture stands against."""
    candidates = [s for s in room_walls(scene, room_index) if not s["door_above"]]
    if kind == "window":  # only outer walls have windows
        candidates = [s for s in candidates if _is_outer(scene, s)]
    width, height, z = (
        (rng.uniform(0.5, 0.9), rng.uniform(0.4, 0.65), 1.55)
        if kind == "painting"
        else (rng.uniform(0.8, 1.3), 0.95, 1.45)
    )
    for slab in rng.permutation(len(candidates)) if candidates else []:
        s = candidates[int(slab)]
        horizontal = s["side"] in ("north", "south")
        lo, hi = (s["rect"][0], s["rect"][2]) if horizontal else (s["rect"][1], s["rect"][3])
        if hi - lo < width + 0.4:
            continue
        c = rng.uniform(lo + width / 2 + 0.2, hi - width / 2 - 0.2)
        span = [c - width / 2, c + width / 2]
        if _blocked_by_tall_furniture(scene, room_index, s, span, z - height / 2):
            continue
        colours = rng.choice(list(COLOURS), 2, replace=False)
        return {
            "kind": kind,
            "room": room_index,
            "side": s["side"],
            "center": _r(c),
            "width": _r(width),
            "height": _r(height),
            "z": _r(z),
            "wall": _r(_wall_face(s)),
            "rgb": _rl(COLOURS[str(colours[0])]),
            "rgb2": _rl(COLOURS[str(colours[1])]),
        }
    return None


def _wall_face(slab: dict[str, Any]) -> float:
    """Coordinate of the slab face that looks into the room."""
    r = slab["rect"]
    return {"south": r[3], "north": r[1], "west": r[2], "east": r[0]}[slab["side"]]


def _is_outer(scene: dict[str, Any], slab: dict[str, Any]) -> bool:
    hb = house_bounds(scene)
    r = slab["rect"]
    return {
        "south": abs(r[1] - hb[1]) < 1e-6,
        "north": abs(r[3] - hb[3]) < 1e-6,
        "west": abs(r[0] - hb[0]) < 1e-6,
        "east": abs(r[2] - hb[2]) < 1e-6,
    }[slab["side"]]


def _blocked_by_tall_furniture(
    scene: dict[str, Any], room_index: int, slab: dict[str, Any], span: list[float], bottom: float
) -> bool:
    horizontal = slab["side"] in ("north", "south")
    near = [slab["rect"][0] - 0.7, slab["rect"][1] - 0.7, slab["rect"][2] + 0.7, slab["rect"][3] + 0.7]
    for f in scene["furniture"]:
        rect = furniture_rect(f)
        tall = f["size"][2] + (0.8 if f["kind"] == "tv_stand" else 0.0) > bottom - 0.05
        lo, hi = (rect[0], rect[2]) if horizontal else (rect[1], rect[3])
        if f["room"] == room_index and tall and _overlaps(rect, near) and lo < span[1] and span[0] < hi:
            return True
    return False


# ------------------------------------------------------------------------------------ connectivity


def _connected(scene: dict[str, Any]) -> bool:
    """Can the agent walk between every room (on the movement lattice)?"""
    lattice = Lattice.for_scene(scene, scene_obstacles(scene))
    free = np.flatnonzero(lattice.free)
    if free.size == 0:
        return False
    component = lattice.component(free[0])
    reached_rooms = {room_of(scene, lattice.points[i]) for i in component}
    largest_is_main = len(component) >= 0.6 * free.size
    return largest_is_main and reached_rooms >= set(range(len(scene["rooms"])))


# ------------------------------------------------------------------------------------------ public


def generate_scene(seed: int, n_rooms: int | None = None) -> dict[str, Any]:
    """A random home with 1-3 rooms (``n_rooms`` fixes it), reproducible from ``seed``.

    The result is a JSON-safe dict; pass it to :func:`envs.navigation.mjcf.scene_to_mjcf` for the MJCF.
    """
    if n_rooms is not None and n_rooms not in (1, 2, 3):
        raise ValueError(f"n_rooms must be 1, 2 or 3 (or None for random), got {n_rooms!r}")
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 4)) if n_rooms is None else n_rooms
    for _ in range(100):
        scene = _attempt(rng, n)
        if scene is not None:
            scene["seed"] = int(seed)
            validate_scene(scene)
            return scene
    raise RuntimeError(f"could not generate a connected scene for seed {seed} in 100 attempts")


def _attempt(rng: np.random.Generator, n: int) -> dict[str, Any] | None:
    bounds, doors = _layout(rng, n)
    kinds = rng.choice(list(ROOM_TYPES), n, replace=False)
    scene: dict[str, Any] = {
        "format": SCENE_FORMAT,
        "seed": 0,
        "wall_height": _uniform(rng, (2.6, 2.9)),
        "wall_thickness": WALL_THICKNESS,
        "rooms": [_room_style(rng, str(k), b) for k, b in zip(kinds, bounds)],
        "doors": doors,
        "furniture": [],
        "objects": [],
        "decor": [],
        "lighting": {"ambient": _uniform(rng, (0.28, 0.4)), "headlight": _uniform(rng, (0.25, 0.4))},
    }
    zones = _door_zones(doors)
    for i, room in enumerate(scene["rooms"]):
        scene["furniture"] += _furnish(rng, i, room, zones)
    for k, item in enumerate(scene["furniture"]):
        item["id"] = f"{item['kind']}_{k}"
    _populate(rng, scene, zones)
    if len(scene["objects"]) < 3 or not _connected(scene):
        return None
    scene["decor"] = _decorate(rng, scene)
    return scene


_REQUIRED: dict[str, type | tuple[type, ...]] = {
    "rooms": list,
    "doors": list,
    "furniture": list,
    "objects": list,
    "decor": list,
    "wall_height": (int, float),
}


def validate_scene(scene: object) -> None:
    """Raise :class:`SceneError` naming the first malformed field of a scene dict."""
    if not isinstance(scene, dict):
        raise SceneError(f"a scene must be a dict, got {type(scene).__name__}")
    if scene.get("format") != SCENE_FORMAT:
        raise SceneError(f"scene['format'] must be {SCENE_FORMAT!r}, got {scene.get('format')!r}")
    for key, kind in _REQUIRED.items():
        if not isinstance(scene.get(key), kind):
            raise SceneError(f"scene[{key!r}] must be a {kind}, got {type(scene.get(key)).__name__}")
    if not 1 <= len(scene["rooms"]) <= 8:
        raise SceneError(f"scene['rooms'] must hold 1-8 rooms, got {len(scene['rooms'])}")
    ids = [f["id"] for f in scene["furniture"]] + [o["id"] for o in scene["objects"]]
    if len(ids) != len(set(ids)):
        raise SceneError(f"furniture and object ids must be unique, got duplicates in {sorted(ids)}")
    for obj in scene["objects"]:
        if obj.get("category") not in CATEGORIES:
            raise SceneError(
                f"object {obj.get('id')!r}: unknown category {obj.get('category')!r}; "
                f"known: {sorted(CATEGORIES)}"
            )
        if obj.get("colour") not in COLOURS:
            raise SceneError(
                f"object {obj.get('id')!r}: unknown colour {obj.get('colour')!r}; known: {sorted(COLOURS)}"
            )
    for item in scene["furniture"]:
        if item.get("kind") not in FURNITURE:
            raise SceneError(
                f"furniture {item.get('id')!r}: unknown kind {item.get('kind')!r}; known: {sorted(FURNITURE)}"
            )
        if int(item["yaw"]) % 90 != 0:
            raise SceneError(
                f"furniture {item['id']!r}: yaw must be a multiple of 90 degrees, got {item['yaw']}"
            )
