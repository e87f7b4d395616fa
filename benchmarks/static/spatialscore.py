"""SpatialScore (Wu et al.): 5,025 items in 10 categories; multi-choice, judgment and open-ended questions.

Data: the public JSON (or JSONL/parquet) list, each item with ``question_type``, ``input_modality``,
``img_paths`` (one image, several, or a video's frames), ``question``, ``answer``, ``category``, ``source``,
``subcategory`` and ``index``. Image paths are relative to ``--image-root`` (default: the data file's
folder, or its parent for the repository's ``./dataset/...`` paths).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from benchmarks.scoring import judge as judges
from benchmarks.scoring.metrics import comparable_values, mra_with_units, relative_error
from benchmarks.scoring.official import spatialscore as repo
from benchmarks.scoring.parsers import (
    ParseResult,
    answer_key_letters,
    failed,
    is_refusal,
    normalize_text,
    parse_number,
    parse_option,
    parse_yes_no,
    parsed,
    split_lettered_options,
)
from benchmarks.scoring.result import JudgeScore, SampleScore, bounded_scorer
from benchmarks.scoring.units import Quantity, unit_stated_in_question
from benchmarks.static import summary as S
from benchmarks.static.items import (
    DataError,
    MediaRoot,
    StaticItem,
    choose_media_root,
    data_files,
    item_ids,
    iter_strings,
    plain_number,
    read_rows,
    require_fields,
)
from benchmarks.static.registry import PROJECT_MODE, BenchmarkSpec, LoadOptions, Prompt, ScoringMode

NAME = "spatialscore"
_TASKS = {"multi-choice": "mcq", "judgment": "judgment", "open-ended": "open"}
_MODALITIES = {
    "single-image": "single-image",
    "multi-images": "multi-image",
    "multi-image": "multi-image",
    "video": "video",
}
_REQUIRED = ("question_type", "question", "answer", "category", "img_paths")
_DEFAULT_LETTERS = "ABCDEF"  # the public prompt offers (A)-(F) when a question's options cannot be read


# --------------------------------------------------------------------------------------------------------
# Loading


def load(path: Path, options: LoadOptions) -> list[StaticItem]:
    """Read SpatialScore items; errors name the item and the fix."""
    files = data_files(path)
    rows = [(f, n, row) for f in files for n, row in enumerate(read_rows(f))]
    ids = item_ids([row for _, _, row in rows], ("index", "id"))
    sample = next((p for _, _, row in rows for p in iter_strings(row.get("img_paths"))), None)
    media_root = choose_media_root(Path(path), options.image_root, sample, options.check_media)
    return [
        _item(row, item_id, i, f"{f.name} item {item_id}", media_root)
        for i, ((f, _, row), item_id) in enumerate(zip(rows, ids))
    ]


def _item(row: Mapping[str, Any], item_id: str, index: int, where: str, media_root: MediaRoot) -> StaticItem:
    require_fields(row, _REQUIRED, where, NAME)
    question_type = str(row["question_type"]).lower()
    if question_type not in _TASKS:
        raise DataError(f"{where}: question_type {row['question_type']!r} is not one of {', '.join(_TASKS)}")
    paths = list(iter_strings(row["img_paths"]))
    if not paths:
        raise DataError(f"{where}: img_paths must list at least one image path")
    modality = str(row.get("input_modality", "single-image" if len(paths) == 1 else "multi-image")).lower()
    question, answer = str(row["question"]), row["answer"]
    task, options, meta = _answer_key(question_type, question, answer, where)
    tags = {
        k: str(row.get(k, "unknown")) for k in ("subcategory", "source", "question_type", "input_modality")
    }
    return StaticItem(
        benchmark=NAME,
        item_id=item_id,
        index=index,
        question=question,
        answer=answer,
        task=task,
        options=options,
        media=tuple(media_root.resolve(p, where) for p in paths),
        modality=_MODALITIES.get(modality, modality),
        category=str(row["category"]),
        tags=tags,
        meta={**meta, "answer_text": str(answer)},
    )


def _answer_key(
    question_type: str, question: str, answer: Any, where: str
) -> tuple[str, dict[str, str], dict[str, Any]]:
    if question_type == "multi-choice":
        options = split_lettered_options(question)
        return "mcq", options, {"key": _option_key(answer, options, where)}
    if question_type == "judgment":
        key = parse_yes_no(str(answer))
        if not key.ok:
            raise DataError(f"{where}: judgment answer {answer!r} is neither yes nor no")
        return "judgment", {}, {"key": key.value}
    number = parse_number(str(answer))
    if not number.ok:
        return "open_text", {}, {"key": normalize_text(str(answer))}
    quantity = number.value
    if quantity.unit is None:
        quantity = Quantity(quantity.value, unit_stated_in_question(question))
    return "numeric", {}, {"key": quantity}


def _option_key(answer: Any, options: Mapping[str, str], where: str) -> str:
    try:
        letters = answer_key_letters(answer)
    except ValueError:
        by_text = [k for k, v in options.items() if normalize_text(v) == normalize_text(str(answer))]
        if len(by_text) != 1:
            raise DataError(
                f"{where}: multi-choice answer {answer!r} is neither an option letter nor an option's text"
            ) from None
        return by_text[0]
    if len(letters) != 1:
        raise DataError(f"{where}: multi-choice answer {answer!r} names {len(letters)} options; expected one")
    return letters[0]


# --------------------------------------------------------------------------------------------------------
# Prompts

_PAPER_INSTRUCTIONS = {
    "judgment": "**Please answer with yes or no based on the image.** **Respond ONLY with 'yes' or 'no'.**",
    "mcq": "**Please select the most appropriate answer from the given options.** "
    "**Respond ONLY with the capital letter and its parentheses.**",
    "distance": "Please answer the question by measuring the precise distance in 3D space through 2D images or "
    "videos. Respond ONLY with a numeric answer consisting of a scalar and a distance unit in the format of "
    "**\\scalar{scalar} \\distance_unit{distance unit}**.",
    "other": "Please answer the question based on the given image or video. "
    "Respond ONLY with a concise and accurate scalar or a scalar with corresponding unit.",
}
_REPO_MCQ = (
    "**Please select the most appropriate answer from options (A), (B), (C), (D), (E), or (F).**\n"
    "**Respond ONLY with the letter and its parentheses, for example: (A)**\n\nQuestion: "
)
_REPO_SHORT = (
    "**Answer concisely with a single word, number, or option (e.g., yes, no, 5, 2.2, A).**\n\nQuestion: "
)
_REPO_MEASURE = (
    "You will be provided with a question and a 2D image. The question involves measuring the precise distance in "
    "3D space through a 2D image. You will answer the question by providing a numeric answer consisting of a scalar "
    "and a distance unit in the format of **\\scalar{scalar} \\distance_unit{distance unit}** at the end of your "
    "response.\nLet's think step by step and start by finding good reference objects or object parts in the image."
    "\n\nQuestion:"
)
_REPO_SOURCES_MCQ = {"cvbench", "MMIU", "BLINK", "3DSRBench", "MMVP"}
_REPO_SOURCES_MEASURE = {"QSpatialBench-Plus", "QSpatialBench-ScanNet"}


def _is_distance(item: StaticItem) -> bool:
    key = item.meta.get("key")
    return isinstance(key, Quantity) and key.unit is not None


def build_prompt(item: StaticItem, style: str = "paper") -> Prompt:
    """``paper``: the paper's per-type instruction (Appendix B.1); ``repo``: ``test_qwen.py``'s per-source
    instruction, sent as a preceding assistant turn as that script does."""
    if style == "repo":
        return Prompt(item.question, item.media, preamble=_repo_instruction(item), preamble_role="assistant")
    kind = item.task if item.task in ("judgment", "mcq") else ("distance" if _is_distance(item) else "other")
    return Prompt(f"{_PAPER_INSTRUCTIONS[kind]} Question: {item.question}", item.media)


def _repo_instruction(item: StaticItem) -> str:
    source = item.tags.get("source", "")
    if source in _REPO_SOURCES_MCQ:
        return _REPO_MCQ
    if source in _REPO_SOURCES_MEASURE or (source == "VGBench" and item.task in ("numeric", "open_text")):
        return _REPO_MEASURE
    return _REPO_SHORT


def gold_answer(item: StaticItem, style: str = "paper") -> str:
    """The ground truth written as the prompt of ``style`` asks (a perfect model's answer): "(B)",
    "yes"/"no", ``\\scalar{2.0} \\distance_unit{m}`` where a distance format is asked, else the published
    answer as is."""
    key = item.meta["key"]
    if item.task == "mcq":
        return f"({key})"
    if item.task == "judgment":
        return str(key)
    asks_distance = _is_distance(item) if style != "repo" else _repo_instruction(item) == _REPO_MEASURE
    if item.task == "numeric" and asks_distance and key.unit is not None:
        return f"\\scalar{{{plain_number(key.value)}}} \\distance_unit{{{key.unit}}}"
    return item.meta["answer_text"]


# --------------------------------------------------------------------------------------------------------
# Project scoring


def score_project(item: StaticItem, response: str) -> SampleScore:
    """The project's parsers: letters with option texts, yes/no, MRA with units (Appendix B.1)."""
    key = item.meta["key"]
    if item.task == "mcq":
        return _right_or_wrong(parse_option(response, item.options or _DEFAULT_LETTERS), key, "mcq")
    if item.task == "judgment":
        return _right_or_wrong(parse_yes_no(response), key, "yes_no")
    if item.task == "numeric":
        return _score_numeric(parse_number(response), key)
    answer = normalize_text(response)
    result = parsed(answer, "normalized_text") if answer and not is_refusal(response) else _no_text(answer)
    return SampleScore(
        float(answer == key),
        answer == key,
        result,
        "exact_text",
        "normalised exact match; a judge suits open text",
    )


def _no_text(answer: str) -> ParseResult:
    return (
        failed("empty", "the response is empty")
        if not answer
        else failed("refusal", "the response declines to answer")
    )


def _right_or_wrong(result: ParseResult, key: str, scorer: str) -> SampleScore:
    correct = result.ok and result.value == key
    return SampleScore(float(correct), correct, result, scorer, f"read {result.value!r}, key {key!r}")


def _score_numeric(result: ParseResult, key: Quantity) -> SampleScore:
    if not result.ok:
        return SampleScore(0.0, None, result, "mra", "no number read: MRA 0")
    score, why = mra_with_units(result.value, key)
    metrics = {"relative_error": _rel_error(result.value, key)}
    return SampleScore(score, None, result, "mra", f"{result.value.value} vs {key.value}: {why}", metrics)


def _rel_error(pred: Quantity, key: Quantity) -> float | None:
    values = comparable_values(pred, key)
    if isinstance(values, str):
        return None
    error = relative_error(values[0], values[1])
    return error if error != float("inf") else None


def judge_prompt(item: StaticItem, response: str) -> str | None:
    """Open-ended items go to the paper's MRA evaluator prompt."""
    if item.task not in ("numeric", "open_text"):
        return None
    key = item.meta["key"]
    gt_text = item.meta["answer_text"]
    if isinstance(key, Quantity) and key.unit and not any(ch.isalpha() for ch in gt_text):
        gt_text = f"{gt_text} {key.unit}"  # the unit the question states
    return judges.spatialscore_judge_prompt(
        "distance" if _is_distance(item) else "counting", gt_text, response
    )


def judge_score(item: StaticItem, response: str, reply: str) -> JudgeScore:
    """The evaluator's ``output: <float>``."""
    return judges.parse_output_line(reply)


def judge_gold(item: StaticItem, response: str) -> str:
    """A perfect MRA evaluator's reply: ``output: <the project's rule score of the response>``."""
    return f"output: {score_project(item, response).score or 0.0}"


# --------------------------------------------------------------------------------------------------------
# Repository scoring


@bounded_scorer
def score_repo(item: StaticItem, response: str) -> SampleScore:
    """``test_qwen.py``'s rules (see :mod:`benchmarks.scoring.official.spatialscore`)."""
    question_type, source = item.tags["question_type"], item.tags["source"]
    try:
        result = repo.score_item(question_type, source, response, item.meta["answer_text"])
    except ValueError as error:
        return SampleScore(
            None, None, failed("scorer_error", f"the script raises here: {error}"), "spatialscore-repo"
        )
    readable = _repo_readable(item.task, result, response)
    parse = ParseResult(result.read if readable else None, readable, result.rule, result.explanation)
    correct = None if result.rule == "vsi_mra" else result.score == 1.0
    return SampleScore(result.score, correct, parse, f"spatialscore-repo/{result.rule}", result.explanation)


def _repo_readable(task: str, result: repo.RepoScore, response: str) -> bool:
    """Whether the script found an answer (it scores unread ones as wrong, or as the number 0)."""
    if task == "mcq":
        return result.read in tuple("ABCDEF")
    if task == "judgment":
        return result.read in ("Yes", "No")
    if result.rule == "unit_ratio":
        return not result.explanation.startswith("no number")
    if result.rule == "exact_text":
        return bool(response.strip()) and not is_refusal(response)
    try:
        float(repo.extract_number(response))  # the script falls back to 0 when this fails
    except ValueError:
        return False
    return True


# --------------------------------------------------------------------------------------------------------
# Summary


def summarize(
    items: Sequence[StaticItem],
    records: Sequence[Mapping[str, Any]],
    options: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Overall (item-weighted, as the paper), per category, per question type, source and modality."""
    categories = S.grouped(records, lambda r: r["category"], "category")
    headline = {"overall": S.mean_score(records), "category_macro_mean": S.macro_mean(categories["rows"])}
    open_records = [r for r in records if (r.get("tags") or {}).get("question_type") == "open-ended"]
    section = S.judge_section(records)
    if section is not None:
        section.update(_paper_combination(records, open_records))
    return {
        "headline": headline,
        "headline_ci": {
            "overall": S.score_ci(records),
            "category_macro_mean": S.macro_ci(categories["rows"]),
        },
        "counts": S.counts(records),
        "judge": section,
        "tables": {
            "by_category": categories,
            "by_question_type": S.grouped(records, S.tag("question_type"), "question_type"),
            "by_source": S.grouped(records, S.tag("source"), "source"),
            "by_modality": S.grouped(records, S.tag("input_modality"), "input_modality"),
        },
        "chart": {"table": "by_category", "label": "category", "value": "score"},
        "notes": ["overall is the item-weighted mean, as in the paper's Table 2"],
    }


def _paper_combination(
    records: Sequence[Mapping[str, Any]], open_records: Sequence[Mapping[str, Any]]
) -> dict[str, Any]:
    """The paper's open-ended protocol: the mean of the parser score and the judge score, per item."""
    judged = [r for r in open_records if (r.get("judge") or {}).get("ok") and r.get("score") is not None]
    if not open_records or len(judged) < len(open_records):
        return {
            "paper_combined_overall": None,
            "paper_combined_note": f"{len(judged)}/{len(open_records)} open-ended items judged; all are needed",
        }
    combined = {r["item_id"]: (float(r["score"]) + float(r["judge"]["score"])) / 2 for r in judged}
    scores = [combined.get(r["item_id"], r.get("score")) for r in records]
    values = [float(s) for s in scores if s is not None]
    return {"paper_combined_overall": 100.0 * sum(values) / len(values) if values else None}


REFERENCE = {
    "source": "SpatialScore paper, Table 2 (overall, %)",
    "rows": {
        "Qwen3-VL-4B": 42.52,
        "Qwen3-VL-8B": 45.48,
        "Gemini-3-Pro": 60.12,
        "Human": 86.60,
        "Chance": 28.29,
    },
}


def spec() -> BenchmarkSpec:
    """The registered SpatialScore benchmark."""
    project = ScoringMode(
        PROJECT_MODE,
        "project parsers: option texts, strict yes/no, MRA with unit conversion",
        score_project,
        summarize,
        prompt_style="paper",
        judge_prompt=judge_prompt,
        judge_score=judge_score,
        judge_gold=judge_gold,
    )
    official = ScoringMode(
        "spatialscore-repo",
        "SpatialScore's test_qwen.py parsers, quirks included",
        score_repo,
        summarize,
        prompt_style="repo",
        differences=(
            "first a-f letter anywhere is the option ('Left' -> E)",
            "yes-words win ('No, that is not correct.' -> yes)",
            "VSI-Bench numbers ignore units ('0.4 m' vs 40 scores 0); other unit answers: correct when the ratio < 2",
            "MRA compared in floating point: an error exactly on a threshold can miss it",
        ),
    )
    return BenchmarkSpec(
        NAME,
        "SpatialScore",
        load,
        build_prompt,
        {m.name: m for m in (project, official)},
        prompt_styles=("paper", "repo"),
        max_new_tokens=512,
        reference=REFERENCE,
        gold_answer=gold_answer,
    )
