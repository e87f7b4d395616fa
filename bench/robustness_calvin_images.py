"""Pictures of CALVIN's visual robustness axes for the docs: per axis, evaluation chain 0's first view clean
and at levels 1, 3 and 5 side by side, the static camera above the gripper camera
(``docs/guide/img/robustness/calvin_AXIS.png``); the paraphrase axis's levels are printed as text.

    python bench/robustness_calvin_images.py
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

OUT = Path(__file__).parents[1] / "docs" / "guide" / "img" / "robustness"
VISUAL = (
    "camera",
    "lighting",
    "textures",
    "distractors",
    "block_positions",
    "robot_joints",
    "scene",
    "image_noise",
    "image_blur",
    "image_jpeg",
)


def _column(obs: dict[str, np.ndarray], side: int = 128) -> np.ndarray:
    """Both views at ``side`` pixels (nearest-neighbour, so pixel noise stays visible)."""
    from PIL import Image

    static, gripper = (
        np.asarray(Image.fromarray(obs[k]).resize((side, side), Image.Resampling.NEAREST))
        for k in ("rgb_static", "rgb_gripper")
    )
    return np.concatenate([static, np.full((4, side, 3), 255, np.uint8), gripper], axis=0)


def main() -> None:
    import gymnasium as gym
    from PIL import Image

    import envs  # noqa: F401  (registers the ids)
    from envs.calvin import initial_env_state
    from envs.calvin.perturbations import paraphrase_instruction
    from envs.calvin.sequences import get_sequences
    from envs.perturbation import PerturbationSpec

    state, tasks = get_sequences(1000)[0]
    robot_obs, scene_obs = initial_env_state(state, "D")
    options = {"robot_obs": robot_obs, "scene_obs": scene_obs}
    env = gym.make("SpatialArena/CalvinPlayTable-v0")
    clean = _column(env.reset(seed=0, options=options)[0])
    OUT.mkdir(parents=True, exist_ok=True)
    for axis in VISUAL:
        views = [clean]
        for level in (1, 3, 5):
            spec = PerturbationSpec(axis, level, 0)
            views.append(_column(env.reset(seed=0, options={**options, "perturbation": spec})[0]))
        gap = np.full((clean.shape[0], 4, 3), 255, np.uint8)
        row = np.concatenate([x for v in views for x in (v, gap)][:-1], axis=1)
        Image.fromarray(row).save(OUT / f"calvin_{axis}.png", optimize=True)
    env.close()
    for task in tasks:
        print(task, "|", " | ".join(paraphrase_instruction(task, level) for level in (1, 3, 5)))


if __name__ == "__main__":
    main()
