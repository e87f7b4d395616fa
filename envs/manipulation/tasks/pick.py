"""pick_cube_shape: pick up the object of a given shape and place it into the container of a given colour.

EB's instruction: "Pick up the star and place it into the yellow container." Three or four shapes of
different kinds and two open containers of different colours stand on the table. Success (EB's detection
sensor inside the container): the target's centre lies inside the container, below its rim.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from envs.manipulation import language, objects
from envs.manipulation.shapes import SHAPE_HEIGHT, SHAPE_KEYS, SHAPES
from envs.manipulation.tasks.base import Footprint, Task
from envs.manipulation.workspace import TABLE_TOP_Z

CONTAINER_INNER, CONTAINER_WALL, CONTAINER_HEIGHT, CONTAINER_FLOOR = 0.10, 0.008, 0.05, 0.006
_CONTAINERS = ("container_0", "container_1")
_COMPLEX = (
    "I'm tidying up the play table after the kids went to bed, and the {noun} keeps rolling towards the "
    "edge. Could you pick it up and put it into the {color} container, so that I find it there tomorrow?",
    "Before the guests arrive I want the table clear. Leave everything else as it is for now, but the {noun} "
    "has to go: take it and drop it into the {color} container.",
)


class PickCubeShape(Task):
    """Pick the named shape and place it into the named container."""

    family = "pick"
    eb_tasks: ClassVar[dict[str, str]] = {"default": "pick_cube_shape", "spatial": "pick_cube_relative"}
    free_slots = tuple(f"{k}_0" for k in SHAPE_KEYS)
    fixture_slots = _CONTAINERS

    def elements(self) -> tuple[list, list]:
        bodies = [objects.shape_body(slot, slot.rsplit("_", 1)[0], (0, 0, -1)) for slot in self.free_slots]
        parts = objects.container_parts(CONTAINER_INNER, CONTAINER_WALL, CONTAINER_HEIGHT, CONTAINER_FLOOR)
        bodies += [objects.fixture_body(name, parts) for name in _CONTAINERS]
        return [], bodies

    def object_height(self, obj: dict[str, Any]) -> float:
        return 0.0 if obj["kind"] == "container" else SHAPE_HEIGHT / 2

    # ---------------------------------------------------------------------------------- episodes

    def sample_episode(self, rng: np.random.Generator, subset: str) -> dict[str, Any]:
        return self.draw_until_valid(rng, subset, self._try_episode, "spatial layout with a unique relation")

    def _try_episode(self, rng: np.random.Generator, subset: str) -> dict[str, Any] | None:
        kinds = list(rng.choice(SHAPE_KEYS, size=int(rng.integers(3, 5)), replace=False))
        shape_colors = list(rng.choice(list(language.COLORS), size=len(kinds), replace=False))
        box_colors = list(rng.choice(list(language.COLORS), size=2, replace=False))
        shape_fp = [Footprint(SHAPES[k].radius, SHAPES[k].radius) for k in kinds]
        box_half = CONTAINER_INNER / 2 + CONTAINER_WALL
        xys = self.sample_positions(rng, [Footprint(box_half, box_half)] * 2 + shape_fp)
        patterns = ["plain"] * (len(kinds) + 2)
        if subset == "visual":
            box_colors = [box_colors[0]] * 2
            patterns = _visual_patterns(rng, len(kinds))
        objs = [
            self.object_entry(name, "container", box_colors[i], xys[i], 0.0, patterns[i])
            for i, name in enumerate(_CONTAINERS)
        ]
        objs += [
            self.object_entry(f"{k}_0", str(k), str(c), xy, rng.uniform(0, 2 * math.pi), p)
            for k, c, xy, p in zip(kinds, shape_colors, xys[2:], patterns[2:])
        ]
        target, box = _pick_target(rng, patterns[2:]), int(rng.integers(2))
        goal = {"target": f"{kinds[target]}_0", "container": _CONTAINERS[box]}
        instruction = self._instruction(rng, subset, objs, goal)
        if instruction is None:
            return None
        return {"instruction": instruction, "objects": objs, "goal": goal}

    def _instruction(self, rng: np.random.Generator, subset: str, objs: list[dict], goal: dict) -> str | None:
        by_slot = {o["slot"]: o for o in objs}
        target, box = by_slot[goal["target"]], by_slot[goal["container"]]
        noun, color = SHAPES[target["kind"]].noun, box["color"]
        if subset == "base":
            return f"Pick up the {noun} and place it into the {color} container."
        if subset == "common_sense":
            return (
                f"Pick up the object shaped like {language.SHAPE_CLUES[target['kind']]} and place it into "
                f"the container that has {language.COLOR_CLUES[color]}."
            )
        if subset == "complex":
            return str(rng.choice(_COMPLEX)).format(noun=noun, color=color)
        if subset == "visual":
            return f"Pick up the {target['pattern']} object and place it into the {box['pattern']} container."
        return _spatial_instruction(rng, objs, target, color)

    # -------------------------------------------------------------------------------- evaluation

    def evaluate(self) -> dict[str, Any]:
        goal = self.goal()
        target, box = goal["target"], goal["container"]
        local = self.in_fixture_frame(self.center(target), box)
        inside = bool(np.all(np.abs(local[:2]) < CONTAINER_INNER / 2) and local[2] < CONTAINER_HEIGHT + 0.01)
        lifted = bool(self.center(target)[2] > TABLE_TOP_Z + SHAPE_HEIGHT / 2 + 0.03)
        return {
            "success": inside,
            "inside_container": inside,
            "grasped": self.is_grasped(target),
            "lifted": lifted,
        }


def _visual_patterns(rng: np.random.Generator, n_shapes: int) -> list[str]:
    """Containers: one checkered, one speckled; shapes: checkered, speckled, then plain ones, shuffled."""
    boxes = [str(p) for p in rng.permutation(["checkered", "speckled"])]
    shapes = [str(p) for p in rng.permutation(["checkered", "speckled", "plain", "plain"][:n_shapes])]
    return boxes + shapes


def _pick_target(rng: np.random.Generator, patterns: list[str]) -> int:
    """A patterned shape whose pattern no other shape shares (any shape when all are plain)."""
    unique = [i for i, p in enumerate(patterns) if p != "plain" and patterns.count(p) == 1]
    unique = unique or list(range(len(patterns)))
    return unique[int(rng.integers(len(unique)))]


def _spatial_instruction(rng: np.random.Generator, objs: list[dict], target: dict, color: str) -> str | None:
    shapes = {o["slot"]: np.array(o["xy"]) for o in objs if o["kind"] != "container"}
    options = []
    for ref_slot, ref_xy in shapes.items():
        if ref_slot == target["slot"]:
            continue
        others = {s: xy for s, xy in shapes.items() if s != ref_slot}
        for relation in language.RELATIONS:
            if language.unique_in_relation(others, ref_xy, relation) == target["slot"]:
                options.append((ref_slot, relation))
    if not options:
        return None
    ref_slot, relation = options[int(rng.integers(len(options)))]
    ref_noun = SHAPES[ref_slot.rsplit("_", 1)[0]].noun
    return (
        f"Pick up the object {language.RELATIONS[relation]} the {ref_noun} and place it into the "
        f"{color} container."
    )
