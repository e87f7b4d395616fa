import pytest

from action_mapping import EB_NAV_ACTIONS, Category, Primitive, lookup_symbol
from action_mapping.primitives import known_spellings

P = Primitive


@pytest.mark.parametrize(
    ("prim", "category", "axis", "sign"),
    [
        (P.TRUCK_RIGHT, Category.TRANSLATION, 0, +1),
        (P.TRUCK_LEFT, Category.TRANSLATION, 0, -1),
        (P.PEDESTAL_UP, Category.TRANSLATION, 1, -1),  # +Y points down
        (P.DOLLY_IN, Category.TRANSLATION, 2, +1),
        (P.TILT_UP, Category.ROTATION, 0, +1),
        (P.PAN_RIGHT, Category.ROTATION, 1, +1),
        (P.ROLL_CW, Category.ROTATION, 2, +1),
        (P.GRIPPER_CLOSE, Category.GRIPPER, None, 1),
        (P.STOP, Category.SPECIAL, None, 0),
    ],
)
def test_frame_semantics(prim, category, axis, sign):
    assert (prim.category, prim.axis, prim.sign) == (category, axis, sign)


def test_motion_axis_is_the_axis_of_every_camera_motion_and_refused_elsewhere():
    assert all(p.motion_axis == p.axis for p in Primitive.camera_motions())
    for p in (P.GRIPPER_CLOSE, P.PUSH, P.STOP):
        with pytest.raises(ValueError, match=f"{p.value} is not a camera motion"):
            _ = p.motion_axis


@pytest.mark.parametrize(
    ("spelling", "prim"),
    [
        ("W", P.DOLLY_IN),
        ("S", P.DOLLY_OUT),
        ("A", P.TRUCK_LEFT),
        ("D", P.TRUCK_RIGHT),
        ("space", P.PEDESTAL_UP),
        ("shift", P.PEDESTAL_DOWN),
        ("Q", P.PEDESTAL_UP),
        ("E", P.PEDESTAL_DOWN),
        ("←", P.PAN_LEFT),
        ("→", P.PAN_RIGHT),
        ("↑", P.TILT_UP),
        ("↓", P.TILT_DOWN),
        ("left arrow", P.PAN_LEFT),
        ("Right Arrow", P.PAN_RIGHT),
        ("left_arrow", P.PAN_LEFT),
        ("R", P.ROLL_CW),
        ("L", P.ROLL_CCW),
        ("Z", P.ROLL_CW),
        ("X", P.ROLL_CCW),
        ("↻", P.ROLL_CW),
        ("↺", P.ROLL_CCW),
        ("(R)", P.ROLL_CW),
        ("G", P.GRIPPER_OPEN),
        ("H", P.GRIPPER_CLOSE),
        ("P", P.PUSH),
        ("STOP", P.STOP),
        ("stay", P.STOP),
        ("Dolly In", P.DOLLY_IN),
        ("dolly_in", P.DOLLY_IN),
        ("DOLLY-IN", P.DOLLY_IN),
        ("DollyIn", P.DOLLY_IN),
        ("pan left", P.PAN_LEFT),
        ("Tilt Down", P.TILT_DOWN),
        ("roll_ccw", P.ROLL_CCW),
        ("MoveAhead", P.DOLLY_IN),
        ("RotateLeft", P.PAN_LEFT),
        ("LookDown", P.TILT_DOWN),
        ("grab", P.GRAB),
        ("release", P.RELEASE),
        ("w", P.DOLLY_IN),
    ],
)
def test_spellings(spelling, prim):
    assert lookup_symbol(spelling) is prim


def test_gesture_vocabulary_reads_L_as_pull():
    assert lookup_symbol("L") is P.ROLL_CCW
    assert lookup_symbol("L", gesture=True) is P.PULL
    assert lookup_symbol("P", gesture=True) is P.PUSH


@pytest.mark.parametrize("token", ["jump", "", "WW", "left-ish", "🚀", "10"])
def test_unknown_spellings(token):
    assert lookup_symbol(token) is None


def test_every_primitive_reachable_from_its_symbol_and_value():
    for prim in Primitive:
        if prim is P.PULL:  # its key L means roll CCW outside the gesture vocabulary
            assert lookup_symbol(prim.symbol) is prim
            continue
        assert lookup_symbol(prim.symbol) is prim
        assert lookup_symbol(prim.value) is prim
        assert lookup_symbol(prim.term) is prim


def test_spelling_table_is_unambiguous_and_covers_the_paper():
    table = known_spellings()
    for key in [
        "w",
        "s",
        "a",
        "d",
        "q",
        "e",
        "space",
        "shift",
        "←",
        "→",
        "↑",
        "↓",
        "r",
        "l",
        "z",
        "x",
        "g",
        "h",
        "p",
        "stop",
    ]:
        assert key in table, key


def test_eb_navigation_ids_are_the_camera_primitives():
    names = [n for n, _ in EB_NAV_ACTIONS]
    assert names == [
        "MoveAhead",
        "MoveBack",
        "MoveRight",
        "MoveLeft",
        "RotateRight",
        "RotateLeft",
        "LookUp",
        "LookDown",
    ]
    assert [p for _, p in EB_NAV_ACTIONS] == [
        P.DOLLY_IN,
        P.DOLLY_OUT,
        P.TRUCK_RIGHT,
        P.TRUCK_LEFT,
        P.PAN_RIGHT,
        P.PAN_LEFT,
        P.TILT_UP,
        P.TILT_DOWN,
    ]
