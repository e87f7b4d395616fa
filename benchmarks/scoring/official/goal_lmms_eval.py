"""The public lmms-eval goal-image scorer (``spatialtreebench``: ``manipulateeval``, ``agenticnaveval``),
reproduced from its observed behaviour, quirks included; registered as ``"lmms-eval"`` in
:data:`benchmarks.scoring.goal.SCORERS`.

Every convention (symbols, zyx extrinsic rotation, reference-frame translation, key order, single-step
navigation, penalties, binary success, its parse cascade) is listed in docs/guide/goal-scoring.md; the
project's own scorer (the paper's formulas) and the shared types are in :mod:`benchmarks.scoring.goal`.
"""

from __future__ import annotations

import ast
import json
import math
import re
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.spatial.transform import Rotation

from action_mapping import LMMS_EVAL_STEP_SIZES, Plan, Primitive
from action_mapping import parsing as plan_parsing
from benchmarks.scoring.goal import GoalReference, GoalScore, check_lengths, failed_score, gc_paused

LMMS_EVAL_DEFAULT_TRANSLATION_STEP = 0.02  # metres, when a segment does not give one
LMMS_EVAL_DEFAULT_ROTATION_STEP = math.radians(0.5)
# Its symbols, matched exactly: slot in [dx, dy, dz, yaw, pitch, roll] and sign; STOP moves nothing.
LMMS_EVAL_SYMBOLS: dict[str, tuple[int, int] | None] = {
    "W": (2, +1),
    "S": (2, -1),
    "D": (0, +1),
    "A": (0, -1),
    "space": (1, -1),
    "shift": (1, +1),
    "→": (3, +1),
    "←": (3, -1),
    "↑": (4, +1),
    "↓": (4, -1),
    "↻": (5, +1),
    "↺": (5, -1),
    "STOP": None,
}
_LMMS_SYMBOL_OF: dict[Primitive, str] = {
    Primitive.DOLLY_IN: "W",
    Primitive.DOLLY_OUT: "S",
    Primitive.TRUCK_RIGHT: "D",
    Primitive.TRUCK_LEFT: "A",
    Primitive.PEDESTAL_UP: "space",
    Primitive.PEDESTAL_DOWN: "shift",
    Primitive.PAN_RIGHT: "→",
    Primitive.PAN_LEFT: "←",
    Primitive.TILT_UP: "↑",
    Primitive.TILT_DOWN: "↓",
    Primitive.ROLL_CW: "↻",
    Primitive.ROLL_CCW: "↺",
    Primitive.STOP: "STOP",
}
# lmms-eval finds its fenced block with r"```json\s*(.*?)\s*```" (else r"```\s*(.*?)\s*```"), DOTALL, first
# match; _lmms_fenced finds the same block by scanning (the regex is quadratic on whitespace and on an
# unclosed fence).
_LMMS_TRAILING_COMMA = re.compile(r",\s*([}\]])")
_LMMS_NAV_TARGET_INDEX = 6  # agenticnaveval compares with pose min(6, N - 1)


class _Crash(Exception):
    """Input on which the public scorer itself would raise; we score it 0 and say why."""


def lmms_eval_decode(text: str) -> tuple[Any, str]:
    """lmms-eval's parse cascade. Returns ``(decoded value or None, how it was found)``.

    First ```json block, else first fenced block, else first ``{`` to last ``}``, else the whole text;
    then ``json.loads``, then ``json.loads`` with trailing commas removed, then ``ast.literal_eval`` of the
    unrepaired span. Text beyond ``parsing.MAX_PLAN_CHARS`` is not read: the answer is then undecodable
    (``None``), with the cut named in ``how``.
    """
    if len(text) > plan_parsing.MAX_PLAN_CHARS:  # read at call time, so that a benchmark can lift the cap
        return (
            None,
            f"input_truncated: {len(text):,} characters, over the {plan_parsing.MAX_PLAN_CHARS:,} read",
        )
    span, where = _lmms_span(text)
    for how, decode in (
        ("json", json.loads),
        ("json after removing trailing commas", lambda s: json.loads(_LMMS_TRAILING_COMMA.sub(r"\1", s))),
        ("Python literal", _literal_eval_quietly),
    ):
        try:
            return decode(span), f"{where}, {how}"
        except (ValueError, SyntaxError):  # JSONDecodeError is a ValueError
            continue
        except Exception as e:  # lmms-eval does not catch these (RecursionError, MemoryError)
            return None, f"{where}, {how} raised {type(e).__name__} (the public scorer would crash)"
    return None, f"{where}, undecodable"


def _literal_eval_quietly(span: str) -> Any:
    """``ast.literal_eval`` without the SyntaxWarnings it prints for model text such as ``5m``."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SyntaxWarning)
        warnings.simplefilter("ignore", DeprecationWarning)  # "invalid escape sequence" before Python 3.12
        return ast.literal_eval(span)


def _lmms_span(text: str) -> tuple[str, str]:
    for opening, where in (("```json", "```json block"), ("```", "fenced block")):
        block = _lmms_fenced(text, opening)
        if block is not None:
            return block, where
    i, j = text.find("{"), text.rfind("}")
    if i != -1 and j != -1 and j > i:
        return text[i : j + 1], "outermost braces"
    return text, "whole text"


def _lmms_fenced(text: str, opening: str) -> str | None:
    """The group of ``re.search(opening + r"\\s*(.*?)\\s*```", text, re.DOTALL)``, in linear time.

    Only the first opening can match: when no closing fence follows it, none follows a later one either.
    The lazy group ends where the whitespace before the first closing fence begins.
    """
    start = text.find(opening)
    if start < 0:
        return None
    begin = start + len(opening)
    while begin < len(text) and text[begin].isspace():
        begin += 1
    close = text.find("```", begin)
    if close < 0:
        return None
    end = close
    while end > begin and text[end - 1].isspace():
        end -= 1
    return text[begin:end]


def _lmms_step_delta(
    step: Mapping[str, Any], t_size: float, r_size: float, where: str, notes: list[str]
) -> list[float]:
    """One step's ``[dx, dy, dz, yaw, pitch, roll]`` with lmms-eval's reading, in Python's own semantics.

    Unknown symbols are skipped but keep their index in ``step_nums``; a missing count is 1; counts are
    used as written (no clipping, floats and negatives allowed). What makes the public code raise (a
    non-number count on a motion symbol, an unhashable symbol) raises :class:`_Crash`.
    """
    try:
        actions, nums = step.get("actions", []), step.get("step_nums", [])
        delta = [0.0] * 6
        for j, symbol in enumerate(actions):
            if symbol not in LMMS_EVAL_SYMBOLS:
                notes.append(f"unknown_symbol: {where}: {symbol!r} skipped (its step_nums index is used up)")
                continue
            count = nums[j] if j < len(nums) else 1
            slot = LMMS_EVAL_SYMBOLS[symbol]
            if slot is not None:
                delta[slot[0]] += slot[1] * ((t_size if slot[0] < 3 else r_size) * count)
    except Exception as e:  # any error here is one the public scorer raises too
        raise _Crash(f"{where}: {type(e).__name__}: {e}") from e
    try:
        finite = math.isfinite(sum(delta))  # a complex count (Python literal) raises TypeError here
    except TypeError:
        finite = False
    if not finite:
        raise _Crash(f"{where}: non-finite or non-numeric motion {delta!r}")
    return delta


def _lmms_sorted_keys(answer: Mapping[Any, Any]) -> list[Any]:
    """Step keys sorted by their first integer, or alphabetically when a key has none."""
    try:
        return sorted(answer.keys(), key=lambda k: int(re.search(r"\d+", k).group()))  # type: ignore[union-attr]
    except (AttributeError, ValueError):
        try:
            return sorted(answer.keys())
        except TypeError as e:
            raise _Crash(f"step keys cannot be sorted: {e}") from e
    except TypeError as e:
        raise _Crash(f"a step key is not a string: {e}") from e


def lmms_eval_reference(kind: str, extra_info: Mapping[str, Any]) -> GoalReference:
    """A reference holding only a raw lmms-eval ground truth (``optimal_rel_pose`` and ``"i->j"`` segments),
    e.g. a SpatialTree-Bench L4 item's ``extra_info``; only the ``lmms-eval`` scorer can use it."""
    try:
        check_lmms_eval_extra_info(extra_info)
    except ValueError as e:
        raise ValueError(f"not an lmms-eval L4 ground truth: {e}") from e
    return GoalReference(kind, Plan(), LMMS_EVAL_STEP_SIZES, lmms_eval_extra_info=extra_info)


@dataclass(frozen=True)
class LmmsEvalTruth:
    """The ground truth as lmms-eval sees it: poses ``[x, y, z, qx, qy, qz, qw]`` and per-segment step sizes."""

    poses: np.ndarray  # (N, 7)
    segment_sizes: tuple[tuple[float, float], ...]  # per segment: metres and radians per unit
    origin: str  # "extra_info" | "trajectory" | "plan"
    total_rotation: float  # sum of the rotation angles between consecutive poses (radians)


def check_lmms_eval_extra_info(extra: object) -> None:
    """Raise ``ValueError`` with a precise message when ``extra`` is not a usable lmms-eval ground truth."""
    if not isinstance(extra, Mapping) or "optimal_rel_pose" not in extra:
        raise ValueError(
            "lmms_eval_extra_info must be an object with 'optimal_rel_pose' and '0->1'-style segments"
        )
    poses = np.asarray(extra["optimal_rel_pose"], dtype=float)
    if poses.ndim != 2 or poses.shape[1] != 7 or len(poses) < 2 or not np.isfinite(poses).all():
        raise ValueError(
            f"optimal_rel_pose must be >= 2 finite rows of [x, y, z, qx, qy, qz, qw], got shape {poses.shape}"
        )
    if np.any(np.linalg.norm(poses[:, 3:], axis=1) < 1e-9):
        raise ValueError("optimal_rel_pose has a zero quaternion")
    segments = [k for k in extra if isinstance(k, str) and "->" in k]
    if not segments:
        raise ValueError(
            "lmms_eval_extra_info has no '0->1'-style segment keys (the navigation scorer needs one)"
        )
    for key in segments:
        if not re.fullmatch(r"\s*-?\d+\s*->.*", key) or not isinstance(extra[key], Mapping):
            raise ValueError(f"segment {key!r} must be named '<int>-><int>' and hold an object")
        for name in ("translation_step_size", "rotation_step_size"):
            v = extra[key].get(name, 1.0)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
                raise ValueError(f"segment {key!r}: {name} must be a finite number, got {v!r}")


def _truth_from_extra_info(extra: Mapping[str, Any]) -> tuple[np.ndarray, tuple[tuple[float, float], ...]]:
    keys = sorted((k for k in extra if "->" in k), key=lambda k: int(k.split("->")[0]))
    sizes = tuple(
        (
            float(extra[k].get("translation_step_size", LMMS_EVAL_DEFAULT_TRANSLATION_STEP)),
            float(extra[k].get("rotation_step_size", LMMS_EVAL_DEFAULT_ROTATION_STEP)),
        )
        for k in keys
    )
    return np.asarray(extra["optimal_rel_pose"], dtype=float), sizes


def _truths_from_trajectories(trajectories: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Poses relative to each trajectory's first camera (its frame is the reference frame), as
    ``optimal_rel_pose`` rows ``[x, y, z, qx, qy, qz, qw]``; all trajectories in one batch."""
    if not trajectories:
        return []
    lengths = [len(t) for t in trajectories]
    c2w = np.concatenate([np.asarray(t, dtype=float) for t in trajectories])
    firsts = np.repeat(c2w[np.concatenate([[0], np.cumsum(lengths)[:-1]])], lengths, axis=0)
    R0_T = np.swapaxes(firsts[:, :3, :3], 1, 2)
    rel = np.tile(np.eye(4), (len(c2w), 1, 1))
    rel[:, :3, :3] = R0_T @ c2w[:, :3, :3]  # inv(T0) @ Ti, with the exact inverse of a rigid transform
    rel[:, :3, 3] = np.einsum("nij,nj->ni", R0_T, c2w[:, :3, 3] - firsts[:, :3, 3])
    rows = np.concatenate([rel[:, :3, 3], Rotation.from_matrix(rel[:, :3, :3]).as_quat()], axis=1)
    return np.split(rows, np.cumsum(lengths)[:-1])


def lmms_eval_truths(refs: Sequence[GoalReference]) -> list[LmmsEvalTruth]:
    """The lmms-eval ground truth of each reference (cached on it).

    Taken from ``lmms_eval_extra_info`` when present; else from the C2W trajectory (poses relative to the
    first camera, the sample's step sizes for every segment); else from the ground-truth plan executed with
    lmms-eval's own kinematics from the identity, so a perfect answer scores 1 there too.
    """
    todo = [r for r in refs if "lmms_truth" not in r._cache]
    poses: dict[int, np.ndarray] = {}
    from_traj = {
        id(r): trajectory
        for r in todo
        if r.lmms_eval_extra_info is None and (trajectory := r.trajectory) is not None
    }
    poses.update(zip(from_traj, _truths_from_trajectories(list(from_traj.values()))))
    from_plan = [r for r in todo if r.lmms_eval_extra_info is None and r.trajectory is None]
    deltas = [_lmms_plan_deltas(r) for r in from_plan]
    rolled, counts = _lmms_rollout(np.tile([0, 0, 0, 0, 0, 0, 1.0], (len(from_plan), 1)), deltas)
    poses.update((id(r), rolled[i, : counts[i] + 1]) for i, r in enumerate(from_plan))
    parts = [_truth_parts(r, poses.get(id(r))) for r in todo]
    totals = _total_rotations([p[0] for p in parts])
    for r, (truth_poses, sizes, origin), total in zip(todo, parts, totals):
        r._cache["lmms_truth"] = LmmsEvalTruth(truth_poses, sizes, origin, float(total))
    return [r._cache["lmms_truth"] for r in refs]


def _truth_parts(ref: GoalReference, derived: np.ndarray | None) -> tuple[np.ndarray, tuple, str]:
    if ref.lmms_eval_extra_info is not None:
        return (*_truth_from_extra_info(ref.lmms_eval_extra_info), "extra_info")
    sizes = ((ref.step_sizes.translation, ref.step_sizes.rotation),) * len(ref.plan.steps)
    return derived, sizes, "trajectory" if ref.trajectory is not None else "plan"  # type: ignore[return-value]


def _lmms_plan_deltas(ref: GoalReference) -> list[list[float]]:
    answer = lmms_eval_answer(ref.plan, "manip")
    t, r = ref.step_sizes.translation, ref.step_sizes.rotation
    return [_lmms_step_delta(answer[k], t, r, k, []) for k in answer]


def _total_rotations(pose_arrays: Sequence[np.ndarray]) -> np.ndarray:
    """Per pose array, the summed angle of ``R_{i-1}^{-1} R_i`` over consecutive poses (radians)."""
    counts = np.array([max(len(p) - 1, 0) for p in pose_arrays], dtype=int)
    if counts.sum() == 0:
        return np.zeros(len(pose_arrays))
    firsts = np.concatenate([p[:-1, 3:] for p in pose_arrays if len(p) > 1])
    seconds = np.concatenate([p[1:, 3:] for p in pose_arrays if len(p) > 1])
    angles = (Rotation.from_quat(firsts).inv() * Rotation.from_quat(seconds)).magnitude()
    return np.bincount(
        np.repeat(np.arange(len(pose_arrays)), counts), weights=angles, minlength=len(pose_arrays)
    )


def _lmms_rollout(
    starts: np.ndarray, deltas: Sequence[Sequence[Sequence[float]]]
) -> tuple[np.ndarray, np.ndarray]:
    """lmms-eval's kinematics, batched: each step adds ``[dx, dy, dz]`` in the reference frame and
    left-multiplies ``from_euler("zyx", [yaw, pitch, roll])`` (extrinsic) onto the current rotation; the new
    quaternion is divided by ``(norm + 1e-12)``.

    Returns poses padded to ``(S, K + 1, 7)`` (sample i's are ``[i, :counts[i] + 1]``) and ``counts``.
    """
    counts = np.array([len(d) for d in deltas], dtype=int)
    width = int(counts.max(initial=0)) + 1
    poses = np.zeros((len(counts), width, 7))
    if not len(counts):
        return poses, counts
    poses[:, 0] = np.asarray(starts, dtype=float).reshape(-1, 7)
    flat = np.array([row for d in deltas for row in d], dtype=float).reshape(-1, 6)
    turns = Rotation.from_euler("zyx", flat[:, 3:]) if len(flat) else None
    first_row = np.concatenate([[0], np.cumsum(counts)[:-1]])
    for j in range(width - 1):
        idx = np.nonzero(counts > j)[0]
        rows = first_row[idx] + j
        poses[idx, j + 1, :3] = poses[idx, j, :3] + flat[rows, :3]
        q = (turns[rows] * Rotation.from_quat(poses[idx, j, 3:])).as_quat()  # type: ignore[index]
        poses[idx, j + 1, 3:] = q / (np.linalg.norm(q, axis=1, keepdims=True) + 1e-12)
    return poses, counts


def _rollout_rotations(poses: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """:func:`_total_rotations` of padded rollouts (only each sample's real steps count)."""
    if poses.shape[1] < 2:
        return np.zeros(len(poses))
    steps = np.arange(poses.shape[1] - 1)[None, :] < counts[:, None]
    a, b = poses[:, :-1, 3:][steps], poses[:, 1:, 3:][steps]
    angles = np.zeros(steps.shape)
    if len(a):
        angles[steps] = (Rotation.from_quat(a).inv() * Rotation.from_quat(b)).magnitude()
    return angles.sum(axis=1)


@dataclass
class _LmmsReading:
    """What lmms-eval reads from one answer: the step deltas and the segments they used."""

    decoded: Any
    how: str
    deltas: list[list[float]] = field(default_factory=list)
    sizes: list[tuple[float, float]] = field(default_factory=list)
    segments_used: int = 0
    notes: list[str] = field(default_factory=list)
    failure: tuple[str, str] | None = None  # (code, explanation)


def _lmms_read(text: str, kind: str, truth: LmmsEvalTruth) -> _LmmsReading:
    decoded, how = lmms_eval_decode(text if isinstance(text, str) else "")
    reading = _LmmsReading(decoded, how)
    if not isinstance(decoded, dict):
        code = "not_an_object" if decoded is not None else "undecodable"
        reading.failure = (code, f"decoded value is {type(decoded).__name__}, not an object ({how})")
        return reading
    try:
        (_lmms_read_navigation if kind == "nav" else _lmms_read_manipulation)(decoded, truth, reading)
    except _Crash as e:
        reading.failure = ("scorer_raises", f"the public scorer raises here ({e})")
    return reading


def _lmms_read_navigation(answer: dict, truth: LmmsEvalTruth, reading: _LmmsReading) -> None:
    t, r = truth.segment_sizes[-1]
    if "actions" not in answer and any(isinstance(k, str) and re.search(r"\d", k) for k in answer):
        reading.notes.append(
            "steps_ignored: navigation reads only top-level 'actions'/'step_nums'; the numbered steps were ignored"
        )
    reading.deltas.append(_lmms_step_delta(answer, t, r, "top level", reading.notes))
    reading.sizes.append((t, r))
    reading.segments_used = 1


def _lmms_read_manipulation(answer: dict, truth: LmmsEvalTruth, reading: _LmmsReading) -> None:
    keys = _lmms_sorted_keys(answer)
    n_segments = len(truth.segment_sizes)
    if len(keys) > n_segments:
        reading.notes.append(
            f"extra_steps: {len(keys)} steps for {n_segments} segments, the extra steps were dropped"
        )
    for key, (t, r) in zip(keys, truth.segment_sizes):
        if not isinstance(answer[key], dict):
            reading.notes.append(f"step_not_object: {key}: skipped, its segment is used up")
            continue
        reading.deltas.append(_lmms_step_delta(answer[key], t, r, str(key), reading.notes))
        reading.sizes.append((t, r))
    reading.segments_used = len(reading.deltas)


def _python_max0(x: np.ndarray) -> np.ndarray:
    """``max(0, x)`` as Python evaluates it for a NumPy float (NaN gives 0)."""
    return np.where(x > 0, x, 0.0)


def _lmms_metrics(initial: np.ndarray, target: np.ndarray, final: np.ndarray) -> dict[str, np.ndarray]:
    gt_vec, pred_vec = target[:, :3] - initial[:, :3], final[:, :3] - initial[:, :3]
    norm_gt, norm_pred = np.linalg.norm(gt_vec, axis=1), np.linalg.norm(pred_vec, axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        cos = np.einsum("ij,ij->i", gt_vec, pred_vec) / (norm_gt * norm_pred)
    both_still, both_move = (norm_gt < 1e-6) & (norm_pred < 1e-6), (norm_gt > 1e-6) & (norm_pred > 1e-6)
    direction = np.where(both_still, 1.0, np.where(both_move, _python_max0(cos), 0.0))
    pos_err = np.linalg.norm(final[:, :3] - target[:, :3], axis=1)
    rot_err = np.degrees(
        (Rotation.from_quat(final[:, 3:]).inv() * Rotation.from_quat(target[:, 3:])).magnitude()
    )
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(
            norm_gt > 1e-6, np.exp(-15.0 * (norm_pred / norm_gt - 1.0) ** 2), (norm_pred < 1e-6) * 1.0
        )
    return {
        "direction": direction,
        "position": np.exp(-13.863 * pos_err),
        "rotation": np.exp(-0.0154 * (rot_err / 5.0) ** 2),
        "distance_ratio": ratio,
        "position_error_m": pos_err,
        "rotation_error_deg": rot_err,
        "gt_movement_m": norm_gt,
        "pred_movement_m": norm_pred,
    }


def _lmms_penalty(m: dict[str, np.ndarray], gt_rot: np.ndarray, pred_rot: np.ndarray) -> np.ndarray:
    """Manipulation only: x0.7 for not moving when the truth moves > 0.1 m; x0.5 for not rotating (<= 2°)
    when the truth's summed rotation is > 5°."""
    stay = (m["gt_movement_m"] > 0.1) & (m["pred_movement_m"] < 0.03)
    no_turn = (gt_rot > math.radians(5)) & ~(pred_rot > math.radians(2))
    return np.where(stay, 0.7, 1.0) * np.where(no_turn, 0.5, 1.0)


def score_lmms_eval_batch(texts: Sequence[str], refs: Sequence[GoalReference]) -> list[GoalScore]:
    """Score raw model outputs with the public lmms-eval ``spatialtreebench`` conventions."""
    check_lengths(texts, refs)
    with gc_paused():
        return _score_lmms_eval_batch(texts, refs)


def _score_lmms_eval_batch(texts: Sequence[str], refs: Sequence[GoalReference]) -> list[GoalScore]:
    truths = lmms_eval_truths(refs)
    readings = [_lmms_read(t, r.kind, tr) for t, r, tr in zip(texts, refs, truths)]
    out: list[GoalScore] = [
        failed_score("lmms-eval", r.kind, rd.decoded, rd.notes, rd.failure[0], rd.failure[1])
        if rd.failure
        else None  # type: ignore[misc]
        for r, rd in zip(refs, readings)
    ]
    ok = [i for i, rd in enumerate(readings) if rd.failure is None]
    if not ok:
        return out
    starts, targets = np.empty((len(ok), 7)), np.empty((len(ok), 7))
    for j, i in enumerate(ok):
        poses, nav = truths[i].poses, refs[i].kind == "nav"
        starts[j] = poses[-2] if nav else poses[0]
        targets[j] = poses[min(_LMMS_NAV_TARGET_INDEX if nav else readings[i].segments_used, len(poses) - 1)]
    rolled, counts = _lmms_rollout(starts, [readings[i].deltas for i in ok])
    metrics = _lmms_metrics(starts, targets, rolled[np.arange(len(ok)), counts])
    manip = np.array([refs[i].kind == "manip" for i in ok])
    gt_rot = np.array([truths[i].total_rotation for i in ok])
    penalty = np.where(manip, _lmms_penalty(metrics, gt_rot, _rollout_rotations(rolled, counts)), 1.0)
    raw = (0.4 * metrics["direction"] + 0.35 * metrics["position"] + 0.25 * metrics["rotation"]) * penalty
    values = np.where(np.isnan(raw), 1.0, np.clip(raw, 0.0, 1.0))  # Python's max(0, min(1, nan)) is 1
    table, offsets = _lmms_step_table(rolled, counts, [readings[i] for i in ok])
    columns = {k: v.tolist() for k, v in metrics.items()}
    for j, i in enumerate(ok):
        parts = {k: v[j] for k, v in columns.items()}
        rows = slice(int(offsets[j]), int(offsets[j] + counts[j]))
        n_total = len(truths[i].segment_sizes)
        out[i] = _lmms_sample(
            refs[i].kind, readings[i], float(values[j]), float(penalty[j]), parts, n_total, table, rows
        )
    return out


def _lmms_step_table(
    rolled: np.ndarray, counts: np.ndarray, readings: Sequence[_LmmsReading]
) -> tuple[dict, np.ndarray]:
    """One table for the whole batch: each read step's motion, its segment's step sizes, the pose after it."""
    deltas = np.array([row for rd in readings for row in rd.deltas], dtype=float).reshape(-1, 6)
    sizes = np.array([row for rd in readings for row in rd.sizes], dtype=float).reshape(-1, 2)
    steps = np.arange(rolled.shape[1] - 1)[None, :] < counts[:, None]
    table = {
        "translation": deltas[:, :3],
        "yaw_pitch_roll": deltas[:, 3:],
        "step_sizes": sizes,
        "pose_after": rolled[:, 1:][steps],
    }
    return table, np.concatenate([[0], np.cumsum(counts)[:-1]])


def _lmms_sample(
    kind: str,
    reading: _LmmsReading,
    value: float,
    penalty: float,
    parts: dict[str, float],
    n_total: int,
    table: dict[str, np.ndarray],
    rows: slice,
) -> GoalScore:
    meta: dict[str, Any] = {"decoded_from": reading.how, "notes": list(reading.notes), "penalty": penalty}
    if kind == "manip":
        meta["binary_success"] = bool(
            reading.segments_used == n_total
            and parts["position_error_m"] < 0.2
            and parts["rotation_error_deg"] < 10
        )
        meta |= {"predicted_segments": reading.segments_used, "total_segments": n_total}
    scorer_name = "agenticnaveval" if kind == "nav" else "manipulateeval"
    text = (
        f"lmms-eval {scorer_name}: direction {parts['direction']:.3f}, position {parts['position']:.3f} "
        f"(error {parts['position_error_m']:.4f} m), rotation {parts['rotation']:.3f} "
        f"(error {parts['rotation_error_deg']:.2f}°); score = clip(0.4·dir + 0.35·pos + 0.25·rot)"
        f"{f' × penalty {penalty:g}' if kind == 'manip' else ''} = {value:.4f}"
    )
    if reading.notes:
        text += f"; {len(reading.notes)} note(s): {reading.notes[0]}"
    return GoalScore(
        value,
        "lmms-eval",
        kind,
        False,
        text,
        parts,
        reading.decoded,
        list(reading.notes),
        table=table,
        rows=rows,
        metadata=meta,
    )


def lmms_eval_answer(plan: Plan, kind: str) -> dict[str, Any]:
    """``plan`` in the form lmms-eval reads: its symbols; numbered steps for manipulation; for navigation
    a single top-level step (the plan's last, the only segment its navigation scorer compares)."""
    steps = []
    for step in plan.steps:
        pairs = [
            (_LMMS_SYMBOL_OF[a], n) for a, n in zip(step.actions, step.step_nums) if a in _LMMS_SYMBOL_OF
        ]
        entry: dict[str, Any] = {"actions": [s for s, _ in pairs], "step_nums": [n for _, n in pairs]}
        if step.gripper is not None:
            entry["gripper"] = step.gripper
        steps.append(entry)
    if kind == "nav":
        return steps[-1] if steps else {"actions": [], "step_nums": []}
    return {f"step_{i + 1}": s for i, s in enumerate(steps)}
