"""VSI-Bench (Yang et al., "Thinking in Space") and VSI-Bench-Debiased: video QA over indoor scenes.

Data: the hub layout (``nyu-visionx/VSI-Bench``): ``test.jsonl`` or ``test-*.parquet`` (the full set),
``test_debiased.parquet`` (VSI-Bench-Debiased) or ``test_pruned.parquet``, one row per question with ``id``,
``dataset`` (arkitscenes / scannet / scannetpp), ``scene_name``, ``question_type``, ``question``,
``ground_truth`` (an option letter, or a number written as text) and ``options`` (``["A. chair", ...]``;
empty for numerical questions). Videos are ``<dataset>/<scene_name>.mp4`` under ``--image-root`` (default:
the data folder, its ``videos/`` sub-folder, or its parent), as the hub's zips unpack; a folder
``<dataset>/<scene_name>/`` of frame images is used instead when there is no video.

Scoring modes: ``vsibench-lmms-eval`` reproduces lmms-eval's task (see ``scoring/official/vsibench.py``);
the project's mode reads answers with the project's parsers and converts units.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from benchmarks.scoring.aggregate import percent
from benchmarks.scoring.metrics import mra_with_units
from benchmarks.scoring.official import vsibench as official
from benchmarks.scoring.parsers import failed, parse_number, parse_option, parsed
from benchmarks.scoring.result import SampleScore, bounded_scorer
from benchmarks.scoring.units import Quantity, unit_stated_in_question
from benchmarks.static import summary as S
from benchmarks.static.items import (
    DataError,
    StaticItem,
    data_files,
    item_ids,
    plain_number,
    read_rows,
    require_fields,
)
from benchmarks.static.registry import PROJECT_MODE, BenchmarkSpec, LoadOptions, Prompt, ScoringMode
from benchmarks.stats.intervals import macro_mean

NAME = "vsibench"
FRAME_SUFFIXES = (".jpg", ".jpeg", ".png", ".webp", ".bmp")
#: The unit each numerical question type asks for, when its question does not say it.
DEFAULT_UNITS = {
    "object_abs_distance": "m",
    "object_size_estimation": "cm",
    "room_size_estimation": "m2",
    "object_counting": None,
}
_OPTION = re.compile(r"^\s*([A-Z])\s*[.):]\s*(.*)$", re.DOTALL)


# --------------------------------------------------------------------------------------------------------
# Loading


def load(path: Path, options: LoadOptions) -> list[StaticItem]:
    """Read VSI-Bench rows (one file, or every data file of a folder) and find each scene's video."""
    path = Path(path)
    rows = [(f, row) for f in data_files(path) for row in read_rows(f)]
    ids = item_ids([row for _, row in rows], ("id", "idx", "index"))
    roots = _media_roots(path, options.image_root, options.check_media)
    items = [
        _item(row, file, item_id, i, roots, options.check_media)
        for i, ((file, row), item_id) in enumerate(zip(rows, ids))
    ]
    return items


def _media_roots(path: Path, explicit: Path | None, check: bool) -> list[Path]:
    if explicit is not None:
        if check and not explicit.is_dir():
            raise DataError(
                f"--image-root {explicit} is not a folder; pass the folder holding <dataset>/<scene_name>.mp4"
            )
        return [explicit]
    base = path if path.is_dir() else path.parent
    return [base, base / "videos", base.parent]


def subset_of(file: Path) -> str:
    """``debiased`` / ``pruned`` / ``full``, from the hub's file names."""
    name = file.name.lower()
    return "debiased" if "debiased" in name else "pruned" if "pruned" in name else "full"


def _item(
    row: Mapping[str, Any], file: Path, item_id: str, index: int, roots: Sequence[Path], check: bool
) -> StaticItem:
    where = f"{file.name} item {item_id}"
    require_fields(row, ("question", "question_type", "ground_truth", "dataset", "scene_name"), where, NAME)
    question_type = str(row["question_type"])
    if question_type in official.MCA_QUESTION_TYPES:
        options = _options(row.get("options"), where)
        key = str(row["ground_truth"]).strip().upper()
        task = "mcq"
        meta: dict[str, Any] = {"key": key, "option_lines": [str(o) for o in row["options"]]}
        if key not in options:  # lmms-eval scores it (never a match): kept, with the problem
            meta["key_problem"] = (
                f"ground truth {row['ground_truth']!r} is not one of the option letters {sorted(options)}"
            )
    elif question_type in official.NA_QUESTION_TYPES:
        value = official.to_float(row["ground_truth"])
        options, task = {}, "numeric"
        unit = unit_stated_in_question(str(row["question"])) or DEFAULT_UNITS[question_type]
        meta = {"value": value, "unit": unit}
        if value is None:  # lmms-eval scores it 0 (its TypeError path): kept, with the problem
            meta["key_problem"] = f"numerical ground truth {row['ground_truth']!r} is not a number"
    else:
        known = ", ".join(official.MCA_QUESTION_TYPES + official.NA_QUESTION_TYPES)
        raise DataError(f"{where}: unknown question_type {question_type!r}; VSI-Bench has {known}")
    media = _scene_media(str(row["dataset"]), str(row["scene_name"]), roots, check, where)
    tags = {"question_type": question_type, "dataset": str(row["dataset"]), "subset": subset_of(file)}
    return StaticItem(
        benchmark=NAME,
        item_id=item_id,
        index=index,
        question=str(row["question"]),
        answer=row["ground_truth"],
        task=task,
        options=options,
        media=media,
        modality="video",
        category=question_type,
        tags=tags,
        meta=meta,
    )


def _options(value: object, where: str) -> dict[str, str]:
    lines = list(value) if isinstance(value, list | tuple) else []
    if len(lines) < 2:
        raise DataError(
            f"{where}: a multiple-choice question needs an 'options' list such as ['A. chair', 'B. table'] (got {value!r})"
        )
    options: dict[str, str] = {}
    for position, line in enumerate(lines):
        match = _OPTION.match(str(line))
        letter, text = (
            (match.group(1), match.group(2).strip())
            if match
            else (chr(ord("A") + position), str(line).strip())
        )
        options[letter] = text
    return options


def _scene_media(dataset: str, scene: str, roots: Sequence[Path], check: bool, where: str) -> tuple[str, ...]:
    """The scene's video, else its frame folder's images in name order."""
    for root in roots:
        video = root / dataset / f"{scene}.mp4"
        if video.is_file():
            return (str(video),)
        folder = root / dataset / scene
        if folder.is_dir():
            frames = sorted(p for p in folder.iterdir() if p.suffix.lower() in FRAME_SUFFIXES)
            if frames:
                return tuple(str(p) for p in frames)
    if check:
        tried = ", ".join(str(r / dataset / f"{scene}.mp4") for r in roots)
        raise DataError(
            f"{where}: no video or frame folder for scene {dataset}/{scene} (tried {tried}); pass --image-root "
            "with the folder the hub's arkitscenes/scannet/scannetpp zips were unpacked into"
        )
    return (str(roots[0] / dataset / f"{scene}.mp4"),)


# --------------------------------------------------------------------------------------------------------
# Prompts

PRE_PROMPT = "These are frames of a video."
MCA_POST_PROMPT = "Answer with the option's letter from the given choices directly."
NA_POST_PROMPTS = {
    "paper": "Please answer the question using a single word or phrase.",
    "api": "Do not response anything other than a single number!",
}


def build_prompt(item: StaticItem, style: str = "paper") -> Prompt:
    """lmms-eval's prompt: ``paper`` = its default model kwargs, ``api`` = its gemini/gpt4v kwargs (a stricter
    numerical post-prompt, upstream's wording kept)."""
    if item.task == "mcq":
        text = "\n".join(
            [PRE_PROMPT, item.question, "Options:\n" + "\n".join(item.meta["option_lines"]), MCA_POST_PROMPT]
        )
    else:
        text = PRE_PROMPT + "\n" + item.question + "\n" + NA_POST_PROMPTS[style]
    return Prompt(text, item.media)


def gold_answer(item: StaticItem, style: str = "paper") -> str:
    """The letter alone, or the number as the benchmark writes it ("4", "2.3"): what both prompts ask for."""
    if item.task == "mcq" or item.meta["value"] is None:
        return str(item.meta["key"] if item.task == "mcq" else item.answer)
    written = str(item.answer).strip()
    return written if official.to_float(written) == item.meta["value"] else plain_number(item.meta["value"])


# --------------------------------------------------------------------------------------------------------
# Scoring


def score_project(item: StaticItem, response: str) -> SampleScore:
    """Letter or option text by the project's parser; numbers with their unit (converted to the question's),
    ranges at their maximum, MRA with the exact-threshold tolerance. An unusable ground truth: not scored."""
    problem = item.meta.get("key_problem")
    if problem:
        return SampleScore(
            None,
            None,
            failed("bad_annotation", problem),
            "unscorable",
            f"not scored: {problem}",
            {"problem": problem},
        )
    if item.task == "mcq":
        result = parse_option(response, item.options)
        correct = result.ok and result.value == item.meta["key"]
        return SampleScore(
            float(correct), correct, result, "mcq", f"read {result.value!r}, key {item.meta['key']!r}"
        )
    result = parse_number(response)
    truth = Quantity(item.meta["value"], item.meta["unit"])
    if not result.ok:
        return SampleScore(0.0, None, result, "mra", "no number read: MRA 0", {"relative_error": None})
    score, note = mra_with_units(result.value, truth)
    return SampleScore(
        score, None, result, "mra", f"MRA {score:.2f}: {note}", {"prediction": result.value.to_dict()}
    )


@bounded_scorer
def score_official(item: StaticItem, response: str) -> SampleScore:
    """lmms-eval's score (an unusable ground truth too: it is never matched, the problem is recorded)."""
    result = _score_official(item, response)
    problem = item.meta.get("key_problem")
    return replace(result, metrics={**result.metrics, "problem": problem}) if problem else result


def _score_official(item: StaticItem, response: str) -> SampleScore:
    """lmms-eval's score: first token against the letter; first number (words included), MRA, no units."""
    if item.task == "mcq":
        token = official.fuzzy_matching(response)
        value = official.mca_score(response, str(item.answer))
        # Upstream has no notion of "unreadable"; a first token that is no option letter is what it can never
        # credit, so it is counted as a parse failure here (still scored 0, as upstream).
        readable = token.upper() in item.options
        parse = (
            parsed(token.upper(), "first_token", f"first token {token!r}")
            if readable
            else failed("first_token", f"first token {token!r} is not an option letter")
        )
        return SampleScore(
            value,
            value == 1.0,
            parse,
            "vsibench-lmms-eval/exact_match",
            f"first token {token!r} vs {item.meta['key']!r}",
        )
    numeric = official.na_score(response, item.answer)  # a non-numeric truth scores 0 there, problem noted
    unread = {
        "no_number": "no number in the response",
        "number_out_of_range": "the first number is beyond the float range",
    }
    parse = (
        parsed(numeric.prediction, "first_number", f"first number {numeric.prediction}")
        if numeric.prediction is not None
        else failed(numeric.read, unread.get(numeric.read, numeric.read))
    )
    why = numeric.problem or f"MRA {numeric.score:.2f} of {numeric.prediction} against {item.answer}"
    metrics = {"problem": numeric.problem} if numeric.problem else {}
    return SampleScore(numeric.score, None, parse, "vsibench-lmms-eval/mra", why, metrics)


# --------------------------------------------------------------------------------------------------------
# Summary


def _pairs(records: Sequence[Mapping[str, Any]]) -> list[tuple[str, float]]:
    return [(r["tags"]["question_type"], float(r["score"])) for r in records if r.get("score") is not None]


def summarize(
    items: Sequence[StaticItem],
    records: Sequence[Mapping[str, Any]],
    options: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """lmms-eval's eight sub-scores and overall (percent), the per-question-type table, and the counts."""
    result = official.aggregate(_pairs(records))
    sub = result["sub_scores"]
    assert isinstance(sub, dict)
    names = official.metric_names()
    rows = [
        {"sub_score": name, "metric": names[name].removeprefix(f"{name}_"), "score": percent(sub.get(name))}
        for name, _ in official.SUB_SCORES
    ]
    subsets = sorted({r["tags"].get("subset", "full") for r in records})
    headline = {"overall": percent(result["overall"]), **{name: percent(v) for name, v in sub.items()}}
    notes = [
        "overall = mean of the eight sub-scores (question types weigh equally; the three rel-direction levels are averaged into one)",
        f"subset: {', '.join(subsets) or 'none'} (VSI-Bench-Debiased is the 'debiased' file)",
    ]
    if result["missing"]:
        notes.append(
            f"no items for: {', '.join(result['missing'])} (lmms-eval raises KeyError when a rel-direction level is missing)"
        )
    return {
        "headline": headline,
        "headline_ci": _headline_ci(records),
        "counts": S.counts(records),
        "judge": None,
        "tables": {
            "sub_scores": S.table(rows, ["sub_score", "metric", "score"]),
            "by_question_type": S.grouped(records, S.tag("question_type"), "question_type"),
            "by_dataset": S.grouped(records, S.tag("dataset"), "dataset"),
        },
        "chart": {"table": "sub_scores", "label": "sub_score", "value": "score"},
        "notes": notes,
    }


def _headline_ci(records: Sequence[Mapping[str, Any]]) -> dict[str, list[float] | None]:
    """95 % intervals (percent) of the headline, built as lmms-eval builds the numbers: each question type's
    interval over its items (clustered by scene video), the rel-direction levels and then the eight
    sub-scores combined as independent means (:func:`benchmarks.stats.intervals.macro_mean`)."""
    by_type: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for record in records:
        if record.get("score") is not None:
            by_type[record["tags"]["question_type"]].append(record)
    parts = {t: S.score_estimate(rows) for t, rows in by_type.items()}
    levels = [parts.pop(level) for level in official.DIRECTION_LEVELS if level in parts]
    if levels:
        parts["object_rel_direction"] = macro_mean(levels, bounds=(0.0, 100.0))
    present = [name for name, _ in official.SUB_SCORES if name in parts]
    overall = macro_mean([parts[name] for name in present], bounds=(0.0, 100.0))
    return {"overall": overall.bounds(), **{name: parts[name].bounds() for name in present}}


REFERENCE = {
    "source": "MultihopSpatial paper, Table 2 (VSI-Bench overall, %, the authors' evaluation)",
    "overall": {"Qwen3-VL-4B-Instruct": 62.8, "Qwen3-VL-4B-Instruct w/ MultihopSpatial-Train": 63.2},
}


def spec() -> BenchmarkSpec:
    """The registered VSI-Bench benchmark (the full set and VSI-Bench-Debiased share it)."""
    project = ScoringMode(
        PROJECT_MODE,
        "project parsers: option letters or texts, numbers with units (converted), ranges at their maximum",
        score_project,
        summarize,
    )
    official_mode = ScoringMode(
        "vsibench-lmms-eval",
        "lmms-eval's vsibench task: first token for letters, first number (words too), MRA without units",
        score_official,
        summarize,
        differences=(
            "a letter counts only as the response's first token ('The answer is A' and '(A)' score 0)",
            "the first number counts, units ignored ('2 m, about 200 cm' reads 2; '150 cm' for a metre question reads 150)",
            "no tolerance at the MRA thresholds (an error of exactly 0.2 misses C = 0.80)",
            "a ground truth of 0 stops upstream's run; it scores 0 here with the problem recorded",
        ),
    )
    return BenchmarkSpec(
        NAME,
        "VSI-Bench",
        load,
        build_prompt,
        {m.name: m for m in (project, official_mode)},
        prompt_styles=("paper", "api"),
        max_new_tokens=16,
        reference=REFERENCE,
        gold_answer=gold_answer,
    )
