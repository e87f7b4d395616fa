"""Distractor objects for LIBERO's ``distractors`` axis: the object pool and the scene built with them.

The pool is LIBERO's own small objects (groceries, bowls, plates, the ramekin, mugs, moka pot, wine bottle)
plus the LIBERO-PRO variants the asset wheels ship (recoloured or resized copies: blue ketchup, yellow moka
pot, white porcelain mug, ...), for which LIBERO registers no class: each is registered here under its
asset folder's name as a subclass of its original, so it stands as the original does.

A task's distractor scene is its BDDL problem with ``KINDS_PER_TASK`` pool objects added to ``:objects``
(with no ``:init`` place: the env writes their poses), compiled as a LIBERO env of its own, so physics sees
them; it is compiled once and serves every variant of the task (a compile costs about a quarter of an
episode). The kinds are the pool's objects that nothing in the task could be mistaken for, in an order
fixed by the task's problem text. A variant places some of them on the table and parks the others 10 m
behind the agentview camera, a metre above the floor, apart, held by a damping that lets them sink a
few micrometres in an episode (out of every camera's sight, touching nothing; MuJoCo lets no body
become weightless after compiling). The clean scene's
initial state is copied in joint by joint and its fixtures' placements body by body, so everything but
the added objects is as in the clean scene.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
from pathlib import Path
from typing import Any

import numpy as np

from envs.libero.bootstrap import ensure_libero, libero_config_dir

#: LIBERO's registered objects that fit among the task objects (not furniture, baskets, racks or pans).
ORIGINALS = (
    "alphabet_soup",
    "bbq_sauce",
    "butter",
    "chocolate_pudding",
    "cookies",
    "cream_cheese",
    "ketchup",
    "macaroni_and_cheese",
    "milk",
    "new_salad_dressing",
    "orange_juice",
    "popcorn",
    "salad_dressing",
    "tomato_sauce",
    "akita_black_bowl",
    "white_bowl",
    "plate",
    "glazed_rim_porcelain_ramekin",
    "moka_pot",
    "porcelain_mug",
    "red_coffee_mug",
    "white_yellow_mug",
    "wine_bottle",
)
#: LIBERO-PRO's extra assets in the wheels (folder name -> the original whose class it takes).
PRO_VARIANTS = {
    "bigger_alphabet_soup": "alphabet_soup",
    "red_alphabet_soup": "alphabet_soup",
    "green_bbq_sauce": "bbq_sauce",
    "green_butter": "butter",
    "green_chocolate_pudding": "chocolate_pudding",
    "yellow_cookies": "cookies",
    "red_cream_cheese": "cream_cheese",
    "blue_ketchup": "ketchup",
    "green_ketchup": "ketchup",
    "bigger_milk": "milk",
    "yellow_milk": "milk",
    "red_orange_juice": "orange_juice",
    "red_salad_dressing": "salad_dressing",
    "yellow_tomato_sauce": "tomato_sauce",
    "bigger_akita_black_bowl": "akita_black_bowl",
    "red_akita_black_bowl": "akita_black_bowl",
    "red_bowl": "white_bowl",
    "yellow_bowl": "white_bowl",
    "yellow_plate": "plate",
    "red_ramekin": "glazed_rim_porcelain_ramekin",
    "yellow_moka_pot": "moka_pot",
    "white_porcelain_mug": "porcelain_mug",
    "white_bottle": "wine_bottle",
}
POOL = tuple(sorted((*ORIGINALS, *PRO_VARIANTS)))
KINDS_PER_TASK = 8  # pool objects in a task's distractor scene (a level places up to 5)
_PARK_X, _PARK_Z = 10.0, 1.0  # m: behind the agentview camera (it looks toward -x), above the floor
_PARK_SPACING = 1.0  # m between parked objects
_PARK_DAMPING = 1e6  # N s/m on a parked object's joint: it sinks about g m / this, micrometres per second
_OBJECTS_OPEN = re.compile(r"\(:objects[^\n]*\n")
_CORNERS = np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)])


def register_pool() -> None:
    """Register a LIBERO object class for every LIBERO-PRO variant (once; its original's subclass)."""
    ensure_libero()
    from libero.libero.envs.base_object import OBJECTS_DICT, register_object

    for variant, original in PRO_VARIANTS.items():
        if variant not in OBJECTS_DICT:
            register_object(_variant_class(variant, OBJECTS_DICT[original]))


def _variant_class(variant: str, base: type[Any]) -> type[Any]:
    def __init__(self: Any, name: str = variant, obj_name: str = variant) -> None:
        base.__init__(self, name=name, obj_name=obj_name)

    # LIBERO keys its registry (and an object's category) by the class name in snake case
    return type("".join(part.title() for part in variant.split("_")), (base,), {"__init__": __init__})


def task_kinds(task_text: str, eligible: list[str]) -> list[str]:
    """The ``KINDS_PER_TASK`` of ``eligible`` a task's distractor scene holds, in an order fixed by the
    task's problem text (so each task gets its own share of the pool, the same in every process)."""
    return sorted(eligible, key=lambda c: hashlib.sha256(f"{task_text}\n{c}".encode()).hexdigest())[
        :KINDS_PER_TASK
    ]


def object_name(category: str) -> str:
    """The name a distractor of ``category`` gets in the scene (categories in a scene are unique)."""
    return f"{category}_1"


def bddl_with(text: str, categories: list[str]) -> str:
    """The BDDL problem ``text`` with one object of each of ``categories`` added to ``:objects``."""
    match = _OBJECTS_OPEN.search(text)
    if match is None:
        raise ValueError("the BDDL problem has no (:objects ...) section")
    lines = "".join(f"    {object_name(c)} - {c}\n" for c in categories)
    return text[: match.end()] + lines + text[match.end() :]


def bddl_file(text: str) -> Path:
    """``text`` saved under the project cache, named by its content (the same problem, the same file)."""
    folder = libero_config_dir() / "variants"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{hashlib.sha256(text.encode()).hexdigest()[:16]}.bddl"
    if not path.is_file() or path.read_text() != text:
        tmp = folder / f".{path.name}.{os.getpid()}.tmp"  # parallel workers never read a half-written file
        tmp.write_text(text)
        os.replace(tmp, path)
    return path


def pool_entries(raw_env: Any) -> list[dict[str, Any]]:
    """Every pool object as LIBERO would stand it in this scene: its category, orientation (w, x, y, z,
    before a turn about the vertical), horizontal radius about its origin and the depth of its lowest
    point below its origin (both from its geoms' boxes)."""
    register_pool()
    problem = raw_env.env.parsed_problem
    sampler = _region_sampler(problem)
    return [{"category": c, **_geometry(*_stance(c, sampler))} for c in POOL]


def _region_sampler(problem: dict[str, Any]) -> type:
    from libero.libero.envs.regions import REGION_SAMPLERS

    samplers = REGION_SAMPLERS[problem["problem_name"].lower()]
    return next(iter(samplers.values()))


def _stance(category: str, sampler: type) -> tuple[str, tuple[float, ...]]:
    """(category, the quaternion LIBERO's region sampler of this scene gives an object of it)."""
    from libero.libero.envs.base_object import OBJECTS_DICT

    obj = OBJECTS_DICT[category](name="probe")
    probe = sampler(
        "probe",
        obj,
        x_ranges=[[0, 0]],
        y_ranges=[[0, 0]],
        rotation=obj.rotation,
        rotation_axis=obj.rotation_axis,
    )
    saved = np.random.get_state()
    np.random.seed(0)  # (the pool's rotation ranges are single angles; a seed keeps any other one fixed)
    try:
        quat = probe._sample_quat()
    finally:
        np.random.set_state(saved)
    return category, tuple(round(float(v), 6) for v in quat)


@functools.cache
def _geometry(category: str, quat: tuple[float, ...]) -> dict[str, Any]:
    import mujoco
    from libero.libero.envs.base_object import OBJECTS_DICT

    model = mujoco.MjModel.from_xml_path(OBJECTS_DICT[category](name="probe").file)
    data = mujoco.MjData(model)
    root = next(b for b in range(1, model.nbody) if model.body_parentid[b] == 0)
    model.body_pos[root], model.body_quat[root] = 0.0, quat
    mujoco.mj_kinematics(model, data)
    corners = np.concatenate(
        [
            data.geom_xpos[g]
            + (model.geom_aabb[g, :3] + _CORNERS * model.geom_aabb[g, 3:]) @ data.geom_xmat[g].reshape(3, 3).T
            for g in range(model.ngeom)
        ]
    )
    return {
        "quat": list(quat),
        "radius": round(float(np.hypot(corners[:, 0], corners[:, 1]).max()), 6),
        "bottom": round(float(-corners[:, 2].min()), 6),
    }


#: the variant model's fields parking changes (their compiled values are written back first)
PARK_FIELDS = ("dof_damping",)


def variant_state(
    clean: Any,
    variant: Any,
    kinds: list[str],
    placements: list[dict[str, Any]],
    compiled: dict[str, np.ndarray],
) -> np.ndarray:
    """The distractor scene's flattened state (time, qpos, qvel): the clean scene's joints copied by name,
    each placed object's free joint at its placement, the other ``kinds`` parked, all at rest. Into the
    variant model: the clean fixtures' placements (body positions LIBERO draws at reset), its
    ``compiled`` values of ``PARK_FIELDS``, and the parked objects' hold (a damping)."""
    cm, cd = clean.env.sim.model._model, clean.env.sim.data._data
    vm = variant.env.sim.model._model
    for b in range(1, cm.nbody):
        v = _id(vm, "body", cm.body(b).name)
        vm.body_pos[v], vm.body_quat[v] = cm.body_pos[b], cm.body_quat[b]
    qpos, qvel = np.zeros(vm.nq), np.zeros(vm.nv)
    for j in range(cm.njnt):
        v = _id(vm, "joint", cm.joint(j).name)
        nq, nv = _joint_sizes(int(cm.jnt_type[j]))
        qpos[vm.jnt_qposadr[v] : vm.jnt_qposadr[v] + nq] = cd.qpos[cm.jnt_qposadr[j] : cm.jnt_qposadr[j] + nq]
        qvel[vm.jnt_dofadr[v] : vm.jnt_dofadr[v] + nv] = cd.qvel[cm.jnt_dofadr[j] : cm.jnt_dofadr[j] + nv]
    for field in PARK_FIELDS:
        getattr(vm, field)[:] = compiled[field]
    placed = {p["category"]: [*p["pos"], *p["quat"]] for p in placements}
    for k, kind in enumerate(kinds):
        v = _id(vm, "joint", f"{object_name(kind)}_joint0")
        parked = [_PARK_X, _PARK_SPACING * k, _PARK_Z, 1.0, 0.0, 0.0, 0.0]
        qpos[vm.jnt_qposadr[v] : vm.jnt_qposadr[v] + 7] = placed.get(kind, parked)
        if kind not in placed:
            vm.dof_damping[vm.jnt_dofadr[v] : vm.jnt_dofadr[v] + 6] = _PARK_DAMPING
    return np.concatenate([[cd.time], qpos, qvel])


def _id(model: Any, kind: str, name: str) -> int:
    import mujoco

    found = mujoco.mj_name2id(model, getattr(mujoco.mjtObj, f"mjOBJ_{kind.upper()}"), name)
    if found < 0:
        raise RuntimeError(f"the distractor scene lacks the clean scene's {kind} {name!r}")
    return int(found)


def _joint_sizes(kind: int) -> tuple[int, int]:
    """(qpos, qvel) sizes of a MuJoCo joint type: free, ball, slide, hinge."""
    return {0: (7, 6), 1: (4, 3)}.get(kind, (1, 1))
