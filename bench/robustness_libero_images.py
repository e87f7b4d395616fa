"""Pictures of LIBERO's visual robustness axes for the docs: per axis, the clean agentview and wrist frames and
levels 1, 3 and 5 of one task's initial state 0 side by side (``docs/guide/img/robustness/libero_AXIS.png``:
agentview on top, wrist below); the paraphrase axis's levels are printed as text.

    python bench/robustness_libero_images.py             # every visual axis
    python bench/robustness_libero_images.py distractors # these axes only
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

OUT = Path(__file__).parents[1] / "docs" / "guide" / "img" / "robustness"
VISUAL = (
    "camera",
    "lighting",
    "textures",
    "object_position",
    "robot_init",
    "distractors",
    "image_noise",
    "image_blur",
    "image_jpeg",
)


def main(
    axes: tuple[str, ...] = VISUAL, suite: str = "libero_spatial", task: int = 0, size: int = 128
) -> None:
    from PIL import Image

    from envs.libero import make_libero_env
    from envs.libero.perturbations import paraphrase_instruction
    from envs.perturbation import PerturbationSpec

    env = make_libero_env(suite, task, image_size=size)
    options = {"init_state_index": 0}
    clean = env.reset(seed=0, options=options)[0]
    OUT.mkdir(parents=True, exist_ok=True)
    for axis in axes:
        views = [clean]
        for level in (1, 3, 5):
            spec = PerturbationSpec(axis, level, 0).to_json()
            views.append(env.reset(seed=0, options={**options, "perturbation": spec})[0])
        gap = np.full((size, 4, 3), 255, np.uint8)
        rows = [
            np.concatenate([x for v in views for x in (v[key], gap)][:-1], axis=1)
            for key in ("agentview_image", "eye_in_hand_image")
        ]
        grid = np.concatenate([rows[0], np.full((4, rows[0].shape[1], 3), 255, np.uint8), rows[1]])
        Image.fromarray(grid).save(OUT / f"libero_{axis}.png", optimize=True)
    env.close()
    print(env.task.instruction)
    for level in (1, 3, 5):
        print(level, paraphrase_instruction(env.task.instruction, level))


if __name__ == "__main__":
    import sys

    main(tuple(sys.argv[1:]) or VISUAL)
