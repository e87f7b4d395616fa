"""Hand-written navigation scenes and episodes for the tests (scenes are plain data)."""

from __future__ import annotations

import copy
from typing import Any

from envs.navigation.episodes import EPISODE_FORMAT
from envs.navigation.scene import SCENE_FORMAT


def empty_room(
    width: float = 4.0, depth: float = 4.0, objects: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    """One bare ``width x depth`` room from (0, 0); a blue ball on the floor at (3, 2) unless told otherwise."""
    ball = {
        "id": "ball_0",
        "category": "ball",
        "colour": "blue",
        "scale": 1.0,
        "pos": [3.0, 2.0, 0.0],
        "yaw": 0.0,
        "room": 0,
        "support": "floor",
    }
    return {
        "format": SCENE_FORMAT,
        "seed": 0,
        "wall_height": 2.7,
        "wall_thickness": 0.06,
        "rooms": [
            {
                "type": "living room",
                "bounds": [0.0, 0.0, width, depth],
                "floor": {"style": "wood", "rgb1": [0.5, 0.35, 0.2], "rgb2": [0.45, 0.3, 0.18]},
                "wall_rgb": [0.9, 0.9, 0.88],
                "light": {"rgb": [1.0, 1.0, 1.0], "intensity": 0.6},
            }
        ],
        "doors": [],
        "furniture": [],
        "objects": [ball] if objects is None else objects,
        "decor": [],
        "lighting": {"ambient": 0.35, "headlight": 0.3},
    }


def episode(
    scene: dict[str, Any],
    x: float,
    y: float,
    heading: float,
    target: str = "ball_0",
    instruction: str = "navigate to the ball in the room",
    subset: str = "base",
) -> dict[str, Any]:
    """An episode in ``scene`` starting at (x, y) facing ``heading`` degrees."""
    obj = next(o for o in scene["objects"] if o["id"] == target)
    return {
        "format": EPISODE_FORMAT,
        "episode_id": f"test/{x}-{y}-{heading}",
        "subset": subset,
        "index": 0,
        "set_seed": 0,
        "max_steps": 20,
        "success_distance": 1.0,
        "scene": copy.deepcopy(scene),
        "agent": {"x": x, "y": y, "heading_deg": heading, "pitch_deg": 0.0, "roll_deg": 0.0, "height": 1.5},
        "target": {
            "id": target,
            "category": obj["category"],
            "colour": obj["colour"],
            "position": obj["pos"],
        },
        "instruction": instruction,
        "shortest_path": [],
    }
