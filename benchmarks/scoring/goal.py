"""SpatialTree L4 goal-image scorers: the paper's formulas and the public lmms-eval variant, by name.

A model sees a start image and a goal image and writes the primitive actions that connect them; these
scorers compare its raw output text with a :class:`GoalReference` (ground-truth plan, step sizes,
optionally the camera-to-world trajectory). Both are pure and batched: ``get_scorer(name)(texts, refs)``
scores thousands of samples with a few array operations and returns one :class:`GoalScore` per sample,
with the parsed answer, a per-step breakdown and an explanation, so every number can be traced.

``"paper"`` (SpatialTree Appendix C.3; the project's default). Per aligned step, with the translation
vectors Δp (metres, in the camera frame at the start of the step) of the prediction and the ground truth::

    s_d    = max(0, 1 - |Δp_pred - Δp_gt| / |Δp_gt|)
    s_θ    = cos(Δp_pred, Δp_gt)
    s_step = s_d · max(0, s_θ)                                    navigation: the step score
    θ_err  = geodesic angle of R_pred R_gtᵀ,   s_rot = max(0, 1 - θ_err / π)
    s_grip = 1 if the gripper states agree else 0
    manipulation step score = (w_t s_step + w_r s_rot + w_g s_grip) / (w_t + w_r + w_g)

and the sample score is the mean step score. Decisions the paper leaves open:

- Alignment: steps are compared index by index over max(n_pred, n_gt) steps; the shorter plan is padded
  with STOP steps (no motion; the gripper keeps its last state). A missing step therefore scores 1 only
  where the ground truth also stays still, and an extra step scores 1 only if it does not move.
- Zero ground-truth translation: the only right answer is no translation. s_d = s_θ = 1 when the
  prediction does not translate either, else 0. A prediction with no translation against a moving ground
  truth gets s_d = 0 (the formula) and s_θ = 0 (it has no direction).
- Gripper: a step without a gripper value keeps the previous state; before the first value the predicted
  state is unknown and scores 0. A ground-truth step with no known state leaves the gripper term out
  (the weights of the other two are renormalised).
- Default weights w_t = w_r = w_g = 1/3: the paper names the three terms and gives no weights, so none is
  privileged; the sub-scores are reported separately and ``ManipulationWeights`` changes them.
- Navigation scores translation only, as in the paper; the rotation error is reported per step as a
  diagnostic and does not enter the value.
- A parse failure (no recognised action anywhere in the output) scores 0 and is flagged.

``"lmms-eval"`` reproduces the public ``spatialtreebench`` scorer (``manipulateeval`` for manipulation,
``agenticnaveval`` for navigation) as observed by running it; it lives with the other reproductions of public
scorers in :mod:`benchmarks.scoring.official.goal_lmms_eval`. See docs/guide/goal-scoring.md for every
convention (symbols, zyx extrinsic rotation, reference-frame translation, key order,
single-step navigation, penalties, binary success, its parse cascade).
"""

from __future__ import annotations

import contextlib
import gc
import json
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from action_mapping import Plan, StepSizes, parse_plan
from action_mapping.se3 import rotation_error_angles
from action_mapping.trajectory import step_count_rows
from benchmarks.core.jsonsafe import json_safe
from policies.entry_point import load_entry_point

KINDS = ("nav", "manip")
ZERO_TRANSLATION_M = 1e-12  # below this a translation vector counts as "no translation"


@dataclass(frozen=True, eq=False)
class GoalReference:
    """What one prediction is scored against.

    ``plan`` is the ground truth in the sample's ``step_sizes``; ``trajectory`` the optional C2W poses
    ``(N, 4, 4)`` it came from; ``lmms_eval_extra_info`` an optional raw lmms-eval ground truth
    (``optimal_rel_pose`` and ``"i->j"`` segments) that the lmms-eval scorer then uses as is.
    """

    kind: str
    plan: Plan
    step_sizes: StepSizes
    trajectory: np.ndarray | None = None
    lmms_eval_extra_info: Mapping[str, Any] | None = None
    max_step_num: int = 10
    _cache: dict[str, Any] = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, got {self.kind!r}")
        if not self.plan.steps and self.lmms_eval_extra_info is None:
            raise ValueError("the ground-truth plan has no steps")
        if self.trajectory is not None and np.shape(self.trajectory) != (len(self.plan.steps) + 1, 4, 4):
            raise ValueError(
                f"a plan of {len(self.plan.steps)} steps needs a trajectory of shape "
                f"({len(self.plan.steps) + 1}, 4, 4), got {np.shape(self.trajectory)}"
            )

    def count_rows(self) -> tuple[list[list[float]], list[float]]:
        """Ground-truth signed counts per step and gripper states (computed once; see ``step_count_rows``)."""
        if "counts" not in self._cache:
            self._cache["counts"] = step_count_rows(self.plan.steps)
        return self._cache["counts"]


@dataclass
class GoalScore:
    """One sample's score with what it was computed from (value, parsed answer, per-step table, why).

    ``step_table`` holds one array per per-step quantity (rows = aligned steps); ``steps`` turns it into a
    list of dicts. ``components`` are the sample-level sub-scores, ``metadata`` counts and flags. A batch
    shares one table: each score keeps a view (``table``, ``rows``, ``columns``), built only when read.
    """

    value: float
    scorer: str
    kind: str
    parse_failed: bool
    explanation: str
    components: dict[str, float] = field(default_factory=dict)
    parsed: Any = None
    parse_errors: list[str] = field(default_factory=list)
    table: Mapping[str, np.ndarray] = field(default_factory=dict, repr=False)
    rows: slice = field(default_factory=lambda: slice(None))
    columns: tuple[str, ...] | None = None
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def step_table(self) -> dict[str, np.ndarray]:
        return {k: np.asarray(self.table[k])[self.rows] for k in (self.columns or tuple(self.table))}

    @property
    def steps(self) -> list[dict[str, Any]]:
        columns = self.step_table
        n = len(next(iter(columns.values()))) if columns else 0
        return [{k: json_safe(col[i].tolist()) for k, col in columns.items()} for i in range(n)]

    def to_json(self) -> dict[str, Any]:
        """A strict-JSON dict (non-finite numbers become ``null``)."""
        parsed = self.parsed
        if isinstance(parsed, Plan):
            parsed = {"format": parsed.format, "plan": parsed.to_json()}
        return json_safe(
            {
                "value": self.value,
                "scorer": self.scorer,
                "kind": self.kind,
                "parse_failed": self.parse_failed,
                "explanation": self.explanation,
                "components": self.components,
                "parsed": parsed,
                "parse_errors": self.parse_errors,
                "steps": self.steps,
                "metadata": self.metadata,
            }
        )


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector during a batch: scoring allocates many small objects and no
    cycles, and the collections they trigger otherwise cost as much as the scoring itself."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def failed_score(scorer: str, kind: str, parsed: object, errors: list[str], code: str, why: str) -> GoalScore:
    """A parse failure: value 0, with ``metadata["failure"]`` a short code for the summary's tally."""
    return GoalScore(
        0.0,
        scorer,
        kind,
        True,
        f"parse failure, scored 0: {why}",
        parsed=parsed,
        parse_errors=list(errors),
        metadata={"failure": code},
    )


# ========================================================================================================
# The paper's formulas (vectorised over steps)


@dataclass(frozen=True)
class ManipulationWeights:
    """Weights of the manipulation step score. Defaults: equal thirds (the paper gives none)."""

    translation: float = 1 / 3
    rotation: float = 1 / 3
    gripper: float = 1 / 3

    def __post_init__(self) -> None:
        values = (self.translation, self.rotation, self.gripper)
        if not all(math.isfinite(w) and w >= 0 for w in values) or self.translation + self.rotation <= 0:
            raise ValueError(
                f"manipulation weights must be finite and >= 0 with translation + rotation > 0 (a step "
                f"without a known gripper state needs them), got {values}"
            )


def translation_step_scores(pred: np.ndarray, gt: np.ndarray) -> dict[str, np.ndarray]:
    """``s_d``, ``s_theta`` and ``s_step`` for rows of translation vectors ``(n, 3)`` (metres).

    Zero-translation rules as in the module docstring. ``s_theta`` of two identical vectors is exactly 1.
    """
    pred, gt = np.asarray(pred, dtype=float).reshape(-1, 3), np.asarray(gt, dtype=float).reshape(-1, 3)
    pp, gg = np.einsum("ij,ij->i", pred, pred), np.einsum("ij,ij->i", gt, gt)
    pg = np.einsum("ij,ij->i", pred, gt)
    pred_zero, gt_zero = pp <= ZERO_TRANSLATION_M**2, gg <= ZERO_TRANSLATION_M**2
    with np.errstate(divide="ignore", invalid="ignore"):
        s_d = np.maximum(0.0, 1.0 - np.linalg.norm(pred - gt, axis=1) / np.sqrt(gg))
        cos = np.clip(pg / np.sqrt(pp * gg), -1.0, 1.0)
    s_d = np.where(gt_zero, pred_zero.astype(float), s_d)
    s_theta = np.where(gt_zero | pred_zero, (gt_zero & pred_zero).astype(float), cos)
    return {"s_d": s_d, "s_theta": s_theta, "s_step": s_d * np.maximum(0.0, s_theta)}


def rotation_step_scores(pred_angles: np.ndarray, gt_angles: np.ndarray) -> dict[str, np.ndarray]:
    """``theta_err`` (radians) and ``s_rot = max(0, 1 - theta_err / pi)`` for per-axis angle rows ``(n, 3)``."""
    theta = rotation_error_angles(pred_angles, gt_angles)
    return {"theta_err": theta, "s_rot": np.maximum(0.0, 1.0 - theta / math.pi)}


def gripper_step_scores(pred: np.ndarray, gt: np.ndarray) -> np.ndarray:
    """1 where the states agree, 0 where they differ or the prediction has none, NaN where the truth has none."""
    pred, gt = np.asarray(pred, dtype=float), np.asarray(gt, dtype=float)
    agree = np.where(np.isnan(pred), 0.0, (pred == gt).astype(float))
    return np.where(np.isnan(gt), np.nan, agree)


def manipulation_step_values(
    s_trans: np.ndarray, s_rot: np.ndarray, s_grip: np.ndarray, weights: ManipulationWeights
) -> np.ndarray:
    """Weighted mean of the three step scores; a NaN gripper score drops its term and renormalises."""
    has_grip = ~np.isnan(s_grip)
    num = weights.translation * s_trans + weights.rotation * s_rot + weights.gripper * np.nan_to_num(s_grip)
    den = weights.translation + weights.rotation + weights.gripper * has_grip
    return num / den


# ========================================================================================================
# The paper scorer over a batch of samples


def _no_action(plan: Plan) -> bool:
    """True when the parse produced nothing a scorer can read (no recognised action, no gripper state)."""
    return not any(step.actions or step.gripper is not None for step in plan.steps)


def _forward_fill(values: list[float], length: int) -> list[float]:
    """Gripper states over ``length`` aligned steps: an unset or padded step keeps the previous state."""
    out, last = [], math.nan
    for i in range(length):
        if i < len(values) and not math.isnan(values[i]):
            last = values[i]
        out.append(last)
    return out


@dataclass
class _Aligned:
    """Prediction and ground truth of many samples, padded to a common length per sample and stacked."""

    offsets: np.ndarray  # (S,) first row of each sample
    lengths: np.ndarray  # (S,) aligned steps per sample
    n_pred: list[int]
    n_gt: list[int]
    pred: np.ndarray  # (T, 6) signed counts
    gt: np.ndarray
    pred_grip: np.ndarray  # (T,)
    gt_grip: np.ndarray
    t_size: np.ndarray  # (T,) metres per translation count
    r_size: np.ndarray  # (T,) radians per rotation count
    manip: np.ndarray  # (T,) bool


_STILL = [0.0] * 6


def _align(plans: Sequence[Plan], refs: Sequence[GoalReference]) -> _Aligned:
    pred_rows, gt_rows, pred_grip, gt_grip, n_pred, n_gt, lengths = [], [], [], [], [], [], []
    for plan, ref in zip(plans, refs):
        p_counts, p_grip = step_count_rows(plan.steps)
        g_counts, g_grip = ref.count_rows()
        n = max(len(p_counts), len(g_counts))
        pred_rows += p_counts + [_STILL] * (n - len(p_counts))
        gt_rows += g_counts + [_STILL] * (n - len(g_counts))
        manip = ref.kind == "manip"
        pred_grip += _forward_fill(p_grip, n) if manip else [math.nan] * n
        gt_grip += _forward_fill(g_grip, n) if manip else [math.nan] * n
        n_pred.append(len(p_counts))
        n_gt.append(len(g_counts))
        lengths.append(n)
    lens = np.array(lengths, dtype=int)
    offsets = np.concatenate([[0], np.cumsum(lens)[:-1]]).astype(int)
    per_row = lambda values: np.repeat(np.array(values), lens)  # noqa: E731
    return _Aligned(
        offsets,
        lens,
        n_pred,
        n_gt,
        np.array(pred_rows, dtype=float).reshape(-1, 6),
        np.array(gt_rows, dtype=float).reshape(-1, 6),
        np.array(pred_grip),
        np.array(gt_grip),
        per_row([r.step_sizes.translation for r in refs]),
        per_row([r.step_sizes.rotation for r in refs]),
        per_row([r.kind == "manip" for r in refs]),
    )


def _paper_step_table(a: _Aligned, weights: ManipulationWeights) -> dict[str, np.ndarray]:
    pred_t, gt_t = a.pred[:, :3] * a.t_size[:, None], a.gt[:, :3] * a.t_size[:, None]
    pred_r, gt_r = a.pred[:, 3:] * a.r_size[:, None], a.gt[:, 3:] * a.r_size[:, None]
    trans = translation_step_scores(pred_t, gt_t)
    rot = rotation_step_scores(pred_r, gt_r)
    s_grip = gripper_step_scores(a.pred_grip, a.gt_grip)
    manip_value = manipulation_step_values(trans["s_step"], rot["s_rot"], s_grip, weights)
    return {
        "pred_translation": pred_t,
        "gt_translation": gt_t,
        "pred_angles": pred_r,
        "gt_angles": gt_r,
        **trans,
        "rotation_error_deg": np.degrees(rot["theta_err"]),
        "s_rot": rot["s_rot"],
        "pred_gripper": a.pred_grip,
        "gt_gripper": a.gt_grip,
        "s_grip": s_grip,
        "value": np.where(a.manip, manip_value, trans["s_step"]),
    }


_NAV_COLUMNS = (
    "pred_translation",
    "gt_translation",
    "s_d",
    "s_theta",
    "s_step",
    "rotation_error_deg",
    "value",
)
_MANIP_COLUMNS = (
    "pred_translation",
    "gt_translation",
    "pred_angles",
    "gt_angles",
    "s_d",
    "s_theta",
    "s_step",
    "rotation_error_deg",
    "s_rot",
    "pred_gripper",
    "gt_gripper",
    "s_grip",
    "value",
)
_COMPONENTS = {"nav": ("s_d", "s_theta", "s_step"), "manip": ("s_d", "s_theta", "s_step", "s_rot", "s_grip")}


def _sample_means(column: np.ndarray, a: _Aligned) -> np.ndarray:
    """Per-sample mean of a per-step column, ignoring NaN (NaN where a sample has no value at all)."""
    known = ~np.isnan(column)
    sums = np.add.reduceat(np.where(known, column, 0.0), a.offsets)
    counts = np.add.reduceat(known.astype(float), a.offsets)
    with np.errstate(invalid="ignore", divide="ignore"):
        return sums / counts


def _paper_explanation(kind: str, n_pred: int, n_gt: int, value: float, weights: ManipulationWeights) -> str:
    n = max(n_pred, n_gt)
    align = f"{n_pred} predicted vs {n_gt} ground-truth steps, compared index by index over {n}"
    if n_pred != n_gt:
        align += f" (the shorter side padded with {abs(n_pred - n_gt)} STOP step(s))"
    if kind == "nav":
        return f"navigation (paper): {align}; score = mean over steps of s_d·max(0, s_θ) = {value:.4f}"
    w = f"{weights.translation:.3g}·s_step + {weights.rotation:.3g}·s_rot + {weights.gripper:.3g}·s_grip"
    return f"manipulation (paper): {align}; step score = ({w}) / weights present; mean = {value:.4f}"


def score_paper_batch(
    texts: Sequence[str], refs: Sequence[GoalReference], *, weights: ManipulationWeights | None = None
) -> list[GoalScore]:
    """Score raw model outputs against references with the paper's formulas (see the module docstring)."""
    check_lengths(texts, refs)
    with gc_paused():
        return _score_paper_batch(texts, refs, weights or ManipulationWeights())


def _score_paper_batch(
    texts: Sequence[str], refs: Sequence[GoalReference], weights: ManipulationWeights
) -> list[GoalScore]:
    if any(not r.plan.steps for r in refs):
        raise ValueError(
            "a reference has no ground-truth plan (an lmms-eval-only item): score it with scorer='lmms-eval'"
        )
    plans = [parse_plan(t, max_step_num=r.max_step_num) for t, r in zip(texts, refs)]
    out: list[GoalScore] = []
    ok: list[int] = []
    for i, (plan, ref) in enumerate(zip(plans, refs)):
        if _no_action(plan):
            why = "no recognised action in the output" + (
                f" ({'; '.join(plan.errors)})" if plan.errors else ""
            )
            code = plan.error_codes[0] if plan.errors else "no_action"
            out.append(failed_score("paper", ref.kind, plan, list(plan.errors), code, why))
        else:
            ok.append(i)
            out.append(None)  # type: ignore[arg-type]
    if ok:
        a = _align([plans[i] for i in ok], [refs[i] for i in ok])
        table = _paper_step_table(a, weights)
        means = {k: _sample_means(table[k], a) for k in ("value", *_COMPONENTS["manip"])}
        for j, i in enumerate(ok):
            out[i] = _paper_sample(plans[i], refs[i], a, j, table, means, weights)
    return out


def _paper_sample(
    plan: Plan,
    ref: GoalReference,
    a: _Aligned,
    j: int,
    table: dict[str, np.ndarray],
    means: dict[str, np.ndarray],
    weights: ManipulationWeights,
) -> GoalScore:
    value = float(means["value"][j])
    components = {k: float(means[k][j]) for k in _COMPONENTS[ref.kind]}
    text = _paper_explanation(ref.kind, a.n_pred[j], a.n_gt[j], value, weights)
    if plan.errors:
        text += f"; parser notes: {', '.join(sorted(set(plan.error_codes)))}"
    rows = slice(int(a.offsets[j]), int(a.offsets[j] + a.lengths[j]))
    meta = {"steps_pred": a.n_pred[j], "steps_gt": a.n_gt[j], "format": plan.format}
    columns = _MANIP_COLUMNS if ref.kind == "manip" else _NAV_COLUMNS
    return GoalScore(
        value, "paper", ref.kind, False, text, components, plan, list(plan.errors), table, rows, columns, meta
    )


def check_lengths(texts: Sequence[str], refs: Sequence[GoalReference]) -> None:
    if len(texts) != len(refs):
        raise ValueError(f"got {len(texts)} predictions for {len(refs)} references; pass one per reference")


# ========================================================================================================
# Answers written from a plan (the ground truth and baselines), and the registry of scorers


def render_answer(plan: Plan, kind: str, scorer: str = "paper") -> str:
    """The text a model would write for ``plan``, in the format the named scorer reads."""
    value = plan.to_json() if scorer == "paper" else load_entry_point(ANSWER_WRITERS[scorer])(plan, kind)
    return json.dumps(value, ensure_ascii=False)


BatchScorer = Callable[[Sequence[str], Sequence[GoalReference]], list[GoalScore]]
#: Each scorer's batch function as a lazy ``"module:function"`` (the reproductions of public scorers live in
#: ``benchmarks.scoring.official`` and import this module's types, so they are loaded by name).
SCORERS: dict[str, str] = {
    "paper": "benchmarks.scoring.goal:score_paper_batch",
    "lmms-eval": "benchmarks.scoring.official.goal_lmms_eval:score_lmms_eval_batch",
}
#: How a plan is written for scorers that read another format than the plan JSON.
ANSWER_WRITERS: dict[str, str] = {"lmms-eval": "benchmarks.scoring.official.goal_lmms_eval:lmms_eval_answer"}


def get_scorer(name: str, *, weights: ManipulationWeights | None = None) -> BatchScorer:
    """The batch scorer registered as ``name`` (``paper`` or ``lmms-eval``); ``weights`` apply to ``paper``."""
    if name not in SCORERS:
        raise ValueError(f"unknown goal scorer {name!r}; choose one of {sorted(SCORERS)}")
    if name == "paper" and weights is not None:
        return lambda texts, refs: score_paper_batch(texts, refs, weights=weights)
    if weights is not None and weights != ManipulationWeights():
        raise ValueError(f"manipulation weights apply to the 'paper' scorer only, not {name!r}")
    return load_entry_point(SCORERS[name], what=f"goal scorer {name!r}")


def score_goal(text: str, ref: GoalReference, scorer: str = "paper", **options: Any) -> GoalScore:
    """Score one model output against one reference with the named scorer."""
    return get_scorer(scorer, **options)([text], [ref])[0]
