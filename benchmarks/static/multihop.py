"""MultihopSpatial (Lee et al.): 4,500 four-option questions, 1-3 hops, ego- and exo-centric, each with a box.

Data: the public ``multihop_test_4500.json`` (or JSONL/parquet) with ``id``, ``image_path``,
``image_resolution`` ("WxH"), ``view`` (ego/exo), ``hop`` ("1hop"...), ``question`` (options inside
``<choice>(a) ..., (b) ...</choice>``), ``answer`` ("(c) text") and ``bbox`` (``[x, y, w, h]`` in pixels).
Images are looked up under ``--image-root`` (default: ``images/`` next to the file, then the file's folder).
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from benchmarks.scoring.metrics import bbox_reward, giou, hit_at_iou, iou, mean, normalize_box, xywh_to_xyxy
from benchmarks.scoring.official import multihop as official
from benchmarks.scoring.parsers import (
    ParseResult,
    answer_key_letters,
    failed,
    parse_box,
    parse_option,
    split_lettered_options,
)
from benchmarks.scoring.result import SampleScore, bounded_scorer
from benchmarks.static import summary as S
from benchmarks.static.items import (
    DataError,
    MediaRoot,
    StaticItem,
    choose_media_root,
    data_files,
    first_present,
    item_ids,
    plain_number,
    read_rows,
    require_fields,
)
from benchmarks.static.registry import PROJECT_MODE, BenchmarkSpec, LoadOptions, Prompt, ScoringMode
from benchmarks.stats.intervals import score_interval

NAME = "multihopspatial"
_TAGS = re.compile(r"</?(?:ATT|POS|REL)>")


# --------------------------------------------------------------------------------------------------------
# Loading


def load(path: Path, options: LoadOptions) -> list[StaticItem]:
    """Read MultihopSpatial items; a missing image size or a malformed box is an error naming the item."""
    rows = [row for f in data_files(path) for row in read_rows(f)]
    ids = item_ids(rows, ("id", "index"))
    sample = next((row["image_path"] for row in rows if isinstance(row.get("image_path"), str)), None)
    media_root = choose_media_root(
        Path(path), options.image_root, sample, options.check_media, extra=("images", "data/images")
    )
    return [_item(row, item_id, i, media_root) for i, (row, item_id) in enumerate(zip(rows, ids))]


def _item(row: Mapping[str, Any], item_id: str, index: int, media_root: MediaRoot) -> StaticItem:
    where = f"item {item_id}"
    require_fields(row, ("question", "answer", "bbox", "hop", "view"), where, NAME)
    options = split_lettered_options(str(row["question"]))
    if len(options) != 4:
        raise DataError(f"{where}: expected four options (a)-(d) in the question, found {sorted(options)}")
    try:
        key = answer_key_letters(str(row["answer"]))[0].upper()
    except ValueError:
        raise DataError(
            f"{where}: answer {row['answer']!r} does not start with an option such as '(a)'"
        ) from None
    box = _gt_box(row["bbox"], where)
    media = _media(row, media_root, where)
    hop, view = _hop(row["hop"], where), str(row["view"]).lower()
    meta = {
        "key": key,
        "answer_text": str(row["answer"]),
        "gt_xywh": box,
        "image_size": _image_size(row, media, where),
    }
    return StaticItem(
        benchmark=NAME,
        item_id=item_id,
        index=index,
        question=str(row["question"]),
        answer=row["answer"],
        task="mcq_box",
        options=options,
        media=media,
        category=f"{hop}Hop-{view.capitalize()}",
        tags={"hop": hop, "view": view},
        meta=meta,
    )


def _gt_box(value: object, where: str) -> list[float]:
    if (
        not isinstance(value, list | tuple)
        or len(value) != 4
        or not all(isinstance(v, int | float) for v in value)
    ):
        raise DataError(f"{where}: bbox must be four numbers [x, y, w, h] in pixels (got {value!r})")
    return [float(v) for v in value]


def _hop(value: object, where: str) -> int:
    match = re.match(r"^\s*(\d+)", str(value))
    if match is None:
        raise DataError(f"{where}: hop {value!r} is not like '1hop'")
    return int(match.group(1))


def _media(row: Mapping[str, Any], media_root: MediaRoot, where: str) -> tuple[str | bytes, ...]:
    image = row.get("image")
    if isinstance(image, Mapping):
        image = image.get("bytes") or image.get("path")
    if isinstance(image, bytes | bytearray):
        return (bytes(image),)
    path = first_present(row, ("image_path", "image"))
    if not isinstance(path, str):
        raise DataError(f"{where}: no image (expected 'image_path' or an 'image' column)")
    return (media_root.resolve(path.lstrip("/\\"), where),)


def _image_size(row: Mapping[str, Any], media: tuple[str | bytes, ...], where: str) -> tuple[int, int]:
    resolution = row.get("image_resolution")
    if isinstance(resolution, str) and re.fullmatch(r"\s*\d+\s*[xX]\s*\d+\s*", resolution):
        width, height = (int(v) for v in resolution.lower().split("x"))
        return width, height
    try:
        from benchmarks.static.media import image_size

        return image_size(media[0])
    except (OSError, ValueError) as error:
        raise DataError(
            f"{where}: no image_resolution and the image cannot be read ({error}); IoU needs the size"
        ) from None


# --------------------------------------------------------------------------------------------------------
# Prompts

_PAPER_FORMAT = (
    "\n\nPlease respond in the following format:\n"
    'Answer: (your choice, e.g., "(a) object name")\n'
    'Bounding Box: {"bbox_2d": [x1, y1, x2, y2]}\n\n'
    "Important: Use NORMALIZED coordinates (0.0 to 1.0).\n"
    'Example: {"bbox_2d": [0.25, 0.1, 0.75, 0.8]}'
)
_REPO_FORMAT = (
    "\n\nPlease respond in the following format:\n"
    'Answer: (your choice, e.g., "(a) object name")\n'
    "Bounding Box: [x1, y1, x2, y2]\n\n"
    "where [x1, y1] is the top-left corner and [x2, y2] is the bottom-right corner."
)


def clean_question(question: str) -> str:
    """Annotation tags removed and whitespace collapsed, as both public scorers do."""
    return re.sub(r"\s+", " ", _TAGS.sub("", question)).strip()


def build_prompt(item: StaticItem, style: str = "paper") -> Prompt:
    """``paper`` (= lmms-eval): normalised ``bbox_2d`` answer format; ``repo``: the repository's format."""
    return Prompt(
        clean_question(item.question) + (_REPO_FORMAT if style == "repo" else _PAPER_FORMAT), item.media
    )


def gold_answer(item: StaticItem, style: str = "paper") -> str:
    """The key option and the ground-truth box in the format the prompt of ``style`` asks: ``bbox_2d`` on 0-1
    (``paper``) or a bare ``[x1, y1, x2, y2]`` on 0-1 (``repo``), with exact digits so IoU is 1. A published
    box that reaches past the image edge (a few do, e.g. x = -1.34 px) is clipped to the image, as a model
    asked for normalised coordinates writes it; its IoU with the unclipped truth is then just below 1."""
    box = ", ".join(plain_number(min(max(v, 0.0), 1.0)) for v in _gt_unit_box(item))
    answer = f"Answer: {item.meta['answer_text'].strip()}"
    return (
        f"{answer}\nBounding Box: [{box}]"
        if style == "repo"
        else f'{answer}\nBounding Box: {{"bbox_2d": [{box}]}}'
    )


# --------------------------------------------------------------------------------------------------------
# Scoring


def _gt_unit_box(item: StaticItem) -> tuple[float, float, float, float]:
    width, height = item.meta["image_size"]
    return normalize_box(xywh_to_xyxy(item.meta["gt_xywh"]), width, height)


def box_overlap(response: str, truth: Sequence[float]) -> tuple[ParseResult, float, float]:
    """The response's box (on 0-1 or 0-1000, auto) and its IoU and GIoU with ``truth`` (0-1); a missing or
    invalid box is IoU 0 and GIoU -1."""
    box = parse_box(response)
    return (box, iou(box.value, truth), giou(box.value, truth)) if box.ok else (box, 0.0, -1.0)


def score_project(item: StaticItem, response: str) -> SampleScore:
    """Letter by the project's parser; box on 0-1 or 0-1000 (auto); exact IoU; a missing or invalid box is
    IoU 0 and GIoU -1 (reward 0), so it stays in every denominator."""
    answer = parse_option(response, item.options)
    correct = answer.ok and answer.value == item.meta["key"]
    box, overlap, generalized = box_overlap(response, _gt_unit_box(item))
    metrics = {
        "iou": overlap,
        "giou": generalized,
        "hit_50": hit_at_iou(correct, overlap),
        "box_parse": box.to_dict(),
    }
    why = f"read {answer.value!r}, key {item.meta['key']!r}; IoU {overlap:.4f}" + (
        "" if box.ok else f" ({box.method})"
    )
    return SampleScore(float(correct), correct, answer, "mcq_box", why, metrics)


def _official_metrics(record: official.HopRecord) -> dict[str, Any]:
    return {
        "prediction": record.prediction,
        "pred_letter": record.pred_letter,
        "answer_letter": record.answer_letter,
        "pred_box": record.pred_box,
        "iou": record.iou,
        "correct": record.correct,
        "error": record.error,
    }


def _score_with(
    scorer: Callable[..., official.HopRecord], name: str, drops_unread: bool
) -> Callable[[StaticItem, str], SampleScore]:
    @bounded_scorer
    def score(item: StaticItem, response: str) -> SampleScore:
        width, height = item.meta["image_size"]
        record = scorer(response, item.meta["answer_text"], item.meta["gt_xywh"], width, height)
        read = record.pred_letter is not None
        parse = ParseResult(
            record.prediction, read, "answer_patterns", record.error or f"read {record.prediction!r}"
        )
        if record.error:
            parse = failed("scorer_error", record.error)
        value = None if drops_unread and not (read and record.answer_letter) else float(record.correct)
        return SampleScore(value, record.correct, parse, name, f"IoU {record.iou}", _official_metrics(record))

    return score


# --------------------------------------------------------------------------------------------------------
# Summaries

_ORDER = [f"{h}Hop-{v}" for h in (3, 2, 1) for v in ("Ego", "Exo")]


def _by_hop_view(records: Sequence[Mapping[str, Any]]) -> dict[str, list[Mapping[str, Any]]]:
    groups: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for record in records:
        groups[record["category"]].append(record)
    return dict(
        sorted(groups.items(), key=lambda kv: (_ORDER.index(kv[0]) if kv[0] in _ORDER else 99, kv[0]))
    )


def _project_numbers(records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    n = len(records)
    correct = [r for r in records if r.get("correct")]
    return {
        "n": n,
        "mcq_accuracy": 100.0 * len(correct) / n if n else None,
        "acc_at_50_iou": 100.0 * sum(1 for r in records if r["metrics"]["hit_50"]) / n if n else None,
        "avg_iou": _pct(mean(r["metrics"]["iou"] for r in correct)),
        "avg_giou": _pct(mean(r["metrics"]["giou"] for r in correct)),
        "mean_bbox_reward": _pct(mean(bbox_reward(r["metrics"]["giou"]) for r in records)),
        "box_unreadable": sum(1 for r in records if not r["metrics"]["box_parse"]["ok"]),
    }


def _pct(value: float | None) -> float | None:
    return None if value is None else 100.0 * value


def summarize_project(
    items: Sequence[StaticItem],
    records: Sequence[Mapping[str, Any]],
    options: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """MCQ accuracy, Acc@50IoU and average IoU over MCQ-correct samples, all over every item."""
    headline = _project_numbers(records)
    rows = [{"hop_view": k, **_project_numbers(v)} for k, v in _by_hop_view(records).items()]
    intervals = _project_intervals(records)
    notes = [
        "every item counts in every denominator; avg_iou and avg_giou are over MCQ-correct items",
        "a missing or invalid box counts as IoU 0 (GIoU -1, reward 0)",
    ]
    return {**_summary(headline, records, rows, notes), "headline_ci": intervals}


def _project_intervals(records: Sequence[Mapping[str, Any]]) -> dict[str, list[float] | None]:
    """95 % intervals (percent) of the project's numbers over every item: the right/wrong rates (MCQ,
    Acc@50IoU) as Wilson or clustered SE, the IoU, GIoU and reward means by the bootstrap (clustered by
    image). ``n`` and ``box_unreadable`` are counts."""
    correct = [r for r in records if r.get("correct")]

    def interval(values: list[float], rows: Sequence[Mapping[str, Any]]) -> list[float] | None:
        return score_interval(values, [r.get("cluster", i) for i, r in enumerate(rows)]).scaled(100).bounds()

    return {
        "mcq_accuracy": interval([float(bool(r.get("correct"))) for r in records], records),
        "acc_at_50_iou": interval([float(r["metrics"]["hit_50"]) for r in records], records),
        "avg_iou": interval([float(r["metrics"]["iou"]) for r in correct], correct),
        "avg_giou": interval([float(r["metrics"]["giou"]) for r in correct], correct),
        "mean_bbox_reward": interval([bbox_reward(r["metrics"]["giou"]) for r in records], records),
    }


def _official_summary(
    aggregate: Callable[[list[official.HopRecord]], dict[str, Any]], note: str, iou_scale: float
) -> Callable[..., dict[str, Any]]:
    """Summaries from a public scorer's aggregation; ``iou_scale`` brings its avg IoU to percent."""

    def summarize(
        items: Sequence[StaticItem],
        records: Sequence[Mapping[str, Any]],
        options: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        def numbers(group: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
            printed = aggregate([official.HopRecord(**_hop_fields(r)) for r in group])
            return {"n": len(group), **printed, "avg_iou": printed["avg_iou"] * iou_scale}

        rows = [{"hop_view": k, **numbers(v)} for k, v in _by_hop_view(records).items()]
        return _summary(numbers(records), records, rows, [note])

    return summarize


def _hop_fields(record: Mapping[str, Any]) -> dict[str, Any]:
    m = record["metrics"]
    return {
        "prediction": m["prediction"],
        "pred_letter": m["pred_letter"],
        "answer_letter": m["answer_letter"],
        "correct": m["correct"],
        "pred_box": m["pred_box"],
        "iou": m["iou"],
        "error": m["error"],
    }


def _summary(
    headline: dict[str, Any],
    records: Sequence[Mapping[str, Any]],
    rows: list[dict[str, Any]],
    notes: list[str],
) -> dict[str, Any]:
    columns = list(rows[0]) if rows else ["hop_view"]
    return {
        "headline": headline,
        "counts": S.counts(records),
        "judge": None,
        "tables": {"by_hop_view": S.table(rows, columns)},
        "chart": {"table": "by_hop_view", "label": "hop_view", "value": "mcq_accuracy"},
        "notes": notes,
    }


REFERENCE = {
    "source": "MultihopSpatial paper, Table 1 (overall Acc / Acc@50IoU / avg IoU, %)",
    "rows": {
        "Qwen3-VL-4B-Instruct": [37.8, 31.0, 69.9],
        "Gemini-3-Pro": [64.7, 40.6, 55.0],
        "GPT-5.2": [19.3, 2.0, 11.8],
    },
}


def spec() -> BenchmarkSpec:
    """The registered MultihopSpatial benchmark."""
    project = ScoringMode(
        PROJECT_MODE,
        "project parsers: option texts, 0-1/0-1000 boxes, exact IoU, all items counted",
        score_project,
        summarize_project,
    )
    repo = ScoringMode(
        "multihop-repo",
        "the repository's benchmark script",
        _score_with(official.score_repo, "multihop-repo", True),
        _official_summary(
            official.summarize_repo,
            "repository script: accuracy and Acc@50IoU over items with a readable answer (the script prints avg IoU on 0-1; shown here in percent)",
            100.0,
        ),
        prompt_style="repo",
        differences=(
            "refusals leave the denominators",
            "IoU even for invalid boxes",
            "IoU rounded to 4 decimals before the 0.5 test",
            "a malformed box number (1.2.3) makes the item an error",
        ),
    )
    lmms = ScoringMode(
        "multihop-lmms-eval",
        "lmms-eval's multihopspatial task",
        _score_with(official.score_lmms, "multihop-lmms-eval", False),
        _official_summary(official.summarize_lmms, "lmms-eval: every item in every denominator", 1.0),
        differences=(
            "no IoU for invalid boxes (they drop out of avg IoU)",
            "IoU rounded to 4 decimals before the 0.5 test",
        ),
    )
    modes = {m.name: m for m in (project, repo, lmms)}
    return BenchmarkSpec(
        NAME,
        "MultihopSpatial",
        load,
        build_prompt,
        modes,
        prompt_styles=("paper", "repo"),
        max_new_tokens=512,
        reference=REFERENCE,
        gold_answer=gold_answer,
    )
