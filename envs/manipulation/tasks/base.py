"""The task contract: a family is a small subclass that loads its objects, samples episodes from an explicit
random generator, lays an episode out, and evaluates success from simulator state in one place.

An episode is a plain JSON dict::

    {"family": "pick", "subset": "spatial", "index": 3, "seed": 0,
     "instruction": "Pick up the object to the left of the star and place it into the red container.",
     "objects": [{"slot": "moon_0", "kind": "moon", "color": "blue", "pattern": "plain",
                  "xy": [-0.1, 0.05], "yaw": 1.2}, ...],
     "goal": {"target": "moon_0", "container": "container_1"}}

``slot`` names the scene body that plays the object; ``xy`` and ``yaw`` (radians) are world-frame.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import mujoco
import numpy as np

from envs.manipulation import language, objects, workspace
from envs.manipulation.scene import TabletopScene

SUBSETS: tuple[str, ...] = ("base", "common_sense", "complex", "spatial", "visual")
PARKED_FIXTURE = (0.0, 0.0, -1.0)  # where fixtures are built: under the floor, out of sight and contact
LAYOUT_MARGIN = 0.035  # metres of free table between two objects' footprints: room for a finger


class EpisodeError(ValueError):
    """An episode dict that does not fit the task (unknown slot, missing goal key, ...)."""


@dataclass(frozen=True)
class Footprint:
    """Half extents (metres) of an object's axis-aligned footprint on the table, whatever its yaw."""

    half_x: float
    half_y: float


class Task(ABC):
    """One EB-Manipulation task family on the robosuite table.

    Subclasses set ``family`` (EB's task class: pick, stack, place, wipe) and ``eb_tasks`` (EB's task
    names for the base and spatial variants), and implement :meth:`elements`, :meth:`sample_episode` and
    :meth:`evaluate`. ``free_slots`` are bodies with a free joint; ``fixture_slots`` are static bodies.
    """

    family: ClassVar[str]
    eb_tasks: ClassVar[dict[str, str]]
    free_slots: ClassVar[tuple[str, ...]] = ()
    fixture_slots: ClassVar[tuple[str, ...]] = ()

    def __init__(self) -> None:
        self.scene: TabletopScene | None = None
        self.episode: dict[str, Any] | None = None
        self._collision: dict[str, list[int]] = {}
        self._visual: dict[str, list[int]] = {}
        self._fingers: tuple[set[int], set[int]] = (set(), set())

    # --------------------------------------------------------------------------------------- hooks

    @abstractmethod
    def elements(self) -> tuple[list[ET.Element], list[ET.Element]]:
        """MJCF ``(assets, bodies)`` of every object any episode of this family may use."""

    @abstractmethod
    def sample_episode(self, rng: np.random.Generator, subset: str) -> dict[str, Any]:
        """A new episode's ``instruction``, ``objects`` and ``goal``, drawn from ``rng`` only."""

    def draw_until_valid(
        self,
        rng: np.random.Generator,
        subset: str,
        draw: Callable[[np.random.Generator, str], dict[str, Any] | None],
        what: str,
        tries: int = 200,
    ) -> dict[str, Any]:
        """Episodes drawn by rejection: ``draw`` returns ``None`` for a layout it rejects."""
        for _ in range(tries):
            episode = draw(rng, subset)
            if episode is not None:
                return episode
        raise RuntimeError(f"no {what} found in {tries} tries")

    @abstractmethod
    def evaluate(self) -> dict[str, Any]:
        """Success and its sub-predicates from simulator state: ``{"success": bool, ...}`` (JSON-safe)."""

    def on_control_step(self) -> None:  # noqa: B027 - optional hook
        """Called after every control step (the wipe task accumulates cleaned cells here)."""

    def on_layout(self) -> None:  # noqa: B027 - optional hook
        """Called after an episode's objects are placed and painted."""

    def object_height(self, obj: dict[str, Any]) -> float:
        """Height above the table top at which an object's origin rests (fixtures: 0)."""
        return 0.0

    # ------------------------------------------------------------------------------------- binding

    def bind(self, scene: TabletopScene) -> None:
        """Resolve geom ids once the scene's model is compiled."""
        self.scene = scene
        for slot in self.free_slots + self.fixture_slots + tuple(objects.DISTRACTORS):
            self._collision[slot] = scene.geom_ids(slot, "c")
            self._visual[slot] = scene.geom_ids(slot, "v")
        gripper = scene.robots[0].gripper["right"]
        self._fingers = (
            self._named_geoms(gripper.important_geoms["left_finger"]),
            self._named_geoms(gripper.important_geoms["right_finger"]),
        )

    def apply(self, episode: dict[str, Any]) -> None:
        """Lay out ``episode``: park every free body, then place and paint the episode's objects."""
        self._check_episode(episode)
        self.episode = episode
        scene = self._scene
        for i, slot in enumerate(self.free_slots):
            scene.park_free_body(slot, i)
        for slot in objects.DISTRACTORS:
            scene.place_fixture(slot, PARKED_FIXTURE, 0.0)
        for obj in episode["objects"]:
            position = (*obj["xy"], workspace.TABLE_TOP_Z + self.object_height(obj))
            if obj["slot"] in self.free_slots:
                scene.place_free_body(obj["slot"], position, obj["yaw"])
            else:
                scene.place_fixture(obj["slot"], position, obj["yaw"])
            scene.paint(self._visual[obj["slot"]], (*language.COLORS[obj["color"]], 1.0), obj["pattern"])
        mujoco.mj_forward(scene.mj_model, scene.mj_data)
        self.on_layout()

    # ------------------------------------------------------------------------------- state queries

    def laid_out(self) -> dict[str, Any]:
        """The current episode."""
        if self.episode is None:
            raise RuntimeError("no episode laid out yet: reset the env first")
        return self.episode

    def objects_in_episode(self) -> list[dict[str, Any]]:
        """The current episode's object entries."""
        return self.laid_out()["objects"]

    def goal(self) -> dict[str, Any]:
        """The current episode's goal."""
        return self.laid_out()["goal"]

    def entry(self, slot: str) -> dict[str, Any]:
        """The episode entry of ``slot``."""
        for obj in self.objects_in_episode():
            if obj["slot"] == slot:
                return obj
        raise EpisodeError(f"slot {slot!r} is not in the current episode")

    def visual_geoms(self, slot: str) -> list[int]:
        """Rendered geoms of a slot (what the segmentation shows)."""
        return self._visual[slot]

    def center(self, slot: str) -> np.ndarray:
        """World centre of the slot's bounding box (the point EB's object list reports)."""
        return self.bounds(slot).mean(axis=0)

    def bounds(self, slot: str) -> np.ndarray:
        """World axis-aligned bounding box ``[[min xyz], [max xyz]]`` of a slot's rendered geoms."""
        m, d = self._scene.mj_model, self._scene.mj_data
        corners = []
        for g in self._visual[slot]:
            center, half = m.geom_aabb[g, :3], m.geom_aabb[g, 3:]
            local = center + half * _UNIT_CORNERS
            corners.append(local @ d.geom_xmat[g].reshape(3, 3).T + d.geom_xpos[g])
        pts = np.vstack(corners)
        return np.stack([pts.min(axis=0), pts.max(axis=0)])

    def body_pose(self, slot: str) -> tuple[np.ndarray, np.ndarray]:
        """World position and rotation matrix of a slot's body."""
        body = self._scene.body_id(slot)
        return self._scene.mj_data.xpos[body].copy(), self._scene.mj_data.xmat[body].reshape(3, 3).copy()

    def in_contact(self, slot_a: str, slot_b: str) -> bool:
        """Whether any collision geom of ``slot_a`` touches one of ``slot_b``."""
        return self._touching(set(self._collision[slot_a]), set(self._collision[slot_b]))

    def is_grasped(self, slot: str) -> bool:
        """Both fingers touch the object (robosuite's grasp test)."""
        geoms = set(self._collision[slot])
        return self._touching(self._fingers[0], geoms) and self._touching(self._fingers[1], geoms)

    def touched_by_gripper(self, slot: str) -> bool:
        """Either finger touches the object."""
        geoms = set(self._collision[slot])
        return self._touching(self._fingers[0] | self._fingers[1], geoms)

    def in_fixture_frame(self, point: np.ndarray, fixture: str) -> np.ndarray:
        """A world point in a fixture's frame (origin at the centre of its bottom face)."""
        position, rotation = self.body_pose(fixture)
        return rotation.T @ (np.asarray(point) - position)

    def snapshot(self) -> dict[str, Any]:
        """JSON-safe state: every episode object's pose, the gripper, and the evaluation."""
        objects = {}
        for obj in self.objects_in_episode():
            position, rotation = self.body_pose(obj["slot"])
            quat = np.zeros(4)
            mujoco.mju_mat2Quat(quat, rotation.ravel())
            objects[obj["slot"]] = {"position": _rounded(position), "quat": _rounded(quat)}
        grip_pos, _ = self._scene.grip_pose()
        return {
            "objects": objects,
            "grip_position": _rounded(grip_pos),
            "gripper_closed": self._scene.gripper_closed,
            "evaluation": self.evaluate(),
        }

    # ----------------------------------------------------------------------------- episode helpers

    def sample_positions(
        self, rng: np.random.Generator, footprints: Sequence[Footprint], tries: int = 2000
    ) -> list[tuple[float, float]]:
        """Object centres in the placement region whose footprints keep :data:`LAYOUT_MARGIN` apart."""
        (x_lo, x_hi), (y_lo, y_hi) = workspace.PLACEMENT_X, workspace.PLACEMENT_Y
        for _ in range(tries):
            placed: list[tuple[float, float]] = []
            for fp in footprints:
                xy = (
                    rng.uniform(x_lo + fp.half_x / 2, x_hi - fp.half_x / 2),
                    rng.uniform(y_lo + fp.half_y / 2, y_hi - fp.half_y / 2),
                )
                if not _overlaps(xy, fp, placed, footprints):
                    placed.append(xy)
                else:
                    break
            if len(placed) == len(footprints):
                return placed
        raise RuntimeError(f"could not lay out {len(footprints)} objects without overlap in {tries} tries")

    @staticmethod
    def object_entry(
        slot: str, kind: str, color: str, xy: Iterable[float], yaw: float, pattern: str = "plain"
    ) -> dict[str, Any]:
        """One JSON-safe ``objects`` entry."""
        x, y = (float(v) for v in xy)
        return {
            "slot": slot,
            "kind": kind,
            "color": color,
            "pattern": pattern,
            "xy": [round(x, 5), round(y, 5)],
            "yaw": round(float(yaw), 5),
        }

    # -------------------------------------------------------------------------------------- private

    @property
    def _scene(self) -> TabletopScene:
        if self.scene is None:
            raise RuntimeError(f"task {self.family!r} is not bound to a scene")
        return self.scene

    def _named_geoms(self, names: Iterable[str]) -> set[int]:
        m = self._scene.mj_model
        return {mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_GEOM, n) for n in names}

    def _touching(self, geoms_a: set[int], geoms_b: set[int]) -> bool:
        d = self._scene.mj_data
        for c in d.contact[: d.ncon]:
            g1, g2 = int(c.geom1), int(c.geom2)
            if (g1 in geoms_a and g2 in geoms_b) or (g2 in geoms_a and g1 in geoms_b):
                return True
        return False

    def _check_episode(self, episode: dict[str, Any]) -> None:
        if episode.get("family") not in (None, self.family):
            raise EpisodeError(
                f"episode of family {episode.get('family')!r} given to the {self.family!r} env"
            )
        known = set(self.free_slots) | set(self.fixture_slots) | set(objects.DISTRACTORS)
        for obj in episode.get("objects", []):
            if obj.get("slot") not in known:
                raise EpisodeError(
                    f"episode object slot {obj.get('slot')!r} is not in the {self.family!r} scene"
                )
            if obj.get("color") not in language.COLORS:
                raise EpisodeError(f"unknown colour {obj.get('color')!r}; known: {sorted(language.COLORS)}")
        if "goal" not in episode or "instruction" not in episode:
            raise EpisodeError(
                "an episode needs 'instruction', 'objects' and 'goal' (see envs.manipulation.tasks.base)"
            )


_UNIT_CORNERS = np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)], dtype=float)


def _overlaps(
    xy: tuple[float, float], fp: Footprint, placed: list[tuple[float, float]], footprints: Sequence[Footprint]
) -> bool:
    for other_xy, other in zip(placed, footprints):
        if (
            abs(xy[0] - other_xy[0]) < fp.half_x + other.half_x + LAYOUT_MARGIN
            and abs(xy[1] - other_xy[1]) < fp.half_y + other.half_y + LAYOUT_MARGIN
        ):
            return True
    return False


def _rounded(values: np.ndarray, digits: int = 5) -> list[float]:
    return [round(float(v), digits) for v in values]
