"""CALVIN's long-horizon evaluation chains and the real initial scene of each chain, without a simulator.

The public CALVIN evaluation (mees/calvin, ``calvin_agent/evaluation/multistep_sequences.py`` and
``utils.get_env_state_for_initial_condition``) builds its 1000 chains of 5 subtasks from a symbolic model
of the play-table. This module reproduces those chains exactly, in the same order, from these facts:

1. The symbolic initial states are the ``itertools.product`` of the variables below, in the order listed
   (led, lightbulb, slider, drawer, red/blue/pink block, grasped), keeping block placements with one or
   two blocks on the table and at most one block in each half of the slider cabinet: 16 x 12 = 192 states.
2. ``num_sequences`` is split over the states as ``np.array_split`` splits it: the first
   ``num_sequences % 192`` states get one chain more (for 1000: 40 states get 6 chains, 152 get 5).
3. For state ``i``, the legacy NumPy generator seeded with ``i`` draws
   ``choice(34 task indices, 5, replace=False)`` until it has produced that state's number of chains;
   a draw is kept when every step has exactly one applicable symbolic transition from the state reached
   so far and the 5 task categories are distinct.
4. The chains are listed state by state and shuffled by the legacy NumPy generator seeded with 0.

Note that, as upstream, ``get_sequences(n)`` for ``n < 1000`` is *not* ``get_sequences(1000)[:n]``: the
count per state changes, and so does the shuffle. Use ``get_sequences(1000)[:n]`` for "the first n of
the published 1000 chains".

The result is cached on disk (``$SPATIAL_ARENA_CACHE_DIR``, else ``$XDG_CACHE_HOME/spatial_arena``, else
``~/.cache/spatial_arena``), written atomically so concurrent processes can share it.
"""

from __future__ import annotations

import itertools
import json
import logging
import math
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import cache, lru_cache
from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np

from envs.calvin.constants import NEUTRAL_ROBOT_OBS
from envs.calvin.instructions import CALVIN_TASKS
from envs.calvin.scenes import DEFAULT_SCENE, SCENES, SceneSpec, scene_spec
from envs.files import atomic_write_text

logger = logging.getLogger(__name__)

ALGORITHM_VERSION = 1
"""Bump when the generated chains could change; it is part of the cache key."""

NUM_SEQUENCES = 1000
CHAIN_LENGTH = 5
CACHE_DIR_ENV = "SPATIAL_ARENA_CACHE_DIR"

BLOCKS: tuple[str, ...] = ("red_block", "blue_block", "pink_block")
BLOCK_PLACES: tuple[str, ...] = ("table", "slider_right", "slider_left")

# Variables and values in the order the public evaluation enumerates them: the order fixes the state
# indices, hence the seeds, hence the chains.
SYMBOLIC_DOMAINS: Mapping[str, tuple[Any, ...]] = MappingProxyType(
    {
        "led": (0, 1),
        "lightbulb": (0, 1),
        "slider": ("right", "left"),
        "drawer": ("closed", "open"),
        "red_block": BLOCK_PLACES,
        "blue_block": BLOCK_PLACES,
        "pink_block": BLOCK_PLACES,
        "grasped": (0,),
    }
)
STATE_KEYS: tuple[str, ...] = tuple(SYMBOLIC_DOMAINS)
_KEY_INDEX = {key: index for index, key in enumerate(STATE_KEYS)}

# Symbolic state as a tuple of values in STATE_KEYS order (hashable, cheap to copy).
SymbolicState = tuple[Any, ...]

# Tasks of one category never appear twice in a chain (the public evaluation's category table).
TASK_CATEGORIES: Mapping[str, int] = MappingProxyType(
    {
        **{f"rotate_{c}_block_{d}": 1 for c in ("red", "blue", "pink") for d in ("right", "left")},
        **{f"push_{c}_block_{d}": 1 for c in ("red", "blue", "pink") for d in ("right", "left")},
        "move_slider_left": 2,
        "move_slider_right": 2,
        "open_drawer": 3,
        "close_drawer": 3,
        **{f"lift_{c}_block_table": 4 for c in ("red", "blue", "pink")},
        **{f"lift_{c}_block_slider": 5 for c in ("red", "blue", "pink")},
        **{f"lift_{c}_block_drawer": 6 for c in ("red", "blue", "pink")},
        "place_in_slider": 7,
        "place_in_drawer": 7,
        "turn_on_lightbulb": 8,
        "turn_off_lightbulb": 8,
        "turn_on_led": 8,
        "turn_off_led": 8,
        "push_into_drawer": 9,
        "stack_block": 10,
        "unstack_block": 11,
    }
)


# ----------------------------------------------------------------------------------------------------
# Symbolic transition model
# ----------------------------------------------------------------------------------------------------

Condition = dict[str, Any]  # variable -> required value, or a tuple of allowed values
Effect = dict[str, Any]  # variable -> new value


def _idle(block: str) -> list[tuple[Condition, Effect]]:
    """Rotating or pushing a block on the table leaves it on the table."""
    return [({block: "table", "grasped": 0}, {})]


def _lift_table(block: str) -> list[tuple[Condition, Effect]]:
    return [({block: "table", "grasped": 0}, {block: "grasped", "grasped": 1})]


def _lift_slider(block: str) -> list[tuple[Condition, Effect]]:
    # A block in one half of the cabinet can be lifted while the door is on the other side.
    lifted = {block: "grasped", "grasped": 1}
    return [
        ({block: "slider_left", "slider": "right", "grasped": 0}, lifted),
        ({block: "slider_right", "slider": "left", "grasped": 0}, lifted),
    ]


def _lift_drawer(block: str) -> list[tuple[Condition, Effect]]:
    return [({block: "drawer", "drawer": "open", "grasped": 0}, {block: "grasped", "grasped": 1})]


def _place_in_slider() -> list[tuple[Condition, Effect]]:
    # Upstream stores the block at the spot named like the door position, while lifting needs the block
    # in the half opposite the door; kept as written because it decides which chains are valid.
    return [
        ({block: "grasped", "slider": door, "grasped": 1}, {block: f"slider_{door}", "grasped": 0})
        for block in BLOCKS
        for door in ("right", "left")
    ]


def _place_in_drawer() -> list[tuple[Condition, Effect]]:
    return [
        ({block: "grasped", "drawer": "open", "grasped": 1}, {block: "drawer", "grasped": 0})
        for block in BLOCKS
    ]


def _stack() -> list[tuple[Condition, Effect]]:
    return [
        (
            {top: "grasped", bottom: "table", "grasped": 1},
            {top: "stacked_top", bottom: "stacked_bottom", "grasped": 0},
        )
        for top, bottom in itertools.permutations(BLOCKS, 2)
    ]


def _unstack() -> list[tuple[Condition, Effect]]:
    return [
        ({top: "stacked_top", bottom: "stacked_bottom", "grasped": 0}, {top: "table", bottom: "table"})
        for top, bottom in itertools.permutations(BLOCKS, 2)
    ]


def _toggle(variable: str, before: object, after: object) -> list[tuple[Condition, Effect]]:
    return [({variable: before, "grasped": 0}, {variable: after})]


def _push_into_drawer() -> list[tuple[Condition, Effect]]:
    # Only when the other two blocks are stored in the slider cabinet, so "the block" is unambiguous.
    in_cabinet = ("slider_right", "slider_left")
    return [
        (
            {
                block: "table",
                **{other: in_cabinet for other in BLOCKS if other != block},
                "drawer": "open",
                "grasped": 0,
            },
            {block: "drawer", "grasped": 0},
        )
        for block in BLOCKS
    ]


def _transition_table() -> dict[str, list[tuple[Condition, Effect]]]:
    table: dict[str, list[tuple[Condition, Effect]]] = {}
    for color in ("red", "blue", "pink"):
        block = f"{color}_block"
        for direction in ("right", "left"):
            table[f"rotate_{block}_{direction}"] = _idle(block)
            table[f"push_{block}_{direction}"] = _idle(block)
        table[f"lift_{block}_table"] = _lift_table(block)
        table[f"lift_{block}_slider"] = _lift_slider(block)
        table[f"lift_{block}_drawer"] = _lift_drawer(block)
    table["move_slider_left"] = _toggle("slider", "right", "left")
    table["move_slider_right"] = _toggle("slider", "left", "right")
    table["open_drawer"] = _toggle("drawer", "closed", "open")
    table["close_drawer"] = _toggle("drawer", "open", "closed")
    table["turn_on_lightbulb"] = _toggle("lightbulb", 0, 1)
    table["turn_off_lightbulb"] = _toggle("lightbulb", 1, 0)
    table["turn_on_led"] = _toggle("led", 0, 1)
    table["turn_off_led"] = _toggle("led", 1, 0)
    table["place_in_slider"] = _place_in_slider()
    table["place_in_drawer"] = _place_in_drawer()
    table["stack_block"] = _stack()
    table["unstack_block"] = _unstack()
    table["push_into_drawer"] = _push_into_drawer()
    return table


TASK_TRANSITIONS: Mapping[str, tuple[tuple[Condition, Effect], ...]] = MappingProxyType(
    {task: tuple(rules) for task, rules in _transition_table().items()}
)
"""Task -> its symbolic transitions, each a (condition, effect) pair; a condition value that is a tuple
lists the allowed values."""


def _holds(state: SymbolicState, condition: Condition) -> bool:
    for variable, required in condition.items():
        value = state[_KEY_INDEX[variable]]
        if (value not in required) if isinstance(required, tuple) else (value != required):
            return False
    return True


def _applied(state: SymbolicState, effect: Effect) -> SymbolicState:
    values = list(state)
    for variable, value in effect.items():
        values[_KEY_INDEX[variable]] = value
    return tuple(values)


@cache
def _successors(state: SymbolicState, task: str) -> tuple[SymbolicState, ...]:
    """Every state ``task`` can lead to from ``state``, one per applicable transition."""
    return tuple(
        _applied(state, effect) for condition, effect in TASK_TRANSITIONS[task] if _holds(state, condition)
    )


def _chain_is_valid(state: SymbolicState, tasks: Sequence[str]) -> bool:
    categories = {TASK_CATEGORIES[task] for task in tasks}
    if len(categories) != len(tasks):
        return False
    for task in tasks:
        successors = _successors(state, task)
        if len(successors) != 1:
            return False
        state = successors[0]
    return True


def is_valid_chain(initial_state: Mapping[str, Any], tasks: Sequence[str]) -> bool:
    """Whether CALVIN's evaluation would accept ``tasks`` as a chain from ``initial_state``.

    Valid means: every task has exactly one applicable symbolic transition from the state reached so
    far, and no two tasks share a category. Raises ``ValueError`` for an unknown task or state.
    """
    unknown = [task for task in tasks if task not in TASK_TRANSITIONS]
    if unknown:
        raise ValueError(f"unknown CALVIN task(s) {unknown}; see envs.calvin.instructions.CALVIN_TASKS")
    return _chain_is_valid(_as_symbolic(initial_state), tuple(tasks))


# ----------------------------------------------------------------------------------------------------
# Chain generation
# ----------------------------------------------------------------------------------------------------


def _has_valid_placement(values: Sequence[Any]) -> bool:
    places = [values[_KEY_INDEX[block]] for block in BLOCKS]
    return (
        places.count("table") in (1, 2)
        and places.count("slider_right") < 2
        and places.count("slider_left") < 2
    )


@lru_cache(maxsize=1)
def _initial_state_tuples() -> tuple[SymbolicState, ...]:
    every = itertools.product(*SYMBOLIC_DOMAINS.values())
    return tuple(values for values in every if _has_valid_placement(values))


def symbolic_initial_states() -> list[dict[str, Any]]:
    """The 192 symbolic initial states, in the order (and hence with the seed index) CALVIN uses."""
    return [dict(zip(STATE_KEYS, values)) for values in _initial_state_tuples()]


def chains_per_state(num_sequences: int, num_states: int = 192) -> list[int]:
    """How many chains each state gets: ``np.array_split`` sizes, the remainder going to the first states."""
    base, extra = divmod(num_sequences, num_states)
    return [base + 1 if index < extra else base for index in range(num_states)]


def _draw_chains(state_index: int, state: SymbolicState, count: int) -> list[tuple[str, ...]]:
    """The first ``count`` valid chains CALVIN draws for the state with this index.

    Upstream calls ``np.random.seed(state_index)`` and then ``np.random.choice(tasks, 5, replace=False)``
    until ``count`` draws are valid. A private legacy generator with the same seed produces the same
    stream without touching the caller's global NumPy state; draws are made and checked in batches
    (``_legacy_choices``, ``_valid_rows``), which yields the same draws in the same order.
    """
    rng = np.random.RandomState(state_index)
    start = _transition_table_arrays()[0][state]
    chains: list[tuple[str, ...]] = []
    drawn = 0
    while len(chains) < count:
        batch = _next_batch_size(drawn, len(chains))
        picks = _legacy_choices(rng, batch)
        drawn += batch
        for row in picks[_valid_rows(start, picks)][: count - len(chains)]:
            chains.append(tuple(CALVIN_TASKS[index] for index in row))
    return chains


def _next_batch_size(drawn: int, found: int) -> int:
    # Valid draws are rare (about 1 in 1,000 to 20,000 depending on the state) and every draw past the
    # last needed one is wasted work, so batches are sized to a fraction of the expected gap between
    # valid draws, estimated from the draws so far.
    expected_gap = drawn / max(found, 1) if drawn else 4096
    return int(min(max(expected_gap / 4, 1024), 4096))  # small batches stay in the CPU cache


def _legacy_choices(rng: np.random.RandomState, count: int) -> np.ndarray:
    """``count`` successive ``rng.choice(34, 5, replace=False)`` results as a ``(count, 5)`` array.

    Legacy ``choice`` without replacement takes the first 5 entries of ``permutation(34)``, a
    Fisher-Yates shuffle of ``arange(34)`` that for i = 33, ..., 1 swaps entry i with entry
    ``j = random_interval(i)`` (masked rejection sampling on 32-bit words). Legacy ``randint`` with an
    array of upper bounds draws every bound with that same masked rejection, in order, so one call
    yields the swap indices of all ``count`` shuffles and leaves the generator where the ``count``
    ``choice`` calls would have left it. The swaps are then replayed on all shuffles at once.
    """
    size = len(CALVIN_TASKS)
    bounds = np.arange(size, 1, -1, dtype=np.int64)  # exclusive upper bound of j for i = 33, ..., 1
    swap_with = rng.randint(0, bounds, size=(count, size - 1), dtype=np.int64)
    targets = swap_with.T.astype(np.int32)  # -> flat index of entries[j, draw]
    targets *= count
    targets += np.arange(count, dtype=np.int32)
    entries = np.repeat(np.arange(size, dtype=np.int8)[:, None], count, axis=1)  # entries[position, draw]
    flat = entries.reshape(-1)
    for step, position in enumerate(range(size - 1, 0, -1)):
        moving = entries[position].copy()
        if position < CHAIN_LENGTH:  # entries at positions >= 5 are never read again after their swap
            entries[position] = flat[targets[step]]
        flat[targets[step]] = moving
    return entries[:CHAIN_LENGTH].T.astype(np.int64)


def _valid_rows(start: int, picks: np.ndarray) -> np.ndarray:
    """Boolean mask of the draws (rows of task indices) that form a valid chain from state ``start``."""
    _, transitions, categories = _transition_table_arrays()
    current = np.full(picks.shape[0], start, dtype=transitions.dtype)
    for column in range(picks.shape[1]):
        current = transitions[current, picks[:, column]]
    valid = current != transitions.shape[0] - 1  # not dead
    survivors = np.flatnonzero(valid)  # few rows: check categories only there
    sorted_categories = np.sort(categories[picks[survivors]], axis=1)
    valid[survivors] = np.all(sorted_categories[:, 1:] != sorted_categories[:, :-1], axis=1)
    return valid


def _unique_successor(state: SymbolicState, task: str) -> SymbolicState | None:
    successors = _successors(state, task)
    return successors[0] if len(successors) == 1 else None


def next_symbolic_state(state: Mapping[str, Any], task: str) -> dict[str, Any] | None:
    """The symbolic state ``task`` leads to from ``state`` under CALVIN's task model, or None when ``task``
    has no or several transitions from it (CALVIN's chains use only tasks with exactly one). ``state`` may
    be any reachable state, a grasped block included (play data walks through those)."""
    if task not in TASK_TRANSITIONS:
        raise ValueError(f"unknown CALVIN task {task!r}; see envs.calvin.instructions.CALVIN_TASKS")
    successor = _unique_successor(tuple(state[key] for key in STATE_KEYS), task)
    return None if successor is None else dict(zip(STATE_KEYS, successor))


@lru_cache(maxsize=1)
def _transition_table_arrays() -> tuple[dict[SymbolicState, int], np.ndarray, np.ndarray]:
    """Every symbolic state reachable from the initial states, numbered, and as arrays:
    ``transitions[state_id, task_index]`` is the successor id when exactly one transition applies and a
    dead id (the last row, which only leads to itself) otherwise; ``categories[task_index]``.
    """
    ordered = list(_initial_state_tuples())  # ids in discovery order; the list grows while it is read
    state_ids = {state: index for index, state in enumerate(ordered)}
    successor_rows = []
    for state in ordered:
        row = [_unique_successor(state, task) for task in CALVIN_TASKS]
        for successor in row:
            if successor is not None and successor not in state_ids:
                state_ids[successor] = len(ordered)
                ordered.append(successor)
        successor_rows.append(row)
    dead = len(ordered)
    table = np.full((dead + 1, len(CALVIN_TASKS)), dead, dtype=np.int32)
    for state_id, row in enumerate(successor_rows):
        table[state_id] = [dead if successor is None else state_ids[successor] for successor in row]
    categories = np.array([TASK_CATEGORIES[task] for task in CALVIN_TASKS], dtype=np.int64)
    return state_ids, table, categories


def _unshuffled_chains(num_sequences: int) -> list[tuple[SymbolicState, tuple[str, ...]]]:
    states = _initial_state_tuples()
    counts = chains_per_state(num_sequences, len(states))
    _transition_table_arrays()  # build the shared table once, before the threads read it
    # Each state has its own generator, so states can be drawn in any order; NumPy releases the GIL in
    # the heavy calls, so threads use several cores. `map` keeps the results in state order.
    with ThreadPoolExecutor(max_workers=_worker_count()) as pool:
        per_state = list(pool.map(_draw_chains, range(len(states)), states, counts))
    return [(state, chain) for state, chains in zip(states, per_state) for chain in chains]


def _worker_count() -> int:
    return max(1, min(8, os.cpu_count() or 1))


def _generate(num_sequences: int) -> list[tuple[SymbolicState, tuple[str, ...]]]:
    chains = _unshuffled_chains(num_sequences)
    # Shuffling a Python list with the legacy generator swaps items exactly as `np.random.shuffle` does.
    np.random.RandomState(0).shuffle(chains)
    return chains


def get_sequences(
    num_sequences: int = NUM_SEQUENCES, *, use_cache: bool = True
) -> list[tuple[dict, tuple[str, ...]]]:
    """CALVIN's evaluation chains: ``(initial_state, tasks)`` pairs, identical to the public evaluation's.

    ``initial_state`` is a fresh dict per chain with CALVIN's key order (which the block-yaw seed of
    ``initial_env_state`` depends on); ``tasks`` holds 5 task names. ``get_sequences(1000)`` is the
    published protocol. With ``use_cache`` the list is read from / written to the on-disk cache.
    """
    num_sequences = _checked_count(num_sequences)
    cache_file = _cache_path(num_sequences) if use_cache else None
    chains = _read_cache(cache_file, num_sequences) if cache_file else None
    if chains is None:
        chains = _generate(num_sequences)
        if cache_file:
            _write_cache(cache_file, num_sequences, chains)
    return [(dict(zip(STATE_KEYS, state)), tuple(tasks)) for state, tasks in chains]


def _checked_count(num_sequences: object) -> int:
    if (
        isinstance(num_sequences, bool)
        or not isinstance(num_sequences, int | np.integer)
        or num_sequences < 1
    ):
        raise ValueError(
            f"num_sequences must be a positive integer (CALVIN uses 1000), got {num_sequences!r}"
        )
    return int(num_sequences)


# ----------------------------------------------------------------------------------------------------
# On-disk cache
# ----------------------------------------------------------------------------------------------------

_CACHE_FORMAT = "spatial_arena.calvin_sequences"


def cache_dir() -> Path:
    """Where generated chains are cached: ``$SPATIAL_ARENA_CACHE_DIR`` or the user cache directory."""
    configured = os.environ.get(CACHE_DIR_ENV)
    if configured:
        return Path(configured).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "spatial_arena"


def _cache_path(num_sequences: int) -> Path:
    return cache_dir() / f"calvin_sequences_v{ALGORITHM_VERSION}_n{num_sequences}.json"


def _read_cache(path: Path, num_sequences: int) -> list[tuple[SymbolicState, tuple[str, ...]]] | None:
    try:
        payload = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as error:
        logger.warning("ignoring unreadable CALVIN sequence cache %s (%s); regenerating", path, error)
        return None
    chains = _parse_cache(payload, num_sequences)
    if chains is None:
        logger.warning("ignoring CALVIN sequence cache %s: it does not hold the expected chains", path)
    return chains


def _parse_cache(payload: object, num_sequences: int) -> list[tuple[SymbolicState, tuple[str, ...]]] | None:
    """The chains of a cache payload, or None unless it holds ``num_sequences`` valid chains."""
    header = {"format": _CACHE_FORMAT, "algorithm_version": ALGORITHM_VERSION, "num_sequences": num_sequences}
    if not isinstance(payload, dict) or any(payload.get(k) != v for k, v in header.items()):
        return None
    if payload.get("state_keys") != list(STATE_KEYS):
        return None
    try:
        chains = [(tuple(state), tuple(tasks)) for state, tasks in payload["chains"]]
        valid = len(chains) == num_sequences and all(_is_stored_chain(s, t) for s, t in chains)
    except (KeyError, TypeError, ValueError):
        return None
    return chains if valid else None


def _is_stored_chain(state: SymbolicState, tasks: tuple[str, ...]) -> bool:
    known_tasks = len(tasks) == CHAIN_LENGTH and all(task in TASK_CATEGORIES for task in tasks)
    return known_tasks and state in _initial_state_set() and _chain_is_valid(state, tasks)


@lru_cache(maxsize=1)
def _initial_state_set() -> frozenset[SymbolicState]:
    return frozenset(_initial_state_tuples())


def _write_cache(
    path: Path, num_sequences: int, chains: Iterable[tuple[SymbolicState, tuple[str, ...]]]
) -> None:
    payload = {
        "format": _CACHE_FORMAT,
        "algorithm_version": ALGORITHM_VERSION,
        "num_sequences": num_sequences,
        "state_keys": list(STATE_KEYS),
        "chains": [[list(state), list(tasks)] for state, tasks in chains],
    }
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(path, json.dumps(payload, separators=(",", ":")), fsync=True)
    except OSError as error:
        logger.warning(
            "could not cache CALVIN sequences at %s (%s); they will be regenerated next time", path, error
        )


# ----------------------------------------------------------------------------------------------------
# Symbolic -> real initial state
# ----------------------------------------------------------------------------------------------------

# Neutral robot state of the evaluation: TCP xyz, TCP Euler xyz, gripper width, 7 joints, gripper action.
EVAL_ROBOT_OBS: tuple[float, ...] = NEUTRAL_ROBOT_OBS

SLIDE_OPEN_LEFT = 0.28  # scene D's; other scenes: SceneSpec.slide_travel
DRAWER_OPEN = 0.22
SWITCH_ON = 0.088
# Scene D's spots, CALVIN's (every scene's: SceneSpec.spots)
BLOCK_SLIDER_LEFT = SCENES[DEFAULT_SCENE].spots("slider_left")[0]
BLOCK_SLIDER_RIGHT = SCENES[DEFAULT_SCENE].spots("slider_right")[0]
BLOCK_TABLE_SPOTS = SCENES[DEFAULT_SCENE].spots("table")
BLOCK_YAW_RANGE = (math.pi / 2 - math.pi / 8, math.pi / 2 + math.pi / 8)


def fnv1_32(data: bytes) -> int:
    """32-bit FNV-1 with offset basis 0, as ``pyhash.fnv1_32`` computes it: multiply, then xor each byte."""
    value = 0
    for byte in bytes(data):
        value = ((value * 0x01000193) & 0xFFFFFFFF) ^ byte
    return value


def initial_state_seed(initial_state: Mapping[str, Any]) -> int:
    """The block-yaw seed of a symbolic state: FNV-1 of ``str(state.values())`` as UTF-16-LE bytes.

    The values are taken in CALVIN's key order, so a dict with reordered keys gets the same seed.
    """
    state = dict(zip(STATE_KEYS, _as_symbolic(initial_state)))
    return fnv1_32(str(state.values()).encode("utf-16-le"))


def initial_env_state(
    initial_state: Mapping[str, Any], scene: str = DEFAULT_SCENE
) -> tuple[np.ndarray, np.ndarray]:
    """The real ``(robot_obs[15], scene_obs[24])`` CALVIN's evaluation resets to for a symbolic state.

    Doors, drawer, switch and lights follow the state; blocks go to their cabinet spot or to one of two
    table spots; each block's yaw is uniform in pi/2 +- pi/8. The legacy NumPy generator seeded with
    ``initial_state_seed`` first shuffles the two table spots, then draws the red, blue and pink yaws.

    In scene D this is CALVIN's evaluation exactly. In another ``scene`` the same draws place the blocks at
    that scene's spots (:meth:`envs.calvin.scenes.SceneSpec.spots`: scene D's moved with their surface), a
    door "left" is that scene's full travel, and each block's pose goes to the scene's own ``scene_obs``
    slot for its colour.
    """
    spec = scene_spec(scene)
    state = dict(zip(STATE_KEYS, _as_symbolic(initial_state)))
    rng = np.random.RandomState(initial_state_seed(state))
    table_spots = list(spec.spots("table"))
    rng.shuffle(table_spots)
    scene_obs = _articulation_obs(state, spec)
    for block in BLOCKS:
        start = spec.block_slice(block.removesuffix("_block")).start
        scene_obs[start : start + 3] = _block_position(block, state, table_spots, spec)
        scene_obs[start + 5] = rng.uniform(*BLOCK_YAW_RANGE)
    return np.array(EVAL_ROBOT_OBS, dtype=np.float64), scene_obs


def _articulation_obs(state: Mapping[str, Any], spec: SceneSpec) -> np.ndarray:
    scene_obs = np.zeros(24, dtype=np.float64)
    scene_obs[0] = spec.slide_travel if state["slider"] == "left" else 0.0
    scene_obs[1] = DRAWER_OPEN if state["drawer"] == "open" else 0.0
    scene_obs[3] = SWITCH_ON if state["lightbulb"] == 1 else 0.0  # scene_obs[2], the button, rests at 0
    scene_obs[4] = state["lightbulb"]
    scene_obs[5] = state["led"]
    return scene_obs


def _block_position(
    block: str, state: Mapping[str, Any], table_spots: Sequence[Sequence[float]], spec: SceneSpec
) -> Sequence[float]:
    place = state[block]
    if place in ("slider_left", "slider_right"):
        return spec.spots(place)[0]
    return table_spots[_table_spot_index(block, state)]


def _table_spot_index(block: str, state: Mapping[str, Any]) -> int:
    """Which of the (shuffled) table spots a table block takes, as upstream assigns them.

    Red takes the first spot, pink the second, blue the second if red is on the table and the first
    otherwise. So a lone pink block always takes the second spot.
    """
    if block == "red_block":
        return 0
    if block == "blue_block":
        return 1 if state["red_block"] == "table" else 0
    return 1


# ----------------------------------------------------------------------------------------------------
# Input checking
# ----------------------------------------------------------------------------------------------------


def _as_symbolic(initial_state: Mapping[str, Any]) -> SymbolicState:
    """Validate a symbolic initial state and return its values in CALVIN's key order as plain Python."""
    if not isinstance(initial_state, Mapping):
        raise ValueError(
            f"initial_state must be a dict with keys {list(STATE_KEYS)}, got {type(initial_state).__name__}"
        )
    missing = [key for key in STATE_KEYS if key not in initial_state]
    extra = [key for key in initial_state if key not in _KEY_INDEX]
    if missing or extra:
        raise ValueError(
            f"initial_state keys must be exactly {list(STATE_KEYS)}: missing {missing}, unexpected {extra}"
        )
    values = tuple(_plain_value(key, initial_state[key]) for key in STATE_KEYS)
    if not _has_valid_placement(values):
        placements = {block: values[_KEY_INDEX[block]] for block in BLOCKS}
        raise ValueError(
            f"initial_state block placement {placements} is not a CALVIN initial state: "
            "one or two blocks must be on the table and at most one in each half of the slider cabinet"
        )
    return values


def _plain_value(key: str, value: object) -> Any:
    allowed = SYMBOLIC_DOMAINS[key]
    as_python: Callable[[Any], Any] = int if isinstance(allowed[0], int) else str
    try:
        plain = as_python(value)
    except (TypeError, ValueError):
        plain = None
    if plain not in allowed or plain != value:
        raise ValueError(
            f"initial_state[{key!r}] = {value!r} is invalid: CALVIN initial states use one of {list(allowed)}"
        )
    return plain
