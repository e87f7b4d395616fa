"""Benchmarks declared as data: a loader, a prompt builder and named scoring modes, registered by name."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.scoring.result import JudgeScore, SampleScore
from benchmarks.static.items import Media, StaticItem
from policies.entry_point import load_entry_point

PROJECT_MODE = "project"


@dataclass(frozen=True)
class Prompt:
    """What is sent to the model for one item. ``preamble`` goes first under ``preamble_role``."""

    text: str
    media: tuple[Media, ...] = ()
    preamble: str | None = None
    preamble_role: str = "system"


@dataclass(frozen=True)
class LoadOptions:
    """How to read a benchmark file."""

    image_root: Path | None = None
    check_media: bool = True


@dataclass(frozen=True)
class ScoringMode:
    """One way of scoring a benchmark: the project's, or a public scorer's reproduction.

    Attributes:
        name: ``"project"`` or e.g. ``"multihop-repo"``.
        description: one line for ``--help`` and the summary.
        score: rule-based score of one response.
        summarize: headline numbers and tables from (items, records, options); options carry run settings
            such as a weight-tree path.
        prompt_style: the prompt the published numbers were produced with.
        judge_prompt: the judge request for one sample, or ``None`` when the sample needs no judge.
        judge_score: the judge's verdict from its reply.
        differences: how this mode differs from the project's (documentation).
        judge_gold: (item, response) -> the reply a perfect judge writes for this sample, in the judge
            prompt's format.
        headline_note: one line saying why this mode's headline differs from the project's or the
            judge-assisted one (e.g. a public scorer that cannot credit a perfect answer); shown with the
            headline in summary.md, summary.json and on the terminal.
    """

    name: str
    description: str
    score: Callable[[StaticItem, str], SampleScore]
    summarize: Callable[
        [Sequence[StaticItem], Sequence[Mapping[str, Any]], Mapping[str, Any]], dict[str, Any]
    ]
    prompt_style: str = "paper"
    judge_prompt: Callable[[StaticItem, str], str | None] = lambda item, response: None
    judge_score: Callable[[StaticItem, str, str], JudgeScore] | None = None
    differences: tuple[str, ...] = ()
    judge_gold: Callable[[StaticItem, str], str] | None = None
    headline_note: str | None = None


@dataclass(frozen=True)
class BenchmarkSpec:
    """A static benchmark: how to load it, prompt for it and score it.

    Attributes:
        name: registry name used by ``--bench``.
        title: the benchmark's published name.
        load: rows of a data path -> items.
        build_prompt: (item, prompt style) -> prompt.
        modes: scoring modes by name; ``"project"`` is the default.
        prompt_styles: prompt styles ``build_prompt`` accepts.
        max_new_tokens: the published generation budget.
        reference: published reference numbers (docs/guide/static-benchmarks.md and summary context).
        gold_answer: (item, prompt style) -> the ground truth written exactly as that prompt asks for the
            answer (a competent model's answer, to check the real scoring path with).
    """

    name: str
    title: str
    load: Callable[[Path, LoadOptions], list[StaticItem]]
    build_prompt: Callable[[StaticItem, str], Prompt]
    modes: Mapping[str, ScoringMode]
    prompt_styles: tuple[str, ...] = ("paper",)
    max_new_tokens: int = 512
    reference: Mapping[str, Any] = field(default_factory=dict)
    gold_answer: Callable[[StaticItem, str], str] | None = None

    def mode(self, name: str) -> ScoringMode:
        """A scoring mode by name, with the valid names in the error."""
        if name not in self.modes:
            raise KeyError(f"{self.name} has no scoring mode {name!r}; choose one of {', '.join(self.modes)}")
        return self.modes[name]


#: The built-in benchmarks as lazy ``"module:factory"`` strings (as ``envs/registration.py`` registers envs):
#: a benchmark module is imported when its benchmark is asked for, and this module imports none of them
#: (they import it, for the spec types).
_BUILTINS: dict[str, str] = {
    "multihopspatial": "benchmarks.static.multihop:spec",
    "space10": "benchmarks.static.space10:spec",
    "spatialscore": "benchmarks.static.spatialscore:spec",
    "spatialtree": "benchmarks.static.spatialtree:spec",
    "vsibench": "benchmarks.static.vsibench:spec",
}
_REGISTRY: dict[str, Callable[[], BenchmarkSpec]] = {}


def register(name: str, factory: Callable[[], BenchmarkSpec]) -> None:
    """Register a benchmark factory under ``name`` (factories keep registration cheap)."""
    if name in _REGISTRY or name in _BUILTINS:
        raise ValueError(f"benchmark {name!r} is already registered")
    _REGISTRY[name] = factory


def benchmark_names() -> list[str]:
    """Registered benchmark names."""
    return sorted({*_BUILTINS, *_REGISTRY})


def get_benchmark(name: str) -> BenchmarkSpec:
    """The benchmark registered as ``name``."""
    if name in _BUILTINS:
        return load_entry_point(_BUILTINS[name], what=f"built-in benchmark {name!r}")()
    if name not in _REGISTRY:
        raise KeyError(f"unknown benchmark {name!r}; registered: {', '.join(benchmark_names())}")
    return _REGISTRY[name]()
