"""The SpatialTree primitive vocabulary (Table 1 of the paper) and every spelling models use for it.

Frame: the camera / end-effector frame is right-handed with +Z forward, +X right, +Y down (OpenCV).
Signs follow that frame, so they describe the physical motion:

- truck right = +X, dolly in = +Z, pedestal up = -Y (Y points down);
- pan right = +rotation about +Y (Y points down, so a right-handed turn about it swings +Z toward +X);
- tilt up = +rotation about +X (swings +Z toward -Y, i.e. up);
- roll CW = +rotation about +Z (seen from behind the camera, looking forward).

The manipulation prompt of the paper annotates pan left/right as "+/- yaw"; in this frame a physical pan
left is a negative rotation about +Y, and we keep the physical meaning (see docs/guide/action-mapping.md).
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass


class Category(str, enum.Enum):
    TRANSLATION = "translation"
    ROTATION = "rotation"
    GRIPPER = "gripper"
    GESTURE = "gesture"
    SPECIAL = "special"


@dataclass(frozen=True)
class _Spec:
    category: Category
    axis: int | None  # 0 = X, 1 = Y, 2 = Z in the camera frame; None for non-motion primitives
    sign: int  # +1 / -1 along (or about) `axis`; for gripper/gesture the state or direction it sets
    term: str  # cinematic term as in Table 1
    symbol: str  # the symbol our prompts use
    spellings: tuple[str, ...]  # extra spellings (symbols of Table 1 / lmms-eval, words)


class Primitive(str, enum.Enum):
    """A spatial action primitive. ``Primitive.PAN_LEFT.axis`` etc. come from the table below."""

    TRUCK_LEFT = "truck_left"
    TRUCK_RIGHT = "truck_right"
    DOLLY_IN = "dolly_in"
    DOLLY_OUT = "dolly_out"
    PEDESTAL_UP = "pedestal_up"
    PEDESTAL_DOWN = "pedestal_down"
    PAN_LEFT = "pan_left"
    PAN_RIGHT = "pan_right"
    TILT_UP = "tilt_up"
    TILT_DOWN = "tilt_down"
    ROLL_CW = "roll_cw"
    ROLL_CCW = "roll_ccw"
    GRIPPER_OPEN = "gripper_open"
    GRIPPER_CLOSE = "gripper_close"
    PUSH = "push"
    PULL = "pull"
    GRAB = "grab"
    RELEASE = "release"
    STOP = "stop"

    @property
    def spec(self) -> _Spec:
        return _SPECS[self]

    @property
    def category(self) -> Category:
        return self.spec.category

    @property
    def axis(self) -> int | None:
        return self.spec.axis

    @property
    def motion_axis(self) -> int:
        """:attr:`axis` of a camera motion (translation or rotation), which always has one."""
        if not self.is_motion or self.spec.axis is None:
            raise ValueError(f"{self.value} is not a camera motion")
        return self.spec.axis

    @property
    def sign(self) -> int:
        return self.spec.sign

    @property
    def term(self) -> str:
        return self.spec.term

    @property
    def symbol(self) -> str:
        """The symbol our prompt renderers show to models (the spelling of the paper's prompts)."""
        return self.spec.symbol

    @property
    def is_motion(self) -> bool:
        return self.category in (Category.TRANSLATION, Category.ROTATION)

    @classmethod
    def camera_motions(cls) -> tuple[Primitive, ...]:
        return tuple(p for p in cls if p.is_motion)


_T, _R = Category.TRANSLATION, Category.ROTATION
_SPECS: dict[Primitive, _Spec] = {
    Primitive.TRUCK_LEFT: _Spec(_T, 0, -1, "Truck Left", "A", ("move left", "strafe left", "MoveLeft")),
    Primitive.TRUCK_RIGHT: _Spec(_T, 0, +1, "Truck Right", "D", ("move right", "strafe right", "MoveRight")),
    Primitive.DOLLY_IN: _Spec(
        _T, 2, +1, "Dolly In", "W", ("forward", "move forward", "MoveAhead", "move ahead", "dolly forward")
    ),
    Primitive.DOLLY_OUT: _Spec(
        _T, 2, -1, "Dolly Out", "S", ("backward", "move backward", "MoveBack", "move back", "dolly back")
    ),
    # Table 1 writes pedestal as Q/E; the prompts write space/shift.
    Primitive.PEDESTAL_UP: _Spec(_T, 1, -1, "Pedestal Up", "space", ("Q", "move up", "ascend")),
    Primitive.PEDESTAL_DOWN: _Spec(_T, 1, +1, "Pedestal Down", "shift", ("E", "move down", "descend")),
    Primitive.PAN_LEFT: _Spec(
        _R,
        1,
        -1,
        "Pan Left",
        "←",
        (
            "left arrow",
            "left_arrow",
            "arrow left",
            "\\leftarrow",
            "turn left",
            "rotate left",
            "RotateLeft",
            "yaw left",
            "left",
        ),
    ),
    Primitive.PAN_RIGHT: _Spec(
        _R,
        1,
        +1,
        "Pan Right",
        "→",
        (
            "right arrow",
            "right_arrow",
            "arrow right",
            "\\rightarrow",
            "turn right",
            "rotate right",
            "RotateRight",
            "yaw right",
            "right",
        ),
    ),
    Primitive.TILT_UP: _Spec(
        _R,
        0,
        +1,
        "Tilt Up",
        "↑",
        ("up arrow", "up_arrow", "arrow up", "\\uparrow", "look up", "LookUp", "pitch up", "up"),
    ),
    Primitive.TILT_DOWN: _Spec(
        _R,
        0,
        -1,
        "Tilt Down",
        "↓",
        (
            "down arrow",
            "down_arrow",
            "arrow down",
            "\\downarrow",
            "look down",
            "LookDown",
            "pitch down",
            "down",
        ),
    ),
    # Table 1 writes roll as Z/X; the prompts write R/L; lmms-eval writes ↻ (CW) / ↺ (CCW).
    Primitive.ROLL_CW: _Spec(
        _R, 2, +1, "Roll CW", "R", ("Z", "↻", "roll clockwise", "roll right", "clockwise")
    ),
    Primitive.ROLL_CCW: _Spec(
        _R,
        2,
        -1,
        "Roll CCW",
        "L",
        (
            "X",
            "↺",
            "roll counterclockwise",
            "roll counter clockwise",
            "roll anticlockwise",
            "roll left",
            "counterclockwise",
            "anticlockwise",
        ),
    ),
    Primitive.GRIPPER_OPEN: _Spec(Category.GRIPPER, None, 0, "Gripper Open", "G", ("open gripper", "open")),
    Primitive.GRIPPER_CLOSE: _Spec(
        Category.GRIPPER, None, 1, "Gripper Close", "H", ("close gripper", "close")
    ),
    # Table 1 gives push/pull the keys P/L; L already means roll CCW in the prompts, so only the gesture
    # vocabulary (see `gesture_symbols`) reads L as pull.
    Primitive.PUSH: _Spec(Category.GESTURE, 2, +1, "Push", "P", ()),
    Primitive.PULL: _Spec(Category.GESTURE, 2, -1, "Pull", "pull", ()),
    Primitive.GRAB: _Spec(Category.GESTURE, None, 1, "Grab", "grab", ("grasp",)),
    Primitive.RELEASE: _Spec(Category.GESTURE, None, 0, "Release", "release", ("let go",)),
    Primitive.STOP: _Spec(
        Category.SPECIAL, None, 0, "Stay", "STOP", ("stay", "no movement", "no-op", "noop", "none")
    ),
}


def _normalise(token: str) -> str:
    """Case-, separator- and bracket-insensitive key: "Dolly_In", "dolly-in", "DollyIn" -> "dolly in"."""
    s = token.strip().strip("\"'`").strip()
    s = re.sub(r"^\((.*)\)$", r"\1", s).strip()  # "(R)" as printed in the manipulation prompt
    if len(s) <= 1:  # single symbols: keys are case-insensitive ("w" is W)
        return s.lower()
    s = re.sub(r"(?<=[a-z])(?=[A-Z])", " ", s)  # camelCase -> words
    s = re.sub(r"[\s_\-]+", " ", s)
    return s.lower().strip()


def _build_lookup(gesture: bool) -> dict[str, Primitive]:
    table: dict[str, Primitive] = {}
    for prim, spec in _SPECS.items():
        for name in (prim.value, spec.term, spec.symbol, *spec.spellings):
            key = _normalise(name)
            if key in table and table[key] is not prim:
                raise AssertionError(f"spelling {name!r} maps to both {table[key]} and {prim}")
            table[key] = prim
    if gesture:
        table["l"] = Primitive.PULL
    return table


_CAMERA_LOOKUP = _build_lookup(gesture=False)
_GESTURE_LOOKUP = _build_lookup(gesture=True)
_CAMERA_MEMO: dict[str, Primitive | None] = {}
_GESTURE_MEMO: dict[str, Primitive | None] = {}
_MEMO_LIMIT = 4096  # model output can hold any string; keep the memo bounded


def lookup_symbol(token: str, *, gesture: bool = False) -> Primitive | None:
    """Map one model-written action symbol to a primitive; ``None`` when it is not a known spelling.

    ``gesture=True`` reads Table 1's hand-gesture keys, where ``L`` means pull instead of roll CCW.
    """
    if not isinstance(token, str):
        return None
    # Memoised: normalising is regex work, and a scorer looks up the same few symbols thousands of times.
    memo = _GESTURE_MEMO if gesture else _CAMERA_MEMO
    if token in memo:
        return memo[token]
    prim = (_GESTURE_LOOKUP if gesture else _CAMERA_LOOKUP).get(_normalise(token))
    if len(memo) < _MEMO_LIMIT:
        memo[token] = prim
    return prim


def known_spellings(*, gesture: bool = False) -> dict[str, Primitive]:
    """Every normalised spelling and its primitive (a copy), e.g. for documentation or tests."""
    return dict(_GESTURE_LOOKUP if gesture else _CAMERA_LOOKUP)


# EmbodiedBench's EB-Navigation action ids, as the primitives they are.
EB_NAV_ACTIONS: tuple[tuple[str, Primitive], ...] = (
    ("MoveAhead", Primitive.DOLLY_IN),
    ("MoveBack", Primitive.DOLLY_OUT),
    ("MoveRight", Primitive.TRUCK_RIGHT),
    ("MoveLeft", Primitive.TRUCK_LEFT),
    ("RotateRight", Primitive.PAN_RIGHT),
    ("RotateLeft", Primitive.PAN_LEFT),
    ("LookUp", Primitive.TILT_UP),
    ("LookDown", Primitive.TILT_DOWN),
)
