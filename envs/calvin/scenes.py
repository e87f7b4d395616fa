"""CALVIN's four play-table scenes A, B, C and D as data: where the furniture sits, the blocks, the woods.

Every number is read from calvin_env's files (``conf/scene/calvin_scene_X.yaml`` and
``data/calvin_table_X/``: joint origins and ranges of ``urdf/calvin_table_X.urdf`` at CALVIN's scaling 0.8,
the cabinet walls of ``meshes/base_link.obj``, the mean colours of the textures its ``meshes/*.mtl``
name); nothing of calvin_env's is copied. One code path builds every scene from its :class:`SceneSpec`.

Two things differ between scenes beyond the furniture (docs/guide/calvin.md, "Scenes"):

- **Blocks.** Each scene lists its blocks in its own order with its own sizes, and CALVIN's ``scene_obs``
  follows that order: slot 0 of the blocks is red in scenes B and D, pink in A and blue in C. The task
  names keep the colours; :meth:`SceneSpec.block_slice` says where a colour sits.
- **Evaluation-style initial states.** CALVIN's evaluation places blocks at four fixed spots made for
  scene D; in B one of them is on the button and in C two are outside their cabinet compartment. Here
  each spot keeps its offset from the centre of the surface it belongs to (``table``, ``slider_left``,
  ``slider_right``; for the cabinet the centre of its compartment, between the cabinet's side wall and the
  door track's origin), taken in that scene: scene D's spots are CALVIN's exactly, and every spot of
  every scene lies inside its surface, clear of the furniture (``tests/envs/calvin/test_scenes.py``). (Moved
  with the surfaces instead, a cabinet spot in C lands 9 cm from the closed door's edge, where the hand
  lifting the block touches the door and a following ``place_in_slider`` cannot count.)
"""

from __future__ import annotations

from dataclasses import dataclass

Vec2 = tuple[float, float]
Vec3 = tuple[float, float, float]
Rect = tuple[Vec2, Vec2]  # (min x, min y), (max x, max y)

SCENE_NAMES = ("A", "B", "C", "D")
DEFAULT_SCENE = "D"

#: CALVIN's block sizes (metres, after scaling): x is the long side.
BLOCK_SIZES: dict[str, Vec3] = {
    "small": (0.04, 0.04, 0.04),
    "middle": (0.056, 0.04, 0.04),
    "big": (0.08, 0.04, 0.04),
}

#: Mean colours (0-255) of calvin_env's wood textures, by the colour they have (their file names repeat
#: across scenes with different pictures: scene A's ``dark_wood.png`` is not scene D's).
WOODS: dict[str, Vec3] = {
    "wood": (156.5, 117.0, 78.3),  # D's and B's dark_wood.png: scene D's table and doors
    "wood_dark": (120.7, 69.8, 46.3),  # A's and C's dark_wood.png
    "wood_light": (243.7, 195.9, 139.6),  # B's and D's light_wood.png
    "wood_warm": (158.8, 108.1, 63.7),  # wood.png (the same in every scene)
}

# CALVIN's sampling surfaces (x-y rectangles at z 0.46) and evaluation spots, both for scene D.
_D_SURFACES: dict[str, Rect] = {
    "table": ((0.0, -0.15), (0.35, -0.03)),
    "slider_left": ((-0.32, 0.05), (-0.16, 0.12)),
    "slider_right": ((-0.05, 0.05), (0.13, 0.12)),
}
_D_SPOTS: dict[str, tuple[Vec3, ...]] = {
    "table": (
        (5.00000896e-02, -1.20000177e-01, 4.59990009e-01),
        (2.29995412e-01, -1.19995140e-01, 4.59990010e-01),
    ),
    "slider_left": ((-2.40851662e-01, 9.24044687e-02, 4.60990009e-01),),
    "slider_right": ((7.03416330e-02, 9.24044687e-02, 4.60990009e-01),),
}


@dataclass(frozen=True)
class SceneSpec:
    """One CALVIN scene: world positions (metres, CALVIN's scaling applied) of the table's links, the
    sliding door's travel, the blocks in ``scene_obs`` order, the block surfaces and the woods."""

    name: str
    slide: Vec3
    drawer: Vec3
    button: Vec3
    switch: Vec3
    led: Vec3
    lightbulb: Vec3
    plank: Vec3
    slide_travel: float  # the door's joint range is (0, slide_travel); "left" is slide_travel
    blocks: tuple[tuple[str, str], ...]  # (colour, size name) in CALVIN's scene_obs order
    surfaces: dict[str, Rect]
    cabinet: Vec2  # x of the cabinet's inside walls (calvin_env's base_link mesh)
    table_wood: str  # WOODS key of the table (base_link) and the plank
    door_wood: str  # WOODS key of the sliding door and the drawer

    @property
    def block_colors(self) -> tuple[str, ...]:
        """The colours in ``scene_obs`` order (the order calvin_env loads them in)."""
        return tuple(c for c, _ in self.blocks)

    def block_size(self, color: str) -> Vec3:
        return BLOCK_SIZES[dict(self.blocks)[color]]

    def block_slice(self, color: str) -> slice:
        """Where block ``color``'s position + Euler angles sit in this scene's ``scene_obs``."""
        i = 6 + 6 * self.block_colors.index(color)
        return slice(i, i + 6)

    def scene_obs_labels(self) -> tuple[str, ...]:
        joints = ("slide", "drawer", "button", "switch", "lightbulb", "led")
        return joints + tuple(
            f"block_{c}_{k}" for c in self.block_colors for k in ("x", "y", "z", "ex", "ey", "ez")
        )

    def spots(self, surface: str) -> tuple[Vec3, ...]:
        """The evaluation spots on ``surface``: scene D's spots moved with the centre of the table surface,
        or of their cabinet compartment (between the cabinet's side wall and the door track's origin)."""
        dx, dy = self._region_centre(surface)
        ex, ey = SCENES[DEFAULT_SCENE]._region_centre(surface)
        return tuple((x + (dx - ex), y + (dy - ey), z) for x, y, z in _D_SPOTS[surface])

    def _region_centre(self, surface: str) -> Vec2:
        if surface == "table":
            return _centre(self.surfaces[surface])
        wall = self.cabinet[0] if surface == "slider_left" else self.cabinet[1]
        return ((wall + self.slider_split) / 2, _centre(self.surfaces[surface])[1])

    @property
    def cabinet_inside(self) -> Vec2:
        """x of the built-in cabinet's inside walls: calvin_env's, 2 cm further out (room for the hand)."""
        return (self.cabinet[0] - 0.02, self.cabinet[1] + 0.02)

    @property
    def slider_split(self) -> float:
        """x of the door's track origin: the left compartment lies below it, the right one above."""
        return self.slide[0]


def _centre(rect: Rect) -> Vec2:
    (x0, y0), (x1, y1) = rect
    return ((x0 + x1) / 2, (y0 + y1) / 2)


def _surfaces(table: Rect, left: Rect, right: Rect) -> dict[str, Rect]:
    return {"table": table, "slider_left": left, "slider_right": right}


# calvin_env gives 0.0609, 0.4949, 0.6478 and 0.5353; scene D has always used these roundings (< 0.3 mm)
_SWITCH_Y, _SWITCH_Z, _LAMP_Z, _SLIDE_Y, _SLIDE_Z = 0.061, 0.495, 0.648, 0.075, 0.535

SCENES: dict[str, SceneSpec] = {
    "A": SceneSpec(
        "A",
        slide=(-0.1, _SLIDE_Y, _SLIDE_Z),
        drawer=(0.1, 0.0, 0.32),
        button=(-0.28, -0.12, 0.46),
        switch=(0.3, _SWITCH_Y, _SWITCH_Z),
        led=(-0.28, 0.16, _LAMP_Z),
        lightbulb=(0.3, 0.132, _LAMP_Z),
        plank=(-0.1, 0.09, 0.42),
        slide_travel=0.28,
        blocks=(("pink", "small"), ("blue", "big"), ("red", "middle")),
        surfaces=_surfaces(
            ((-0.2, -0.15), (0.35, -0.03)), _D_SURFACES["slider_left"], _D_SURFACES["slider_right"]
        ),
        cabinet=(-0.36, 0.16),
        table_wood="wood_dark",
        door_wood="wood_dark",
    ),
    "B": SceneSpec(
        "B",
        slide=(0.088, _SLIDE_Y, _SLIDE_Z),
        drawer=(0.18, 0.0, 0.32),
        button=(0.28, -0.12, 0.46),
        switch=(-0.32, _SWITCH_Y, _SWITCH_Z),
        led=(0.28, 0.16, _LAMP_Z),
        lightbulb=(-0.32, 0.136, _LAMP_Z),
        plank=(0.08, 0.09, 0.42),
        slide_travel=0.304,
        blocks=(("red", "small"), ("blue", "big"), ("pink", "middle")),
        surfaces=_surfaces(
            ((-0.35, -0.15), (0.15, -0.03)), ((-0.12, 0.05), (0.06, 0.12)), ((0.15, 0.05), (0.33, 0.12))
        ),
        cabinet=(-0.18, 0.34),
        table_wood="wood_light",
        door_wood="wood_light",
    ),
    "C": SceneSpec(
        "C",
        slide=(0.06, _SLIDE_Y, _SLIDE_Z),
        drawer=(0.1, 0.0, 0.32),
        button=(-0.12, -0.12, 0.46),
        switch=(-0.32, _SWITCH_Y, _SWITCH_Z),
        led=(-0.12, 0.16, _LAMP_Z),
        lightbulb=(-0.32, 0.132, _LAMP_Z),
        plank=(0.08, 0.09, 0.42),
        slide_travel=0.24,
        blocks=(("blue", "small"), ("red", "big"), ("pink", "middle")),
        surfaces=_surfaces(_D_SURFACES["table"], ((-0.12, 0.05), (0.06, 0.12)), ((0.15, 0.05), (0.3, 0.12))),
        cabinet=(-0.18, 0.34),
        table_wood="wood_warm",
        door_wood="wood_dark",
    ),
    "D": SceneSpec(
        "D",
        slide=(-0.1, _SLIDE_Y, _SLIDE_Z),
        drawer=(0.18, 0.0, 0.32),
        button=(-0.12, -0.12, 0.46),
        switch=(0.3, _SWITCH_Y, _SWITCH_Z),
        led=(-0.12, 0.16, _LAMP_Z),
        lightbulb=(0.3, 0.132, _LAMP_Z),
        plank=(-0.1, 0.09, 0.42),
        slide_travel=0.28,
        blocks=(("red", "middle"), ("blue", "small"), ("pink", "big")),
        surfaces=dict(_D_SURFACES),
        cabinet=(-0.36, 0.16),
        table_wood="wood",
        door_wood="wood",
    ),
}


def scene_spec(name: str) -> SceneSpec:
    """The scene called ``name`` (A, B, C or D); one line naming the choices otherwise."""
    spec = SCENES.get(str(name).upper()) if isinstance(name, str) else None
    if spec is None:
        raise ValueError(f"unknown CALVIN scene {name!r}: use one of {', '.join(SCENE_NAMES)}")
    return spec
