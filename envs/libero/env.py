"""LIBERO tasks (real LIBERO: BDDL problems, assets, fixed initial states) as Gymnasium environments."""

from __future__ import annotations

import contextlib
import importlib.metadata
import string
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from action_mapping.adapters import osc_pose_actions
from action_mapping.plan import StepSizes
from action_mapping.trajectory import StepMotion
from envs.libero import distractors, perturbations, protocol
from envs.libero.rendering import apply_fast_rendering, free_render_context, is_fast
from envs.libero.scene_edit import ModelDefaults, describe_scene, write_scene
from envs.libero.tasks import LiberoTask, load_init_states, load_task
from envs.perturbation import Channels, PerturbationSpec, check_spec
from envs.rendering import starting_gl
from envs.vector import TextObservation

ImageOrientation = Literal["upright", "rot180", "raw"]
IMAGE_ORIENTATIONS: tuple[str, ...] = ("upright", "rot180", "raw")
RESET_OPTIONS = frozenset({"init_state_index", "num_steps_wait", "max_steps", "hard_reset", "perturbation"})
# robosuite's own horizon is set out of reach: episode ends are decided by this env (success, max_steps).
_UNREACHED_HORIZON = 10**9
_ARM = "right"  # robosuite 1.5 names the Panda's single arm "right"
_WORLD_EXTENT_M = 5.0
_FINGER_QPOS_BOUND = 0.1
_PLAN_HINT = " (plans of primitives go through the SpatialActionWrapper)"


@dataclass
class _Episode:
    init_state_index: int
    max_steps: int
    steps: int = 0
    over: bool = False


class LiberoEnv(gym.Env):
    """One LIBERO task (130 in five suites) through the Gymnasium API.

    Description:
        A Franka Panda in a LIBERO scene (kitchen, living room, study, floor) built from the task's BDDL
        problem, with LIBERO's assets and fixed initial states (rpent-libero on robosuite 1.5 / MuJoCo).
        Ids: ``SpatialArena/Libero-<suite>-<task_index>-v0``, task indices in LIBERO's own order (task
        order 0), e.g. ``SpatialArena/Libero-libero_goal-7-v0`` is "turn on the stove". Every keyword
        argument is recorded by ``env.unwrapped.describe()`` with the MuJoCo / robosuite / LIBERO versions.

    Action Space:
        ``Box(-1, 1, (7,), float32)``: robosuite OSC_POSE deltas in the robot base frame, ``[dx, dy, dz]``
        (x 0.05 m per unit) and axis-angle ``[ax, ay, az]`` (x 0.5 rad per unit), then the gripper
        (-1 open, +1 close). Out-of-range values are clipped by robosuite's controller, as in LIBERO;
        NaN/inf or a wrong shape raise ``ValueError``. ``env.unwrapped.native_actions(motion)`` turns a
        SpatialTree step motion (in the end-effector frame) into these actions through
        ``action_mapping.adapters.osc_pose_actions``, with the gripper site's orientation in the base
        frame as the motion frame, so the generic spatial action wrapper executes plans on LIBERO.

    Observation Space:
        ``Dict``: ``agentview_image`` and ``eye_in_hand_image`` (``uint8`` image_size x image_size x 3,
        right side up by default, see ``image_orientation``); ``instruction`` (``Text``); proprioception
        in LIBERO's world frame: ``eef_pos`` (3), ``eef_quat`` (4, x-y-z-w as robosuite), ``gripper_qpos``
        (2), ``joint_pos`` (7), and ``state`` (8) = eef_pos + axis-angle of eef_quat + gripper_qpos, the
        state vector LIBERO VLAs (OpenVLA-OFT, pi0) consume. ``instruction`` is LIBERO's task language, as
        evaluations prompt it.

        Images are right side up: MuJoCo reads pixels bottom row first, so robosuite's default frames
        (and LIBERO's own datasets) are upside down; we flip rows, which gives the true camera image
        (checked in the tests by projecting object centres through the camera model onto a segmentation
        render). OpenVLA's and LeRobot's LIBERO pipelines instead rotate frames by 180 degrees, which also
        mirrors them left-right; models trained on their data need ``image_orientation="rot180"``;
        ``"raw"`` gives robosuite's frames unchanged.

    Rewards / Success:
        :meth:`evaluate` runs LIBERO's BDDL goal check; ``terminated``, the sparse reward (1.0 on
        success) and ``info["is_success"]`` all come from it.

    Starting State:
        ``reset(options={"init_state_index": k})`` loads LIBERO's fixed initial state ``k`` (0..49; drawn
        from the seeded generator when absent), then runs ``num_steps_wait`` no-op steps
        ``[0, 0, 0, 0, 0, 0, -1]`` so dropped objects settle. Fixture placement jitter, which LIBERO draws
        from numpy's global generator, is drawn from the reset's seed, so a reset fully determines the
        episode (each hard reset makes LIBERO register its articulated-object samplers once more, which
        changes the jitter drawn for a seed from then on). Other options: ``num_steps_wait``, ``max_steps`` (this episode only), ``hard_reset``
        (rebuild the MuJoCo model for this reset; off by default), ``perturbation`` (an
        :class:`envs.perturbation.PerturbationSpec` or its dict: a robustness variant, axes in
        :mod:`envs.libero.perturbations`, applied to the loaded initial state before the settle steps;
        the next reset undoes it; nothing of the spec reaches observations or ``info``). Same seed and initial state give
        bit-identical observations whatever ran before, in the same or a fresh env (tested), unless a hard
        reset was asked for in between.

    Episode End:
        ``terminated`` on success; ``truncated`` after ``max_steps`` policy steps (suite default:
        220 / 280 / 300 / 520 / 400 for spatial / object / goal / 10 / 90; settle steps not counted, as in
        OpenVLA's loop).
        Stepping after the end raises ``RuntimeError``.

    Rendering:
        ``fast_render=True`` (default) turns off shadows, reflections and multisampling on the render
        context (re-applied whenever a hard reset builds a new one); ``fast_render=False`` keeps MuJoCo's
        defaults, as LIBERO's own stack renders. Resets are soft: LIBERO's default hard reset rebuilds the
        model (measured under load: 8.0 s against 0.6 s for a soft reset, 3 GB resident);
        ``hard_reset=True`` as argument or reset option restores it. Each env makes its own GL context
        current before it steps: robosuite renders into whichever context is current, so two LIBERO envs
        in one process otherwise return frames drawn with the other env's buffers. LIBERO's simulator and
        its GL context are built at the first reset (or first use of ``raw_env``), not when the env is
        made, so a process that only makes one (``AsyncVectorEnv`` does, to read the spaces) leaves its
        forked workers free to render. Renderers are freed in ``close()``.

    Arguments:
        suite, task_index: the task (``envs.libero.protocol.TASK_COUNTS``).
        image_size: camera resolution (default 256, the protocol's).
        max_steps: policy-step budget, default the suite's protocol value.
        num_steps_wait: settle steps after each reset (10).
        fast_render: shadows, reflections and multisampling off (default True; False keeps MuJoCo's
            defaults, as LIBERO's own stack renders).
        hard_reset: rebuild the model on every reset (LIBERO's default; slow, off here).
        image_orientation: "upright" (the default: the true camera image), "rot180" (OpenVLA / LeRobot LIBERO
            pipelines, which rotate LIBERO's upside-down frames by 180 degrees) or "raw" (OpenGL rows,
            bottom first, as LIBERO's own datasets store them).
        render_mode: None or "rgb_array" (``render()`` returns the last agentview image).
        cameras: render the two cameras (default True). ``False`` builds no renderer and steps physics
            and control only (about ten times faster on CPU): both images are then black (image
            perturbations leave them black), for policies that look at no image (scripted experts, blind
            baselines).
    """

    # as gymnasium.Env declares it (an instance variable with a class-level default)
    metadata: dict[str, Any] = {"render_modes": ["rgb_array"], "render_fps": protocol.CONTROL_FREQ}  # noqa: RUF012
    #: One count of a SpatialTree primitive in plans run here (the plan-execution contract, with
    #: :meth:`native_actions` and :meth:`noop_action`): 1 cm and 0.05 rad, a fifth and a tenth of one
    #: OSC_POSE unit, the precision a grasp needs; see docs/guide/action-mapping.md, "Executable plans and
    #: units".
    plan_step_sizes: ClassVar[StepSizes] = StepSizes(translation=0.01, rotation=0.05)

    def __init__(
        self,
        suite: str,
        task_index: int,
        *,
        image_size: int = protocol.IMAGE_SIZE,
        max_steps: int | None = None,
        num_steps_wait: int = protocol.NUM_STEPS_WAIT,
        fast_render: bool = True,
        hard_reset: bool = False,
        image_orientation: ImageOrientation = "upright",
        render_mode: str | None = None,
        cameras: bool = True,
    ) -> None:
        protocol.check_task(suite, task_index)
        self.suite, self.task_index = suite, int(task_index)
        self.image_size = _check_int("image_size", image_size, minimum=1)
        self.max_steps = (
            protocol.MAX_STEPS[suite] if max_steps is None else _check_int("max_steps", max_steps, 1)
        )
        self.num_steps_wait = _check_int("num_steps_wait", num_steps_wait, minimum=0)
        self.fast_render, self.hard_reset = bool(fast_render), bool(hard_reset)
        self.image_orientation = _check_choice("image_orientation", image_orientation, IMAGE_ORIENTATIONS)
        self.render_mode = (
            None if render_mode is None else _check_choice("render_mode", render_mode, ("rgb_array",))
        )
        self.cameras = bool(cameras)
        self.task: LiberoTask = load_task(suite, self.task_index)
        self.init_states = load_init_states(self.task)
        self._raw_env: Any = None  # built at first use (see ``_raw``)
        # a distractors variant's scene (its own LIBERO env, the last one kept) and whether it is in use
        self._variant_env: Any = None
        self._variant_bddl: Path | None = None
        self._variant_compiled: dict[str, np.ndarray] = {}  # its compiled values of what parking changes
        self._in_variant = False
        self._closed = False
        self._defaults: ModelDefaults | None = None  # the compiled model's camera, lights, materials
        self.action_space = action_space()
        self.observation_space = self._observation_space()
        self._episode: _Episode | None = None
        self._gripper = protocol.SETTLE_ACTION[6]
        self._last_observation: dict[str, Any] | None = None
        self._instruction: str | None = None  # a paraphrase variant's wording
        self._channels = Channels(None, self.action_space)

    # ------------------------------------------------------------------------------------ Gymnasium API

    def reset(
        self, *, seed: int | None = None, options: Mapping[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """Load a fixed initial state and let the scene settle (see the class docstring)."""
        super().reset(seed=seed)
        settings = self._episode_settings(options or {})
        self._in_variant = False  # (the clean scene first; a distractors variant moves to its own)
        self._make_render_context_current()
        with _global_numpy_seed(int(self.np_random.integers(2**31 - 1))):
            self._reset_raw(settings["hard_reset"])
        self._make_render_context_current()  # a hard reset made a new one
        raw = self._raw.set_init_state(self.init_states[settings["init_state_index"]])
        spec = settings["perturbation"]
        raw = self._perturb(spec, raw)
        self._channels = Channels(spec, self.action_space)
        for _ in range(settings["num_steps_wait"]):
            raw, _, _, _ = self._raw.step(protocol.settle_action().astype(np.float64))
        self._episode = _Episode(settings["init_state_index"], settings["max_steps"])
        self._gripper = protocol.SETTLE_ACTION[6]
        return self._observation(raw), self._info(self.evaluate()["success"])

    def step(self, action: np.ndarray) -> tuple[dict[str, Any], float, bool, bool, dict[str, Any]]:
        """Apply one OSC_POSE action; ``terminated`` on success, ``truncated`` at ``max_steps``."""
        episode = self._running_episode()
        native = self._channels.action(_check_action(action))
        self._make_render_context_current()
        raw, _, _, _ = self._raw.step(native)
        episode.steps += 1
        self._gripper = float(native[6])
        success = self.evaluate()["success"]
        truncated = not success and episode.steps >= episode.max_steps
        episode.over = success or truncated
        return self._observation(raw), float(success), success, truncated, self._info(success)

    def render(self) -> np.ndarray | None:
        """The last agentview image (``render_mode="rgb_array"``), as oriented in the observation."""
        if self.render_mode is None or self._last_observation is None:
            return None
        return self._last_observation["agentview_image"].copy()

    def close(self) -> None:
        """Free the render context and the simulator now (not at interpreter exit)."""
        self._closed = True
        self._close_variant()
        if getattr(self, "_raw_env", None) is None:
            return
        _close_simulator(self._raw_env)
        self._raw_env = None

    def _close_variant(self) -> None:
        if getattr(self, "_variant_env", None) is None:
            return
        _close_simulator(self._variant_env)
        self._variant_env, self._variant_bddl, self._in_variant = None, None, False

    # --------------------------------------------------------------------------------- task and success

    def evaluate(self) -> dict[str, bool]:
        """LIBERO's BDDL goal check: the one place success is computed."""
        return {"success": bool(self._raw.check_success())}

    @property
    def instruction(self) -> str:
        """The task's language instruction (LIBERO's ``task.language``, as evaluations prompt it), or a
        paraphrase variant's wording of it."""
        return self.task.instruction if self._instruction is None else self._instruction

    @property
    def elapsed_steps(self) -> int:
        """Policy steps taken in the current episode (settle steps excluded)."""
        return 0 if self._episode is None else self._episode.steps

    @property
    def raw_env(self) -> Any:
        """The underlying LIBERO ``OffScreenRenderEnv`` (for privileged experts and tests)."""
        return self._raw

    # ---------------------------------------------------------------------------------- spatial actions

    def noop_action(self) -> np.ndarray:
        """Hold still with the last gripper command: what a policy's "no motion" costs (one step)."""
        return np.array([0, 0, 0, 0, 0, 0, self._gripper], dtype=np.float64)

    def native_actions(self, motion: StepMotion) -> list[np.ndarray]:
        """OSC_POSE actions that carry out ``motion``, a rigid motion in the current end-effector frame."""
        actions = osc_pose_actions(motion, self.end_effector_rotation(), current_gripper=self._gripper)
        return [a.astype(np.float32) for a in actions]

    def end_effector_rotation(self) -> np.ndarray:
        """The gripper site's orientation in the robot base frame (the frame of OSC_POSE deltas), 3x3."""
        controller = self._raw.robots[0].composite_controller
        _, base_rotation = controller.get_controller_base_pose(_ARM)
        sim = self._raw.sim
        site = sim.model.site_name2id(controller.part_controllers[_ARM].ref_name)
        return base_rotation.T @ np.asarray(sim.data.site_xmat[site]).reshape(3, 3)

    def describe(self) -> dict[str, Any]:
        """JSON-safe settings and simulator versions, for results manifests."""
        import mujoco
        import robosuite

        return {
            "suite": self.suite,
            "task_index": self.task_index,
            "task_name": self.task.name,
            "instruction": self.instruction,
            "image_size": self.image_size,
            "max_steps": self.max_steps,
            "num_steps_wait": self.num_steps_wait,
            "fast_render": self.fast_render,
            "hard_reset": self.hard_reset,
            "image_orientation": self.image_orientation,
            "cameras": self.cameras,
            "versions": {
                "mujoco": mujoco.__version__,
                "robosuite": robosuite.__version__,
                "rpent-libero": importlib.metadata.version("rpent-libero"),
            },
        }

    # ------------------------------------------------------------------------------------------ helpers

    @property
    def _raw(self) -> Any:
        """LIBERO's env, built at first use: making this env creates no GL context, so a process that only
        builds one (``AsyncVectorEnv`` does, in the parent, to read the spaces) has nothing its forks would
        inherit; the worker that steps it renders in its own context. During a distractors variant: the
        variant scene's env."""
        if self._in_variant:
            return self._variant_env
        if self._raw_env is None:
            if self._closed:
                raise RuntimeError("the env was closed; make a new one")
            self._raw_env = self._make_raw_env()
            self._apply_render_settings()
        return self._raw_env

    def _make_raw_env(self, bddl_file: Path | None = None) -> Any:
        from libero.libero.envs import OffScreenRenderEnv
        from libero.libero.envs.env_wrapper import ControlEnv

        bddl = str(bddl_file or self.task.bddl_file)
        if not self.cameras:  # physics and control only: no render context, no camera observations
            return ControlEnv(
                bddl_file_name=bddl,
                use_camera_obs=False,
                has_offscreen_renderer=False,
                hard_reset=self.hard_reset,
                horizon=_UNREACHED_HORIZON,
                ignore_done=True,
            )
        starting_gl()  # robosuite makes its offscreen GL context here
        return OffScreenRenderEnv(
            bddl_file_name=bddl,
            camera_heights=self.image_size,
            camera_widths=self.image_size,
            hard_reset=self.hard_reset,
            horizon=_UNREACHED_HORIZON,
            ignore_done=True,
        )

    def _reset_raw(self, hard: bool) -> None:
        self._raw.env.hard_reset = hard
        try:
            self._raw.reset()
        finally:
            self._raw.env.hard_reset = self.hard_reset
        self._apply_render_settings()  # a hard reset builds a new render context with default settings
        model = self._raw.env.sim.model._model
        if self._defaults is None or model is not self._defaults.model:  # (first reset, or a hard one)
            self._defaults = ModelDefaults(model)
        self._defaults.restore()  # an earlier variant's camera, lights and materials undone

    def _perturb(self, spec: PerturbationSpec | None, raw: dict[str, Any]) -> dict[str, Any]:
        """Apply a scene axis of ``spec`` to the loaded initial state; the raw observation after it."""
        self._instruction = None
        axis = None if spec is None else perturbations.AXES[spec.axis]
        if spec is None or axis is None or axis.apply is None:
            return raw
        scene = describe_scene(self._raw, self.task.instruction)
        if spec.axis == "distractors":
            eligible = [
                p
                for p in distractors.pool_entries(self._raw)
                if not perturbations.confusable(p["category"], scene)
            ]
            kinds = distractors.task_kinds(self.task.bddl_file.read_text(), [p["category"] for p in eligible])
            edited = axis.apply({**scene, "pool": [p for p in eligible if p["category"] in kinds]}, spec)
            return self._enter_distractors(kinds, edited["distractors"], spec.seed)
        edited = axis.apply(scene, spec)
        if edited["instruction"] != scene["instruction"]:
            self._instruction = edited["instruction"]
        if write_scene(self._raw, scene, edited):
            return self._raw.env._get_observations(force_update=True)
        return raw

    def _enter_distractors(
        self, kinds: list[str], placements: list[dict[str, Any]], seed: int
    ) -> dict[str, Any]:
        """Move to the task's distractor scene (``kinds`` added; built once) in the clean scene's loaded
        state with ``placements`` on the table; the raw observation there."""
        bddl = distractors.bddl_file(distractors.bddl_with(self.task.bddl_file.read_text(), kinds))
        if bddl != self._variant_bddl:
            self._close_variant()
            self._variant_env, self._variant_bddl = self._make_raw_env(bddl), bddl
            model = self._variant_env.env.sim.model._model
            self._variant_compiled = {f: np.array(getattr(model, f)) for f in distractors.PARK_FIELDS}
        self._in_variant = True
        self._make_render_context_current()
        self._apply_render_settings()
        with _global_numpy_seed(seed):  # (LIBERO's placements are overwritten by the clean scene's)
            self._variant_env.reset()
        state = distractors.variant_state(
            self._raw_env, self._variant_env, kinds, placements, self._variant_compiled
        )
        return self._variant_env.set_init_state(state)

    def _render_context(self) -> Any:
        return _render_context_of(self._raw)

    def _make_render_context_current(self) -> None:
        # robosuite renders into whichever GL context is current, and every env makes its own current
        # when created: with several envs in one process, frames would come from another env's buffers.
        context = self._render_context()
        if context is not None:
            context.gl_ctx.make_current()

    def _apply_render_settings(self) -> None:
        context = self._render_context()
        if self.fast_render and context is not None and not is_fast(context):
            apply_fast_rendering(context)

    def _episode_settings(self, options: Mapping[str, Any]) -> dict[str, Any]:
        unknown = set(options) - RESET_OPTIONS
        if unknown:
            raise ValueError(
                f"unknown reset options {sorted(unknown)}; LiberoEnv accepts {sorted(RESET_OPTIONS)}"
            )
        spec = options.get("perturbation")
        index = options.get("init_state_index")
        if index is None:
            index = int(self.np_random.integers(len(self.init_states)))
        return {
            "init_state_index": _check_int("init_state_index", index, 0, len(self.init_states) - 1),
            "num_steps_wait": _check_int(
                "num_steps_wait", options.get("num_steps_wait", self.num_steps_wait), 0
            ),
            "max_steps": _check_int("max_steps", options.get("max_steps", self.max_steps), 1),
            "hard_reset": bool(options.get("hard_reset", self.hard_reset)),
            "perturbation": None if spec is None else check_spec(perturbations.FAMILY, spec),
        }

    def _running_episode(self) -> _Episode:
        if self._episode is None:
            raise RuntimeError("call reset() before step()")
        if self._episode.over:
            raise RuntimeError("the episode has ended (success or max_steps); call reset()")
        return self._episode

    def _observation(self, raw: Mapping[str, np.ndarray]) -> dict[str, Any]:
        from robosuite.utils.transform_utils import quat2axisangle

        eef_pos, eef_quat = raw["robot0_eef_pos"], raw["robot0_eef_quat"]
        gripper = raw["robot0_gripper_qpos"]
        observation = {
            "agentview_image": self._image(raw, "agentview_image"),
            "eye_in_hand_image": self._image(raw, "robot0_eye_in_hand_image"),
            "instruction": self.instruction,
            "eef_pos": np.array(eef_pos, dtype=np.float64),
            "eef_quat": np.array(eef_quat, dtype=np.float64),
            "gripper_qpos": np.array(gripper, dtype=np.float64),
            "joint_pos": np.array(raw["robot0_joint_pos"], dtype=np.float64),
            "state": np.concatenate([eef_pos, quat2axisangle(eef_quat), gripper]).astype(np.float64),
        }
        if self.cameras:  # (the identity unless a channel variant; black placeholders stay black)
            observation = self._channels.images(observation)
        self._last_observation = observation
        return observation

    def _image(self, raw: Mapping[str, np.ndarray], key: str) -> np.ndarray:
        if not self.cameras:
            return np.zeros((self.image_size, self.image_size, 3), np.uint8)
        return self._orient(raw[key])

    def _orient(self, image: np.ndarray) -> np.ndarray:
        # MuJoCo reads pixels bottom row first, so robosuite's default ("opengl") frames are upside down.
        if self.image_orientation == "upright":
            image = image[::-1]
        elif self.image_orientation == "rot180":
            image = image[::-1, ::-1]
        return np.ascontiguousarray(image)

    def _info(self, success: bool) -> dict[str, Any]:
        episode = self._episode
        return {
            "is_success": bool(success),
            "init_state_index": None if episode is None else episode.init_state_index,
            "elapsed_steps": self.elapsed_steps,
        }

    def _observation_space(self) -> spaces.Dict:
        image = spaces.Box(0, 255, (self.image_size, self.image_size, 3), np.uint8)

        def box(low: np.ndarray | float, high: np.ndarray | float, n: int) -> spaces.Box:
            return spaces.Box(np.full(n, low), np.full(n, high), (n,), np.float64)

        # Loose physical bounds: LIBERO scenes span a few metres; robosuite's axis-angle is in [0, 2 pi];
        # Panda finger joints move within 0.04 m and arm joints within 3.8 rad.
        state_low = np.r_[
            np.full(3, -_WORLD_EXTENT_M), np.full(3, -2 * np.pi), np.full(2, -_FINGER_QPOS_BOUND)
        ]
        return spaces.Dict(
            {
                "agentview_image": image,
                "eye_in_hand_image": image,
                "instruction": TextObservation(max_length=512, min_length=1, charset=string.printable),
                "eef_pos": box(-_WORLD_EXTENT_M, _WORLD_EXTENT_M, 3),
                "eef_quat": box(-1.0, 1.0, 4),
                "gripper_qpos": box(-_FINGER_QPOS_BOUND, _FINGER_QPOS_BOUND, 2),
                "joint_pos": box(-2 * np.pi, 2 * np.pi, 7),
                "state": box(state_low, -state_low, 8),
            }
        )


def _close_simulator(env: Any) -> None:
    """Close a LIBERO simulator, its render context freed now rather than at interpreter exit."""
    context = _render_context_of(env)
    if context is not None:
        free_render_context(context)
    env.close()


def _render_context_of(raw_env: Any) -> Any:
    sim = getattr(raw_env.env, "sim", None)
    return None if sim is None else getattr(sim, "_render_context_offscreen", None)


def make_libero_env(suite: str, task_index: int, **kwargs: Any) -> LiberoEnv:
    """Build the env of one LIBERO task; ``kwargs`` are :class:`LiberoEnv`'s keyword arguments."""
    return LiberoEnv(suite, task_index, **kwargs)


def _check_action(action: object) -> np.ndarray:
    try:
        native = np.asarray(action, dtype=np.float64)
    except (TypeError, ValueError) as error:
        raise ValueError(
            f"LIBERO actions are 7-D float arrays, got {type(action).__name__}{_PLAN_HINT}"
        ) from error
    if native.shape != (7,):
        raise ValueError(
            f"LIBERO actions are 7-D OSC_POSE deltas [dx, dy, dz, ax, ay, az, gripper], got shape {native.shape}"
            f"{_PLAN_HINT}"
        )
    if not np.all(np.isfinite(native)):
        raise ValueError(f"LIBERO action contains NaN or inf: {native.tolist()}")
    return native


def _check_int(name: str, value: object, minimum: int, maximum: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"{name} must be an int, got {value!r}")
    if value < minimum or (maximum is not None and value > maximum):
        bound = f">= {minimum}" if maximum is None else f"in {minimum}..{maximum}"
        raise ValueError(f"{name} must be {bound}, got {value}")
    return int(value)


def _check_choice(name: str, value: str, choices: tuple[str, ...]) -> str:
    if value not in choices:
        raise ValueError(f"{name} must be one of {choices}, got {value!r}")
    return value


@contextlib.contextmanager
def _global_numpy_seed(seed: int) -> Iterator[None]:
    # LIBERO's placement samplers (fixture jitter) draw from numpy's global generator: seed it for this
    # reset only and give the caller's generator state back afterwards.
    saved = np.random.get_state()
    np.random.seed(seed)
    try:
        yield
    finally:
        np.random.set_state(saved)


def action_space() -> spaces.Box:
    """Every LIBERO env's action space: delta end-effector position and rotation, and the gripper, in [-1, 1]."""
    return spaces.Box(-1.0, 1.0, (7,), np.float32)
