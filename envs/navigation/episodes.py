"""Episode sets for the five EmbodiedBench navigation subsets: generated, validated, saved as JSONL.

An episode is a JSON-safe dict: the full scene dict, the agent's start pose, the target object, the
instruction, the step budget, and the shortest action sequence that solves it. Every episode is checked
solvable: a shortest path on the occupancy lattice with EB's discrete actions reaches the success
distance within the step budget.

Episodes come in groups of :data:`EPISODES_PER_SCENE` that share a scene (so an environment can reuse
the compiled model), and group g of a set depends only on ``(seed, subset, g)``: any single episode
can be regenerated without the rest (:func:`make_episode`).

Start states by subset:
- base, common_sense, complex_instruction, visual_appearance: the target is in view at the start
  (at least half of its parts are inside the field of view with a clear line of sight, and it spans at
  least about 3 degrees) and 3-20 actions away;
- long_horizon: the target is outside the field of view at the start (by angle, so at any image size)
  and 8-20 actions away, preferably in another room.
Every start pose has at least four free moves (1 m) straight ahead (no start staring into a wall).

**No blind success** (every subset): a start is kept only if no single action repeated for the whole
step budget reaches the target (``_SceneEpisodes.blind_reaches``, on the lattice the expert plans on,
with a blocked move staying put as in the env). Turning and looking never move the agent, so this asks
that walking straight ahead, back, left or right from the start neither passes within the success
distance of the target nor is stopped there by a wall: every episode needs at least two kinds of action,
and which turn or side-step comes first is what the image tells. In EmbodiedBench the target is placed
so that seeing matters; without this rule "always move ahead" solved 32 % of the default sets (55 % of
visual_appearance; issue 16) where random solved 2 %. With it every constant action scores 0 % on the
default sets (5 x 60 episodes) and random 0.3 %, while the expert keeps 100 % (docs/guide/embodied-navigation.md).
"""

from __future__ import annotations

import copy
import functools
import json
import math
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

from envs.episode_files import load_episodes_jsonl, save_episodes_jsonl
from envs.navigation.catalog import CATEGORIES
from envs.navigation.instructions import SUBSETS, WRITERS, long_horizon_instruction
from envs.navigation.planner import UNREACHABLE, Lattice
from envs.navigation.scene import generate_scene, room_of, validate_scene
from envs.navigation.world import AgentPose, World

EPISODE_FORMAT = "spatialarena.navigation.episode/1"
EPISODES_PER_SCENE = 3
MAX_STEPS = 20
SUCCESS_DISTANCE = 1.0
GENERATION_FOV = 100.0  # EB's field of view; "in view" / "out of view" are decided at this fov
_STEP_RANGE = {"long_horizon": (8, MAX_STEPS)}
_DEFAULT_STEP_RANGE = (3, MAX_STEPS)
MIN_APPARENT_SIZE = (
    0.055  # visible starts: object extent / distance (about 3 degrees, 5 px at 224 px, fov 100)
)
OPEN_AHEAD = 4  # free moves straight ahead of every start pose


class EpisodeError(ValueError):
    """An episode dict is malformed; the message names the field and what is expected."""


# --------------------------------------------------------------------------------------- validation


def validate_episode(episode: object) -> None:
    """Raise :class:`EpisodeError` (or ``SceneError``) naming the first malformed field."""
    if not isinstance(episode, dict):
        raise EpisodeError(f"an episode must be a dict, got {type(episode).__name__}")
    if episode.get("format") != EPISODE_FORMAT:
        raise EpisodeError(f"episode['format'] must be {EPISODE_FORMAT!r}, got {episode.get('format')!r}")
    for key in ("scene", "agent", "target", "instruction", "subset"):
        if key not in episode:
            raise EpisodeError(f"episode {episode.get('episode_id')!r} lacks the key {key!r}")
    if episode["subset"] not in SUBSETS:
        raise EpisodeError(f"episode['subset'] must be one of {SUBSETS}, got {episode['subset']!r}")
    validate_scene(episode["scene"])
    ids = {o["id"] for o in episode["scene"]["objects"]}
    if episode["target"].get("id") not in ids:
        raise EpisodeError(
            f"episode['target']['id'] = {episode['target'].get('id')!r} is not an object of the "
            f"scene; objects: {sorted(ids)}"
        )
    AgentPose.from_json(episode["agent"])
    if not isinstance(episode["instruction"], str) or not episode["instruction"].isascii():
        raise EpisodeError("episode['instruction'] must be an ASCII string")


# ---------------------------------------------------------------------------------------- generation


def _target_entry(obj: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": obj["id"],
        "category": obj["category"],
        "colour": obj["colour"],
        "position": list(obj["pos"]),
    }


def _bearing(pose_xy: np.ndarray, heading_deg: float, target_xy: np.ndarray) -> float:
    """Absolute horizontal angle (degrees) between the heading and the direction to the target."""
    v = target_xy - pose_xy
    diff = math.degrees(math.atan2(v[1], v[0])) - heading_deg
    return abs((diff + 180.0) % 360.0 - 180.0)


def _out_of_view(pose_xy: np.ndarray, heading: float, obj: dict[str, Any]) -> bool:
    """The whole object lies outside the horizontal field of view (with 12 deg to spare)."""
    target_xy = np.asarray(obj["pos"][:2])
    dist = float(np.linalg.norm(target_xy - pose_xy))
    cat = CATEGORIES[obj["category"]]
    radius = 1.3 * max(cat.footprint * math.sqrt(2), cat.height) * obj["scale"]
    spread = math.degrees(math.asin(min(1.0, radius / max(dist, 1e-6))))
    return _bearing(pose_xy, heading, target_xy) > GENERATION_FOV / 2 + 12.0 + spread


class _SceneEpisodes:
    """Draws validated episodes for one scene."""

    def __init__(self, scene: dict[str, Any], rng: np.random.Generator) -> None:
        self.scene, self.rng = scene, rng
        self.world = World(scene)
        self.lattice = Lattice.for_scene(scene, self.world.obstacles)
        free = np.flatnonzero(self.lattice.free)
        components = []
        remaining = set(free.tolist())
        while remaining:
            comp = self.lattice.component(min(remaining))
            components.append(comp)
            remaining -= set(comp)
        self.reachable = np.array(max(components, key=len)) if components else np.zeros(0, int)

    def draw(self, subset: str, exclude: set[str]) -> dict[str, Any] | None:
        objects = [o for o in self.scene["objects"] if o["id"] not in exclude]
        for k in self.rng.permutation(len(objects)):
            episode = self._for_target(subset, objects[int(k)])
            if episode is not None:
                return episode
        return None

    def _for_target(self, subset: str, target: dict[str, Any]) -> dict[str, Any] | None:
        dist = self.lattice.steps_to_goal(target["pos"][:2], SUCCESS_DISTANCE)
        lo, hi = _STEP_RANGE.get(subset, _DEFAULT_STEP_RANGE)
        sub = dist[self.reachable]
        rows, heads = np.nonzero((sub >= lo) & (sub <= hi))
        states = [(int(self.reachable[r]), int(k)) for r, k in zip(rows, heads)]
        if not states:
            return None
        blind = self.blind_reaches(dist, np.array([n for n, _ in states]), np.array([k for _, k in states]))
        states = [s for s, reached in zip(states, blind) if not reached]
        start = self._pick_start(subset, target, states)
        if start is None:
            return None
        node, k = start
        x, y = self.lattice.points[node]
        pose = AgentPose(x, y, heading_deg=90.0 * k)
        instruction = self._instruction(subset, target, pose)
        if instruction is None:
            return None
        return {
            "agent": pose.to_json(),
            "target": _target_entry(target),
            "instruction": instruction,
            "shortest_path": self.lattice.plan(dist, node, k),
        }

    def _instruction(self, subset: str, target: dict[str, Any], pose: AgentPose) -> str | None:
        if subset == "long_horizon":
            return long_horizon_instruction(self.scene, target, self.rng, start_xy=pose.xy)
        return WRITERS[subset](self.scene, target, self.rng)

    def _pick_start(
        self, subset: str, target: dict[str, Any], states: list[tuple[int, int]]
    ) -> tuple[int, int] | None:
        pts = self.lattice.points
        states = [s for s in states if self._open_ahead(*s)]
        if subset == "long_horizon":
            hidden = [s for s in states if _out_of_view(pts[s[0]], 90.0 * s[1], target)]
            elsewhere = [s for s in hidden if room_of(self.scene, pts[s[0]]) != target["room"]]
            pool = elsewhere if elsewhere and self.rng.random() < 0.75 else hidden
            return pool[int(self.rng.integers(len(pool)))] if pool else None
        xy = np.asarray(target["pos"][:2])
        near = _extent(target) / MIN_APPARENT_SIZE
        facing = [
            s
            for s in states
            if _bearing(pts[s[0]], 90.0 * s[1], xy) < 45.0 and np.linalg.norm(pts[s[0]] - xy) <= near
        ]
        for i in self.rng.permutation(len(facing))[:40]:
            node, k = facing[int(i)]
            x, y = pts[node]
            seen, parts = self.world.sighted_parts(
                AgentPose(x, y, heading_deg=90.0 * k), GENERATION_FOV, target["id"]
            )
            if seen >= max(1, math.ceil(parts / 2)):
                return node, k
        return None

    def blind_reaches(self, dist: np.ndarray, nodes: np.ndarray, heads: np.ndarray) -> np.ndarray:
        """For each start state ``(nodes[i], heads[i])``: whether some EB action repeated MAX_STEPS times
        reaches success (``dist`` 0). Only the four moves can: turns and looks leave the position alone, and
        a move's direction stays fixed, so each move is a walk along one lattice direction until blocked."""
        reached = np.zeros(len(nodes), dtype=bool)
        for offset in (0, 1, 2, 3):  # every move direction relative to the heading (ahead, left, back, right)
            direction = (heads + offset) % 4
            at = nodes.copy()
            for _ in range(MAX_STEPS):
                nxt = self.lattice.neighbour[at, direction]
                at = np.where(nxt >= 0, nxt, at)
                reached |= dist[at, heads] == 0
        return reached

    def _open_ahead(self, node: int, k: int) -> bool:
        """At least OPEN_AHEAD free moves straight ahead: no start pose stares into a wall."""
        for _ in range(OPEN_AHEAD):
            node = int(self.lattice.neighbour[node, k])
            if node < 0:
                return False
        return True


def _extent(obj: dict[str, Any]) -> float:
    cat = CATEGORIES[obj["category"]]
    return max(2 * cat.footprint, cat.height) * obj["scale"]


def _scene_group(subset: str, group: int, seed: int) -> list[dict[str, Any]]:
    """The EPISODES_PER_SCENE episodes of one group: one scene, distinct targets."""
    rng = np.random.default_rng(np.random.SeedSequence([int(seed), SUBSETS.index(subset), int(group)]))
    for _ in range(50):
        n_rooms = int(rng.choice([2, 3])) if subset == "long_horizon" else None
        scene = generate_scene(int(rng.integers(2**31 - 1)), n_rooms=n_rooms)
        drawer = _SceneEpisodes(scene, rng)
        episodes: list[dict[str, Any]] = []
        for _ in range(EPISODES_PER_SCENE):
            episode = drawer.draw(subset, {e["target"]["id"] for e in episodes})
            if episode is None:
                break
            episodes.append(episode)
        if len(episodes) == EPISODES_PER_SCENE:
            return [{"scene": scene, **e} for e in episodes]
    raise RuntimeError(
        f"no scene with {EPISODES_PER_SCENE} valid {subset} episodes for group {group}, seed {seed}"
    )


@functools.lru_cache(maxsize=64)
def _cached_group(subset: str, group: int, seed: int) -> str:
    return json.dumps(_scene_group(subset, group, seed))


def _finish(raw: dict[str, Any], subset: str, index: int, seed: int) -> dict[str, Any]:
    return {
        "format": EPISODE_FORMAT,
        "episode_id": f"{subset}/{index:04d}",
        "subset": subset,
        "index": index,
        "set_seed": int(seed),
        "max_steps": MAX_STEPS,
        "success_distance": SUCCESS_DISTANCE,
        **raw,
    }


def _check_subset(subset: str) -> None:
    if subset not in SUBSETS:
        raise ValueError(f"unknown subset {subset!r}; choose one of {', '.join(SUBSETS)}")


def make_episode(subset: str, index: int, seed: int = 0) -> dict[str, Any]:
    """Episode ``index`` of ``make_episode_set(subset, n, seed)`` (for any n > index), generated alone."""
    _check_subset(subset)
    if index < 0:
        raise ValueError(f"episode index must be >= 0, got {index}")
    group = json.loads(_cached_group(subset, index // EPISODES_PER_SCENE, int(seed)))
    return _finish(group[index % EPISODES_PER_SCENE], subset, index, seed)


def make_episode_set(subset: str, n: int = 60, seed: int = 0) -> list[dict[str, Any]]:
    """``n`` validated episodes of an EmbodiedBench subset, reproducible from ``seed``.

    ``subset`` is one of ``base``, ``common_sense``, ``complex_instruction``, ``visual_appearance``,
    ``long_horizon``. Consecutive episodes share scenes in groups of :data:`EPISODES_PER_SCENE`.
    """
    _check_subset(subset)
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    return [make_episode(subset, i, seed) for i in range(n)]


# ------------------------------------------------------------------------------------------- files


def save_episodes(episodes: Iterable[dict[str, Any]], path: str | Path) -> Path:
    """Write episodes as JSON lines (one episode per line, keys sorted)."""
    return save_episodes_jsonl(episodes, path, validate_episode)


def load_episodes(path: str | Path) -> list[dict[str, Any]]:
    """Read and validate a JSONL episode file written by :func:`save_episodes` (or by hand)."""
    return load_episodes_jsonl(path, validate_episode, EpisodeError)


def copy_episode(episode: dict[str, Any]) -> dict[str, Any]:
    """A deep copy (environments keep their own, so callers can mutate theirs)."""
    return copy.deepcopy(episode)


__all__ = [
    "EPISODES_PER_SCENE",
    "EPISODE_FORMAT",
    "MAX_STEPS",
    "SUBSETS",
    "SUCCESS_DISTANCE",
    "UNREACHABLE",
    "load_episodes",
    "make_episode",
    "make_episode_set",
    "save_episodes",
    "validate_episode",
]
