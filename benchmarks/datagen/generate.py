"""``python -m benchmarks.static generate``: fresh test sets from the navigation homes, with exact answers,
in the file layout of any of the five static benchmarks (``--format``, default ``spatialscore``).

Writes, in a new folder ``--out``:

- the benchmark's data in its own layout (:mod:`benchmarks.datagen.sample_formats`): for ``spatialscore``,
  ``SpatialScore.json`` in SpatialScore's public format (``index``, ``category``, ``subcategory``,
  ``question_type``, ``input_modality``, ``question`` with its options, ``answer``, ``img_paths``,
  ``source``) with the renders in ``images/``; for ``space10``, ``multihop``, ``spatialtree`` and
  ``vsibench``, the layout their loaders read, so ``python -m benchmarks.static --bench NAME --data PATH``
  runs and scores them like the originals (the command is printed);
- ``ground_truth.jsonl``: per item, the exact values behind the answer (unrounded depths, distances,
  extents, bearings, the motion), the home's seed and content key, and the camera-to-world matrix of each
  image (OpenCV frame), so every answer can be re-derived from the simulator;
- ``generation.json``: the settings.

Item ``i`` asks question kind ``kinds[i % len(kinds)]`` and draws everything (home, view, question)
from ``numpy.random.default_rng([seed, i])``: the same seed writes byte-identical files, and any prefix
regenerates alone. A question the format cannot express (a yes/no question for a letter-only benchmark)
is redrawn from the same stream.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.core.jsonsafe import json_safe
from benchmarks.datagen.nav_questions import (
    ALL_BUILDERS,
    BUILDERS,
    Builder,
    Context,
    Question,
    View,
)
from benchmarks.datagen.sample_formats import SOURCE, SampleFormat, sample_format
from envs.navigation import measure
from envs.navigation.entities import Entity, home_entities
from envs.navigation.scene import generate_scene, scene_key
from envs.navigation.views import HomeRenderer, sample_view
from policies.config_cli import InputError, config_parser

FORMAT = "spatialarena-simqa/1"
TRUTH_FILE = "ground_truth.jsonl"
_HOMES_PER_ITEM = 10  # search budget: homes, and views in each, before an item gives up
_VIEWS_PER_HOME = 8
_AIM_AT_OBJECT = 0.8  # share of views aimed at an entity of the home (the rest look anywhere)


def checked_kinds(text: str, known: Sequence[str]) -> list[str]:
    """``--kinds``' comma-separated names, each one of ``known`` (one-line error naming the unknown ones)."""
    kinds = [k.strip() for k in text.split(",") if k.strip()]
    unknown = [k for k in kinds if k not in known]
    if not kinds or unknown:
        raise ValueError(
            f"--kinds {text!r}: unknown {unknown or 'empty list'}; choose from {', '.join(known)}"
        )
    return kinds


@dataclass
class GenerateConfig:
    """Generate test sets with exact ground truth from the navigation env's homes, in a static benchmark's own layout."""

    out: Path = Path()
    """New folder for the data (the format's layout), ground_truth.jsonl and generation.json."""
    format: str = "spatialscore"
    """File layout: spatialscore, space10, multihop, spatialtree or vsibench (each asks the kinds its benchmark can express)."""
    n: int = 200
    """Number of items."""
    seed: int = 0
    """Seed; item i draws from numpy.random.default_rng([seed, i])."""
    kinds: str = ""
    """Comma-separated question kinds, asked in turn (default: every kind the format can ask; spatialscore: all seven)."""
    width: int = 224
    """Image width in pixels."""
    height: int = 224
    """Image height in pixels."""
    fov: float = 100.0
    """Vertical field of view in degrees (the navigation env's)."""
    min_pixels: int = 150
    """Pixels an entity must show in the segmentation render to be named in a question."""

    def sample_format(self) -> SampleFormat:
        """The ``--format``, checked."""
        return sample_format(self.format)

    def kind_list(self) -> list[str]:
        """The question kinds, checked against what the format can ask."""
        known = self.sample_format().kinds
        return checked_kinds(self.kinds, known) if self.kinds else list(known)

    def validate(self) -> None:
        """Check the settings, with the fix in the message."""
        if self.out == Path():
            raise ValueError("--out is required: a new folder for the generated set")
        data = self.sample_format().data
        if (self.out / data).exists():
            raise ValueError(f"{self.out} already holds {data}; choose a new --out folder or delete it")
        if self.n < 1 or self.min_pixels < 1:
            raise ValueError(f"--n and --min-pixels must be at least 1 (got {self.n}, {self.min_pixels})")
        self.kind_list()


#: Home seeds every test-set generator draws from (``rng.integers(2**31 - 1)``): [0, 2**31 - 1).
TEST_HOME_SEEDS = (0, 2**31 - 1)


def draw_question(
    kind: str,
    rng: np.random.Generator,
    renderer: HomeRenderer,
    min_pixels: int,
    builders: Mapping[str, Builder] = BUILDERS,
    home_seeds: tuple[int, int] = TEST_HOME_SEEDS,
    max_homes: int = _HOMES_PER_ITEM,
) -> tuple[Question, dict[str, Any]]:
    """One question of ``kind``: up to ``max_homes`` homes (seeds in ``[low, high)`` of ``home_seeds``) and
    views in each are drawn until the builder finds something unambiguous."""
    context = Context(renderer)
    for _ in range(max_homes):
        home_seed = int(rng.integers(*home_seeds))
        scene = generate_scene(home_seed)
        world = renderer.load(scene)
        entities = home_entities(scene, world)
        for _ in range(_VIEWS_PER_HOME):
            aim = _aim(kind, entities, rng)
            view = sample_view(
                renderer, rng, look_at=None if aim is None else measure.centre(world, aim.label)
            )
            if view is None:
                continue
            question = builders[kind](View(*view, entities, min_pixels), context, rng)
            if question is not None:
                return question, {"home_seed": home_seed, "scene_key": scene_key(scene)}
    raise InputError(f"no {kind} question found in {max_homes} homes; lower --min-pixels")


def _aim(kind: str, entities: list[Entity], rng: np.random.Generator) -> Entity | None:
    """What a view looks at: mostly one of the home's objects; for counting, half the time a member of a
    group (chairs around a table), so counts above one come up; sometimes nothing in particular."""
    groups = Counter(e.noun for e in entities)
    pool = [e for e in entities if groups[e.noun] > 1] if kind == "counting" and rng.random() < 0.5 else []
    pool = pool or [e for e in entities if e.kind == "object"]
    return pool[int(rng.integers(len(pool)))] if rng.random() < _AIM_AT_OBJECT else None


def generate_questions(config: GenerateConfig) -> Iterator[tuple[int, Question, dict[str, Any]]]:
    """``(index, question, home)`` for every item, in order (only questions the format can express)."""
    kinds, accepts = config.kind_list(), config.sample_format().accepts
    builders = {kind: _accepting(ALL_BUILDERS[kind], accepts) for kind in kinds}
    with HomeRenderer(config.width, config.height, config.fov) as renderer:
        for index in range(config.n):
            rng = np.random.default_rng([config.seed, index])
            question, home = draw_question(
                kinds[index % len(kinds)], rng, renderer, config.min_pixels, builders
            )
            yield index, question, home


def _accepting(builder: Builder, accepts: Callable[[Question], bool]) -> Builder:
    """``builder``, returning ``None`` (draw again) for a question the format cannot express."""

    def build(view: View, context: Context, rng: np.random.Generator) -> Question | None:
        question = builder(view, context, rng)
        return question if question is not None and accepts(question) else None

    return build


def truth_record(
    index: int, question: Question, home: dict[str, Any], config: GenerateConfig
) -> dict[str, Any]:
    """The exact values behind an item's answer, and where its images were taken."""
    return json_safe(
        {
            "index": index,
            "kind": question.kind,
            "answer": question.answer,
            "truth": question.truth,
            **home,
            "camera": {"width": config.width, "height": config.height, "fovy_deg": config.fov},
            "cameras_c2w": [c.tolist() for c in question.cameras],
        }
    )


def generate(config: GenerateConfig) -> Path:
    """Write the set described by ``config``; returns its ``--data`` path (e.g. ``SpatialScore.json``)."""
    config.validate()
    layout = config.sample_format()
    config.out.mkdir(parents=True, exist_ok=True)
    settings = {
        **asdict(config),
        "format": FORMAT,
        "layout": layout.name,
        "benchmark": layout.bench,
        "source": SOURCE,
        "kinds": config.kind_list(),
        "out": None,
    }
    (config.out / "generation.json").write_text(json.dumps(settings, indent=2) + "\n", encoding="utf-8")
    with (config.out / TRUTH_FILE).open("w", encoding="utf-8") as truth_file:

        def questions() -> Iterator[tuple[int, Question]]:
            for index, question, home in generate_questions(config):
                truth_file.write(json.dumps(truth_record(index, question, home, config)) + "\n")
                yield index, question

        return layout.write(config.out, questions())


def main(argv: list[str] | None = None) -> int:
    """``python -m benchmarks.static generate --out DIR [--format spatialscore] [--n 200] [--seed 0] ...``."""
    parser = config_parser(GenerateConfig, "python -m benchmarks.static generate")
    config = GenerateConfig(**vars(parser.parse_args(argv)))
    try:
        path = generate(config)
    except (ValueError, RuntimeError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(
        f"wrote {config.n} items to {path}; run them with: python -m benchmarks.static "
        f"--bench {config.sample_format().bench} --data {path} --model MODEL"
    )
    return 0


# python -m benchmarks.datagen.generate (same as python -m benchmarks.static generate)
if __name__ == "__main__":
    raise SystemExit(main())
