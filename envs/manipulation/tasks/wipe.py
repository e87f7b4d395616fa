"""wipe_table_direction: pick up the sponge and wipe the area that runs in a given direction.

EB's instruction: "Wipe the horizontal area." Two marked rectangular areas lie on the table, one running
left-right in the front image ("horizontal", along world y), one running away from the camera
("vertical", along world x), next to a sponge. Each area is a grid of 2 cm dirt cells; a cell is wiped
when the sponge's bottom passes over it within 1 cm of the table (RLBench's sponge detects dirt with a
proximity sensor; a rigid sponge hovers a few mm when dragged fast). Success: at least 70 % of
the named area's cells are wiped. Wiped cells fade in the images.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from envs.manipulation import language, objects, workspace
from envs.manipulation.tasks.base import Footprint, Task
from envs.manipulation.workspace import TABLE_TOP_Z

AREA_LENGTH, AREA_WIDTH, CELL = 0.20, 0.06, 0.02
AREA_THICKNESS = 0.001
SPONGE_HALF = (0.04, 0.025, 0.02)
WIPED_FRACTION = 0.7
CONTACT_HEIGHT = 0.01  # the sponge's bottom this close to the table wipes (RLBench: a proximity sensor)
_AREAS = ("area_0", "area_1")
_YAW = {"horizontal": math.pi / 2, "vertical": 0.0}
_COMMON_SENSE = {
    "horizontal": "the marked area that lies across the front camera's picture, like the horizon",
    "vertical": "the marked area that points away from the front camera, like a road stretching ahead",
}
_COMPLEX = (
    "Someone spilled juice in two places on the table. The stain that stretches {along} is the sticky one; "
    "take the sponge and wipe along it until it is clean.",
    "Before dinner I would like the table cleaned, but only one mark really matters: the one running "
    "{along}. Grab the sponge and wipe that one.",
)
_ALONG = {"horizontal": "from left to right in the front view", "vertical": "away from the front camera"}


def cell_centers() -> np.ndarray:
    """Cell centres ``(n, 2)`` in an area's frame (long side along its local x)."""
    xs = np.arange(-AREA_LENGTH / 2 + CELL / 2, AREA_LENGTH / 2, CELL)
    ys = np.arange(-AREA_WIDTH / 2 + CELL / 2, AREA_WIDTH / 2, CELL)
    return np.array([(x, y) for x in xs for y in ys])


class WipeTableDirection(Task):
    """Wipe the area named by its direction with the sponge."""

    family = "wipe"
    eb_tasks: ClassVar[dict[str, str]] = {"default": "wipe_table_direction", "spatial": "wipe_table_relative"}
    free_slots = ("sponge",)
    fixture_slots = _AREAS

    def __init__(self) -> None:
        super().__init__()
        self._cells_local = cell_centers()
        self._cells_world: dict[str, np.ndarray] = {}
        self.wiped: dict[str, np.ndarray] = {}

    def elements(self) -> tuple[list, list]:
        bodies = [objects.sponge_body("sponge", SPONGE_HALF, (0, 0, -1))]
        bodies += [
            objects.area_body(name, self._cells_local, CELL / 2 - 0.001, AREA_THICKNESS) for name in _AREAS
        ]
        return [], bodies

    def object_height(self, obj: dict[str, Any]) -> float:
        return SPONGE_HALF[2] if obj["kind"] == "sponge" else 0.0

    # ---------------------------------------------------------------------------------- episodes

    def sample_episode(self, rng: np.random.Generator, subset: str) -> dict[str, Any]:
        return self.draw_until_valid(
            rng, subset, self._try_episode, "layout within reach (and, for spatial, with a unique relation)"
        )

    def _try_episode(self, rng: np.random.Generator, subset: str) -> dict[str, Any] | None:
        directions = [str(d) for d in rng.permutation(["horizontal", "vertical"])]
        fps = [_area_footprint(d) for d in directions]
        xys = self.sample_positions(rng, [*fps, Footprint(0.047, 0.047)])
        colors = [
            str(c) for c in rng.choice([c for c in language.COLORS if c != "yellow"], size=2, replace=False)
        ]
        patterns = ["plain", "plain"]
        if subset == "visual":
            colors = [colors[0]] * 2
            patterns = [str(p) for p in rng.permutation(["checkered", "speckled"])]
        objs = [
            self.object_entry(a, "area", c, xy, _YAW[d], p)
            for a, c, xy, d, p in zip(_AREAS, colors, xys, directions, patterns)
        ]
        objs.append(self.object_entry("sponge", "sponge", "yellow", xys[2], rng.uniform(0, math.pi)))
        if not all(_within_drag_reach(o) for o in objs[:2]):
            return None
        target = int(rng.integers(2))
        instruction = self._instruction(rng, subset, objs, target, directions[target])
        if instruction is None:
            return None
        goal = {"target": _AREAS[target], "direction": directions[target], "sponge": "sponge"}
        return {"instruction": instruction, "objects": objs, "goal": goal}

    def _instruction(
        self, rng: np.random.Generator, subset: str, objs: list[dict], target: int, direction: str
    ) -> str | None:
        if subset == "base":
            return f"Wipe the {direction} area."
        if subset == "common_sense":
            return f"Wipe {_COMMON_SENSE[direction]}."
        if subset == "complex":
            return str(rng.choice(_COMPLEX)).format(along=_ALONG[direction])
        if subset == "visual":
            return f"Wipe the {objs[target]['pattern']} area."
        areas = {o["slot"]: np.array(o["xy"]) for o in objs if o["kind"] == "area"}
        sponge = np.array(objs[2]["xy"])
        relations = [
            r for r in language.RELATIONS if language.unique_in_relation(areas, sponge, r) == _AREAS[target]
        ]
        if not relations:
            return None
        return f"Wipe the area {language.RELATIONS[relations[int(rng.integers(len(relations)))]]} the sponge."

    # ---------------------------------------------------------------------------- wiping, success

    def on_layout(self) -> None:
        for area in _AREAS:
            position, rotation = self.body_pose(area)
            self._cells_world[area] = self._cells_local @ rotation[:2, :2].T + position[:2]
            self.wiped[area] = np.zeros(len(self._cells_local), dtype=bool)

    def on_control_step(self) -> None:
        if self.bounds("sponge")[0, 2] > TABLE_TOP_Z + CONTACT_HEIGHT:
            return
        position, rotation = self.body_pose("sponge")
        for area, cells in self._cells_world.items():
            local = (cells - position[:2]) @ rotation[:2, :2]
            under = (np.abs(local[:, 0]) <= SPONGE_HALF[0]) & (np.abs(local[:, 1]) <= SPONGE_HALF[1])
            newly = under & ~self.wiped[area]
            if newly.any():
                self.wiped[area] |= newly
                self._fade(area, np.nonzero(newly)[0])

    def _fade(self, area: str, cells: np.ndarray) -> None:
        geoms = self.visual_geoms(area)
        for i in cells:
            self._scene.mj_model.geom_rgba[geoms[i], 3] = 0.15

    def evaluate(self) -> dict[str, Any]:
        target = self.goal()["target"]
        fractions = {a: round(float(w.mean()), 4) for a, w in self.wiped.items()}
        success = fractions[target] >= WIPED_FRACTION
        return {
            "success": bool(success),
            "wiped_fraction": fractions[target],
            "wiped": fractions,
            "grasped": self.is_grasped("sponge"),
        }


def _within_drag_reach(area: dict[str, Any]) -> bool:
    """Both ends of an area's long side are within the arm's comfortable reach along the table."""
    along = np.array([math.cos(area["yaw"]), math.sin(area["yaw"])])
    ends = [np.array(area["xy"]) + s * AREA_LENGTH / 2 * along for s in (-1, 1)]
    base = np.array([workspace.ROBOT_BASE_X, 0.0])
    return all(np.linalg.norm(end - base) <= workspace.DRAG_REACH for end in ends)


def _area_footprint(direction: str) -> Footprint:
    if direction == "horizontal":
        return Footprint(AREA_WIDTH / 2, AREA_LENGTH / 2)
    return Footprint(AREA_LENGTH / 2, AREA_WIDTH / 2)
