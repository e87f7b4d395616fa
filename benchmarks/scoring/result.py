"""The structured result of scoring one sample: the number, what was parsed, and why."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypedDict

from benchmarks.scoring.parsers import ParseResult, bounded, truncated_result


class _ScoringErrorField(TypedDict, total=False):
    scoring_error: str


class ScoreFields(_ScoringErrorField):
    """A sample's score as its per-sample record holds it (:meth:`SampleScore.to_dict`).

    - ``score`` (float or None), ``correct`` (bool or None), ``scorer``, ``explanation``, ``metrics``: as
      :class:`SampleScore` has them; ``scorer`` is ``None`` only when there was no response to score.
    - ``parse`` (dict or None): :meth:`ParseResult.to_dict`, ``None`` when there was no response.
    - ``scoring_error`` (str, optional): the scorer raised on the answer, which then scored 0.
    """

    score: float | None
    correct: bool | None
    parse: dict[str, Any] | None
    scorer: str | None
    explanation: str
    metrics: dict[str, Any]


def no_response() -> ScoreFields:
    """The score fields of an item the model gave no response to (it errored): unscored."""
    return ScoreFields(
        score=None, correct=None, parse=None, scorer=None, explanation="no response", metrics={}
    )


@dataclass(frozen=True)
class SampleScore:
    """One sample's score.

    Attributes:
        score: in [0, 1]; ``None`` when rules cannot score the sample (an open answer that needs a judge, a
            scorer this project does not implement). Unscored samples are counted and reported, never dropped.
        correct: for right/wrong questions; ``None`` for graded ones (MRA, IoU-only, orientation).
        parse: what was read from the response.
        scorer: which rule scored it (``"mcq"``, ``"mra"``, ``"spatialscore-repo/unit_ratio"``...).
        explanation: one line a person can check.
        metrics: extra per-sample numbers (``iou``, ``giou``, ``relative_error``...).
    """

    score: float | None
    correct: bool | None
    parse: ParseResult
    scorer: str
    explanation: str = ""
    metrics: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> ScoreFields:
        """JSON-safe fields for the per-sample record."""
        return {
            "score": self.score,
            "correct": self.correct,
            "parse": self.parse.to_dict(),
            "scorer": self.scorer,
            "explanation": self.explanation,
            "metrics": self.metrics,
        }


def bounded_scorer(score: Callable[[Any, str], SampleScore]) -> Callable[[Any, str], SampleScore]:
    """Wrap ``score(item, response)`` so it reads at most ``parsers.MAX_RESPONSE_CHARS`` of the response.

    A longer response is scored on its beginning, then recorded as a failed parse (``input_truncated``) that
    scores 0, like the project parsers' answer to it. For the official-compatible scorers, which return no
    parse result of their own.
    """

    @functools.wraps(score)
    def run(item: Any, response: str) -> SampleScore:
        kept, cut = bounded(response)
        if not cut:
            return score(item, response)
        inner = score(item, kept)
        return SampleScore(
            None if inner.score is None else 0.0,
            None if inner.correct is None else False,
            truncated_result(inner.parse, cut),
            inner.scorer,
            f"{cut}: scored 0 ({inner.explanation})",
            inner.metrics,
        )

    return run


@dataclass(frozen=True)
class JudgeScore:
    """An LLM judge's verdict on one sample, kept apart from the rule-based score."""

    score: float | None
    ok: bool
    explanation: str

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe form."""
        return {"score": self.score, "ok": self.ok, "explanation": self.explanation}
