"""The EB benchmark: env arguments and action spaces, a worker that runs episodes in one env, the benchmark
(units, manifest, summary) and the command (``python -m benchmarks.embodied``, described in
:mod:`benchmarks.embodied`)."""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from benchmarks.attribution import ProbeFamily, Prober, attributed, prober_for
from benchmarks.core import Benchmark, RunDir, Summary, UnitTally, WorkUnit, unit_seed
from benchmarks.core.episode import StepHook
from benchmarks.core.episode_record import EpisodeRecord, ok_results
from benchmarks.core.latency import latency_markdown, summarize_latency
from benchmarks.core.plots import bar_plot
from benchmarks.core.policy_cli import PolicySpec, build_policy_from_spec, parse_benchmark_args, preflight
from benchmarks.core.policy_server import policy_serving
from benchmarks.core.runner import run_command
from benchmarks.core.serving import ServedPolicy
from benchmarks.core.worker import EpisodeWorker, WorkerFactory
from benchmarks.embodied.config import FAMILIES, EmbodiedConfig, Family
from benchmarks.embodied.report import average_interval, subset_markdown, subset_table
from benchmarks.robustness import CertificateCache
from benchmarks.robustness.runner import (
    certificates_path,
    robustness_summary,
    robustness_units,
    run_certified,
)
from benchmarks.stats.intervals import WILSON, described
from benchmarks.stats.stopping import stopper_for
from policies.base import Policy
from policies.config_cli import InputError
from policies.entry_point import load_entry_point

if TYPE_CHECKING:
    import gymnasium as gym


def _env_kwargs(config: EmbodiedConfig, family: Family) -> dict[str, Any]:
    kwargs = json.loads(config.env_kwargs or "{}")
    if config.image_size:
        kwargs.update({k: config.image_size for k in family.size_kwargs})
    return kwargs


def action_space(family: str, env_kwargs: dict[str, Any]) -> gym.spaces.Space:
    """The family's action space as its env builds it from ``env_kwargs``, without building the env: EB
    navigation's discrete actions (or its continuous ones), EB manipulation's voxel bins."""
    from gymnasium import spaces

    if family == "manip":
        from envs.manipulation.workspace import ACTION_NVEC  # (env.py imports robosuite)

        return spaces.MultiDiscrete(ACTION_NVEC)
    from envs.navigation.env import ACTION_NAMES, CONTINUOUS_LIMITS

    if env_kwargs.get("action_mode", "discrete") == "discrete":
        return spaces.Discrete(len(ACTION_NAMES))
    return spaces.Box(-CONTINUOUS_LIMITS, CONTINUOUS_LIMITS, dtype=np.float32)


def check_env_kwargs(env_id: str, kwargs: dict[str, Any]) -> None:
    """``--env-kwargs`` names only arguments the env takes (read from its class, which is not built)."""
    import inspect

    import gymnasium as gym

    import envs  # noqa: F401  (registers the ids)

    entry = gym.spec(env_id).entry_point
    cls = load_entry_point(entry) if isinstance(entry, str) else entry
    assert cls is not None, f"{env_id} is registered without an entry point"
    parameters = inspect.signature(cls).parameters
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()):
        return
    unknown = sorted(set(kwargs) - set(parameters))
    if unknown:
        raise InputError(
            f"--env-kwargs: {env_id} takes no argument(s) {', '.join(unknown)}; it takes "
            f"{', '.join(parameters)}"
        )


class EmbodiedWorker(EpisodeWorker):
    """One env (the family's registered id) and one policy, reused for every episode this process runs."""

    video_fps, video_height = 2, 320

    def __init__(
        self, config: EmbodiedConfig, spec: PolicySpec, run_path: str, served: ServedPolicy | None = None
    ) -> None:
        super().__init__(run_path, config.video)
        self.family = FAMILIES[config.family]
        self.config, self.video_keys = config, self.family.video_keys
        self.env = self.make_env(self.family.env_id, **_env_kwargs(config, self.family))
        self.policy = build_policy_from_spec(spec, defaults=self.family.policy_defaults(), served=served)
        self.policy.bind(self.env)
        self._run_episode = load_entry_point(self.family.run_episode)
        self.certificates = CertificateCache(_certificates(config, run_path)) if config.perturb else None
        self._expert: Policy | None = None
        self.prober = self._prober()

    def _prober(self) -> Prober | None:
        """The state prober of ``--probe`` (``None`` when probes are off; the family's questions are
        imported only then)."""
        if self.config.probe is None:
            return None
        family: ProbeFamily = load_entry_point(probe_family(self.family))
        return prober_for(self.config, self.config.seed, family, self.env, self.policy)

    def run_unit(self, unit: WorkUnit, on_step: StepHook | None) -> EpisodeRecord:
        episode = unit.spec["episode"]

        def run_policy(perturbation: dict[str, Any] | None) -> EpisodeRecord:
            variant: dict[str, Any] = {} if perturbation is None else {"perturbation": perturbation}
            if self.prober is not None:  # (only then: a user's run_episode need not know the hook)
                variant["on_decision"] = self.prober.start(unit.seed)
            record: EpisodeRecord = self._run_episode(
                self.env,
                self.policy,
                episode,
                seed=unit.seed,
                on_step=on_step,
                decisions=self.decisions,
                latency=self.config.latency_setting(),
                **variant,
            )
            if self.prober is not None:
                self.decisions.extend(self.prober.finish(record["success"]))
            return record

        def run_expert(perturbation: dict[str, Any] | None) -> EpisodeRecord:
            return self._run_episode(
                self.env, self._bound_expert(), episode, seed=unit.seed, perturbation=perturbation
            )

        return run_certified(
            unit,
            self.certificates,
            family=self.family.name,
            expert=self.family.expert,
            episode=episode,
            episode_id=episode.get("episode_id"),
            run_policy=run_policy,
            run_expert=run_expert,
        )

    def _bound_expert(self) -> Policy:
        """The family's expert, built and bound to the env on first use (it certifies variants)."""
        if self._expert is None:
            assert self.env is not None  # (made in __init__)
            self._expert = load_entry_point(self.family.expert)()
            self._expert.bind(self.env)
        return self._expert


def perturbation_family(family: Family) -> str:
    """The ``module:FAMILY`` naming the env's robustness axes, or an input error for a family without any."""
    if family.perturbations is None:
        raise InputError(f"--perturb: {family.title} declares no perturbation axes")
    return family.perturbations


def probe_family(family: Family) -> str:
    """The ``module:PROBES`` of the family's state probes, or an input error for a family without any."""
    if family.probes is None:
        raise InputError(f"--probe: {family.title} has no state probes yet; use nav")
    return family.probes


def _certificates(config: EmbodiedConfig, run_path: str) -> Path:
    return certificates_path(config.certificates, run_path)


def _build_worker(
    config: EmbodiedConfig, spec: PolicySpec, run_path: str, served: ServedPolicy | None = None
) -> EmbodiedWorker:
    return EmbodiedWorker(config, spec, run_path, served)


class EmbodiedBenchmark(Benchmark):
    def __init__(self, config: EmbodiedConfig, spec: PolicySpec) -> None:
        super().__init__(config)
        self.family, self.spec = FAMILIES[config.family], spec
        self.name = f"embodied-{config.family}"
        self.run_path = str(Path(config.output) / self.name / (config.run_name or spec.label))

    def _subsets(self) -> list[str]:
        known = list(load_entry_point(self.family.subsets))
        if self.config.subset == "all":
            return known
        chosen = [s.strip() for s in self.config.subset.split(",") if s.strip()]
        unknown = [s for s in chosen if s not in known]
        if unknown:
            raise InputError(f"--subset {','.join(unknown)}: unknown; choose from {known} or all")
        return chosen

    def _episodes(self) -> list[dict[str, Any]]:
        if self.config.episodes_file:
            episodes = load_entry_point(self.family.load_episodes)(self.config.episodes_file)
            subsets = set(self._subsets())
            return [e for e in episodes if e.get("subset") in subsets]
        n = self.config.episodes or self.family.episodes_per_subset
        make = load_entry_point(self.family.make_episodes)
        return [e for s in self._subsets() for e in make(s, n=n, seed=self.config.episode_seed)]

    def units(self) -> list[WorkUnit]:
        episodes = self._episodes()
        ids = [str(e["episode_id"]) for e in episodes]
        duplicates = sorted({i for i in ids if ids.count(i) > 1})
        if duplicates:
            raise InputError(f"--episodes-file: episode ids must be unique; repeated: {duplicates[:5]}")
        clean = [
            WorkUnit(i, key, unit_seed(self.config.seed, i), {"episode": e})
            for i, (key, e) in enumerate(zip(ids, episodes))
        ]
        if not self.config.perturb:
            return clean
        axes = load_entry_point(perturbation_family(self.family))
        return robustness_units(clean, self.config, _certificates(self.config, self.run_path), axes)

    def worker_factory(self) -> WorkerFactory:
        return functools.partial(_build_worker, self.config, self.spec, self.run_path, self.served)

    def manifest_extra(self) -> dict[str, Any]:
        return {
            "policy": self.spec.manifest(),
            "env": {"id": self.family.env_id, "kwargs": _env_kwargs(self.config, self.family)},
            "subsets": self._subsets(),
            **({"latency": setting.describe()} if (setting := self.config.latency_setting()) else {}),
        }

    def progress_stats(self, records: Sequence[dict[str, Any]]) -> dict[str, Any]:
        ok = ok_results(records)
        return {"success%": f"{100 * np.mean([r['success'] for r in ok]):.1f}" if ok else "-"}

    def summarize(self, records: Sequence[dict[str, Any]], run_dir: RunDir, tally: UnitTally) -> Summary:
        if self.config.perturb:
            summary = robustness_summary(
                records,
                self.config,
                _certificates(self.config, self.run_path),
                self._summary,
                len(self._episodes()),
            )
        else:
            summary = self._summary(ok_results(records), tally)
        title = f"{self.family.title}: {self.spec.label}"
        return attributed(summary, records, run_dir, "subset", self.config.probe, title)

    def _summary(self, results: list[EpisodeRecord], tally: UnitTally) -> Summary:
        table = subset_table(results)
        average = float(np.mean([row["success_rate"] for row in table.values()])) if table else None
        families = subset_table(results, "family") if results and "family" in results[0]["extras"] else None
        average_ci = average_interval(results)
        data = {
            "benchmark": self.name,
            "policy": self.spec.label,
            "subsets": table,
            "average_success_rate": average,
            "average_success_ci": average_ci,
            "intervals": described(
                success_rate=WILSON, average_success_rate="macro-mean of the subsets' intervals"
            ),
            "episodes": len(results),
            "families": families,
            **summarize_latency([r["latency"] for r in results if "latency" in r]),
        }
        files = (
            {
                "plots/success_by_subset.png": lambda p: bar_plot(
                    p,
                    list(table),
                    [row["success_rate"] for row in table.values()],
                    value_label="success rate (%)",
                    title=f"{self.family.title}: {self.spec.label}",
                )
            }
            if table
            else {}
        )
        markdown = subset_markdown(
            self.family.title,
            self.spec.label,
            table,
            average,
            tally,
            families,
            self.family.name,
            average_ci=average_ci,
        )
        if "latency" in data:
            markdown += f"\n\n{latency_markdown(data)}"
        return Summary(data, markdown, files)


def main(argv: Sequence[str] | None = None) -> Summary | int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] in (["-h"], ["--help"]):  # the options depend on the family: say which there are
        print(
            f"usage: python -m benchmarks.embodied {{{','.join(FAMILIES)}}} [options]\n\n"
            + "\n".join(f"  {name}: {family.title}" for name, family in FAMILIES.items())
            + "\n\nThe options: python -m benchmarks.embodied FAMILY --help"
        )
        return 0
    if not argv or argv[0] not in FAMILIES:
        raise InputError(
            f"python -m benchmarks.embodied needs a family first: {' or '.join(FAMILIES)} "
            f"(e.g. python -m benchmarks.embodied nav --help)"
        )
    family = FAMILIES[argv[0]]
    config, spec = parse_benchmark_args(
        EmbodiedConfig,
        argv[1:],
        prog=f"python -m benchmarks.embodied {argv[0]}",
        policy_defaults=family.policy_defaults(),
        benchmark=f"embodied-{family.name}",
    )
    config.family = family.name
    if config.perturb:
        perturbation_family(family)  # (before the env's simulator is imported)
    if config.probe is not None:
        probe_family(family)
    config.check_probe_policy(spec.name, spec.manifest()["privileged"])
    if config.env_kwargs.strip() not in ("", "{}"):  # (importing the env class may import its simulator)
        check_env_kwargs(family.env_id, json.loads(config.env_kwargs))
    preflight(
        spec,
        config,
        defaults=family.policy_defaults(),
        action_space=lambda: action_space(family.name, _env_kwargs(config, family)),
    )
    bench = EmbodiedBenchmark(config, spec)
    with policy_serving(bench, spec, family.policy_defaults()):
        return run_command(bench, bench.run_path, stopper_for(bench))
