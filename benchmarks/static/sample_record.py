"""The per-sample record and the summary of a static-benchmark run: the offline twin of
:class:`benchmarks.core.episode_record.EpisodeRecord`.

Each line of a run's ``samples.jsonl`` is a :class:`SampleRecord`; ``summary.json`` is a
:class:`StaticSummary`. The runner builds records with :func:`sample_record` and the summary's run fields
with :func:`static_summary`; readers go through :func:`read_sample` and :func:`read_summary`, which refuse a
mapping that lacks a required field with an error naming it. The field order of the built records is the
order they were written in before this schema, so a run's files are byte-identical to earlier runs' and an
old run folder reads as a new one.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypedDict

from benchmarks.scoring.result import ScoreFields


class _OptionalSampleFields(TypedDict, total=False):
    injected_error: str
    needs_judge: bool


class SampleRecord(ScoreFields, _OptionalSampleFields):
    """One item of a static run, as ``samples.jsonl`` holds it.

    Fields, each always present unless marked optional, in the order they are written:

    - ``index`` (int), ``item_id`` (str), ``benchmark`` (str), ``mode`` (str): the item and the scoring mode.
    - ``category`` (str or None), ``tags`` (dict), ``task`` (str or None): what the summaries group by.
    - ``answer``: the ground truth (long strings and bytes shortened).
    - ``response`` (str or None): the model's answer; ``None`` when it errored.
    - ``generation`` (dict or None): the backend's metadata (latency, tokens, cache; an agent's trace).
    - ``judge`` (dict or None): the LLM judge's verdict and reply, apart from the rule-based score.
    - ``error`` (str or None): why there is no response (the item is then unscored and counts as errored).
    - the :class:`benchmarks.scoring.result.ScoreFields`: ``score``, ``correct``, ``parse``, ``scorer``,
      ``explanation``, ``metrics``; ``scoring_error`` (str, optional) when the scorer raised on this answer,
      which then scored 0.
    - ``injected_error`` (str, optional): the error kind the backend seeded into this answer on purpose.
    - ``needs_judge`` (bool, optional): the mode sends this sample to a judge, and none was given.
    """

    index: int
    item_id: str
    benchmark: str
    mode: str
    category: str | None
    tags: dict[str, Any]
    task: str | None
    answer: Any
    response: str | None
    generation: dict[str, Any] | None
    judge: dict[str, Any] | None
    error: str | None


#: The fields every :class:`SampleRecord` has, in the order they are written.
SAMPLE_FIELDS = (
    "index",
    "item_id",
    "benchmark",
    "mode",
    "category",
    "tags",
    "task",
    "answer",
    "response",
    "generation",
    "judge",
    "error",
    "score",
    "correct",
    "parse",
    "scorer",
    "explanation",
    "metrics",
)


class _OptionalSummaryFields(TypedDict, total=False):
    missing_leaves: list[str]
    mode_differences: list[str]
    headline_note: str
    headline_ci: dict[str, list[float] | None]
    intervals: dict[str, Any]


class StaticSummary(_OptionalSummaryFields):
    """A static run's ``summary.json``.

    - ``headline`` (dict): the numbers a paper reports, in percent (``None`` when nothing was scored).
    - ``counts`` (dict): samples scored, unscored, unparsable, errored, judged; the run's coverage (``items``,
      ``completed``, ``errors``, ``missing_predictions``, ``scoring_errors``, ``needs_judge_unavailable``) and,
      when present, the agent's counters and the injected errors.
    - ``judge`` (dict or None): the judge section, ``None`` when no sample went to a judge.
    - ``tables`` (dict): name -> ``{"columns", "rows"}``, written to ``tables/NAME.csv``.
    - ``chart`` (dict or None): which table ``plots/by_category.png`` draws (``table``, ``label``, ``value``).
    - ``notes`` (list of str): how the headline was computed.
    - ``status`` (str): ``complete`` or ``incomplete: ...`` (:func:`benchmarks.static.runner.run_status`).
    - ``benchmark``, ``mode`` (str); ``reference`` (dict): the published numbers the mode compares with.
    - ``missing_leaves`` (optional): SpatialTree's tree leaves without data; ``mode_differences``,
      ``headline_note`` (optional): how the mode differs from the project's scoring.
    - ``headline_ci`` (dict): headline name -> its 95 % interval ``[low, high]`` in percent, for the
      headline numbers that have one (a weighted tree or an official script's aggregate has none yet);
      ``intervals`` (dict): the level, the cluster key and the methods (``docs/guide/statistics.md``).
    """

    headline: dict[str, float | None]
    counts: dict[str, Any]
    judge: dict[str, Any] | None
    tables: dict[str, dict[str, Any]]
    chart: dict[str, str] | None
    notes: list[str]
    status: str
    benchmark: str
    mode: str
    reference: dict[str, Any]


#: The fields every mode's ``summarize`` returns, and those the runner adds.
MODE_SUMMARY_FIELDS = ("headline", "counts", "judge", "tables", "chart", "notes")
SUMMARY_FIELDS = (*MODE_SUMMARY_FIELDS, "status", "benchmark", "mode", "reference")


def _missing(raw: Mapping[str, Any], fields: tuple[str, ...], what: str) -> None:
    missing = [name for name in fields if name not in raw]
    if missing:
        raise ValueError(f"not a {what}: no {', '.join(missing)} (fields: {', '.join(sorted(raw))})")


def read_sample(raw: Mapping[str, Any]) -> SampleRecord:
    """A ``samples.jsonl`` line as a :class:`SampleRecord`; a ``ValueError`` naming what is missing."""
    _missing(raw, SAMPLE_FIELDS, "static sample record")
    return SampleRecord(**raw)  # type: ignore[typeddict-item]


def static_summary(
    mode_summary: Mapping[str, Any], *, status: str, benchmark: str, mode: str, reference: Mapping[str, Any]
) -> StaticSummary:
    """A mode's summary (:data:`MODE_SUMMARY_FIELDS`, its own fields kept in place) with the run's fields
    after it; a ``ValueError`` when the mode left one out."""
    _missing(mode_summary, MODE_SUMMARY_FIELDS, "mode summary")
    return StaticSummary(
        **mode_summary,  # type: ignore[typeddict-item]
        status=status,
        benchmark=benchmark,
        mode=mode,
        reference=dict(reference),
    )


def read_summary(raw: Mapping[str, Any]) -> StaticSummary:
    """A ``summary.json`` as a :class:`StaticSummary`; a ``ValueError`` naming what is missing."""
    _missing(raw, SUMMARY_FIELDS, "static summary")
    return StaticSummary(**raw)  # type: ignore[typeddict-item]
