"""The LIBERO scene as a plain description a perturbation axis edits, and the edits written back.

:func:`describe_scene` reads what the axes of :mod:`envs.libero.perturbations` may change from a loaded
LIBERO env (after its initial state is set): the agentview camera, the lights, the furniture materials,
the task objects with their footprints and what each rests on, the arm's joints, the instruction.
:func:`write_scene` writes an edited description back, section by section, only where it differs.
:class:`ModelDefaults` keeps the compiled model's camera, light and material values so that every reset
starts from them again (model edits outlive a soft reset).
"""

from __future__ import annotations

from typing import Any

import numpy as np

CAMERA = "agentview"
_ROBOT_PREFIXES = ("robot0_", "gripper0_", "fixed_mount0_", "mount0_")
_SURFACES = ("table", "floor")  # fixture categories objects are laid out on
_LAYOUT_MARGIN = 0.15  # m: objects stay this near the original layout (the robot's reach)
_EDGE_MARGIN = 0.03  # m: objects stay this far inside the table's edges
_HALVINGS = 4  # a start pose that touches anything is moved halfway back, at most this often
_VIEW_INSET = 0.8  # an added object's centre stays inside this share of the agentview frame


class ModelDefaults:
    """The compiled model's camera, light, headlight and material values, to restore before each reset."""

    _FIELDS = ("cam_pos", "cam_quat", "cam_fovy", "light_dir", "light_diffuse", "mat_rgba")

    def __init__(self, model: Any) -> None:
        self.model = model
        self.values = {f: np.array(getattr(model, f)) for f in self._FIELDS}
        head = model.vis.headlight
        self.headlight = (np.array(head.diffuse), np.array(head.ambient))

    def restore(self) -> None:
        for field, value in self.values.items():
            getattr(self.model, field)[:] = value
        self.model.vis.headlight.diffuse[:], self.model.vis.headlight.ambient[:] = self.headlight


def _model_data(raw_env: Any) -> tuple[Any, Any]:
    sim = raw_env.env.sim
    return sim.model._model, sim.data._data


def _subtree(model: Any, root: int) -> list[int]:
    return [b for b in range(model.nbody) if _under(model, b, root)]


def _under(model: Any, body: int, root: int) -> bool:
    while body != root and body != 0:
        body = int(model.body_parentid[body])
    return body == root


def _bodies_named(model: Any, prefix: str) -> list[int]:
    return [b for b in range(model.nbody) if model.body(b).name.startswith(prefix)]


def _xy_box(model: Any, data: Any, bodies: list[int]) -> list[list[float]]:
    """The world x-y box of the geoms of ``bodies`` (from each geom's own bounding box)."""
    corners = []
    signs = np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)])
    for g in np.flatnonzero(np.isin(model.geom_bodyid, bodies)):
        centre, half = model.geom_aabb[g, :3], model.geom_aabb[g, 3:]
        local = centre + signs * half
        corners.append(data.geom_xpos[g] + local @ data.geom_xmat[g].reshape(3, 3).T)
    points = np.concatenate(corners)[:, :2]
    return [[float(v) for v in points.min(axis=0)], [float(v) for v in points.max(axis=0)]]


def _problem(raw_env: Any) -> dict[str, Any]:
    return raw_env.env.parsed_problem


def _surfaces(problem: dict[str, Any]) -> set[str]:
    return {
        n for cat, names in problem["fixtures"].items() if any(s in cat for s in _SURFACES) for n in names
    }


def _rests_on(problem: dict[str, Any], name: str, surfaces: set[str]) -> str:
    """``"surface"`` (the table or floor), another object's name, or ``"fixed"`` (in or on a fixture)."""
    objects = {n for names in problem["objects"].values() for n in names}
    for predicate in problem["initial_state"]:
        if len(predicate) == 3 and predicate[0] in ("on", "in") and predicate[1] == name:
            region = predicate[2]
            target = problem["regions"].get(region, {}).get("target", region)
            if target in surfaces:
                return "surface"
            return target if target in objects else "fixed"
    return "fixed"


def _objects(raw_env: Any, surfaces: set[str]) -> list[dict[str, Any]]:
    model, data = _model_data(raw_env)
    problem, out = _problem(raw_env), []
    for name in sorted(n for names in problem["objects"].values() for n in names):
        joint = model.joint(f"{name}_joint0")
        adr = int(model.jnt_qposadr[joint.id])
        lo, hi = _xy_box(model, data, _subtree(model, int(model.jnt_bodyid[joint.id])))
        out.append(
            {
                "name": name,
                "qposadr": adr,
                "pos": [float(v) for v in data.qpos[adr : adr + 3]],
                "lo": lo,
                "hi": hi,
                "rests_on": _rests_on(problem, name, surfaces),
            }
        )
    return out


def _bounds(raw_env: Any, objects: list[dict[str, Any]], surfaces: set[str]) -> list[list[float]]:
    """Where objects may go: near the original layout and inside the table's edges."""
    model, data = _model_data(raw_env)
    movers = [o for o in objects if o["rests_on"] == "surface"] or objects
    low = np.min([o["lo"] for o in movers], axis=0) - _LAYOUT_MARGIN
    high = np.max([o["hi"] for o in movers], axis=0) + _LAYOUT_MARGIN
    surface_bodies = [b for s in sorted(surfaces) for b in _bodies_named(model, s)]
    if not surface_bodies:
        surface_bodies = [b for s in _SURFACES for b in _bodies_named(model, s)]
    if surface_bodies:
        table_lo, table_hi = _xy_box(model, data, surface_bodies)
        low = np.maximum(low, np.asarray(table_lo) + _EDGE_MARGIN)
        high = np.minimum(high, np.asarray(table_hi) - _EDGE_MARGIN)
    return [[float(v) for v in low], [float(v) for v in high]]


def _obstacles(raw_env: Any, surfaces: set[str]) -> list[list[list[float]]]:
    model, data = _model_data(raw_env)
    fixtures = [n for names in _problem(raw_env)["fixtures"].values() for n in names if n not in surfaces]
    boxes = []
    for name in sorted(fixtures):
        bodies = _bodies_named(model, name)
        if bodies and np.isin(model.geom_bodyid, bodies).any():
            boxes.append(_xy_box(model, data, bodies))
    return boxes


def _materials(raw_env: Any) -> list[dict[str, Any]]:
    """Materials of the room and the table: geoms of no robot part, object or fixture but the surface."""
    model, _ = _model_data(raw_env)
    problem = _problem(raw_env)
    surfaces = _surfaces(problem)
    owned = [n for group in ("objects", "fixtures") for names in problem[group].values() for n in names]
    prefixes = (*_ROBOT_PREFIXES, *(n for n in owned if n not in surfaces))
    excluded = {b for b in range(model.nbody) if model.body(b).name.startswith(prefixes)}
    excluded |= {c for b in list(excluded) for c in _subtree(model, b)}
    ids = sorted(
        {int(model.geom_matid[g]) for g in range(model.ngeom) if model.geom_matid[g] >= 0}
        - {int(model.geom_matid[g]) for g in range(model.ngeom) if model.geom_bodyid[g] in excluded}
    )
    return [{"id": m, "rgba": [float(v) for v in model.mat_rgba[m]]} for m in ids]


def _camera(raw_env: Any, surface_z: float) -> dict[str, Any]:
    model, data = _model_data(raw_env)
    cam = model.camera(CAMERA).id
    forward = -data.cam_xmat[cam].reshape(3, 3)[:, 2]
    origin = np.array(data.cam_xpos[cam])
    target = origin + forward * (surface_z - origin[2]) / forward[2]
    return {
        "pos": [float(v) for v in model.cam_pos[cam]],
        "quat": [float(v) for v in model.cam_quat[cam]],
        "fovy": float(model.cam_fovy[cam]),
        "target": [float(v) for v in target],
    }


def _robot(raw_env: Any) -> dict[str, Any]:
    model, data = _model_data(raw_env)
    joints = [model.joint(j).id for j in raw_env.env.robots[0].robot_joints]
    return {
        "q": [float(data.qpos[model.jnt_qposadr[j]]) for j in joints],
        "low": [float(model.jnt_range[j][0]) for j in joints],
        "high": [float(model.jnt_range[j][1]) for j in joints],
        "qposadr": [int(model.jnt_qposadr[j]) for j in joints],
    }


def _categories(problem: dict[str, Any]) -> list[str]:
    return sorted({c for group in ("objects", "fixtures") for c in problem[group]})


def _surface_z(raw_env: Any, objects: list[dict[str, Any]]) -> float:
    """The height the table's (or floor's) objects stand on: the median of their lowest points."""
    model, data = _model_data(raw_env)
    lows = []
    for o in objects:
        if o["rests_on"] == "surface":
            joint = model.joint(f"{o['name']}_joint0")
            lows.append(_z_low(model, data, _subtree(model, int(model.jnt_bodyid[joint.id]))))
    return round(float(np.median(lows)), 6) if lows else 0.0


def _z_low(model: Any, data: Any, bodies: list[int]) -> float:
    signs = np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)])
    geoms = np.flatnonzero(np.isin(model.geom_bodyid, bodies) & (model.geom_contype | model.geom_conaffinity))
    return min(
        float(
            (
                data.geom_xpos[g]
                + (model.geom_aabb[g, :3] + signs * model.geom_aabb[g, 3:])
                @ data.geom_xmat[g].reshape(3, 3).T
            )[:, 2].min()
        )
        for g in geoms
    )


def _keepout(raw_env: Any, surfaces: set[str]) -> list[list[list[float]]]:
    """The x-y boxes of the goal's regions that lie on the table (or floor): nothing may be added there."""
    model, data = _model_data(raw_env)
    problem = _problem(raw_env)
    named = {str(a) for predicate in _flatten(problem["goal_state"]) for a in predicate[1:]}
    boxes = []
    for region in sorted(named & set(problem["regions"])):
        site = mujoco_id(model, region)
        if problem["regions"][region].get("target") in surfaces and site >= 0:
            centre, half = data.site_xpos[site][:2], model.site_size[site][:2]
            boxes.append([[float(v) for v in centre - half], [float(v) for v in centre + half]])
    return boxes


def _flatten(goal: list[Any]) -> list[list[Any]]:
    """The atomic predicates of a parsed BDDL goal (``and``/``or``/``not`` unwrapped)."""
    if goal and isinstance(goal[0], str) and goal[0].lower() in ("and", "or", "not"):
        return [p for part in goal[1:] for p in _flatten(part)]
    if goal and all(isinstance(part, list) for part in goal):
        return [p for part in goal for p in _flatten(part)]
    return [goal]


def _view(raw_env: Any, surface_z: float) -> list[list[float]]:
    """The corners of the surface the agentview camera sees, ``_VIEW_INSET`` inside its frame (x-y, in
    order around it): where an added object is in the picture."""
    model, data = _model_data(raw_env)
    cam = model.camera(CAMERA).id
    rotation, origin = data.cam_xmat[cam].reshape(3, 3), np.array(data.cam_xpos[cam])
    half = np.tan(np.radians(model.cam_fovy[cam]) / 2) * _VIEW_INSET
    corners = []
    for u, v in ((-1, -1), (1, -1), (1, 1), (-1, 1)):
        ray = rotation @ np.array([u * half, v * half, -1.0])
        corners.append([float(c) for c in (origin + ray * (surface_z - origin[2]) / ray[2])[:2]])
    return corners


def mujoco_id(model: Any, site: str) -> int:
    import mujoco

    return int(mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_SITE, site))


def describe_scene(raw_env: Any, instruction: str) -> dict[str, Any]:
    """What the perturbation axes may edit, read from the loaded scene (a JSON-safe dict)."""
    model, _ = _model_data(raw_env)
    surfaces = _surfaces(_problem(raw_env))
    objects = _objects(raw_env, surfaces)
    on_surface = [o["pos"][2] for o in objects if o["rests_on"] == "surface"]
    head = model.vis.headlight
    return {
        "instruction": instruction,
        "camera": _camera(raw_env, float(np.median(on_surface)) if on_surface else 0.9),
        "lights": [
            {
                "dir": [float(v) for v in model.light_dir[i]],
                "diffuse": [float(v) for v in model.light_diffuse[i]],
            }
            for i in range(model.nlight)
        ],
        "headlight": {
            "diffuse": [float(v) for v in head.diffuse],
            "ambient": [float(v) for v in head.ambient],
        },
        "materials": _materials(raw_env),
        "objects": objects,
        "bounds": _bounds(raw_env, objects, surfaces),
        "obstacles": _obstacles(raw_env, surfaces),
        "robot": _robot(raw_env),
        "categories": _categories(_problem(raw_env)),
        "surface_z": _surface_z(raw_env, objects),
        "view": _view(raw_env, _surface_z(raw_env, objects)),
        "keepout": _keepout(raw_env, surfaces),
        "distractors": [],
    }


def write_scene(raw_env: Any, old: dict[str, Any], new: dict[str, Any]) -> bool:
    """Write the sections of ``new`` that differ from ``old`` (the scene as read), forwarding the
    simulator when objects or joints moved; True if anything was written (the frames are stale then)."""
    model, data = _model_data(raw_env)
    if new["camera"] != old["camera"]:
        cam = model.camera(CAMERA).id
        model.cam_pos[cam], model.cam_quat[cam] = new["camera"]["pos"], new["camera"]["quat"]
        model.cam_fovy[cam] = new["camera"]["fovy"]
    if new["lights"] != old["lights"] or new["headlight"] != old["headlight"]:
        for i, light in enumerate(new["lights"]):
            model.light_dir[i], model.light_diffuse[i] = light["dir"], light["diffuse"]
        model.vis.headlight.diffuse[:] = new["headlight"]["diffuse"]
        model.vis.headlight.ambient[:] = new["headlight"]["ambient"]
    for material in new["materials"] if new["materials"] != old["materials"] else []:
        model.mat_rgba[material["id"]] = material["rgba"]
    for before, after in zip(old["objects"], new["objects"]):
        if after["pos"] != before["pos"]:
            data.qpos[after["qposadr"] : after["qposadr"] + 3] = after["pos"]
    if new["robot"]["q"] != old["robot"]["q"]:
        _place_arm(
            raw_env, np.asarray(old["robot"]["q"]), np.asarray(new["robot"]["q"]), new["robot"]["qposadr"]
        )
    elif new["objects"] != old["objects"]:
        raw_env.env.sim.forward()
    return any(new[k] != old[k] for k in ("camera", "lights", "headlight", "materials", "objects", "robot"))


def _place_arm(raw_env: Any, start: np.ndarray, goal: np.ndarray, adr: list[int]) -> None:
    """The arm at ``goal``, or moved halfway back toward ``start`` while it would touch anything."""
    model, data = _model_data(raw_env)
    robot = {b for b in range(model.nbody) if model.body(b).name.startswith(_ROBOT_PREFIXES)}
    q = goal
    for _ in range(_HALVINGS + 1):
        data.qpos[adr] = q
        raw_env.env.sim.forward()
        if not _arm_touches(model, data, robot):
            return
        q = start + (q - start) / 2


def _arm_touches(model: Any, data: Any, robot: set[int]) -> bool:
    n = data.ncon
    for g1, g2 in zip(data.contact.geom1[:n], data.contact.geom2[:n]):
        if (model.geom_bodyid[g1] in robot) != (model.geom_bodyid[g2] in robot):
            return True
    return False
