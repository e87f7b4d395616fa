"""One PyBullet world holding the CALVIN play-table, blocks and Panda: reset, step, observe, snapshot.

This is the simulator half of :class:`envs.calvin.env.PlayTableEnv` and knows nothing about Gymnasium.
A reset rebuilds the world (``resetSimulation`` and a reload of the cached URDFs, about 30 ms), then
places everything from CALVIN's ``robot_obs``/``scene_obs``; so an episode depends on its reset arguments
only, never on the episodes run before it. Restoring a saved state is not enough: Bullet keeps the order of
the contact points in its persistent manifolds, the solver visits contacts in that order, and a chain
evaluated after others ended one step apart from the same chain in a fresh process.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import numpy as np
import pybullet_data

from envs.calvin import constants as C
from envs.calvin.assets import OFFICIAL_SCALING, AssetPaths, generated_assets, official_assets
from envs.calvin.bullet import connect_direct
from envs.calvin.camera import RENDERERS, Cameras, load_egl
from envs.calvin.robot import PandaRobot
from envs.calvin.scene import PlayTableScene


class PlayTableSim:
    """The simulated play-table. ``calvin_assets`` loads a user's original CALVIN ``data/`` folder."""

    def __init__(self, *, renderer: str = "tiny", robot_detail: str = "collision",
                 calvin_assets: str | None = None, cache_dir: str | None = None) -> None:
        if renderer not in RENDERERS:
            raise ValueError(f"renderer must be one of {RENDERERS}, got {renderer!r}")
        assets, scaling = self._assets(robot_detail, calvin_assets, cache_dir)
        self.p = connect_direct()
        self._assets_loaded, self._scaling, self._renderer = assets, scaling, renderer
        # the EGL plugin only draws bodies loaded after it, so it comes first (as in CALVIN)
        self._egl_plugin = load_egl(self.p) if renderer == "egl" else None
        self._load_world()

    def _load_world(self) -> None:
        """(Re)build every body in an empty world; body ids come out the same each time."""
        self.p.setPhysicsEngineParameter(deterministicOverlappingPairs=1)
        self.p.setTimeStep(1.0 / C.PHYSICS_HZ)
        self.p.setGravity(0, 0, C.GRAVITY)
        self.robot = PandaRobot(self.p, self._assets_loaded.robot)
        self.scene = PlayTableScene(self.p, self._assets_loaded, self._scaling)
        self.cameras = Cameras(self.p, self.robot.uid, self.robot.camera_link, self._renderer, self._egl_plugin)
        self.body_names = {self.robot.uid: C.BODY_ROBOT, self.scene.table: C.BODY_TABLE,
                           self.scene.plane: C.BODY_PLANE,
                           **{uid: C.BLOCK_BODIES[c] for c, uid in self.scene.blocks.items()}}
        self._link_names = {uid: self._links_of(uid) for uid in self.body_names}

    @staticmethod
    def _assets(robot_detail: str, calvin_assets: str | None, cache_dir: str | None) -> tuple[AssetPaths, float]:
        if calvin_assets is not None:
            return official_assets(calvin_assets), OFFICIAL_SCALING
        directory = Path(cache_dir) if cache_dir else None
        return generated_assets(pybullet_data.getDataPath(), robot_detail, directory), 1.0

    def _links_of(self, uid: int) -> dict[int, str]:
        names = {-1: self.p.getBodyInfo(uid)[0].decode()}
        for i in range(self.p.getNumJoints(uid)):
            names[i] = self.p.getJointInfo(uid, i)[12].decode()
        return names

    # ------------------------------------------------------------------------------------ lifecycle

    def reset(self, robot_obs: np.ndarray, scene_obs: np.ndarray) -> None:
        """Rebuild the world, place scene and robot, and take one physics step (as CALVIN)."""
        self.p.resetSimulation()
        self._load_world()
        self.scene.reset(scene_obs)
        self.robot.reset(robot_obs)
        self.p.stepSimulation()

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
            blocks[color] = {"pos": _floats(pos), "orn_xyzw": _floats(orn), "lin_vel": _floats(lin),
                             "ang_vel": _floats(ang), "contacts": self.contacts(uid)}
        return {"robot_obs": _floats(robot_obs), "scene_obs": _floats(scene_obs),
                "robot_contacts": self.contacts(self.robot.uid), "blocks": blocks}


def _floats(values: Iterable[float]) -> list[float]:
    return [float(v) for v in values]
