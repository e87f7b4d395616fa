"""Prompt text of the EmbodiedBench-style agent loop: system prompts, strategies, in-context examples.

The structure follows EmbodiedBench (action list as "action id i: name", strategy hints, n examples - 3 for
navigation, 4 for manipulation - then the instruction, the action history with env feedback, and a JSON
answer with ``executable_plan``); the wording and the examples are this project's own. Step sizes and the
manipulation grid come from :mod:`action_mapping.adapters`, so prompt and executor cannot disagree. Tests pin
the rendered text in ``tests/snapshots/mllm/``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from action_mapping.adapters import (
    EB_MANIP_BOUNDS,
    EB_MANIP_ROTATION_BIN_DEG,
    EB_MANIP_VOXELS,
    EB_NAV_LOOK_STEP,
    EB_NAV_MOVE_STEP,
    EB_NAV_ROTATE_STEP,
)
from action_mapping.primitives import EB_NAV_ACTIONS

NAV_ACTION_NAMES: tuple[str, ...] = tuple(name for name, _ in EB_NAV_ACTIONS)

# ------------------------------------------------------------------------------------------- navigation

NAV_INTRO = (
    "## You are a robot moving through a house. A camera on your head shows what is in front of you. "
    "Your goal is to get close to the object named in the human instruction by choosing actions one at a time."
)


def _nav_action_list() -> str:
    return ",\n".join(f"action id {i}: {name}" for i, name in enumerate(NAV_ACTION_NAMES))


def _nav_strategy(max_steps: int) -> str:
    move, turn, look = EB_NAV_MOVE_STEP, math.degrees(EB_NAV_ROTATE_STEP), math.degrees(EB_NAV_LOOK_STEP)
    return "\n".join(
        [
            "## Strategy",
            f"- MoveAhead, MoveBack, MoveRight and MoveLeft shift you by {move:g} m without turning; "
            f"RotateRight and RotateLeft turn you by {turn:g} degrees; LookUp and LookDown tilt the camera by {look:g} degrees.",
            "- If the target is not in view, rotate or look around to find it before walking.",
            "- Once you see it, turn or side-step until it is near the middle of the image, then walk towards it.",
            "- Objects that look small are far away: several MoveAhead actions are fine when the way is clear.",
            "- When the feedback says an action is invalid, something blocks you: side-step or turn to go around it.",
            f"- You succeed when you are within 1 m of the target. You have at most {max_steps} actions.",
        ]
    )


NAV_EXAMPLES: tuple[str, ...] = (
    """Human instruction: navigate to the laptop on the desk.
Step 1 output: {"visual_state_description": "A hallway with a door on the left. No laptop is visible.", "reasoning_and_reflection": "The laptop is not in view, so I should turn to search the room first.", "language_plan": "Turn right to look for the desk.", "executable_plan": [{"action_id": 4, "action_name": "RotateRight"}]}
Env feedback: Last action RotateRight executed successfully.
Step 2 output: {"visual_state_description": "A desk with a laptop is straight ahead, about 3 m away.", "reasoning_and_reflection": "The turn revealed the desk in the middle of the view; the floor in between is clear.", "language_plan": "Walk straight towards the desk.", "executable_plan": [{"action_id": 0, "action_name": "MoveAhead"}, {"action_id": 0, "action_name": "MoveAhead"}, {"action_id": 0, "action_name": "MoveAhead"}, {"action_id": 0, "action_name": "MoveAhead"}, {"action_id": 0, "action_name": "MoveAhead"}, {"action_id": 0, "action_name": "MoveAhead"}, {"action_id": 0, "action_name": "MoveAhead"}, {"action_id": 0, "action_name": "MoveAhead"}]}
Env feedback: Last action MoveAhead executed successfully.
Result: task completed.""",
    """Human instruction: go to the potted plant.
Step 1 output: {"visual_state_description": "A potted plant stands on the floor to the right of the image centre, about 2 m away. A chair is directly in front of me.", "reasoning_and_reflection": "The chair is in the straight path, so I should side-step right first and then walk forward.", "language_plan": "Step right twice, then move ahead.", "executable_plan": [{"action_id": 2, "action_name": "MoveRight"}, {"action_id": 2, "action_name": "MoveRight"}, {"action_id": 0, "action_name": "MoveAhead"}, {"action_id": 0, "action_name": "MoveAhead"}]}
Env feedback: Last action MoveRight is invalid. The agent is blocked by a wall.
Step 2 output: {"visual_state_description": "The plant is slightly left of centre; a wall is close on my right.", "reasoning_and_reflection": "The second side-step hit the wall, but the first one already cleared the chair. The plant is now almost centred.", "language_plan": "Walk straight to the plant.", "executable_plan": [{"action_id": 0, "action_name": "MoveAhead"}, {"action_id": 0, "action_name": "MoveAhead"}, {"action_id": 0, "action_name": "MoveAhead"}, {"action_id": 0, "action_name": "MoveAhead"}]}
Env feedback: Last action MoveAhead executed successfully.
Result: task completed.""",
    """Human instruction: find the red mug on the kitchen counter.
Step 1 output: {"visual_state_description": "I see the lower cabinets of a kitchen; the counter top is cut off at the top of the image.", "reasoning_and_reflection": "The camera points too low to see objects on the counter.", "language_plan": "Look up to see the counter top.", "executable_plan": [{"action_id": 6, "action_name": "LookUp"}]}
Env feedback: Last action LookUp executed successfully.
Step 2 output: {"visual_state_description": "A red mug sits on the counter on the left side of the image, about 1.5 m away.", "reasoning_and_reflection": "The mug is visible but off to the left; stepping left will line it up before walking.", "language_plan": "Step left, then move ahead.", "executable_plan": [{"action_id": 3, "action_name": "MoveLeft"}, {"action_id": 0, "action_name": "MoveAhead"}, {"action_id": 0, "action_name": "MoveAhead"}]}
Env feedback: Last action MoveAhead executed successfully.
Result: task completed.""",
)

NAV_OUTPUT_FORMAT = (
    "## Output format\n"
    "Reason about what you see and about the feedback of your previous actions, then plan. Answer with one "
    "JSON object and nothing else:\n"
    '{"visual_state_description": "<what you see>", "reasoning_and_reflection": "<why, and what the feedback '
    'taught you>", "language_plan": "<the plan in words>", "executable_plan": [{"action_id": <0-7>, '
    '"action_name": "<name>"}, ...]}\n'
    "You only see the result after the whole executable_plan has run, unless an action fails."
)

# ----------------------------------------------------------------------------------------- manipulation

MANIP_INTRO = (
    "## You are a robot arm with a two-finger gripper working on a table. Images of the table are given. "
    "Your goal is to complete the human instruction by moving the gripper to a sequence of target poses."
)


def _manip_action_format() -> str:
    lo, hi = EB_MANIP_BOUNDS
    n, deg = EB_MANIP_VOXELS, EB_MANIP_ROTATION_BIN_DEG
    bins = round(360 / deg)
    cm = (hi[0] - lo[0]) / n * 100
    return "\n".join(
        [
            "## Actions",
            "Each action is a list of 7 integers [X, Y, Z, Roll, Pitch, Yaw, Gripper]: the pose the gripper moves to.",
            f"- X, Y, Z: position as voxel indices 0 to {n - 1} along the workspace axes ({cm:g} cm per voxel; "
            "larger Z is higher).",
            f"- Roll, Pitch, Yaw: orientation as indices 0 to {bins - 1} in steps of {deg:g} degrees "
            f"(angle = index x {deg:g} - 180). [0, {bins // 2}, {bins * 3 // 4}] points the gripper straight down.",
            "- Gripper: 1 = open, 0 = closed.",
        ]
    )


def _manip_strategy(max_steps: int) -> str:
    return "\n".join(
        [
            "## Strategy",
            "- Use the object coordinates given with the instruction; they are voxel indices of the object centres.",
            "- To pick an object: move above it with the gripper open, go down to it, close the gripper, lift it.",
            "- To place an object: move above the target, go down until the object almost touches it, open the gripper.",
            "- Keep the gripper pointing down unless the task needs another orientation.",
            "- When the feedback says an action is invalid, the pose was unreachable: choose a nearby reachable pose.",
            f"- You have at most {max_steps} actions.",
        ]
    )


MANIP_EXAMPLES: tuple[str, ...] = (
    """Human instruction: pick up the star and place it into the yellow container.
Object coordinates: object 1 (star): [44, 30, 18]; object 2 (yellow container): [58, 64, 17]; object 3 (cube): [30, 52, 18].
Output: {"visual_state_description": "A star (object 1) lies on the table; the yellow container (object 2) is to its left.", "reasoning_and_reflection": "Grasp the star from above, lift it clear of the table, carry it over the container and release it.", "language_plan": "Move above the star, descend, grasp, lift, move above the container, lower, release.", "executable_plan": [{"action": "[44, 30, 28, 0, 60, 90, 1]"}, {"action": "[44, 30, 18, 0, 60, 90, 1]"}, {"action": "[44, 30, 18, 0, 60, 90, 0]"}, {"action": "[44, 30, 32, 0, 60, 90, 0]"}, {"action": "[58, 64, 32, 0, 60, 90, 0]"}, {"action": "[58, 64, 24, 0, 60, 90, 1]"}]}""",
    """Human instruction: stack the green cube on top of the red cube.
Object coordinates: object 1 (red cube): [50, 40, 18]; object 2 (green cube): [36, 58, 18]; object 3 (blue cube): [62, 26, 18].
Output: {"visual_state_description": "Three cubes stand apart on the table: red (object 1), green (object 2) and blue (object 3).", "reasoning_and_reflection": "The green cube is the one to move; the red cube stays where it is. One cube is about 4 voxels tall, so the green cube is released 5 voxels above the red cube's centre.", "language_plan": "Grasp the green cube, lift it, move above the red cube, lower it onto it, release.", "executable_plan": [{"action": "[36, 58, 28, 0, 60, 90, 1]"}, {"action": "[36, 58, 18, 0, 60, 90, 1]"}, {"action": "[36, 58, 18, 0, 60, 90, 0]"}, {"action": "[36, 58, 32, 0, 60, 90, 0]"}, {"action": "[50, 40, 32, 0, 60, 90, 0]"}, {"action": "[50, 40, 23, 0, 60, 90, 0]"}, {"action": "[50, 40, 23, 0, 60, 90, 1]"}]}""",
    """Human instruction: put the blue cylinder into the round hole of the shape sorter.
Object coordinates: object 1 (blue cylinder): [40, 36, 19]; object 2 (shape sorter, round hole): [56, 50, 24]; object 3 (shape sorter, square hole): [56, 58, 24].
Previous actions:
Step 1, action [40, 36, 29, 0, 60, 90, 1], env feedback: Last action executed successfully.
Step 2, action [40, 36, 19, 0, 60, 90, 0], env feedback: Last action executed successfully.
Output: {"visual_state_description": "The gripper holds the blue cylinder (object 1) at table height.", "reasoning_and_reflection": "The grasp worked. The cylinder must be lifted above the sorter (top at about Z 24) before moving sideways, then lowered over the round hole, not the square one.", "language_plan": "Lift, move above the round hole, lower, release.", "executable_plan": [{"action": "[40, 36, 36, 0, 60, 90, 0]"}, {"action": "[56, 50, 36, 0, 60, 90, 0]"}, {"action": "[56, 50, 30, 0, 60, 90, 0]"}, {"action": "[56, 50, 30, 0, 60, 90, 1]"}]}""",
    """Human instruction: wipe the table from left to right with the sponge.
Object coordinates: object 1 (sponge): [48, 66, 17]; object 2 (dirty area): [48, 46, 16].
Previous actions:
Step 1, action [48, 66, 17, 0, 60, 90, 0], env feedback: Last action is invalid. The target pose is in collision with the table.
Output: {"visual_state_description": "The open gripper is above the sponge (object 1) on the left of the dirty area (object 2).", "reasoning_and_reflection": "Going to Z 17 collided with the table; the sponge can be grasped slightly higher, at Z 18. To wipe, the sponge sweeps across the whole dirty area while staying on the table.", "language_plan": "Grasp the sponge at Z 18, then slide it to the right across the dirty area.", "executable_plan": [{"action": "[48, 66, 18, 0, 60, 90, 1]"}, {"action": "[48, 66, 18, 0, 60, 90, 0]"}, {"action": "[48, 56, 18, 0, 60, 90, 0]"}, {"action": "[48, 46, 18, 0, 60, 90, 0]"}, {"action": "[48, 36, 18, 0, 60, 90, 0]"}]}""",
)

MANIP_OUTPUT_FORMAT = (
    "## Output format\n"
    "Reason about what you see and about the feedback of your previous actions, then plan. Answer with one "
    "JSON object and nothing else:\n"
    '{"visual_state_description": "<what you see>", "reasoning_and_reflection": "<why, and what the feedback '
    'taught you>", "language_plan": "<the plan in words>", "executable_plan": [{"action": "[X, Y, Z, Roll, '
    'Pitch, Yaw, Gripper]"}, ...]}\n'
    "You only see the result after the whole executable_plan has run, unless an action fails."
)

# ---------------------------------------------------------------------------------------------- builder


def system_text(task: str, max_steps: int, n_examples: int) -> str:
    """The fixed part of every turn: introduction, actions, strategy, examples, output format."""
    if task == "navigation":
        actions = "## Actions\nYou can use these actions:\n" + _nav_action_list()
        parts, examples, fmt = [NAV_INTRO, actions, _nav_strategy(max_steps)], NAV_EXAMPLES, NAV_OUTPUT_FORMAT
    else:
        parts, examples, fmt = (
            [MANIP_INTRO, _manip_action_format(), _manip_strategy(max_steps)],
            MANIP_EXAMPLES,
            MANIP_OUTPUT_FORMAT,
        )
    if n_examples > len(examples):
        raise ValueError(f"{task} has {len(examples)} in-context examples, {n_examples} requested")
    shown = [f"## Example {i + 1}\n{text}" for i, text in enumerate(examples[:n_examples])]
    return "\n\n".join([*parts, *shown, fmt])


def turn_text(
    system: str,
    instruction: str,
    history: Sequence[str],
    *,
    object_info: str | None = None,
    extra: str | None = None,
) -> str:
    """One user turn: the fixed text, the instruction, optional object list, the action history so far."""
    lines = [system, "", f"## Now the human instruction is: {instruction.rstrip('.')}."]
    if object_info:
        lines.append(f"Object coordinates: {object_info}")
    if extra:
        lines.append(extra)
    if history:
        lines += ["", "## The action history:", *history]
    lines += ["", "Plan your next actions now."]
    return "\n".join(lines)
