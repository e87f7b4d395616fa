"""place_into_shape_sorter_color: put the star of a given colour into the shape sorter.

EB's instruction: "Put the red star into the shape sorter." Three stars of different colours and a shape
sorter (a hollow box whose lid has a star-sized hole in its centre) stand on the table. Success (EB's
sensor inside the sorter): the star's centre is inside the sorter, below its lid.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from envs.manipulation import language, objects
from envs.manipulation.shapes import SHAPE_HEIGHT, SHAPES
from envs.manipulation.tasks.base import Footprint, Task

SORTER_INNER, SORTER_WALL, SORTER_HEIGHT, SORTER_LID, SORTER_HOLE = 0.15, 0.01, 0.10, 0.01, 0.075
STARS = 3
_STAR_SLOTS = tuple(f"star_{i}" for i in range(STARS))
_COMPLEX = (
    "My daughter is learning her colours with the shape sorter. She asked for the {color} star to go in "
    "first, so please drop the {color} star through the hole in the shape sorter.",
    "The shape sorter goes back to the toy shelf soon, but one piece is still missing inside it: the {color} "
    "star. Find it among the stars on the table and put it into the sorter.",
)


class PlaceIntoShapeSorterColor(Task):
    """Drop the named star through the sorter's hole."""

    family = "place"
    eb_tasks: ClassVar[dict[str, str]] = {
        "default": "place_into_shape_sorter_color",
        "spatial": "place_into_shape_sorter_relative",
    }
    free_slots = _STAR_SLOTS
    fixture_slots = ("sorter",)

    def elements(self) -> tuple[list, list]:
        bodies = [objects.shape_body(slot, "star", (0, 0, -1)) for slot in _STAR_SLOTS]
        parts = objects.sorter_parts(SORTER_INNER, SORTER_WALL, SORTER_HEIGHT, SORTER_LID, SORTER_HOLE)
        bodies.append(objects.fixture_body("sorter", parts))
        return [], bodies

    def object_height(self, obj: dict[str, Any]) -> float:
        return 0.0 if obj["kind"] == "sorter" else SHAPE_HEIGHT / 2

    # ---------------------------------------------------------------------------------- episodes

    def sample_episode(self, rng: np.random.Generator, subset: str) -> dict[str, Any]:
        return self.draw_until_valid(rng, subset, self._try_episode, "spatial layout with a unique relation")

    def _try_episode(self, rng: np.random.Generator, subset: str) -> dict[str, Any] | None:
        r = SHAPES["star"].radius
        sorter_half = SORTER_INNER / 2 + SORTER_WALL
        xys = self.sample_positions(rng, [Footprint(sorter_half, sorter_half)] + [Footprint(r, r)] * STARS)
        colors = [str(c) for c in rng.choice(list(language.COLORS), size=STARS + 1, replace=False)]
        patterns = ["plain"] * STARS
        if subset == "visual":
            colors = [colors[0]] * STARS + colors[-1:]
            patterns = [str(p) for p in rng.permutation(["checkered", "speckled", "plain"])]
        objs = [self.object_entry("sorter", "sorter", colors[-1], xys[0], 0.0)]
        objs += [
            self.object_entry(slot, "star", c, xy, rng.uniform(0, 2 * math.pi), p)
            for slot, c, xy, p in zip(_STAR_SLOTS, colors, xys[1:], patterns)
        ]
        choices = [i for i, p in enumerate(patterns) if p != "plain"] or list(range(STARS))
        target = objs[1 + choices[int(rng.integers(len(choices)))]]
        instruction = self._instruction(rng, subset, objs, target)
        if instruction is None:
            return None
        return {
            "instruction": instruction,
            "objects": objs,
            "goal": {"target": target["slot"], "sorter": "sorter"},
        }

    def _instruction(
        self, rng: np.random.Generator, subset: str, objs: list[dict], target: dict
    ) -> str | None:
        color = target["color"]
        if subset == "base":
            return f"Put the {color} star into the shape sorter."
        if subset == "common_sense":
            return f"Put the star that has {language.COLOR_CLUES[color]} into the shape sorter."
        if subset == "complex":
            return str(rng.choice(_COMPLEX)).format(color=color)
        if subset == "visual":
            return f"Put the {target['pattern']} star into the shape sorter."
        stars = {o["slot"]: np.array(o["xy"]) for o in objs if o["kind"] == "star"}
        options = []
        for ref_slot, ref_xy in stars.items():
            others = {s: xy for s, xy in stars.items() if s != ref_slot}
            options += [
                (ref_slot, rel)
                for rel in language.RELATIONS
                if ref_slot != target["slot"]
                and language.unique_in_relation(others, ref_xy, rel) == target["slot"]
            ]
        if not options:
            return None
        ref_slot, relation = options[int(rng.integers(len(options)))]
        ref_color = next(o["color"] for o in objs if o["slot"] == ref_slot)
        return f"Put the star {language.RELATIONS[relation]} the {ref_color} star into the shape sorter."

    # -------------------------------------------------------------------------------- evaluation

    def evaluate(self) -> dict[str, Any]:
        target = self.goal()["target"]
        local = self.in_fixture_frame(self.center(target), "sorter")
        inside = bool(np.all(np.abs(local[:2]) < SORTER_INNER / 2) and local[2] < SORTER_HEIGHT - SORTER_LID)
        return {"success": inside, "inside_sorter": inside, "grasped": self.is_grasped(target)}
