"""Pictures of EB-Manipulation's visual robustness axes for the docs: per axis, the clean front view and
levels 1, 3 and 5 of one episode side by side (``docs/guide/img/robustness/manip_AXIS.png``; the overhead
view for ``camera`` as a second row); the paraphrase axis's levels are printed as text.

    python bench/robustness_manip_images.py
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
    "initial_position",
    "robot_joints",
    "image_noise",
    "image_blur",
    "image_jpeg",
)


def _row(views: list[np.ndarray]) -> np.ndarray:
    gap = np.full((views[0].shape[0], 4, 3), 255, np.uint8)
    return np.concatenate([x for v in views for x in (v, gap)][:-1], axis=1)


def main(size: int = 160) -> None:
    from PIL import Image

    from envs.manipulation.env import EBManipulationEnv
    from envs.manipulation.episodes import make_episode
    from envs.manipulation.perturbations import paraphrase_instruction
    from envs.perturbation import PerturbationSpec

    env = EBManipulationEnv("pick", image_size=size)
    episode = make_episode("pick", "base", 2)
    clean = env.reset(options={"episode": episode})[0]
    OUT.mkdir(parents=True, exist_ok=True)
    for axis in VISUAL:
        shots = [clean] + [
            env.reset(options={"episode": episode, "perturbation": PerturbationSpec(axis, level, 0)})[0]
            for level in (1, 3, 5)
        ]
        rows = [_row([s["front_rgb"] for s in shots])]
        if axis == "camera":
            rows.append(np.full((4, rows[0].shape[1], 3), 255, np.uint8))
            rows.append(_row([s["overhead_rgb"] for s in shots]))
        Image.fromarray(np.concatenate(rows, axis=0)).save(OUT / f"manip_{axis}.png", optimize=True)
    env.close()
    print(episode["instruction"])
    for level in (1, 3, 5):
        print(level, paraphrase_instruction(episode["instruction"], level))


if __name__ == "__main__":
    main()
