"""CALVIN numbers, scene D's where scenes differ (every scene: :mod:`envs.calvin.scenes`) (see the PlayTableEnv docstring and docs/guide/calvin.md); no simulator import here.

Positions are world coordinates in metres after CALVIN's global scaling of 0.8 (our generated assets
are written at that scale directly). Angles are radians. Euler angles are PyBullet's (extrinsic x-y-z,
``scipy`` ``"xyz"``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from envs.calvin.scenes import BLOCK_SIZES, SCENES

# ------------------------------------------------------------------------------------------ simulation
PHYSICS_HZ = 240
CONTROL_HZ = 30
SUBSTEPS = PHYSICS_HZ // CONTROL_HZ  # 8 physics steps per action
GRAVITY = -9.8

# --------------------------------------------------------------------------------------------- robot
ROBOT_BASE_POSITION = (-0.34, -0.46, 0.24)
INITIAL_JOINTS = (-1.21779206, 1.03987646, 2.11978261, -2.34205014, -0.87015947, 1.64119353, 0.55344866)
JOINT_LOWER = (-2.8973, -1.7628, -2.8973, -3.0718, -2.8973, -0.0175, -2.8973)
JOINT_UPPER = (2.8973, 1.7628, 2.8973, -0.0698, 2.8973, 3.7525, 2.8973)
MAX_JOINT_FORCE = 200.0
MAX_JOINT_VELOCITY = 2.0
GRIPPER_CLOSE_FORCE = 200.0
GRIPPER_OPEN_FORCE = 2.0  # CALVIN opens with 1/100 of the closing force
GRIPPER_MAX_VELOCITY = 1.0
FINGER_TRAVEL = (0.0, 0.04)  # each finger; the opening width is the sum of both
TCP_OFFSET = 0.14  # evaluation robot (longer fingers): TCP on the hand's z axis
GRIPPER_CAMERA_XYZ = (-0.1, 0.0, 0.0)  # on panda_hand
GRIPPER_CAMERA_RPY = (1.3, 0.0, -1.57)
MAX_REL_POSITION = 0.02  # metres per unit of a relative action
MAX_REL_ORIENTATION = 0.05  # radians per unit

# The neutral robot state every CALVIN chain starts from (TCP pose, width, joints, gripper action).
NEUTRAL_ROBOT_OBS = (
    0.02586889,
    -0.2313129,
    0.5712808,
    3.09045411,
    -0.02908596,
    1.50013585,
    0.07999963,
    -1.21779124,
    1.03987629,
    2.11978254,
    -2.34205014,
    -0.87015899,
    1.64119093,
    0.55344928,
    1.0,
)

# --------------------------------------------------------------------------------------------- table
WORK_SURFACE_Z = 0.44  # top of the table; resting block centres are at 0.46
SLIDE_RANGE = (0.0, 0.28)  # sliding door, + moves it along -x ("left")
DRAWER_RANGE = (0.0, 0.22)  # + opens toward -y
BUTTON_RANGE = (0.0, 0.02)  # + presses down
SWITCH_RANGE = (0.0, 0.088)  # + moves the switch up its slope
BUTTON_TRIGGER = sum(BUTTON_RANGE) / 2  # LED toggles on each press edge past this
SWITCH_TRIGGER = sum(SWITCH_RANGE) / 2  # lightbulb on while the switch is past this
ARTICULATION_FORCE = 4.0  # doors/switch: velocity control; button: position control at 0

# Scene D's links (every scene's: envs.calvin.scenes).
SLIDE_ORIGIN = SCENES["D"].slide
DRAWER_ORIGIN = SCENES["D"].drawer
BUTTON_ORIGIN = SCENES["D"].button
SWITCH_ORIGIN = SCENES["D"].switch
LED_ORIGIN = SCENES["D"].led
LIGHTBULB_ORIGIN = SCENES["D"].lightbulb
PLANK_ORIGIN = SCENES["D"].plank
CABINET_SLOPE = math.radians(60)  # the cabinet front (sliding door, switch) rises at 60 degrees

LIGHT_ON_RGBA = {"lightbulb": (1.0, 1.0, 0.0, 1.0), "led": (0.0, 1.0, 0.0, 1.0)}
LIGHT_OFF_RGBA = (1.0, 1.0, 1.0, 1.0)

# Scene D's block sampling surfaces (x-y rectangles at z 0.46) and the evaluation's fixed spots.
SURFACES = SCENES["D"].surfaces
BLOCK_SPOT_SLIDER_LEFT = SCENES["D"].spots("slider_left")[0]
BLOCK_SPOT_SLIDER_RIGHT = SCENES["D"].spots("slider_right")[0]
BLOCK_SPOTS_TABLE = SCENES["D"].spots("table")
BLOCK_YAW_RANGE = (math.pi / 2 - math.pi / 8, math.pi / 2 + math.pi / 8)


@dataclass(frozen=True)
class BlockSpec:
    """One movable block: box size (x, y, z), colour, and contact parameters."""

    size: tuple[float, float, float]
    rgba: tuple[float, float, float, float]
    mass: float = 1.0
    lateral_friction: float = 0.7
    spinning_friction: float = 0.001


#: CALVIN's block colours (RGBA), in the order of its task table (and of scene D's scene_obs).
BLOCK_RGBA: dict[str, tuple[float, float, float, float]] = {
    "red": (1.0, 0.0, 0.0, 1.0),
    "blue": (0.0, 0.0, 1.0, 1.0),
    "pink": (1.0, 0.0, 1.0, 1.0),
}


#: Colours of blocks no CALVIN task names (robustness distractors): none is red, blue or pink, nor the
#: LED's green or the lightbulb's yellow.
EXTRA_BLOCK_RGBA: dict[str, tuple[float, float, float, float]] = {
    "orange": (1.0, 0.5, 0.0, 1.0),
    "cyan": (0.0, 0.8, 0.8, 1.0),
    "white": (0.95, 0.95, 0.95, 1.0),
    "black": (0.08, 0.08, 0.08, 1.0),
    "brown": (0.45, 0.25, 0.1, 1.0),
}


def block_spec(color: str, size: str) -> BlockSpec:
    """Block ``color`` in CALVIN's ``size`` ("small", "middle" or "big")."""
    return BlockSpec(BLOCK_SIZES[size], {**BLOCK_RGBA, **EXTRA_BLOCK_RGBA}[color])


# Scene D: red = middle, blue = small, pink = big; scene_obs lists them in this order (other scenes:
# SceneSpec.blocks).
BLOCKS: dict[str, BlockSpec] = {c: block_spec(c, size) for c, size in SCENES["D"].blocks}
BLOCK_COLORS = tuple(BLOCKS)

# ------------------------------------------------------------------------------------------- cameras


@dataclass(frozen=True)
class CameraSpec:
    """A pinhole camera as PyBullet's ``computeProjectionMatrixFOV`` takes it (vertical fov, degrees)."""

    width: int
    height: int
    fov: float
    near: float
    far: float


STATIC_CAMERA = CameraSpec(200, 200, 10.0, 0.01, 10.0)
STATIC_EYE = (2.8715, -2.1666, 2.5552)
STATIC_TARGET = (-0.0262, -0.0302, 0.392)
STATIC_UP = (0.4041, 0.2263, 0.8863)
GRIPPER_CAMERA = CameraSpec(84, 84, 75.0, 0.01, 2.0)
CAMERAS = ("static", "gripper")
#: The light PyBullet's TinyRenderer uses when none is given (rendering with these values is byte-identical).
DEFAULT_LIGHT: dict[str, float | list[float]] = {
    "direction": [-50.0, 30.0, 100.0],
    "color": [1.0, 1.0, 1.0],
    "ambient": 0.6,
    "diffuse": 0.35,
    "specular": 0.05,
}

# ------------------------------------------------------------------------------------------ layouts
ROBOT_OBS_LABELS = (
    "tcp_pos_x",
    "tcp_pos_y",
    "tcp_pos_z",
    "tcp_orn_x",
    "tcp_orn_y",
    "tcp_orn_z",
    "gripper_opening_width",
    *(f"robot_joint_{i}" for i in range(7)),
    "gripper_action",
)
SCENE_OBS_LABELS = (
    "slide",
    "drawer",
    "button",
    "switch",
    "lightbulb",
    "led",
    *(f"block_{c}_{k}" for c in BLOCK_COLORS for k in ("x", "y", "z", "ex", "ey", "ez")),
)
SCENE_SLICES = {"slide": 0, "drawer": 1, "button": 2, "switch": 3, "lightbulb": 4, "led": 5}


def block_slice(color: str) -> slice:
    """Where block ``color``'s position + Euler angles sit in ``scene_obs``."""
    i = 6 + 6 * BLOCK_COLORS.index(color)
    return slice(i, i + 6)


# Body names used in snapshots and contacts.
BODY_TABLE, BODY_ROBOT, BODY_PLANE = "table", "robot", "plane"
BLOCK_BODIES = {c: f"block_{c}" for c in BLOCK_COLORS}
TABLE_LINKS = (
    "base_link",
    "plank_link",
    "drawer_link",
    "slide_link",
    "button_link",
    "switch_link",
    "led_link",
    "light_link",
)
