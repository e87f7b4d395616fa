"""stack_cubes_color: stack one object on another, both named by colour.

EB's instruction: "Stack the red star and the olive star in sequence." (the first named object is the
bottom one). Four objects of one shape and four colours stand on the table. Success: the top object rests
on the bottom one (touching, above it, centred within 2.5 cm) and the gripper has let go of it (EB counts a
stack only after the gripper opened).
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from envs.manipulation import language, objects
from envs.manipulation.shapes import SHAPE_HEIGHT, SHAPE_KEYS, SHAPES
from envs.manipulation.tasks.base import Footprint, Task

STACK_COPIES = 4
CENTRED_WITHIN = 0.025  # metres between the two objects' centres, horizontally
_COMPLEX = (
    "We are building a little tower for a photo. The base of the tower has to be the {a} {noun}; once it "
    "is in place, set the {b} {noun} on top of it, and leave the other pieces where they are.",
    "My son wants his {noun}s sorted into a stack, but he insists on the order: the {a} one stays at the "
    "bottom and the {b} one goes right on top of it. Can you do that for him?",
)


class StackCubesColor(Task):
    """Put the second named object on top of the first named one."""

    family = "stack"
    eb_tasks: ClassVar[dict[str, str]] = {"default": "stack_cubes_color", "spatial": "stack_cubes_relative"}
    free_slots = tuple(f"{k}_{i}" for k in SHAPE_KEYS for i in range(STACK_COPIES))

    def elements(self) -> tuple[list, list]:
        return [], [objects.shape_body(slot, slot.rsplit("_", 1)[0], (0, 0, -1)) for slot in self.free_slots]

    def object_height(self, obj: dict[str, Any]) -> float:
        return SHAPE_HEIGHT / 2

    # ---------------------------------------------------------------------------------- episodes

    def sample_episode(self, rng: np.random.Generator, subset: str) -> dict[str, Any]:
        return self.draw_until_valid(rng, subset, self._try_episode, "spatial layout with a unique relation")

    def _try_episode(self, rng: np.random.Generator, subset: str) -> dict[str, Any] | None:
        kind = str(rng.choice(SHAPE_KEYS))
        r = SHAPES[kind].radius
        xys = self.sample_positions(rng, [Footprint(r, r)] * STACK_COPIES)
        colors = [str(c) for c in rng.choice(list(language.COLORS), size=STACK_COPIES, replace=False)]
        patterns = ["plain"] * STACK_COPIES
        if subset == "visual":  # one colour for all: only the surface pattern tells them apart
            colors = [colors[0]] * STACK_COPIES
            patterns = [str(p) for p in rng.permutation(["checkered", "speckled", "plain", "plain"])]
        objs = [
            self.object_entry(f"{kind}_{i}", kind, c, xy, rng.uniform(0, 2 * math.pi), p)
            for i, (c, xy, p) in enumerate(zip(colors, xys, patterns))
        ]
        if subset == "visual":
            bottom, top = patterns.index("checkered"), patterns.index("speckled")
            if rng.random() < 0.5:
                bottom, top = top, bottom
        else:
            bottom, top = (int(i) for i in rng.choice(STACK_COPIES, size=2, replace=False))
        goal = {"bottom": objs[bottom]["slot"], "top": objs[top]["slot"]}
        instruction = self._instruction(rng, subset, objs, objs[bottom], objs[top])
        if instruction is None:
            return None
        return {"instruction": instruction, "objects": objs, "goal": goal}

    def _instruction(
        self, rng: np.random.Generator, subset: str, objs: list[dict], bottom: dict, top: dict
    ) -> str | None:
        noun = SHAPES[bottom["kind"]].noun
        a, b = bottom["color"], top["color"]
        if subset == "base":
            return f"Stack the {a} {noun} and the {b} {noun} in sequence."
        if subset == "common_sense":
            return (
                f"First find the {noun} that has {language.COLOR_CLUES[a]}, then stack the {noun} that has "
                f"{language.COLOR_CLUES[b]} on top of it."
            )
        if subset == "complex":
            return str(rng.choice(_COMPLEX)).format(noun=noun, a=a, b=b)
        if subset == "visual":
            return f"Stack the {bottom['pattern']} {noun} and the {top['pattern']} {noun} in sequence."
        others = {o["slot"]: np.array(o["xy"]) for o in objs if o["slot"] != bottom["slot"]}
        relations = [
            rel
            for rel in language.RELATIONS
            if language.unique_in_relation(others, np.array(bottom["xy"]), rel) == top["slot"]
        ]
        if not relations:
            return None
        relation = language.RELATIONS[relations[int(rng.integers(len(relations)))]]
        return f"Stack the {a} {noun} and the {noun} {relation} it in sequence."

    # -------------------------------------------------------------------------------- evaluation

    def evaluate(self) -> dict[str, Any]:
        goal = self.goal()
        bottom, top = goal["bottom"], goal["top"]
        offset = self.center(top) - self.center(bottom)
        above = bool(0.6 * SHAPE_HEIGHT < offset[2] < 1.4 * SHAPE_HEIGHT)
        centred = bool(np.linalg.norm(offset[:2]) < CENTRED_WITHIN)
        touching = self.in_contact(top, bottom)
        released = not self.touched_by_gripper(top)
        return {
            "success": above and centred and touching and released,
            "above": above,
            "centred": centred,
            "touching": touching,
            "released": released,
            "grasped": self.is_grasped(top),
        }
