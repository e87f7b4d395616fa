"""Geometry of every furniture kind and object category, built from MuJoCo primitives.

Each builder returns :class:`Part` s in the item's own frame: origin at the centre of its footprint on
the floor (or on the surface it stands on), +z up. Furniture stands with its width along +x and its back
toward +y (the wall it leans on), so its front faces -y. Builders are pure functions of the item's
entry in the scene dict, which is why a scene dict regenerates the same MJCF every time.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from envs.navigation.catalog import COLOURS

RGB = tuple[float, float, float]

METAL: RGB = (0.62, 0.63, 0.66)
DARK: RGB = (0.06, 0.06, 0.07)
WHITE: RGB = (0.94, 0.94, 0.92)
SCREEN: RGB = (0.05, 0.08, 0.14)


@dataclass(frozen=True)
class Part:
    """One primitive: MuJoCo geom ``type``, ``size`` (MuJoCo's half-sizes), position, colour or material.

    ``fromto`` (capsules and cylinders) replaces ``pos``; ``euler`` is in degrees (MuJoCo's default xyz).
    """

    type: str
    size: tuple[float, ...]
    pos: tuple[float, float, float] = (0.0, 0.0, 0.0)
    rgb: RGB | None = None
    material: str | None = None
    euler: tuple[float, float, float] | None = None
    fromto: tuple[float, ...] | None = None
    emission: float = 0.0


def _xyz(v: Sequence[float]) -> tuple[float, float, float]:
    x, y, z = v
    return (x, y, z)


def box(
    half: Sequence[float],
    pos: Sequence[float],
    rgb: RGB | None = None,
    material: str | None = None,
    euler: Sequence[float] | None = None,
) -> Part:
    return Part("box", tuple(half), _xyz(pos), rgb, material, None if euler is None else _xyz(euler))


def cyl(
    radius: float,
    half_height: float,
    pos: Sequence[float],
    rgb: RGB | None = None,
    euler: Sequence[float] | None = None,
    material: str | None = None,
    emission: float = 0.0,
) -> Part:
    return Part(
        "cylinder",
        (radius, half_height),
        _xyz(pos),
        rgb,
        material,
        None if euler is None else _xyz(euler),
        emission=emission,
    )


def sphere(radius: float, pos: Sequence[float], rgb: RGB) -> Part:
    return Part("sphere", (radius,), _xyz(pos), rgb)


def ellipsoid(
    half: Sequence[float],
    pos: Sequence[float],
    rgb: RGB,
    euler: Sequence[float] | None = None,
    emission: float = 0.0,
) -> Part:
    return Part(
        "ellipsoid",
        tuple(half),
        _xyz(pos),
        rgb,
        None,
        None if euler is None else _xyz(euler),
        emission=emission,
    )


def capsule(radius: float, a: Sequence[float], b: Sequence[float], rgb: RGB) -> Part:
    return Part("capsule", (radius,), rgb=rgb, fromto=(*a, *b))


def shade(rgb: RGB, factor: float) -> RGB:
    """``rgb`` darkened (factor < 1) or lightened toward white (factor > 1)."""
    if factor <= 1:
        return (rgb[0] * factor, rgb[1] * factor, rgb[2] * factor)
    t = min(factor - 1.0, 1.0)
    return (rgb[0] + (1 - rgb[0]) * t, rgb[1] + (1 - rgb[1]) * t, rgb[2] + (1 - rgb[2]) * t)


# ------------------------------------------------------------------------------------------- objects


def _apple(c: RGB) -> list[Part]:
    return [
        sphere(0.062, (0, 0, 0.062), c),
        cyl(0.006, 0.016, (0, 0, 0.13), COLOURS["brown"]),
        ellipsoid((0.026, 0.011, 0.004), (0.018, 0, 0.132), COLOURS["green"], euler=(0, -25, 0)),
    ]


def _banana(c: RGB) -> list[Part]:
    tip = shade(c, 0.45)
    return [
        capsule(0.024, (-0.05, 0, 0.026), (0.05, 0, 0.026), c),
        capsule(0.021, (-0.05, 0, 0.026), (-0.12, 0.035, 0.035), c),
        capsule(0.021, (0.05, 0, 0.026), (0.12, 0.035, 0.035), c),
        sphere(0.012, (0.125, 0.037, 0.036), tip),
    ]


def _mug(c: RGB) -> list[Part]:
    return [
        cyl(0.048, 0.055, (0, 0, 0.055), c),
        cyl(0.042, 0.002, (0, 0, 0.11), (0.22, 0.12, 0.05)),
        box((0.02, 0.008, 0.035), (0.062, 0, 0.06), c),
    ]


def _bowl(c: RGB) -> list[Part]:
    return [
        cyl(0.06, 0.01, (0, 0, 0.01), c),
        cyl(0.105, 0.028, (0, 0, 0.046), c),
        cyl(0.093, 0.002, (0, 0, 0.075), shade(c, 1.6)),
    ]


def _bottle(c: RGB) -> list[Part]:
    cap = DARK if c == COLOURS["white"] else WHITE
    # label band
    return [
        cyl(0.045, 0.1, (0, 0, 0.1), c),
        cyl(0.024, 0.04, (0, 0, 0.235), c),
        cyl(0.026, 0.014, (0, 0, 0.285), cap),
        cyl(0.046, 0.03, (0, 0, 0.1), shade(c, 1.5)),
    ]


def _knife(c: RGB) -> list[Part]:
    return [
        box((0.085, 0.013, 0.003), (0.045, 0, 0.012), METAL),
        box((0.055, 0.015, 0.011), (-0.09, 0, 0.011), c),
    ]


def _book(c: RGB) -> list[Part]:
    # spine
    return [
        box((0.11, 0.08, 0.024), (0, 0, 0.024), c),
        box((0.104, 0.074, 0.019), (0.009, 0, 0.024), WHITE),
        box((0.012, 0.081, 0.025), (-0.1, 0, 0.024), shade(c, 0.7)),
    ]


def _laptop(c: RGB) -> list[Part]:
    tilt = math.radians(15)
    hinge_y, hinge_z, half_h = 0.11, 0.02, 0.105
    centre = (0, hinge_y + math.sin(tilt) * half_h, hinge_z + math.cos(tilt) * half_h)
    face = (0, centre[1] - math.cos(tilt) * 0.007, centre[2] + math.sin(tilt) * 0.007)
    return [
        box((0.16, 0.11, 0.01), (0, 0, 0.01), c),
        box((0.14, 0.065, 0.002), (0, -0.02, 0.021), DARK),
        box((0.16, 0.006, half_h), centre, c, euler=(-15, 0, 0)),
        box((0.145, 0.002, 0.09), face, SCREEN, euler=(-15, 0, 0)),
    ]


def _vase(c: RGB) -> list[Part]:
    return [
        ellipsoid((0.095, 0.095, 0.13), (0, 0, 0.13), c),
        cyl(0.045, 0.07, (0, 0, 0.27), c),
        cyl(0.058, 0.012, (0, 0, 0.34), shade(c, 0.75)),
    ]


def _plant(c: RGB) -> list[Part]:
    pot = (0.70, 0.36, 0.20)
    leaves = [
        ellipsoid(
            (0.07, 0.035, 0.13),
            (0.06 * math.cos(a), 0.06 * math.sin(a), 0.34),
            shade(c, 0.8 + 0.1 * i),
            euler=(0, 30, math.degrees(a)),
        )
        for i, a in enumerate((0.0, 1.3, 2.5, 3.8, 5.0))
    ]
    return [
        cyl(0.12, 0.1, (0, 0, 0.1), pot),
        cyl(0.108, 0.004, (0, 0, 0.2), (0.20, 0.13, 0.08)),
        ellipsoid((0.09, 0.09, 0.14), (0, 0, 0.36), c),
        *leaves,
    ]


def _ball(c: RGB) -> list[Part]:
    band = DARK if c == COLOURS["white"] else WHITE
    return [
        sphere(0.12, (0, 0, 0.12), c),
        cyl(0.1205, 0.012, (0, 0, 0.12), band),
        cyl(0.1205, 0.012, (0, 0, 0.12), band, euler=(90, 0, 0)),
    ]


def _lamp(c: RGB) -> list[Part]:
    return [
        cyl(0.075, 0.012, (0, 0, 0.012), METAL),
        cyl(0.012, 0.16, (0, 0, 0.18), METAL),
        cyl(0.125, 0.085, (0, 0, 0.36), c, emission=0.35),
        cyl(0.09, 0.004, (0, 0, 0.448), shade(c, 0.8)),
    ]


def _clock(c: RGB) -> list[Part]:
    up = (90, 0, 0)
    return [
        cyl(0.1, 0.028, (0, 0, 0.12), c, euler=up),
        cyl(0.084, 0.002, (0, -0.029, 0.12), WHITE, euler=up),
        box((0.004, 0.002, 0.05), (0, -0.032, 0.145), DARK),
        box((0.035, 0.002, 0.004), (0.03, -0.032, 0.12), DARK),
        sphere(0.032, (-0.065, 0, 0.205), c),
        sphere(0.032, (0.065, 0, 0.205), c),
        sphere(0.016, (-0.06, 0, 0.018), DARK),
        sphere(0.016, (0.06, 0, 0.018), DARK),
    ]


def _candle(c: RGB) -> list[Part]:
    return [
        cyl(0.055, 0.01, (0, 0, 0.01), METAL),
        cyl(0.032, 0.085, (0, 0, 0.105), c),
        cyl(0.002, 0.008, (0, 0, 0.198), DARK),
        ellipsoid((0.013, 0.013, 0.026), (0, 0, 0.222), (1.0, 0.72, 0.15), emission=1.0),
    ]


def _teddy_bear(c: RGB) -> list[Part]:
    light, eye = shade(c, 1.45), DARK
    return [
        ellipsoid((0.09, 0.08, 0.1), (0, 0, 0.11), c),
        sphere(0.072, (0, -0.01, 0.255), c),
        sphere(0.027, (-0.055, 0, 0.315), c),
        sphere(0.027, (0.055, 0, 0.315), c),
        sphere(0.03, (0, -0.07, 0.245), light),
        sphere(0.01, (-0.026, -0.068, 0.275), eye),
        sphere(0.01, (0.026, -0.068, 0.275), eye),
        ellipsoid((0.03, 0.03, 0.055), (-0.09, -0.02, 0.13), c, euler=(0, 30, 0)),
        ellipsoid((0.03, 0.03, 0.055), (0.09, -0.02, 0.13), c, euler=(0, -30, 0)),
        sphere(0.04, (-0.05, -0.065, 0.04), c),
        sphere(0.04, (0.05, -0.065, 0.04), c),
    ]


def _remote_control(c: RGB) -> list[Part]:
    keys = WHITE if c != COLOURS["white"] else (0.4, 0.4, 0.42)
    return [
        box((0.095, 0.024, 0.011), (0, 0, 0.011), c),
        box((0.01, 0.01, 0.002), (0.07, 0, 0.023), (0.85, 0.1, 0.1)),
        box((0.045, 0.015, 0.002), (-0.01, 0, 0.023), keys),
    ]


def _box(c: RGB) -> list[Part]:
    tape = (0.86, 0.78, 0.58) if c != COLOURS["white"] else (0.7, 0.62, 0.45)
    return [
        box((0.22, 0.18, 0.17), (0, 0, 0.17), c),
        box((0.04, 0.182, 0.002), (0, 0, 0.341), tape),
        box((0.222, 0.002, 0.12), (0, -0.181, 0.17), shade(c, 0.8)),
    ]


def _pot(c: RGB) -> list[Part]:
    return [
        cyl(0.13, 0.07, (0, 0, 0.07), c),
        cyl(0.135, 0.008, (0, 0, 0.148), shade(c, 0.75)),
        sphere(0.02, (0, 0, 0.165), DARK),
        box((0.03, 0.02, 0.008), (-0.16, 0, 0.12), DARK),
        box((0.03, 0.02, 0.008), (0.16, 0, 0.12), DARK),
    ]


def _shoe(c: RGB) -> list[Part]:
    sole = DARK if c == COLOURS["white"] else WHITE
    return [
        box((0.145, 0.048, 0.013), (0, 0, 0.013), sole),
        ellipsoid((0.12, 0.047, 0.05), (0.01, 0, 0.045), c),
        box((0.045, 0.046, 0.05), (-0.095, 0, 0.063), c),
        box((0.04, 0.03, 0.003), (-0.02, 0, 0.096), shade(c, 1.5)),
    ]


def _trash_can(c: RGB) -> list[Part]:
    return [
        cyl(0.17, 0.2, (0, 0, 0.2), c),
        cyl(0.18, 0.015, (0, 0, 0.405), shade(c, 0.7)),
        cyl(0.16, 0.002, (0, 0, 0.421), DARK),
        box((0.05, 0.03, 0.01), (0, -0.18, 0.02), METAL),
    ]


def _pillow(c: RGB) -> list[Part]:
    return [
        ellipsoid((0.24, 0.16, 0.065), (0, 0, 0.065), c),
        ellipsoid((0.2, 0.12, 0.066), (0, 0, 0.066), shade(c, 1.25)),
    ]


OBJECT_BUILDERS: dict[str, Callable[[RGB], list[Part]]] = {
    "apple": _apple,
    "banana": _banana,
    "mug": _mug,
    "bowl": _bowl,
    "bottle": _bottle,
    "knife": _knife,
    "book": _book,
    "laptop": _laptop,
    "vase": _vase,
    "plant": _plant,
    "ball": _ball,
    "lamp": _lamp,
    "clock": _clock,
    "candle": _candle,
    "teddy_bear": _teddy_bear,
    "remote_control": _remote_control,
    "box": _box,
    "pot": _pot,
    "shoe": _shoe,
    "trash_can": _trash_can,
    "pillow": _pillow,
}


def object_parts(category: str, colour: str) -> list[Part]:
    """The parts of a target object of ``category`` in ``colour`` (scale 1, object frame)."""
    return OBJECT_BUILDERS[category](COLOURS[colour])


# ----------------------------------------------------------------------------------------- furniture


@dataclass(frozen=True)
class Surface:
    """A rectangle objects can stand on, in the furniture frame: ``[x0, y0, x1, y1]`` at height ``z``.

    ``clearance`` is the free height above it (a shelf board has the next board above).
    """

    rect: tuple[float, float, float, float]
    z: float
    clearance: float = 1.0


def _legs(w: float, d: float, h: float, inset: float, half: float, material: str) -> list[Part]:
    xs, ys = (-w / 2 + inset, w / 2 - inset), (-d / 2 + inset, d / 2 - inset)
    return [box((half, half, h / 2), (x, y, h / 2), material=material) for x in xs for y in ys]


def _table(w: float, d: float, h: float, m: str) -> list[Part]:
    return [box((w / 2, d / 2, 0.025), (0, 0, h - 0.025), material=m), *_legs(w, d, h - 0.05, 0.07, 0.03, m)]


def _desk(w: float, d: float, h: float, m: str) -> list[Part]:
    drawers_x = -w / 2 + 0.22
    return [
        box((w / 2, d / 2, 0.025), (0, 0, h - 0.025), material=m),
        box((0.2, d / 2 - 0.02, (h - 0.05) / 2), (drawers_x, 0, (h - 0.05) / 2), material=m),
        box((0.05, 0.012, 0.012), (drawers_x, -d / 2 + 0.01, h - 0.16), METAL),
        box((0.05, 0.012, 0.012), (drawers_x, -d / 2 + 0.01, h - 0.42), METAL),
        box((0.025, 0.025, (h - 0.05) / 2), (w / 2 - 0.05, -d / 2 + 0.05, (h - 0.05) / 2), material=m),
        box((0.025, 0.025, (h - 0.05) / 2), (w / 2 - 0.05, d / 2 - 0.05, (h - 0.05) / 2), material=m),
    ]


def _doors(w: float, d: float, z0: float, z1: float, n: int, m: str) -> list[Part]:
    """``n`` door panels with handles on the front (-y) face between heights z0 and z1."""
    parts, panel = [], w / n
    for i in range(n):
        x = -w / 2 + panel * (i + 0.5)
        parts.append(
            box((panel / 2 - 0.012, 0.006, (z1 - z0) / 2), (x, -d / 2 - 0.004, (z0 + z1) / 2), material=m)
        )
        hx = x + (panel / 2 - 0.06) * (1 if i % 2 == 0 else -1)
        parts.append(box((0.012, 0.012, 0.05), (hx, -d / 2 - 0.02, z1 - 0.12), METAL))
    return parts


def _counter(w: float, d: float, h: float, m: str) -> list[Part]:
    body = h - 0.04
    n = max(2, round(w / 0.6))
    return [
        box((w / 2, d / 2 - 0.02, body / 2), (0, 0.02, body / 2), material=m),
        box((w / 2 + 0.01, d / 2 + 0.01, 0.02), (0, 0, h - 0.02), (0.30, 0.30, 0.32)),
        *_doors(w, d - 0.04, 0.1, body - 0.03, n, m),
    ]


def _cabinet(w: float, d: float, h: float, m: str) -> list[Part]:
    return [box((w / 2, d / 2, h / 2), (0, 0, h / 2), material=m), *_doors(w, d, 0.08, h - 0.04, 2, m)]


def _shelf_boards(h: float) -> list[float]:
    n = max(3, int((h - 0.1) / 0.42))
    return [0.06 + i * (h - 0.1) / n for i in range(n)]


def _shelf(w: float, d: float, h: float, m: str) -> list[Part]:
    parts = [box((0.02, d / 2, h / 2), (x, 0, h / 2), material=m) for x in (-w / 2 + 0.02, w / 2 - 0.02)]
    parts.append(box((w / 2, 0.01, h / 2), (0, d / 2 - 0.01, h / 2), material=m))
    parts += [
        box((w / 2 - 0.04, d / 2 - 0.01, 0.012), (0, -0.01, z), material=m)
        for z in [*_shelf_boards(h), h - 0.012]
    ]
    return parts


def _sofa(w: float, d: float, h: float, m: str) -> list[Part]:
    arm = 0.12
    return [
        box((w / 2, d / 2, 0.2), (0, 0, 0.2), material=m),
        box((w / 2 - arm, d / 2 - 0.12, 0.06), (0, -0.1, 0.46), material=m),
        box((w / 2, 0.11, (h - 0.4) / 2), (0, d / 2 - 0.11, 0.4 + (h - 0.4) / 2), material=m),
        box((arm / 2, d / 2, 0.16), (-w / 2 + arm / 2, 0, 0.56), material=m),
        box((arm / 2, d / 2, 0.16), (w / 2 - arm / 2, 0, 0.56), material=m),
    ]


def _bed(w: float, d: float, h: float, m: str) -> list[Part]:
    return [
        box((w / 2, d / 2, 0.14), (0, 0, 0.2), material=m),
        box((w / 2 - 0.03, d / 2 - 0.05, 0.1), (0, -0.02, 0.44), WHITE),
        box((w / 2 - 0.01, d * 0.3, 0.012), (0, -d / 2 + d * 0.3, 0.548), material=f"{m}_accent"),
        box((w / 2, 0.04, h / 2), (0, d / 2 - 0.04, h / 2), material=m),
    ]


def _tv_stand(w: float, d: float, h: float, m: str) -> list[Part]:
    tv_w, tv_h = min(w * 0.42, 0.65), 0.36
    return [
        box((w / 2, d / 2, h / 2), (0, 0, h / 2), material=m),
        *_doors(w, d, 0.05, h - 0.04, 2, m),
        box((0.08, 0.06, 0.01), (0, d / 2 - 0.12, h + 0.01), DARK),
        box((0.02, 0.02, 0.05), (0, d / 2 - 0.1, h + 0.06), DARK),
        box((tv_w, 0.025, tv_h), (0, d / 2 - 0.1, h + 0.1 + tv_h), DARK),
        box((tv_w - 0.02, 0.002, tv_h - 0.02), (0, d / 2 - 0.127, h + 0.1 + tv_h), SCREEN),
    ]


def _chair(w: float, d: float, h: float, m: str) -> list[Part]:
    seat = 0.46
    return [
        box((w / 2, d / 2, 0.025), (0, 0, seat - 0.025), material=m),
        *_legs(w, d, seat - 0.05, 0.04, 0.018, m),
        box((w / 2, 0.02, (h - seat) / 2), (0, d / 2 - 0.02, seat + (h - seat) / 2), material=m),
    ]


FURNITURE_BUILDERS: dict[str, Callable[[float, float, float, str], list[Part]]] = {
    "table": _table,
    "desk": _desk,
    "counter": _counter,
    "cabinet": _cabinet,
    "shelf": _shelf,
    "sofa": _sofa,
    "bed": _bed,
    "tv_stand": _tv_stand,
    "chair": _chair,
}


def furniture_parts(kind: str, size: Sequence[float], material: str) -> list[Part]:
    """The parts of a furniture piece (furniture frame) whose surfaces use ``material``."""
    w, d, h = size
    return FURNITURE_BUILDERS[kind](w, d, h, material)


def furniture_surfaces(kind: str, size: Sequence[float]) -> list[Surface]:
    """Where small objects can stand on a piece of furniture (furniture frame)."""
    w, d, h = size
    top = Surface((-w / 2 + 0.08, -d / 2 + 0.08, w / 2 - 0.08, d / 2 - 0.08), h)
    if kind in ("table", "desk", "cabinet"):
        return [top]
    if kind == "counter":
        return [Surface((-w / 2 + 0.08, -d / 2 + 0.06, w / 2 - 0.08, d / 2 - 0.12), h)]
    if kind == "tv_stand":
        return [Surface((-w / 2 + 0.06, -d / 2 + 0.05, w / 2 - 0.06, d / 2 - 0.2), h)]
    if kind == "sofa":
        return [Surface((-w / 2 + 0.16, -d / 2 + 0.06, w / 2 - 0.16, d / 2 - 0.3), 0.52)]
    if kind == "bed":
        return [Surface((-w / 2 + 0.15, -d / 2 + 0.15, w / 2 - 0.15, d / 2 - 0.25), 0.54)]
    if kind == "shelf":
        boards = _shelf_boards(h)
        gaps = [b - a - 0.03 for a, b in zip(boards, [*boards[1:], h])]
        return [
            Surface((-w / 2 + 0.08, -d / 2 + 0.04, w / 2 - 0.08, d / 2 - 0.06), z + 0.012, gap)
            for z, gap in zip(boards, gaps)
            if z + 0.012 < 1.45
        ]
    return []
