"""System prompts for the two SpatialTree L4 output formats, parameterised by step sizes and counts.

The wording is the project's own; the content (frame, primitives, step sizes, JSON format) follows the
paper's Listings 2 and 3. Tests pin the rendered text in snapshot files so prompts cannot drift silently.
"""

from __future__ import annotations

from action_mapping.primitives import Primitive
from action_mapping.trajectory import NAVIGATION_STEP_SIZES, StepSizes

_TRANSLATIONS = (
    Primitive.DOLLY_IN,
    Primitive.DOLLY_OUT,
    Primitive.TRUCK_LEFT,
    Primitive.TRUCK_RIGHT,
    Primitive.PEDESTAL_UP,
    Primitive.PEDESTAL_DOWN,
)
_ROTATIONS = (
    Primitive.PAN_LEFT,
    Primitive.PAN_RIGHT,
    Primitive.TILT_UP,
    Primitive.TILT_DOWN,
    Primitive.ROLL_CW,
    Primitive.ROLL_CCW,
)


def _listing(prims: tuple[Primitive, ...]) -> str:
    return ", ".join(f"{p.term} ({p.symbol})" for p in prims)


def _frame() -> str:
    return "Right-handed frame attached to the camera / end-effector: +Z forward, +X right, +Y down."


_GOALS = ("image", "instruction")


def _check_goal(goal: str) -> None:
    if goal not in _GOALS:
        raise ValueError(f"goal must be one of {_GOALS}, got {goal!r}")


def render_navigation_prompt(
    sizes: StepSizes = NAVIGATION_STEP_SIZES,
    num_steps: int = 6,
    max_step_num: int = 10,
    *,
    goal: str = "image",
) -> str:
    """System prompt for goal-image navigation: start image + goal image -> ``step_1..step_N`` JSON.

    ``goal="instruction"`` asks for the motion that carries out a language instruction from the current
    view instead (same actions, step sizes and answer format).
    """
    _check_goal(goal)
    header = (
        [
            "You control a camera. Image 1 shows the start view and Image 2 the goal view.",
            "Find the camera motion that turns the start view into the goal view.",
        ]
        if goal == "image"
        else [
            "You control a camera. Image 1 shows the current view.",
            "Find the camera motion that carries out the instruction given with the image.",
        ]
    )
    return "\n".join(
        [
            *header,
            "",
            "Coordinate frame:",
            _frame(),
            "",
            "Actions:",
            f"- Translation: {_listing(_TRANSLATIONS)}.",
            f"- Rotation: {_listing(_ROTATIONS)}.",
            f"- Stay: {Primitive.STOP.symbol}.",
            "",
            "Step size:",
            f"- Translation: {sizes.translation:g} m per step. Rotation: {sizes.rotation:g} rad per step.",
            "",
            "Answer format:",
            f"Split the motion into {num_steps} steps. Each step lists one or more actions and, for each action,",
            f"an integer step_num from 1 to {max_step_num} (how many steps of that action).",
            f"Return only one JSON object with the keys step_1 to step_{num_steps}, for example:",
            '{"step_1": {"actions": ["W", "A"], "step_nums": [5, 2]},',
            ' "step_2": {"actions": ["←", "↑"], "step_nums": [3, 4]}}',
        ]
    )


def _manipulation_header(goal: str) -> list[str]:
    """The first lines of the manipulation prompt: what the images show and what to find."""
    if goal == "image":
        return [
            "You control a robot end-effector. Image 1 shows the start state and Image 2 the goal state.",
            "Find the end-effector motion and gripper changes that lead from the start to the goal.",
        ]
    return [
        "You control a robot end-effector. Image 1 shows the current state.",
        "Find the end-effector motion and gripper changes that carry out the instruction given with the image.",
    ]


def render_manipulation_prompt(
    sizes: StepSizes = NAVIGATION_STEP_SIZES,
    max_steps: int = 6,
    max_step_num: int = 10,
    *,
    goal: str = "image",
) -> str:
    """System prompt for goal-image manipulation: start + goal image -> steps with actions and gripper.

    ``goal="instruction"`` asks for the motion that carries out a language instruction from the current
    state instead (same actions, step sizes and answer format).
    """
    _check_goal(goal)
    return "\n".join(
        [
            *_manipulation_header(goal),
            "",
            "Coordinate frame:",
            _frame(),
            "",
            "Each step is a 7-D vector [dx, dy, dz, d_roll, d_pitch, d_yaw, gripper_state]:",
            "- dx, dy, dz: displacement in metres along +X, +Y, +Z.",
            "- d_roll, d_pitch, d_yaw: rotation in radians about +Z, +X, +Y.",
            "- gripper_state: 0 = open, 1 = closed.",
            "Each component is the sum of the chosen actions, each worth step_num x step size.",
            "",
            "Actions:",
            f"- Translation: {_listing(_TRANSLATIONS)}.",
            f"- Rotation: {_listing(_ROTATIONS)}.",
            f"- Stay: {Primitive.STOP.symbol}.",
            "",
            "Step size:",
            f"- Translation: {sizes.translation:g} m per step. Rotation: {sizes.rotation:g} rad per step.",
            "",
            "Answer format:",
            f"Use at most {max_steps} steps. Each step has actions (a list of action symbols), step_nums (one",
            f"integer from 1 to {max_step_num} per action) and gripper (0 or 1). Return only one JSON object:",
            '{"step_1": {"actions": ["W", "A"], "step_nums": [5, 2], "gripper": 0},',
            ' "step_2": {"actions": ["↓"], "step_nums": [3], "gripper": 1}}',
        ]
    )
