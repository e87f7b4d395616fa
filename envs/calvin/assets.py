"""URDFs of the play-table, blocks, floor and robot, generated from primitives and written to a cache.

CALVIN's own table meshes are not ours to ship, so the table is built here from boxes and cylinders with
scene D's joint positions, ranges and link names (see docs/guide/calvin.md for where it differs from the original).
The robot is the Franka Panda of the ``pybullet_data`` package with CALVIN's evaluation additions:
longer fingers with gel pads at their tips, a ``tcp`` link 0.14 m down the hand's z axis and a
``gripper_cam`` link. Parts the policy grips (switch bar, drawer handle, fingers) have the shapes and sizes
of calvin_env's URDFs and meshes (measured there, written here as boxes and lofted convex meshes).

Files are content-addressed (``name-<hash>.urdf``) and written atomically, so parallel workers share them
and a given version of this module always produces byte-identical assets. :func:`generated_assets` dresses
the table, floor and fingers as CALVIN's look (generated wood and checker textures, CALVIN's colours; see
:mod:`envs.calvin.looks`); the ``*_urdf`` functions return the plain-coloured documents.
"""

from __future__ import annotations

import hashlib
import math
import os
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from envs.calvin import constants as C
from envs.calvin.looks import Look, dress_urdf
from envs.calvin.scenes import DEFAULT_SCENE, WOODS, SceneSpec, scene_spec
from envs.files import atomic_write_text

Vec3 = tuple[float, float, float]
RGBA = tuple[float, float, float, float]

WHITE: RGBA = (0.93, 0.93, 0.91, 1.0)
WOOD: RGBA = (0.80, 0.66, 0.48, 1.0)
DARK: RGBA = (0.15, 0.15, 0.15, 1.0)
GREY: RGBA = (0.45, 0.45, 0.45, 1.0)
FLOOR: RGBA = (0.35, 0.35, 0.37, 1.0)
# CALVIN's own colours where they differ (see envs/calvin/looks.py for the textured ones)
HANDLE_GREY: RGBA = (0.396, 0.396, 0.396, 1.0)
SWITCH_GREY: RGBA = (0.4, 0.4, 0.4, 1.0)
BLACK: RGBA = (0.0, 0.0, 0.0, 1.0)
WHITE_ARM: RGBA = (1.0, 1.0, 1.0, 1.0)  # the Panda's "panda_white"


def plain_wood(wood: str) -> RGBA:
    """A wood's mean colour, for round parts (they carry no texture)."""
    r, g, b = WOODS[wood]
    return (r / 255, g / 255, b / 255, 1.0)


WOOD_PLAIN: RGBA = plain_wood("wood")

# Grip points in their link frames (the scripted expert aims at them).
SLIDE_HANDLE: Vec3 = (0.14, 0.0, 0.035)  # door frame (x along the track, z out): under the handle's bar
# drawer frame (world-aligned when closed): just behind the bar's middle
DRAWER_HANDLE: Vec3 = (
    0.0,
    -0.235,
    0.05,
)
SWITCH_LEVER: Vec3 = (0.0, 0.042, 0.0)  # switch frame: y out of the panel, at the bar's inner face

# Boxes below are (min corner, max corner) in the built-in link frames, world scale. They are calvin_env's
# collision hulls (data/calvin_table_D/meshes/*_vhacd2.obj, loaded by urdf/calvin_table_D.urdf at scaling
# 0.8), turned into the built-in frames: the switch frame is CALVIN's; the drawer frame is CALVIN's turned
# -90 degrees about x (built-in y = -CALVIN z, built-in z = CALVIN y).
Box = tuple[Vec3, Vec3]
#: The switch: a 12 cm wide bar (x) standing 4.2-6.4 cm out of the panel (y) on two legs, 3.2 cm along
#: the slope (z; -z is up the slope). CALVIN: switch_link_vhacd2.obj, x +-0.0753, y 0-0.0804, z -0.0303-0.01.
SWITCH_BAR: Box = ((-0.0602, 0.0416, -0.0242), (0.0602, 0.0643, 0.008))
SWITCH_LEGS: tuple[Box, Box] = (
    ((-0.0602, 0.0, -0.0242), (-0.0396, 0.0416, 0.008)),
    ((0.0386, 0.0, -0.0242), (0.0602, 0.0416, 0.008)),
)
#: The drawer grip: a 24 cm long bar (x) 5.6 cm in front of the drawer's face on two posts.
#: CALVIN: drawer_link_vhacd2.obj convex_8 (bar) and convex_6/7 (posts).
DRAWER_BAR: Box = ((-0.0959, -0.2612, 0.0196), (0.0959, -0.2383, 0.0601))
DRAWER_POSTS: tuple[Box, Box] = (
    ((-0.1206, -0.2612, 0.0196), (-0.0959, -0.182, 0.0618)),
    ((0.0959, -0.2612, 0.0196), (0.1206, -0.182, 0.0618)),
)
#: The sliding door: a 2.2 cm thick panel, 28 cm along the track (x) and 24 cm up the slope (y), in the
#: cabinet-front frame (z out of the cabinet). CALVIN: slide_link_vhacd2.obj convex_0.
SLIDE_DOOR: Box = ((-0.0006, -0.1206, -0.0006), (0.2806, 0.1203, 0.0219))
#: Its handle: a 16 cm bar (y) 5.8-8 cm out of the door on two legs, 4.2 cm wide along the track (x).
#: CALVIN: convex_1 and convex_3 (legs), convex_2 and convex_4 (bar).
SLIDE_HANDLE_BAR: tuple[Box, Box] = (
    ((0.1192, -0.0577, 0.0564), (0.1608, -0.0292, 0.0801)),
    ((0.1192, -0.0292, 0.0575), (0.1608, 0.0811, 0.0801)),
)
SLIDE_HANDLE_LEGS: tuple[Box, Box] = (
    ((0.1192, -0.0803, 0.0219), (0.1608, -0.0577, 0.0801)),
    ((0.1192, 0.0574, 0.0219), (0.1608, 0.0811, 0.0575)),
)
#: The drawer box: front panel (convex_0), floor (convex_4), side walls (convex_2/3), back wall (convex_1+5).
DRAWER_FRONT: Box = ((-0.2209, -0.182, -0.0209), (0.2209, -0.1574, 0.0812))
DRAWER_FLOOR: Box = ((-0.1769, -0.1574, -0.0015), (0.1769, 0.038, 0.0214))
DRAWER_WALLS: tuple[Box, Box] = (
    ((-0.2015, -0.1574, -0.0015), (-0.1769, 0.038, 0.0812)),
    ((0.1769, -0.1574, -0.0015), (0.2015, 0.0609, 0.0812)),
)
DRAWER_BACK: Box = ((-0.2015, 0.038, -0.0015), (0.2015, 0.0609, 0.0812))


@dataclass(frozen=True)
class Geom:
    """A box (``size`` = full extents), cylinder (``size`` = (radius, length)) or mesh (``mesh`` = an OBJ
    file, unscaled; PyBullet collides with its convex hull) in a link frame."""

    kind: str
    size: tuple[float, ...]
    xyz: Vec3 = (0.0, 0.0, 0.0)
    rpy: Vec3 = (0.0, 0.0, 0.0)
    rgba: RGBA = WHITE
    collide: bool = True
    mesh: str = ""


@dataclass(frozen=True)
class Link:
    name: str
    geoms: tuple[Geom, ...] = ()
    mass: float = 0.0
    inertia_box: Vec3 = (0.1, 0.1, 0.1)  # extents of a box with the link's inertia
    contact: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class Joint:
    name: str
    kind: str  # "fixed" | "prismatic"
    parent: str
    child: str
    xyz: Vec3
    rpy: Vec3 = (0.0, 0.0, 0.0)
    axis: Vec3 = (1.0, 0.0, 0.0)
    limits: tuple[float, float] = (0.0, 0.0)


# --------------------------------------------------------------------------------------------- XML


def _num(v: float) -> str:
    return f"{v:.6g}" if abs(v) > 1e-12 else "0"


def _vec(v: tuple[float, ...], scale: float = 1.0) -> str:
    return " ".join(_num(x * scale) for x in v)


def _origin(parent: ET.Element, xyz: Vec3, rpy: Vec3, scale: float) -> None:
    ET.SubElement(parent, "origin", xyz=_vec(xyz, scale), rpy=_vec(rpy))


def _geometry(parent: ET.Element, g: Geom, scale: float) -> None:
    geo = ET.SubElement(parent, "geometry")
    if g.kind == "box":
        ET.SubElement(geo, "box", size=_vec(g.size, scale))
    elif g.kind == "cylinder":
        ET.SubElement(geo, "cylinder", radius=_num(g.size[0] * scale), length=_num(g.size[1] * scale))
    elif g.kind == "mesh":
        ET.SubElement(geo, "mesh", filename=g.mesh, scale=_vec((1.0, 1.0, 1.0), scale))
    else:
        raise ValueError(f"unknown geometry kind {g.kind!r}")


def _box_inertia(mass: float, extents: Vec3, scale: float) -> dict[str, str]:
    x, y, z = (e * scale for e in extents)
    return {
        "ixx": _num(mass * (y * y + z * z) / 12),
        "iyy": _num(mass * (x * x + z * z) / 12),
        "izz": _num(mass * (x * x + y * y) / 12),
        "ixy": "0",
        "ixz": "0",
        "iyz": "0",
    }


def _link_element(robot: ET.Element, link: Link, scale: float) -> None:
    el = ET.SubElement(robot, "link", name=link.name)
    if link.contact:
        contact = ET.SubElement(el, "contact")
        for key, value in link.contact.items():
            ET.SubElement(contact, key, value=_num(value))
    inertial = ET.SubElement(el, "inertial")
    _origin(inertial, (0, 0, 0), (0, 0, 0), scale)
    ET.SubElement(inertial, "mass", value=_num(link.mass))
    ET.SubElement(inertial, "inertia", _box_inertia(max(link.mass, 1e-3), link.inertia_box, scale))
    for i, g in enumerate(link.geoms):
        visual = ET.SubElement(el, "visual")
        _origin(visual, g.xyz, g.rpy, scale)
        _geometry(visual, g, scale)
        material = ET.SubElement(visual, "material", name=f"{link.name}_{i}")
        ET.SubElement(material, "color", rgba=_vec(g.rgba))
        if g.collide:
            collision = ET.SubElement(el, "collision")
            _origin(collision, g.xyz, g.rpy, scale)
            _geometry(collision, g, scale)


def _joint_element(robot: ET.Element, j: Joint, scale: float) -> None:
    el = ET.SubElement(robot, "joint", name=j.name, type=j.kind)
    ET.SubElement(el, "parent", link=j.parent)
    ET.SubElement(el, "child", link=j.child)
    _origin(el, j.xyz, j.rpy, scale)
    if j.kind != "fixed":
        ET.SubElement(el, "axis", xyz=_vec(j.axis))
        lo, hi = (v * scale for v in j.limits)
        ET.SubElement(el, "limit", lower=_num(lo), upper=_num(hi), effort="1000", velocity="10")


def urdf_text(name: str, links: list[Link], joints: list[Joint], scale: float = 1.0) -> str:
    """A URDF document for ``links`` and ``joints``; every length is multiplied by ``scale``."""
    robot = ET.Element("robot", name=name)
    for link in links:
        _link_element(robot, link, scale)
    for joint in joints:
        _joint_element(robot, joint, scale)
    ET.indent(robot)
    return '<?xml version="1.0"?>\n' + ET.tostring(robot, encoding="unicode") + "\n"


# ------------------------------------------------------------------------------------------- table


def _box(lo: Vec3, hi: Vec3, rgba: RGBA = WHITE, collide: bool = True) -> Geom:
    """An axis-aligned box from its min and max corners."""
    size = tuple(h - low for low, h in zip(lo, hi))
    centre = tuple((h + low) / 2 for low, h in zip(lo, hi))
    return Geom("box", size, centre, rgba=rgba, collide=collide)  # type: ignore[arg-type]


def _slope_box(
    x: tuple[float, float], s: tuple[float, float], t: tuple[float, float], rgba: RGBA = WHITE
) -> Geom:
    """A box on the cabinet's 60-degree front: ``s`` up the slope, ``t`` along the outward normal.

    The slope plane passes through the plank's front edge (y 0.02, z 0.44), like CALVIN's sliding door.
    """
    a = C.CABINET_SLOPE
    up, out = (0.0, math.cos(a), math.sin(a)), (0.0, -math.sin(a), math.cos(a))
    sc, tc = (s[0] + s[1]) / 2, (t[0] + t[1]) / 2
    centre = ((x[0] + x[1]) / 2, 0.02 + sc * up[1] + tc * out[1], C.WORK_SURFACE_Z + sc * up[2] + tc * out[2])
    return Geom("box", (x[1] - x[0], s[1] - s[0], t[1] - t[0]), centre, (a, 0.0, 0.0), rgba)


def _table_base(spec: SceneSpec) -> Link:
    """Everything fixed: table top, legs, the slider cabinet and the switch housing (all ``base_link``)."""
    top = C.WORK_SURFACE_Z
    geoms = (
        _box((-0.441, -0.181, 0.405), (0.441, 0.02, top), WOOD),  # table top in front of the cabinet
        *_legs_and_apron(spec.drawer[0]),
        _box((-0.441, 0.161, 0.40), (0.441, 0.181, 0.648)),  # cabinet back wall
        _box((-0.441, 0.13, 0.628), (0.441, 0.181, 0.648)),  # cabinet roof (LED and lightbulb sit on it)
        *_cabinet_sides(spec),
        Geom("cylinder", (0.036, 0.015), (spec.button[0], spec.button[1], top + 0.0075), rgba=GREY),
    )
    return Link("base_link", geoms, mass=0.0)


def _cabinet_sides(spec: SceneSpec) -> tuple[Geom, ...]:
    """The cabinet's side walls behind the front slope, 2 cm thick where the switch panel (flush with the
    door track) continues them to the table's end, else solid to the end; left wall first."""
    (inner_left, inner_right), wall, depth = spec.cabinet_inside, 0.02, (-0.16, 0.0)
    if spec.switch[0] < spec.slider_split:  # the switch is left of the cabinet
        left = (
            _slope_box((-0.441, inner_left - wall), (0.0, 0.217), (-0.05, 0.0)),
            _slope_box((inner_left - wall, inner_left), (0.0, 0.217), depth),
        )
        return (*left, _slope_box((inner_right, 0.441), (0.0, 0.217), depth))
    return (
        _slope_box((-0.441, inner_left), (0.0, 0.217), depth),
        _slope_box((inner_right, inner_right + wall), (0.0, 0.217), depth),
        _slope_box((inner_right + wall, 0.441), (0.0, 0.217), (-0.05, 0.0)),  # switch panel
    )


def _legs_and_apron(drawer_x: float) -> tuple[Geom, ...]:
    """CALVIN's open table: four 4 x 3.2 cm legs at the corners and a 10 cm apron under the top, solid
    beside the drawer (the drawer runs in the gap, centred on ``drawer_x``; the apron closes in on its front
    panel, 0.175 m left and 0.18 m right of its centre, so that no floor shows beside it)."""
    legs = tuple(
        _box(
            (min(sx * 0.40, sx * 0.441), min(sy * 0.148, sy * 0.181), 0.0),
            (max(sx * 0.40, sx * 0.441), max(sy * 0.148, sy * 0.181), 0.405),
        )
        for sx in (-1, 1)
        for sy in (-1, 1)
    )
    gap = (drawer_x - 0.175, drawer_x + 0.18)
    apron = (
        _box((-0.42, -0.16, 0.30), (gap[0], 0.16, 0.405)),  # solid left of the drawer
        _box((gap[1], -0.181, 0.30), (0.42, 0.16, 0.405)),  # right of the drawer, flush with the legs
        _box((gap[0], 0.14, 0.30), (gap[1], 0.16, 0.405)),  # behind the drawer
    )
    return legs + apron


def _slide_link() -> Link:
    """Sliding door in the cabinet-front frame (x along the track, y up the slope, z out of the cabinet) with
    CALVIN's arched handle; every box is one of CALVIN's collision hulls (see ``SLIDE_*``)."""
    handle = tuple(_box(lo, hi, DARK) for lo, hi in (*SLIDE_HANDLE_BAR, *SLIDE_HANDLE_LEGS))
    return Link("slide_link", (_box(*SLIDE_DOOR), *handle), mass=1.54, inertia_box=(0.28, 0.24, 0.022))


def _drawer_link() -> Link:
    """Open box below the table top with CALVIN's long bar grip, in the drawer frame (origin at the back of
    its bottom, x across, -y out); every box is one of CALVIN's collision hulls (see ``DRAWER_*``)."""
    box = [*(_box(lo, hi) for lo, hi in (DRAWER_FRONT, DRAWER_FLOOR, *DRAWER_WALLS, DRAWER_BACK))]
    grip = [_box(lo, hi, DARK) for lo, hi in (DRAWER_BAR, *DRAWER_POSTS)]
    return Link("drawer_link", tuple(box + grip), mass=4.23, inertia_box=(0.44, 0.24, 0.1))


def _button_link() -> Link:
    cap = Geom("cylinder", (0.03, 0.024), (0.0, 0.0, 0.012), rgba=DARK)
    return Link("button_link", (cap,), mass=0.15, inertia_box=(0.064, 0.064, 0.024))


def _switch_link() -> Link:
    """CALVIN's wide switch bar on two legs, in the cabinet-front frame (y out of the panel, -z up the slope,
    the direction it moves); the boxes are CALVIN's collision hulls (see ``SWITCH_*``)."""
    geoms = tuple(_box(lo, hi, GREY) for lo, hi in (SWITCH_BAR, *SWITCH_LEGS))
    return Link("switch_link", geoms, mass=0.24, inertia_box=(0.12, 0.064, 0.032))


def _lamp_links() -> list[Link]:
    led = Geom("box", (0.16, 0.04, 0.016), (0.0, 0.0, 0.008), rgba=C.LIGHT_OFF_RGBA)
    bulb = Geom("cylinder", (0.025, 0.041), (0.0, 0.028, 0.0205), rgba=C.LIGHT_OFF_RGBA)
    # top at 0.441: CALVIN's slider spots rest at z 0.461
    plank = _box((-0.28, -0.07, 0.0), (0.28, 0.07, 0.021), WOOD)
    return [
        Link("led_link", (led,), 0.2),
        Link("light_link", (bulb,), 0.17),
        Link("plank_link", (plank,), 2.8),
    ]


def _table_joints(spec: SceneSpec) -> list[Joint]:
    slope = C.CABINET_SLOPE
    return [
        Joint(
            "base__slide",
            "prismatic",
            "base_link",
            "slide_link",
            spec.slide,
            (slope, 0, 0),
            (-1, 0, 0),
            (0.0, spec.slide_travel),
        ),
        Joint(
            "base__drawer",
            "prismatic",
            "base_link",
            "drawer_link",
            spec.drawer,
            axis=(0, -1, 0),
            limits=C.DRAWER_RANGE,
        ),
        Joint(
            "base__button",
            "prismatic",
            "base_link",
            "button_link",
            spec.button,
            axis=(0, 0, -1),
            limits=C.BUTTON_RANGE,
        ),
        # switch frame: rotated 150 degrees about x, so -z points up the slope and +y out of the panel
        Joint(
            "base__switch",
            "prismatic",
            "base_link",
            "switch_link",
            spec.switch,
            (slope + math.pi / 2, 0, 0),
            (0, 0, -1),
            C.SWITCH_RANGE,
        ),
        Joint("base__led", "fixed", "base_link", "led_link", spec.led),
        Joint("base__light", "fixed", "base_link", "light_link", spec.lightbulb),
        Joint("base__plank", "fixed", "base_link", "plank_link", spec.plank),
    ]


def table_urdf(scale: float = 1.0, scene: str = DEFAULT_SCENE) -> str:
    """The play-table of ``scene``: ``base_link`` plus the seven CALVIN links, at ``scale`` times world size."""
    spec = scene_spec(scene)
    links = [_table_base(spec), _slide_link(), _drawer_link(), _button_link(), _switch_link(), *_lamp_links()]
    return urdf_text(f"calvin_table_{spec.name}_primitives", links, _table_joints(spec), scale)


def block_urdf(color: str, scale: float = 1.0, size: str | None = None) -> str:
    """A block: a box with CALVIN's mass and frictions, scene D's size for ``color`` unless ``size`` says
    ("small", "middle", "big")."""
    spec = C.BLOCKS[color] if size is None else C.block_spec(color, size)
    contact = {"lateral_friction": spec.lateral_friction, "spinning_friction": spec.spinning_friction}
    link = Link("base_link", (Geom("box", spec.size, rgba=spec.rgba),), spec.mass, spec.size, contact)
    return urdf_text(f"block_{color}", [link], [], scale)


def plane_urdf() -> str:
    """A 30 m floor with its top at z = 0."""
    return urdf_text("plane", [Link("planeLink", (_box((-15, -15, -0.02), (15, 15, 0.0), FLOOR),))], [])


# ------------------------------------------------------------------------------------------- robot

# CALVIN's evaluation fingers (calvin_env data/franka_panda/panda_longer_finger.urdf). Each finger collides as
# the convex hull of meshes/collision/longer_finger_v2.obj; a fixed ``finger_*_tip`` link on it carries a
# DIGIT gel pad (meshes/visual/digit_gel_only.STL, also its collision shape) whose dome is what touches a
# gripped object first. Both are rebuilt here as lofts through rectangular sections measured from those
# meshes, in the left finger's frame (metres; the joint moves it along +y, z runs from the hand to the tip);
# the right finger is the same turned pi about z, as in CALVIN.
#: Finger body: (z, x_lo, x_hi, y_lo, y_hi) sections; inner face 3.9-6.2 mm from the joint axis, tip at z
#: 0.0964.
FINGER_SECTIONS: tuple[tuple[float, float, float, float, float], ...] = (
    (0.0002, -0.0104, 0.0104, 0.0062, 0.0270),
    (0.0340, -0.0105, 0.0105, 0.0050, 0.0216),
    (0.0647, -0.0087, 0.0087, 0.0040, 0.0134),
    (0.0906, -0.0088, 0.0087, 0.0039, 0.0065),
    (0.0964, -0.0055, 0.0058, 0.0039, 0.0068),
)
#: Gel pad: (y, x_lo, x_hi, z_lo, z_hi) sections from its base on the finger's inner face (y 4.9 mm) to the
#: dome's apex 0.9 mm from the joint axis, centred 1.3 mm below the TCP (finger z 0.0816).
GEL_SECTIONS: tuple[tuple[float, float, float, float, float], ...] = (
    (0.0049, -0.0083, 0.0102, 0.0707, 0.0957),
    (0.0028, -0.0080, 0.0098, 0.0711, 0.0954),
    (0.0020, -0.0061, 0.0079, 0.0728, 0.0932),
    (0.0013, -0.0035, 0.0053, 0.0758, 0.0905),
    (0.0009, -0.0005, 0.0023, 0.0789, 0.0865),
)
#: The pad link's mass and contact as panda_longer_finger.urdf gives them (``finger_left_tip``). Its inertia
#: there (1 kg m^2) is not used: PyBullet (no URDF_USE_INERTIA_FROM_FILE) derives it from the shape, here as
#: there.
TIP_CONTACT = {"lateral_friction": 1.0, "spinning_friction": 0.001}
TIP_MASS = 0.0001


def finger_rings() -> list[list[Vec3]]:
    """The finger body's sections as rings of corners (x-y rectangles stacked along z)."""
    return [[(a, c, z), (b, c, z), (b, d, z), (a, d, z)] for z, a, b, c, d in FINGER_SECTIONS]


def gel_rings() -> list[list[Vec3]]:
    """The gel pad's sections as rings of corners (x-z rectangles stacked along y)."""
    return [[(a, y, c), (b, y, c), (b, y, d), (a, y, d)] for y, a, b, c, d in GEL_SECTIONS]


def loft_obj(rings: list[list[Vec3]]) -> str:
    """A closed convex OBJ mesh through ``rings`` (equal-length corner loops), triangles facing outward."""
    verts = [v for ring in rings for v in ring]
    n = len(rings[0])
    centre = np.mean(np.asarray(verts), axis=0)
    quads = [
        [r * n + i, r * n + (i + 1) % n, (r + 1) * n + (i + 1) % n, (r + 1) * n + i]
        for r in range(len(rings) - 1)
        for i in range(n)
    ]
    faces = [tri for q in quads for tri in ([q[0], q[1], q[2]], [q[0], q[2], q[3]])]
    last = (len(rings) - 1) * n
    faces += [[0, i, i + 1] for i in range(1, n - 1)] + [
        [last, last + i, last + i + 1] for i in range(1, n - 1)
    ]
    lines = ["# generated by envs/calvin/assets.py"] + [
        f"v {_num(x)} {_num(y)} {_num(z)}" for x, y, z in verts
    ]
    for f in faces:
        a, b, c = (np.asarray(verts[i]) for i in f)
        if np.dot(np.cross(b - a, c - a), a - centre) < 0:  # wind counter-clockwise seen from outside
            f = [f[0], f[2], f[1]]
        lines.append("f " + " ".join(str(i + 1) for i in f))
    return "\n".join(lines) + "\n"


def _finger_geoms(finger_obj: str, side: int) -> tuple[Geom, ...]:
    """The finger body (``side`` +1 left, -1 right: turned pi about z)."""
    return (Geom("mesh", (), rpy=(0.0, 0.0, 0.0 if side > 0 else math.pi), rgba=WHITE, mesh=finger_obj),)


def _add_tip_link(root: ET.Element, side: int, gel_obj: str) -> None:
    """CALVIN's ``finger_*_tip`` link: the gel pad, fixed to the finger, with its own contact parameters.

    Its frame is the finger's (CALVIN's sits on the pad; for a 0.1 g link that changes nothing)."""
    name, finger = (
        ("finger_left_tip", "panda_leftfinger") if side > 0 else ("finger_right_tip", "panda_rightfinger")
    )
    gel = Geom("mesh", (), rpy=(0.0, 0.0, 0.0 if side > 0 else math.pi), rgba=WHITE, mesh=gel_obj)
    _link_element(root, Link(name, (gel,), TIP_MASS, contact=dict(TIP_CONTACT)), 1.0)
    _joint_element(root, Joint(f"joint_{name}", "fixed", finger, name, (0.0, 0.0, 0.0)), 1.0)


def robot_urdf(pybullet_data_dir: str, detail: str = "collision", mesh_dir: Path | None = None) -> str:
    """Panda with CALVIN's evaluation additions; ``detail`` = "visual" (detailed meshes) or "collision".

    "collision" draws the arm with its convex collision meshes: TinyRenderer's cost grows with the
    triangle count, and the detailed meshes (over a million bytes of OBJ per link) triple a frame's time.
    The finger and gel-pad meshes are written (content-addressed) to ``mesh_dir`` (default: the cache).
    """
    if detail not in ("visual", "collision"):
        raise ValueError(f"robot detail must be 'visual' or 'collision', got {detail!r}")
    src = Path(pybullet_data_dir) / "franka_panda" / "panda.urdf"
    root = ET.fromstring(src.read_text())
    pd_meshes = (Path(pybullet_data_dir) / "franka_panda").as_posix()
    for mesh in root.iter("mesh"):
        name = mesh.get("filename", "").replace("package://", "")
        if detail == "collision":
            name = name.replace("meshes/visual/", "meshes/collision/")
        mesh.set("filename", f"{pd_meshes}/{name}")
    d = mesh_dir or default_cache_dir()
    finger_obj = write_cached(d, "finger_longer", loft_obj(finger_rings()), ".obj")
    gel_obj = write_cached(d, "finger_gel", loft_obj(gel_rings()), ".obj")
    for side, finger in ((1, "panda_leftfinger"), (-1, "panda_rightfinger")):
        _replace_geoms(root, finger, _finger_geoms(finger_obj, side))
    # the camera is drawn but does not collide (CALVIN's gripper_cam link has a visual box only)
    _add_fixed_link(
        root,
        "gripper_cam",
        C.GRIPPER_CAMERA_XYZ,
        C.GRIPPER_CAMERA_RPY,
        Geom("box", (0.08, 0.025, 0.01), rgba=WHITE, collide=False),
    )
    _add_fixed_link(root, "tcp", (0.0, 0.0, C.TCP_OFFSET), (0.0, 0.0, 0.0), None)
    for side in (1, -1):
        _add_tip_link(root, side, gel_obj)
    ET.indent(root)
    return '<?xml version="1.0"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def _replace_geoms(root: ET.Element, link_name: str, geoms: tuple[Geom, ...]) -> None:
    link = next(el for el in root.iter("link") if el.get("name") == link_name)
    for tag in ("visual", "collision"):
        for el in link.findall(tag):
            link.remove(el)
    for i, g in enumerate(geoms):
        visual = ET.SubElement(link, "visual")
        _origin(visual, g.xyz, g.rpy, 1.0)
        _geometry(visual, g, 1.0)
        ET.SubElement(ET.SubElement(visual, "material", name=f"{link_name}_{i}"), "color", rgba=_vec(g.rgba))
        if g.collide:
            collision = ET.SubElement(link, "collision")
            _origin(collision, g.xyz, g.rpy, 1.0)
            _geometry(collision, g, 1.0)


def _add_fixed_link(root: ET.Element, name: str, xyz: Vec3, rpy: Vec3, geom: Geom | None) -> None:
    link = Link(
        name, (geom,) if geom else (), mass=1e-5 if geom is None else 0.2, inertia_box=(0.01, 0.01, 0.01)
    )
    _link_element(root, link, 1.0)
    _joint_element(root, Joint(f"{name}_joint", "fixed", "panda_hand", name, xyz, rpy), 1.0)


# ------------------------------------------------------------------------------------------- cache


@dataclass(frozen=True)
class AssetPaths:
    """Files of one generated scene."""

    table: str
    robot: str
    plane: str
    blocks: dict[str, str]


def default_cache_dir() -> Path:
    """``$SPATIAL_ARENA_CACHE/calvin`` or ``~/.cache/spatial_arena/calvin``."""
    root = os.environ.get("SPATIAL_ARENA_CACHE") or os.path.join(
        os.path.expanduser("~"), ".cache", "spatial_arena"
    )
    return Path(root) / "calvin"


def write_cached(directory: Path, stem: str, text: str, suffix: str = ".urdf") -> str:
    """Write ``text`` once as ``stem-<sha256 prefix><suffix>`` (atomic rename) and return its path."""
    digest = hashlib.sha256(text.encode()).hexdigest()[:16]
    path = directory / f"{stem}-{digest}{suffix}"
    if not path.exists():
        atomic_write_text(path, text)
    return path.as_posix()


def table_look(spec: SceneSpec) -> Look:
    """The table as CALVIN shows scene ``spec``: its table wood on the table, cabinet and plank, its door
    wood on the sliding door and drawer, grey handles and switch, a black button; the button's housing is
    part of the table."""
    doors = {WHITE: spec.door_wood, WOOD: spec.door_wood}
    return Look(
        textured={WHITE: spec.table_wood, WOOD: spec.table_wood},
        recolour={
            "*": {DARK: HANDLE_GREY, GREY: SWITCH_GREY},
            "button_link": {DARK: BLACK},
            "base_link": {GREY: plain_wood(spec.table_wood)},
        },
        link_textured={}
        if spec.door_wood == spec.table_wood
        else {"slide_link": doors, "drawer_link": doors},
    )


#: Scene D's table as CALVIN shows it: wood everywhere but grey handles and switch and a black button.
TABLE_LOOK = table_look(scene_spec(DEFAULT_SCENE))
FLOOR_LOOK = Look(textured={FLOOR: "checker"})
#: CALVIN's longer fingers are white, like the rest of the arm.
ROBOT_LOOK = Look(
    textured={}, recolour={f"panda_{side}finger": {GREY: WHITE_ARM} for side in ("left", "right")}
)


def generated_assets(
    pybullet_data_dir: str,
    robot_detail: str = "collision",
    cache_dir: Path | None = None,
    scene: str = DEFAULT_SCENE,
) -> AssetPaths:
    """Write (or reuse) every generated URDF of ``scene`` and return their paths."""
    d, spec = cache_dir or default_cache_dir(), scene_spec(scene)
    blocks = {c: write_cached(d, f"block_{c}", block_urdf(c, size=size)) for c, size in spec.blocks}
    table = dress_urdf(table_urdf(scene=spec.name), table_look(spec), d, "table")
    return AssetPaths(
        table=write_cached(d, f"calvin_table_{spec.name}", table),
        robot=write_cached(
            d,
            f"panda_longer_finger_{robot_detail}",
            dress_urdf(robot_urdf(pybullet_data_dir, robot_detail, d), ROBOT_LOOK, d, "robot"),
        ),
        plane=write_cached(d, "plane", dress_urdf(plane_urdf(), FLOOR_LOOK, d, "plane")),
        blocks=blocks,
    )


# The original CALVIN data layout (a user's ``calvin_env/data`` folder), loaded with global scaling 0.8.
def official_layout(scene: str = DEFAULT_SCENE) -> dict[str, str]:
    """CALVIN's files of ``scene`` under calvin_env's ``data/``: table, robot, plane, then the blocks in the
    scene's own order and sizes (``blocks/block_<colour>_<size>.urdf``)."""
    spec = scene_spec(scene)
    return {
        "table": f"calvin_table_{spec.name}/urdf/calvin_table_{spec.name}.urdf",
        "robot": "franka_panda/panda_longer_finger.urdf",
        "plane": "plane/plane.urdf",
        **{c: f"blocks/block_{c}_{size}.urdf" for c, size in spec.blocks},
    }


OFFICIAL_LAYOUT = official_layout()
OFFICIAL_SCALING = 0.8
#: In CALVIN's table URDF the frames of these links are turned +90 degrees about their x axis relative to
#: the built-in table's (their origins agree); ``link_pose`` reports them in the built-in convention.
OFFICIAL_ROTATED_LINKS = ("drawer_link", "button_link", "led_link", "light_link", "plank_link")
_UNROTATE_X90 = np.array([[1.0, 0.0, 0.0], [0.0, 0.0, 1.0], [0.0, -1.0, 0.0]])  # -90 degrees about x


def builtin_frame(link: str, rot: np.ndarray) -> np.ndarray:
    """A link rotation of CALVIN's table URDF in the built-in table's frame convention."""
    return rot @ _UNROTATE_X90 if link in OFFICIAL_ROTATED_LINKS else rot


def official_data_dir(path: str | os.PathLike[str]) -> Path:
    """A calvin_env ``data/`` folder, given it or the checkout holding it."""
    root = Path(path)
    return root / "data" if (root / "data" / "calvin_table_D").is_dir() else root


def official_assets(data_dir: str | os.PathLike[str], scene: str = DEFAULT_SCENE) -> AssetPaths:
    """Paths of CALVIN's original assets of ``scene`` under ``data_dir`` (a calvin_env checkout or its
    ``data/``); a clear error names any missing file."""
    root, layout = official_data_dir(data_dir), official_layout(scene)
    missing = [rel for rel in layout.values() if not (root / rel).is_file()]
    if missing:
        raise FileNotFoundError(
            f"--calvin-assets {data_dir}: missing {', '.join(missing)}; point it at a calvin_env checkout or its "
            "`data/` folder (the one holding calvin_table_D/, franka_panda/, blocks/ and plane/)"
        )
    p = {k: (root / rel).as_posix() for k, rel in layout.items()}
    blocks = {c: p[c] for c in scene_spec(scene).block_colors}
    return AssetPaths(p["table"], p["robot"], p["plane"], blocks)


def official_asset_hashes(data_dir: str | os.PathLike[str], scene: str = DEFAULT_SCENE) -> dict[str, str]:
    """sha256 prefixes of the CALVIN asset files :func:`official_assets` loads, keyed by relative path."""
    official_assets(data_dir, scene)  # the same error for a wrong folder
    root = official_data_dir(data_dir)
    return {
        rel: hashlib.sha256((root / rel).read_bytes()).hexdigest()[:16]
        for rel in official_layout(scene).values()
    }
