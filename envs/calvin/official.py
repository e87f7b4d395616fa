"""The official ``calvin_env`` behind the same Gymnasium interface and task oracle as the built-in table.

``calvin_env`` is not on any package registry: a user clones mees/calvin (with its ``calvin_env``
submodule) and installs it; this module then drives its ``PlayTableSimEnv`` (built by CALVIN's own
``get_env`` from a dataset folder's ``.hydra/merged_config.yaml``, as the CALVIN evaluation does) and
converts its ``info`` into the snapshots :func:`envs.calvin.tasks.completed_tasks` reads, so both
backends are scored by one oracle.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from importlib import import_module
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from envs.calvin import constants as C
from envs.calvin.assets import builtin_frame, official_layout
from envs.calvin.camera import RENDERERS
from envs.calvin.env import ACTION_MODES, PlayTableInterface, _action_space, _observation_space, _vector
from envs.calvin.obs_layout import check_obs_layout, shaped_observation, shaped_space
from envs.calvin.scenes import DEFAULT_SCENE, scene_spec
from envs.calvin.tasks import TASKS

LinkNamer = Callable[[int, int], str]
Target = tuple[np.ndarray, np.ndarray]

#: The calvin_env modules scene D runs on: importing them imports every package calvin_env needs for it.
CALVIN_ENV_MODULES = (
    "calvin_env.envs.play_table_env",
    "calvin_env.robot.robot",
    "calvin_env.scene.play_table_scene",
    "calvin_env.camera.static_camera",
    "calvin_env.camera.gripper_camera",
)
#: The pip package (in the ``calvin-official`` extra) behind each top-level module calvin_env imports.
CALVIN_ENV_PACKAGES = {
    "cv2": "opencv-python-headless",
    "gym": "gym",
    "hydra": "hydra-core",
    "omegaconf": "omegaconf",
    "quaternion": "numpy-quaternion",
    "git": "gitpython",
    "scipy": "scipy",
    "pybullet": "pybullet",
    "numpy": "numpy",
}
#: The install command the errors name (run in this project's folder).
INSTALL_EXTRA = "pip install -c constraints.txt -e '.[calvin-official]'"


def calvin_env_problem(checkout: str | None = None) -> str | None:
    """None when the official ``calvin_env`` and the packages it needs import (with ``checkout``, a calvin_env
    git checkout, put first on ``sys.path``); otherwise one line naming what is missing and the fix."""
    if checkout is not None:
        _use_checkout(checkout)
    try:
        for module in CALVIN_ENV_MODULES:
            import_module(module)
    except ImportError as error:
        return import_problem(error)
    return None


def calvin_env_available(checkout: str | None = None) -> bool:
    """True when :func:`calvin_env_problem` finds nothing missing."""
    return calvin_env_problem(checkout) is None


def import_problem(error: ImportError) -> str:
    """One line for an ImportError raised while importing calvin_env: the module that is missing and the fix."""
    missing = (error.name or "").split(".")[0]
    if missing == "calvin_env":
        return (
            "the official CALVIN env is not importable: no calvin_env package on the path; clone "
            "https://github.com/mees/calvin_env and pass --calvin-env PATH to the clone (it cannot come from a "
            "package registry), or use the built-in table (--backend builtin)"
        )
    if missing in CALVIN_ENV_PACKAGES:
        return (
            f"calvin_env needs the module {missing!r} (pip package {CALVIN_ENV_PACKAGES[missing]}), which is not "
            f"installed: run `{INSTALL_EXTRA}` in this project"
        )
    if missing:
        return f"calvin_env needs the module {missing!r}, which is not installed: run `pip install {missing}`"
    return (
        f"calvin_env failed to import ({' '.join(str(error).split())}): reinstall its dependencies with the "
        f"project's pins, `{INSTALL_EXTRA}`"
    )


def _use_checkout(checkout: str) -> None:
    """Put a calvin_env checkout first on ``sys.path`` (it runs from its source tree, not from a wheel)."""
    root = Path(checkout).resolve()
    if not (root / "calvin_env" / "__init__.py").is_file() or not (root / "conf").is_dir():
        raise FileNotFoundError(
            f"--calvin-env {checkout}: not a calvin_env checkout (needs calvin_env/ and conf/); "
            "clone https://github.com/mees/calvin_env"
        )
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))


def _require_calvin_env(checkout: str | None = None) -> None:
    problem = calvin_env_problem(checkout)
    if problem is not None:
        raise ImportError(problem)


# ------------------------------------------------------------------------------ configuration, provenance

#: What :func:`compose_config` overrides in calvin_env's ``conf/config_data_collection.yaml``: the
#: evaluation robot, no VR, no GUI, static and gripper cameras (the scene is set from ``scene``, the renderer
#: from ``renderer``).
COMPOSE_OVERRIDES = (
    "cameras=static_and_gripper",
    "robot=panda_longer_finger",
    "use_vr=false",
    "env.show_gui=false",
    "env.use_scene_info=true",
)
#: calvin_env names its cameras as these (the built-in env's names are the same).
CAMERA_NAMES = ("static", "gripper")


def checkout_root() -> Path:
    """The calvin_env checkout the imported package comes from (the folder holding ``conf/`` and ``data/``)."""
    file = import_module("calvin_env").__file__
    if file is None:  # a namespace package: a folder named calvin_env without the package in it
        raise ImportError("calvin_env is not an installed package: pip install -e <calvin_env checkout>")
    return Path(file).resolve().parents[1]


def compose_config(
    root: Path, cameras: Sequence[str] | None = None, renderer: str = "tiny", scene: str = DEFAULT_SCENE
) -> Any:
    """calvin_env's own configuration for ``scene`` (``calvin_scene_<X>``, :data:`COMPOSE_OVERRIDES`), with
    ``data_path`` at the checkout's ``data/``, only ``cameras`` kept (None: both) and ``renderer`` (``tiny``:
    TinyRenderer, EGL off; ``egl``: calvin_env's EGL plugin); no dataset split needed."""
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    use_egl = _use_egl(renderer)
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(root / "conf"), version_base=None):
        cfg = compose(
            "config_data_collection",
            overrides=[
                *COMPOSE_OVERRIDES,
                f"scene=calvin_scene_{scene_spec(scene).name}",
                f"env.use_egl={str(use_egl).lower()}",
                f"data_path={root / 'data'}",
            ],
        )
    return _keep_cameras(cfg, cameras)


def dataset_config(dataset_path: str, cameras: Sequence[str] | None = None, renderer: str = "tiny") -> Any:
    """The configuration a CALVIN dataset split records (``.hydra/merged_config.yaml``), as CALVIN's own
    evaluation reads it, with only ``cameras`` kept (None: the ones it lists) and ``renderer``."""
    from omegaconf import OmegaConf

    use_egl = _use_egl(renderer)
    path = Path(dataset_path) / ".hydra" / "merged_config.yaml"
    if not path.is_file():
        raise FileNotFoundError(
            f"--calvin-dataset {dataset_path}: no .hydra/merged_config.yaml; point it at a "
            "CALVIN split folder (e.g. task_D_D/validation) or use --calvin-env PATH instead"
        )
    cfg = OmegaConf.load(path)
    cfg.env.use_egl, cfg.env.show_gui, cfg.env.use_vr, cfg.env.use_scene_info = use_egl, False, False, True
    return _keep_cameras(cfg, cameras)


def _use_egl(renderer: str) -> bool:
    if renderer not in RENDERERS:
        raise ValueError(f"renderer must be one of {RENDERERS}, got {renderer!r}")
    return renderer == "egl"


def _keep_cameras(cfg: Any, cameras: Sequence[str] | None) -> Any:
    from omegaconf import OmegaConf

    OmegaConf.set_struct(cfg, False)  # composed configs are read-only in structure; cameras are removed
    if cameras is not None:
        unknown = set(cameras) - set(CAMERA_NAMES)
        if unknown:
            raise ValueError(
                f"unknown camera(s) {sorted(unknown)} for calvin_env; use {', '.join(CAMERA_NAMES)}"
            )
        for name in [k for k in list(cfg.cameras) if k not in cameras]:
            del cfg.cameras[name]
    return cfg


def instantiate_env(cfg: Any) -> Any:
    """calvin_env's ``PlayTableSimEnv`` from a composed or dataset configuration. calvin_env exits the process
    when its EGL plugin does not load (``sys.exit``); that becomes a one-line RuntimeError here."""
    from hydra.utils import instantiate

    try:
        return instantiate(cfg.env, show_gui=False, use_vr=False, use_scene_info=True)
    except SystemExit:
        raise RuntimeError(
            "renderer='egl': calvin_env could not load PyBullet's eglRenderer plugin (no EGL device "
            "here); use --renderer tiny, which needs no GL"
        ) from None


#: Asset files of scene D whose hashes the manifest records (relative to the checkout's ``data/``).
PROVENANCE_ASSETS = tuple(official_layout(DEFAULT_SCENE).values())


def git_commit(root: Path) -> str | None:
    """The checkout's commit (``git rev-parse HEAD``), or None when it is not a git work tree."""
    try:
        out = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


def provenance(root: Path, scene: str = DEFAULT_SCENE) -> dict[str, Any]:
    """Path, commit and asset hashes (sha256 prefixes) of ``scene``'s files in a calvin_env checkout: results
    depend on them (e.g. 1431a46 needs two presses to turn off an LED that was on at reset; 797142c does
    not)."""
    hashes = {}
    for rel in official_layout(scene).values():
        f = root / "data" / rel
        hashes[rel] = hashlib.sha256(f.read_bytes()).hexdigest()[:16] if f.is_file() else None
    return {
        "path": str(root),
        "commit": git_commit(root),
        "scene": scene_spec(scene).name,
        "asset_sha256": hashes,
    }


def calvin_env_sources(checkout: str | None = None, scene: str = DEFAULT_SCENE) -> dict[str, Any]:
    """:func:`provenance` of ``checkout`` (or of the importable calvin_env); an ImportError names the fix."""
    _require_calvin_env(checkout)
    return provenance(checkout_root(), scene)


# ---------------------------------------------------------------------------------------- snapshots


def _body_names(info: Mapping[str, Any]) -> dict[int, str]:
    scene = info["scene_info"]
    names = {
        int(info["robot_info"]["uid"]): C.BODY_ROBOT,
        int(scene["fixed_objects"]["table"]["uid"]): C.BODY_TABLE,
    }
    for name, obj in scene["movable_objects"].items():
        names[int(obj["uid"])] = name
    return names


def _pairs(
    contacts: Sequence[Sequence[Any]],
    bodies: Mapping[int, str],
    table_links: Mapping[int, str],
    link_name: LinkNamer | None,
) -> list[list[str]]:
    """``[body_name, link_name]`` of the other body in PyBullet contact tuples (``c[2]``, ``c[4]``)."""
    pairs = set()
    table_uid = next((uid for uid, n in bodies.items() if n == C.BODY_TABLE), None)
    for c in contacts:
        uid, link = int(c[2]), int(c[4])
        body = bodies.get(uid, C.BODY_PLANE)
        if uid == table_uid:
            name = table_links.get(link, f"link_{link}")
        else:
            name = link_name(uid, link) if link_name else ("base_link" if link < 0 else f"link_{link}")
        pairs.add((body, name))
    return [list(p) for p in sorted(pairs)]


def snapshot_from_official(
    robot_obs: Sequence[float] | np.ndarray,
    scene_obs: Sequence[float] | np.ndarray,
    info: Mapping[str, Any],
    link_name: LinkNamer | None = None,
) -> dict:
    """The oracle's snapshot from ``calvin_env``'s observation vectors and ``info`` (with ``scene_info``).

    Bodies other than the robot, the table and the blocks are reported as ``plane`` (CALVIN's scene
    has no other body); ``link_name(uid, link)`` names robot/block links (the table's come from info).
    """
    bodies = _body_names(info)
    table_links = {int(i): n for n, i in info["scene_info"]["fixed_objects"]["table"]["links"].items()}
    table_links.setdefault(-1, "base_link")
    blocks = {}
    for color in C.BLOCK_COLORS:
        obj = info["scene_info"]["movable_objects"][C.BLOCK_BODIES[color]]
        blocks[color] = {
            "pos": [float(v) for v in obj["current_pos"]],
            "orn_xyzw": [float(v) for v in obj["current_orn"]],
            "lin_vel": [float(v) for v in obj["current_lin_vel"]],
            "ang_vel": [float(v) for v in obj["current_ang_vel"]],
            "contacts": _pairs(obj["contacts"], bodies, table_links, link_name),
        }
    return {
        "robot_obs": [float(v) for v in robot_obs],
        "scene_obs": [float(v) for v in scene_obs],
        "robot_contacts": _pairs(info["robot_info"]["contacts"], bodies, table_links, link_name),
        "blocks": blocks,
    }


# ---------------------------------------------------------------------------------------- actions


def calvin_env_action(action: np.ndarray, action_mode: str) -> tuple[Any, Target | None]:
    """calvin_env's ``step`` argument for one of our 7-D actions, and the TCP target it commands.

    ``relative``: the 7-vector, motion clipped to [-1, 1], gripper +-1; calvin_env scales it (0.02 m, 0.05 rad)
    and adds it to its own accumulated target (``robot.target_pos``/``target_orn``), so no target comes back.
    ``absolute``: calvin_env's ``(xyz, Euler xyz, gripper)`` tuple. Frame, units and angle convention are the
    built-in table's: world frame, metres, PyBullet's Euler xyz (calvin_env turns it into a quaternion with
    ``getQuaternionFromEuler`` and drives the arm there by IK). calvin_env's robot does not move its
    accumulated target for an absolute action, so the commanded pose comes back for the bridge to keep: it
    is the target a policy's next absolute action is built from (``target_pose``, ``native_actions``,
    ``noop_action``). Built from the stale reset target instead, every plan step on the official env
    started from the reset pose and the expert completed 0 of 5 chains.
    """
    a = np.asarray(action, dtype=np.float64).reshape(-1)
    if a.shape != (7,) or not np.all(np.isfinite(a)):
        raise ValueError(f"action must be 7 finite values, got {np.asarray(action).tolist()}")
    gripper = 1 if a[6] > 0 else -1
    if action_mode == "relative":
        return np.concatenate([np.clip(a[:6], -1, 1), [gripper]]), None
    pos, orn = a[:3].copy(), a[3:6].copy()
    return (pos, orn, gripper), (pos.copy(), orn.copy())


# ------------------------------------------------------------------------------------------- env


def _calvin_env(
    env: Any, dataset_path: str | None, cameras: Sequence[str] | None, renderer: str, scene: str
) -> Any:
    """``env`` when given (it must render with ``renderer`` when that is ``egl``), else calvin_env's
    ``PlayTableSimEnv`` from ``dataset_path``'s configuration or the checkout's own for ``scene``."""
    if env is not None:
        if renderer == "egl" and not env.use_egl:
            raise ValueError(
                "renderer='egl', but the calvin_env passed in was built without EGL (env.use_egl=false); "
                "build it with use_egl=true or leave renderer at 'tiny'"
            )
        return env
    if dataset_path is not None:
        return instantiate_env(dataset_config(dataset_path, cameras, renderer))
    return instantiate_env(compose_config(checkout_root(), cameras, renderer, scene))


class OfficialPlayTableEnv(PlayTableInterface, gym.Env):
    """CALVIN's own ``PlayTableSimEnv`` with :class:`envs.calvin.env.PlayTableEnv`'s interface.

    ``dataset_path``: a CALVIN dataset split folder holding ``.hydra/merged_config.yaml`` (e.g.
    ``task_D_D/validation``); ``env``: an already built ``PlayTableSimEnv`` instead. Observations, actions
    (:func:`calvin_env_action`), ``info`` (``is_success``, ``task``, ``snapshot``), ``begin_subtask`` and
    ``native_actions`` behave as on the built-in table. The official env renders the cameras its config
    lists, with ``renderer`` ("tiny": TinyRenderer; "egl": calvin_env's EGL plugin, as CALVIN's datasets
    were rendered); ``depth`` adds calvin_env's depth images (metres); ``obs_layout="calvin"`` returns
    calvin_env's own nested observation (:mod:`envs.calvin.obs_layout`). ``scene`` (A-D) composes
    calvin_env's ``calvin_scene_<X>``; with ``dataset_path`` or ``env`` it must name the scene they hold
    (it tells privileged policies the block sizes and the furniture, and calvin_env's ``scene_obs`` lists
    the blocks in that scene's order).
    """

    # as gymnasium.Env declares it (an instance variable with a class-level default)
    metadata: dict[str, Any] = {"render_modes": ["rgb_array"], "render_fps": C.CONTROL_HZ}  # noqa: RUF012

    def __init__(
        self,
        *,
        dataset_path: str | None = None,
        calvin_env_path: str | None = None,
        env: Any = None,
        cameras: Sequence[str] | None = None,
        action_mode: str = "relative",
        renderer: str = "tiny",
        depth: bool = False,
        render_mode: str | None = None,
        obs_layout: str = "flat",
        scene: str = DEFAULT_SCENE,
    ) -> None:
        self.obs_layout = check_obs_layout(obs_layout)
        self.scene_spec = scene_spec(scene)
        if action_mode not in ACTION_MODES:
            raise ValueError(f"action_mode must be one of {ACTION_MODES}, got {action_mode!r}")
        _use_egl(renderer)
        _require_calvin_env(calvin_env_path)
        env = _calvin_env(env, dataset_path, cameras, renderer, self.scene_spec.name)
        self._env, self.action_mode, self.render_mode, self.depth = env, action_mode, render_mode, bool(depth)
        #: The renderer calvin_env actually uses (an env passed in with EGL keeps it).
        self.renderer = "egl" if env.use_egl else "tiny"
        self.provenance = provenance(checkout_root(), self.scene_spec.name)
        self.cameras = tuple(cam.name for cam in env.cameras)
        self.action_space = _action_space(action_mode)
        self.observation_space = shaped_space(_observation_space(self.cameras, self.depth), obs_layout)
        self._obs: dict[str, np.ndarray] = {}
        self._target: Target | None = None

    def reset(
        self, *, seed: int | None = None, options: Mapping[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        super().reset(seed=seed)
        options = dict(options or {})
        robot_obs = _vector(options.get("robot_obs", C.NEUTRAL_ROBOT_OBS), 15, "robot_obs")
        scene_obs = _vector(options["scene_obs"], 24, "scene_obs") if "scene_obs" in options else None
        raw = self._env.reset(robot_obs=robot_obs, scene_obs=scene_obs)
        self._target = None  # calvin_env's reset aims its target at the TCP
        self._absorb(raw, self._env.get_info())
        task = options.get("task")
        self.begin_subtask(task)
        return shaped_observation(self._obs, self.obs_layout), self._info(False)

    def step(self, action: np.ndarray) -> tuple[dict[str, Any], float, bool, bool, dict[str, Any]]:
        command, target = calvin_env_action(action, self.action_mode)
        raw, _, _, info = self._env.step(command)
        if target is not None:
            self._target = target
        self._absorb(raw, info)
        success = self.evaluate()["success"]
        return (
            shaped_observation(self._obs, self.obs_layout),
            float(success),
            success,
            False,
            self._info(success),
        )

    def render(self) -> np.ndarray | None:
        return self._obs.get("rgb_static") if self.render_mode == "rgb_array" else None

    def close(self) -> None:
        if self._env is not None:
            self._env.close()
            self._env.ownsPhysicsClient = False  # calvin_env's __del__ closes again, on a dead client
            self._env = None

    def _absorb(self, raw: Mapping[str, Any], info: Mapping[str, Any]) -> None:
        obs = {k: np.asarray(v) for k, v in raw.get("rgb_obs", {}).items()}
        if self.depth:
            obs.update({k: np.asarray(v, dtype=np.float32) for k, v in raw.get("depth_obs", {}).items()})
        obs["robot_obs"] = np.asarray(raw["robot_obs"], dtype=np.float64)
        obs["scene_obs"] = np.asarray(raw["scene_obs"], dtype=np.float64)
        self._obs = obs
        p, cid = self._env.p, self._env.cid

        def link_name(uid: int, link: int) -> str:
            if link < 0:
                return p.getBodyInfo(uid, physicsClientId=cid)[0].decode()
            return p.getJointInfo(uid, link, physicsClientId=cid)[12].decode()

        self._snapshot = snapshot_from_official(obs["robot_obs"], obs["scene_obs"], info, link_name)

    def _info(self, success: bool) -> dict[str, Any]:
        return {"is_success": bool(success), "task": self._task, "snapshot": self._snapshot}

    def target_pose(self) -> tuple[np.ndarray, np.ndarray]:
        """The last absolute action's pose (see :func:`calvin_env_action`), else calvin_env's accumulated target."""
        if self._target is not None:
            return self._target[0].copy(), self._target[1].copy()
        robot = self._env.robot
        return np.array(robot.target_pos, dtype=float), np.array(robot.target_orn, dtype=float)

    def link_pose(self, link: str) -> tuple[np.ndarray, np.ndarray]:
        """A table link's world frame in the built-in table's convention (:func:`envs.calvin.assets.builtin_frame`)."""
        p, cid = self._env.p, self._env.cid
        table = self._env.scene.fixed_objects[0]  # scene D has one fixed object, the table
        links = {
            p.getJointInfo(table.uid, i, physicsClientId=cid)[12].decode(): i
            for i in range(p.getNumJoints(table.uid, physicsClientId=cid))
        }
        if link == "base_link":
            pos, orn = p.getBasePositionAndOrientation(table.uid, physicsClientId=cid)
        elif link in links:
            state = p.getLinkState(table.uid, links[link], computeForwardKinematics=True, physicsClientId=cid)
            pos, orn = state[4], state[5]
        else:
            raise ValueError(
                f"unknown table link {link!r}; calvin_env's table has {', '.join(sorted(links))}"
            )
        rot = np.asarray(p.getMatrixFromQuaternion(orn)).reshape(3, 3)
        return np.asarray(pos, dtype=float), builtin_frame(link, rot)


__all__ = [
    "TASKS",
    "OfficialPlayTableEnv",
    "calvin_env_action",
    "calvin_env_available",
    "calvin_env_problem",
    "compose_config",
    "dataset_config",
    "provenance",
    "snapshot_from_official",
]
