"""EB-Manipulation on robosuite as a Gymnasium env: absolute discrete end-effector targets, 15 steps."""

from __future__ import annotations

import string
from typing import Any, SupportsFloat, TypedDict

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from action_mapping import Plan, PlanStep
from action_mapping.adapters import eb_manipulation_decode, eb_manipulation_from_motion
from action_mapping.trajectory import StepMotion
from envs.manipulation import perturbations, workspace
from envs.manipulation.episodes import make_episode
from envs.manipulation.look import SceneLook
from envs.manipulation.motion import ArmMotion, MotionLimits, MotionResult
from envs.manipulation.render import CameraRig, draw_boxes, object_boxes
from envs.manipulation.scene import TabletopScene
from envs.manipulation.tasks import SUBSETS, TASKS
from envs.perturbation import Channels, check_spec
from envs.vector import TextObservation

CAMERAS = {"front_rgb": "eb_front", "wrist_rgb": workspace.WRIST_CAMERA, "overhead_rgb": "eb_overhead"}
ACTION_NAMES = ("X", "Y", "Z", "Roll", "Pitch", "Yaw", "Gripper")
ACTION_NVEC = workspace.ACTION_NVEC
TEXT_CHARSET = string.printable


class _Grid(TypedDict):
    """EB's voxel grid, as the action encoder and decoder take it."""

    bounds: tuple[np.ndarray, np.ndarray]
    voxels: int
    rotation_bin_deg: float


_GRID: _Grid = {
    "bounds": workspace.WORKSPACE_BOUNDS,
    "voxels": workspace.VOXELS,
    "rotation_bin_deg": workspace.ROTATION_BIN_DEG,
}
_CV_FROM_MUJOCO_CAMERA = np.diag([1.0, -1.0, -1.0])  # MuJoCo cameras look along -z with +y up


class EBManipulationEnv(gym.Env):
    """EmbodiedBench-style manipulation (EB-Manipulation) with a real Panda in robosuite.

    ## Description
    One of EB's four task families (``family``: pick, stack, place, wipe) on a table; every episode has a
    language instruction from one of five subsets (base, common_sense, complex, spatial, visual). The
    agent sends absolute end-effector targets on EB's voxel grid; the arm moves there under robosuite's
    operational-space control (see :mod:`envs.manipulation.motion`). Ids:
    ``SpatialArena/EBManipulation-{pick,stack,place,wipe}-v0`` are single families;
    ``SpatialArena/EBManipulation-v0`` (:class:`envs.manipulation.suite.EBManipulationSuiteEnv`) holds
    all four, built on first use, the episode picking one, for runners that build one env per worker.

    ## Action Space
    ``MultiDiscrete([100, 100, 100, 121, 121, 121, 2])``: ``[X, Y, Z, Roll, Pitch, Yaw, Gripper]``. X/Y/Z
    index 1 cm voxels of a 1 m grid placed on the table as in EB (:mod:`envs.manipulation.workspace`); the
    target is the voxel centre. Roll/Pitch/Yaw are extrinsic xyz Euler angles of the gripper in 3 degree
    bins, ``deg = 3 * index - 180`` (index 120 = +180, as EB's prompt allows). Gripper: 1 open, 0 closed.
    The gripper pointing straight down with its fingers closing along world y is ``roll 0 (-180 deg),
    pitch 60 (0 deg), yaw 90 (+90 deg)``. Non-integers and values outside those ranges make an invalid
    action (reward -1, as EB); NaN, wrongly shaped actions and Plans raise ``ValueError``. The encoding is
    ``action_mapping.adapters.eb_manipulation_encode/decode`` with the table-frame bounds below.

    ## Bounds Mapping
    EB's grid is ``[-0.3, -0.5, 0.6] -> [0.7, 0.5, 1.6]`` in RLBench's world. We keep its size (a 1 m
    cube) and its placement relative to the robot and the table: X starts at the Panda's base (x = -0.56
    in robosuite's table frame), Y is centred (-0.5 ... 0.5), and the grid floor is 0.152 m below the
    table top, as EB's table top (z = 0.752) is above its grid floor. So ``WORKSPACE_BOUNDS`` =
    ``[-0.56, -0.5, 0.648] -> [0.44, 0.5, 1.648]`` (``envs/manipulation/workspace.py``), the table top is
    voxel Z 15, a 4 cm object's centre Z 17, and objects get the voxel coordinates EB's published
    examples show (X 30-70, Y 20-80, Z 15-20). Axes keep EB's meaning: +X away from the robot, +Y to the
    right in the front image, +Z up.

    ## Executing An Action
    The target pose is first checked for reachability: below the table top, or no joint solution (damped
    least-squares inverse kinematics within joint limits, from the current and the home configuration,
    5 mm / 0.1 rad) makes it invalid: reward -1, the arm does not move, feedback "Last action is invalid.
    The target pose is out of the arm's reach (the closest pose found is 4.2 cm and 12 degrees away)."
    (out-of-range or non-integer indices are invalid the same way). A valid target is tracked by
    robosuite's OSC_POSE controller (absolute world-frame poses, default gains) along straight-line
    waypoints at 0.3 m/s and 1.6 rad/s, then held until settled (6 mm, 0.05 rad) or stalled, within 120
    control steps (6 simulated seconds); then the gripper opens or closes (12 control steps) while the arm
    holds, as RLBench actuates the gripper after the motion. A target the arm cannot get to (blocked,
    pushing into the table) ends with "Last action executed, but the gripper stopped 3.9 cm and 7 degrees
    from the target pose."

    ## Observation Space
    ``front_rgb`` (EB's front view, from the far side of the table), ``wrist_rgb`` (robosuite's
    eye-in-hand camera), ``overhead_rgb``: ``image_size x image_size x 3`` uint8 (default 500, EB's size).
    With ``annotate_boxes`` the front image carries EB's red boxes with the object numbers, from MuJoCo's
    segmentation. ``instruction``: the language goal. ``feedback``: EB's feedback on the last action (""
    after reset). ``object_list``: EB's planner input, ``{'object 1': [X, Y, Z], ...}``: every object's
    bounding-box centre as a voxel index, numbered by ascending initial Y (left to right in the front
    image; EB's order). ``info``: ``is_success``, ``last_action_success``, ``feedback``, ``evaluation``
    (with the sub-predicates: grasped, lifted, above, touching, released, wiped fractions),
    ``control_steps``, a JSON-safe ``snapshot`` (object poses, grip position, gripper state, evaluation,
    object labels) and the episode id. Shadows, reflections and multisampling are off, renderers are
    made at the first render (so a process that only makes the env holds no GL context its forks would
    inherit) and closed by ``close()``, and MuJoCo uses EGL unless ``MUJOCO_GL`` says otherwise.

    ## Rewards/Success
    ``evaluate()`` of the task decides success from simulator state (container/sorter containment,
    stacked contact after release, wiped fraction), after every action. Reward 1 on success, -1 for an
    invalid action, else 0.

    ## Spatial Action Mapping
    ``env.unwrapped.native_actions(StepMotion)`` applies a plan step's relative motion to the current grip
    pose in the wrist camera's frame (OpenCV axes: +z forward, i.e. down at home) and encodes the result
    with ``eb_manipulation_from_motion``: one absolute EB action per step (3 degree bins and 1 cm voxels
    round small motions away; targets off the grid are clipped to it).

    ## Starting State
    The arm at robosuite's home pose with the gripper open; objects as the episode lays them out. Which
    episode: ``options={"episode": dict}`` (e.g. from :func:`envs.manipulation.episodes.make_episodes`),
    ``options={"subset": s, "index": i}`` for the default set, or with no options a new episode of
    ``subset`` drawn from the seeded ``np_random``. ``options={"perturbation": spec}`` (an
    :class:`envs.perturbation.PerturbationSpec` or its dict) runs a robustness variant of that episode
    (axes in :mod:`envs.manipulation.perturbations`); nothing of the spec reaches observations or ``info``.

    ## Episode End
    Terminated on success; truncated after ``max_steps`` (EB: 15) actions. Invalid actions count as steps.

    ## Arguments
    ``family``, ``subset`` (default subset for option-less resets), ``image_size`` (EB renders 500),
    ``annotate_boxes``, ``max_steps``, ``episode_seed`` (seed of the default episode sets), ``motion``
    (overrides of :class:`~envs.manipulation.motion.MotionLimits`), ``render_mode`` ("rgb_array": the front
    image). The all-family suite also takes ``families``.
    """

    # as gymnasium.Env declares it (an instance variable with a class-level default)
    metadata: dict[str, Any] = {"render_modes": ["rgb_array"], "render_fps": 2}  # noqa: RUF012

    def __init__(
        self,
        family: str = "pick",
        subset: str = "base",
        *,
        image_size: int = 500,
        annotate_boxes: bool = True,
        max_steps: int = 15,
        episode_seed: int = 0,
        motion: dict[str, Any] | None = None,
        render_mode: str | None = None,
    ) -> None:
        if family not in TASKS:
            raise ValueError(f"unknown family {family!r}; choose one of {sorted(TASKS)}")
        if subset not in SUBSETS:
            raise ValueError(f"unknown subset {subset!r}; choose one of {list(SUBSETS)}")
        if render_mode not in (None, "rgb_array"):
            raise ValueError(f"render_mode must be None or 'rgb_array', got {render_mode!r}")
        self.family, self.subset, self.max_steps = family, subset, int(max_steps)
        self.episode_seed, self.annotate_boxes, self.render_mode = episode_seed, annotate_boxes, render_mode
        self.task = TASKS[family]()
        self.scene = TabletopScene(self.task.elements)
        self.task.bind(self.scene)
        self.scene.on_reset = self._lay_out
        self.scene.on_control_step = self.task.on_control_step
        self.motion = ArmMotion(self.scene, MotionLimits(**(motion or {})))
        self.motion.remember_home()
        self.cameras = CameraRig(self.scene.mj_model, image_size)
        self.look = SceneLook(self.scene)
        self.action_space = spaces.MultiDiscrete(ACTION_NVEC)
        self._channels = Channels(None, self.action_space)
        self.observation_space = observation_space(image_size)
        self._pending: dict[str, Any] | None = None
        self._episode: dict[str, Any] | None = None
        self._labels: list[str] = []
        self._steps = 0
        self._done = True
        self._last_obs: dict[str, Any] | None = None

    # -------------------------------------------------------------------------------- Gymnasium API

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[dict, dict]:
        super().reset(seed=seed)
        self._pending = self._variant(
            self._choose_episode(options or {}), (options or {}).get("perturbation")
        )
        self.scene.reset()
        self._episode, self._pending = self._pending, None
        self._settle()
        self._labels = [o["slot"] for o in sorted(self._episode["objects"], key=lambda o: o["xy"][1])]
        self._steps, self._done = 0, False
        obs = self._observe(feedback="")
        return obs, self._info(action_valid=True, feedback="", result=None)

    def step(self, action: object) -> tuple[dict, SupportsFloat, bool, bool, dict]:
        if self._done:
            raise RuntimeError("the episode has ended (or never started): call reset() first")
        indices = self._channels.action(validate_action(action))
        self._steps += 1
        reason = self.invalid_reason(indices)
        result = None
        if reason is None:
            position, rotation, closed = eb_manipulation_decode(indices.astype(np.int64), **_GRID)
            result = self.motion.execute(position, rotation, closed)
            feedback = _feedback(result)
        else:
            feedback = f"Last action is invalid. {reason}"
        evaluation = self.task.evaluate()
        terminated = bool(evaluation["success"])
        truncated = not terminated and self._steps >= self.max_steps
        reward = 1.0 if terminated else (-1.0 if reason is not None else 0.0)
        self._done = terminated or truncated
        obs = self._observe(feedback)
        return obs, reward, terminated, truncated, self._info(reason is None, feedback, result, evaluation)

    def render(self) -> np.ndarray | None:
        """The front camera image of the last observation (``render_mode="rgb_array"``)."""
        if self.render_mode != "rgb_array" or self._last_obs is None:
            return None
        return self._last_obs["front_rgb"]

    def close(self) -> None:
        """Close the renderer (and the simulation) explicitly."""
        self.cameras.close()
        self.scene.close()

    # -------------------------------------------------------------------------- actions, validity

    def invalid_reason(self, indices: np.ndarray) -> str | None:
        """Why EB would reject this action (not an index, out of range, below the table, out of reach)."""
        for name, value, n in zip(ACTION_NAMES, indices, ACTION_NVEC):
            if value != round(value):
                return f"{name} index {value:g} is not an integer."
            if not 0 <= value < n:
                return f"{name} index {int(value)} is outside 0..{int(n) - 1}."
        position, rotation, _ = eb_manipulation_decode(np.asarray(indices).astype(np.int64), **_GRID)
        if position[2] < workspace.TABLE_TOP_Z + self.motion.limits.min_height_above_table:
            return "The target position is below the table surface."
        reach = self.motion.reachable(position, rotation)
        if not reach.reachable:
            return (
                f"The target pose is out of the arm's reach (the closest pose found is "
                f"{100 * reach.position_error:.1f} cm and {np.degrees(reach.rotation_error):.0f} degrees away)."
            )
        return None

    def native_actions(self, motion: StepMotion) -> list[np.ndarray]:
        """EB actions carrying out one plan step, in the wrist camera's frame (OpenCV axes).

        The relative motion is applied to the current grip pose and encoded on EB's grid (voxel and 3 degree
        rounding; targets off the grid are clipped to it). One absolute target covers any motion.
        """
        position, rotation = self.scene.grip_pose()
        action = eb_manipulation_from_motion(
            motion,
            position,
            rotation,
            frame_rotation=self.wrist_camera_frame(),
            gripper_closed=self.scene.gripper_closed,
            **_GRID,
        )
        return [action.astype(np.int64)]

    def wrist_camera_frame(self) -> np.ndarray:
        """Rotation world <- wrist camera, in OpenCV axes (+x right, +y down, +z forward)."""
        cam = self.scene.mj_model.camera(workspace.WRIST_CAMERA).id
        return self.scene.mj_data.cam_xmat[cam].reshape(3, 3) @ _CV_FROM_MUJOCO_CAMERA

    # ------------------------------------------------------------------------------- observations

    def object_list(self) -> dict[str, list[int]]:
        """EB's planner input: ``{"object i": [X, Y, Z]}`` voxel indices of the objects' centres."""
        return {
            f"object {i + 1}": [int(v) for v in workspace.world_to_voxel(self.task.center(slot))]
            for i, slot in enumerate(self._labels)
        }

    def snapshot(self) -> dict[str, Any]:
        """JSON-safe task state (object poses, gripper, evaluation), plus the episode's identity."""
        return {
            **self.task.snapshot(),
            "episode": _episode_id(self._episode),
            "steps": self._steps,
            "labels": {f"object {i + 1}": slot for i, slot in enumerate(self._labels)},
        }

    def _observe(self, feedback: str) -> dict[str, Any]:
        data = self.scene.mj_data
        obs: dict[str, Any] = {key: self.cameras.rgb(data, cam) for key, cam in CAMERAS.items()}
        if self.annotate_boxes:
            seg = self.cameras.segmentation(data, CAMERAS["front_rgb"])
            geoms = {i + 1: self.task.visual_geoms(slot) for i, slot in enumerate(self._labels)}
            obs["front_rgb"] = draw_boxes(obs["front_rgb"], object_boxes(seg, geoms))
        assert self._episode is not None  # observed from reset on
        obs["instruction"] = self._episode["instruction"]
        obs["feedback"] = feedback
        obs["object_list"] = str(self.object_list())
        obs = self._channels.images(obs)
        self._last_obs = obs
        return obs

    def _info(
        self,
        action_valid: bool,
        feedback: str,
        result: MotionResult | None,
        evaluation: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        evaluation = evaluation or self.task.evaluate()
        info = {
            "is_success": bool(evaluation["success"]),
            "last_action_success": action_valid,
            "feedback": feedback,
            "env_step": self._steps,
            "evaluation": evaluation,
            "snapshot": self.snapshot(),
            "episode": _episode_id(self._episode),
        }
        if result is not None:
            info["control_steps"] = result.control_steps
        return info

    # ------------------------------------------------------------------------------------ episodes

    def _choose_episode(self, options: dict[str, Any]) -> dict[str, Any]:
        unknown = set(options) - {"episode", "subset", "index", "perturbation"}
        if unknown:
            raise ValueError(
                f"unknown reset options {sorted(unknown)}; use 'episode' or 'subset'/'index', and "
                "'perturbation' (a variant spec)"
            )
        if "episode" in options:
            return options["episode"]
        subset = options.get("subset", self.subset)
        if "index" in options:
            return make_episode(self.family, subset, int(options["index"]), self.episode_seed)
        episode = self.task.sample_episode(self.np_random, subset)
        return {"family": self.family, "subset": subset, "index": None, "seed": None, **episode}

    def _variant(self, episode: dict[str, Any], spec: object) -> dict[str, Any]:
        """``episode`` as the robustness variant ``spec`` changes it (``None``: unchanged); the channel
        axes are applied to observations and actions from here on."""
        parsed = None if spec is None else check_spec(perturbations.FAMILY, spec)
        self._channels = Channels(parsed, self.action_space)
        apply = None if parsed is None else perturbations.AXES[parsed.axis].apply
        return episode if apply is None or parsed is None else apply(episode, parsed)

    def _lay_out(self) -> None:
        if self._pending is not None:
            self.task.apply(self._pending)
            self.look.apply(self._pending)

    def _settle(self, steps: int = 3) -> None:
        position, rotation = self.scene.grip_pose()
        for _ in range(steps):
            self.scene.control_step(position, rotation, self.scene.gripper_command)


def observation_space(image_size: int) -> spaces.Dict:
    """The observation space of every EB-Manipulation env (three cameras and EB's three texts)."""
    image = spaces.Box(0, 255, (image_size, image_size, 3), np.uint8)
    return spaces.Dict(
        {
            **{key: image for key in CAMERAS},
            "instruction": TextObservation(2000, min_length=0, charset=TEXT_CHARSET),
            "feedback": TextObservation(500, min_length=0, charset=TEXT_CHARSET),
            "object_list": TextObservation(2000, min_length=0, charset=TEXT_CHARSET),
        }
    )


def validate_action(action: object) -> np.ndarray:
    """The action as 7 numbers, or a ``ValueError`` that says what is wrong and what EB expects.

    Plans, NaN/infinite values and wrong shapes are caller errors; finite values that are not valid
    indices (non-integers, out of range) are the agent's invalid actions, judged by ``invalid_reason``.
    """
    if isinstance(action, (Plan, PlanStep, str)):
        raise ValueError(
            "EB-Manipulation's step() takes a 7-D action; run plans through "
            "envs.wrappers.SpatialActionWrapper or env.unwrapped.native_actions(step_motion(...))"
        )
    try:
        values = np.asarray(action, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ValueError(
            f"an EB-Manipulation action is 7 integers [X, Y, Z, Roll, Pitch, Yaw, Gripper], got {action!r}"
        ) from exc
    if values.shape != (7,):
        raise ValueError(
            f"an EB-Manipulation action has shape (7,) [X, Y, Z, Roll, Pitch, Yaw, Gripper], "
            f"got shape {values.shape}"
        )
    if not np.all(np.isfinite(values)):
        raise ValueError(f"action {values.tolist()} contains NaN or infinite values; send 7 integers")
    return values


def _feedback(result: MotionResult) -> str:
    if result.reached:
        return "Last action executed successfully."
    return (
        f"Last action executed, but the gripper stopped {100 * result.position_error:.1f} cm and "
        f"{np.degrees(result.rotation_error):.0f} degrees from the target pose."
    )


def _episode_id(episode: dict[str, Any] | None) -> dict[str, Any]:
    if episode is None:
        return {}
    return {k: episode.get(k) for k in ("family", "subset", "index", "seed", "eb_task")}
