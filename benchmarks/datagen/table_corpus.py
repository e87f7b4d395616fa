"""Tabletop kinds of the spatial corpus, shared by the EB-Manipulation (``manip``) and LIBERO (``libero``)
families (:mod:`benchmarks.datagen.manip_corpus`, :mod:`benchmarks.datagen.libero_corpus`).

A family hands over a :class:`TableScene`: one camera's RGB, metric depth and per-pixel geom ids rendered
by MuJoCo from the simulator state, the camera's pose and field of view, and the scene's objects with
their geoms and world bounding boxes. Every answer is computed from those, exactly:

- ``<family>_distance``: distance between two visible objects' centres (bounding-box centres), metres;
- ``<family>_depth``: depth of a visible object's centre along the camera's axis, metres;
- ``<family>_size``: height of a visible object (its world bounding box), centimetres;
- ``<family>_counting``: how many objects of one kind are visible (none of that kind partly hidden below
  :data:`MIN_PIXELS`), lettered options;
- ``<family>_left_right``: whether one visible object is left or right of another in the image, from the
  projected centres (>= 10 px apart) and agreeing with the masks' mean columns;
- ``<family>_camera_motion``: the same camera rendered again after one SpatialTree primitive (translations
  5-12 cm, rotations 8-15 deg, in the camera's frame): which move it made, the opposite move always an
  option (nav's :data:`~benchmarks.datagen.nav_questions.CAMERA_MOTION_TEXT` wording);
- ``<family>_localisation``: the tight box of an object's visible pixels, ``[x1, y1, x2, y2]`` on 0-1000;
- ``<family>_multihop``: MultihopSpatial-style, two hops: the objects to one side of a reference (projected
  centres >= 10 px from it), then the one of them closest to / farthest from the camera (>= 5 cm apart in
  depth); lettered options, answered in the recipe's ``Answer:`` / ``Bounding Box:`` format.

An object is *visible* when at least :data:`MIN_PIXELS` of its pixels show in the segmentation render.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from benchmarks.datagen.corpus_format import (
    BOX_FORMAT,
    box_1000,
    box_answer,
    lettered_choice,
    localisation_text,
)
from benchmarks.datagen.nav_questions import (
    CAMERA_MOTION_QUESTION,
    CAMERA_MOTION_TEXT,
    Question,
    _multi_choice,
    _options,
    _single_motion,
    plural,
    wrong_camera_motions,
)

if TYPE_CHECKING:
    import mujoco

MIN_PIXELS = 40  # pixels of an object that must show for it to be asked about (224 x 224 images)
MIN_COLUMN_GAP = 10.0  # px between projected centres for left/right
ASKS_PER_SCENE = 4  # draws of a builder's random choices on one scene before the next scene
MIN_DEPTH_GAP = 0.05  # m between the two nearest candidates' depths (multi-hop)
TABLE_MOTION_RANGE = {"translation": (0.05, 0.12), "rotation": (8.0, 15.0)}  # metres, degrees
CV_FROM_MUJOCO = np.diag([1.0, -1.0, -1.0])  # MuJoCo cameras look along -z with +y up; OpenCV: +z, +y down
TABLE_KINDS_BASE = (
    "distance",
    "depth",
    "size",
    "counting",
    "left_right",
    "camera_motion",
    "localisation",
    "multihop",
)


@dataclass
class TableObject:
    """One object of a scene: ``id`` (the simulator's name), a unique ``name`` or ``None``, its ``noun``."""

    id: str
    name: str | None
    noun: str
    geoms: list[int]
    bounds: np.ndarray  # world AABB [[min xyz], [max xyz]]

    @property
    def centre(self) -> np.ndarray:
        return self.bounds.mean(axis=0)


@dataclass
class TableScene:
    """One rendered tabletop scene; ``render_from(c2w)`` renders the same camera moved to ``c2w`` (OpenCV)."""

    family: str
    seed: int
    key: str
    rgb: np.ndarray
    depth: np.ndarray
    seg: np.ndarray
    c2w: np.ndarray
    fovy: float
    objects: list[TableObject]
    render_from: Callable[[np.ndarray], np.ndarray]
    state: dict[str, Any]
    _pixels: dict[str, int] = field(default_factory=dict)

    def mask(self, obj: TableObject) -> np.ndarray:
        return np.isin(self.seg, np.asarray(obj.geoms))

    def pixels(self, obj: TableObject) -> int:
        if obj.id not in self._pixels:
            self._pixels[obj.id] = int(self.mask(obj).sum())
        return self._pixels[obj.id]

    def visible(self) -> list[TableObject]:
        """Named objects with at least :data:`MIN_PIXELS` pixels."""
        return [o for o in self.objects if o.name is not None and self.pixels(o) >= MIN_PIXELS]

    def project(self, point: np.ndarray) -> tuple[float, float, float]:
        """Pixel column, row and depth (along the camera's axis) of a world point."""
        x = (np.asarray(point, dtype=np.float64) - self.c2w[:3, 3]) @ self.c2w[:3, :3]
        height, width = self.depth.shape
        f = (height / 2) / math.tan(math.radians(self.fovy) / 2)
        return float(width / 2 + f * x[0] / x[2]), float(height / 2 + f * x[1] / x[2]), float(x[2])

    def mean_column(self, obj: TableObject) -> float:
        return float(np.nonzero(self.mask(obj))[1].mean())


TableBuilder = Callable[[TableScene, np.random.Generator], "Question | None"]


def _q(
    scene: TableScene,
    kind: str,
    qtype: str,
    category: str,
    sub: str,
    text: str,
    answer: str,
    truth: dict[str, Any],
    images: Sequence[np.ndarray] | None = None,
) -> Question:
    return Question(
        f"{scene.family}_{kind}", qtype, category, sub, text, answer, list(images or [scene.rgb]), truth, []
    )


def _two(rng: np.random.Generator, objects: list[TableObject]) -> tuple[TableObject, TableObject] | None:
    if len(objects) < 2:
        return None
    a, b = rng.choice(len(objects), size=2, replace=False)
    return objects[int(a)], objects[int(b)]


def _one(rng: np.random.Generator, objects: list[TableObject]) -> TableObject | None:
    return objects[int(rng.integers(len(objects)))] if objects else None


def table_distance(scene: TableScene, rng: np.random.Generator) -> Question | None:
    """Distance between two visible objects' centres, metres."""
    pair = _two(rng, scene.visible())
    if pair is None:
        return None
    a, b = pair
    distance = float(np.linalg.norm(a.centre - b.centre))
    text = f"What is the distance between the centres of the {a.name} and the {b.name} (in meters)?"
    return _q(
        scene,
        "distance",
        "open-ended",
        "Depth and Distance",
        "Object Distance",
        text,
        f"{distance:.2f}",
        {"objects": [a.id, b.id], "distance_m": distance},
    )


def table_depth(scene: TableScene, rng: np.random.Generator) -> Question | None:
    """Depth of a visible object's centre along the camera's axis, metres."""
    obj = _one(rng, scene.visible())
    if obj is None:
        return None
    depth = scene.project(obj.centre)[2]
    text = (
        f"How far is the centre of the {obj.name} from the camera, measured along the camera's viewing "
        "direction (in meters)?"
    )
    return _q(
        scene,
        "depth",
        "open-ended",
        "Depth and Distance",
        "Absolute Depth",
        text,
        f"{depth:.2f}",
        {"object": obj.id, "depth_m": depth},
    )


def table_size(scene: TableScene, rng: np.random.Generator) -> Question | None:
    """Height of a visible object, centimetres."""
    obj = _one(rng, scene.visible())
    if obj is None:
        return None
    height = float(obj.bounds[1, 2] - obj.bounds[0, 2]) * 100
    text = f"How tall is the {obj.name} (in centimeters)?"
    return _q(
        scene,
        "size",
        "open-ended",
        "Object Properties",
        "Size",
        text,
        f"{height:.1f}",
        {"object": obj.id, "height_cm": height, "bounds_m": obj.bounds.tolist()},
    )


def table_counting(scene: TableScene, rng: np.random.Generator) -> Question | None:
    """How many objects of one kind are visible (no object of that kind only partly shown)."""
    nouns = sorted({o.noun for o in scene.objects})
    noun = nouns[int(rng.integers(len(nouns)))]
    of_noun = [o for o in scene.objects if o.noun == noun]
    if any(0 < scene.pixels(o) < MIN_PIXELS for o in of_noun):
        return None
    n = sum(scene.pixels(o) >= MIN_PIXELS for o in of_noun)
    choices = [str(k) for k in (range(4) if n <= 3 else range(n - 2, n + 2))]
    options, answer = _multi_choice(rng, str(n), [c for c in choices if c != str(n)])
    noun_text = noun if noun.endswith("s") else plural(noun)
    text = f"How many {noun_text} can be seen in the image? Select from the following choices.\n{options}"
    return _q(
        scene,
        "counting",
        "multi-choice",
        "Counting",
        "Object Counting",
        text,
        answer,
        {"noun": noun, "count": n, "objects": [o.id for o in of_noun if scene.pixels(o) >= MIN_PIXELS]},
    )


def table_left_right(scene: TableScene, rng: np.random.Generator) -> Question | None:
    """Is one visible object left or right of another in the image."""
    pair = _two(rng, scene.visible())
    if pair is None:
        return None
    a, b = pair
    ua, ub = scene.project(a.centre)[0], scene.project(b.centre)[0]
    if abs(ua - ub) < MIN_COLUMN_GAP or (ua < ub) != (scene.mean_column(a) < scene.mean_column(b)):
        return None
    side = "left" if ua < ub else "right"
    text = f"In the image, is the {a.name} to the left or to the right of the {b.name}?\n{_options(['left', 'right'])}"
    return _q(
        scene,
        "left_right",
        "multi-choice",
        "3D Positional Relation",
        "Relative Direction",
        text,
        "(A)" if side == "left" else "(B)",
        {"objects": [a.id, b.id], "columns_px": [ua, ub], "side": side},
    )


def table_camera_motion(scene: TableScene, rng: np.random.Generator) -> Question | None:
    """Which single primitive the camera made between two renders."""
    from action_mapping import Category

    primitives = list(CAMERA_MOTION_TEXT)
    primitive = primitives[int(rng.integers(len(primitives)))]
    translation = primitive.category is Category.TRANSLATION
    amount = float(rng.uniform(*TABLE_MOTION_RANGE["translation" if translation else "rotation"]))
    goal = scene.c2w @ _single_motion(primitive, amount)
    second = scene.render_from(goal)
    wrong = wrong_camera_motions(rng, primitive)
    options, answer = _multi_choice(
        rng, CAMERA_MOTION_TEXT[primitive], [CAMERA_MOTION_TEXT[p] for p in wrong]
    )
    text = f"{CAMERA_MOTION_QUESTION}\n{options}"
    truth = {
        "primitive": primitive.value,
        "amount": amount,
        "unit": "m" if translation else "deg",
        "c2w_start": scene.c2w.tolist(),
        "c2w_goal": goal.tolist(),
    }
    return _q(
        scene,
        "camera_motion",
        "multi-choice",
        "Camera and Image Transformation",
        "Camera Motion",
        text,
        answer,
        truth,
        [scene.rgb, second],
    )


def table_localisation(scene: TableScene, rng: np.random.Generator) -> Question | None:
    """The box of a visible object's pixels, on 0-1000."""
    obj = _one(rng, scene.visible())
    if obj is None:
        return None
    box = box_1000(scene.mask(obj))
    assert box is not None
    text = localisation_text(f"the {obj.name}")
    return _q(
        scene,
        "localisation",
        "box",
        "Object Localization",
        "Object Localization",
        text,
        box_answer(box),
        {"object": obj.id, "bbox_1000": box},
    )


def _objects_to_the_side(
    scene: TableScene, visible: list[TableObject], reference: TableObject, side: str
) -> list[TableObject]:
    """The visible objects to ``side`` of ``reference`` by their centres' columns (at least
    ``MIN_COLUMN_GAP`` apart) and by their pixels' mean columns."""
    sign = -1.0 if side == "left" else 1.0
    column = {o.id: scene.project(o.centre)[0] for o in visible}
    return [
        o
        for o in visible
        if o is not reference
        and sign * (column[o.id] - column[reference.id]) >= MIN_COLUMN_GAP
        and sign * (scene.mean_column(o) - scene.mean_column(reference)) > 0
    ]


def table_multihop(scene: TableScene, rng: np.random.Generator) -> Question | None:
    """Of the objects to one side of a reference, the one closest to / farthest from the camera, with its box."""
    visible = scene.visible()
    reference = _one(rng, visible)
    if reference is None or len(visible) < 3:
        return None
    side, extreme = str(rng.choice(["left", "right"])), str(rng.choice(["closest to", "farthest from"]))
    on_side = _objects_to_the_side(scene, visible, reference, side)
    if len(on_side) < 2:
        return None
    depth = {o.id: scene.project(o.centre)[2] for o in on_side}
    ranked = sorted(on_side, key=lambda o: depth[o.id], reverse=extreme != "closest to")
    if abs(depth[ranked[0].id] - depth[ranked[1].id]) < MIN_DEPTH_GAP:
        return None
    best = ranked[0]
    others = [o for o in visible if o is not best and o is not reference]
    distractors = [others[int(i)] for i in rng.choice(len(others), size=min(3, len(others)), replace=False)]
    choices, answer = lettered_choice(rng, str(best.name), [str(o.name) for o in distractors])
    text = (
        f"From the camera's point of view, among the objects to the {side} of the {reference.name}, which one "
        f"is {extreme} the camera? <choice>{choices}</choice>{BOX_FORMAT}"
    )
    box = box_1000(scene.mask(best))
    truth = {
        "reference": reference.id,
        "side": side,
        "extreme": extreme,
        "answer_object": best.id,
        "candidates": [o.id for o in on_side],
        "depths_m": depth,
        "bbox_1000": box,
        "hops": 2,
    }
    return _q(
        scene,
        "multihop",
        "multi-choice",
        "Multi-hop Spatial Reasoning",
        f"{side} + {extreme.split()[0]}",
        text,
        answer,
        truth,
    )


TABLE_BUILDERS: dict[str, TableBuilder] = {
    "distance": table_distance,
    "depth": table_depth,
    "size": table_size,
    "counting": table_counting,
    "left_right": table_left_right,
    "camera_motion": table_camera_motion,
    "localisation": table_localisation,
    "multihop": table_multihop,
}


def family_kinds(family: str) -> tuple[str, ...]:
    """The kinds of a tabletop family: ``<family>_distance``, ..."""
    return tuple(f"{family}_{k}" for k in TABLE_BUILDERS)


def draw_table_question(
    kind: str, rng: np.random.Generator, scene_of: Callable[[int], TableScene], tries: int
) -> tuple[Question, TableScene] | None:
    """A question of ``kind`` from the first of up to ``tries`` scenes (seeds in [2**31, 2**32)) that grounds one;
    each scene is asked :data:`ASKS_PER_SCENE` times (new random choices each time: a scene costs far more
    than a question)."""
    base = kind.split("_", 1)[1]
    for _ in range(tries):
        scene = scene_of(int(rng.integers(2**31, 2**32)))
        for _ in range(ASKS_PER_SCENE):
            question = TABLE_BUILDERS[base](scene, rng)
            if question is not None:
                return question, scene
    return None


# ------------------------------------------------------------------------------------------ rendering


class MujocoView:
    """Renders one named MuJoCo camera (visual geoms only, no shadows): RGB, metric depth, geom ids, and the
    same camera moved to another pose (the model's camera pose is restored afterwards)."""

    def __init__(self, model: mujoco.MjModel, data: mujoco.MjData, camera: str, size: int) -> None:
        import mujoco

        from envs.manipulation.render import CameraRig

        self.model, self.data, self.size = model, data, size
        self.camera = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_CAMERA, camera)
        if self.camera < 0:
            raise ValueError(f"the scene has no camera {camera!r}")
        if model.cam_bodyid[self.camera] != 0:
            raise ValueError(
                f"camera {camera!r} is attached to a moving body; the corpus moves world cameras only"
            )
        self.name = camera
        self.rig = CameraRig(model, size)

    def c2w(self) -> np.ndarray:
        """The camera's pose, OpenCV axes."""
        pose = np.eye(4)
        pose[:3, :3] = self.data.cam_xmat[self.camera].reshape(3, 3) @ CV_FROM_MUJOCO
        pose[:3, 3] = self.data.cam_xpos[self.camera]
        return pose

    def fovy(self) -> float:
        return float(self.model.cam_fovy[self.camera])

    def render(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """RGB, depth (metres along the axis) and geom ids of the camera now."""
        return (
            self.rig.rgb(self.data, self.name),
            self.rig.depth(self.data, self.name),
            self.rig.segmentation(self.data, self.name),
        )

    def render_from(self, c2w: np.ndarray) -> np.ndarray:
        """RGB from the camera moved to ``c2w`` (OpenCV axes, world frame)."""
        import mujoco

        pos, quat = self.model.cam_pos[self.camera].copy(), self.model.cam_quat[self.camera].copy()
        new_quat = np.zeros(4)
        mujoco.mju_mat2Quat(new_quat, (np.asarray(c2w)[:3, :3] @ CV_FROM_MUJOCO).ravel())
        try:
            self.model.cam_pos[self.camera], self.model.cam_quat[self.camera] = c2w[:3, 3], new_quat
            mujoco.mj_kinematics(self.model, self.data)
            mujoco.mj_camlight(self.model, self.data)
            return self.rig.rgb(self.data, self.name)
        finally:
            self.model.cam_pos[self.camera], self.model.cam_quat[self.camera] = pos, quat
            mujoco.mj_kinematics(self.model, self.data)
            mujoco.mj_camlight(self.model, self.data)

    def close(self) -> None:
        self.rig.close()


def world_bounds(model: mujoco.MjModel, data: mujoco.MjData, geoms: Sequence[int]) -> np.ndarray:
    """World axis-aligned bounding box of geoms (their local boxes, rotated and translated)."""
    corners = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], dtype=np.float64)
    points = []
    for g in geoms:
        centre, half = model.geom_aabb[g, :3], model.geom_aabb[g, 3:]
        points.append((centre + half * corners) @ data.geom_xmat[g].reshape(3, 3).T + data.geom_xpos[g])
    pts = np.vstack(points)
    return np.stack([pts.min(axis=0), pts.max(axis=0)])


def unique_names(objects: list[TableObject]) -> list[TableObject]:
    """Objects whose name is shared lose it (they can be counted, never named)."""
    counts = Counter(o.name for o in objects)
    for obj in objects:
        if obj.name is not None and counts[obj.name] > 1:
            obj.name = None
    return objects
