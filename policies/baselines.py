"""Baselines every benchmark offers: uniformly random actions, one constant action, replay of recorded actions."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from action_mapping import Plan
from policies.base import Action, EpisodeContext, Policy

if TYPE_CHECKING:
    import gymnasium as gym


class RandomPolicy(Policy):
    """Samples uniformly from the env's action space (any gymnasium space type, see :func:`sample_space`)
    with a generator seeded by the episode seed."""

    name = "random"

    def __init__(self) -> None:
        self._space: Any = None
        self._rng = np.random.default_rng(0)

    def bind(self, env: gym.Env) -> None:
        self._space = env.action_space

    def reset(self, context: EpisodeContext) -> None:
        if self._space is None:
            raise RuntimeError("RandomPolicy needs bind(env) before reset(), to know the action space")
        self._rng = np.random.default_rng(context.seed)

    def act(self, observation: Mapping[str, Any]) -> Action:
        return sample_space(self._space, self._rng)


def sample_space(space: gym.Space, rng: np.random.Generator) -> Any:
    """One uniform draw from a gymnasium space with ``rng`` (so the episode seed alone fixes it).

    Handles every space type gymnasium has: ``Discrete`` (an ``int``), ``MultiDiscrete``, ``MultiBinary``
    and ``Box`` (arrays of the space's dtype and shape; unbounded Box entries as gymnasium samples them),
    and the composite ``Tuple``/``Dict``, recursively. The space's own ``sample()`` would use its own
    generator, which the env seeds and which other code draws from too; a policy needs its own stream.
    """
    import gymnasium.spaces as spaces

    if isinstance(space, spaces.Discrete):
        return int(space.start + rng.integers(space.n))
    if isinstance(space, spaces.MultiDiscrete):
        return (space.start + rng.integers(0, space.nvec)).astype(space.dtype)
    if isinstance(space, spaces.MultiBinary):
        return rng.integers(0, 2, size=space.shape).astype(space.dtype)
    if isinstance(space, spaces.Box):
        return _sample_box(space, rng)
    if isinstance(space, spaces.Tuple):
        return tuple(sample_space(s, rng) for s in space.spaces)
    if isinstance(space, spaces.Dict):
        return {k: sample_space(s, rng) for k, s in space.spaces.items()}
    raise TypeError(
        f"cannot sample the action space {space!r}: RandomPolicy supports Discrete, MultiDiscrete, "
        "MultiBinary, Box, Tuple and Dict"
    )


def _sample_box(space: gym.spaces.Box, rng: np.random.Generator) -> np.ndarray:
    """Uniform where both bounds are finite (every integer of ``[low, high]`` for an integer dtype); as
    gymnasium samples elsewhere: normal where unbounded, a shifted exponential where bounded on one side."""
    low = np.broadcast_to(space.low, space.shape).astype(np.float64)
    high = np.broadcast_to(space.high, space.shape).astype(np.float64)
    has_low, has_high = np.isfinite(low), np.isfinite(high)
    both, none = has_low & has_high, ~has_low & ~has_high
    value = np.empty(space.shape, dtype=np.float64)
    value[none] = rng.normal(size=int(none.sum()))
    value[has_low & ~has_high] = low[has_low & ~has_high] + rng.exponential(
        size=int((has_low & ~has_high).sum())
    )
    value[~has_low & has_high] = high[~has_low & has_high] - rng.exponential(
        size=int((~has_low & has_high).sum())
    )
    if np.issubdtype(space.dtype, np.integer):
        value[both] = rng.integers(low[both].astype(np.int64), high[both].astype(np.int64) + 1)
        value = np.floor(value)
    else:
        value[both] = rng.uniform(low[both], high[both])
    return value.astype(space.dtype)


class ConstantPolicy(Policy):
    """Sends the same native action at every step: a blind baseline (e.g. "always move forward").

    ``action`` is a number or a list of numbers, checked against the bound env's action space (a Discrete
    space takes an integer; array spaces a list of their shape, cast to their dtype).
    """

    name = "constant"

    def __init__(self, action: Any) -> None:
        self.value = action
        self._action: Any = None

    def bind(self, env: gym.Env) -> None:
        self._action = constant_action(env.action_space, self.value)

    def reset(self, context: EpisodeContext) -> None:
        if self._action is None:
            raise RuntimeError(
                "ConstantPolicy needs bind(env) before reset(), to check the action against the space"
            )

    def act(self, observation: Mapping[str, Any]) -> Action:
        return self._action.copy() if isinstance(self._action, np.ndarray) else self._action

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "action": self.value}


def constant_action(space: gym.Space, value: Any) -> Any:
    """``value`` as a native action of ``space``, or a one-line ``ValueError`` naming both and the fix."""
    import gymnasium.spaces as spaces

    try:
        if isinstance(space, spaces.Discrete):
            if isinstance(value, bool) or not float(value).is_integer():
                raise ValueError
            action: Any = int(value)
        else:
            action = np.asarray(value, dtype=np.float64)
            if np.issubdtype(space.dtype, np.integer) and not np.all(np.mod(action, 1) == 0):
                raise ValueError
            action = action.astype(space.dtype)
    except (TypeError, ValueError):
        action = None
    if action is None or not space.contains(action):
        shape = "an integer" if isinstance(space, spaces.Discrete) else f"a list of shape {space.shape}"
        raise ValueError(
            f"--action {json.dumps(value, default=str)} is not an action of the env's space {space}: pass {shape} "
            "inside the space's bounds"
        )
    return action


class ReplayPolicy(Policy):
    """Replays recorded action sequences; asks for no motion (an empty plan) once a sequence runs out.

    The file is JSONL, one ``{"key": ..., "actions": [[...], ...]}`` per episode, where ``key`` matches the
    benchmark's ``EpisodeContext.extras["replay_key"]``; a LIBERO/robomimic demonstration HDF5
    (``data/demo_i/actions``), where demo ``i`` is replayed from initial state ``i``
    (``extras["init_state_index"]``); or ``.npy``/``.npz`` holding one ``(T, action_dim)`` array
    (``actions`` or ``rel_actions`` in an npz), replayed in every episode.
    """

    name = "replay"

    def __init__(self, sequences: Mapping[str, Sequence[Any]]) -> None:
        if not sequences:
            raise ValueError("the replay file holds no action sequence")
        self.sequences = {k: np.asarray(v) for k, v in sequences.items()}
        self._queue: list[np.ndarray] = []

    @classmethod
    def from_file(cls, path: str | Path) -> ReplayPolicy:
        path = Path(path)
        if not path.exists():
            raise FileNotFoundError(f"replay file {path} does not exist (pass --replay-file PATH)")
        if path.suffix == ".jsonl":
            rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
            bad = [i for i, r in enumerate(rows) if not {"key", "actions"} <= set(r)]
            if bad:
                raise ValueError(f"{path}: lines {bad[:5]} lack 'key' or 'actions'")
            return cls({str(r["key"]): r["actions"] for r in rows})
        if path.suffix in (".hdf5", ".h5"):
            import h5py

            with h5py.File(path, "r") as f:
                if "data" not in f:
                    raise ValueError(
                        f"{path} has no 'data' group (expected LIBERO/robomimic data/demo_i/actions)"
                    )
                return cls({name: f["data"][name]["actions"][()] for name in f["data"]})
        if path.suffix == ".npy":
            return cls({"*": np.load(path, allow_pickle=False)})
        if path.suffix == ".npz":
            data = np.load(path, allow_pickle=False)
            key = next((k for k in ("actions", "rel_actions") if k in data), None)
            if key is None:
                raise ValueError(f"{path} has no 'actions' or 'rel_actions' array (found {list(data)})")
            return cls({"*": data[key]})
        raise ValueError(f"replay file {path} must be .jsonl, .hdf5, .npy or .npz")

    def reset(self, context: EpisodeContext) -> None:
        key = str(context.extras.get("replay_key", "*"))
        demo = f"demo_{context.extras.get('init_state_index')}"
        for candidate in (key, demo, "*"):
            if candidate in self.sequences:
                self._queue = list(self.sequences[candidate][::-1])
                return
        raise KeyError(
            f"no recorded actions for episode {key!r} (nor {demo!r}); the replay file has "
            f"{len(self.sequences)} keys, e.g. {sorted(self.sequences)[:3]}"
        )

    def act(self, observation: Mapping[str, Any]) -> Action:
        return self._queue.pop() if self._queue else Plan(steps=[])
