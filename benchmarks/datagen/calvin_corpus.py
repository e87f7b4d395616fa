"""The CALVIN play-table family of the spatial corpus (:mod:`benchmarks.datagen.corpus`).

Seven kinds, each answered exactly from the env's snapshot (``info["snapshot"]``: the blocks' poses as
PyBullet holds them, the TCP in ``robot_obs``) and the static camera's own view and projection matrices
(:meth:`envs.calvin.camera.Cameras.project`); the image is the 200 x 200 ``rgb_static`` view:

- ``calvin_distance``: distance between the centres of two blocks, metres (open-ended, ``0.23``);
- ``calvin_depth``: depth of a visible block's centre from the static camera along its axis, metres;
- ``calvin_nearest_gripper``: which of the three blocks is nearest the gripper (TCP), lettered options,
  asked only when the nearest is at least 3 cm nearer than the next;
- ``calvin_left_right``: whether one visible block is left or right of another in the static image, from
  the projected centres (at least 10 px apart);
- ``calvin_counting``: how many blocks lie on the table, or in the cabinet's sliding compartments
  (``y > 0`` in the world frame: the compartments are at y = 0.09, the table spots at y = -0.12);
- ``calvin_localisation``: the box of a visible block in the static image, ``[x1, y1, x2, y2]`` on 0-1000,
  the bounds of its eight projected cuboid corners (so the whole block, clipped to the image);
- ``calvin_multihop``: MultihopSpatial-style, two hops: the visible blocks lying on the table (``y < 0``,
  not in the cabinet), then the one of them nearest to / farthest from the gripper (>= 3 cm apart); the
  three blocks as lettered options, answered in the recipe's format (``Answer: (b) red block`` and the
  block's box), so GRPO's format, letter and box rewards all score it.

A block is *visible* when the rendered metric depth at its projected centre lies within 6 cm in front of
(and 5 mm behind) the centre's own depth: a block behind the cabinet's sliding door is not asked about.

**Scenes and disjointness.** Scene ``s`` is ``reset(seed=s, options={robot_obs, scene_obs})`` with ``s`` in
:data:`CALVIN_CORPUS_SEEDS` = [2**31, 2**32), the symbolic state and block yaws drawn as the env draws them
(:func:`envs.calvin.scene.random_scene_state`) from ``s``, every block on a table spot moved off it by 1-4 cm
in x and in y, and the arm's joints perturbed (0.2 rad) so the gripper is not always in the same place. The
project's CALVIN test sets never use such a scene: the 1000 evaluation chains start from the 192 fixed
states of :func:`envs.calvin.sequences.initial_env_state`, and the goal-scoring ``manip`` source resets with
``seed < 2**31 - 1``; in both every block starts exactly on one of the four evaluation spots, while every
corpus scene has at least one block on the table (three blocks, two compartment spots) at least 1 cm off
every spot. :func:`check_calvin_disjoint` checks both facts on the rows, and that no corpus ``scene_key``
(a hash of ``scene_obs``) equals one of the 192 evaluation scenes'.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from benchmarks.datagen.corpus_format import BOX_FORMAT, box_answer, lettered_choice, localisation_text
from benchmarks.datagen.nav_questions import LETTERS, Question, _multi_choice, _options

if TYPE_CHECKING:
    from envs.calvin.env import PlayTableEnv

#: Seeds of corpus play-table scenes; the goal-scoring manip source resets with seeds below 2**31 - 1.
CALVIN_CORPUS_SEEDS = (2**31, 2**32)
#: First entry of every CALVIN corpus item's seed sequence (the nav family's is CORPUS_STREAM).
CALVIN_STREAM = 20_261_125
#: Scenes tried per item before the item is given up (counted as failed by the corpus).
CALVIN_SCENES_PER_ITEM = 20  # the multi-hop kind grounds in about one scene of four
JOINT_NOISE = 0.2  # rad: moves the gripper around the table between scenes
TABLE_OFFSET = (0.01, 0.04)  # m: |offset| of each table block from its evaluation spot, in x and in y
_VISIBLE_FRONT, _VISIBLE_BEHIND = 0.06, 0.005


@dataclass
class Scene:
    """One corpus play-table scene: the static image, its metric depth, the snapshot and the camera."""

    seed: int
    rgb: np.ndarray
    depth: np.ndarray
    snapshot: dict[str, Any]
    cameras: Any  # envs.calvin.camera.Cameras, for its projection

    def centre(self, color: str) -> np.ndarray:
        return np.asarray(self.snapshot["blocks"][color]["pos"], dtype=np.float64)

    def pixel_depth(self, color: str) -> tuple[np.ndarray, float]:
        """Projected centre (column, row) and its depth along the static camera's axis."""
        pixels, depth = self.cameras.project("static", self.centre(color)[None])
        return pixels[0], float(depth[0])

    def visible(self, color: str) -> bool:
        (u, v), depth = self.pixel_depth(color)
        height, width = self.depth.shape
        if not (0 <= u < width and 0 <= v < height):
            return False
        rendered = float(self.depth[int(v), int(u)])
        return depth - _VISIBLE_FRONT <= rendered <= depth + _VISIBLE_BEHIND

    def in_cabinet(self, color: str) -> bool:
        return bool(self.centre(color)[1] > 0.0)

    def box_1000(self, color: str) -> list[int]:
        """Bounds of the block's eight projected corners, clipped to the image, on 0-1000."""
        from scipy.spatial.transform import Rotation

        from envs.calvin import constants as C

        block = self.snapshot["blocks"][color]
        half = np.asarray(C.BLOCKS[color].size) / 2
        signs = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], dtype=np.float64)
        corners = self.centre(color) + Rotation.from_quat(block["orn_xyzw"]).apply(signs * half)
        pixels, _ = self.cameras.project("static", corners)
        height, width = self.depth.shape
        lo = np.clip(pixels.min(axis=0), 0, [width, height])
        hi = np.clip(pixels.max(axis=0), 0, [width, height])
        return [
            int(np.floor(lo[0] * 1000 / width)),
            int(np.floor(lo[1] * 1000 / height)),
            int(np.ceil(hi[0] * 1000 / width)),
            int(np.ceil(hi[1] * 1000 / height)),
        ]


CalvinBuilder = Callable[[Scene, np.random.Generator], "Question | None"]


def _blocks() -> tuple[str, ...]:
    from envs.calvin import constants as C

    return C.BLOCK_COLORS


def _two(rng: np.random.Generator, colors: list[str]) -> tuple[str, str] | None:
    if len(colors) < 2:
        return None
    a, b = rng.choice(len(colors), size=2, replace=False)
    return colors[int(a)], colors[int(b)]


def _question(
    kind: str,
    qtype: str,
    category: str,
    sub: str,
    text: str,
    answer: str,
    scene: Scene,
    truth: dict[str, Any],
) -> Question:
    return Question(kind, qtype, category, sub, text, answer, [scene.rgb], truth, [])


def calvin_distance(scene: Scene, rng: np.random.Generator) -> Question | None:
    """Distance between two blocks' centres, metres."""
    pair = _two(rng, list(_blocks()))
    assert pair is not None
    a, b = pair
    distance = float(np.linalg.norm(scene.centre(a) - scene.centre(b)))
    text = f"What is the distance between the centres of the {a} block and the {b} block (in meters)?"
    return _question(
        "calvin_distance",
        "open-ended",
        "Depth and Distance",
        "Object Distance",
        text,
        f"{distance:.2f}",
        scene,
        {"blocks": [a, b], "distance_m": distance},
    )


def calvin_depth(scene: Scene, rng: np.random.Generator) -> Question | None:
    """Depth of a visible block's centre from the camera, metres."""
    visible = [c for c in _blocks() if scene.visible(c)]
    if not visible:
        return None
    color = visible[int(rng.integers(len(visible)))]
    _, depth = scene.pixel_depth(color)
    text = (
        f"How far is the centre of the {color} block from the camera, measured along the camera's viewing "
        "direction (in meters)?"
    )
    return _question(
        "calvin_depth",
        "open-ended",
        "Depth and Distance",
        "Absolute Depth",
        text,
        f"{depth:.2f}",
        scene,
        {"block": color, "depth_m": depth},
    )


def calvin_nearest_gripper(scene: Scene, rng: np.random.Generator) -> Question | None:
    """Which block is nearest the gripper (its TCP), when clearly so."""
    tcp = np.asarray(scene.snapshot["robot_obs"][:3], dtype=np.float64)
    distances = {c: float(np.linalg.norm(scene.centre(c) - tcp)) for c in _blocks()}
    ranked = sorted(distances, key=distances.__getitem__)
    if distances[ranked[1]] - distances[ranked[0]] < 0.03:
        return None
    options, answer = _multi_choice(rng, f"the {ranked[0]} block", [f"the {c} block" for c in ranked[1:]])
    text = f"Which block is nearest to the robot's gripper?\n{options}"
    return _question(
        "calvin_nearest_gripper",
        "multi-choice",
        "Depth and Distance",
        "Object Distance",
        text,
        answer,
        scene,
        {"tcp": tcp.tolist(), "distances_m": distances, "nearest": ranked[0]},
    )


def calvin_left_right(scene: Scene, rng: np.random.Generator) -> Question | None:
    """Is one visible block left or right of another in the image (projected centres >= 10 px apart)."""
    pair = _two(rng, [c for c in _blocks() if scene.visible(c)])
    if pair is None:
        return None
    a, b = pair
    (ua, _), _ = scene.pixel_depth(a)
    (ub, _), _ = scene.pixel_depth(b)
    if abs(ua - ub) < 10.0:
        return None
    side = "left" if ua < ub else "right"
    text = f"In the image, is the {a} block to the left or to the right of the {b} block?\n{_options(['left', 'right'])}"
    answer = f"({LETTERS[0 if side == 'left' else 1]})"
    return _question(
        "calvin_left_right",
        "multi-choice",
        "3D Positional Relation",
        "Relative Direction",
        text,
        answer,
        scene,
        {"blocks": [a, b], "columns_px": [float(ua), float(ub)], "side": side},
    )


def calvin_counting(scene: Scene, rng: np.random.Generator) -> Question | None:
    """How many blocks are on the table, or in the cabinet."""
    where = "in the cabinet" if rng.integers(2) else "on the table"
    inside = [c for c in _blocks() if scene.in_cabinet(c) == (where == "in the cabinet")]
    n = len(inside)
    options, answer = _multi_choice(rng, str(n), [str(k) for k in range(4) if k != n])
    text = f"How many blocks are {where}? Select from the following choices.\n{options}"
    return _question(
        "calvin_counting",
        "multi-choice",
        "Counting",
        "Object Counting",
        text,
        answer,
        scene,
        {"where": where, "count": n, "blocks": inside},
    )


def calvin_localisation(scene: Scene, rng: np.random.Generator) -> Question | None:
    """The box of a visible block in the static image, on 0-1000."""
    visible = [c for c in _blocks() if scene.visible(c)]
    if not visible:
        return None
    color = visible[int(rng.integers(len(visible)))]
    box = scene.box_1000(color)
    text = localisation_text(f"the {color} block")
    return _question(
        "calvin_localisation",
        "box",
        "Object Localization",
        "Object Localization",
        text,
        box_answer(box),
        scene,
        {"block": color, "bbox_1000": box},
    )


def calvin_multihop(scene: Scene, rng: np.random.Generator) -> Question | None:
    """Of the visible blocks lying on the table (not in the cabinet), the one nearest to / farthest from the
    gripper (>= 3 cm apart), with its box; all three blocks are the options."""
    on_table = [c for c in _blocks() if not scene.in_cabinet(c) and scene.visible(c)]
    if len(on_table) < 2:
        return None
    extreme = str(rng.choice(["nearest to", "farthest from"]))
    tcp = np.asarray(scene.snapshot["robot_obs"][:3], dtype=np.float64)
    distances = {c: float(np.linalg.norm(scene.centre(c) - tcp)) for c in on_table}
    ranked = sorted(on_table, key=distances.__getitem__, reverse=extreme == "farthest from")
    if abs(distances[ranked[0]] - distances[ranked[1]]) < 0.03:
        return None
    best = ranked[0]
    choices, answer = lettered_choice(rng, f"{best} block", [f"{c} block" for c in _blocks() if c != best])
    text = (
        f"Among the blocks lying on the table (not inside the cabinet), which one is {extreme} the robot's "
        f"gripper? <choice>{choices}</choice>{BOX_FORMAT}"
    )
    box = scene.box_1000(best)
    truth = {
        "extreme": extreme,
        "candidates": on_table,
        "tcp": tcp.tolist(),
        "distances_m": distances,
        "answer_block": best,
        "bbox_1000": box,
        "hops": 2,
    }
    return _question(
        "calvin_multihop",
        "multi-choice",
        "Multi-hop Spatial Reasoning",
        f"on table + {extreme.split()[0]}",
        text,
        answer,
        scene,
        truth,
    )


CALVIN_BUILDERS: dict[str, CalvinBuilder] = {
    "calvin_distance": calvin_distance,
    "calvin_depth": calvin_depth,
    "calvin_nearest_gripper": calvin_nearest_gripper,
    "calvin_left_right": calvin_left_right,
    "calvin_counting": calvin_counting,
    "calvin_localisation": calvin_localisation,
    "calvin_multihop": calvin_multihop,
}
CALVIN_KINDS: tuple[str, ...] = tuple(CALVIN_BUILDERS)


# ------------------------------------------------------------------------------------------ scenes


def scene_key(scene_obs: Iterable[float]) -> str:
    """Content hash of a play-table scene: ``scene_obs`` rounded to 0.1 mm / 0.1 mrad."""
    rounded = np.round(np.asarray(list(scene_obs), dtype=np.float64), 4) + 0.0  # + 0.0: no negative zeros
    return hashlib.sha1(rounded.tobytes()).hexdigest()[:16]


def scene_start(seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``(robot_obs, scene_obs)`` of corpus scene ``seed`` (see the module docstring)."""
    from envs.calvin import constants as C
    from envs.calvin.scene import random_scene_state, scene_obs_for_state

    rng = np.random.default_rng(seed)
    scene_obs = scene_obs_for_state(random_scene_state(rng), rng)
    for color in C.BLOCK_COLORS:
        s = C.block_slice(color)
        if scene_obs[s.start + 1] < 0.0:  # on a table spot: move it off, 1-4 cm in x and in y
            offset = rng.uniform(*TABLE_OFFSET, size=2) * rng.choice([-1.0, 1.0], size=2)
            scene_obs[s.start : s.start + 2] += offset
    robot_obs = np.array(C.NEUTRAL_ROBOT_OBS, dtype=np.float64)
    robot_obs[7:14] = np.clip(robot_obs[7:14] + rng.normal(0.0, JOINT_NOISE, 7), C.JOINT_LOWER, C.JOINT_UPPER)
    return robot_obs, scene_obs


class CalvinScenes:
    """The play-table env (static camera with depth, TinyRenderer) that renders corpus scenes."""

    def __init__(self, renderer: str = "tiny") -> None:
        import gymnasium as gym

        import envs.calvin  # noqa: F401  (registers the env)

        self.env = gym.make(
            "SpatialArena/CalvinPlayTable-v0", cameras=["static"], depth=True, renderer=renderer
        )

    def scene(self, seed: int) -> Scene:
        robot_obs, scene_obs = scene_start(seed)
        obs, info = self.env.reset(seed=seed, options={"robot_obs": robot_obs, "scene_obs": scene_obs})
        return Scene(
            seed,
            obs["rgb_static"],
            obs["depth_static"],
            info["snapshot"],
            cast("PlayTableEnv", self.env.unwrapped).sim.cameras,
        )

    def close(self) -> None:
        self.env.close()

    def __enter__(self) -> CalvinScenes:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def draw_calvin_question(
    kind: str, rng: np.random.Generator, scenes: CalvinScenes
) -> tuple[Question, Scene] | None:
    """A question of ``kind`` from the first of up to :data:`CALVIN_SCENES_PER_ITEM` scenes that grounds one."""
    low, high = CALVIN_CORPUS_SEEDS
    for _ in range(CALVIN_SCENES_PER_ITEM):
        scene = scenes.scene(int(rng.integers(low, high)))
        question = CALVIN_BUILDERS[kind](scene, rng)
        if question is not None:
            return question, scene
    return None


# --------------------------------------------------------------------------------------- checking


def evaluation_scene_keys() -> set[str]:
    """Scene keys of the 192 initial states the CALVIN evaluation chains start from."""
    from envs.calvin.sequences import initial_env_state, symbolic_initial_states

    return {scene_key(initial_env_state(state)[1]) for state in symbolic_initial_states()}


def off_spot(scene_obs: Iterable[float]) -> bool:
    """Whether some block lies at least 1 cm (in x or y) off every one of the four evaluation spots."""
    from envs.calvin import constants as C

    obs = np.asarray(list(scene_obs), dtype=np.float64)
    spots = np.array([*C.BLOCK_SPOTS_TABLE, C.BLOCK_SPOT_SLIDER_LEFT, C.BLOCK_SPOT_SLIDER_RIGHT])[:, :2]
    for color in C.BLOCK_COLORS:
        s = C.block_slice(color)
        if np.all(np.abs(spots - obs[s.start : s.start + 2]).max(axis=1) >= TABLE_OFFSET[0] - 1e-9):
            return True
    return False


def check_calvin_disjoint(
    corpus_scenes: Iterable[tuple[int, str, list[float]]], test_keys: set[str] | None = None
) -> int:
    """Prove CALVIN corpus scenes ``(seed, scene_key, scene_obs)`` are no test scene: seed in
    :data:`CALVIN_CORPUS_SEEDS`, key = hash of its scene_obs, a block off every evaluation spot, key not among
    ``test_keys`` (default: the 192 evaluation scenes). Returns the number checked; raises ``ValueError``."""
    keys = evaluation_scene_keys() if test_keys is None else test_keys
    low, high = CALVIN_CORPUS_SEEDS
    n = 0
    for seed, key, scene_obs in corpus_scenes:
        if not low <= seed < high:
            raise ValueError(
                f"CALVIN corpus scene seed {seed} is outside [{low}, {high}); regenerate the corpus"
            )
        if scene_key(scene_obs) != key:
            raise ValueError(f"CALVIN corpus scene {key} (seed {seed}): its scene_obs hashes differently")
        if not off_spot(scene_obs):
            raise ValueError(f"CALVIN corpus scene {key} (seed {seed}) has every block on an evaluation spot")
        if key in keys:
            raise ValueError(
                f"CALVIN corpus scene {key} (seed {seed}) is also a test scene; regenerate the corpus"
            )
        n += 1
    return n
