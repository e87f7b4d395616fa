"""``python -m benchmarks.datagen.corpus``: a spatial SFT/GRPO corpus from the simulators, disjoint from every test set.

Four families, alternated item by item (``--families nav,calvin,manip,libero``; default ``nav,calvin``):
the navigation homes (below); the CALVIN play-table (:mod:`benchmarks.datagen.calvin_corpus`: seven kinds
grounded in the env's snapshot, its scenes checked by ``check_calvin_disjoint``); EB-Manipulation on
robosuite (:mod:`benchmarks.datagen.manip_corpus`) and LIBERO (:mod:`benchmarks.datagen.libero_corpus`),
eight tabletop kinds each (:mod:`benchmarks.datagen.table_corpus`), checked by ``check_manip_disjoint`` and
``check_libero_disjoint``. Every family's rows have the schema below, with ``family`` naming it;
``python -m benchmarks.datagen.corpus check CORPUS TEST_FILE...`` checks all four.
The navigation family:

SpatialScore's SpatialCorpus (Sec. 3.2) and MultihopSpatial-Train (Sec. 4) as the simulators can ground them
exactly. Nine kinds of question, asked in turn:

- the seven SpatialScore kinds of :mod:`benchmarks.datagen.nav_questions` (absolute and relative depth,
  object distance, size, counting, camera motion between two views, relative direction);
- ``localisation``: the box of one named entity, ``[x1, y1, x2, y2]`` on 0-1000, the tight box of its
  visible pixels in the entity mask;
- ``multihop``: MultihopSpatial-style two-hop questions with a box, composing relative direction and
  relative depth ("of the things to the left of the sofa, which is closest to the camera?"; bearings of
  the centres >= 10 deg from the reference's and the visible pixels on the same side), four or three
  lettered options, the answer ``(c) red mug`` and the box of that entity; the assistant turn is the
  recipe's ``Answer: (c) red mug`` / ``Bounding Box: [x1, y1, x2, y2]`` format that
  :mod:`benchmarks.posttrain.multihop_rewards` scores.

Output: a Hugging Face ``datasets.DatasetDict`` saved with ``save_to_disk`` (``train`` and ``validation``),
one row per item: ``images`` (PNG-encoded), ``messages`` (user turn with one image part per image, then
the assistant's answer: what TRL's ``SFTTrainer`` reads), ``prompt`` (the user turn alone: what
``GRPOTrainer`` reads), ``response`` and ``bbox_normalized`` (the reward functions' reference columns),
``kind``/``category``/``subcategory``/``question_type``/``answer``, ``home_seed``, ``scene_key`` and
``truth`` (JSON of the exact values behind the answer).

**Disjointness.** Every test-set generator of the project (``benchmarks.static generate``, the goal-scoring
``nav`` source, the EmbodiedBench navigation episode sets) draws its homes as
``generate_scene(rng.integers(2**31 - 1))``: seeds below 2**31 - 1. The corpus draws its homes from
:data:`CORPUS_HOME_SEEDS` = [2**31, 2**32), and a scene's seed is part of its content (``scene["seed"]``),
so no corpus home equals a test home, whatever seed the test set was generated with.
:func:`check_disjoint` proves it on data: it checks every corpus row's seed range and that no corpus
``scene_key`` appears among the test homes it is given; the tests run it against the default sets.
Item ``i`` draws everything from ``numpy.random.default_rng([CORPUS_STREAM, seed, i])``, a stream no test
generator uses (theirs are ``[seed, i]``): the same seed writes the same corpus.
"""

from __future__ import annotations

import functools
import json
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from benchmarks.core.jsonsafe import json_safe
from benchmarks.datagen.calvin_corpus import (
    CALVIN_KINDS,
    CALVIN_STREAM,
    CalvinScenes,
    Scene,
    check_calvin_disjoint,
    draw_calvin_question,
    scene_key,
)
from benchmarks.datagen.corpus_format import (
    BOX_FORMAT,
    box_1000,
    box_answer,
    is_multihop,
    json_line,
    localisation_text,
    recipe_answer,
)
from benchmarks.datagen.generate import checked_kinds, draw_question, truth_record
from benchmarks.datagen.libero_corpus import (
    LIBERO_KINDS,
    LIBERO_STREAM,
    LiberoScenes,
    NoFreeObject,
    task_order,
)
from benchmarks.datagen.manip_corpus import MANIP_KINDS, MANIP_STREAM, ManipScenes
from benchmarks.datagen.nav_questions import (
    BUILDERS,
    Builder,
    Context,
    Entity,
    Question,
    View,
    _pick,
    bearing_deg,
)
from benchmarks.datagen.table_corpus import TableScene, draw_table_question
from envs.navigation.views import HomeRenderer
from policies.config_cli import config_parser

if TYPE_CHECKING:
    from datasets import Dataset, Features
    from tqdm import tqdm

FORMAT = "spatialarena-corpus/1"
#: Corpus homes: seeds in [2**31, 2**32); test sets draw theirs below 2**31 - 1.
CORPUS_HOME_SEEDS = (2**31, 2**32)
#: First entry of every corpus item's seed sequence, so corpus streams never equal a test set's ``[seed, i]``.
CORPUS_STREAM = 20_260_131
_MIN_DEPTH_RATIO, _MIN_DEPTH_GAP = 1.25, 0.3  # as relative_depth: the nearest must be clearly nearest


# ------------------------------------------------------------------------------------- new builders


def entity_box(view: View, entity: Entity) -> list[int]:
    """Tight box of the entity's visible pixels, ``[x1, y1, x2, y2]`` on 0-1000 (edges of the pixel cells)."""
    assert view.frame.entity is not None
    box = box_1000(view.frame.entity == entity.label)
    assert box is not None, "a nameable entity has visible pixels"
    return box


def localisation(view: View, context: Context, rng: np.random.Generator) -> Question | None:
    """Where one named entity is in the image, as a box on 0-1000."""
    picked = _pick(rng, view.nameable(), 1)
    if picked is None:
        return None
    (entity,) = picked
    box = entity_box(view, entity)
    text = localisation_text(f"the {entity.name}")
    truth = {"entity": entity.id, "bbox_1000": box, "pixels": view.pixels[entity.label]}
    return Question(
        "localisation",
        "box",
        "Object Localization",
        "Object Localization",
        text,
        box_answer(box),
        [view.frame.rgb],
        truth,
        [view.c2w],
    )


def _entities_to_the_side(
    view: View, context: Context, named: list[Entity], reference: Entity, ref_bearing: float, side: str
) -> list[Entity] | None:
    """The entities at least 10 degrees to ``side`` of ``reference`` whose image columns agree; None when
    fewer than two are, or when the image disagrees with the centres (as in relative_direction)."""
    bearings = {e.label: bearing_deg(view, context, e) for e in named if e is not reference}
    sign = -1.0 if side == "left" else 1.0
    on_side = [
        e
        for e in named
        if e is not reference
        and (bearing := bearings[e.label]) is not None
        and sign * (bearing - ref_bearing) >= 10.0
    ]
    if len(on_side) < 2:
        return None
    ref_column = view.mean_column(reference)
    if any((view.mean_column(e) - ref_column) * sign <= 0 for e in on_side):
        return None
    return on_side


def _lettered_choices(best: Entity, others: list[Entity], rng: np.random.Generator) -> tuple[str, str]:
    """``best`` and up to three of ``others`` in random order: its letter and the ``(a) name, ...`` list."""
    distractors = [others[int(i)] for i in rng.choice(len(others), size=min(3, len(others)), replace=False)]
    options = [best, *distractors]
    order = [options[int(i)] for i in rng.permutation(len(options))]
    letter = "abcd"[order.index(best)]
    return letter, ", ".join(f"({'abcd'[i]}) {e.name}" for i, e in enumerate(order))


def multihop(view: View, context: Context, rng: np.random.Generator) -> Question | None:
    """Two hops: the entities on one side of a reference (hop 1, relative direction), then the nearest or
    farthest of them from the camera (hop 2, relative depth); answered with a letter and the entity's box."""
    named = view.nameable()
    if len(named) < 4:
        return None
    reference = named[int(rng.integers(len(named)))]
    ref_bearing = bearing_deg(view, context, reference)
    if ref_bearing is None:
        return None
    side, extreme = str(rng.choice(["left", "right"])), str(rng.choice(["closest to", "farthest from"]))
    on_side = _entities_to_the_side(view, context, named, reference, ref_bearing, side)
    if on_side is None:
        return None
    depths = sorted(
        ((view.median_depth(e), e) for e in on_side), key=lambda d: d[0], reverse=extreme != "closest to"
    )
    (best_depth, best), (next_depth, _) = depths[0], depths[1]
    near, far = sorted((best_depth, next_depth))
    if far < _MIN_DEPTH_RATIO * near or far - near < _MIN_DEPTH_GAP:
        return None
    letter, choices = _lettered_choices(best, [e for e in named if e is not reference and e is not best], rng)
    text = (
        f"From the camera's point of view, among the objects to the {side} of the {reference.name}, which one "
        f"is {extreme} the camera? <choice>{choices}</choice>{BOX_FORMAT}"
    )
    box = entity_box(view, best)
    truth = {
        "reference": reference.id,
        "side": side,
        "extreme": extreme,
        "answer_entity": best.id,
        "candidates": [e.id for e in on_side],
        "median_depths_m": {e.id: d for d, e in depths},
        "bbox_1000": box,
        "hops": 2,
    }
    answer = f"({letter}) {best.name}"
    return Question(
        "multihop",
        "multi-choice",
        "Multi-hop Spatial Reasoning",
        f"{side} + {extreme.split()[0]}",
        text,
        answer,
        [view.frame.rgb],
        truth,
        [view.c2w],
    )


CORPUS_BUILDERS: dict[str, Builder] = {**BUILDERS, "localisation": localisation, "multihop": multihop}
CORPUS_KINDS: tuple[str, ...] = tuple(CORPUS_BUILDERS)
#: The simulator families and their kinds (``calvin``: :mod:`benchmarks.datagen.calvin_corpus`).
FAMILY_KINDS: dict[str, tuple[str, ...]] = {
    "nav": CORPUS_KINDS,
    "calvin": CALVIN_KINDS,
    "manip": MANIP_KINDS,
    "libero": LIBERO_KINDS,
}
ALL_KINDS: tuple[str, ...] = tuple(k for kinds in FAMILY_KINDS.values() for k in kinds)
#: Scenes tried per EB-Manipulation / LIBERO item before it is given up (counted as failed).
TABLE_SCENES_PER_ITEM = 20


# ------------------------------------------------------------------------------------------ config


@dataclass
class CorpusConfig:
    """Generate a spatial SFT/GRPO corpus (Hugging Face dataset on disk) from homes no test set uses."""

    out: Path = Path()
    """New folder for the dataset (datasets.load_from_disk reads it)."""
    n: int = 1000
    """Number of items (train and validation together)."""
    validation: float = 0.05
    """Share of the items held out as the 'validation' split (the last ones)."""
    seed: int = 0
    """Seed; item i draws from numpy.random.default_rng([CORPUS_STREAM, seed, i])."""
    families: str = "nav,calvin"
    """Comma-separated simulator families, alternated item by item: nav (MuJoCo homes), calvin (play-table), manip (EB-Manipulation on robosuite), libero (LIBERO scenes)."""
    kinds: str = ",".join(ALL_KINDS)
    """Comma-separated question kinds, asked in turn within each family (default: all of every family)."""
    manip_families: str = "pick,stack,place,wipe"
    """EB-Manipulation task families whose scenes the manip family draws (each builds its own env)."""
    libero_items_per_task: int = 50
    """Consecutive corpus items that share one LIBERO task (building a task's env takes seconds)."""
    width: int = 224
    """Image width in pixels."""
    height: int = 224
    """Image height in pixels."""
    fov: float = 100.0
    """Vertical field of view in degrees (the navigation env's)."""
    min_pixels: int = 150
    """Pixels an entity must show in the segmentation render to be named in a question."""
    progress: bool = True
    """Show a progress bar on stderr: items done, items/s and the time left."""

    def kind_list(self) -> list[str]:
        """The question kinds, checked."""
        return checked_kinds(self.kinds, ALL_KINDS)

    def family_kinds(self) -> dict[str, list[str]]:
        """Each requested family and its requested kinds, checked (every family needs one kind)."""
        families = [f.strip() for f in self.families.split(",") if f.strip()]
        unknown = [f for f in families if f not in FAMILY_KINDS]
        if not families or unknown:
            raise ValueError(
                f"--families {self.families!r}: unknown {unknown or 'empty list'}; choose from {', '.join(FAMILY_KINDS)}"
            )
        kinds = self.kind_list()
        chosen = {f: [k for k in kinds if k in FAMILY_KINDS[f]] for f in dict.fromkeys(families)}
        empty = [f for f, ks in chosen.items() if not ks]
        if empty:
            raise ValueError(
                f"--kinds {self.kinds!r} has no kind of family {empty[0]!r}; add one or drop the family"
            )
        return chosen

    def item_kind(self, index: int) -> tuple[str, str]:
        """``(family, kind)`` of item ``index``: families alternate, kinds cycle within each family."""
        chosen = self.family_kinds()
        families = list(chosen)
        family = families[index % len(families)]
        kinds = chosen[family]
        return family, kinds[(index // len(families)) % len(kinds)]

    def validate(self) -> None:
        """Check the settings, with the fix in the message."""
        if self.out == Path():
            raise ValueError("--out is required: a new folder for the corpus")
        if self.out.exists() and any(self.out.iterdir()):
            raise ValueError(f"{self.out} is not empty; choose a new --out folder or delete it")
        if "manip" in self.family_kinds():
            from envs.manipulation.tasks import FAMILIES

            unknown = [f for f in self.manip_families.split(",") if f.strip() not in FAMILIES]
            if unknown or not self.manip_families.strip():
                raise ValueError(
                    f"--manip-families {self.manip_families!r}: unknown {unknown or 'empty list'}; "
                    f"choose from {', '.join(FAMILIES)}"
                )
        if self.libero_items_per_task < 1:
            raise ValueError(f"--libero-items-per-task must be at least 1, got {self.libero_items_per_task}")
        if self.n < 2 or self.min_pixels < 1:
            raise ValueError(
                f"--n must be at least 2 and --min-pixels at least 1 (got {self.n}, {self.min_pixels})"
            )
        if not 0.0 < self.validation < 1.0:
            raise ValueError(f"--validation must be in (0, 1), got {self.validation}")
        self.family_kinds()


# ------------------------------------------------------------------------------------------- rows


def chat_messages(question: Question, answer_text: str) -> list[dict[str, Any]]:
    """The user turn (one image part per image, then the question) and the assistant's answer."""
    user = [
        *({"type": "image", "text": None} for _ in question.images),
        {"type": "text", "text": question.question},
    ]
    return [
        {"role": "user", "content": user},
        {"role": "assistant", "content": [{"type": "text", "text": answer_text}]},
    ]


def assistant_text(question: Question) -> str:
    """What the model should say: the recipe's two-line format for multi-hop items, else the answer."""
    if is_multihop(question.kind):
        return recipe_answer(question.answer, question.truth["bbox_1000"])
    return question.answer


def corpus_row(index: int, question: Question, home: dict[str, Any], config: CorpusConfig) -> dict[str, Any]:
    """One navigation row (see the module docstring)."""
    truth = truth_record(index, question, home, config)  # type: ignore[arg-type]
    return _row(index, question, "nav", home["home_seed"], home["scene_key"], truth)


def _row(
    index: int, question: Question, family: str, seed: int, key: str, truth: dict[str, Any]
) -> dict[str, Any]:
    """One dataset row of any family (see the module docstring); ``truth`` is the JSON record behind it."""
    from PIL import Image

    messages = chat_messages(question, assistant_text(question))
    return {
        "index": index,
        "images": [Image.fromarray(im) for im in question.images],
        "messages": messages,
        "prompt": messages[:1],
        "response": question.answer,
        "bbox_normalized": question.truth.get("bbox_1000"),
        "kind": question.kind,
        "category": question.category,
        "subcategory": question.subcategory,
        "question_type": question.question_type,
        "answer": question.answer,
        "home_seed": seed,
        "scene_key": key,
        "truth": json.dumps(truth, sort_keys=True),
        "family": family,
    }


def calvin_row(index: int, question: Question, scene: Scene) -> dict[str, Any]:
    """One CALVIN-family row, in the nav rows' schema; ``home_seed``/``scene_key`` name the play-table scene
    and ``truth`` holds the exact values, the scene's ``scene_obs``/``robot_obs`` and the block poses."""
    scene_obs = scene.snapshot["scene_obs"]
    truth = json_safe(
        {
            "index": index,
            "kind": question.kind,
            "answer": question.answer,
            "truth": question.truth,
            "home_seed": scene.seed,
            "scene_key": scene_key(scene_obs),
            "scene_obs": scene_obs,
            "robot_obs": scene.snapshot["robot_obs"],
            "blocks": {
                c: {k: b[k] for k in ("pos", "orn_xyzw")} for c, b in scene.snapshot["blocks"].items()
            },
            "camera": "static",
        }
    )
    return _row(index, question, "calvin", scene.seed, scene_key(scene_obs), truth)


def table_row(index: int, question: Question, scene: TableScene) -> dict[str, Any]:
    """One EB-Manipulation or LIBERO row: ``truth`` holds the exact values, the scene's state (the episode, or
    the LIBERO task, initial state and object positions), every object's bounds and the camera."""
    objects = {o.id: {"name": o.name, "noun": o.noun, "bounds_m": o.bounds} for o in scene.objects}
    truth = json_safe(
        {
            "index": index,
            "kind": question.kind,
            "answer": question.answer,
            "truth": question.truth,
            "home_seed": scene.seed,
            "scene_key": scene.key,
            "scene": scene.state,
            "objects": objects,
            "c2w": scene.c2w,
            "fovy_deg": scene.fovy,
        }
    )
    return _row(index, question, scene.family, scene.seed, scene.key, truth)


def features() -> Features:
    """The dataset's schema (explicit, so empty-box rows and image-part ``None`` texts type the same)."""
    from datasets import Features, Image, List, Value

    part = {"type": Value("string"), "text": Value("string")}
    turn = {"role": Value("string"), "content": List(part)}
    return Features(
        {
            "index": Value("int64"),
            "images": List(Image()),
            "messages": List(turn),
            "prompt": List(turn),
            "response": Value("string"),
            "bbox_normalized": List(Value("int64")),
            "kind": Value("string"),
            "category": Value("string"),
            "subcategory": Value("string"),
            "question_type": Value("string"),
            "answer": Value("string"),
            "home_seed": Value("int64"),
            "scene_key": Value("string"),
            "truth": Value("string"),
            "family": Value("string"),
        }
    )


#: Homes searched per corpus item before it is given up (and counted in ``corpus.json``'s ``failed``):
#: more than the test sets' 10, since a corpus of thousands meets the rare hard multi-hop draw.
CORPUS_HOMES_PER_ITEM = 30


def corpus_rows(config: CorpusConfig, indices: Iterable[int]) -> Iterator[dict[str, Any]]:
    """The rows of the given item indices, in order (each from its own seeded stream). An item whose kind
    finds no unambiguous question in :data:`CORPUS_HOMES_PER_ITEM` homes is left out; its index is missing
    from the ``index`` column, and :func:`generate_corpus` counts it."""
    from contextlib import ExitStack

    indices = list(indices)
    plan = {index: config.item_kind(index) for index in indices}
    families = {family for family, _ in plan.values()}
    with ExitStack() as stack:  # open only the simulators the items need
        home = HomeRenderer(config.width, config.height, config.fov) if "nav" in families else None
        renderer = stack.enter_context(home) if home is not None else None
        scenes = stack.enter_context(CalvinScenes()) if "calvin" in families else None
        manip_families = tuple(f.strip() for f in config.manip_families.split(",") if f.strip())
        manip = (
            stack.enter_context(ManipScenes(config.width, manip_families)) if "manip" in families else None
        )
        libero = stack.enter_context(LiberoScenes(config.width)) if "libero" in families else None
        tasks = task_order(config.seed) if libero is not None else []
        for index in indices:
            family, kind = plan[index]
            if family in ("manip", "libero"):
                row = _table_row(config, index, family, kind, manip, libero, tasks)
            elif family == "calvin":
                calvin_rng = np.random.default_rng([CALVIN_STREAM, config.seed, index])
                assert scenes is not None  # opened whenever the family is drawn
                drawn = draw_calvin_question(kind, calvin_rng, scenes)
                row = calvin_row(index, *drawn) if drawn is not None else None
            else:
                assert renderer is not None
                row = _home_row(config, index, kind, renderer)
            if row is not None:
                yield row


def _table_row(
    config: CorpusConfig,
    index: int,
    family: str,
    kind: str,
    manip: ManipScenes | None,
    libero: LiberoScenes | None,
    tasks: list[tuple[str, int]],
) -> dict[str, Any] | None:
    """Item ``index`` of a table-top family (``manip`` or ``libero``); None when it finds no question."""
    stream = MANIP_STREAM if family == "manip" else LIBERO_STREAM
    table_rng = np.random.default_rng([stream, config.seed, index])
    scene_of: Callable[[int], TableScene]
    if family == "manip":
        assert manip is not None  # built whenever the family is drawn
        scene_of = manip.scene
    else:
        assert libero is not None
        scene_of = functools.partial(
            libero.scene, task=tasks[(index // config.libero_items_per_task) % len(tasks)]
        )
    try:
        found = draw_table_question(kind, table_rng, scene_of, TABLE_SCENES_PER_ITEM)
    except NoFreeObject:  # such a task grounds no corpus scene: the item is given up (counted)
        return None
    return table_row(index, *found) if found is not None else None


def _home_row(config: CorpusConfig, index: int, kind: str, renderer: HomeRenderer) -> dict[str, Any] | None:
    """Item ``index`` of the navigation family, drawn in the rendered homes; None when it finds no question."""
    from policies.config_cli import InputError

    rng = np.random.default_rng([CORPUS_STREAM, config.seed, index])
    try:
        question, home = draw_question(
            kind, rng, renderer, config.min_pixels, CORPUS_BUILDERS, CORPUS_HOME_SEEDS, CORPUS_HOMES_PER_ITEM
        )
    except InputError:
        return None
    return corpus_row(index, question, home, config)


def corpus_progress(config: CorpusConfig, total: int) -> tqdm:
    """The progress bar of a corpus run (tqdm on stderr): items done, items/s and the time left. The rate
    settles after each simulator is built (EB-Manipulation: seconds per task family; LIBERO: per task)."""
    from tqdm import tqdm

    return tqdm(
        total=total,
        desc="corpus items",
        unit="item",
        file=sys.stderr,
        disable=not config.progress,
        dynamic_ncols=True,
        mininterval=1.0,
        smoothing=0.05,
    )


def _split(config: CorpusConfig, indices: list[int], cache: str) -> Dataset:
    """The items as a dataset; when every item failed, an empty dataset (the caller counts and refuses it)."""
    from datasets import Dataset
    from datasets.exceptions import DatasetGenerationError

    made: list[int] = []

    def rows(config: CorpusConfig, indices: Sequence[int]) -> Iterator[dict[str, Any]]:
        with corpus_progress(config, len(indices)) as bar:
            position = {index: p for p, index in enumerate(indices)}
            for row in corpus_rows(config, indices):
                made.append(row["index"])
                bar.update(position[row["index"]] + 1 - bar.n)  # items given up count as done
                yield row
            bar.update(len(indices) - bar.n)

    try:
        return Dataset.from_generator(
            rows,
            features=features(),
            cache_dir=cache,
            gen_kwargs={"config": config, "indices": tuple(indices)},
        )
    except DatasetGenerationError as error:  # datasets wraps the generator's own error: show that one
        if isinstance(error.__cause__, ValueError):
            raise error.__cause__ from None
        raise
    except ValueError:  # datasets refuses a generator that yields nothing
        if made:
            raise
        schema = features()
        return Dataset.from_dict({name: [] for name in schema}, features=schema)


def generate_corpus(config: CorpusConfig) -> dict[str, Any]:
    """Write the corpus; returns the stats written to ``corpus.json`` (items/s, category mix)."""
    from datasets import DatasetDict

    config.validate()
    n_val = max(1, round(config.n * config.validation))
    boundary = config.n - n_val
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="corpus-cache-") as cache:
        # one pass over every item (each simulator is opened once), then split by item index
        rows = _split(config, list(range(config.n)), cache)
        built = DatasetDict(
            {
                "train": rows.filter(lambda i: i < boundary, input_columns="index"),
                "validation": rows.filter(lambda i: i >= boundary, input_columns="index"),
            }
        )
        seconds = time.perf_counter() - start
        built.save_to_disk(str(config.out))
    mix = Counter(built["train"]["kind"]) + Counter(built["validation"]["kind"])
    family_mix = Counter(built["train"]["family"]) + Counter(built["validation"]["family"])
    category_mix = Counter(built["train"]["category"]) + Counter(built["validation"]["category"])
    present = set(built["train"]["index"]) | set(built["validation"]["index"])
    failed = [i for i in range(config.n) if i not in present]
    if len(failed) == config.n:
        raise ValueError(f"no item of kinds {config.kinds} could be generated; lower --min-pixels")
    stats = {
        "format": FORMAT,
        **asdict(config),
        "out": None,
        "kinds": config.kind_list(),
        "families": list(config.family_kinds()),
        "home_seeds": list(CORPUS_HOME_SEEDS),
        "splits": {k: len(v) for k, v in built.items()},
        "failed": {"count": len(failed), "indices": failed},
        "seconds": round(seconds, 2),
        "items_per_second": round((config.n - len(failed)) / seconds, 3),
        "kind_mix": dict(sorted(mix.items())),
        "family_mix": dict(sorted(family_mix.items())),
        "category_mix": dict(sorted(category_mix.items())),
    }
    (config.out / "corpus.json").write_text(json.dumps(stats, indent=2) + "\n", encoding="utf-8")
    return stats


# ---------------------------------------------------------------------------------------- checking


def check_disjoint(corpus_homes: Iterable[tuple[int, str]], test_homes: Iterable[tuple[int, str]]) -> int:
    """Prove a corpus shares no home with test sets: every corpus ``(home_seed, scene_key)`` has its seed in
    :data:`CORPUS_HOME_SEEDS`, every test seed is below it, and no scene key is shared. Returns the number of
    corpus homes checked; raises ``ValueError`` naming the first offending home."""
    test = list(test_homes)
    low, high = CORPUS_HOME_SEEDS
    for seed, key in test:
        if seed >= low:
            raise ValueError(f"test home seed {seed} (scene {key}) lies in the corpus range [{low}, {high})")
    test_keys = {key for _, key in test}
    n = 0
    for seed, key in corpus_homes:
        if not low <= seed < high:
            raise ValueError(
                f"corpus home seed {seed} (scene {key}) is outside [{low}, {high}); regenerate the corpus"
            )
        if key in test_keys:
            raise ValueError(f"corpus scene {key} (seed {seed}) is also a test scene; regenerate the corpus")
        n += 1
    return n


def _dataset_parts(path: str | Path) -> list[Dataset]:
    from datasets import load_from_disk

    loaded = load_from_disk(str(path))
    return list(loaded.values()) if isinstance(loaded, Mapping) else [loaded]


def _families(part: Dataset) -> list[str]:
    """Each row's family (corpora written before the CALVIN family have no column: all nav)."""
    return list(part["family"]) if "family" in part.column_names else ["nav"] * len(part)


def dataset_homes(path: str | Path) -> list[tuple[int, str]]:
    """``(home_seed, scene_key)`` of every navigation row of a corpus on disk (all splits)."""
    return [
        (int(s), str(k))
        for part in _dataset_parts(path)
        for s, k, f in zip(part["home_seed"], part["scene_key"], _families(part))
        if f == "nav"
    ]


def dataset_calvin_scenes(path: str | Path) -> list[tuple[int, str, list[float]]]:
    """``(home_seed, scene_key, scene_obs)`` of every CALVIN row of a corpus on disk (all splits)."""
    return [
        (int(s), str(k), json.loads(t)["scene_obs"])
        for part in _dataset_parts(path)
        for s, k, t, f in zip(part["home_seed"], part["scene_key"], part["truth"], _families(part))
        if f == "calvin"
    ]


def dataset_table_scenes(path: str | Path, family: str) -> list[tuple[int, str, dict[str, Any]]]:
    """``(home_seed, scene_key, scene state)`` of every ``family`` row (manip or libero) of a corpus on disk."""
    return [
        (int(s), str(k), json.loads(t)["scene"])
        for part in _dataset_parts(path)
        for s, k, t, f in zip(part["home_seed"], part["scene_key"], part["truth"], _families(part))
        if f == family
    ]


def check_all(corpus: str | Path, test_files: list[str]) -> str:
    """Check every family of a corpus against the test sets (see each family's checker); the summary line."""
    from benchmarks.datagen.libero_corpus import check_libero_disjoint
    from benchmarks.datagen.manip_corpus import check_manip_disjoint, default_test_keys, episode_file_keys

    test = [home for path in test_files for home in truth_file_homes(path)]
    n = check_disjoint(dataset_homes(corpus), test)
    n_calvin = check_calvin_disjoint(dataset_calvin_scenes(corpus))
    manip_rows = dataset_table_scenes(corpus, "manip")
    n_manip = 0
    if manip_rows:
        keys = default_test_keys() | {k for path in test_files for k in episode_file_keys(path)}
        n_manip = check_manip_disjoint(
            [(seed, key, state["episode"]) for seed, key, state in manip_rows], keys
        )
    libero_rows = dataset_table_scenes(corpus, "libero")
    n_libero = check_libero_disjoint(libero_rows) if libero_rows else 0
    return (
        f"disjoint: {n} corpus items, {len(test)} test items, no shared home; "
        f"{n_calvin} CALVIN corpus scenes, none an evaluation or manip-source scene; "
        f"{n_manip} EB-Manipulation corpus scenes, none a test episode; "
        f"{n_libero} LIBERO corpus scenes, none a fixed initial state"
    )


def truth_file_homes(path: str | Path) -> list[tuple[int, str]]:
    """``(home_seed, scene_key)`` of every item of a generated test set (``ground_truth.jsonl`` or a
    goal-scoring ``samples.jsonl`` whose records carry them)."""
    homes = []
    for number, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        record = json_line(path, number, line)
        meta = record.get("metadata", record)
        if "home_seed" in meta:
            homes.append((int(meta["home_seed"]), str(meta["scene_key"])))
    return homes


def main(argv: list[str] | None = None) -> int:
    """``python -m benchmarks.datagen.corpus --out DIR [--n 1000] [--seed 0] [--kinds ...]`` (or ``check``)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["check"]:
        if len(argv) < 3:
            print(
                "usage: python -m benchmarks.datagen.corpus check CORPUS_DIR TEST_FILE.jsonl [...] "
                "(ground_truth.jsonl, goal-scoring samples.jsonl or EB-Manipulation episode files)",
                file=sys.stderr,
            )
            return 2
        try:
            print(check_all(argv[1], argv[2:]))
        except (ValueError, OSError, FileNotFoundError) as error:
            print(f"error: {error}", file=sys.stderr)
            return 1
        return 0
    parser = config_parser(CorpusConfig, "python -m benchmarks.datagen.corpus")
    config = CorpusConfig(**vars(parser.parse_args(argv)))
    try:
        stats = generate_corpus(config)
    except (ValueError, RuntimeError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(json.dumps(stats, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
