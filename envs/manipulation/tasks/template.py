"""Template for the next EB-Manipulation task family: copy this file, fill in the four hooks, add the class
to ``TASKS`` in ``tasks/__init__.py`` and its id in ``registration.py``, and give the expert a skill.

This example ("lift the cube of a given colour 10 cm") is complete and runs, but is not registered.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from envs.manipulation import language, objects
from envs.manipulation.shapes import SHAPE_HEIGHT, SHAPES
from envs.manipulation.tasks.base import Footprint, Task
from envs.manipulation.workspace import TABLE_TOP_Z

LIFT_HEIGHT = 0.10


class LiftCubeColor(Task):
    """Lift the named cube 10 cm above the table."""

    family = "lift"  # the key in TASKS and in the env id
    eb_tasks: ClassVar[dict[str, str]] = {"default": "lift_cube_color", "spatial": "lift_cube_relative"}
    free_slots = tuple(f"cube_{i}" for i in range(3))  # every body any episode may use
    fixture_slots = ()

    def elements(self) -> tuple[list, list]:
        """1. Load the scene: MJCF (assets, bodies); bodies start parked, episodes place them."""
        return [], [objects.shape_body(slot, "cube", (0, 0, -1)) for slot in self.free_slots]

    def object_height(self, obj: dict[str, Any]) -> float:
        return SHAPE_HEIGHT / 2

    def sample_episode(self, rng: np.random.Generator, subset: str) -> dict[str, Any]:
        """2. Initialise an episode from an explicit random generator (only ``rng``, never global state)."""
        r = SHAPES["cube"].radius
        xys = self.sample_positions(rng, [Footprint(r, r)] * len(self.free_slots))
        colors = [str(c) for c in rng.choice(list(language.COLORS), size=len(xys), replace=False)]
        objs = [
            self.object_entry(slot, "cube", c, xy, rng.uniform(0, math.pi / 2))
            for slot, c, xy in zip(self.free_slots, colors, xys)
        ]
        target = objs[int(rng.integers(len(objs)))]
        return {
            "instruction": f"Lift the {target['color']} cube.",
            "objects": objs,
            "goal": {"target": target["slot"]},
        }

    def evaluate(self) -> dict[str, Any]:
        """3. Success from simulator state, in this one place (JSON-safe values)."""
        target = self.goal()["target"]
        lifted = bool(self.center(target)[2] > TABLE_TOP_Z + SHAPE_HEIGHT / 2 + LIFT_HEIGHT)
        grasped = self.is_grasped(target)
        return {"success": lifted and grasped, "lifted": lifted, "grasped": grasped}

    # 4. Optional hooks: on_layout() after objects are placed, on_control_step() after every control step.
