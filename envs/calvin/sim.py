"""One PyBullet world holding the CALVIN play-table, blocks and Panda: reset, step, observe, snapshot.

This is the simulator half of :class:`envs.calvin.env.PlayTableEnv` and knows nothing about Gymnasium.
The world is built once. A reset places every joint, light and block from CALVIN's ``robot_obs``/
``scene_obs`` with zero velocities and the motor targets set again, then drops every broadphase proxy and
re-creates it (:meth:`PlayTableSim._forget_contacts`), which deletes every overlapping pair and with it
every persistent contact manifold. It takes about 0.5 ms without cameras (``bench/calvin_reset.py``),
against tens of ms for rebuilding the world from the URDFs (:meth:`PlayTableSim.rebuild`, what a reset
did before). An episode depends on its reset arguments only, never on the episodes run before it: its
trajectory is bit for bit the one a freshly built world gives (``tests/envs/calvin/test_reset.py``).

Restoring a saved state (``saveState``/``restoreState``) is not enough: Bullet keeps the manifolds of
pairs that existed before and the order of their contact points, the solver visits contacts in that
order, and a chain evaluated after others ended one step apart from the same chain in a fresh process.
For the same reason the world uses Bullet's simple broadphase (a flat proxy array: pairs are found in
proxy order and removed as soon as the boxes part) instead of the default dynamic AABB tree, whose
shape, re-balancing cursor and lazy pair clean-up carry history that no API call resets; pair order
decides the simulation islands and so the order the solver visits constraints in. Its all-pairs test
over the 27 collision objects costs nothing measurable; allocating its 65,536 proxy slots adds tens of
ms to building an env, once.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pybullet_data

from envs.calvin import constants as C
from envs.calvin.assets import (
    OFFICIAL_SCALING,
    AssetPaths,
    block_urdf,
    default_cache_dir,
    generated_assets,
    official_assets,
    write_cached,
)
from envs.calvin.bullet import connect_direct, pb
from envs.calvin.camera import RENDERERS, Cameras, load_egl
from envs.calvin.robot import PandaRobot
from envs.calvin.scene import PlayTableScene
from envs.calvin.scenes import DEFAULT_SCENE, scene_spec


class PlayTableSim:
    """The simulated play-table. ``calvin_assets`` loads a user's original CALVIN ``data/`` folder."""

    def __init__(
        self,
        *,
        renderer: str = "tiny",
        robot_detail: str = "collision",
        calvin_assets: str | None = None,
        cache_dir: str | None = None,
        scene: str = DEFAULT_SCENE,
    ) -> None:
        if renderer not in RENDERERS:
            raise ValueError(f"renderer must be one of {RENDERERS}, got {renderer!r}")
        self.spec = scene_spec(scene)
        self._asset_args = (robot_detail, calvin_assets, cache_dir)
        assets, scaling = self._assets(robot_detail, calvin_assets, cache_dir, self.spec.name)
        self.p = connect_direct()
        self._assets_loaded, self._scaling, self._renderer = assets, scaling, renderer
        #: Blocks no task names, ``{"color", "size", "pose": [x, y, z, yaw]}`` (robustness distractors).
        self.extras: tuple[dict[str, Any], ...] = ()
        self.p.resetSimulation(pb.RESET_USE_SIMPLE_BROADPHASE)  # see the module docstring
        # the EGL plugin only draws bodies loaded after it, so it comes first (as in CALVIN)
        self._egl_plugin = load_egl(self.p) if renderer == "egl" else None
        self._load_world()

    def _load_world(self) -> None:
        """Build every body in an empty world; body ids come out the same each time."""
        self.p.setPhysicsEngineParameter(deterministicOverlappingPairs=1)
        self.p.setTimeStep(1.0 / C.PHYSICS_HZ)
        self.p.setGravity(0, 0, C.GRAVITY)
        self.robot = PandaRobot(self.p, self._assets_loaded.robot)
        self.scene = PlayTableScene(self.p, self._assets_loaded, self._scaling, self.spec)
        self.cameras = Cameras(
            self.p, self.robot.uid, self.robot.camera_link, self._renderer, self._egl_plugin
        )
        # (loaded last: every other body keeps the id a world without them gives it)
        self.extra_blocks = [
            self.p.loadURDF(self._extra_urdf(e), (0, 0, -5 - i)) for i, e in enumerate(self.extras)
        ]
        self.body_names = {
            self.robot.uid: C.BODY_ROBOT,
            self.scene.table: C.BODY_TABLE,
            self.scene.plane: C.BODY_PLANE,
            **{uid: C.BLOCK_BODIES[c] for c, uid in self.scene.blocks.items()},
            **{uid: f"block_{e['color']}" for uid, e in zip(self.extra_blocks, self.extras)},
        }
        self._visuals = self._visual_colours()
        self.looks: dict[str, Any] = {}
        self._link_names = {uid: self._links_of(uid) for uid in self.body_names}
        self._check_reset_covers_joints()
        self._colliders = self._collision_filters()

    def _extra_urdf(self, extra: dict[str, Any]) -> str:
        directory = Path(self._asset_args[2]) if self._asset_args[2] else default_cache_dir()
        return write_cached(
            directory,
            f"block_{extra['color']}_{extra['size']}",
            block_urdf(extra["color"], size=extra["size"]),
        )

    def _visual_colours(self) -> list[tuple[int, int, int, list[float], bool]]:
        """``(body, link, shape index, rgba, textured)`` of every visual shape of the table (but the LED
        and lightbulb, whose colour is their state) and the floor, as loaded."""
        lights = {self.scene.links["led_link"], self.scene.links["light_link"]}
        shapes = []
        for uid in (self.scene.table, self.scene.plane):
            index: dict[int, int] = {}
            for v in self.p.getVisualShapeData(uid):
                link = v[1]
                index[link] = index.get(link, -1) + 1
                if uid != self.scene.table or link not in lights:
                    shapes.append((uid, link, index[link], list(v[7]), v[2] == pb.GEOM_MESH))
        return shapes

    def configure(self, scene: str, extras: Sequence[dict[str, Any]] = ()) -> bool:
        """Hold ``scene`` and the ``extras`` blocks; the world is rebuilt when either changes (True then).
        A world built for other ones is replaced by a freshly loaded one, so an episode still depends on
        its reset arguments only."""
        extras = tuple(dict(e) for e in extras)
        if scene == self.spec.name and extras == self.extras:
            return False
        if scene != self.spec.name:
            self.spec = scene_spec(scene)
            self._assets_loaded, self._scaling = self._assets(*self._asset_args, self.spec.name)
        self.extras = extras
        self.rebuild()
        return True

    def set_looks(self, looks: Mapping[str, Any]) -> None:
        """Recolour the table and floor: ``{"wood": rgb, "floor": rgb}`` multiply the textured wood and the
        floor, ``{"parts": rgb, "blend": a}`` blends the plain parts (handles, switch, button) toward
        ``parts``; ``{}`` restores the colours the world was loaded with."""
        if not looks and not self.looks:
            return
        for uid, link, k, rgba, textured in self._visuals:
            colour = rgba
            if looks and uid == self.scene.plane:
                colour = [*np.multiply(rgba[:3], looks["floor"]), rgba[3]]
            elif looks and textured:
                colour = [*np.multiply(rgba[:3], looks["wood"]), rgba[3]]
            elif looks:
                a = float(looks["blend"])
                colour = [*((1 - a) * np.asarray(rgba[:3]) + a * np.asarray(looks["parts"])), rgba[3]]
            self.p.changeVisualShape(uid, link, shapeIndex=k, rgbaColor=[float(c) for c in colour])
        self.looks = dict(looks)

    @staticmethod
    def _assets(
        robot_detail: str, calvin_assets: str | None, cache_dir: str | None, scene: str
    ) -> tuple[AssetPaths, float]:
        if calvin_assets is not None:
            return official_assets(calvin_assets, scene), OFFICIAL_SCALING
        directory = Path(cache_dir) if cache_dir else None
        return generated_assets(pybullet_data.getDataPath(), robot_detail, directory, scene), 1.0

    def _check_reset_covers_joints(self) -> None:
        """A joint that no reset places would carry its state from one episode into the next."""
        placed = {(self.robot.uid, j) for j in (*self.robot.arm_joints, *self.robot.finger_joints)}
        placed |= {(self.scene.table, part.joint) for part in self.scene.parts.values()}
        for uid in (self.robot.uid, self.scene.table):
            for j in range(self.p.getNumJoints(uid)):
                info = self.p.getJointInfo(uid, j)
                if info[2] != pb.JOINT_FIXED and (uid, j) not in placed:
                    raise ValueError(
                        f"{self.p.getBodyInfo(uid)[1].decode()}: movable joint {info[1].decode()!r} "
                        "is not one the reset places; make it fixed in the URDF"
                    )

    def _collision_filters(self) -> list[tuple[int, int, int, int]]:
        """``(body, link, group, mask)`` of every collision object, as PyBullet's URDF loader set them: a
        fixed base (mass 0) is static (group 2, colliding with all but static), all else the default (1, all).
        Our URDFs and CALVIN's declare no collision groups."""
        filters = []
        for uid in self.body_names:
            static = self.p.getDynamicsInfo(uid, -1)[0] == 0
            filters.append((uid, -1, 2, -1 ^ 2) if static else (uid, -1, 1, -1))
            filters += [(uid, link, 1, -1) for link in range(self.p.getNumJoints(uid))]
        return sorted(filters)

    def _links_of(self, uid: int) -> dict[int, str]:
        names = {-1: self.p.getBodyInfo(uid)[0].decode()}
        for i in range(self.p.getNumJoints(uid)):
            names[i] = self.p.getJointInfo(uid, i)[12].decode()
        return names

    # ------------------------------------------------------------------------------------ lifecycle

    def reset(self, robot_obs: np.ndarray, scene_obs: np.ndarray) -> None:
        """Place scene and robot, forget every contact, and take one physics step (as CALVIN)."""
        self.scene.reset(scene_obs)
        for uid, extra in zip(self.extra_blocks, self.extras):
            x, y, z, yaw = extra["pose"]
            self.p.resetBasePositionAndOrientation(uid, [x, y, z], self.p.getQuaternionFromEuler([0, 0, yaw]))
            self.p.resetBaseVelocity(uid, [0, 0, 0], [0, 0, 0])
        self.robot.reset(robot_obs)
        self._forget_contacts()
        self.p.stepSimulation()

    def rebuild(self) -> None:
        """Replace the world by a freshly loaded one (tens of ms). :meth:`reset` does not need it; it is the
        reference a reused world is checked against (tests, ``bench/calvin_reset.py``)."""
        self.p.resetSimulation(pb.RESET_USE_SIMPLE_BROADPHASE)
        self._load_world()

    def _forget_contacts(self) -> None:
        """Drop and re-create every broadphase proxy with its filter unchanged: that deletes every
        overlapping pair and its contact manifold (cached points, warm-start impulses, friction anchors).
        A proxy re-takes the slot it freed, so the next step finds the pairs in a fresh world's order."""
        for uid, link, group, mask in self._colliders:
            self.p.setCollisionFilterGroupMask(uid, link, group, mask)
        if self.p.getContactPoints():  # PyBullet without its collision-filter plugin ignores the calls above
            raise RuntimeError(
                "PyBullet kept contact points across setCollisionFilterGroupMask; this build "
                "cannot reset the play-table without history (use the pybullet wheel from PyPI)"
            )

    def step(self, action: np.ndarray, absolute: bool) -> None:
        """Apply one 7-D action, run the 8 physics sub-steps, then update the lights."""
        (self.robot.apply_absolute if absolute else self.robot.apply_relative)(action)
        for _ in range(C.SUBSTEPS):
            self.p.stepSimulation()
        self.scene.update_lights()

    def physics_only(self, steps: int) -> None:
        """Bare physics sub-steps (the speed benchmark's baseline)."""
        for _ in range(steps):
            self.p.stepSimulation()

    def close(self) -> None:
        if self.p is not None:
            self.cameras.close()
            self.p.disconnect()
            self.p = None

    # ---------------------------------------------------------------------------------- observation

    def robot_obs(self) -> np.ndarray:
        return self.robot.observation()

    def scene_obs(self) -> np.ndarray:
        return self.scene.observation()

    def contacts(self, uid: int) -> list[list[str]]:
        """Distinct ``[body_name, link_name]`` pairs body ``uid`` touches, sorted (all contact points)."""
        pairs = set()
        for c in self.p.getContactPoints(bodyA=uid):
            other, link = c[2], c[4]
            pairs.add((self.body_names.get(other, f"body_{other}"), self._link_name(other, link)))
        return [list(pair) for pair in sorted(pairs)]

    def _link_name(self, uid: int, link: int) -> str:
        names = self._link_names.get(uid)
        return names[link] if names and link in names else f"link_{link}"

    def snapshot(self, robot_obs: np.ndarray | None = None, scene_obs: np.ndarray | None = None) -> dict:
        """The JSON-safe scene snapshot that :func:`envs.calvin.tasks.completed_tasks` reads."""
        robot_obs = self.robot_obs() if robot_obs is None else robot_obs
        scene_obs = self.scene_obs() if scene_obs is None else scene_obs
        blocks = {}
        for color, uid in self.scene.blocks.items():
            pos, orn = self.p.getBasePositionAndOrientation(uid)
            lin, ang = self.p.getBaseVelocity(uid)
            blocks[color] = {
                "pos": _floats(pos),
                "orn_xyzw": _floats(orn),
                "lin_vel": _floats(lin),
                "ang_vel": _floats(ang),
                "contacts": self.contacts(uid),
            }
        return {
            "robot_obs": _floats(robot_obs),
            "scene_obs": _floats(scene_obs),
            "robot_contacts": self.contacts(self.robot.uid),
            "blocks": blocks,
        }


def _floats(values: Iterable[float]) -> list[float]:
    return [float(v) for v in values]
