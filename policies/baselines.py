"""Baselines every benchmark offers: uniformly random actions and replay of recorded actions."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from action_mapping import Plan
from policies.base import Action, EpisodeContext, Policy


class RandomPolicy(Policy):
    """Samples uniformly from the env's action space with a generator seeded by the episode seed."""

    name = "random"

    def __init__(self) -> None:
        self._space: Any = None
        self._rng = np.random.default_rng(0)

    def bind(self, env: Any) -> None:
        self._space = env.action_space

    def reset(self, context: EpisodeContext) -> None:
        if self._space is None:
            raise RuntimeError("RandomPolicy needs bind(env) before reset(), to know the action space")
        self._rng = np.random.default_rng(context.seed)

    def act(self, observation: Mapping[str, Any]) -> Action:
        space = self._space
        if hasattr(space, "n"):  # Discrete
            return int(space.start + self._rng.integers(space.n))
        low, high = np.broadcast_to(space.low, space.shape), np.broadcast_to(space.high, space.shape)
        return self._rng.uniform(low, high).astype(space.dtype)


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
                    raise ValueError(f"{path} has no 'data' group (expected LIBERO/robomimic data/demo_i/actions)")
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
        raise KeyError(f"no recorded actions for episode {key!r} (nor {demo!r}); the replay file has "
                       f"{len(self.sequences)} keys, e.g. {sorted(self.sequences)[:3]}")

    def act(self, observation: Mapping[str, Any]) -> Action:
        return self._queue.pop() if self._queue else Plan(steps=[])
