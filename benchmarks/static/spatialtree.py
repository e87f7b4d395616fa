"""SpatialTree-Bench (Li et al.): abilities in four levels (L1 perception ... L4 agentic), 27 sub-abilities,
one scorer per item, aggregated bottom-up with a weight tree.

Data: the lmms-eval layout (JSON/JSONL/parquet rows with ``question``, ``answer``, ``option`` (list),
``question_type``, ``hint`` (JSON: annotation uncertainties...), ``extra_info`` (JSON with ``metricfunc``
and the tags ``spatree0`` = level, ``spatree1`` = ability, ``spatree2`` = sub-ability), ``image`` / ``video``
(lists of paths relative to ``--image-root``)), or the flat equivalent with ``level``, ``ability``,
``sub_ability`` and ``scorer`` columns.
"""

from __future__ import annotations

import json
import math
import re
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.scoring import judge as judges
from benchmarks.scoring.aggregate import WeightNode, aggregate_tree, flatten_tree, load_weight_tree, percent
from benchmarks.scoring.metrics import mean, mra_with_units, orientation_score, relative_error
from benchmarks.scoring.official import cogmap
from benchmarks.scoring.official import spatialtree as official
from benchmarks.scoring.parsers import (
    ParseResult,
    answer_key_letters,
    failed,
    is_refusal,
    normalize_text,
    parse_number,
    parse_option,
    parse_parameters,
    parse_yes_no,
    parsed,
)
from benchmarks.scoring.result import JudgeScore, SampleScore, bounded_scorer
from benchmarks.static import summary as S
from benchmarks.static.items import (
    DataError,
    MediaRoot,
    StaticItem,
    choose_media_root,
    data_files,
    first_present,
    item_ids,
    iter_strings,
    plain_number,
    read_rows,
    require_fields,
)
from benchmarks.static.registry import PROJECT_MODE, BenchmarkSpec, LoadOptions, Prompt, ScoringMode
from benchmarks.stats.intervals import Interval, weighted_mean

NAME = "spatialtree"
#: lmms-eval's ``spatialtreebench`` generation budget (also goal-image ``predict``'s default: the same L4
#: tasks).
MAX_NEW_TOKENS = 16000
DEFAULT_WEIGHTS = Path(__file__).with_name("data") / "spatialtree_weights.json"
#: lmms-eval scorer name -> the project's task kind.
SCORERS = {
    "multichoiceeval": "mcq",
    "meanrelativeacc": "numeric",
    "gravityeval": "orientation",
    "judge": "judgment",
    "gpteval": "open_text",
    "affmask": "affordance",
    "cogmapeval": "cognitive_map",
    "manipulateeval": "l4_trajectory",
    "agenticnaveval": "l4_trajectory",
}
_OPTION_LABEL = re.compile(r"^\s*\(?([A-Z])[.):]\s*")


# --------------------------------------------------------------------------------------------------------
# Loading


def load(path: Path, options: LoadOptions) -> list[StaticItem]:
    """Read SpatialTree-Bench rows; the scorer type, tags and per-scorer fields are checked per item."""
    rows = [row for f in data_files(path) for row in read_rows(f)]
    ids = item_ids(rows, ("session_id", "id", "index"))
    sample = next((p for row in rows for p in iter_strings(first_present(row, ("image", "video")))), None)
    media_root = choose_media_root(Path(path), options.image_root, sample, options.check_media)
    return [_item(row, item_id, i, media_root) for i, (row, item_id) in enumerate(zip(rows, ids))]


def _json_field(value: Any, name: str, where: str) -> dict[str, Any]:
    if value is None or value == "":
        return {}
    if isinstance(value, Mapping):
        return dict(value)
    try:
        data = json.loads(value)
    except (TypeError, json.JSONDecodeError) as error:
        raise DataError(f"{where}: {name} is not a JSON object ({error})") from None
    if not isinstance(data, dict):
        raise DataError(f"{where}: {name} must be a JSON object")
    return data


def _item(row: Mapping[str, Any], item_id: str, index: int, media_root: MediaRoot) -> StaticItem:
    where = f"item {item_id}"
    require_fields(row, ("question", "answer"), where, NAME)
    extra = _json_field(row.get("extra_info"), "extra_info", where)
    hint = _json_field(row.get("hint"), "hint", where)
    scorer = str(first_present({**extra, **row}, ("metricfunc", "scorer")) or "")
    if scorer not in SCORERS:
        raise DataError(
            f"{where}: scorer {scorer!r} is not one of {', '.join(SCORERS)} (set extra_info.metricfunc or a 'scorer' column)"
        )
    tags = _tags(row, extra, where)
    option_list = [str(o) for o in (row.get("option") or [])]
    task = SCORERS[scorer]
    if scorer == "multichoiceeval" and str(row.get("question_type", "")) == "open":
        task = "numeric"  # lmms-eval scores open-typed multiple-choice items with MRA
    meta: dict[str, Any] = {
        "scorer": scorer,
        "hint": hint,
        "option_list": option_list,
        "question_type": str(row.get("question_type", "")),
    }
    try:
        meta.update(_key(task, row["answer"], option_list, hint, where))
    except DataError as error:
        # lmms-eval scores such an item (0: its metric finds nothing to match); the official mode must too,
        # so the item is kept with the problem, and the project's mode leaves it unscored (counted).
        meta.update(key=None, key_problem=str(error))
    media = tuple(
        media_root.resolve(p, where)
        for p in (*iter_strings(row.get("image")), *iter_strings(row.get("video")))
    )
    return StaticItem(
        benchmark=NAME,
        item_id=item_id,
        index=index,
        question=str(row["question"]),
        answer=row["answer"],
        task=task,
        options={chr(65 + i): _OPTION_LABEL.sub("", o) for i, o in enumerate(option_list)},
        media=media,
        modality="video" if row.get("video") else ("multi-image" if len(media) > 1 else "single-image"),
        category=f"{tags['level']}/{tags['ability']}",
        tags=tags,
        meta=meta,
    )


def _tags(row: Mapping[str, Any], extra: Mapping[str, Any], where: str) -> dict[str, Any]:
    spatree = {k: str(v) for k, v in extra.items() if re.fullmatch(r"spatree\d+", k) and v not in (None, "")}
    if not spatree:
        flat = [row.get(k) for k in ("level", "ability", "sub_ability")]
        spatree = {f"spatree{i}": str(v) for i, v in enumerate(flat) if v not in (None, "")}
    ordered = [spatree[k] for k in sorted(spatree, key=lambda k: int(k[7:]))]
    if len(ordered) < 2:
        raise DataError(
            f"{where}: needs level and ability tags (extra_info.spatree0/spatree1 or level/ability columns)"
        )
    return {
        "level": ordered[0],
        "ability": ordered[1],
        "sub_ability": ordered[2] if len(ordered) > 2 else None,
        "path": ordered,
        "spatree": spatree,
        "scorer_type": str(first_present({**extra, **row}, ("metricfunc", "scorer"))),
    }


def _key(
    task: str, answer: object, option_list: Sequence[str], hint: Mapping[str, Any], where: str
) -> dict[str, Any]:
    if task == "mcq":
        return {"key": _mcq_key(answer, option_list, where)}
    if task == "numeric":
        number = parse_number(str(answer))
        if not number.ok:
            raise DataError(f"{where}: numeric answer {answer!r} has no number")
        return {"key": number.value}
    if task == "orientation":
        return {"key": _orientation_key(answer, hint, where)}
    if task == "judgment":
        key = parse_yes_no(str(answer))
        if not key.ok:
            raise DataError(f"{where}: judge answer {answer!r} is neither yes nor no")
        return {"key": key.value}
    return {"key": answer}


def _mcq_key(answer: object, option_list: Sequence[str], where: str) -> str:
    if not option_list:
        raise DataError(f"{where}: a multichoiceeval item needs an 'option' list")
    try:
        letter = answer_key_letters(answer)[0]
    except ValueError:
        raise DataError(f"{where}: answer {answer!r} is not an option letter") from None
    if ord(letter) - 65 >= len(option_list):
        raise DataError(f"{where}: answer {letter} is beyond the {len(option_list)} options")
    return letter


def _orientation_key(answer: object, hint: Mapping[str, Any], where: str) -> dict[str, Any]:
    """The parameters and their uncertainties. Annotation problems do not refuse the item: lmms-eval scores
    such items (a zero or missing uncertainty, an answer that is no JSON object) and so must its mode; the
    problems are kept on the item, and the project's mode says what it makes of them."""
    try:
        gt = _json_field(answer, "answer", where)
    except DataError as error:
        return {"values": {}, "sigma": {}, "problems": [str(error)]}
    values = {k: float(v) for k, v in gt.items() if _is_number(v)}
    sigma = {k: float(hint[f"{k}_unc"]) for k in gt if _is_number(hint.get(f"{k}_unc"))}
    problems = [f"answer {k!r} is not a number" for k in gt if k not in values]
    problems += [f"hint has no numeric '{k}_unc'" for k in gt if k not in sigma]
    problems += [f"'{k}_unc' is {v:g} (not > 0)" for k, v in sigma.items() if not v > 0]
    if not gt:
        problems.append("the answer names no parameter")
    return {"values": values, "sigma": sigma, "problems": problems}


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


# --------------------------------------------------------------------------------------------------------
# Prompts (lmms-eval's templates, chosen by scorer)

_MCQ = "{}\nOptions : {}\nChoose the correct option. Return only the letter of the correct option (e.g., A, B, C, etc.). Always return in this format: 'answer: X'"
_MCQ_L4 = "{} \n Options : {}\nSelect the option that contains the correct action and the indication of whether the task has been completed. Return only the letter of the correct option (e.g., A, B, C, etc.). Always return in this format: 'answer: X' "
_AFFORDANCE = (
    "You will be given a textual description of a point of interest within an image. Your task is to locate this "
    "point and return its normalized coordinates.\nThe point to identify is: **{}**\n**Instructions for Coordinate "
    "Output:**\n1.  **Format**: The output must be a single JSON array in the format `[x, y]`.\n2.  **Coordinate "
    "System**: The origin `(0, 0)` is at the top-left corner of the image.\n3.  **Normalization**:\n- `x` is the "
    "horizontal coordinate, normalized by the image's width.\n- `y` is the vertical coordinate, normalized by the "
    "image's height.\n4.  **Value Range**: Both `x` and `y` must be float values strictly between 0 and 1 (i.e., "
    "`0 < x < 1` and `0 < y < 1`).\n5.  **Strict Output**: Do not provide any text or explanation other than the "
    "coordinate array itself.\n**Example:**\n- If the image is 1000px wide and 800px high, and the point is at pixel "
    "(500, 200), the output should be `[0.5, 0.25]`.\nNow, based on the image provided and the target description "
    "above, output the coordinates."
)
_L4 = "{}\nYou must ensure that the action intensity values represented by `step_nums` are within the range of 0 to 10, inclusive.\nPlease provide the action output formatted as a JSON object and enclosed within a ```json``` code block. Please do your best to move and try. This can help you get more rewards."
_NUMERIC = "{} Do not response anything other than a single number! If you cannot determine the answer, please guess a value."
_TEMPLATES = {
    "judge": "{}",
    "affmask": _AFFORDANCE,
    "manipulateeval": _L4,
    "agenticnaveval": _L4,
    "meanrelativeacc": _NUMERIC,
}


def build_prompt(item: StaticItem, style: str = "paper") -> Prompt:
    """The template lmms-eval picks for the item's scorer (verbatim, typos included)."""
    scorer, options = item.meta["scorer"], item.meta["option_list"]
    if scorer == "multichoiceeval" and options:
        template = _MCQ_L4 if item.tags["level"] == "L4" else _MCQ
        return Prompt(template.format(item.question, "\n".join(options)), item.media)
    return Prompt(_TEMPLATES.get(scorer, "{} ").format(item.question), item.media)


def gold_answer(item: StaticItem, style: str = "paper") -> str:
    """The ground truth in the format the item's template asks: "answer: B", a single number, the
    orientation parameters as JSON, yes/no, a normalised ``[x, y]`` on the affordance mask, the reference
    text for open answers, and the published answer as is for what rules do not score (maps, L4 plans)."""
    key: Any = item.meta.get("key")  # the task's own key: a letter, a number, the orientation values...
    if item.task == "mcq":
        return f"answer: {key}"
    if item.task == "numeric":
        return plain_number(key.value)
    if item.task == "orientation":
        return json.dumps(key["values"])
    if item.task == "judgment":
        return str(key)
    if item.task == "affordance":
        return _mask_point(str(item.answer))
    if item.task == "cognitive_map" and item.meta["hint"].get("cogmap") is not None:
        reference = item.meta["hint"]["cogmap"]
        text = reference if isinstance(reference, str) else json.dumps(reference)
        return f"{text}\n{item.answer}."  # the map, then the letter as "X." (the answer reader's first rule)
    return item.answer if isinstance(item.answer, str) else json.dumps(item.answer)


def _mask_point(mask_b64: str) -> str:
    """``[x, y]`` (0-1) of the middle pixel, in reading order, among the mask's highest-valued pixels."""
    mask = official.decode_mask(mask_b64)
    if mask is None:
        return "[0.5, 0.5]"  # the reference mask itself is unreadable: every answer scores 0
    rows, cols = np.nonzero(mask == mask.max())
    row, col = int(rows[len(rows) // 2]), int(cols[len(cols) // 2])
    height, width = mask.shape[:2]
    x = col / (width - 1) if width > 1 else 0.5
    y = row / (height - 1) if height > 1 else 0.5
    return f"[{plain_number(x)}, {plain_number(y)}]"


# --------------------------------------------------------------------------------------------------------
# Project scoring


def score_project(item: StaticItem, response: str) -> SampleScore:
    """One rule per task kind; open answers, cognitive maps and L4 trajectories are not scored by rules, nor
    items whose answer key is unusable (recorded on the item by the loader)."""
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
    return _PROJECT_SCORERS[item.task](item, response)


def _mcq(item: StaticItem, response: str) -> SampleScore:
    result = parse_option(response, item.options)
    correct = result.ok and result.value == item.meta["key"]
    return SampleScore(
        float(correct), correct, result, "mcq", f"read {result.value!r}, key {item.meta['key']!r}"
    )


def _numeric(item: StaticItem, response: str) -> SampleScore:
    result, key = parse_number(response), item.meta["key"]
    if not result.ok:
        return SampleScore(0.0, None, result, "mra", "no number read: MRA 0")
    score, why = mra_with_units(result.value, key)
    error = (
        relative_error(result.value.value, key.value)
        if key.unit is None and result.value.unit is None
        else None
    )
    metrics = {"relative_error": error if error not in (None, float("inf")) else None}
    return SampleScore(score, None, result, "mra", f"{result.value.value} vs {key.value}: {why}", metrics)


def _orientation(item: StaticItem, response: str) -> SampleScore:
    """Mean Gaussian kernel over the parameters. An uncertainty of 0 (or below) is the kernel's limit, exact
    match; an item whose annotation lacks a number or an uncertainty cannot be scored (None, counted)."""
    key = item.meta["key"]
    unusable = [p for p in key["problems"] if "not > 0" not in p]
    if unusable or not key["values"]:
        why = "; ".join(unusable) or "no parameters"
        return SampleScore(
            None,
            None,
            failed("bad_annotation", why),
            "orientation",
            f"not scored: {why}",
            {"problem": "; ".join(key["problems"])},
        )
    result = parse_parameters(response, key["values"])
    if not result.ok:
        return SampleScore(0.0, None, result, "orientation", "no parameters read: 0")
    sharp = {k: v for k, v in key["sigma"].items() if not v > 0}
    if sharp:
        scores = [_exact_or_kernel(result.value.get(k), v, key["sigma"][k]) for k, v in key["values"].items()]
        score = sum(scores) / len(scores)
        note = f"; {', '.join(sharp)} with uncertainty <= 0 scored as exact match (the kernel's limit)"
        return SampleScore(
            score,
            None,
            result,
            "orientation",
            f"Gaussian kernel over {', '.join(key['values'])}{note}",
            {"problem": "; ".join(key["problems"])},
        )
    score = orientation_score(result.value, key["values"], key["sigma"])
    return SampleScore(score, None, result, "orientation", f"Gaussian kernel over {', '.join(key['values'])}")


def _exact_or_kernel(pred: float | None, gt: float, sigma: float) -> float:
    if pred is None:
        return 0.0
    if not sigma > 0:
        return 1.0 if pred == gt else 0.0
    return orientation_score({"p": pred}, {"p": gt}, {"p": sigma})


def _judgment(item: StaticItem, response: str) -> SampleScore:
    result = parse_yes_no(response)
    correct = result.ok and result.value == item.meta["key"]
    return SampleScore(
        float(correct), correct, result, "yes_no", f"read {result.value!r}, key {item.meta['key']!r}"
    )


def _affordance(item: StaticItem, response: str) -> SampleScore:
    score, why = official.affordance_score(response, str(item.answer))
    result = parsed(why, "point") if why.startswith("mask value") else failed("no_point", why)
    return SampleScore(score, None, result, "affordance_mask", why)


def _open_text(response: str) -> ParseResult:
    """An open answer as read: the text, unless it is empty or a refusal (nothing for a judge to grade)."""
    if not response.strip():
        return failed("empty", "the response is empty")
    if is_refusal(response):
        return failed("refusal", "the response declines to answer")
    return parsed(response, "open_text")


def _needs_judge(item: StaticItem, response: str) -> SampleScore:
    return SampleScore(
        None,
        None,
        _open_text(response),
        "judge_required",
        "open answer: scored only by an LLM judge (--judge-model)",
    )


def _unsupported(item: StaticItem, response: str) -> SampleScore:
    why = {
        "cognitive_map": "cognitive maps are scored by the spatialtree-lmms-eval mode only (cogmapeval), not by the project's rules",
        "l4_trajectory": "L4 trajectories are scored by goal-image scoring (benchmarks.scoring.goal), not here",
    }[item.task]
    return SampleScore(None, None, parsed(response, "unscored"), "unsupported", why)


_PROJECT_SCORERS = {
    "mcq": _mcq,
    "numeric": _numeric,
    "orientation": _orientation,
    "judgment": _judgment,
    "affordance": _affordance,
    "open_text": _needs_judge,
    "cognitive_map": _unsupported,
    "l4_trajectory": _unsupported,
}


def judge_prompt(item: StaticItem, response: str) -> str | None:
    """Open answers (lmms-eval's ``gpteval`` items) go to the project's rubric judge."""
    if item.task != "open_text":
        return None
    return judges.open_answer_judge_prompt(
        str(item.meta["hint"].get("prompt") or item.question), str(item.answer), response
    )


def judge_score(item: StaticItem, response: str, reply: str) -> JudgeScore:
    """The rubric judge's ``{"score": x}``."""
    return judges.parse_json_score(reply)


def judge_gold(item: StaticItem, response: str) -> str:
    """A perfect rubric judge's reply: full score when the response says the reference answer (normalised
    text), else 0."""
    same = normalize_text(response) == normalize_text(str(item.answer))
    return json.dumps(
        {
            "score": 1.0 if same else 0.0,
            "reason": "matches the reference" if same else "differs from the reference",
        }
    )


# --------------------------------------------------------------------------------------------------------
# lmms-eval scoring


@bounded_scorer
def score_lmms(item: StaticItem, response: str) -> SampleScore:
    """lmms-eval's metric for the item's scorer (see :mod:`benchmarks.scoring.official.spatialtree`); an item
    whose answer key is unusable gets upstream's score all the same, with the problem recorded."""
    result = _score_lmms(item, response)
    problem = item.meta.get("key_problem")
    return replace(result, metrics={**result.metrics, "problem": problem}) if problem else result


def _score_lmms(item: StaticItem, response: str) -> SampleScore:
    scorer, name = item.meta["scorer"], f"spatialtree-lmms-eval/{item.meta['scorer']}"
    if item.task == "numeric":
        score, number = official.mean_relative_accuracy(response, item.answer)
        return SampleScore(
            score, None, ParseResult(number or None, bool(number), "find_number", f"read {number!r}"), name
        )
    if scorer == "multichoiceeval":
        letter, rule = official.parse_multiple_choice(response, item.meta["option_list"], item.item_id)
        correct = letter == item.meta["key"]
        parse = ParseResult(
            letter,
            rule != "random_fallback",
            rule,
            "random letter: nothing read" if rule == "random_fallback" else rule,
        )
        return SampleScore(float(correct), correct, parse, name, f"read {letter}, key {item.meta['key']}")
    if scorer == "gravityeval":
        score, why = official.gravity_score(response, str(item.answer), item.meta["hint"])
        ok = why.startswith("gaussian kernel")
        problems = item.meta["key"]["problems"]
        if problems:  # upstream scores the item all the same (0 for the affected fields, or 0 on its error)
            why += f"; annotation: {'; '.join(problems)}"
        metrics = {"problem": "; ".join(problems)} if problems else {}
        return SampleScore(
            score, None, ParseResult(None, ok, "json" if ok else "unreadable", why), name, why, metrics
        )
    if scorer == "judge":
        read = official.last_yes_no(response)
        correct = read == str(item.answer).lower()
        return SampleScore(
            float(correct), correct, ParseResult(read, read != "other", "last_yes_no", f"read {read!r}"), name
        )
    if scorer == "affmask":
        return _affordance(item, response)
    if scorer == "gpteval":
        return SampleScore(
            0.0,
            None,
            _open_text(response),
            name,
            "no judge in the rule-based path: lmms-eval scores 0 when its judge fails",
        )
    if scorer == "cogmapeval":
        return _cogmap_lmms(item, response, name)
    return _l4_lmms(item, response, name)


def _cogmap_lmms(item: StaticItem, response: str, name: str) -> SampleScore:
    """lmms-eval's ``cogmapeval`` (:mod:`benchmarks.scoring.official.cogmap`): 0.2 answer + 0.6 map similarity
    + 0.2 isomorphism; where upstream's metric raises, the item scores 0 with the problem recorded."""
    try:
        result = cogmap.score(response, item.answer, item.meta["hint"])
    except cogmap.CogmapError as error:
        problem = f"upstream's metric raises here and the item scores 0: {error}"
        return SampleScore(0.0, None, failed("cogmap", problem), name, problem, {"problem": problem})
    sim = result.similarity
    read = result.answer is not None or sim.parsable_json
    parse = ParseResult(
        result.answer,
        read,
        "cogmap",
        f"answer {result.answer!r}; map parsable {sim.parsable_json}, valid {sim.valid_graph}",
    )
    why = (
        f"0.2 x answer {int(result.answer_correct)} + 0.6 x similarity {sim.overall:.3f} + 0.2 x isomorphic "
        f"{int(sim.isomorphic)} (rotation {sim.best_rotation}, coverage {sim.coverage:.2f})"
    )
    metrics = {
        "answer_correct": result.answer_correct,
        "overall_similarity": sim.overall,
        "rotation_invariant_isomorphic": sim.isomorphic,
        "directional_similarity": sim.directional,
        "facing_similarity": sim.facing,
        "coverage": sim.coverage,
        "parsable_json": sim.parsable_json,
        "valid_format": sim.valid_format,
        "valid_graph": sim.valid_graph,
    }
    return SampleScore(result.score, None, parse, name, why, metrics)


def _l4_lmms(item: StaticItem, response: str, name: str) -> SampleScore:
    """L4 trajectories through the project's goal scorer in its lmms-eval mode, the ground truth being the
    item's ``hint`` (``optimal_rel_pose`` and ``"i->j"`` segments), which upstream passes to its metric. A
    ground truth that scorer cannot use makes upstream's metric raise, and its ``process_results`` scores
    the item 0: so does this mode, with the problem recorded."""
    from benchmarks.scoring import goal
    from benchmarks.scoring.official.goal_lmms_eval import lmms_eval_reference

    kind = "nav" if item.meta["scorer"] == "agenticnaveval" else "manip"
    try:
        reference = lmms_eval_reference(kind, item.meta["hint"])
    except ValueError as error:
        problem = f"upstream's metric raises here and the item scores 0: {error}"
        return SampleScore(
            0.0, None, parsed(response, "unscorable_truth", problem), name, problem, {"problem": problem}
        )
    result = goal.score_goal(response, reference, scorer="lmms-eval")
    parse = (
        failed("l4_plan", result.explanation)
        if result.parse_failed
        else parsed(result.parsed, "l4_plan", "plan read")
    )
    metrics = {
        "components": {k: float(v) for k, v in result.components.items()},
        "notes": list(result.parse_errors),
    }
    return SampleScore(result.value, None, parse, name, result.explanation, metrics)


# --------------------------------------------------------------------------------------------------------
# Summaries


def _weights(options: Mapping[str, Any] | None) -> WeightNode:
    path = (options or {}).get("weights") or DEFAULT_WEIGHTS
    return load_weight_tree(path)


def _norm(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


def _child(node: WeightNode, name: str) -> WeightNode | None:
    """The child named ``name``, ignoring case, spaces and punctuation; a unique prefix also matches
    ("Underst." and "Understanding")."""
    wanted = _norm(name)
    exact = [c for c in node.children if _norm(c.name) == wanted]
    if exact:
        return exact[0]
    prefixed = [
        c
        for c in node.children
        if wanted and (_norm(c.name).startswith(wanted) or wanted.startswith(_norm(c.name)))
    ]
    return prefixed[0] if len(prefixed) == 1 else None


def tree_path(tree: WeightNode, tags: Sequence[str]) -> tuple[str, ...] | None:
    """The tree path of an item's (level, ability, sub-ability) tags, or ``None`` when they match no leaf."""
    node = tree
    path: list[str] = []
    for tag in tags:
        child = _child(node, tag)
        if child is None:
            return None
        node, path = child, [*path, child.name]
    return tuple(path) if not node.children else None


def summarize_project(
    items: Sequence[StaticItem],
    records: Sequence[Mapping[str, Any]],
    options: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Leaves matched by full path; parents average their children with data, renormalising the weights."""
    tree = _weights(options)
    result, missing, unmatched = _aggregate_project(tree, records)
    notes = [
        "parents are weighted means of the children that have data (missing leaves excluded, weights renormalised)"
    ]
    summary = _summary(result, records, missing, unmatched, notes)
    summary["headline_ci"] = _tree_intervals(tree, records)
    _add_judge_assisted(summary, records, lambda judged: _aggregate_project(tree, judged)[0])
    return summary


def _tree_intervals(tree: WeightNode, records: Sequence[Mapping[str, Any]]) -> dict[str, list[float] | None]:
    """95 % intervals (percent) of the project's headline, built as the tree is: each leaf's interval over
    its items (clustered by image or video), each parent's the weighted mean of its children with data
    (:func:`benchmarks.stats.intervals.weighted_mean`, weights renormalised as the score's)."""
    pools: dict[tuple[str, ...], list[Mapping[str, Any]]] = defaultdict(list)
    for record in records:
        path = tree_path(tree, record["tags"]["path"])
        if path is not None and record.get("score") is not None:
            pools[path].append(record)

    def node_interval(node: WeightNode, path: tuple[str, ...]) -> Interval:
        if not node.children:
            return S.score_estimate(pools.get(path, []))
        parts = [node_interval(c, (*path, c.name)) for c in node.children]
        return weighted_mean(parts, [c.weight for c in node.children], bounds=(0.0, 100.0))

    levels = {c.name: node_interval(c, (c.name,)).bounds() for c in tree.children}
    return {"overall": node_interval(tree, ()).bounds(), **{f"level_{k}": v for k, v in levels.items()}}


def _aggregate_project(
    tree: WeightNode, records: Sequence[Mapping[str, Any]]
) -> tuple[dict[str, Any], list[str], dict[str, int]]:
    pools: dict[tuple[str, ...], list[float]] = defaultdict(list)
    unmatched: dict[str, int] = defaultdict(int)
    for record in records:
        path = tree_path(tree, record["tags"]["path"])
        if path is None:
            unmatched["/".join(record["tags"]["path"])] += 1
        elif record.get("score") is not None:
            pools[path].append(float(record["score"]))
    result = aggregate_tree(tree, lambda p: mean(pools[p]) if pools.get(p) else None, missing="exclude")
    return result, ["/".join(p) for p in tree.leaves() if not pools.get(p)], dict(unmatched)


def summarize_lmms(
    items: Sequence[StaticItem],
    records: Sequence[Mapping[str, Any]],
    options: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """lmms-eval's aggregation: pooled by deepest tag name, missing leaves count 0."""
    tree = _weights(options)
    scored = [(r["tags"]["spatree"], float(r["score"])) for r in records if r.get("score") is not None]
    result = official.aggregate_by_name(tree, scored)
    names = {
        official.leaf_name(tags) for tags in {json.dumps(t, sort_keys=True): t for t, _ in scored}.values()
    }
    missing = ["/".join(p) for p in tree.leaves() if p[-1].replace(" ", "") not in names]
    notes = ["lmms-eval: leaves matched by name only (spaces removed); a leaf without items counts as 0"]
    summary = _summary(result, records, missing, {}, notes)
    _add_judge_assisted(
        summary,
        records,
        lambda judged: official.aggregate_by_name(
            tree, [(r["tags"]["spatree"], float(r["score"])) for r in judged if r.get("score") is not None]
        ),
    )
    return summary


def _add_judge_assisted(
    summary: dict[str, Any],
    records: Sequence[Mapping[str, Any]],
    aggregate: Callable[[list[Mapping[str, Any]]], Mapping[str, Any]],
) -> None:
    """The published pipeline's numbers: open answers (``gpteval``) take the judge's score where it gave a
    usable one, every other item its rule-based score; added to the judge section, never to the headline."""
    if summary["judge"] is None:
        return
    judged = [
        {**r, "score": r["judge"]["score"]}
        if r["task"] == "open_text" and (r.get("judge") or {}).get("ok")
        else r
        for r in records
    ]
    result = aggregate(judged)
    summary["judge"]["judge_assisted_overall"] = percent(result["score"])
    summary["judge"]["judge_assisted_item_mean"] = S.mean_score(judged)


def _summary(
    result: Mapping[str, Any],
    records: Sequence[Mapping[str, Any]],
    missing: list[str],
    unmatched: Mapping[str, int],
    notes: list[str],
) -> dict[str, Any]:
    levels = {c["name"]: percent(c["score"]) for c in result["children"]}
    unscored: defaultdict[str, int] = defaultdict(int)
    for record in records:
        if record.get("score") is None:
            unscored[record["scorer"]] += 1
    return {
        "headline": {"overall": percent(result["score"]), **{f"level_{k}": v for k, v in levels.items()}},
        "counts": {
            **S.counts(records),
            "unscored_by_scorer": dict(unscored),
            "unmatched_tags": dict(unmatched),
        },
        "judge": S.judge_section(records),
        "tables": {
            "tree": S.table(flatten_tree(result), ["node", "depth", "weight", "score"]),
            "by_level": S.grouped(records, S.tag("level"), "level"),
            "by_ability": S.grouped(records, lambda r: r["category"], "ability"),
            "by_scorer": S.grouped(records, S.tag("scorer_type"), "scorer"),
        },
        "chart": {"table": "by_ability", "label": "ability", "value": "score"},
        "missing_leaves": missing,
        "notes": notes,
    }


REFERENCE = {
    "source": "SpatialTree paper, Table 2 (Avg., weighted; %)",
    "rows": {
        "Gemini2.5-Pro": 50.9,
        "GPT5": 46.7,
        "GPT-4o": 44.2,
        "Qwen2.5VL-72B": 41.3,
        "Qwen2.5VL-7B": 29.0,
    },
}


def spec() -> BenchmarkSpec:
    """The registered SpatialTree-Bench benchmark."""
    project = ScoringMode(
        PROJECT_MODE,
        "project parsers, leaves matched by full path, missing leaves excluded",
        score_project,
        summarize_project,
        judge_prompt=judge_prompt,
        judge_score=judge_score,
        judge_gold=judge_gold,
    )
    lmms = ScoringMode(
        "spatialtree-lmms-eval",
        "lmms-eval's spatialtreebench metrics and aggregation",
        score_lmms,
        summarize_lmms,
        judge_prompt=judge_prompt,
        judge_score=judge_score,
        judge_gold=judge_gold,
        differences=(
            "missing abilities count as 0",
            "abilities matched by name only: a tag shared by two levels lands in both",
            "random letter when no option is found (seeded per item here)",
            "gpteval items score 0 without a judge",
        ),
        headline_note="lmms-eval counts abilities without items as 0 and open (gpteval) answers as 0 without a judge, so a "
        "perfect model scores below 100 on a partial set; the project mode leaves both out",
    )
    return BenchmarkSpec(
        NAME,
        "SpatialTree-Bench",
        load,
        build_prompt,
        {m.name: m for m in (project, lmms)},
        max_new_tokens=MAX_NEW_TOKENS,
        reference=REFERENCE,
        gold_answer=gold_answer,
    )
