"""The EB-Manipulation family of the spatial corpus (robosuite tabletop, :mod:`envs.manipulation`).

Scene ``s`` (``s`` in [2**31, 2**32)): ``rng = default_rng(s)`` draws the task family (one of
``--manip-families``, default all four) and the subset, then
the family's :meth:`~envs.manipulation.tasks.base.Task.sample_episode` draws the layout, exactly as the
env draws an episode; the env resets to it (``options={"episode": ...}``) and the front camera
(``eb_front``, EB's view) is rendered without EB's red boxes. The eight tabletop kinds of
:mod:`benchmarks.datagen.table_corpus` are asked about it (``manip_distance``, ..., ``manip_multihop``);
objects are named ``<colour> <kind>`` ("red star"), and two objects of one name are never named.

**Disjointness.** The EB-Manipulation test episodes (``make_episode(family, subset, i, seed)``, the
embodied benchmark's sets) are drawn from ``default_rng([seed, family, subset, i])`` and carry their
``seed`` below 2**31; corpus scenes carry theirs in [2**31, 2**32). ``scene_key`` hashes the layout
(family, and every object's slot, kind, colour, pattern, position and yaw);
:func:`check_manip_disjoint` checks every corpus row's seed range, that its key is its layout's hash, and
that no key equals one of the test episodes' (the default sets of every family and subset, and any
episode JSONL file given to ``corpus check``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from benchmarks.datagen.table_corpus import (
    MujocoView,
    TableObject,
    TableScene,
    family_kinds,
    unique_names,
    world_bounds,
)

if TYPE_CHECKING:
    from envs.manipulation.env import EBManipulationEnv

MANIP_CORPUS_SEEDS = (2**31, 2**32)
MANIP_STREAM = 20_261_126
MANIP_KINDS = family_kinds("manip")
CAMERA = "eb_front"


def layout_key(episode: dict[str, Any]) -> str:
    """Content hash of an episode's layout (family and objects, positions to 0.1 mm and yaws to 0.1 mrad)."""
    objects = sorted(
        (
            o["slot"],
            o["kind"],
            o["color"],
            o.get("pattern", "plain"),
            *np.round(np.r_[o["xy"], o["yaw"]], 4).tolist(),
        )
        for o in episode["objects"]
    )
    text = json.dumps(
        [episode["family"], [[v + 0.0 if isinstance(v, float) else v for v in o] for o in objects]]
    )
    return hashlib.sha1(text.encode()).hexdigest()[:16]


class ManipScenes:
    """One EB-Manipulation env per task family (made when first needed) and its front camera."""

    def __init__(self, size: int, families: tuple[str, ...] = ("pick", "stack", "place", "wipe")) -> None:
        from envs.manipulation.tasks import FAMILIES

        unknown = [f for f in families if f not in FAMILIES]
        if not families or unknown:
            raise ValueError(
                f"--manip-families: unknown {unknown or 'empty list'}; choose from {', '.join(FAMILIES)}"
            )
        self.size, self.families = size, tuple(families)
        self.envs: dict[str, EBManipulationEnv] = {}
        self.views: dict[str, MujocoView] = {}

    def _env(self, family: str) -> tuple[EBManipulationEnv, MujocoView]:
        if family not in self.envs:
            import gymnasium as gym

            import envs.manipulation  # noqa: F401  (registers the envs)
            from envs.manipulation.registration import FAMILY_IDS

            env = cast(
                "EBManipulationEnv",
                gym.make(FAMILY_IDS[family], image_size=64, annotate_boxes=False).unwrapped,
            )
            self.envs[family] = env
            self.views[family] = MujocoView(env.scene.mj_model, env.scene.mj_data, CAMERA, self.size)
        return self.envs[family], self.views[family]

    def scene(self, seed: int) -> TableScene:
        from envs.manipulation.tasks import SUBSETS

        rng = np.random.default_rng(seed)
        family = self.families[int(rng.integers(len(self.families)))]
        subset = SUBSETS[int(rng.integers(len(SUBSETS)))]
        env, view = self._env(family)
        drawn = env.task.sample_episode(rng, subset)
        episode = {"family": family, "subset": subset, "index": None, "seed": seed, **drawn}
        env.reset(options={"episode": episode})
        rgb, depth, seg = view.render()
        task, model, data = env.task, env.scene.mj_model, env.scene.mj_data
        objects = unique_names(
            [
                TableObject(
                    o["slot"],
                    f"{o['color']} {o['kind']}",
                    o["kind"],
                    list(task.visual_geoms(o["slot"])),
                    world_bounds(model, data, task.visual_geoms(o["slot"])),
                )
                for o in episode["objects"]
            ]
        )
        state = {"episode": episode, "grip_position": env.scene.grip_pose()[0].tolist(), "camera": CAMERA}
        return TableScene(
            "manip",
            seed,
            layout_key(episode),
            rgb,
            depth,
            seg,
            view.c2w(),
            view.fovy(),
            objects,
            view.render_from,
            state,
        )

    def close(self) -> None:
        for family, env in self.envs.items():
            self.views[family].close()
            env.close()

    def __enter__(self) -> ManipScenes:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def default_test_keys(seed: int = 0) -> set[str]:
    """Layout keys of the default EB-Manipulation episode sets (every family and subset, 12 each)."""
    from envs.manipulation.episodes import make_episode_set
    from envs.manipulation.tasks import SUBSETS

    return {layout_key(e) for subset in SUBSETS for e in make_episode_set(subset, seed=seed)}


def episode_file_keys(path: str) -> list[str]:
    """Layout keys of the EB-Manipulation episodes in a JSONL file (lines of other formats are skipped)."""
    from benchmarks.datagen.corpus_format import json_line
    from envs.manipulation.episodes import EPISODE_FORMAT

    keys = []
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            record = json_line(path, number, line)
            if record.get("format") == EPISODE_FORMAT:
                keys.append(layout_key(record))
    return keys


def check_manip_disjoint(corpus: Iterable[tuple[int, str, dict[str, Any]]], test_keys: set[str]) -> int:
    """Prove manip corpus scenes ``(seed, scene_key, episode)`` are no test episode: seed in
    :data:`MANIP_CORPUS_SEEDS`, key = the episode's layout hash, key not in ``test_keys``. Returns the number
    checked; raises ``ValueError`` naming the first offending scene."""
    low, high = MANIP_CORPUS_SEEDS
    n = 0
    for seed, key, episode in corpus:
        if not low <= seed < high or not low <= int(episode.get("seed") or -1) < high:
            raise ValueError(
                f"manip corpus scene seed {seed} is outside [{low}, {high}); regenerate the corpus"
            )
        if layout_key(episode) != key:
            raise ValueError(f"manip corpus scene {key} (seed {seed}): its episode hashes differently")
        if key in test_keys:
            raise ValueError(
                f"manip corpus scene {key} (seed {seed}) is also a test episode; regenerate the corpus"
            )
        n += 1
    return n
