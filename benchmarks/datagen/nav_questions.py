"""SpatialScore-style questions about views of the navigation env's homes, with exact ground truth.

A :class:`View` is one render (RGB, metric depth, entity mask) of a generated home. An entity (a target
object or a piece of furniture) may be named in a question only when it is *visible* (at least
``min_pixels`` pixels of it in the mask) and its name is *unique* in the view (no other entity of that
name shows a single pixel). Objects are named by colour and category ("the red mug": a home holds one
object per category), furniture by its kind ("the sofa"). Lamps are never named or counted: every room
also has a ceiling lamp, which is structure, not an entity.

Seven question kinds, each a function ``(view, context, rng) -> Question | None`` (``None`` when the
view offers nothing unambiguous to ask), with the wording of the SpatialScore sources they imitate:

| kind | type | ground truth |
|---|---|---|
| absolute_depth | open-ended, metres | median depth render over the object's visible pixels |
| relative_depth | multi-choice | the two objects' median depths (>= 25 % and >= 0.3 m apart) |
| object_distance | open-ended, metres | least distance between the two entities' surfaces (geoms) |
| object_size | open-ended, centimetres | largest extent of the entity along its own axes |
| counting | multi-choice | visible entities of a category (none partly visible below the threshold) |
| camera_motion | multi-choice, two images | the one primitive the camera made between the renders |
| relative_direction | judgment or multi-choice | horizontal angles of the two entities' centres (>= 10 deg apart, in the image, and ordered as their visible pixels) |

An eighth kind, ``closest_object`` (multi-choice, four options: which entity is nearest the camera, by
median depth, 25 % and 0.3 m nearer than the next), is not in SpatialScore's default set; the sample sets
of other benchmarks' formats (:mod:`benchmarks.datagen.sample_formats`) ask it (``ALL_BUILDERS``), with the answer's box.
A multi-choice question keeps its option texts in shown order (``options``); a question about one entity
keeps that entity's visible box in the first image (``region``, ``[x, y, w, h]`` pixels).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from action_mapping import Category, Primitive, StepMotion
from envs.navigation import measure
from envs.navigation.camera import c2w_from_pose, pose_from_c2w, project, view_overlap
from envs.navigation.catalog import CATEGORIES
from envs.navigation.entities import UNNAMEABLE_NOUNS, Entity, plural
from envs.navigation.render import Frame
from envs.navigation.views import HomeRenderer, move_problem
from envs.navigation.world import AgentPose

LETTERS = "ABCD"
#: The sentence before a multi-choice question's options (dropped where a format asks for a number instead).
SELECT = "Select from the following choices."
CAMERA_MOTION_TEXT: dict[Primitive, str] = {
    Primitive.DOLLY_IN: "The camera moved forward",
    Primitive.DOLLY_OUT: "The camera moved backward",
    Primitive.TRUCK_LEFT: "The camera moved to the left",
    Primitive.TRUCK_RIGHT: "The camera moved to the right",
    Primitive.PEDESTAL_UP: "The camera moved up",
    Primitive.PEDESTAL_DOWN: "The camera moved down",
    Primitive.PAN_LEFT: "The camera turned left",
    Primitive.PAN_RIGHT: "The camera turned right",
    Primitive.TILT_UP: "The camera tilted up",
    Primitive.TILT_DOWN: "The camera tilted down",
    Primitive.ROLL_CW: "The camera rolled clockwise",
    Primitive.ROLL_CCW: "The camera rolled counter-clockwise",
}

CAMERA_MOTION_QUESTION = (
    "The two images were taken by the same camera, the second one after a single movement. How did the "
    "camera move between the first image and the second?"
)


def wrong_camera_motions(rng: np.random.Generator, primitive: Primitive) -> list[Primitive]:
    """The distractors of a camera-motion question: the opposite motion and two others drawn at random."""
    opposite = next(
        p
        for p in CAMERA_MOTION_TEXT
        if p.category is primitive.category and p.axis == primitive.axis and p is not primitive
    )
    others = [p for p in CAMERA_MOTION_TEXT if p not in (primitive, opposite)]
    return [opposite, *(others[int(i)] for i in rng.choice(len(others), size=2, replace=False))]


# Size of the one motion of a camera-motion question: metres (translations) or degrees (rotations).
MOTION_RANGE: dict[tuple[Category, int], tuple[float, float]] = {
    (Category.TRANSLATION, 2): (0.5, 1.0),
    (Category.TRANSLATION, 0): (0.4, 0.8),
    (Category.TRANSLATION, 1): (0.3, 0.5),
    (Category.ROTATION, 1): (20.0, 35.0),
    (Category.ROTATION, 0): (15.0, 25.0),
    (Category.ROTATION, 2): (15.0, 30.0),
}
# ----------------------------------------------------------------------------------------------- views


@dataclass
class View:
    """One render of a home with the pixel count of every entity in it."""

    pose: AgentPose
    frame: Frame
    entities: list[Entity]
    min_pixels: int
    pixels: dict[int, int] = field(init=False)

    def __post_init__(self) -> None:
        assert self.frame.entity is not None and self.frame.depth is not None
        counts = np.bincount(self.frame.entity.ravel(), minlength=len(self.entities) + 1)
        self.pixels = {e.label: int(counts[e.label]) for e in self.entities}

    @property
    def c2w(self) -> np.ndarray:
        return c2w_from_pose(self.pose)

    def nameable(self, kind: str | None = None) -> list[Entity]:
        """Visible entities whose name no other entity in the view shares (optionally of one kind)."""
        shown = Counter(e.name for e in self.entities if self.pixels[e.label] > 0)
        return [
            e
            for e in self.entities
            if self.pixels[e.label] >= self.min_pixels
            and shown[e.name] == 1
            and (kind is None or e.kind == kind)
            and e.noun not in UNNAMEABLE_NOUNS
        ]

    def mean_column(self, entity: Entity) -> float:
        """Mean image column of the entity's visible pixels."""
        assert self.frame.entity is not None
        return float(np.nonzero(self.frame.entity == entity.label)[1].mean())

    def box(self, entity: Entity) -> list[float]:
        """The entity's visible pixels' bounding box, ``[x, y, w, h]`` in pixels."""
        assert self.frame.entity is not None
        rows, cols = np.nonzero(self.frame.entity == entity.label)
        return [
            float(cols.min()),
            float(rows.min()),
            float(cols.max() - cols.min() + 1),
            float(rows.max() - rows.min() + 1),
        ]

    def median_depth(self, entity: Entity) -> float:
        """Median of the depth render over the entity's visible pixels (metres)."""
        assert self.frame.depth is not None and self.frame.entity is not None
        return float(np.median(self.frame.depth[self.frame.entity == entity.label]))


@dataclass
class Context:
    """What question builders need besides the view: the home and its renderer."""

    renderer: HomeRenderer
    min_overlap: float = 0.3  # camera-motion questions: share of the second view the first one sees


@dataclass
class Question:
    """One generated item: SpatialScore fields, its images, and the exact values behind the answer."""

    kind: str
    question_type: str
    category: str
    subcategory: str
    question: str
    answer: str
    images: list[np.ndarray]
    truth: dict[str, Any]
    cameras: list[np.ndarray]
    options: list[str] = field(default_factory=list)
    region: list[float] | None = None

    @property
    def stem(self) -> str:
        """The question without its options block."""
        return self.question[: -len(_options(self.options)) - 1] if self.options else self.question


def _options(texts: list[str]) -> str:
    return "\n".join(f"({LETTERS[i]}) {t}" for i, t in enumerate(texts))


def _shuffled_choice(rng: np.random.Generator, right: str, wrong: list[str]) -> tuple[list[str], str]:
    """Shuffled option texts and the right letter as SpatialScore writes it, e.g. ``"(B)"``."""
    texts = [right, *wrong]
    order = rng.permutation(len(texts))
    shuffled = [texts[int(i)] for i in order]
    return shuffled, f"({LETTERS[shuffled.index(right)]})"


def _multi_choice(rng: np.random.Generator, right: str, wrong: list[str]) -> tuple[str, str]:
    """Shuffled options text and the right letter as SpatialScore writes it, e.g. ``"(B)"``."""
    shuffled, answer = _shuffled_choice(rng, right, wrong)
    return _options(shuffled), answer


def _pick(rng: np.random.Generator, entities: list[Entity], k: int) -> list[Entity] | None:
    if len(entities) < k:
        return None
    return [entities[int(i)] for i in rng.choice(len(entities), size=k, replace=False)]


# ------------------------------------------------------------------------------------------ builders


def absolute_depth(view: View, context: Context, rng: np.random.Generator) -> Question | None:
    """How far an object is from the camera along the optical axis (median of its visible depth)."""
    picked = _pick(rng, view.nameable("object"), 1)
    if picked is None:
        return None
    (obj,) = picked
    depth = view.median_depth(obj)
    text = (
        f"What is the depth of the {obj.name} in the image, i.e. its distance from the camera along the "
        f"viewing direction, taken as the median over its visible surface? Answer in meters."
    )
    truth = {"entity": obj.id, "median_depth_m": depth, "pixels": view.pixels[obj.label]}
    return Question(
        "absolute_depth",
        "open-ended",
        "Depth and Distance",
        "Absolute Depth",
        text,
        f"{depth:.2f}",
        [view.frame.rgb],
        truth,
        [view.c2w],
        region=view.box(obj),
    )


def relative_depth(view: View, context: Context, rng: np.random.Generator) -> Question | None:
    """Which of two objects is closer to the camera (clearly: 25 % and 0.3 m apart)."""
    picked = _pick(rng, view.nameable("object"), 2)
    if picked is None:
        return None
    depths = [view.median_depth(e) for e in picked]
    near, far = (0, 1) if depths[0] < depths[1] else (1, 0)
    if depths[far] < 1.25 * depths[near] or depths[far] - depths[near] < 0.3:
        return None
    a, b = picked
    options = [a.name, b.name]
    text = f"Which object is closer to the camera taking this photo, the {a.name} or the {b.name}?\n{_options(options)}"
    truth = {"entities": [a.id, b.id], "median_depths_m": depths}
    return Question(
        "relative_depth",
        "multi-choice",
        "Depth and Distance",
        "Relative Depth",
        text,
        f"({LETTERS[near]})",
        [view.frame.rgb],
        truth,
        [view.c2w],
        options,
        view.box(picked[near]),
    )


def object_distance(view: View, context: Context, rng: np.random.Generator) -> Question | None:
    """Least distance between the surfaces of two visible entities (at least 0.2 m: MRA needs a non-zero truth)."""
    picked = _pick(rng, view.nameable(), 2)
    if picked is None:
        return None
    a, b = picked
    distance = measure.closest_distance(context.renderer.world, a.label, b.label)
    if distance < 0.2:
        return None
    text = (
        f"Measuring from the closest point of each object, what is the distance between the {a.name} and "
        f"the {b.name} (in meters)?"
    )
    truth = {"entities": [a.id, b.id], "distance_m": distance}
    return Question(
        "object_distance",
        "open-ended",
        "Depth and Distance",
        "Object Distance",
        text,
        f"{distance:.2f}",
        [view.frame.rgb],
        truth,
        [view.c2w],
    )


def object_size(view: View, context: Context, rng: np.random.Generator) -> Question | None:
    """The longest of an entity's length, width and height, in centimetres."""
    picked = _pick(rng, view.nameable(), 1)
    if picked is None:
        return None
    (entity,) = picked
    dims = measure.extents(context.renderer.world, entity.label)
    text = (
        f"What is the length of the longest dimension (length, width, or height) of the {entity.name}, "
        "measured in centimeters?"
    )
    truth = {"entity": entity.id, "extents_m": dims.tolist(), "longest_m": float(dims.max())}
    return Question(
        "object_size",
        "open-ended",
        "Object Properties",
        "Size",
        text,
        f"{round(100 * dims.max())}",
        [view.frame.rgb],
        truth,
        [view.c2w],
        region=view.box(entity),
    )


def _category_counts(view: View) -> dict[str, int | None]:
    """Visible entities per category noun; ``None`` where one shows but below the pixel threshold."""
    counts: dict[str, int | None] = {}
    for e in view.entities:
        px, known = view.pixels[e.label], counts.get(e.noun, 0)
        if known is None or 0 < px < view.min_pixels:
            counts[e.noun] = None
        else:
            counts[e.noun] = known + int(px >= view.min_pixels)
    for noun in [c.noun for c in CATEGORIES.values()]:
        counts.setdefault(noun, 0)  # categories the home does not have: none visible
    return counts


def counting(view: View, context: Context, rng: np.random.Generator) -> Question | None:
    """How many entities of a category the image shows (several when the view has a group, often one,
    sometimes none)."""
    counts = {
        noun: n
        for noun, n in _category_counts(view).items()
        if n is not None and noun not in UNNAMEABLE_NOUNS
    }
    several, one = [c for c, n in counts.items() if n >= 2], [c for c, n in counts.items() if n == 1]
    none = [c for c, n in counts.items() if n == 0]
    pools = [p for p in (several, several, one, none) if p]  # several twice as likely as one or none
    pool = pools[int(rng.integers(len(pools)))]
    noun = pool[int(rng.integers(len(pool)))]
    n = counts[noun]
    choices = [str(k) for k in (range(4) if n <= 3 else range(n - 2, n + 2))]
    options, answer = _shuffled_choice(rng, str(n), [c for c in choices if c != str(n)])
    text = f"How many {plural(noun)} are in the image? {SELECT}\n{_options(options)}"
    truth = {
        "noun": noun,
        "count": n,
        "entities": [e.id for e in view.entities if e.noun == noun and view.pixels[e.label]],
    }
    return Question(
        "counting",
        "multi-choice",
        "Counting",
        "Object Counting",
        text,
        answer,
        [view.frame.rgb],
        truth,
        [view.c2w],
        options,
    )


def _single_motion(primitive: Primitive, amount: float) -> np.ndarray:
    """The 4x4 camera-frame motion of one primitive (metres, or degrees for rotations)."""
    vector = np.zeros(3)
    vector[primitive.motion_axis] = primitive.sign * (
        amount if primitive.category is Category.TRANSLATION else math.radians(amount)
    )
    if primitive.category is Category.TRANSLATION:
        return StepMotion(vector, np.zeros(3)).as_matrix()
    return StepMotion(np.zeros(3), vector).as_matrix()


def camera_motion(view: View, context: Context, rng: np.random.Generator) -> Question | None:
    """Which single primitive the camera made between two renders (the opposite move is always an option)."""
    primitive = list(CAMERA_MOTION_TEXT)[int(rng.integers(len(CAMERA_MOTION_TEXT)))]
    amount = float(rng.uniform(*MOTION_RANGE[(primitive.category, primitive.motion_axis)]))
    start = view.c2w
    goal = c2w_from_pose(pose_from_c2w(start @ _single_motion(primitive, amount)))
    if move_problem(context.renderer.world, start, goal) is not None:
        return None
    second = context.renderer.render(pose_from_c2w(goal), entity=False)
    assert second.depth is not None and view.frame.depth is not None  # rendered with depth
    overlap = view_overlap(second.depth, goal, view.frame.depth, start, context.renderer.intrinsics)
    if overlap < context.min_overlap:
        return None
    wrong = wrong_camera_motions(rng, primitive)
    options, answer = _shuffled_choice(
        rng, CAMERA_MOTION_TEXT[primitive], [CAMERA_MOTION_TEXT[p] for p in wrong]
    )
    text = f"{CAMERA_MOTION_QUESTION}\n{_options(options)}"
    truth = {
        "primitive": primitive.value,
        "amount": amount,
        "unit": "m" if primitive.category is Category.TRANSLATION else "deg",
        "overlap": overlap,
    }
    return Question(
        "camera_motion",
        "multi-choice",
        "Camera and Image Transformation",
        "Camera Motion",
        text,
        answer,
        [view.frame.rgb, second.rgb],
        truth,
        [start, goal],
        options,
    )


def bearing_deg(view: View, context: Context, entity: Entity) -> float | None:
    """Horizontal angle (degrees, positive to the right) of an entity's centre seen from the camera;
    ``None`` when the centre is outside the image."""
    centre = measure.centre(context.renderer.world, entity.label)
    u, v, z = project(centre, context.renderer.intrinsics, view.c2w)
    intr = context.renderer.intrinsics
    if not (z > 0.05 and 0 <= u < intr.width and 0 <= v < intr.height):
        return None
    x = (centre - view.c2w[:3, 3]) @ view.c2w[:3, :3]
    return math.degrees(math.atan2(x[0], x[2]))


def relative_direction(view: View, context: Context, rng: np.random.Generator) -> Question | None:
    """Is one entity left or right of another from the camera's viewpoint (centres >= 10 deg apart)."""
    picked = _pick(rng, view.nameable(), 2)
    if picked is None:
        return None
    a, b = picked
    first, second = (bearing_deg(view, context, e) for e in picked)
    if first is None or second is None or abs(first - second) < 10.0:
        return None
    angles = [first, second]
    columns = [view.mean_column(e) for e in picked]  # what the image shows must agree with the centres
    if (columns[0] < columns[1]) != (first < second):
        return None
    side = "left" if angles[0] < angles[1] else "right"
    truth = {"entities": [a.id, b.id], "bearings_deg": angles, "side_of_first": side}
    if rng.random() < 0.5:
        asked = str(rng.choice(["left", "right"]))
        text = f"From the camera's point of view, is the {a.name} to the {asked} of the {b.name}? Answer with Yes or No."
        return Question(
            "relative_direction",
            "judgment",
            "3D Positional Relation",
            "Relative Direction",
            text,
            "Yes" if asked == side else "No",
            [view.frame.rgb],
            truth,
            [view.c2w],
            region=view.box(a),
        )
    options = ["left", "right"]
    text = (
        f"Considering the relative positions of the {a.name} and the {b.name} in the image provided, where is "
        f"the {a.name} located with respect to the {b.name}? {SELECT}\n{_options(options)}"
    )
    return Question(
        "relative_direction",
        "multi-choice",
        "3D Positional Relation",
        "Relative Direction",
        text,
        "(A)" if side == "left" else "(B)",
        [view.frame.rgb],
        truth,
        [view.c2w],
        options,
        view.box(a),
    )


def closest_object(view: View, context: Context, rng: np.random.Generator) -> Question | None:
    """Which of four visible entities is nearest the camera (median depths; 25 % and 0.3 m nearer than the next)."""
    picked = _pick(rng, view.nameable(), 4)
    if picked is None:
        return None
    depths = [view.median_depth(e) for e in picked]
    nearest, second = (int(i) for i in np.argsort(depths)[:2])
    if depths[second] < 1.25 * depths[nearest] or depths[second] - depths[nearest] < 0.3:
        return None
    options = [e.name for e in picked]
    text = f"Which object is closest to the camera taking this photo?\n{_options(options)}"
    truth = {"entities": [e.id for e in picked], "median_depths_m": depths}
    return Question(
        "closest_object",
        "multi-choice",
        "Depth and Distance",
        "Relative Depth",
        text,
        f"({LETTERS[nearest]})",
        [view.frame.rgb],
        truth,
        [view.c2w],
        options,
        view.box(picked[nearest]),
    )


#: A question builder: ``(view, context, rng) -> Question | None``.
Builder = Callable[[View, Context, np.random.Generator], "Question | None"]
BUILDERS: dict[str, Builder] = {
    "absolute_depth": absolute_depth,
    "relative_depth": relative_depth,
    "object_distance": object_distance,
    "object_size": object_size,
    "counting": counting,
    "camera_motion": camera_motion,
    "relative_direction": relative_direction,
}
KINDS: tuple[str, ...] = tuple(BUILDERS)
#: Every kind ``generate`` can ask: SpatialScore's seven and ``closest_object`` (the other formats' sample
#: sets).
ALL_BUILDERS: dict[str, Builder] = {**BUILDERS, "closest_object": closest_object}
