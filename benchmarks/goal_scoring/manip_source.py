"""Goal-image manipulation pairs from the CALVIN play-table (``generate --source manip``).

One sample: a play-table scene drawn like CALVIN's evaluation scenes (``PlayTableEnv.reset(seed=...)``
with a seed from the sample's generator), the TCP moved to a random start (up to 8 cm and 0.3 rad of yaw
from CALVIN's neutral pose, gripper open or closed), the static camera's view, then 1-6 plan steps of
SpatialTree's end-effector primitives, each 1-2 primitives in the TCP frame plus the gripper state after
the step (changed with probability ``gripper_change``). Steps are executed through the env's own
``native_actions`` (the CALVIN adapter, relative control) and the arm is given ``settle`` control steps
to come to rest after each; a step whose commanded target would leave the workspace box (above the
table, within reach, gripper within 45 deg of pointing down) is drawn again. The goal image is the
static camera's view at the end; both views must show the TCP inside the image.

Ground truth comes from the TCP poses the robot really reached (``robot_obs``), not the commanded ones:
``trajectory`` holds those poses as 4x4 matrices (TCP frame, the frame ``native_actions`` moves in), the
plan is ``action_mapping.trajectory_to_plan`` of them with each step's gripper state (``robot_obs[14]``:
CALVIN's 1 open / -1 closed -> SpatialTree's 0 / 1); ``metadata.commanded_plan`` keeps what was sent and
``metadata.max_rounding`` how far the real motion was from whole counts.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np
from scipy.spatial.transform import Rotation

from action_mapping import Category, Plan, PlanStep, Primitive, StepSizes, step_motion, trajectory_to_plan
from action_mapping.se3 import axes_from_rotation, body_motion, pose
from benchmarks.goal_scoring.sources import GeneratedPair

# One count = one full CALVIN relative action: 0.02 m, 0.05 rad.
CALVIN_STEP_SIZES = StepSizes(0.02, 0.05)
INSTRUCTION = (
    "Give the end-effector motion, with the gripper state after each step, that turns the start view "
    "(image 1) into the goal view (image 2)."
)
MOTION_WEIGHTS: dict[Primitive, float] = {
    Primitive.TRUCK_LEFT: 1.0,
    Primitive.TRUCK_RIGHT: 1.0,
    Primitive.PEDESTAL_UP: 1.0,
    Primitive.PEDESTAL_DOWN: 1.0,
    Primitive.DOLLY_IN: 1.0,
    Primitive.DOLLY_OUT: 1.0,
    Primitive.PAN_LEFT: 0.4,
    Primitive.PAN_RIGHT: 0.4,
    Primitive.TILT_UP: 0.4,
    Primitive.TILT_DOWN: 0.4,
    Primitive.ROLL_CW: 0.8,
    Primitive.ROLL_CCW: 0.8,
}
# The TCP's reachable box above the table (metres, world frame) and its largest tilt from pointing down.
WORKSPACE = ((-0.3, -0.38, 0.5), (0.3, 0.05, 0.75))
MAX_TILT_FROM_DOWN = math.radians(45.0)
_STATIC_EDGE = 20  # pixels: the TCP must be at least this far inside the static image (the fingers show)
_START_ACTIONS = 6  # equal relative actions that move the TCP to its start (each within CALVIN's [-1, 1])


def tcp_pose(robot_obs: np.ndarray) -> np.ndarray:
    """The TCP pose as a 4x4 matrix (CALVIN's Euler xyz, as ``native_actions`` reads it)."""
    return pose(
        Rotation.from_euler("xyz", robot_obs[3:6]).as_matrix(), np.asarray(robot_obs[:3], dtype=float)
    )


def in_workspace(T: np.ndarray) -> bool:
    """The TCP is inside the box above the table and its z axis within 45 deg of straight down."""
    low, high = WORKSPACE
    inside = bool(np.all(T[:3, 3] >= low) and np.all(T[:3, 3] <= high))
    return inside and float(-T[2, 2]) >= math.cos(MAX_TILT_FROM_DOWN)


def static_pixel(point: np.ndarray) -> tuple[float, float]:
    """Where a world point appears in CALVIN's static camera image (u right, v down, pixels)."""
    from envs.calvin import constants as C

    eye, target, up = (np.asarray(v, dtype=float) for v in (C.STATIC_EYE, C.STATIC_TARGET, C.STATIC_UP))
    forward = (target - eye) / np.linalg.norm(target - eye)
    right = np.cross(forward, up) / np.linalg.norm(np.cross(forward, up))
    down = np.cross(forward, right)
    x, y, z = (float(axis @ (np.asarray(point, dtype=float) - eye)) for axis in (right, down, forward))
    spec = C.STATIC_CAMERA
    focal = (spec.height / 2) / math.tan(math.radians(spec.fov) / 2)
    return focal * x / z + spec.width / 2, focal * y / z + spec.height / 2


def tcp_in_view(T: np.ndarray) -> bool:
    """The TCP projects inside the static image, away from its border."""
    from envs.calvin import constants as C

    u, v = static_pixel(T[:3, 3])
    return (
        _STATIC_EDGE <= u <= C.STATIC_CAMERA.width - _STATIC_EDGE
        and _STATIC_EDGE <= v <= C.STATIC_CAMERA.height - _STATIC_EDGE
    )


def gripper_state(robot_obs: np.ndarray) -> int:
    """SpatialTree's gripper state (0 open, 1 closed) from CALVIN's last gripper action (1 open, -1 closed)."""
    return 0 if robot_obs[14] > 0 else 1


def random_step(
    rng: np.random.Generator, gripper: int, max_translation: int, max_rotation: int, gripper_change: float
) -> PlanStep:
    """1-2 primitives on distinct axes with random counts, and the gripper state after the step."""
    prims = list(MOTION_WEIGHTS)
    weights = np.array([MOTION_WEIGHTS[p] for p in prims])
    chosen: list[Primitive] = []
    for _ in range(int(rng.integers(1, 3))):
        free = np.array([(p.category, p.axis) not in {(c.category, c.axis) for c in chosen} for p in prims])
        chosen.append(prims[int(rng.choice(len(prims), p=weights * free / (weights * free).sum()))])
    counts = [
        int(rng.integers(1, (max_translation if p.category is Category.TRANSLATION else max_rotation) + 1))
        for p in chosen
    ]
    return PlanStep(chosen, counts, gripper=1 - gripper if rng.random() < gripper_change else gripper)


class PlayTableManipSource:
    """A :class:`~benchmarks.goal_scoring.sources.PairSource` of end-effector motions on the CALVIN play-table.

    Arguments: min_steps, max_steps (plan length, 1-6, drawn uniformly); max_translation_count,
    max_rotation_count (largest count of one primitive in a step; counts are CALVIN relative-action units,
    ``step_translation`` m and ``step_rotation`` rad); gripper_change (probability that a step toggles the
    gripper); settle (control steps given to the arm to come to rest after a step); renderer ("tiny", the
    CPU TinyRenderer, or "egl"); max_attempts (motions tried before a sample gives up).
    """

    kind = "manip"

    def __init__(
        self,
        min_steps: int = 1,
        max_steps: int = 6,
        max_translation_count: int = 5,
        max_rotation_count: int = 6,
        gripper_change: float = 0.35,
        settle: int = 12,
        step_translation: float = CALVIN_STEP_SIZES.translation,
        step_rotation: float = CALVIN_STEP_SIZES.rotation,
        max_step_num: int = 10,
        renderer: str = "tiny",
        max_attempts: int = 50,
    ) -> None:
        from envs.calvin.env import PlayTableEnv  # the `calvin` extra (PyBullet)

        if (
            not 1 <= min_steps <= max_steps
            or not 1 <= max_translation_count <= max_step_num
            or not 1 <= max_rotation_count <= max_step_num
            or not 0.0 <= gripper_change <= 1.0
        ):
            raise ValueError(
                "need 1 <= min_steps <= max_steps, counts within 1..max_step_num and gripper_change in [0, 1]"
            )
        self.steps_range, self.counts = (
            (int(min_steps), int(max_steps)),
            (int(max_translation_count), int(max_rotation_count)),
        )
        self.gripper_change, self.settle, self.max_attempts = (
            float(gripper_change),
            int(settle),
            int(max_attempts),
        )
        self.step_sizes, self.max_step_num = (
            StepSizes(float(step_translation), float(step_rotation)),
            int(max_step_num),
        )
        self.renderer = renderer
        self._last: dict[str, Any] = {}  # the latest observation, set by every reset and step
        self.env = PlayTableEnv(
            action_mode="relative", cameras=(), renderer=renderer, render_mode="rgb_array"
        )

    # ----------------------------------------------------------------------------------- stepping

    def _rest(self) -> dict[str, Any]:
        """Hold the target until the TCP and the fingers stop moving (at most ``settle`` control steps)."""
        obs = self._last
        for _ in range(self.settle):
            before = obs["robot_obs"]
            obs, *_ = self.env.step(self.env.noop_action())
            if np.abs(obs["robot_obs"][:7] - before[:7]).max() < 1e-4:
                break
        self._last = obs
        return obs

    def _execute(self, step: PlanStep) -> dict[str, Any]:
        for action in self.env.native_actions(step_motion(step, self.step_sizes)):
            self._last, *_ = self.env.step(action)
        return self._rest()

    def _start(self, rng: np.random.Generator) -> dict[str, Any]:
        """A seeded evaluation-style scene and a random start: TCP shifted and turned, gripper set."""
        self._last, _ = self.env.reset(seed=int(rng.integers(2**31 - 1)))
        shift = (
            np.concatenate([rng.uniform(-0.08, 0.08, 2), [rng.uniform(-0.06, 0.04)]])
            / CALVIN_STEP_SIZES.translation
        )
        yaw = rng.uniform(-0.3, 0.3) / CALVIN_STEP_SIZES.rotation
        action = np.array(
            [*(shift / _START_ACTIONS), 0.0, 0.0, yaw / _START_ACTIONS, 1.0 - 2.0 * rng.integers(2)]
        )
        for _ in range(_START_ACTIONS):
            self._last, *_ = self.env.step(action.astype(np.float32))
        return self._rest()

    # ------------------------------------------------------------------------------------- sample

    def sample(self, rng: np.random.Generator) -> GeneratedPair:
        """One pair drawn with ``rng`` only (scene, start, motion), real TCP poses as ground truth."""
        n_steps = int(rng.integers(self.steps_range[0], self.steps_range[1] + 1))
        for _ in range(self.max_attempts):
            pair = self._attempt(rng, n_steps)
            if pair is not None:
                return pair
        raise RuntimeError(
            f"no {n_steps}-step play-table motion kept the TCP in view in {self.max_attempts} attempts"
        )

    def _attempt(self, rng: np.random.Generator, n_steps: int) -> GeneratedPair | None:
        obs = self._start(rng)
        start_obs, start_image = obs, self.env.render()
        poses, commanded, grippers = [tcp_pose(obs["robot_obs"])], [], []
        for _ in range(n_steps):
            step = self._feasible_step(rng, obs, poses[-1])
            if step is None:
                return None
            obs = self._execute(step)
            commanded.append(step)
            poses.append(tcp_pose(obs["robot_obs"]))
            grippers.append(gripper_state(obs["robot_obs"]))
        trajectory = np.stack(poses)
        plan = trajectory_to_plan(
            trajectory, self.step_sizes.translation, self.step_sizes.rotation, self.max_step_num
        )
        if plan.errors or not (tcp_in_view(trajectory[0]) and tcp_in_view(trajectory[-1])):
            return None
        for step, gripper in zip(plan.steps, grippers):
            step.gripper = gripper
        plan.format, plan.step_sizes = "manipulation", self.step_sizes
        metadata = self._metadata(start_obs, obs, commanded, trajectory)
        goal_image = self.env.render()
        assert start_image is not None and goal_image is not None  # render_mode="rgb_array"
        return GeneratedPair(
            start_image,
            goal_image,
            trajectory=trajectory,
            plan=plan,
            instruction=INSTRUCTION,
            metadata=metadata,
        )

    def _feasible_step(self, rng: np.random.Generator, obs: dict[str, Any], T: np.ndarray) -> PlanStep | None:
        """A random step whose commanded end pose stays in the workspace (``None`` after 20 draws)."""
        gripper = gripper_state(obs["robot_obs"])
        for _ in range(20):
            step = random_step(rng, gripper, *self.counts, self.gripper_change)
            if in_workspace(T @ step_motion(step, self.step_sizes).as_matrix()):
                return step
        return None

    def _metadata(
        self,
        start_obs: dict[str, Any],
        end_obs: dict[str, Any],
        commanded: list[PlanStep],
        trajectory: np.ndarray,
    ) -> dict[str, Any]:
        rounding = max(float(np.abs(c - np.round(c)).max()) for c in self._counts(trajectory))
        return {
            "commanded_plan": Plan(commanded).to_json(),
            "max_rounding": round(rounding, 4),
            "start": {
                "robot_obs": [float(v) for v in start_obs["robot_obs"]],
                "scene_obs": [float(v) for v in start_obs["scene_obs"]],
            },
            "end": {
                "robot_obs": [float(v) for v in end_obs["robot_obs"]],
                "scene_obs": [float(v) for v in end_obs["scene_obs"]],
            },
            "camera": "static",
            "renderer": self.renderer,
        }

    def _counts(self, trajectory: np.ndarray) -> list[np.ndarray]:
        """Each step's real motion in (fractional) counts: translation xyz, then rotation about xyz."""
        sizes = self.step_sizes
        return [
            np.concatenate([D[:3, 3] / sizes.translation, axes_from_rotation(D[:3, :3]) / sizes.rotation])
            for D in (body_motion(a, b) for a, b in itertools.pairwise(trajectory))
        ]

    def describe(self) -> dict[str, Any]:
        """JSON-safe identity and settings (recorded in ``dataset.json``)."""
        return {
            "class": f"{type(self).__module__}.{type(self).__name__}",
            "env": "envs.calvin.env.PlayTableEnv (relative)",
            "steps": list(self.steps_range),
            "max_counts": {"translation": self.counts[0], "rotation": self.counts[1]},
            "gripper_change": self.gripper_change,
            "settle": self.settle,
            "renderer": self.renderer,
            "workspace": [list(WORKSPACE[0]), list(WORKSPACE[1])],
            "max_tilt_from_down_deg": 45.0,
            "weights": {p.value: w for p, w in MOTION_WEIGHTS.items()},
        }

    def close(self) -> None:
        """Disconnect the simulator (``generate`` calls it when done)."""
        self.env.close()
