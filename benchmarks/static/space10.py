"""SpaCE-10 (Gong et al.): 5,122 multiple-choice QA over 811 indoor scenes, 8 QA types, 10 capabilities.

Data: the lmms-eval layout, one folder per QA type (``eq_single``, ``ep_double``...), parquet or JSON rows
with ``index``, ``question``, ``answer`` (one letter, or letters such as ``"AC"`` for multiple-answer items),
option columns ``A``-``F`` and ``image`` (encoded bytes, ``{"bytes", "path"}`` structs, or paths relative to
``--image-root``). The QA type comes from a ``qa_type`` column, a ``category`` naming one, or the folder name.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import Any

from benchmarks.scoring.aggregate import capability_scores, percent
from benchmarks.scoring.metrics import set_exact_match
from benchmarks.scoring.official import space10 as official
from benchmarks.scoring.official import space10_stats as stats
from benchmarks.scoring.parsers import ParseResult, answer_key_letters, parse_option, parse_option_set
from benchmarks.scoring.result import JudgeScore, SampleScore, bounded_scorer
from benchmarks.static import summary as S
from benchmarks.static.items import (
    DataError,
    Media,
    MediaRoot,
    StaticItem,
    choose_media_root,
    data_files,
    first_present,
    iter_strings,
    read_rows,
    require_fields,
)
from benchmarks.static.registry import PROJECT_MODE, BenchmarkSpec, LoadOptions, Prompt, ScoringMode

NAME = "space10"
OPTION_COLUMNS = ("A", "B", "C", "D", "E", "F")
_CAPABILITY_FILE = Path(__file__).with_name("data") / "space10_capabilities.json"


@cache
def capability_table() -> dict[str, Any]:
    """QA types and capabilities (paper Table 5), from ``data/space10_capabilities.json``."""
    return json.loads(_CAPABILITY_FILE.read_text(encoding="utf-8"))


# --------------------------------------------------------------------------------------------------------
# Loading


def load(path: Path, options: LoadOptions) -> list[StaticItem]:
    """Read SpaCE-10 rows from one file or an lmms-eval folder tree."""
    path = Path(path)
    files = data_files(path)
    base = path if path.is_dir() else path.parent
    rows = [(f, row) for f in files for row in read_rows(f)]
    sample = next((p for _, row in rows for p in iter_strings(_image_field(row))), None)
    media_root = choose_media_root(path, options.image_root, sample, options.check_media)
    items: list[StaticItem] = []
    seen: dict[str, int] = {}
    for index, (file, row) in enumerate(rows):
        item = _item(row, file, base, len(files) > 1, index, media_root)
        if item.item_id in seen:
            raise DataError(
                f"{file.name}: item id {item.item_id!r} repeats row {seen[item.item_id]}; ids must be unique"
            )
        seen[item.item_id] = index
        items.append(item)
    return items


def _image_field(row: Mapping[str, Any]) -> Any:
    return first_present(row, ("image", "images", "img_paths"))


def _item(
    row: Mapping[str, Any], file: Path, base: Path, prefix_ids: bool, index: int, media_root: MediaRoot
) -> StaticItem:
    where = f"{file.name} row {index}"
    require_fields(row, ("question", "answer"), where, NAME)
    local_id = str(
        first_present(row, ("index", "id")) if first_present(row, ("index", "id")) is not None else index
    )
    relative = file.relative_to(base).with_suffix("") if file.is_relative_to(base) else Path(file.stem)
    item_id = f"{relative.as_posix()}:{local_id}" if prefix_ids else local_id
    where = f"{file.name} item {local_id}"
    options = {k: str(row[k]).strip() for k in OPTION_COLUMNS if _has_option(row.get(k))}
    if len(options) < 2:
        raise DataError(f"{where}: needs at least two option columns among A-F (found {sorted(options)})")
    key = _key(row["answer"], options, where)
    qa_type = _qa_type(row, file, where)
    multiple = len(key) > 1 or "double" in file.as_posix().lower()
    info = capability_table()["qa_types"][qa_type]
    tags = {
        "qa_type": qa_type,
        "answer_kind": "multiple" if multiple else "single",
        "capabilities": list(info["capabilities"]),
        "group": info["group"],
        "source_category": str(row.get("category", "")),
    }
    media = _media(_image_field(row), media_root, where)
    return StaticItem(
        benchmark=NAME,
        item_id=item_id,
        index=index,
        question=str(row["question"]),
        answer=row["answer"],
        task="multi_answer" if multiple else "mcq",
        options=options,
        media=media,
        modality="multi-image" if len(media) > 1 else "single-image",
        category=qa_type,
        tags=tags,
        meta={"key": key},
    )


def _has_option(value: object) -> bool:
    if value is None or (isinstance(value, float) and value != value):  # NaN from pandas-written files
        return False
    return str(value).strip() not in ("", "nan", "None")


def _key(answer: object, options: Mapping[str, str], where: str) -> tuple[str, ...]:
    try:
        key = answer_key_letters(answer)
    except ValueError:
        raise DataError(f"{where}: answer {answer!r} names no option letter A-F") from None
    unknown = [k for k in key if k not in options]
    if unknown:
        raise DataError(
            f"{where}: answer {answer!r} names option(s) {unknown} the item does not have ({sorted(options)})"
        )
    return key


def _qa_type(row: Mapping[str, Any], file: Path, where: str) -> str:
    names = {info["name"].lower(): code for code, info in capability_table()["qa_types"].items()}
    for value in (row.get("qa_type"), row.get("task"), row.get("category")):
        if value is None:
            continue
        text = str(value).strip()
        if text.upper() in capability_table()["qa_types"]:
            return text.upper()
        if text.lower() in names:
            return names[text.lower()]
    for part in reversed(file.with_suffix("").parts):
        match = re.match(r"^([a-z]{2})[_-]?(?:single|double|\d)", part.lower())
        if match and match.group(1).upper() in capability_table()["qa_types"]:
            return match.group(1).upper()
    raise DataError(
        f"{where}: cannot tell the QA type (EQ, SQ, SA, OO, OS, EP, FR, SP); add a qa_type column "
        "or keep the lmms-eval folder names (eq_single, ep_double, ...)"
    )


def _media(value: object, media_root: MediaRoot, where: str) -> tuple[Media, ...]:
    entries = value if isinstance(value, list | tuple) else [value]
    media: list[Media] = []
    for entry in entries:
        if isinstance(entry, Mapping):
            entry = entry.get("bytes") or entry.get("path")
        if isinstance(entry, bytes | bytearray):
            media.append(bytes(entry))
        elif isinstance(entry, str):
            media.append(media_root.resolve(entry, where))
    if not media:
        raise DataError(f"{where}: no images (expected an 'image' column of bytes, structs or paths)")
    return tuple(media)


# --------------------------------------------------------------------------------------------------------
# Prompts and scoring


#: Prompt styles: ``paper`` picks the fork's task by the item (single- or multiple-answer); ``single`` and
#: ``double`` are the fork's ``space-10-single`` and ``space-10-double`` tasks' prompts for every item.
PROMPT_STYLES = ("paper", "single", "double")


def _wants_two(item: StaticItem, style: str) -> bool:
    """Whether the prompt (and parsing) of ``style`` is the double-answer task's for this item."""
    return item.task == "multi_answer" if style == "paper" else style == "double"


def build_prompt(item: StaticItem, style: str = "paper") -> Prompt:
    """The fork's task prompt: question, "There are several options:", options, the task's post-prompt."""
    return Prompt(
        official.build_prompt_text(item.question, item.options, _wants_two(item, style)), item.media
    )


def gold_answer(item: StaticItem, style: str = "paper") -> str:
    """The key as the prompt asks ("use the letters provided"): "B", or "B, E" for two options."""
    return ", ".join(item.meta["key"])


def score_project(item: StaticItem, response: str) -> SampleScore:
    """Single answer: one letter (or the option's text); multiple answer: exactly the correct set."""
    key = item.meta["key"]
    if item.task == "multi_answer":
        result = parse_option_set(response, item.options)
        correct = result.ok and set_exact_match(result.value, key)
        return SampleScore(
            float(correct), correct, result, "option_set", f"read {result.value}, key {list(key)}"
        )
    result = parse_option(response, item.options)
    correct = result.ok and result.value == key[0]
    return SampleScore(float(correct), correct, result, "mcq", f"read {result.value!r}, key {key[0]!r}")


def _score_official(item: StaticItem, response: str, style: str) -> SampleScore:
    """The fork's task without a judge: rules on the list string, else the fallback letter."""
    letters, how = official.read_answer(response, item.options, _wants_two(item, style))
    correct = set_exact_match(letters, item.meta["key"])
    note = {"rule": "rule-based extraction", "fallback": "nothing read: fallback letter"}[how]
    seen = official.as_prediction_string(response)
    parse = ParseResult(
        list(letters) if how == "rule" else None, how == "rule", how, f"{note} on {seen[:60]!r}"
    )
    explanation = f"{note}: {''.join(letters)} vs key {''.join(item.meta['key'])}"
    return SampleScore(float(correct), correct, parse, f"space10-lmms-eval/{how}", explanation)


def _judge_prompt_official(item: StaticItem, response: str, style: str) -> str | None:
    """The pipeline asks its judge only when the rules fail."""
    multiple = _wants_two(item, style)
    _, how = official.read_answer(response, item.options, multiple)
    if how == "rule":
        return None
    return official.judge_prompt(
        item.question, item.options, official.as_prediction_string(response), multiple
    )


def _judge_score_official(item: StaticItem, response: str, reply: str, style: str) -> JudgeScore:
    """Judge-assisted official score of an item the rules could not read."""
    letters, how = official.read_answer(response, item.options, _wants_two(item, style), judge_text=reply)
    correct = set_exact_match(letters, item.meta["key"])
    return JudgeScore(float(correct), how == "judge", f"judge path gives {''.join(letters)} ({how})")


def _judge_gold_official(item: StaticItem, response: str, style: str) -> str:
    """A perfect matcher's reply: the option letter(s) the response names (read by the project's parsers),
    or E / F ("no option matches") when it names none."""
    if _wants_two(item, style):
        result = parse_option_set(response, item.options)
        return ", ".join(result.value) if result.ok else official.fallback_letter(True)
    result = parse_option(response, item.options)
    return str(result.value) if result.ok else official.fallback_letter(False)


@bounded_scorer
def score_official(item: StaticItem, response: str) -> SampleScore:
    """``space10-lmms-eval``: each item scored by the fork's task for its kind."""
    return _score_official(item, response, "paper")


#: Why the fork's task modes score a perfect model near 0: what their rules read, and where the published
#: numbers come from.
TASK_HEADLINE_NOTE = (
    "the fork's rules read lmms-eval's list string \"['B']\", not the answer, so even a perfect model "
    "scores near 0 here; its published numbers are the judge's (pass --judge-model: the judge section)"
)


def _official_mode(name: str, description: str, style: str, differences: tuple[str, ...]) -> ScoringMode:
    return ScoringMode(
        name,
        description,
        bounded_scorer(lambda item, response: _score_official(item, response, style)),
        summarize,
        prompt_style=style,
        judge_prompt=lambda item, response: _judge_prompt_official(item, response, style),
        judge_score=lambda item, response, reply: _judge_score_official(item, response, reply, style),
        judge_gold=lambda item, response: _judge_gold_official(item, response, style),
        differences=differences,
        headline_note=TASK_HEADLINE_NOTE,
    )


def answer_string(item: StaticItem) -> str:
    """The published answer as the fork's statistics script sees it: the letter string ("B", "AC")."""
    answer = item.answer
    return "".join(str(a) for a in answer) if isinstance(answer, list | tuple) else str(answer)


@bounded_scorer
def score_stats(item: StaticItem, response: str) -> SampleScore:
    """The fork's statistics script (``space_10/evaluator.py``): a one-character answer, else "X." letters."""
    read = stats.predicted_options(response)
    answer = answer_string(item)
    correct = stats.is_correct(response, answer)
    parse = ParseResult(read or None, bool(read), "statistics_script", f"read {read} from {response[:60]!r}")
    group = "single" if stats.is_single(answer) else "multiple"
    return SampleScore(
        float(correct),
        correct,
        parse,
        f"space10-stats/{group}",
        f"read {read} vs sorted answer {sorted(answer)}",
    )


def summarize_stats(
    items: Sequence[StaticItem],
    records: Sequence[Mapping[str, Any]],
    options: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The script's three accuracies (single, multiple, all; percent), plus the project's per-type tables."""
    by_id = S.by_item(items)
    answered = [r for r in records if r.get("score") is not None]
    result = stats.statistics((r.get("response") or "", answer_string(by_id[r["item_id"]])) for r in answered)
    base = summarize(items, records, options)
    base["headline"] = {f"{g}_accuracy": percent(result[g]["accuracy"]) for g in stats.GROUPS}
    base["headline_ci"] = {}  # the script's own accuracies: no interval of ours
    base["tables"]["statistics_script"] = S.table(
        [{"group": g, **result[g], "accuracy": percent(result[g]["accuracy"])} for g in stats.GROUPS],
        ["group", "total", "correct", "accuracy"],
    )
    base["notes"] = [
        "the fork's statistics script: single/multiple by answer length; errored items are left out, as the script never sees them",
        "a response longer than one character counts only letters written 'X.'",
    ]
    return base


# --------------------------------------------------------------------------------------------------------
# Summary


def summarize(
    items: Sequence[StaticItem],
    records: Sequence[Mapping[str, Any]],
    options: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Per QA type for single and multiple answers, overall (item-weighted) and unweighted, capabilities."""
    single = [r for r in records if r["tags"]["answer_kind"] == "single"]
    multiple = [r for r in records if r["tags"]["answer_kind"] == "multiple"]
    by_type = S.grouped(single, S.tag("qa_type"), "qa_type")
    headline = {
        "single_answer_overall": S.mean_score(single),
        "single_answer_unweighted": S.macro_mean(by_type["rows"]),
        "multiple_answer_overall": S.mean_score(multiple),
        "all_overall": S.mean_score(records),
    }
    judge = S.judge_section(records)
    if judge is not None:
        judge["judge_assisted_single_answer_overall"] = _judge_assisted(single)
        judge["judge_assisted_multiple_answer_overall"] = _judge_assisted(multiple)
    return {
        "headline": headline,
        "headline_ci": {
            "single_answer_overall": S.score_ci(single),
            "single_answer_unweighted": S.macro_ci(by_type["rows"]),
            "multiple_answer_overall": S.score_ci(multiple),
            "all_overall": S.score_ci(records),
        },
        "counts": S.counts(records),
        "judge": judge,
        "tables": {
            "by_qa_type": by_type,
            "by_qa_type_multiple_answer": S.grouped(multiple, S.tag("qa_type"), "qa_type"),
            "capabilities": _capability_table(single),
            "capabilities_all_items": _capability_table(records),
        },
        "chart": {"table": "by_qa_type", "label": "qa_type", "value": "score"},
        "notes": [
            "single_answer_overall is item-weighted (paper Table 2); single_answer_unweighted averages the QA types (Table 7)",
            "capability scores follow Sec. E: a question counts, unweighted, for every capability it links",
        ],
    }


def _judge_assisted(records: Sequence[Mapping[str, Any]]) -> float | None:
    """The published pipeline's score: the judge's outcome where it was asked, the rule outcome elsewhere."""
    outcomes = [(r["judge"]["score"] if r.get("judge") else r.get("score")) for r in records]
    values = [float(v) for v in outcomes if v is not None]
    return percent(sum(values) / len(values)) if values else None


def _capability_table(records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    names = capability_table()["capabilities"]
    links = [(float(r["score"]), r["tags"]["capabilities"]) for r in records if r.get("score") is not None]
    scores = capability_scores(links, list(names))
    rows = [
        {"capability": c, "name": names[c], "n": s["n"], "score": percent(s["score"])}
        for c, s in scores.items()
    ]
    return S.table(rows, ["capability", "name", "n", "score"])


REFERENCE = {
    "source": "SpaCE-10 paper, Table 2 (single-answer overall, %) and Table 3 (multiple-answer overall, %)",
    "single_answer_overall": {
        "Human": 91.2,
        "InternVL3.5-241B-A28B": 55.0,
        "GPT-5": 53.4,
        "GPT-4o": 49.0,
        "Qwen2.5-VL-7B": 33.3,
    },
    "multiple_answer_overall": {"LLaVA-OneVision-72B": 30.9, "InternVL2.5-78B": 28.5, "Qwen2.5-VL-7B": 14.1},
}


def _fork_modes() -> tuple[ScoringMode, ...]:
    """The lmms-eval fork's scoring modes: each item by its own task, single for all, double for all."""
    common = (
        "the answer is scored as the list string \"['B']\", which the letter rules miss",
        "published numbers come from the GPT judge path, reported separately here",
    )
    by_kind = _official_mode(
        "space10-lmms-eval",
        "the SpaCE-10 lmms-eval fork, each item by its own task: space-10-single for single-answer "
        "items, space-10-double for multiple-answer items (list-string rules, judge, E/F fallback)",
        "paper",
        (
            *common,
            "without a readable answer the item gets E (single) or F (multiple) instead of being counted unparsed",
        ),
    )
    single = _official_mode(
        "space10-single",
        "the fork's space-10-single task for every item: 'You only need to output one choice', "
        "MMBench letter/text rules, judge, E fallback",
        "single",
        (*common, "without a readable answer the item gets E; a multiple-answer item can never be right"),
    )
    double = _official_mode(
        "space10-double",
        "the fork's space-10-double task for every item: 'You need to choose two options', comma-split "
        "letters, judge, F fallback",
        "double",
        (
            *common,
            "without a readable answer the item gets F",
            "the fork's own hit test compares the letter list with the answer string and never hits; sets are compared "
            "here, and the published multiple-answer numbers come from its statistics script (mode space10-stats)",
        ),
    )
    return by_kind, single, double


def _stats_mode() -> ScoringMode:
    """The fork's statistics script as a scoring mode."""
    return ScoringMode(
        "space10-stats",
        "the fork's statistics script (space_10/evaluator.py): single/multiple by answer length, a "
        "one-character answer or 'X.' letters, no judge",
        score_stats,
        summarize_stats,
        differences=(
            "only letters written 'X.' count in a longer answer ('B, E' and 'The answer is B' read nothing)",
            "an answer key written 'A, C' can never be matched (its characters are compared)",
        ),
        headline_note="the statistics script reads only letters written 'X.' in a longer answer, so multiple answers "
        "written 'B, E' (as the prompt asks) score 0; the project mode reads them",
    )


def spec() -> BenchmarkSpec:
    """The registered SpaCE-10 benchmark."""
    project = ScoringMode(
        PROJECT_MODE, "project parsers: plain letters, option texts, exact sets", score_project, summarize
    )
    modes = {m.name: m for m in (project, *_fork_modes(), _stats_mode())}
    return BenchmarkSpec(
        NAME,
        "SpaCE-10",
        load,
        build_prompt,
        modes,
        prompt_styles=PROMPT_STYLES,
        max_new_tokens=256,
        reference=REFERENCE,
        gold_answer=gold_answer,
    )
