"""LLM-judge prompts and the parsing of judge replies (pure; the runner sends the prompts to a Backend).

A judge score is always reported next to, never instead of, the rule-based score.
"""

from __future__ import annotations

import json
import re

from benchmarks.scoring.parsers import bounded, outer_braces
from benchmarks.scoring.result import JudgeScore

#: SpatialScore's published evaluator prompt (paper, Appendix B.1), with VSI-Bench's MRA settings.
SPATIALSCORE_MRA_JUDGE = (
    "You are an evaluator. Your ONLY job is to compute a score using the following algorithm. Do NOT answer or "
    "solve the question.\n\n"
    "TASK TYPE:\n"
    '- If Type == "counting": treat both GT and PRED as plain scalar numbers (no unit conversion). '
    '- If Type == "distance": parse numeric value + unit; if PRED unit is missing, borrow GT unit; if both are '
    "missing and both look like plain numbers, treat as scalar. "
    '- If a numeric RANGE like "10-15" appears, use the MAX value (e.g., 15).\n\n'
    "ALGORITHM (VSI-Bench MRA):\n"
    "1) Compute abs_dist_norm: - For scalar/counting: abs_dist_norm = abs(pred - gt) / gt (if gt == 0, set "
    "abs_dist_norm = +Infinity) - For distance: convert both to centimeters using: meter (m): 100 cm; centimeter "
    "(cm): 1 cm; millimeter (mm): 0.1 cm; inch (in): 2.54 cm; foot (ft): 30.48 cm. Then abs_dist_norm = "
    "abs(pred_cm - gt_cm) / gt_cm (if gt_cm == 0, set +Infinity).\n\n"
    "2) For thresholds C = linspace(start, end, steps) with steps = int((end-start)/interval+2):\n"
    "accuracy(C) = 1 if abs_dist_norm <= (1 - C) else 0 mean_relative_accuracy = average of accuracy(C) over "
    "all thresholds.\n\n"
    "3) The final score is this mean_relative_accuracy, a float in [0,1].\n\n"
    "IMPORTANT OUTPUT RULE:\n"
    "- After you finish the calculation, OUTPUT EXACTLY ONE LINE at the end in the form: output: <float> For "
    "example: output: 0.83\n\n"
    "Config:\n- start={start} - end={end} - interval={interval}\n\n"
    "Inputs:\n"
    '- Type: {open_type} # "counting" or "distance" - gt_answer: {gt_answer} - pred_answer: {pred_answer}'
)

#: The project's rubric for open answers without a numeric key (SpatialTree's caption-style items).
OPEN_ANSWER_JUDGE = (
    "You grade an answer to a spatial-reasoning question against a reference answer.\n"
    "Compare what matters spatially: the objects, the motions or relations, their directions and their order. "
    "Ignore wording and style. Missing or wrong key elements lower the score.\n\n"
    "Question:\n{question}\n\nReference answer:\n{reference}\n\nAnswer to grade:\n{response}\n\n"
    'Reply with one JSON object and nothing else: {{"score": <a number from 0 to 1>, "reason": "<one sentence>"}}'
)


def spatialscore_judge_prompt(open_type: str, gt_answer: str, pred_answer: str) -> str:
    """The SpatialScore evaluator prompt for one open-ended item (``open_type``: counting or distance)."""
    return SPATIALSCORE_MRA_JUDGE.format(
        start=0.5, end=0.95, interval=0.05, open_type=open_type, gt_answer=gt_answer, pred_answer=pred_answer
    )


def open_answer_judge_prompt(question: str, reference: str, response: str) -> str:
    """The project's open-answer rubric filled for one sample."""
    return OPEN_ANSWER_JUDGE.format(question=question, reference=reference, response=response)


def parse_output_line(reply: str) -> JudgeScore:
    """Read SpatialScore's ``output: <float>`` (the last such line); the value must lie in [0, 1]."""
    reply, cut = bounded(reply or "")
    if cut:
        return JudgeScore(None, False, f"judge reply not read: {cut}")
    found = re.findall(r"output\s*:\s*([-+]?\d*\.?\d+)", reply, re.IGNORECASE)
    if not found:
        return JudgeScore(None, False, "no 'output: <float>' line in the judge reply")
    return _in_unit_range(float(found[-1]), "output line")


def parse_json_score(reply: str) -> JudgeScore:
    """Read ``{"score": x}`` from a judge reply (fenced or bare JSON); x must lie in [0, 1]."""
    reply, cut = bounded(reply or "")
    if cut:
        return JudgeScore(None, False, f"judge reply not read: {cut}")
    block = outer_braces(reply)
    if block is None:
        return JudgeScore(None, False, "no JSON object in the judge reply")
    try:
        data = json.loads(block)
    except (ValueError, RecursionError) as error:  # ValueError: also an int over 4,300 digits
        return JudgeScore(None, False, f"judge JSON does not parse: {error}")
    value = data.get("score") if isinstance(data, dict) else None
    if isinstance(value, bool) or not isinstance(value, int | float):
        return JudgeScore(None, False, f"judge JSON has no numeric 'score': {block[:80]!r}")
    try:
        score, reason = float(value), str(data.get("reason", ""))
    except (OverflowError, ValueError) as error:  # an int beyond the float range or too long to print
        return JudgeScore(None, False, f"judge JSON 'score' or 'reason' is unreadable: {error}")
    return _in_unit_range(score, reason)


def _in_unit_range(value: float, why: str) -> JudgeScore:
    if not 0.0 <= value <= 1.0:
        return JudgeScore(None, False, f"judge score {value} is outside [0, 1]")
    return JudgeScore(value, True, why)
