"""The family-agnostic robustness flow of a closed-loop benchmark: units, certified variants, summary.

A family's benchmark (EB navigation and manipulation, CALVIN, LIBERO) calls three functions and keeps
everything family-specific (its env, its expert, its episode function, its clean summary) to itself:

``robustness_units(clean, args, certificates, axes_family)``
    In ``Benchmark.units``: the clean units unchanged when ``args.perturb`` is empty; otherwise the clean
    units (the control arm) followed by one variant per clean unit, axis and level
    (:func:`~benchmarks.robustness.suite.variant_units`: key ``KEY~AXIS:LEVEL``, same seed, spec plus
    ``"perturbation": spec-dict``). A certificate file that cannot be read is an input error here, before
    anything runs. ``axes_family`` is the name the env registered its axes under
    (:func:`envs.perturbation.register_axes`).

``run_certified(unit, cache, episode=..., ...)``
    In the worker's ``run_unit``. A clean unit (no ``"perturbation"`` in its spec) is ``run_policy(None)``
    and nothing else. A variant is first certified: its certificate comes from ``cache`` (key: family,
    expert, ``episode`` content, spec; :func:`~benchmarks.robustness.certificates.certificate_key`) or
    from ``run_expert(spec_dict)`` once; then ``run_policy(spec_dict)`` runs it and the record's
    ``extras`` gain ``perturbation`` (the spec dict), ``certified`` (bool) and ``certificate``. Both
    callables return an :class:`~benchmarks.core.episode_record.EpisodeRecord` (``success``, ``steps``);
    they pass the spec to the env as ``reset(options={"perturbation": spec_dict})``. ``episode`` is any
    JSON-safe mapping that defines the unperturbed episode (EB: the episode dict; CALVIN: initial state
    and tasks; LIBERO: suite, task, initial state), so an edited episode is certified again. With
    ``axes_family``, a variant on an axis that family declares ``same_physics``
    (:func:`envs.perturbation.same_physics_axes`: it changes only what the policy sees or reads) gets the
    clean episode's certificate instead: ``run_expert(None)`` once per episode, cached under the key of
    the episode with no spec, so all such variants of an episode cost one expert run.

``robustness_summary(records, args, certificates, clean_summary, clean_units)``
    In ``Benchmark.summarize`` when ``args.perturb`` is set: the certificates the workers earned are
    merged into the cache file; ``clean_summary(clean_records, clean_tally)`` (the family's usual
    summary) is called on the clean arm alone and becomes the headline; the per-axis / per-level table
    (:func:`~benchmarks.robustness.report.robustness_table`, plus ``"blind"``: the blind baselines per
    axis and level where ``bench/results/robustness_blind.json`` holds the benchmark, keyword
    ``benchmark=``, default the summary's ``benchmark`` field) goes into ``summary.data["robustness"]``,
    its Markdown is appended to ``summary.markdown``, and the plot of success against level per axis
    (:mod:`~benchmarks.robustness.plots`) is written to ``plots/robustness_by_level.png`` next to the
    summary.

``certificates`` is a path: ``--certificates`` or, by default, ``certificates.json`` next to the
benchmark's run folders (:func:`certificates_path`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from benchmarks.core import Summary, UnitTally, WorkUnit
from benchmarks.core.episode_record import EpisodeRecord, ok_results
from benchmarks.robustness.blind import blind_column
from benchmarks.robustness.certificates import CertificateCache, certificate_key, certify
from benchmarks.robustness.config import RobustnessArgs
from benchmarks.robustness.plots import PLOT, robustness_plot
from benchmarks.robustness.report import robustness_markdown, robustness_table
from benchmarks.robustness.suite import variant_units
from envs.perturbation import PerturbationSpec, same_physics_axes

#: ``run(perturbation_spec_dict_or_None) -> record``: one episode of a unit, clean or perturbed.
RunEpisode = Callable[[dict[str, Any] | None], EpisodeRecord]


def certificates_path(certificates: str | None, run_path: str | Path) -> Path:
    """``--certificates``, or ``certificates.json`` next to the benchmark's run folders."""
    return Path(certificates) if certificates else Path(run_path).parent / "certificates.json"


def is_variant(key: object) -> bool:
    """Whether a unit key names a perturbed variant (``KEY~AXIS:LEVEL``) rather than a clean unit."""
    return "~" in str(key)


def robustness_units(
    clean: Sequence[WorkUnit], args: RobustnessArgs, certificates: Path, axes_family: str
) -> list[WorkUnit]:
    """``clean``, followed by its variants when ``args.perturb`` asks for any."""
    if not args.perturb:
        return list(clean)
    CertificateCache(certificates)  # a bad file: an input error, now
    return variant_units(clean, args.perturb, axes_family)


def run_certified(
    unit: WorkUnit,
    cache: CertificateCache | None,
    *,
    family: str,
    expert: str,
    episode: Mapping[str, Any],
    episode_id: object,
    run_policy: RunEpisode,
    run_expert: RunEpisode,
    axes_family: str | None = None,
) -> EpisodeRecord:
    """``unit`` run by the policy; a variant is certified by the expert first (see the module docs)."""
    perturbation = unit.spec.get("perturbation")
    if perturbation is None:
        return run_policy(None)
    assert cache is not None, "a perturbed unit needs the worker's certificate cache"
    spec = PerturbationSpec.from_json(perturbation)
    if axes_family is not None and spec.axis in same_physics_axes(axes_family):
        key = certificate_key(family, expert, episode, None)  # the expert plays it as the clean episode
        certificate = certify(cache, key, None, episode_id, lambda: run_expert(None))
    else:
        key = certificate_key(family, expert, episode, spec)
        certificate = certify(cache, key, spec, episode_id, lambda: run_expert(spec.to_json()))
    record = run_policy(perturbation)
    record["extras"].update(
        perturbation=perturbation, certified=certificate["certified"], certificate=certificate
    )
    return record


def save_certificates(records: Sequence[Mapping[str, Any]], certificates: Path) -> None:
    """Merge the certificates the records carry into the cache file."""
    cache = CertificateCache(certificates)
    for r in records:
        if "certificate" in r["extras"]:
            c = r["extras"]["certificate"]
            cache.put(c["key"], {k: v for k, v in c.items() if k not in ("key", "cached")})
    cache.save()


def robustness_summary(
    records: Sequence[dict[str, Any]],
    args: RobustnessArgs,
    certificates: Path,
    clean_summary: Callable[[list[EpisodeRecord], UnitTally], Summary],
    clean_units: int,
    *,
    benchmark: str | None = None,
) -> Summary:
    """The clean arm's usual summary (the headline) plus the robustness table and plot; certificates saved.

    ``benchmark`` (default: the summary's ``benchmark`` field) names the entry of the blind baselines per
    axis (:mod:`benchmarks.robustness.blind`)."""
    results = ok_results(records)
    save_certificates(results, certificates)
    clean_tally = UnitTally.of([r for r in records if not is_variant(r.get("key"))], clean_units)
    clean = [r for r in results if r["extras"].get("perturbation") is None]
    summary = clean_summary(clean, clean_tally)
    table = robustness_table(results, args.include_uncertified)
    name = benchmark or str(summary.data.get("benchmark", ""))
    blind, note = blind_column(name)
    summary.data["robustness"] = {**table, "blind": blind}
    summary.markdown += "\n" + robustness_markdown(table, blind, note)
    title = " ".join(str(v) for v in (name, summary.data.get("policy")) if v)
    if table["axes"]:
        summary.files[PLOT] = lambda path: robustness_plot(path, table, title, blind)
    return summary
