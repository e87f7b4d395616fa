"""The EmbodiedBench-style navigation environment on MuJoCo (see :class:`EBNavigationEnv`)."""

from __future__ import annotations

import math
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from action_mapping import Plan, StepMotion
from action_mapping.adapters import EB_NAV_LOOK_STEP, EB_NAV_MOVE_STEP, eb_navigation_actions
from envs.navigation import perturbations
from envs.navigation.episodes import (
    MAX_STEPS,
    SUBSETS,
    SUCCESS_DISTANCE,
    copy_episode,
    make_episode,
    validate_episode,
)
from envs.navigation.render import Frame, FrameRenderer
from envs.navigation.scene import scene_key
from envs.navigation.world import PITCH_LIMITS, AgentPose, World, camera_height_limits
from envs.perturbation import Channels, check_spec
from envs.vector import TextObservation

# EmbodiedBench's skill descriptions, in action-id order; feedback quotes them verbatim as EB does.
ACTION_NAMES: tuple[str, ...] = (
    "Move forward by 0.25",
    "Move backward by 0.25",
    "Move rightward by 0.25",
    "Move leftward by 0.25",
    "Rotate to the right by 90 degrees.",
    "Rotate to the left by 90 degrees.",
    "Tilt the camera upward by 30 degrees.",
    "Tilt the camera downward by 30 degrees.",
)
TEXT_CHARSET = "".join(chr(c) for c in range(32, 127))
MAX_TEXT = 4000
# Continuous action bounds: [truck, pedestal, dolly] metres, [tilt, pan, roll] radians.
CONTINUOUS_LIMITS = np.array([1.0, 1.0, 1.0, math.pi, math.pi, math.pi], dtype=np.float32)
_UNITS = (("truck", "m"), ("pedestal", "m"), ("dolly", "m"), ("tilt", "deg"), ("pan", "deg"), ("roll", "deg"))


class EBNavigationEnv(gym.Env):
    """Reach the object named by an instruction in a procedurally generated home, from first-person views.

    Description:
        EmbodiedBench's EB-Navigation protocol on MuJoCo. Each episode (a JSON-safe dict from
        :mod:`envs.navigation.episodes`) holds a scene of 1-3 furnished rooms, the agent's start pose, a
        target object and an instruction in one of five styles (base, common_sense, complex_instruction,
        visual_appearance, long_horizon). The agent is a camera on a disc of radius 0.18 m at 1.5 m height;
        walls, furniture and floor objects block its moves by an exact swept-disc test (it never passes
        through them).

    Action Space:
        ``action_mode="discrete"`` (default): ``Discrete(8)``, EB's ids: 0 move forward, 1 back, 2 right,
        3 left (0.25 m each), 4 rotate right, 5 rotate left (90 deg), 6 look up, 7 look down (30 deg;
        the camera tilts between -60 and +30 deg). An integer outside 0-7 is an invalid action (EB: the
        step is spent, the feedback says so); a non-integer or NaN raises ``ValueError``.
        ``action_mode="continuous"``: ``Box(6,)`` = a :class:`action_mapping.StepMotion`'s
        ``[truck, pedestal, dolly]`` (metres, camera frame: x right, y down, z forward) and
        ``[tilt, pan, roll]`` (radians about x, y, z). Translations are applied first, in the camera's
        level frame (as EB's moves: looking down does not drive into the floor) and cut short at the first
        obstacle; then pan turns, tilt and roll add to the camera angles (tilt clipped to its limits).
        ``native_actions(motion)`` turns any spatial-action-mapping motion into actions of either space
        (EB ids through ``action_mapping.adapters.eb_navigation_actions``; pedestal, roll and gripper, which
        EB cannot express, are reported in the next ``info["unsupported_motion"]``).

    Observation Space:
        ``Dict``: ``rgb`` (H, W, 3) uint8 first-person image; ``depth`` (H, W) float32 metres along the
        optical axis (``depth=True``); ``object_ids`` (H, W) int32 entity labels (``mask=True``; 0 is
        structure, then the scene's objects, then its furniture, as in ``info["mask_labels"]`` at reset);
        ``instruction`` and ``feedback`` text (feedback is empty after reset, then EB's
        "Last action X executed successfully." / "Last action X is invalid. <reason>", e.g. "Last action
        Move forward by 0.25 is invalid. The move is blocked by the wall.").

    Rewards/Success:
        ``evaluate()`` is the single place success is decided: the horizontal distance from the camera to
        the target object is at most ``success_distance`` (1.0 m), checked after every step. Reward is 1.0
        on the step that succeeds, else 0.0. ``info`` carries ``distance``, ``visibility`` (pixels where the
        target is the nearest surface in the current view: a depth-tested render of the target, identical
        to counting it in the segmentation mask), ``feedback``, ``is_success``, ``last_action_success``,
        ``steps``, ``unsupported_motion`` and a JSON-safe ``snapshot`` (``env.unwrapped.restore(snapshot)``
        returns to it).

    Starting State:
        ``reset(options={"episode": dict})`` loads that episode; ``reset(seed=s)`` without an episode draws
        one from the default set of ``subset`` (``make_episode_set(subset, default_set_size,
        default_set_seed)``) with the seeded generator. Consecutive episodes of one scene reuse the
        compiled MuJoCo model. ``options={"perturbation": spec}`` (an :class:`envs.perturbation.PerturbationSpec`
        or its dict) runs a robustness variant of the episode (axes in :mod:`envs.navigation.perturbations`);
        nothing of the spec appears in observations or ``info``.

    Episode End:
        Terminated on success; truncated when ``max_steps`` (20) actions have been taken.

    Arguments:
        action_mode: ``"discrete"`` or ``"continuous"``. width, height: image size (EB used 500x500;
        default 224). fov: vertical field of view in degrees (EB: 100). depth, mask: add those
        observations. max_steps, success_distance: the protocol's budget and threshold. subset,
        default_set_size, default_set_seed: the default episode set. render_mode: ``"rgb_array"`` or None.
    """

    # as gymnasium.Env declares it (an instance variable with a class-level default)
    metadata: dict[str, Any] = {"render_modes": ["rgb_array"], "render_fps": 4}  # noqa: RUF012

    def __init__(
        self,
        action_mode: str = "discrete",
        width: int = 224,
        height: int = 224,
        fov: float = 100.0,
        depth: bool = False,
        mask: bool = False,
        max_steps: int = MAX_STEPS,
        success_distance: float = SUCCESS_DISTANCE,
        subset: str = "base",
        default_set_size: int = 60,
        default_set_seed: int = 0,
        render_mode: str | None = None,
    ) -> None:
        _check_args(
            action_mode,
            width,
            height,
            fov,
            max_steps,
            success_distance,
            subset,
            default_set_size,
            render_mode,
        )
        self.action_mode, self.width, self.height, self.fov = action_mode, int(width), int(height), float(fov)
        self.use_depth, self.use_mask, self.render_mode = bool(depth), bool(mask), render_mode
        self.max_steps, self.success_distance = int(max_steps), float(success_distance)
        self.subset, self.default_set_size, self.default_set_seed = (
            subset,
            int(default_set_size),
            int(default_set_seed),
        )
        self.action_space = (
            spaces.Discrete(len(ACTION_NAMES))
            if action_mode == "discrete"
            else spaces.Box(-CONTINUOUS_LIMITS, CONTINUOUS_LIMITS, dtype=np.float32)
        )
        self.observation_space = self._observation_space()
        self._renderer: FrameRenderer | None = None
        self._world: World | None = None
        self._episode: dict[str, Any] | None = None
        self._pose = AgentPose(0.0, 0.0)
        self._steps, self._done, self._success, self._feedback = 0, False, False, ""
        self._frame: Frame | None = None
        self._unsupported: list[str] = []
        self._channels = Channels(None, self.action_space)
        self._fov = self.fov

    def _observation_space(self) -> spaces.Dict:
        image = (self.height, self.width)
        obs: dict[str, spaces.Space] = {"rgb": spaces.Box(0, 255, (*image, 3), np.uint8)}
        if self.use_depth:
            obs["depth"] = spaces.Box(0.0, np.inf, image, np.float32)
        if self.use_mask:
            obs["object_ids"] = spaces.Box(0, 1023, image, np.int32)
        obs["instruction"] = TextObservation(MAX_TEXT, min_length=1, charset=TEXT_CHARSET)
        obs["feedback"] = TextObservation(MAX_TEXT, min_length=0, charset=TEXT_CHARSET)
        return spaces.Dict(obs)

    # ------------------------------------------------------------------------------------ episode

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        super().reset(seed=seed)
        options = options or {}
        episode = self._episode_from(options)
        spec = options.get("perturbation")
        if spec is not None:  # the variant's scene, kept from the policy (no spec field reaches obs/info)
            spec = check_spec(perturbations.FAMILY, spec)
            axis = perturbations.AXES[spec.axis]
            episode = episode if axis.apply is None else axis.apply(episode, spec)
        self._channels = Channels(spec, self.action_space)
        self._fov = float(episode.get("camera_fov", self.fov))
        world, renderer = self._load_scene(episode["scene"])
        renderer.set_target(world.object_geoms(episode["target"]["id"]))
        self._episode = episode
        self._pose = AgentPose.from_json(episode["agent"])
        self._steps, self._done, self._success, self._feedback = 0, False, False, ""
        self._unsupported = []
        obs, info = self._observe(last_action_success=True)
        info.update(
            episode_id=episode.get("episode_id"),
            subset=episode["subset"],
            mask_labels=list(world.labels),
        )
        return obs, info

    def _episode_from(self, options: dict[str, Any]) -> dict[str, Any]:
        unknown = set(options) - {"episode", "episode_index", "perturbation"}
        if unknown:
            raise ValueError(
                f"unknown reset options {sorted(unknown)}; use 'episode' (an episode dict) or "
                "'episode_index' (an index into the default set), and 'perturbation' (a variant spec)"
            )
        if "episode" in options:
            validate_episode(options["episode"])
            return copy_episode(options["episode"])
        index = options.get("episode_index")
        if index is None:
            index = int(self.np_random.integers(self.default_set_size))
        elif not 0 <= int(index) < self.default_set_size:
            raise ValueError(f"episode_index must be in [0, {self.default_set_size}), got {index}")
        return make_episode(self.subset, int(index), self.default_set_seed)

    def _load_scene(self, scene: dict[str, Any]) -> tuple[World, FrameRenderer]:
        """Compile the scene unless it is the one already loaded (same content hash); its world and renderer."""
        if self._world is None or self._world.key != scene_key(scene):
            self._world = World(scene)
            if self._renderer is None:
                self._renderer = FrameRenderer(self.width, self.height)
            self._renderer.load(self._world.model, self._world.geom_entity)
        assert self._renderer is not None  # made with the first world
        return self._world, self._renderer

    # --------------------------------------------------------------------------------------- step

    def step(self, action: object) -> tuple[dict[str, Any], float, bool, bool, dict[str, Any]]:
        if self._episode is None or self._world is None:
            raise RuntimeError("call reset() before step()")
        if self._done:
            raise RuntimeError(
                "the episode has ended (success or step budget spent); call reset() to start another"
            )
        if isinstance(action, Plan):
            raise TypeError(
                "step() takes native actions; execute a Plan through the spatial-action wrapper, "
                "or convert its steps with env.unwrapped.native_actions(step_motion(...))"
            )
        action = self._channels.action(action)
        if self.action_mode == "discrete":
            name, ok, reason = self._discrete_step(action)
        else:
            name, ok, reason = self._continuous_step(action)
        self._steps += 1
        self._feedback = (
            f"Last action {name} executed successfully." if ok else f"Last action {name} is invalid. {reason}"
        )
        obs, info = self._observe(last_action_success=ok)
        terminated = bool(info["is_success"])
        truncated = not terminated and self._steps >= self.max_steps
        self._done = terminated or truncated
        info["snapshot"] = self.snapshot()
        return obs, 1.0 if terminated else 0.0, terminated, truncated, info

    def _discrete_step(self, action: object) -> tuple[str, bool, str]:
        action_id = _as_action_id(action)
        if not 0 <= action_id < len(ACTION_NAMES):
            return str(action_id), False, f"Action id must be an integer from 0 to {len(ACTION_NAMES) - 1}."
        name = ACTION_NAMES[action_id]
        if action_id < 4:
            forward, right = self._pose.level_axes()
            direction = (forward, -forward, right, -right)[action_id]
            moved, blocker = self._translate(direction * EB_NAV_MOVE_STEP, partial=False)
            return name, moved, f"The move is blocked by the {blocker}."
        if action_id < 6:
            self._pose.heading_deg = (self._pose.heading_deg + (-90.0 if action_id == 4 else 90.0)) % 360.0
            return name, True, ""
        return (name, *self._tilt(math.degrees(EB_NAV_LOOK_STEP) * (1 if action_id == 6 else -1), clip=False))

    def _continuous_step(self, action: object) -> tuple[str, bool, str]:
        a = _as_continuous(action)
        name = _describe_motion(a)
        forward, right = self._pose.level_axes()
        problems = []
        shift = a[0] * right + a[2] * forward
        if np.any(shift != 0):
            moved, blocker = self._translate(shift, partial=True)
            if not moved:
                problems.append(f"The move was cut short by the {blocker}.")
        problems += self._change_height(-float(a[1]))
        self._pose.heading_deg = (self._pose.heading_deg - math.degrees(a[4])) % 360.0
        ok, reason = self._tilt(math.degrees(a[3]), clip=True)
        problems += [] if ok else [reason]
        self._pose.roll_deg = (self._pose.roll_deg + math.degrees(a[5]) + 180.0) % 360.0 - 180.0
        return name, not problems, " ".join(problems)

    def _translate(self, shift: np.ndarray, *, partial: bool) -> tuple[bool, str | None]:
        """Move the agent by ``shift`` (world xy); blocked moves stay put, or stop at the obstacle if ``partial``."""
        assert self._world is not None
        start = self._pose.xy
        blocker = self._world.obstacles.blocker(start, start + shift)
        if blocker is None:
            self._pose.x, self._pose.y = (float(v) for v in start + shift)
            return True, None
        if partial:
            t = self._world.obstacles.free_fraction(start, start + shift)
            self._pose.x, self._pose.y = (float(v) for v in start + t * shift)
        return False, blocker

    def _tilt(self, delta_deg: float, *, clip: bool) -> tuple[bool, str]:
        lo, hi = PITCH_LIMITS
        target = self._pose.pitch_deg + delta_deg
        if lo - 1e-6 <= target <= hi + 1e-6:
            self._pose.pitch_deg = target
            return True, ""
        if clip:
            self._pose.pitch_deg = float(np.clip(target, lo, hi))
        way, limit = ("up", hi) if target > hi else ("down", lo)
        return False, f"The camera cannot tilt further {way} (limit {limit:+.0f} degrees)."

    def _change_height(self, delta: float) -> list[str]:
        assert self._world is not None
        if delta == 0:
            return []
        floor, ceiling = camera_height_limits(self._world.scene)
        target = self._pose.height + delta
        self._pose.height = float(np.clip(target, floor, ceiling))
        if target != self._pose.height:
            return [f"The camera height is limited to {floor:.1f}-{ceiling:.1f} m."]
        return []

    # ------------------------------------------------------------------------------- observation

    def evaluate(self) -> dict[str, Any]:
        """Success (horizontal distance to the target <= success_distance) and that distance."""
        assert self._episode is not None
        target = np.asarray(self._episode["target"]["position"][:2], dtype=float)
        distance = float(np.linalg.norm(self._pose.xy - target))
        return {"success": distance <= self.success_distance, "distance": distance}

    def _observe(self, *, last_action_success: bool) -> tuple[dict[str, Any], dict[str, Any]]:
        assert self._world is not None and self._renderer is not None and self._episode is not None
        self._world.place_camera(self._pose, self._fov)
        frame = self._renderer.render(
            self._world.data, self._world.camera_id, depth=self.use_depth, entity=self.use_mask
        )
        self._frame = frame
        obs: dict[str, Any] = {"rgb": frame.rgb}
        if self.use_depth:
            obs["depth"] = frame.depth
        if self.use_mask:
            obs["object_ids"] = frame.entity
        obs["instruction"], obs["feedback"] = self._episode["instruction"], self._feedback
        obs = self._channels.images(obs)
        evaluation = self.evaluate()
        self._success = bool(evaluation["success"])
        pixels = frame.target_pixels
        info = {
            "distance": evaluation["distance"],
            "visibility": pixels,
            "visible": pixels > 0,
            "feedback": self._feedback,
            "is_success": self._success,
            "last_action_success": last_action_success,
            "steps": self._steps,
            "unsupported_motion": self._unsupported,
            "snapshot": self.snapshot(),
        }
        self._unsupported = []
        return obs, info

    def render(self) -> np.ndarray | None:
        """The last first-person RGB frame (``render_mode="rgb_array"``)."""
        if self.render_mode != "rgb_array" or self._frame is None:
            return None
        return self._frame.rgb.copy()

    # --------------------------------------------------------------------------------- snapshots

    def snapshot(self) -> dict[str, Any]:
        """JSON-safe state of the episode: agent pose, step count, success, target (for logs and restore)."""
        ep = self._episode or {}
        return {
            "episode_id": ep.get("episode_id"),
            "scene_key": None if self._world is None else self._world.key,
            "agent": self._pose.to_json(),
            "steps": self._steps,
            "done": self._done,
            "success": self._success,
            "feedback": self._feedback,
            "target": copy_episode(ep["target"]) if "target" in ep else None,
        }

    def restore(self, snapshot: dict[str, Any]) -> dict[str, Any]:
        """Return to a state from :meth:`snapshot` of the current episode; returns the observation there."""
        if self._episode is None or self._world is None:
            raise RuntimeError("call reset() with the snapshot's episode before restore()")
        if snapshot.get("scene_key") != self._world.key or snapshot.get("episode_id") != self._episode.get(
            "episode_id"
        ):
            raise ValueError(
                f"snapshot of episode {snapshot.get('episode_id')!r} does not belong to the current "
                f"episode {self._episode.get('episode_id')!r}; reset to that episode first"
            )
        self._pose = AgentPose.from_json(snapshot["agent"])
        self._steps, self._done, self._feedback = (
            int(snapshot["steps"]),
            bool(snapshot["done"]),
            str(snapshot["feedback"]),
        )
        obs, _ = self._observe(last_action_success=True)
        return obs

    # ------------------------------------------------------------------------- spatial actions

    def native_actions(self, motion: StepMotion) -> list[Any]:
        """Actions of this env's space that carry out one plan step's camera motion.

        Discrete: EB ids via ``action_mapping.adapters.eb_navigation_actions`` (rounded to 0.25 m / 90 /
        30 deg); what EB cannot express (pedestal, roll, gripper) is reported in the next step's
        ``info["unsupported_motion"]``, never silently dropped. Continuous: one action per motion, or
        translation then rotation chunks when it exceeds the per-step bounds.
        """
        if self.action_mode == "discrete":
            conversion = eb_navigation_actions(motion)
            self._unsupported += conversion.unsupported
            return list(conversion.action_ids)
        if motion.gripper is not None:
            self._unsupported.append("gripper (a navigating camera has no gripper)")
        return _continuous_chunks(np.asarray(motion.translation, float), np.asarray(motion.angles, float))

    @property
    def agent_pose(self) -> AgentPose:
        """The agent's current pose (a copy)."""
        return AgentPose(**self._pose.to_json())

    @property
    def target(self) -> dict[str, Any]:
        """The current episode's target entry (id, category, colour, position), a copy."""
        if self._episode is None:
            raise RuntimeError("no episode loaded; call reset() first")
        return copy_episode(self._episode["target"])

    @property
    def target_pixels(self) -> int:
        """Pixels where the target is the nearest surface in the last observation (``info["visibility"]``)."""
        if self._frame is None:
            raise RuntimeError("no observation yet; call reset() first")
        return int(self._frame.target_pixels)

    @property
    def target_mask(self) -> np.ndarray | None:
        """Those pixels of the last observation, (H, W) bool (``None`` when the episode has no target)."""
        if self._frame is None:
            raise RuntimeError("no observation yet; call reset() first")
        return self._frame.target_mask

    @property
    def world(self) -> World:
        """The compiled scene of the current episode (for privileged policies)."""
        if self._world is None:
            raise RuntimeError("no scene loaded; call reset() first")
        return self._world

    @property
    def episode(self) -> dict[str, Any] | None:
        """The current episode dict (a copy)."""
        return None if self._episode is None else copy_episode(self._episode)

    def close(self) -> None:
        if self._renderer is not None:
            self._renderer.close()
            self._renderer = None
        self._world = None
        super().close()


# ------------------------------------------------------------------------------------------ helpers


def _check_args(
    action_mode: str,
    width: int,
    height: int,
    fov: float,
    max_steps: int,
    success_distance: float,
    subset: str,
    default_set_size: int,
    render_mode: str | None,
) -> None:
    if action_mode not in ("discrete", "continuous"):
        raise ValueError(f"action_mode must be 'discrete' or 'continuous', got {action_mode!r}")
    if not (16 <= int(width) <= 2048 and 16 <= int(height) <= 2048):
        raise ValueError(f"width and height must be 16-2048 pixels, got {width}x{height}")
    if not 10.0 <= float(fov) <= 170.0:
        raise ValueError(f"fov must be 10-170 degrees, got {fov}")
    if int(max_steps) < 1 or float(success_distance) <= 0:
        raise ValueError(
            f"max_steps must be >= 1 and success_distance > 0, got {max_steps}, {success_distance}"
        )
    if subset not in SUBSETS:
        raise ValueError(f"subset must be one of {SUBSETS}, got {subset!r}")
    if int(default_set_size) < 1:
        raise ValueError(f"default_set_size must be >= 1, got {default_set_size}")
    if render_mode not in (None, "rgb_array"):
        raise ValueError(f"render_mode must be None or 'rgb_array', got {render_mode!r}")


def _as_action_id(action: object) -> int:
    """An EB action id from an int-like value; NaN and non-integers raise with the offending value."""
    a = np.asarray(action)
    if a.shape != () or a.dtype == bool:
        raise ValueError(f"a discrete action must be one integer id, got {action!r}")
    if np.issubdtype(a.dtype, np.integer):
        return int(a)
    if np.issubdtype(a.dtype, np.floating):
        if np.isnan(a):
            raise ValueError("action is NaN; expected an integer action id from 0 to 7")
        if float(a).is_integer():
            return int(a)
    raise ValueError(f"a discrete action must be an integer id from 0 to 7, got {action!r}")


def _as_continuous(action: object) -> np.ndarray:
    a = np.asarray(action, dtype=np.float64)
    if a.shape != (6,):
        raise ValueError(
            f"a continuous action must have shape (6,) = [truck, pedestal, dolly, tilt, pan, roll], "
            f"got shape {a.shape}"
        )
    if not np.all(np.isfinite(a)):
        raise ValueError(f"action contains NaN or inf: {a.tolist()}")
    limits = CONTINUOUS_LIMITS.astype(np.float64)
    if np.any(np.abs(a) > limits + 1e-6):
        raise ValueError(
            f"action {a.tolist()} exceeds the bounds {limits.tolist()}; split large motions with "
            "env.unwrapped.native_actions(motion)"
        )
    return a


def _describe_motion(a: np.ndarray) -> str:
    parts = [
        f"{name} {a[i] if unit == 'm' else math.degrees(a[i]):+.2f} {unit}"
        for i, (name, unit) in enumerate(_UNITS)
        if abs(a[i]) > 1e-9
    ]
    return "[" + ", ".join(parts) + "]" if parts else "[stay]"


def _continuous_chunks(translation: np.ndarray, angles: np.ndarray) -> list[np.ndarray]:
    limits = CONTINUOUS_LIMITS.astype(np.float64)
    if np.all(np.abs(translation) <= limits[:3]) and np.all(np.abs(angles) <= limits[3:]):
        return [np.concatenate([translation, angles]).astype(np.float32)]
    n_t = math.ceil(float(np.max(np.abs(translation) / limits[:3])) - 1e-9)
    n_r = math.ceil(float(np.max(np.abs(angles) / limits[3:])) - 1e-9)
    chunks = [np.concatenate([translation / n_t, np.zeros(3)]) for _ in range(n_t)]
    chunks += [np.concatenate([np.zeros(3), angles / n_r]) for _ in range(n_r)]
    return [np.clip(c, -limits, limits).astype(np.float32) for c in chunks]
