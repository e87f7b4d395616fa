"""URDFs of the play-table, blocks, floor and robot, generated from primitives and written to a cache.

CALVIN's own table meshes are not ours to ship, so the table is built here from boxes and cylinders with
scene D's joint positions, ranges and link names (see docs/guide/calvin.md for where it differs from the original).
The robot is the Franka Panda of the ``pybullet_data`` package with CALVIN's evaluation additions:
longer fingers, a ``tcp`` link 0.14 m down the hand's z axis and a ``gripper_cam`` link.

Files are content-addressed (``name-<hash>.urdf``) and written atomically, so parallel workers share them
and a given version of this module always produces byte-identical assets.
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
from envs.files import atomic_write_text

Vec3 = tuple[float, float, float]
RGBA = tuple[float, float, float, float]

WHITE: RGBA = (0.93, 0.93, 0.91, 1.0)
WOOD: RGBA = (0.80, 0.66, 0.48, 1.0)
DARK: RGBA = (0.15, 0.15, 0.15, 1.0)
GREY: RGBA = (0.45, 0.45, 0.45, 1.0)
FLOOR: RGBA = (0.35, 0.35, 0.37, 1.0)

# Grip points in their link frames (the scripted expert aims at them).
SLIDE_HANDLE: Vec3 = (0.14, 0.0, 0.035)  # door frame: x along the track, z out of the cabinet
DRAWER_HANDLE: Vec3 = (0.0, -0.235, 0.05)  # drawer frame (world-aligned when closed)
SWITCH_LEVER: Vec3 = (0.0, 0.042, 0.0)  # switch frame: y out of the panel (lever sticks out 6 cm)


@dataclass(frozen=True)
class Geom:
    """A box (``size`` = full extents) or cylinder (``size`` = (radius, length)) in a link frame."""

    kind: str
    size: tuple[float, ...]
    xyz: Vec3 = (0.0, 0.0, 0.0)
    rpy: Vec3 = (0.0, 0.0, 0.0)
    rgba: RGBA = WHITE
    collide: bool = True


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
    else:
        raise ValueError(f"unknown geometry kind {g.kind!r}")


def _box_inertia(mass: float, extents: Vec3, scale: float) -> dict[str, str]:
    x, y, z = (e * scale for e in extents)
    return {"ixx": _num(mass * (y * y + z * z) / 12), "iyy": _num(mass * (x * x + z * z) / 12),
            "izz": _num(mass * (x * x + y * y) / 12), "ixy": "0", "ixz": "0", "iyz": "0"}


def _link_element(robot: ET.Element, link: Link, scale: float) -> None:
    el = ET.SubElement(robot, "link", name=link.name)
    if link.contact:
        contact = ET.SubElement(el, "contact")
        for key, value in link.contact.items():
            ET.SubElement(contact, key, value=_num(value))
    inertial = ET.SubElement(el, "inertial")
    _origin(inertial, (0, 0, 0), (0, 0, 0), scale)
    ET.SubElement(inertial, "mass", value=_num(link.mass))
    ET.SubElement(inertial, "inertia", **_box_inertia(max(link.mass, 1e-3), link.inertia_box, scale))
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


def _slope_box(x: tuple[float, float], s: tuple[float, float], t: tuple[float, float], rgba: RGBA = WHITE) -> Geom:
    """A box on the cabinet's 60-degree front: ``s`` up the slope, ``t`` along the outward normal.

    The slope plane passes through the plank's front edge (y 0.02, z 0.44), like CALVIN's sliding door.
    """
    a = C.CABINET_SLOPE
    up, out = (0.0, math.cos(a), math.sin(a)), (0.0, -math.sin(a), math.cos(a))
    sc, tc = (s[0] + s[1]) / 2, (t[0] + t[1]) / 2
    centre = ((x[0] + x[1]) / 2, 0.02 + sc * up[1] + tc * out[1], C.WORK_SURFACE_Z + sc * up[2] + tc * out[2])
    return Geom("box", (x[1] - x[0], s[1] - s[0], t[1] - t[0]), centre, (a, 0.0, 0.0), rgba)


def _table_base() -> Link:
    """Everything fixed: table top, legs, the slider cabinet and the switch housing (all ``base_link``)."""
    top = C.WORK_SURFACE_Z
    geoms = (
        _box((-0.441, -0.181, 0.405), (0.441, 0.02, top), WOOD),  # table top in front of the cabinet
        _box((-0.441, -0.181, 0.0), (-0.411, 0.181, 0.405)),  # left side panel
        _box((0.411, -0.181, 0.0), (0.441, 0.181, 0.405)),  # right side panel
        _box((-0.411, 0.151, 0.0), (0.411, 0.181, 0.40)),  # back panel
        _box((-0.411, -0.181, 0.30), (0.0, -0.161, 0.405)),  # front apron left of the drawer
        _box((-0.441, 0.161, 0.40), (0.441, 0.181, 0.648)),  # cabinet back wall
        _box((-0.441, 0.13, 0.628), (0.441, 0.181, 0.648)),  # cabinet roof (LED and lightbulb sit on it)
        _slope_box((-0.441, -0.38), (0.0, 0.217), (-0.16, 0.0)),  # cabinet left wall, behind the front slope
        _slope_box((0.18, 0.20), (0.0, 0.217), (-0.16, 0.0)),  # cabinet right wall
        _slope_box((0.20, 0.441), (0.0, 0.217), (-0.05, 0.0)),  # switch panel, flush with the door track
        Geom("cylinder", (0.036, 0.015), (C.BUTTON_ORIGIN[0], C.BUTTON_ORIGIN[1], top + 0.0075), rgba=GREY),
    )
    return Link("base_link", geoms, mass=0.0)


def _slide_link() -> Link:
    """Sliding door in the cabinet-front frame: x along the track, y up the slope, z out of the cabinet."""
    door = Geom("box", (0.28, 0.21, 0.012), (0.14, 0.0, 0.012), rgba=WHITE)
    handle = Geom("box", (0.02, 0.10, 0.035), SLIDE_HANDLE, rgba=DARK)
    return Link("slide_link", (door, handle), mass=1.5, inertia_box=(0.28, 0.21, 0.012))


def _drawer_link() -> Link:
    """Open box below the table top, in the drawer frame (origin at its bottom, x across, -y out)."""
    geoms = (
        _box((-0.15, -0.18, 0.0), (0.15, 0.07, 0.01)),  # bottom
        _box((-0.16, -0.18, 0.0), (-0.15, 0.07, 0.07)),  # left wall
        _box((0.15, -0.18, 0.0), (0.16, 0.07, 0.07)),  # right wall
        _box((-0.16, 0.06, 0.0), (0.16, 0.07, 0.07)),  # back wall: under the table top even when open
        _box((-0.17, -0.195, -0.015), (0.17, -0.18, 0.08)),  # front panel
        # upright grip (easier to grasp from above than CALVIN's bar), 3 cm clear of the front panel
        Geom("box", (0.02, 0.015, 0.07), DRAWER_HANDLE, rgba=DARK),
        _box((-0.005, -0.2275, 0.02), (0.005, -0.195, 0.03), DARK),  # standoffs
        _box((-0.005, -0.2275, 0.07), (0.005, -0.195, 0.08), DARK),
    )
    return Link("drawer_link", geoms, mass=4.0, inertia_box=(0.32, 0.25, 0.08))


def _button_link() -> Link:
    cap = Geom("cylinder", (0.03, 0.024), (0.0, 0.0, 0.012), rgba=DARK)
    return Link("button_link", (cap,), mass=0.15, inertia_box=(0.064, 0.064, 0.024))


def _switch_link() -> Link:
    """A lever in the cabinet-front frame (y out of the panel, down-slope is -z), moving up the slope."""
    lever = Geom("box", (0.03, 0.06, 0.02), (0.0, 0.03, 0.0), rgba=GREY)
    return Link("switch_link", (lever,), mass=0.24, inertia_box=(0.03, 0.048, 0.016))


def _lamp_links() -> list[Link]:
    led = Geom("box", (0.16, 0.04, 0.016), (0.0, 0.0, 0.008), rgba=C.LIGHT_OFF_RGBA)
    bulb = Geom("cylinder", (0.025, 0.041), (0.0, 0.028, 0.0205), rgba=C.LIGHT_OFF_RGBA)
    plank = _box((-0.28, -0.07, 0.0), (0.28, 0.07, 0.021), WOOD)  # top at 0.441: CALVIN's slider spots rest at z 0.461
    return [Link("led_link", (led,), 0.2), Link("light_link", (bulb,), 0.17), Link("plank_link", (plank,), 2.8)]


def _table_joints() -> list[Joint]:
    slope = C.CABINET_SLOPE
    return [
        Joint("base__slide", "prismatic", "base_link", "slide_link", C.SLIDE_ORIGIN, (slope, 0, 0), (-1, 0, 0),
              C.SLIDE_RANGE),
        Joint("base__drawer", "prismatic", "base_link", "drawer_link", C.DRAWER_ORIGIN, axis=(0, -1, 0),
              limits=C.DRAWER_RANGE),
        Joint("base__button", "prismatic", "base_link", "button_link", C.BUTTON_ORIGIN, axis=(0, 0, -1),
              limits=C.BUTTON_RANGE),
        # switch frame: rotated 150 degrees about x, so -z points up the slope and +y out of the panel
        Joint("base__switch", "prismatic", "base_link", "switch_link", C.SWITCH_ORIGIN, (slope + math.pi / 2, 0, 0),
              (0, 0, -1), C.SWITCH_RANGE),
        Joint("base__led", "fixed", "base_link", "led_link", C.LED_ORIGIN),
        Joint("base__light", "fixed", "base_link", "light_link", C.LIGHTBULB_ORIGIN),
        Joint("base__plank", "fixed", "base_link", "plank_link", C.PLANK_ORIGIN),
    ]


def table_urdf(scale: float = 1.0) -> str:
    """The scene-D play-table: ``base_link`` plus the seven CALVIN links, at ``scale`` times world size."""
    links = [_table_base(), _slide_link(), _drawer_link(), _button_link(), _switch_link(), *_lamp_links()]
    return urdf_text("calvin_table_D_primitives", links, _table_joints(), scale)


def block_urdf(color: str, scale: float = 1.0) -> str:
    """One of scene D's blocks: a box with CALVIN's mass and frictions."""
    spec = C.BLOCKS[color]
    contact = {"lateral_friction": spec.lateral_friction, "spinning_friction": spec.spinning_friction}
    link = Link("base_link", (Geom("box", spec.size, rgba=spec.rgba),), spec.mass, spec.size, contact)
    return urdf_text(f"block_{color}", [link], [], scale)


def plane_urdf() -> str:
    """A 30 m floor with its top at z = 0."""
    return urdf_text("plane", [Link("planeLink", (_box((-15, -15, -0.02), (15, 15, 0.0), FLOOR),))], [])


# ------------------------------------------------------------------------------------------- robot

FINGER_LENGTH = 0.095  # from the finger joint (hand z 0.0584): the tip is 1.3 cm past the TCP
FINGER_THICKNESS = 0.012
FINGER_WIDTH = 0.02


def _finger_geoms(side: int) -> tuple[Geom, ...]:
    """A longer finger as one box; its inner face sits on the joint axis (``side`` +1 left, -1 right)."""
    y = side * FINGER_THICKNESS / 2
    pad = Geom("box", (FINGER_WIDTH, FINGER_THICKNESS, FINGER_LENGTH), (0.0, y, FINGER_LENGTH / 2), rgba=GREY)
    knuckle = Geom("box", (0.02, 0.02, 0.02), (0.0, side * 0.01, 0.01), rgba=WHITE, collide=False)
    return (pad, knuckle)


def robot_urdf(pybullet_data_dir: str, detail: str = "collision") -> str:
    """Panda with CALVIN's evaluation additions; ``detail`` = "visual" (detailed meshes) or "collision".

    "collision" draws the arm with its convex collision meshes: TinyRenderer's cost grows with the
    triangle count, and the detailed meshes (over a million bytes of OBJ per link) triple a frame's time.
    """
    if detail not in ("visual", "collision"):
        raise ValueError(f"robot detail must be 'visual' or 'collision', got {detail!r}")
    src = Path(pybullet_data_dir) / "franka_panda" / "panda.urdf"
    root = ET.fromstring(src.read_text())
    mesh_dir = (Path(pybullet_data_dir) / "franka_panda").as_posix()
    for mesh in root.iter("mesh"):
        name = mesh.get("filename", "").replace("package://", "")
        if detail == "collision":
            name = name.replace("meshes/visual/", "meshes/collision/")
        mesh.set("filename", f"{mesh_dir}/{name}")
    for side, finger in ((1, "panda_leftfinger"), (-1, "panda_rightfinger")):
        _replace_geoms(root, finger, _finger_geoms(side))
    _add_fixed_link(root, "gripper_cam", C.GRIPPER_CAMERA_XYZ, C.GRIPPER_CAMERA_RPY,
                    Geom("box", (0.08, 0.025, 0.01), rgba=WHITE))
    _add_fixed_link(root, "tcp", (0.0, 0.0, C.TCP_OFFSET), (0.0, 0.0, 0.0), None)
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
    link = Link(name, (geom,) if geom else (), mass=1e-5 if geom is None else 0.2, inertia_box=(0.01, 0.01, 0.01))
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
    root = os.environ.get("SPATIAL_ARENA_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "spatial_arena")
    return Path(root) / "calvin"


def write_cached(directory: Path, stem: str, text: str) -> str:
    """Write ``text`` once as ``stem-<sha256 prefix>.urdf`` (atomic rename) and return its path."""
    digest = hashlib.sha256(text.encode()).hexdigest()[:16]
    path = directory / f"{stem}-{digest}.urdf"
    if not path.exists():
        atomic_write_text(path, text)
    return path.as_posix()


def generated_assets(pybullet_data_dir: str, robot_detail: str = "collision",
                     cache_dir: Path | None = None) -> AssetPaths:
    """Write (or reuse) every generated URDF and return their paths."""
    d = cache_dir or default_cache_dir()
    blocks = {c: write_cached(d, f"block_{c}", block_urdf(c)) for c in C.BLOCK_COLORS}
    return AssetPaths(
        table=write_cached(d, "calvin_table_D", table_urdf()),
        robot=write_cached(d, f"panda_longer_finger_{robot_detail}", robot_urdf(pybullet_data_dir, robot_detail)),
        plane=write_cached(d, "plane", plane_urdf()),
        blocks=blocks,
    )


# The original CALVIN data layout (a user's ``calvin_env/data`` folder), loaded with global scaling 0.8.
OFFICIAL_LAYOUT = {
    "table": "calvin_table_D/urdf/calvin_table_D.urdf",
    "robot": "franka_panda/panda_longer_finger.urdf",
    "plane": "plane/plane.urdf",
    "red": "blocks/block_red_middle.urdf",
    "blue": "blocks/block_blue_small.urdf",
    "pink": "blocks/block_pink_big.urdf",
}
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


def official_assets(data_dir: str | os.PathLike[str]) -> AssetPaths:
    """Paths of CALVIN's original assets under ``data_dir`` (a calvin_env checkout or its ``data/``);
    a clear error names any missing file."""
    root = official_data_dir(data_dir)
    missing = [rel for rel in OFFICIAL_LAYOUT.values() if not (root / rel).is_file()]
    if missing:
        raise FileNotFoundError(
            f"--calvin-assets {data_dir}: missing {', '.join(missing)}; point it at a calvin_env checkout or its "
            "`data/` folder (the one holding calvin_table_D/, franka_panda/, blocks/ and plane/)"
        )
    p = {k: (root / rel).as_posix() for k, rel in OFFICIAL_LAYOUT.items()}
    return AssetPaths(p["table"], p["robot"], p["plane"], {c: p[c] for c in C.BLOCK_COLORS})


def official_asset_hashes(data_dir: str | os.PathLike[str]) -> dict[str, str]:
    """sha256 prefixes of the CALVIN asset files :func:`official_assets` loads, keyed by relative path."""
    official_assets(data_dir)  # the same error for a wrong folder
    root = official_data_dir(data_dir)
    return {rel: hashlib.sha256((root / rel).read_bytes()).hexdigest()[:16] for rel in OFFICIAL_LAYOUT.values()}
