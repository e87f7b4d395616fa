"""MJCF for the scene's objects, written as ElementTree elements that the scene adds to robosuite's model.

robosuite computes inertia from collision geoms only (``inertiagrouprange="0 0"``), so every part is a
pair: a collision geom in group 0 (never drawn) and a visual twin in group 1 (drawn and segmented).
Colours and surface patterns are set per episode on the visual geoms, so one compiled model serves every
episode of a family.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from envs.manipulation.shapes import SHAPE_HEIGHT, SHAPES, Piece, prism_vertices

OBJECT_DENSITY = 400.0  # kg/m^3: a 4 cm cube weighs 26 g
OBJECT_FRICTION = "1.5 0.01 0.0001"

# Surface patterns for the visual subset: grey-scale textures that the per-episode colour tints.
PATTERNS: dict[str, dict[str, str] | None] = {
    "plain": None,
    "checkered": {
        "builtin": "checker",
        "rgb1": "1 1 1",
        "rgb2": "0.2 0.2 0.2",
        "width": "32",
        "height": "32",
    },
    "speckled": {
        "builtin": "flat",
        "rgb1": "1 1 1",
        "rgb2": "1 1 1",
        "mark": "random",
        "random": "0.25",
        "markrgb": "0.1 0.1 0.1",
        "width": "12",
        "height": "12",
    },
}
PATTERN_TEXREPEAT = {"checkered": "2 2", "speckled": "1 1"}


@dataclass(frozen=True)
class BoxPart:
    """An axis-aligned box part of a static fixture, in the fixture's frame."""

    pos: tuple[float, float, float]
    half: tuple[float, float, float]


def pattern_assets() -> list[ET.Element]:
    """Textures and materials of the surface patterns (``eb_pattern_<name>``)."""
    out = []
    for name, tex in PATTERNS.items():
        if tex is None:
            continue
        out.append(ET.Element("texture", {"name": f"eb_tex_{name}", "type": "cube", **tex}))
        out.append(
            ET.Element(
                "material",
                {
                    "name": f"eb_pattern_{name}",
                    "texture": f"eb_tex_{name}",
                    "texrepeat": PATTERN_TEXREPEAT[name],
                    "specular": "0.1",
                },
            )
        )
    return out


def shape_mesh_assets() -> list[ET.Element]:
    """One mesh asset per convex prism piece of every shape (``eb_mesh_<shape>_<i>``)."""
    out = []
    for key, spec in SHAPES.items():
        for i, piece in enumerate(spec.pieces):
            if piece.kind == "mesh":
                verts = prism_vertices(piece.polygon, SHAPE_HEIGHT)
                out.append(ET.Element("mesh", {"name": f"eb_mesh_{key}_{i}", "vertex": _fmt(verts.ravel())}))
    return out


def shape_body(name: str, shape: str, pos: Iterable[float]) -> ET.Element:
    """A free body holding one shape; its geoms are ``<name>_c<i>`` (collision) and ``<name>_v<i>`` (visual).

    ``gravcomp="1"``: parked bodies float where they are put; the scene sets it to 0 for bodies in use.
    """
    body = ET.Element("body", {"name": name, "pos": _fmt(pos), "gravcomp": "1"})
    ET.SubElement(body, "freejoint", {"name": f"{name}_joint"})
    for i, piece in enumerate(SHAPES[shape].pieces):
        attrs = _piece_attrs(shape, i, piece)
        _add_geom_pair(body, f"{name}_{{}}{i}", attrs)
    return body


def sponge_body(name: str, half: tuple[float, float, float], pos: Iterable[float]) -> ET.Element:
    """A free box (the cleaner) with a grippy surface."""
    body = ET.Element("body", {"name": name, "pos": _fmt(pos), "gravcomp": "1"})
    ET.SubElement(body, "freejoint", {"name": f"{name}_joint"})
    _add_geom_pair(body, f"{name}_{{}}0", {"type": "box", "size": _fmt(half)})
    return body


#: The distractor pool every family's scene holds, parked under the floor unless a robustness variant places
#: some: static boxes of kinds no instruction names (so a distractor never makes an instruction ambiguous),
#: fixed in place like the containers (static bodies add no degrees of freedom, so clean episodes keep
#: their exact physics). ``slot -> (kind, half extents)``.
DISTRACTORS: dict[str, tuple[str, tuple[float, float, float]]] = {
    f"{kind}_{i // 3}": (kind, half)
    for i, (kind, half) in enumerate(
        [
            ("tile", (0.026, 0.026, 0.005)),
            ("bar", (0.045, 0.012, 0.012)),
            ("block", (0.032, 0.02, 0.015)),
        ]
        * 2
    )
}


def distractor_bodies() -> list[ET.Element]:
    """The static bodies of :data:`DISTRACTORS` (origin at the centre of the bottom face)."""
    return [
        fixture_body(slot, [BoxPart((0.0, 0.0, half[2]), half)]) for slot, (_, half) in DISTRACTORS.items()
    ]


def fixture_body(name: str, parts: list[BoxPart]) -> ET.Element:
    """A static fixture (container, shape sorter) made of boxes; placed per episode through ``body_pos``."""
    body = ET.Element("body", {"name": name, "pos": "0 0 -1"})
    for i, part in enumerate(parts):
        _add_geom_pair(
            body, f"{name}_{{}}{i}", {"type": "box", "size": _fmt(part.half), "pos": _fmt(part.pos)}
        )
    return body


def area_body(name: str, cells: np.ndarray, cell_half: float, thickness: float) -> ET.Element:
    """A static marked area: one thin visual-only tile per dirt cell (``<name>_v<i>``), no collision."""
    body = ET.Element("body", {"name": name, "pos": "0 0 -1"})
    for i, (x, y) in enumerate(cells):
        ET.SubElement(
            body,
            "geom",
            {
                "name": f"{name}_v{i}",
                "type": "box",
                "size": _fmt((cell_half, cell_half, thickness / 2)),
                "pos": _fmt((x, y, thickness / 2)),
                "group": "1",
                "contype": "0",
                "conaffinity": "0",
            },
        )
    return body


def container_parts(inner: float, wall: float, height: float, floor: float) -> list[BoxPart]:
    """An open square box: floor plus four walls, origin at the centre of its bottom face."""
    outer_half = inner / 2 + wall
    parts = [BoxPart((0.0, 0.0, floor / 2), (outer_half, outer_half, floor / 2))]
    return parts + _walls(inner, wall, height)


def sorter_parts(inner: float, wall: float, height: float, lid: float, hole: float) -> list[BoxPart]:
    """A hollow box whose lid has one square hole in its centre; origin at the centre of the bottom face."""
    parts = _walls(inner, wall, height)
    z = height - lid / 2
    side = (inner - hole) / 4  # half-width of the lid strips around the hole
    offset = hole / 2 + side
    parts.append(BoxPart((offset, 0.0, z), (side, inner / 2, lid / 2)))
    parts.append(BoxPart((-offset, 0.0, z), (side, inner / 2, lid / 2)))
    parts.append(BoxPart((0.0, offset, z), (hole / 2, side, lid / 2)))
    parts.append(BoxPart((0.0, -offset, z), (hole / 2, side, lid / 2)))
    return parts


def camera_element(
    name: str, pos: Iterable[float], target: Iterable[float], fovy: float, up: Iterable[float] = (0, 0, 1)
) -> ET.Element:
    """A fixed camera at ``pos`` looking at ``target``; ``up`` (world) points up in the image."""
    right, up_axis = camera_axes(pos, target, up)
    return ET.Element(
        "camera",
        {"name": name, "pos": _fmt(list(pos)), "xyaxes": _fmt([*right, *up_axis]), "fovy": f"{fovy:g}"},
    )


def camera_axes(
    pos: Iterable[float], target: Iterable[float], up: Iterable[float] = (0, 0, 1)
) -> tuple[np.ndarray, np.ndarray]:
    """The camera frame's x (image right) and y (image up) axes in the world, looking from ``pos`` at
    ``target`` with world ``up`` up in the image (MuJoCo's ``xyaxes``)."""
    p, t = np.asarray(list(pos), float), np.asarray(list(target), float)
    forward = (t - p) / np.linalg.norm(t - p)
    right = np.cross(forward, np.asarray(list(up), float))
    right /= np.linalg.norm(right)
    return right, np.cross(right, forward)


def _walls(inner: float, wall: float, height: float) -> list[BoxPart]:
    half_h = height / 2
    off = inner / 2 + wall / 2
    long_half = inner / 2 + wall
    return [
        BoxPart((off, 0.0, half_h), (wall / 2, long_half, half_h)),
        BoxPart((-off, 0.0, half_h), (wall / 2, long_half, half_h)),
        BoxPart((0.0, off, half_h), (inner / 2, wall / 2, half_h)),
        BoxPart((0.0, -off, half_h), (inner / 2, wall / 2, half_h)),
    ]


def _piece_attrs(shape: str, index: int, piece: Piece) -> dict[str, str]:
    if piece.kind == "mesh":
        return {"type": "mesh", "mesh": f"eb_mesh_{shape}_{index}"}
    return {"type": piece.kind, "size": _fmt(piece.size)}


def _add_geom_pair(body: ET.Element, name_pattern: str, attrs: dict[str, str]) -> None:
    ET.SubElement(
        body,
        "geom",
        {
            "name": name_pattern.format("c"),
            **attrs,
            "group": "0",
            "density": f"{OBJECT_DENSITY:g}",
            "friction": OBJECT_FRICTION,
        },
    )
    ET.SubElement(
        body,
        "geom",
        {"name": name_pattern.format("v"), **attrs, "group": "1", "contype": "0", "conaffinity": "0"},
    )


def _fmt(values: Iterable[float]) -> str:
    return " ".join(f"{float(v):.6g}" for v in values)
