"""The LIBERO benchmark: a worker that runs trials in one env, the benchmark (units, manifest, summary) and
the command (``python -m benchmarks.libero``, described in :mod:`benchmarks.libero`)."""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from benchmarks.attribution import attributed, prober_for
from benchmarks.attribution.libero import PROBES as LIBERO_PROBES
from benchmarks.core import Benchmark, RunDir, Summary, UnitTally, WorkUnit, unit_seed
from benchmarks.core.episode import StepHook
from benchmarks.core.episode_record import EpisodeRecord, ok_results
from benchmarks.core.latency import (
    latency_markdown,
    summarize_latency,
)
from benchmarks.core.policy_cli import PolicySpec, build_policy_from_spec, parse_benchmark_args, preflight
from benchmarks.core.policy_server import policy_serving
from benchmarks.core.runner import run_command
from benchmarks.core.serving import ServedPolicy
from benchmarks.core.work import RECORD_ERROR
from benchmarks.core.worker import EpisodeWorker, WorkerFactory
from benchmarks.libero.config import POLICY_DEFAULTS, REFERENCE, LiberoConfig
from benchmarks.libero.report import blind_rows, task_plot, task_rows, task_table
from benchmarks.robustness import CertificateCache
from benchmarks.robustness.runner import (
    certificates_path,
    is_variant,
    robustness_summary,
    robustness_units,
    run_certified,
)
from benchmarks.stats.intervals import WILSON, described, wilson
from benchmarks.stats.stopping import stopper_for
from envs.libero import protocol
from envs.libero.perturbations import FAMILY as AXES_FAMILY
from policies.base import Policy
from policies.config_cli import InputError
from policies.entry_point import load_entry_point
from policies.mllm.common import model_call_totals, model_calls_markdown

if TYPE_CHECKING:
    import gymnasium as gym

#: The expert that certifies perturbed variants (``--perturb``).
CERTIFYING_EXPERT = POLICY_DEFAULTS["expert"]["expert"]


class LiberoWorker(EpisodeWorker):
    """Keeps the env of the task it last ran (creating a LIBERO scene takes seconds)."""

    video_keys = ("agentview_image", "eye_in_hand_image")
    video_fps, video_height = 20, 256

    def __init__(
        self, config: LiberoConfig, spec: PolicySpec, run_path: str, served: ServedPolicy | None = None
    ) -> None:
        super().__init__(run_path, config.video)
        self.config, self.spec = config, spec
        self.policy = build_policy_from_spec(spec, defaults=POLICY_DEFAULTS, served=served)
        self.task_index: int | None = None
        path = certificates_path(config.certificates, run_path)
        self.certificates = CertificateCache(path) if config.perturb else None
        self._expert: Policy | None = None
        self._expert_env: gym.Env | None = None  # the certifying expert's env: no cameras (it looks at none)
        self._cameras = config.video > 0 or not spec.blind
        # (the prober follows each task's env, so it starts with none)
        self.prober = prober_for(self.config, self.config.seed, LIBERO_PROBES, None, self.policy)

    def _make_task_env(self, task_index: int, cameras: bool) -> gym.Env:
        from envs.libero.protocol import env_id

        c = self.config
        return self.make_env(
            env_id(c.suite, task_index),
            image_size=c.image_size,
            max_steps=c.budget(),
            num_steps_wait=c.num_steps_wait,
            fast_render=c.fast_render,
            image_orientation=c.image_orientation,
            cameras=cameras,
        )

    def _env_for(self, task_index: int) -> gym.Env:
        if task_index != self.task_index:
            for env in {id(e): e for e in (self.env, self._expert_env) if e is not None}.values():
                env.close()
            self._expert_env = None
            self.env = self._make_task_env(task_index, self._cameras)
            self.task_index = None  # set once bound: a policy that refuses this env fails every trial alike
            self.policy.bind(self.env)
            self.task_index = task_index
        assert self.env is not None  # built for this task, here or for an earlier unit
        return self.env

    def _expert_for(self, task_index: int) -> tuple[gym.Env, Policy]:
        """The certifying expert, bound to a camera-less env of the task (made on first use per task)."""
        if self._expert_env is None:
            # (the policy's own env when it has no cameras either: physics is all the expert needs)
            env = self._make_task_env(task_index, False) if self._cameras else self._env_for(task_index)
            self._expert = load_entry_point(CERTIFYING_EXPERT)()
            self._expert.bind(env)
            self._expert_env = env
        assert self._expert is not None  # (made with its env)
        return self._expert_env, self._expert

    def run_unit(self, unit: WorkUnit, on_step: StepHook | None) -> EpisodeRecord:
        from benchmarks.libero.episode import run_episode

        task, c = unit.spec["task_index"], self.config
        env = self._env_for(task)
        clean_key = unit.key.split("~")[0]  # (a variant's key names its axis: never shown to the policy)
        episode = {
            "suite": c.suite,
            "task_index": task,
            "init_state_index": unit.spec["init_state_index"],
            "max_steps": c.budget(),
            "num_steps_wait": c.num_steps_wait,
        }
        settings = {k: v for k, v in episode.items() if k not in ("suite", "task_index")}

        def run_policy(perturbation: dict[str, Any] | None) -> EpisodeRecord:
            hook = None if self.prober is None else self.prober.start(unit.seed, env)
            record = run_episode(
                env,
                self.policy,
                **settings,
                seed=unit.seed,
                replay_key=clean_key,
                on_step=on_step,
                decisions=self.decisions,
                latency=c.latency_setting(),
                on_decision=hook,
                perturbation=perturbation,
            )
            if self.prober is not None:
                self.decisions.extend(self.prober.finish(record["success"]))
            return record

        def run_expert(perturbation: dict[str, Any] | None) -> EpisodeRecord:
            expert_env, expert = self._expert_for(task)
            return run_episode(expert_env, expert, **settings, seed=unit.seed, perturbation=perturbation)

        record = run_certified(
            unit,
            self.certificates,
            family=AXES_FAMILY,
            expert=CERTIFYING_EXPERT,
            episode=episode,
            episode_id=clean_key,
            run_policy=run_policy,
            run_expert=run_expert,
        )
        record["extras"]["episode_id"] = clean_key  # (pairs a variant with its clean episode)
        return record

    def close(self) -> None:
        if self._expert_env is not None and self._expert_env is not self.env:
            self._expert_env.close()
        self._expert_env = None
        super().close()


def _build_worker(
    config: LiberoConfig, spec: PolicySpec, run_path: str, served: ServedPolicy | None = None
) -> LiberoWorker:
    return LiberoWorker(config, spec, run_path, served)


class LiberoBenchmark(Benchmark):
    name = "libero"

    def __init__(self, config: LiberoConfig, spec: PolicySpec) -> None:
        super().__init__(config)
        self.spec = spec
        self.run_path = str(
            Path(config.output) / self.name / (config.run_name or f"{config.suite}-{spec.label}")
        )

    def units(self) -> list[WorkUnit]:
        c = self.config
        if not 1 <= c.trials_per_task <= protocol.NUM_INIT_STATES:
            raise InputError(
                f"--trials-per-task must be 1..{protocol.NUM_INIT_STATES} (one per fixed initial state)"
            )
        units = robustness_units(
            self._clean_units(), c, certificates_path(c.certificates, self.run_path), AXES_FAMILY
        )
        if self.spec.name == "expert" or c.perturb:  # (the expert certifies --perturb variants)
            check_expert_goals(c.suite, c.task_indices())
        return units

    def _clean_units(self) -> list[WorkUnit]:
        c = self.config
        pairs = [(t, k) for t in c.task_indices() for k in range(c.trials_per_task)]
        return [
            WorkUnit(
                i,
                f"{c.suite}/{t:02d}/{k:02d}",
                unit_seed(c.seed, i),
                {"task_index": t, "init_state_index": k},
            )
            for i, (t, k) in enumerate(pairs)
        ]

    def worker_factory(self) -> WorkerFactory:
        return functools.partial(_build_worker, self.config, self.spec, self.run_path, self.served)

    def manifest_extra(self) -> dict[str, Any]:
        c = self.config
        return {
            "policy": self.spec.manifest(),
            "protocol": {
                "suite": c.suite,
                "tasks": c.task_indices(),
                "trials_per_task": c.trials_per_task,
                "max_steps": c.budget(),
                "num_steps_wait": c.num_steps_wait,
                "image_size": c.image_size,
                "fast_render": c.fast_render,
                "image_orientation": c.image_orientation,
                **({"latency": setting.describe()} if (setting := c.latency_setting()) else {}),
            },
        }

    def progress_stats(self, records: Sequence[dict[str, Any]]) -> dict[str, Any]:
        ok = [r["success"] for r in ok_results(records)]
        return {"success%": f"{100 * np.mean(ok):.1f}" if ok else "-"}

    def errored_by_task(self, records: Sequence[dict[str, Any]]) -> Counter[int]:
        """Errored trials per task index (an errored record has no result: its unit says the task)."""
        task_of = {u.key: u.spec["task_index"] for u in self.units()}
        return Counter(task_of[r["key"]] for r in records if r["status"] == RECORD_ERROR)

    def summarize(self, records: Sequence[dict[str, Any]], run_dir: RunDir, tally: UnitTally) -> Summary:
        c = self.config
        if not c.perturb:
            summary = self._summary(ok_results(records), tally, self.errored_by_task(records))
        else:
            clean_errors = self.errored_by_task([r for r in records if not is_variant(r["key"])])
            summary = robustness_summary(
                records,
                c,
                certificates_path(c.certificates, self.run_path),
                lambda clean, clean_tally: self._summary(clean, clean_tally, clean_errors),
                len(self._clean_units()),
            )
        title = f"LIBERO {c.suite}: {self.spec.label}"
        return attributed(summary, records, run_dir, "task_index", c.probe, title)

    def _summary(self, results: list[EpisodeRecord], tally: UnitTally, errored: Counter[int]) -> Summary:
        """The clean summary: success per task and overall, model calls, latency."""
        table = task_table(results, errored)
        overall = 100.0 * float(np.mean([r["success"] for r in results])) if results else None
        overall_ci = wilson(sum(r["success"] for r in results), len(results)).scaled(100).bounds()
        c = self.config
        lines = [
            f"## LIBERO {c.suite}: {self.spec.label}",
            "",
            f"{tally.completed} of {tally.total} episodes completed; budget {c.budget()} steps after "
            f"{c.num_steps_wait} settle steps; fast rendering {'on' if c.fast_render else 'off'}. Success is "
            "over completed episodes; errored ones are counted, never scored. [95 % Wilson interval] over "
            "the trials of the row.",
            "",
            "| task | instruction | trials | success % [95 % interval] | episodes errored |",
            "|---|---|---|---|---|",
        ]
        lines += task_rows(table, overall, overall_ci, tally)
        lines += blind_rows(c.suite)
        if c.suite in REFERENCE:
            ref = REFERENCE[c.suite]
            lines += ["", f"Reference: {ref['label']}: {ref['success_rate']:.1f} %."]
        calls = model_call_totals(r["policy_stats"] for r in results)
        if calls:
            lines += ["", model_calls_markdown(calls)]
        latency = summarize_latency([r["latency"] for r in results if "latency" in r])
        if latency:
            lines += ["", latency_markdown(latency)]
        data = {
            "benchmark": "libero",
            "suite": c.suite,
            "policy": self.spec.label,
            "episodes": len(results),
            "success_rate": overall,
            "success_ci": overall_ci,
            "intervals": described(success_rate=WILSON),
            "tasks": {str(t): row for t, row in table.items()},
            **({"model_calls": calls} if calls else {}),
            **latency,
        }
        title = f"LIBERO {c.suite}: {self.spec.label}"
        files: dict[str, Any] = (
            {"plots/success_by_task.png": functools.partial(task_plot, table=table, title=title)}
            if table
            else {}
        )
        return Summary(data, "\n".join(lines), files)


def check_expert_goals(suite: str, tasks: Sequence[int]) -> None:
    """Refuse, before any episode, a task whose BDDL goal the scripted expert cannot solve (one line)."""
    from envs.libero.tasks import load_task
    from policies.experts.libero_goals import goal_of_bddl, parse_goal

    for t in tasks:
        task = load_task(suite, t)
        try:
            parse_goal(goal_of_bddl(task.bddl_file.read_text()))
        except ValueError as error:
            raise InputError(f"--policy expert, {suite} task {t} ({task.name}): {error}") from None


def action_space() -> gym.spaces.Space:
    """The env's action space (delta end-effector pose and gripper, in [-1, 1]), built without a simulator."""
    from envs.libero.env import action_space

    return action_space()


def main(argv: Sequence[str] | None = None) -> Summary:
    config, spec = parse_benchmark_args(
        LiberoConfig,
        argv,
        prog="python -m benchmarks.libero",
        policy_defaults=POLICY_DEFAULTS,
        benchmark="libero",
    )
    config.check_probe_policy(spec.name, spec.manifest()["privileged"])
    preflight(spec, config, defaults=POLICY_DEFAULTS, action_space=action_space)
    bench = LiberoBenchmark(config, spec)
    with policy_serving(bench, spec, POLICY_DEFAULTS):
        return run_command(bench, bench.run_path, stopper_for(bench))
