"""The LIBERO family of the spatial corpus (real LIBERO scenes on robosuite, :mod:`envs.libero`).

Scene ``s`` of task ``(suite, index)`` (``s`` in [2**31, 2**32)): ``rng = default_rng(s)`` picks one of
the task's 50 fixed initial states, the env resets to it (no settle steps), every movable object is moved
1-4 cm in x and in y (its free joint), and the ``agentview`` camera (LIBERO's policy camera) is rendered.
The eight tabletop kinds of :mod:`benchmarks.datagen.table_corpus` are asked about it (``libero_distance``,
..., ``libero_multihop``); objects are named from LIBERO's names ("akita_black_bowl_1" -> "akita black
bowl"; two of one name are counted, never named). Building a task's env takes seconds, so consecutive items
share a task (``--libero-items-per-task``), the tasks taken in an order drawn from the corpus seed.

**Disjointness.** LIBERO's test episodes start from the 50 fixed initial states of each of the 130 tasks.
Every corpus scene has an object at least 1 cm (in x or y) away from where each of its task's 50 initial
states puts it; :func:`check_libero_disjoint` re-checks this on the rows against the initial-state files
LIBERO ships, with the seed range and that each ``scene_key`` is the hash of the row's object positions.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

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
    import mujoco

LIBERO_CORPUS_SEEDS = (2**31, 2**32)
LIBERO_STREAM = 20_261_127
LIBERO_KINDS = family_kinds("libero")
CAMERA = "agentview"
OBJECT_OFFSET = (0.01, 0.04)  # m: |offset| of each movable object from its initial-state position, in x and y


def object_name(name: str) -> str:
    """LIBERO's object name as words: ``akita_black_bowl_1`` -> ``akita black bowl``."""
    return re.sub(r"_\d+$", "", name).replace("_", " ")


def libero_scene_key(task: str, positions: dict[str, list[float]]) -> str:
    """Content hash of a LIBERO corpus scene: the task and its objects' positions (0.1 mm)."""
    rounded = [
        (k, (np.round(np.asarray(v, dtype=np.float64), 4) + 0.0).tolist())
        for k, v in sorted(positions.items())
    ]
    return hashlib.sha1(repr((task, rounded)).encode()).hexdigest()[:16]


def task_order(seed: int) -> list[tuple[str, int]]:
    """The 130 LIBERO tasks in the order a corpus of ``seed`` visits them."""
    from envs.libero.protocol import all_tasks

    tasks = all_tasks()
    return [tasks[int(i)] for i in np.random.default_rng([LIBERO_STREAM, seed]).permutation(len(tasks))]


class NoFreeObject(ValueError):
    """A LIBERO task without a free-moving object: no corpus scene can be told apart from its initial states."""


def _displace_free_objects(
    objects: dict[str, Any], model: mujoco.MjModel, data: mujoco.MjData, rng: np.random.Generator
) -> tuple[dict[str, int], dict[str, list[float]]]:
    """Shift each free-moving object by a random ``OBJECT_OFFSET`` in x and y (in ``data.qpos``); the qpos
    address and new position of each, by name."""
    import mujoco

    addresses, positions = {}, {}
    for name, obj in objects.items():
        joints = [mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, j) for j in obj.joints]
        free = [j for j in joints if j >= 0 and model.jnt_type[j] == mujoco.mjtJoint.mjJNT_FREE]
        if not free:  # an articulated object (no free joint) stays where the initial state puts it
            continue
        start = model.jnt_qposadr[free[0]]
        offset = rng.uniform(*OBJECT_OFFSET, size=2) * rng.choice([-1.0, 1.0], size=2)
        data.qpos[start : start + 2] += offset
        addresses[name], positions[name] = int(start), data.qpos[start : start + 3].tolist()
    return addresses, positions


def _table_objects(objects: dict[str, Any], model: mujoco.MjModel, data: mujoco.MjData) -> list[TableObject]:
    """Every object of the scene with its visual geoms and world bounds."""
    import mujoco

    found = []
    for name, obj in objects.items():
        geoms = [mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_GEOM, g) for g in obj.visual_geoms]
        geoms = [g for g in geoms if g >= 0]
        label = object_name(name)
        found.append(TableObject(name, label, label.split()[-1], geoms, world_bounds(model, data, geoms)))
    return found


class LiberoScenes:
    """The env of one LIBERO task at a time (rebuilt when the task changes) and its agentview camera."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.task: tuple[str, int] | None = None
        self.env: Any = None
        self.view: MujocoView | None = None

    def _open(self, task: tuple[str, int]) -> None:
        if self.task == task:
            return
        self.close()
        from envs.libero import make_libero_env

        self.env = make_libero_env(*task, image_size=64, num_steps_wait=0)
        sim = self.env.raw_env.env.sim
        self.view = MujocoView(sim.model._model, sim.data._data, CAMERA, self.size)
        self.task = task

    def scene(self, seed: int, task: tuple[str, int]) -> TableScene:
        import mujoco

        self._open(task)
        assert self.view is not None
        rng = np.random.default_rng(seed)
        init_index = int(rng.integers(50))
        self.env.reset(seed=seed, options={"init_state_index": init_index})
        inner = self.env.raw_env.env
        model, data = inner.sim.model._model, inner.sim.data._data
        addresses, positions = _displace_free_objects(inner.objects_dict, model, data, rng)
        if not positions:
            raise NoFreeObject(f"LIBERO task {task[0]} {task[1]} has no free-moving object to displace")
        mujoco.mj_forward(model, data)
        objects = _table_objects(inner.objects_dict, model, data)
        rgb, depth, seg = self.view.render()
        task_name = self.env.task.name
        state = {
            "suite": task[0],
            "task_index": task[1],
            "task": task_name,
            "init_state_index": init_index,
            "qpos_addresses": addresses,
            "positions": positions,
            "camera": CAMERA,
        }
        return TableScene(
            "libero",
            seed,
            libero_scene_key(task_name, positions),
            rgb,
            depth,
            seg,
            self.view.c2w(),
            self.view.fovy(),
            unique_names(objects),
            self.view.render_from,
            state,
        )

    def close(self) -> None:
        if self.view is not None:
            self.view.close()
        if self.env is not None:
            self.env.close()
        self.env, self.view, self.task = None, None, None

    def __enter__(self) -> LiberoScenes:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def check_libero_disjoint(corpus: Iterable[tuple[int, str, dict[str, Any]]]) -> int:
    """Prove LIBERO corpus scenes ``(seed, scene_key, state)`` start no test episode: seed in
    :data:`LIBERO_CORPUS_SEEDS`, key = hash of the row's positions, and some object at least 1 cm (x or y)
    from where every one of the task's 50 fixed initial states puts it. Returns the number checked."""
    from envs.libero.tasks import load_init_states, load_task

    low, high = LIBERO_CORPUS_SEEDS
    states: dict[tuple[str, int], np.ndarray] = {}
    n = 0
    for seed, key, state in corpus:
        if not low <= seed < high:
            raise ValueError(
                f"LIBERO corpus scene seed {seed} is outside [{low}, {high}); regenerate the corpus"
            )
        if libero_scene_key(state["task"], state["positions"]) != key:
            raise ValueError(f"LIBERO corpus scene {key} (seed {seed}): its positions hash differently")
        task = (state["suite"], int(state["task_index"]))
        if task not in states:
            states[task] = load_init_states(load_task(*task))
        init = states[task]
        names = sorted(state["positions"])
        ours = np.array([state["positions"][k][:2] for k in names])  # (objects, 2)
        # an initial state is (time, qpos, qvel): qpos address a is column 1 + a
        theirs = np.stack(
            [init[:, 1 + state["qpos_addresses"][k] : 3 + state["qpos_addresses"][k]] for k in names], 1
        )
        # per initial state: the largest object offset
        gaps = np.abs(theirs - ours[None]).max(axis=2).max(axis=1)
        if gaps.min() < OBJECT_OFFSET[0] - 1e-9:
            raise ValueError(
                f"LIBERO corpus scene {key} (seed {seed}) matches initial state {int(gaps.argmin())} of "
                f"{task[0]} task {task[1]}; regenerate the corpus"
            )
        n += 1
    return n
