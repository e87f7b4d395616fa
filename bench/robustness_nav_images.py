"""Pictures of EB-Navigation's visual robustness axes for the docs: per axis, the clean first view and levels
1, 3 and 5 of one episode side by side (``docs/guide/img/robustness/nav_AXIS.png``); the paraphrase
axis's levels are printed as text.

    python bench/robustness_nav_images.py
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
    "image_noise",
    "image_blur",
    "image_jpeg",
)


def main(size: int = 160) -> None:
    import gymnasium as gym
    from PIL import Image

    import envs  # noqa: F401  (registers the ids)
    from envs.navigation.episodes import make_episode
    from envs.navigation.perturbations import paraphrase_instruction
    from envs.perturbation import PerturbationSpec

    env = gym.make("SpatialArena/EBNavigation-v0", width=size, height=size)
    episode = make_episode("base", 4)
    clean = env.reset(options={"episode": episode})[0]["rgb"]
    OUT.mkdir(parents=True, exist_ok=True)
    for axis in VISUAL:
        views = [clean]
        for level in (1, 3, 5):
            views.append(
                env.reset(options={"episode": episode, "perturbation": PerturbationSpec(axis, level, 0)})[0][
                    "rgb"
                ]
            )
        gap = np.full((size, 4, 3), 255, np.uint8)
        row = np.concatenate([x for v in views for x in (v, gap)][:-1], axis=1)
        Image.fromarray(row).save(OUT / f"nav_{axis}.png", optimize=True)
    env.close()
    print(episode["instruction"])
    for level in (1, 3, 5):
        print(level, paraphrase_instruction(episode["instruction"], level))


if __name__ == "__main__":
    main()
