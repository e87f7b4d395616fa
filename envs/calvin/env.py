"""``PlayTableEnv``: the CALVIN-compatible play-table as a Gymnasium environment."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from action_mapping.adapters import calvin_relative_actions
from action_mapping.plan import StepSizes
from action_mapping.trajectory import StepMotion
from envs.calvin import constants as C
from envs.calvin import perturbations
from envs.calvin.assets import builtin_frame
from envs.calvin.obs_layout import check_obs_layout, shaped_observation, shaped_space
from envs.calvin.scene import random_scene_state, scene_obs_for_state
from envs.calvin.scenes import DEFAULT_SCENE, SCENES, SceneSpec, scene_spec
from envs.calvin.sim import PlayTableSim
from envs.calvin.tasks import TASKS, completed_tasks
from envs.perturbation import Channels, PerturbationError, check_spec

ACTION_MODES = ("relative", "absolute")
#: Units of one primitive count in plans run on the play-table (see docs/guide/action-mapping.md, "Executable
#: plans and units").
PLAN_STEP_SIZES = StepSizes(translation=0.01, rotation=0.05)
#: The table links :meth:`PlayTableInterface.link_pose` reports.
TABLE_LINKS = (
    "base_link",
    "slide_link",
    "drawer_link",
    "button_link",
    "switch_link",
    "led_link",
    "light_link",
    "plank_link",
)
_OPTION_KEYS = ("robot_obs", "scene_obs", "task", "perturbation")
OBS_BOUND = 16.0


class PlayTableInterface:
    """What the built-in env and the official-env bridge share: subtasks, success, spatial actions.

    A subtask starts at :meth:`begin_subtask` (or at reset with ``options["task"]``); success is the
    oracle over (snapshot at subtask start, current snapshot), computed in :meth:`evaluate` only.
    Subclasses provide ``action_mode`` and :meth:`target_pose`.
    """

    action_mode: str = "relative"
    #: The CALVIN scene on the table (A-D): link positions, block order and sizes (envs.calvin.scenes).
    scene_spec: SceneSpec = SCENES[DEFAULT_SCENE]
    #: What one count of a SpatialTree primitive means here: the plan-execution contract, with
    #: :meth:`native_actions` and :meth:`noop_action`. Policies prompt with these units.
    plan_step_sizes: ClassVar[StepSizes] = PLAN_STEP_SIZES
    _task: str | None = None
    _start: dict | None = None
    _snapshot: dict | None = None

    def begin_subtask(self, task: str | None) -> None:
        """Score ``task`` (a CALVIN task name, or None for no task) from the current snapshot on."""
        if task is not None and task not in TASKS:
            raise ValueError(f"unknown CALVIN task {task!r}; known: {', '.join(TASKS)}")
        self._task, self._start = task, self._snapshot

    def snapshot(self) -> dict:
        """The current JSON-safe scene snapshot (see :mod:`envs.calvin.tasks`)."""
        assert self._snapshot is not None, "call reset() first"
        return self._snapshot

    def evaluate(self) -> dict[str, Any]:
        """``{"success": bool, "task": name}``: the one place success is decided."""
        if self._task is None or self._start is None:
            return {"success": False, "task": None}
        done = completed_tasks(self._start, self.snapshot(), tasks=(self._task,))
        return {"success": self._task in done, "task": self._task}

    def target_pose(self) -> tuple[np.ndarray, np.ndarray]:
        """The accumulated TCP target (xyz, Euler xyz) that relative actions move."""
        raise NotImplementedError

    def link_pose(self, link: str) -> tuple[np.ndarray, np.ndarray]:
        """World position and 3x3 rotation of a table link's frame (``slide_link``, ``drawer_link``,
        ``switch_link``, ``button_link``, ``led_link``, ``light_link``, ``plank_link``, ``base_link``),
        in the built-in table's frame convention (see :data:`TABLE_LINKS`). Privileged policies (the
        scripted expert, its plan expert) read the scene through this and :meth:`snapshot` only, so they
        run on every backend."""
        raise NotImplementedError

    def noop_action(self) -> np.ndarray:
        """Hold the TCP target and the gripper: what a policy's "no motion" costs (one control step)."""
        gripper = float(self.snapshot()["robot_obs"][14])
        if self.action_mode == "relative":
            return np.array([0, 0, 0, 0, 0, 0, gripper], dtype=np.float32)
        pos, orn = self.target_pose()
        return np.array([*pos, *orn, gripper], dtype=np.float32)

    def native_actions(self, motion: StepMotion) -> list[np.ndarray]:
        """Native actions executing one plan step's motion in the current TCP frame."""
        robot_obs = self.snapshot()["robot_obs"]
        relative = calvin_relative_actions(
            motion, np.asarray(robot_obs[3:6]), current_gripper=float(robot_obs[14])
        )
        if self.action_mode == "relative":
            return [a.astype(np.float32) for a in relative]
        pos, orn = self.target_pose()
        pos = pos + relative[:, :3].sum(axis=0) * C.MAX_REL_POSITION
        orn = orn + relative[:, 3:6].sum(axis=0) * C.MAX_REL_ORIENTATION
        return [np.array([*pos, *orn, relative[-1, 6]], dtype=np.float32)]


class PlayTableEnv(PlayTableInterface, gym.Env):
    """CALVIN's play-table (scene A, B, C or D; D by default) with a Franka Panda, on PyBullet.

    ## Description
    The table of the CALVIN benchmark (Mees et al., 2022): a sliding door over a two-compartment
    cabinet, a drawer, a button that toggles a green LED, a switch that lights a yellow bulb, and three
    blocks (red 5.6 cm, blue 4 cm, pink 8 cm long). The table is generated from primitives with CALVIN's
    link names, positions and joint ranges, and dressed like CALVIN's scene D (generated oak-coloured wood
    and grey checkerboard textures, CALVIN's colours; :mod:`envs.calvin.looks`); ``calvin_assets`` loads a
    user's original CALVIN ``data/`` folder instead (the original table, robot, block and plane URDFs with
    CALVIN's 0.8 scaling).

    ``scene`` picks one of CALVIN's four scenes (:mod:`envs.calvin.scenes`): they move the sliding door,
    drawer, button, switch, LED and lightbulb, change the woods and the blocks' sizes, and list the blocks
    in their own order in ``scene_obs`` (slot 0 is red in B and D, pink in A, blue in C).

    ## Simulation
    240 Hz physics, 30 Hz control (8 sub-steps per action), gravity -9.8. Franka Panda from
    ``pybullet_data`` with CALVIN's evaluation robot (longer fingers, ``tcp`` link 0.14 m down the hand,
    gripper camera link), base at (-0.34, -0.46, 0.24); IK with null space toward the initial joints,
    clipped to the joint limits; position control with force 200 and maximum velocity 2; fingers close
    with 200 N and open with 2 N. The neutral joints give CALVIN's neutral TCP pose to within 2e-5.
    Sliding door, drawer and switch are velocity-controlled to rest with force 4, the button is held at 0
    by position control with force 4; the LED toggles on each press edge of the button, the lightbulb is
    on while the switch is past half its travel; lightbulb yellow, LED green, off white.

    ## Action Space
    ``action_mode="relative"`` (default): ``Box(-1, 1, (7,))`` = TCP translation (x 0.02 m), Euler-angle
    change (x 0.05 rad) added to an accumulated target pose as CALVIN does, and gripper (> 0 opens,
    otherwise closes). Values outside [-1, 1] are clipped (reported as ``info["action_clipped"]``).
    ``"absolute"``: target TCP xyz, Euler xyz and gripper. Non-finite actions raise ``ValueError``.
    ``env.unwrapped.native_actions(step_motion)`` turns a SpatialTree plan step into these actions
    (``action_mapping.adapters.calvin_relative_actions``).

    ## Observation Space
    ``Dict``, in CALVIN's order: ``rgb_static`` (200x200x3 uint8, fov 10 deg, eye (2.8715, -2.1666,
    2.5552) looking at (-0.0262, -0.0302, 0.392)) and ``rgb_gripper`` (84x84x3, fov 75 deg) for the
    cameras in ``cameras``; ``depth_static``/``depth_gripper`` (float32 metres) when ``depth``;
    ``robot_obs`` (15: TCP xyz, TCP Euler xyz, gripper width, 7 joints, last gripper action) and
    ``scene_obs`` (24: slide, drawer, button, switch, lightbulb, LED, then 3 x block xyz + Euler
    xyz, in the scene's block order: red, blue, pink in scene D). ``obs_layout="calvin"`` nests them as calvin_env's ``get_obs()`` does: ``{"rgb_obs": {"rgb_static",
    "rgb_gripper"}, "depth_obs": {...}, "robot_obs", "scene_obs"}`` (:mod:`envs.calvin.obs_layout`), so a
    policy written for CALVIN's ``evaluate_policy`` reads ``obs["rgb_obs"]["rgb_static"]`` unchanged.

    ## Rewards / Success
    With a task set (``options["task"]`` or :meth:`begin_subtask`, used between the subtasks of a chain),
    success is CALVIN's oracle (:func:`envs.calvin.tasks.completed_tasks`) between the subtask's first and
    current snapshots; reward 1.0 on success, else 0.0. ``info``: ``is_success``, ``task``, ``snapshot``.

    ## Snapshots
    ``info["snapshot"]`` is ``{"robot_obs", "scene_obs", "robot_contacts", "blocks": {"red"|"blue"|"pink":
    {"pos", "orn_xyzw", "lin_vel", "ang_vel", "contacts"}}}`` (JSON-safe), with contacts as ``[body,
    link]`` pairs (bodies ``table``, ``robot``, ``block_red``, ``block_blue``, ``block_pink``, ``plane``;
    the table's links ``base_link``, ``plank_link``, ``drawer_link``, ``slide_link``, ``button_link``,
    ``switch_link``, ``led_link``, ``light_link``). ``envs.calvin.tasks.completed_tasks(start, end)``
    implements all 34 tasks with CALVIN's thresholds and contact rules and never touches a simulator, so
    the oracle alone re-scores logs.

    ## Starting State
    ``reset(options={"robot_obs": ..., "scene_obs": ...})`` places joints, door/drawer/button/switch,
    light states and block poses exactly, then takes CALVIN's one physics step. Without ``scene_obs``:
    CALVIN's neutral robot pose and an evaluation-style scene drawn from the seed (12 block placements x
    door x drawer x lights, block yaws pi/2 +- pi/8). The PyBullet world is built once, when the env is
    made; a reset places the state, then drops every broadphase proxy and creates it again with the same
    collision filter, which deletes every overlapping pair and its persistent contact manifold (about
    0.5 ms without cameras, ``bench/calvin_reset.py``). The world uses Bullet's simple broadphase, whose
    flat proxy array is left exactly as in a freshly loaded world, so an episode depends on its reset
    arguments only, never on the episodes a worker ran before (tested: subtasks run after another chain's
    give every observation bit for bit as in a fresh env; ``bench/calvin_reset.py`` checks three chain
    orders). Restoring a saved state is not
    enough: Bullet keeps the manifolds of earlier pairs and the order of their contact points, the solver
    visits contacts in that order, and a chain run after others once ended one step apart from the same
    chain in a fresh process.

    ``options={"perturbation": spec}`` (an :class:`envs.perturbation.PerturbationSpec` or its dict) resets into
    a robustness variant of that state (axes in :mod:`envs.calvin.perturbations`: the static camera, the
    light, the table's colours, extra blocks, block positions, start joints, the scene, and image and action
    noise); the same spec gives the same images byte for byte. Extra blocks and another scene rebuild the
    world (and the next clean reset builds CALVIN's again); nothing of the spec reaches observations or
    ``info``.

    ## Episode End
    ``terminated`` when the task succeeds; never truncated by the env itself (CALVIN's 360-step subtask
    budget belongs to the protocol, which also keeps one episode across a chain's five subtasks).

    ## Arguments
    ``action_mode`` ("relative" or "absolute"), ``cameras`` (any of "static", "gripper", or none: only the
    cameras a policy reads are rendered), ``depth`` (metric depth in metres), ``renderer`` ("tiny":
    TinyRenderer, CPU, no GL; "egl": PyBullet's EGL plugin, for GPU machines), ``render_mode``
    ("rgb_array"), ``robot_detail`` ("collision": the Panda drawn with its convex meshes, the default;
    "visual": its detailed meshes, 2.5x slower to render), ``calvin_assets`` (a calvin_env checkout or
    its ``data/`` folder), ``cache_dir`` (generated URDFs; default ``~/.cache/spatial_arena/calvin``),
    ``obs_layout`` ("flat", the default, or "calvin": calvin_env's nested dicts), ``scene`` ("A", "B", "C"
    or "D", the default).
    """

    # as gymnasium.Env declares it (an instance variable with a class-level default)
    metadata: dict[str, Any] = {"render_modes": ["rgb_array"], "render_fps": C.CONTROL_HZ}  # noqa: RUF012

    def __init__(
        self,
        *,
        action_mode: str = "relative",
        cameras: Sequence[str] = C.CAMERAS,
        depth: bool = False,
        renderer: str = "tiny",
        render_mode: str | None = None,
        robot_detail: str = "collision",
        calvin_assets: str | None = None,
        cache_dir: str | None = None,
        obs_layout: str = "flat",
        scene: str = DEFAULT_SCENE,
    ) -> None:
        self._check_arguments(action_mode, cameras, render_mode)
        self.obs_layout = check_obs_layout(obs_layout)
        self.scene_spec = self._base_spec = scene_spec(scene)
        self.action_mode, self.cameras, self.depth = action_mode, tuple(cameras), bool(depth)
        self.render_mode = render_mode
        self.sim = PlayTableSim(
            renderer=renderer,
            robot_detail=robot_detail,
            calvin_assets=calvin_assets,
            cache_dir=cache_dir,
            scene=self.scene_spec.name,
        )
        self._calvin_assets = calvin_assets is not None  # CALVIN's URDF: some link frames are turned
        self.action_space = _action_space(action_mode)
        self.observation_space = shaped_space(_observation_space(self.cameras, self.depth), obs_layout)
        self._frames: dict[str, np.ndarray] = {}
        self._depths: dict[str, np.ndarray] = {}
        self._robot_obs = np.zeros(15)
        self._scene_obs = np.zeros(24)
        self._channels = Channels(None, self.action_space)

    @staticmethod
    def _check_arguments(action_mode: str, cameras: Sequence[str], render_mode: str | None) -> None:
        if action_mode not in ACTION_MODES:
            raise ValueError(f"action_mode must be one of {ACTION_MODES}, got {action_mode!r}")
        bad = [c for c in cameras if c not in C.CAMERAS]
        if bad or isinstance(cameras, str):
            raise ValueError(f"cameras must be a sequence of {C.CAMERAS} (or empty), got {cameras!r}")
        if render_mode not in (None, "rgb_array"):
            raise ValueError(f"render_mode must be None or 'rgb_array', got {render_mode!r}")

    # ------------------------------------------------------------------------------------- gym API

    def reset(
        self, *, seed: int | None = None, options: Mapping[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        super().reset(seed=seed)
        robot_obs, scene_obs, task = self._parse_options(options or {})
        episode = self._variant(robot_obs, scene_obs, task, (options or {}).get("perturbation"))
        self.sim.reset(np.asarray(episode["robot_obs"]), np.asarray(episode["scene_obs"]))
        self._refresh()
        self.begin_subtask(task)
        return self._observation(), self._info(False, False)

    def step(self, action: np.ndarray) -> tuple[dict[str, Any], float, bool, bool, dict[str, Any]]:
        assert self._snapshot is not None, "call reset() before step()"
        command, clipped = self._validate_action(action)
        command = self._channels.action(command)
        self.sim.step(command, absolute=self.action_mode == "absolute")
        self._refresh()
        success = self.evaluate()["success"]
        return self._observation(), float(success), success, False, self._info(success, clipped)

    def render(self) -> np.ndarray | None:
        """The static camera's RGB image (``render_mode="rgb_array"``)."""
        if self.render_mode != "rgb_array":
            return None
        if "static" in self._frames:
            return self._frames["static"]
        return self.sim.cameras.render("static")[0]

    def close(self) -> None:
        if getattr(self, "sim", None) is not None:
            self.sim.close()
            self.sim = None  # type: ignore[assignment]

    # ----------------------------------------------------------------------------------- internals

    def _parse_options(self, options: Mapping[str, Any]) -> tuple[np.ndarray, np.ndarray, str | None]:
        unknown = [k for k in options if k not in _OPTION_KEYS]
        if unknown:
            raise ValueError(f"unknown reset option(s) {unknown}; allowed: {', '.join(_OPTION_KEYS)}")
        robot_obs = _vector(options.get("robot_obs", C.NEUTRAL_ROBOT_OBS), 15, "robot_obs")
        if "scene_obs" in options:
            scene_obs = _vector(options["scene_obs"], 24, "scene_obs")
        else:
            state = random_scene_state(self.np_random)
            scene_obs = scene_obs_for_state(state, self.np_random, self._base_spec)
        return robot_obs, scene_obs, options.get("task")

    def _variant(
        self, robot_obs: np.ndarray, scene_obs: np.ndarray, task: str | None, perturbation: object
    ) -> dict[str, Any]:
        """The episode this reset sets up (clean, or a robustness variant), with the world, cameras, light
        and looks set for it. The spec stays here: nothing of it reaches observations or ``info``."""
        episode = perturbations.clean_episode(
            robot_obs, scene_obs, self._base_spec.name, [task] if task else []
        )
        spec = None if perturbation is None else check_spec(perturbations.FAMILY, perturbation)
        if spec is not None and spec.axis == "action_noise" and self.action_mode != "relative":
            raise PerturbationError("perturbation axis 'action_noise' needs action_mode='relative'")
        apply = None if spec is None else perturbations.AXES[spec.axis].apply
        if spec is not None and apply is not None:
            episode = apply(episode, spec)
        self._channels = Channels(spec, self.action_space, noisy_dims=6)  # (the gripper untouched)
        self.sim.configure(episode["scene"], episode["distractors"])
        self.scene_spec = self.sim.spec
        self.sim.cameras.set_static(**episode["camera"])
        self.sim.cameras.set_light(episode["light"])
        self.sim.set_looks(episode["looks"])
        return episode

    def _validate_action(self, action: np.ndarray) -> tuple[np.ndarray, bool]:
        a = np.asarray(action, dtype=np.float64).reshape(-1)
        if a.shape != (7,):
            raise ValueError(
                f"action must have 7 values (xyz, Euler xyz, gripper), got shape {np.shape(action)}"
            )
        if not np.all(np.isfinite(a)):
            raise ValueError(f"action must be finite, got {a.tolist()}")
        if self.action_mode == "absolute":
            return a, False
        clipped = np.clip(a, -1.0, 1.0)
        return clipped, bool(np.any(clipped != a))

    def _refresh(self) -> None:
        self._robot_obs, self._scene_obs = self.sim.robot_obs(), self.sim.scene_obs()
        self._snapshot = self.sim.snapshot(self._robot_obs, self._scene_obs)
        self._frames = {}
        obs_depth: dict[str, np.ndarray] = {}
        for name in self.cameras:
            rgb, depth = self.sim.cameras.render(name, self.depth)
            self._frames[name] = rgb
            if depth is not None:
                obs_depth[name] = depth
        self._depths = obs_depth

    def _observation(self) -> dict[str, Any]:
        obs: dict[str, np.ndarray] = {f"rgb_{n}": f for n, f in self._frames.items()}
        obs.update({f"depth_{n}": d for n, d in self._depths.items()})
        obs["robot_obs"], obs["scene_obs"] = self._robot_obs.copy(), self._scene_obs.copy()
        return shaped_observation(self._channels.images(obs), self.obs_layout)

    def _info(self, success: bool, clipped: bool) -> dict[str, Any]:
        return {
            "is_success": bool(success),
            "task": self._task,
            "snapshot": self._snapshot,
            "action_clipped": clipped,
        }

    def target_pose(self) -> tuple[np.ndarray, np.ndarray]:
        return self.sim.robot.target_pos.copy(), self.sim.robot.target_orn.copy()

    def link_pose(self, link: str) -> tuple[np.ndarray, np.ndarray]:
        if link not in TABLE_LINKS:
            raise ValueError(f"unknown table link {link!r}; known: {', '.join(TABLE_LINKS)}")
        pos, rot = self.sim.scene.link_pose(link)
        return (pos, builtin_frame(link, rot)) if self._calvin_assets else (pos, rot)


def _vector(values: Any, size: int, name: str) -> np.ndarray:
    v = np.asarray(values, dtype=np.float64).reshape(-1)
    if v.shape != (size,) or not np.all(np.isfinite(v)):
        raise ValueError(
            f"reset option {name!r} must be {size} finite numbers (CALVIN's layout), got shape {v.shape}"
        )
    return v


def _action_space(mode: str) -> spaces.Box:
    if mode == "relative":
        return spaces.Box(-1.0, 1.0, (7,), dtype=np.float32)
    low = np.array([-1.5, -1.5, 0.0, -2 * np.pi, -2 * np.pi, -2 * np.pi, -1.0], dtype=np.float32)
    high = np.array([1.5, 1.5, 1.5, 2 * np.pi, 2 * np.pi, 2 * np.pi, 1.0], dtype=np.float32)
    return spaces.Box(low, high, dtype=np.float32)


def _observation_space(cameras: tuple[str, ...], depth: bool) -> spaces.Dict:
    entries: dict[str, spaces.Space] = {}
    for name in cameras:
        spec = C.STATIC_CAMERA if name == "static" else C.GRIPPER_CAMERA
        entries[f"rgb_{name}"] = spaces.Box(0, 255, (spec.height, spec.width, 3), dtype=np.uint8)
        if depth:
            entries[f"depth_{name}"] = spaces.Box(0.0, spec.far, (spec.height, spec.width), dtype=np.float32)
    # Finite bounds that hold anywhere on the 30 m floor (angles, joints and widths are far inside).
    entries["robot_obs"] = spaces.Box(-OBS_BOUND, OBS_BOUND, (15,), dtype=np.float64)
    entries["scene_obs"] = spaces.Box(-OBS_BOUND, OBS_BOUND, (24,), dtype=np.float64)
    return spaces.Dict(entries)
