"""What a procedurally generated home can contain: colours, target-object categories, furniture, rooms.

Everything here is plain data. Each target category carries the words instructions use for it: a name,
common-sense descriptions of what it is for ("something to cut bread with"), a shape word and the colours
it can have, so every subset's instruction is generated from the same facts the scene is built from.
"""

from __future__ import annotations

from dataclasses import dataclass

# Named colours (linear RGB in [0, 1]). Names are what visual-appearance instructions say.
COLOURS: dict[str, tuple[float, float, float]] = {
    "red": (0.80, 0.10, 0.08),
    "orange": (0.95, 0.48, 0.06),
    "yellow": (0.95, 0.82, 0.10),
    "green": (0.16, 0.58, 0.18),
    "blue": (0.10, 0.28, 0.82),
    "purple": (0.48, 0.18, 0.66),
    "pink": (0.96, 0.52, 0.70),
    "white": (0.93, 0.93, 0.91),
    "black": (0.07, 0.07, 0.08),
    "grey": (0.50, 0.50, 0.52),
    "brown": (0.45, 0.27, 0.11),
}


@dataclass(frozen=True)
class ObjectCategory:
    """A kind of small target object and the words used to refer to it.

    ``footprint`` is the half-extent (m) of its square ground footprint at scale 1, ``height`` its height;
    ``places`` says where it may stand (``"surface"`` of furniture and/or ``"floor"``); ``uses`` are
    common-sense descriptions that name neither the object nor its colour.
    """

    name: str
    shape: str
    colours: tuple[str, ...]
    uses: tuple[str, ...]
    footprint: float
    height: float
    places: tuple[str, ...] = ("surface",)
    scale_range: tuple[float, float] = (1.0, 1.35)

    @property
    def noun(self) -> str:
        """The category name as written in instructions ("teddy_bear" -> "teddy bear")."""
        return self.name.replace("_", " ")


_S, _F = ("surface",), ("floor",)
_SF = ("surface", "floor")

CATEGORIES: dict[str, ObjectCategory] = {
    c.name: c
    for c in (
        ObjectCategory(
            "apple",
            "round",
            ("red", "green", "yellow"),
            ("a fruit you can eat as a healthy snack", "something to pack in a lunch box as fruit"),
            0.07,
            0.14,
        ),
        ObjectCategory(
            "banana",
            "long",
            ("yellow",),
            ("a fruit you peel before eating", "a fruit that is good in a smoothie"),
            0.12,
            0.06,
        ),
        ObjectCategory(
            "mug",
            "cylindrical",
            ("red", "blue", "white", "yellow", "green", "black"),
            ("something to drink hot coffee from", "something to serve tea in"),
            0.08,
            0.13,
        ),
        ObjectCategory(
            "bowl",
            "round",
            ("white", "blue", "red", "green", "orange"),
            ("something to eat breakfast cereal from", "something to toss a salad in"),
            0.11,
            0.07,
        ),
        ObjectCategory(
            "bottle",
            "cylindrical",
            ("green", "blue", "white", "red"),
            ("something to carry water in on a hike", "something to keep a drink in"),
            0.06,
            0.30,
        ),
        ObjectCategory(
            "knife",
            "long",
            ("black", "brown", "red"),
            ("something to cut bread with", "something to slice vegetables with"),
            0.15,
            0.03,
            scale_range=(1.2, 1.5),
        ),
        ObjectCategory(
            "book",
            "rectangular",
            ("red", "blue", "green", "yellow", "brown", "black", "purple"),
            ("something to read before bed", "something full of stories to read"),
            0.14,
            0.05,
        ),
        ObjectCategory(
            "laptop",
            "rectangular",
            ("grey", "black", "white"),
            ("something to write emails on", "a portable computer to work on"),
            0.18,
            0.22,
        ),
        ObjectCategory(
            "vase",
            "cylindrical",
            ("blue", "white", "red", "purple", "orange"),
            ("something to put fresh flowers in", "a decorative container for flowers"),
            0.10,
            0.34,
            _SF,
        ),
        ObjectCategory(
            "plant",
            "leafy",
            ("green",),
            ("something that needs watering every few days", "something green that grows in a pot"),
            0.17,
            0.50,
            _SF,
        ),
        ObjectCategory(
            "ball",
            "round",
            ("red", "blue", "yellow", "orange", "white", "purple"),
            ("something to play catch with", "something to kick around in the garden"),
            0.12,
            0.24,
            _F,
        ),
        ObjectCategory(
            "lamp",
            "cylindrical",
            ("white", "yellow", "red", "blue", "green"),
            ("something that gives light for reading", "something to switch on when it gets dark"),
            0.12,
            0.45,
        ),
        ObjectCategory(
            "clock",
            "round",
            ("red", "blue", "black", "white", "green"),
            ("something that tells you the time", "something that wakes you up in the morning"),
            0.10,
            0.22,
        ),
        ObjectCategory(
            "candle",
            "cylindrical",
            ("white", "red", "purple", "yellow"),
            ("something to light when the power goes out", "something that makes a small flame"),
            0.05,
            0.22,
        ),
        ObjectCategory(
            "teddy_bear",
            "soft",
            ("brown", "pink", "white", "yellow"),
            ("a soft toy a child hugs at night", "a cuddly stuffed toy"),
            0.13,
            0.34,
            _SF,
        ),
        ObjectCategory(
            "remote_control",
            "rectangular",
            ("black", "grey", "white"),
            ("something to change the TV channel with", "something to turn the television on with"),
            0.11,
            0.03,
            scale_range=(1.3, 1.6),
        ),
        ObjectCategory(
            "box",
            "rectangular",
            ("brown", "white", "blue"),
            ("something to pack things in when moving house", "something to store old things in"),
            0.22,
            0.34,
            _F,
        ),
        ObjectCategory(
            "pot",
            "cylindrical",
            ("grey", "black", "red", "blue"),
            ("something to cook soup in", "something to boil pasta in"),
            0.15,
            0.18,
        ),
        ObjectCategory(
            "shoe",
            "long",
            ("red", "black", "white", "blue", "brown"),
            ("something you wear on your foot", "something to put on before going for a run"),
            0.16,
            0.11,
            _F,
        ),
        ObjectCategory(
            "trash_can",
            "cylindrical",
            ("grey", "black", "white", "blue", "green"),
            ("somewhere to throw away rubbish", "where empty wrappers should go"),
            0.18,
            0.45,
            _F,
        ),
        ObjectCategory(
            "pillow",
            "soft",
            ("white", "blue", "red", "yellow", "purple", "green", "pink"),
            ("something soft to rest your head on", "something to make a sofa more comfortable"),
            0.25,
            0.12,
        ),
    )
}


@dataclass(frozen=True)
class FurnitureKind:
    """A furniture type: size ranges (width along its front, depth, height) and where it goes.

    ``against_wall`` pieces stand with their back to a wall; the others stand free in the room.
    """

    name: str
    width: tuple[float, float]
    depth: tuple[float, float]
    height: tuple[float, float]
    against_wall: bool = True
    materials: tuple[str, ...] = ("wood",)


FURNITURE: dict[str, FurnitureKind] = {
    f.name: f
    for f in (
        FurnitureKind(
            "table", (1.0, 1.5), (0.75, 0.9), (0.72, 0.78), against_wall=False, materials=("wood", "white")
        ),
        FurnitureKind("desk", (1.1, 1.5), (0.6, 0.75), (0.72, 0.76), materials=("wood", "white", "black")),
        FurnitureKind("counter", (1.6, 2.4), (0.6, 0.65), (0.88, 0.92), materials=("white", "wood", "grey")),
        FurnitureKind("sofa", (1.7, 2.2), (0.85, 0.95), (0.8, 0.9), materials=("fabric",)),
        FurnitureKind("bed", (1.4, 1.8), (1.95, 2.1), (0.95, 1.1), materials=("wood", "white")),
        FurnitureKind("cabinet", (0.8, 1.2), (0.45, 0.55), (0.8, 1.0), materials=("wood", "white", "grey")),
        FurnitureKind("shelf", (0.8, 1.2), (0.32, 0.38), (1.6, 1.9), materials=("wood", "white", "black")),
        FurnitureKind("tv_stand", (1.2, 1.6), (0.4, 0.5), (0.45, 0.55), materials=("wood", "black", "white")),
        FurnitureKind(
            "chair",
            (0.45, 0.5),
            (0.45, 0.5),
            (0.85, 0.95),
            against_wall=False,
            materials=("wood", "black", "white"),
        ),
    )
}

# Room types: furniture that is always there, furniture drawn from, and the categories that belong there.
ROOM_TYPES: dict[str, dict[str, tuple[str, ...]]] = {
    "kitchen": {
        "required": ("counter", "table"),
        "optional": ("cabinet", "shelf"),
        "objects": ("apple", "banana", "mug", "bowl", "bottle", "knife", "pot", "trash_can", "vase", "plant"),
    },
    "living room": {
        "required": ("sofa", "tv_stand"),
        "optional": ("table", "shelf", "cabinet"),
        "objects": (
            "remote_control",
            "vase",
            "plant",
            "ball",
            "book",
            "laptop",
            "candle",
            "pillow",
            "clock",
            "teddy_bear",
            "lamp",
        ),
    },
    "bedroom": {
        "required": ("bed", "cabinet"),
        "optional": ("shelf", "desk"),
        "objects": (
            "pillow",
            "teddy_bear",
            "book",
            "clock",
            "lamp",
            "shoe",
            "candle",
            "laptop",
            "box",
            "ball",
        ),
    },
    "office": {
        "required": ("desk", "shelf"),
        "optional": ("cabinet", "sofa"),
        "objects": (
            "laptop",
            "book",
            "mug",
            "lamp",
            "clock",
            "box",
            "trash_can",
            "plant",
            "bottle",
            "remote_control",
        ),
    },
}

# Materials of floors, walls and furniture, built from MuJoCo's builtin procedural textures.
FLOOR_STYLES: tuple[str, ...] = ("wood", "tiles", "carpet", "concrete")
WALL_COLOURS: tuple[tuple[float, float, float], ...] = (
    (0.92, 0.90, 0.84),
    (0.85, 0.88, 0.92),
    (0.90, 0.84, 0.78),
    (0.82, 0.88, 0.80),
    (0.94, 0.94, 0.94),
    (0.88, 0.82, 0.86),
    (0.80, 0.84, 0.88),
)
FABRIC_COLOURS: tuple[tuple[float, float, float], ...] = (
    (0.25, 0.32, 0.45),
    (0.55, 0.25, 0.22),
    (0.35, 0.45, 0.30),
    (0.55, 0.52, 0.48),
    (0.20, 0.20, 0.22),
    (0.62, 0.50, 0.32),
)
WOOD_COLOURS: tuple[tuple[float, float, float], ...] = (
    (0.55, 0.36, 0.18),
    (0.42, 0.26, 0.12),
    (0.68, 0.50, 0.30),
    (0.30, 0.19, 0.10),
)
