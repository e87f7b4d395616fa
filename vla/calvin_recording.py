"""Recording the CALVIN scripted expert step by step, shared by per-task demonstrations (:mod:`vla.demos`)
and play data (:mod:`vla.calvin_play`).

A frame is the observation before a step (images, depth when the env renders it, ``robot_obs``,
``scene_obs``), the relative action actually sent (``rel_actions``, arm clipped to [-1, 1], gripper exactly
-1 or 1, as CALVIN's dataset stores it) and the absolute TCP target it set (``actions``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

import numpy as np

if TYPE_CHECKING:
    import gymnasium as gym

    from policies.experts.calvin import ScriptedExpert

CAMERA_KEYS = {"static": "rgb_static", "gripper": "rgb_gripper"}
DEPTH_KEYS = ("depth_static", "depth_gripper")
LANG_ENCODER_HELP = (
    "local sentence-transformers checkpoint folder (mean pooling; e.g. CALVIN's paraphrase-MiniLM-L3-v2) to "
    "embed the annotations with: language.emb in auto_lang_ann.npy and, for --split validation, "
    "lang_annotations/embeddings.npy, as CALVIN's loaders read them (default: none; add them later with "
    "python -m vla.data.calvin_embed)"
)


def perturbed_robot_obs(robot_obs: np.ndarray, rng: np.random.Generator, joint_noise: float) -> np.ndarray:
    """``robot_obs`` with Gaussian noise on the 7 joints (clipped to the limits).

    The env places the joints and derives the TCP from them, so the TCP fields are left as they were."""
    from envs.calvin import constants as C

    out = np.array(robot_obs, dtype=np.float64)
    noisy = out[7:14] + rng.normal(0.0, joint_noise, 7)
    out[7:14] = np.clip(noisy, C.JOINT_LOWER, C.JOINT_UPPER)
    return out


def sent_action(action: np.ndarray) -> np.ndarray:
    """The relative action as sent and stored: arm clipped to [-1, 1], gripper exactly -1 or 1."""
    a = np.clip(np.asarray(action, dtype=np.float64).reshape(7), -1.0, 1.0)
    a[6] = 1.0 if a[6] > 0 else -1.0
    return a


def _frame(obs: dict[str, np.ndarray], action: np.ndarray, env: gym.Env) -> dict[str, np.ndarray]:
    from envs.calvin import constants as C
    from envs.calvin.env import PlayTableInterface

    pos, orn = cast(PlayTableInterface, env.unwrapped).target_pose()  # the target this relative action moves
    absolute = np.array(
        [*(pos + action[:3] * C.MAX_REL_POSITION), *(orn + action[3:6] * C.MAX_REL_ORIENTATION), action[6]]
    )
    frame = {k: obs[k] for k in (*CAMERA_KEYS.values(), *DEPTH_KEYS) if k in obs}  # depth: play data
    return {
        **frame,
        "rel_actions": action,
        "actions": absolute,
        "robot_obs": obs["robot_obs"].copy(),
        "scene_obs": obs["scene_obs"].copy(),
    }


@dataclass
class Episode:
    """One recorded attempt: its frames and how it went."""

    frames: list[dict[str, np.ndarray]]
    success_step: int | None  # index of the step after which the oracle reported success
    last_obs: dict[str, np.ndarray] | None = None
    prefix_ok: bool = True

    @property
    def success(self) -> bool:
        return self.prefix_ok and self.success_step is not None


def record_motion(
    env: gym.Env, next_action: Callable[[], np.ndarray | None], obs: dict[str, np.ndarray], max_steps: int
) -> Episode:
    """Record the actions ``next_action`` gives, no task (until it gives ``None`` or ``max_steps`` pass)."""
    frames = []
    for _ in range(max_steps):
        raw = next_action()
        if raw is None:
            break
        action = sent_action(raw)
        frames.append(_frame(obs, action, env))
        obs, *_ = env.step(action.astype(np.float32))
    return Episode(frames, None, obs)


def record_task(
    env: gym.Env,
    expert: ScriptedExpert,
    task: str,
    instruction: str,
    obs: dict[str, np.ndarray],
    ep_len: int,
    tail_steps: int,
) -> Episode:
    """Run the expert on ``task`` from the current state (subtask begun here) and record every step."""
    from envs.calvin.env import PlayTableInterface
    from policies.base import EpisodeContext

    cast(PlayTableInterface, env.unwrapped).begin_subtask(task)
    expert.reset(EpisodeContext(instruction=instruction, seed=0, extras={"task": task}))
    frames, success_step = [], None
    for step in range(ep_len + tail_steps):
        if success_step is None and step >= ep_len:
            break
        if success_step is not None and step > success_step + tail_steps:
            break
        action = sent_action(expert.act(obs))
        frames.append(_frame(obs, action, env))
        obs, _, _, _, info = env.step(action.astype(np.float32))
        if success_step is None and info["is_success"]:
            success_step = step
    return Episode(frames, success_step, obs)
