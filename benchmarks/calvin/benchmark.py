"""The CALVIN benchmark: a worker that runs chains in one env, the benchmark (units, manifest, summary), the
setup checks and the command (``python -m benchmarks.calvin``, described in :mod:`benchmarks.calvin`)."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchmarks.attribution import attributed, prober_for
from benchmarks.attribution.calvin import PROBES as CALVIN_PROBES
from benchmarks.calvin.config import CHAIN_LENGTH, POLICY_DEFAULTS, REFERENCE, CalvinConfig
from benchmarks.calvin.protocol import evaluation_chains, parse_tasks, task_episodes
from benchmarks.calvin.report import (
    chain_intervals,
    chain_markdown,
    chain_metrics,
    ok_chains,
    percent_sr,
    subtask_records,
    task_info,
    task_intervals,
    task_markdown,
)
from benchmarks.core import Benchmark, RunDir, Summary, UnitTally, WorkUnit, score_cell, unit_seed
from benchmarks.core.episode import StepHook
from benchmarks.core.episode_record import EpisodeRecord, read_episode
from benchmarks.core.latency import latency_markdown, summarize_latency
from benchmarks.core.plots import bar_plot, line_plot
from benchmarks.core.policy_cli import PolicySpec, build_policy_from_spec, parse_benchmark_args, preflight
from benchmarks.core.policy_server import policy_serving
from benchmarks.core.rundir import write_json
from benchmarks.core.runner import run_command
from benchmarks.core.serving import ServedPolicy
from benchmarks.core.worker import EpisodeWorker, WorkerFactory
from benchmarks.robustness.certificates import CertificateCache
from benchmarks.robustness.runner import (
    certificates_path,
    robustness_summary,
    robustness_units,
    run_certified,
)
from benchmarks.stats.stopping import stopper_for
from envs.calvin.perturbations import FAMILY
from policies.base import Policy
from policies.config_cli import InputError
from policies.mllm.common import model_call_totals, model_calls_markdown

if TYPE_CHECKING:
    import gymnasium as gym


def cameras_for(config: CalvinConfig, spec: PolicySpec) -> tuple[str, ...]:
    """The cameras to render: what the policy looks at, plus both views for videos."""
    if config.cameras != "auto":
        chosen = tuple(c for c in config.cameras.split(",") if c and c != "none")
        unknown = sorted(set(chosen) - {"static", "gripper"})
        if unknown:
            raise InputError(
                f"--cameras {config.cameras}: unknown camera(s) {unknown}; use auto, none, static, "
                f"gripper or static,gripper"
            )
    else:
        chosen = () if spec.blind else ("static", "gripper")
    return ("static", "gripper") if config.video and not chosen else chosen


def calvin_sources(config: CalvinConfig) -> dict[str, Any]:
    """What the manifest records about CALVIN's own code and files: the calvin_env checkout (path, commit,
    asset hashes) on the official backend, the asset folder's hashes with --calvin-assets."""
    from envs.calvin.official import calvin_env_sources

    out: dict[str, Any] = {}
    if config.backend == "official":
        out["calvin_env"] = calvin_env_sources(config.calvin_env, config.scene)
    if config.calvin_assets:
        from envs.calvin.assets import official_asset_hashes

        out["calvin_assets"] = official_asset_hashes(config.calvin_assets, config.scene)
    return out


class CalvinWorker(EpisodeWorker):
    """One env and one policy, reused for every chain this process runs."""

    video_fps = 30

    def __init__(
        self, config: CalvinConfig, spec: PolicySpec, run_path: str, served: ServedPolicy | None = None
    ) -> None:
        from envs.calvin.factory import calvin_env_spec

        super().__init__(run_path, config.video)
        self.config = config
        self.cameras = cameras_for(config, spec)
        self.video_keys = [f"rgb_{camera}" for camera in self.cameras]
        # CALVIN's layout carries depth for every camera, as calvin_env's get_obs does
        env_id, kwargs = calvin_env_spec(
            config.backend,
            cameras=self.cameras,
            renderer=config.renderer,
            calvin_assets=config.calvin_assets,
            calvin_dataset=config.calvin_dataset,
            calvin_env=config.calvin_env,
            obs_layout=config.obs_layout,
            depth=config.obs_layout == "calvin",
            scene=config.scene,
        )
        self.env = self.make_env(env_id, **kwargs)
        self.policy = build_policy_from_spec(spec, defaults=POLICY_DEFAULTS, served=served)
        self.policy.bind(self.env)
        self.certificates = (
            CertificateCache(certificates_path(config.certificates, run_path)) if config.perturb else None
        )
        self._expert_env: gym.Env | None = None
        self.prober = prober_for(self.config, self.config.seed, CALVIN_PROBES, self.env, self.policy)

    def run_unit(self, unit: WorkUnit, on_step: StepHook | None) -> EpisodeRecord:
        """One chain (a robustness variant is certified by the scripted expert first); its model calls
        are logged per subtask."""
        if on_step is not None and self.config.obs_layout != "flat":  # videos read the flat keys
            on_step = _flat_frames(on_step)
        clean_key = unit.key.split("~")[0]  # (a variant's key names its axis: never shown to the policy)
        assert self.env is not None  # built with the worker
        env, policy = self.env, self.policy

        def run_policy(perturbation: dict[str, Any] | None) -> EpisodeRecord:
            return self._chain(env, policy, unit, clean_key, perturbation, on_step)

        def run_expert(perturbation: dict[str, Any] | None) -> EpisodeRecord:
            expert_env, expert = self._expert()
            return self._chain(expert_env, expert, unit, clean_key, perturbation, None)

        return run_certified(
            unit,
            self.certificates,
            family=FAMILY,
            expert=POLICY_DEFAULTS["expert"]["expert"],
            episode={**{k: unit.spec[k] for k in ("initial_state", "tasks")}, "scene": self.config.scene},
            episode_id=clean_key,
            run_policy=run_policy,
            run_expert=run_expert,
            axes_family=FAMILY,
        )

    def _chain(
        self,
        env: gym.Env,
        policy: Policy,
        unit: WorkUnit,
        clean_key: str,
        perturbation: dict[str, Any] | None,
        on_step: StepHook | None,
    ) -> EpisodeRecord:
        from benchmarks.calvin.chain import run_chain
        from envs.calvin import initial_env_state
        from envs.calvin.perturbations import variant_instruction

        robot_obs, scene_obs = initial_env_state(unit.spec["initial_state"], self.config.scene)
        tasks = list(unit.spec["tasks"])
        own = policy is self.policy  # (the expert certifying a variant logs no decisions, probes nothing)
        result = run_chain(
            env,
            policy,
            robot_obs,
            scene_obs,
            tasks,
            [variant_instruction(t, perturbation) for t in tasks],
            ep_len=self.config.ep_len,
            seed=unit.seed,
            replay_key=clean_key,
            on_step=on_step,
            decisions=self.decisions if own else None,
            latency=self.config.latency_setting() if own else None,
            on_decision=self.prober.start(unit.seed) if own and self.prober is not None else None,
            perturbation=perturbation,
        )
        if own and self.prober is not None:
            self.decisions.extend(self.prober.finish([s["success"] for s in result["extras"]["subtasks"]]))
        result["extras"].update(initial_state=unit.spec["initial_state"], episode_id=clean_key)
        return result

    def _expert(self) -> tuple[gym.Env, Policy]:
        """The scripted expert on a camera-less copy of the table (built on first use): it certifies
        variants from the privileged state alone, and images change no physics."""
        from envs.calvin.factory import calvin_env_spec
        from policies.experts.calvin import ScriptedExpert

        if self._expert_env is None:
            env_id, kwargs = calvin_env_spec(
                "builtin", cameras=(), calvin_assets=self.config.calvin_assets, scene=self.config.scene
            )
            self._expert_env = self.make_env(env_id, **kwargs)
            self._expert_policy = ScriptedExpert()
            self._expert_policy.bind(self._expert_env)
        return self._expert_env, self._expert_policy


def _flat_frames(on_step: StepHook) -> StepHook:
    from envs.calvin.obs_layout import flat_observation

    return lambda obs, caption: on_step(flat_observation(obs), caption)


def _build_worker(
    config: CalvinConfig, spec: PolicySpec, run_path: str, served: ServedPolicy | None = None
) -> CalvinWorker:
    return CalvinWorker(config, spec, run_path, served)


# ---------------------------------------------------------------------------------------- benchmark


class CalvinBenchmark(Benchmark):
    """Units are chains in the public evaluation order; a record is one chain's subtasks."""

    name = "calvin"

    def __init__(self, config: CalvinConfig, spec: PolicySpec) -> None:
        super().__init__(config)
        self.spec = spec
        self.run_path = str(Path(config.output) / self.name / (config.run_name or spec.label))

    @property
    def chain_length(self) -> int:
        """Subtasks per unit: 5 for chains, 1 for ``--tasks`` episodes."""
        return 1 if self.config.tasks else CHAIN_LENGTH

    def units(self) -> list[WorkUnit]:
        """The clean units (:meth:`clean_units`), followed with ``--perturb`` by their robustness variants
        (``chain-NNNN~AXIS:LEVEL``)."""
        return robustness_units(
            self.clean_units(),
            self.config,
            certificates_path(self.config.certificates, self.run_path),
            FAMILY,
        )

    def clean_units(self) -> list[WorkUnit]:
        """Chains in the public order; with ``--tasks``, one-subtask episodes keyed by their chain's index
        (same key and seed as in the full evaluation, so a task run can be compared chain by chain)."""
        if self.config.tasks:
            episodes = task_episodes(parse_tasks(self.config.tasks), self.config.num_sequences)
            return [
                WorkUnit(
                    j,
                    f"chain-{i:04d}",
                    unit_seed(self.config.seed, i),
                    {"initial_state": state, "tasks": list(tasks)},
                )
                for j, (i, state, tasks) in enumerate(episodes)
            ]
        return [
            WorkUnit(
                i,
                f"chain-{i:04d}",
                unit_seed(self.config.seed, i),
                {"initial_state": state, "tasks": list(tasks)},
            )
            for i, (state, tasks) in enumerate(evaluation_chains(self.config.num_sequences))
        ]

    def worker_factory(self) -> WorkerFactory:
        return functools.partial(_build_worker, self.config, self.spec, self.run_path, self.served)

    prefix_keys = frozenset({"limit", "num_sequences"})

    def manifest_extra(self) -> dict[str, Any]:
        return {
            "policy": self.spec.manifest(),
            "protocol": {
                "num_sequences": self.config.num_sequences,
                "chain_length": self.chain_length,
                "ep_len": self.config.ep_len,
                "backend": self.config.backend,
                "scene": self.config.scene,
                **({"latency": setting.describe()} if (setting := self.config.latency_setting()) else {}),
                **({"tasks": list(parse_tasks(self.config.tasks))} if self.config.tasks else {}),
            },
            **calvin_sources(self.config),
        }

    def unit_value(self, record: dict[str, Any]) -> float:
        """A chain's completed subtasks over its length (avg. len / 5 on the 5-subtask protocol), in [0, 1]."""
        extras = read_episode(record["result"])["extras"]
        return int(extras["num_completed"]) / (len(extras.get("tasks") or []) or 5)

    def progress_stats(self, records: Sequence[dict[str, Any]]) -> dict[str, Any]:
        done = [r["extras"]["num_completed"] for r in ok_chains(records)]
        m = chain_metrics(done, self.chain_length)
        return {
            "avg_len": score_cell(m["avg_seq_len"], ".2f"),
            "sr%": "/".join(score_cell(v, ".0f") for v in percent_sr(m, self.chain_length)),
        }

    def _plots(self, metrics: dict[str, Any], tasks: dict[str, Any]) -> dict[str, Any]:
        """The chain-success and per-task plots, by file name (each a callable taking the path)."""
        n = self.chain_length
        sr = percent_sr(metrics, n)
        reference: dict[str, Sequence[float | None]] = (
            {REFERENCE["label"]: REFERENCE["chain_sr"]} if n == CHAIN_LENGTH else {}
        )
        return {
            "plots/chain_success.png": lambda p: line_plot(
                p,
                list(range(1, n + 1)),
                {self.spec.label: sr, **reference},
                xlabel="subtasks completed in a row",
                ylabel="success rate (%)",
                title="CALVIN chain success",
            ),
            "plots/task_success.png": lambda p: bar_plot(
                p,
                list(tasks),
                [100 * v["success"] / v["total"] for v in tasks.values()],
                value_label="success rate (%)",
                title="CALVIN success per task",
            ),
        }

    def _where(self) -> str:
        """The summary's "<backend> env, scene X" (the protocol's evaluation scene is D)."""
        return f"{self.config.backend} env, scene {self.config.scene}"

    def summarize(self, records: Sequence[dict[str, Any]], run_dir: RunDir, tally: UnitTally) -> Summary:
        if self.config.perturb:  # the clean arm's summary is the headline, the robustness table follows
            summary = robustness_summary(
                records,
                self.config,
                certificates_path(self.config.certificates, self.run_path),
                self._summary,
                len(self.clean_units()),
            )
        else:
            summary = self._summary(ok_chains(records), tally)
        title = f"CALVIN: {self.spec.label}"
        return attributed(summary, records, run_dir, "task", self.config.probe, title)

    def _summary(self, chains: list[EpisodeRecord], tally: UnitTally) -> Summary:
        n = self.chain_length
        completed = [c["extras"]["num_completed"] for c in chains]
        metrics = chain_metrics(completed, n)
        intervals = chain_intervals(completed, n)
        tasks = task_info(chains)
        # CALVIN's own keys, plus a marker its tools ignore: scored over the completed chains only.
        incomplete = {
            "chains_total": tally.total,
            "chains_completed": tally.completed,
            "chains_errored": tally.errored,
            "complete": tally.complete,
        }
        results = {self.spec.label: {**metrics, "task_info": tasks, "spatial_arena_run": incomplete}}
        calls = model_call_totals(s["policy_stats"] for s in subtask_records(chains))
        files: dict[str, Any] = {"results.json": functools.partial(write_json, data=results)}
        if chains:  # no plot of scores that do not exist
            files.update(self._plots(metrics, tasks))
        data = {
            "benchmark": "calvin",
            "policy": self.spec.label,
            "chains": len(chains),
            "scene": self.config.scene,
            **metrics,
            "avg_seq_len_ci": intervals["avg_seq_len_ci"],
            "chain_sr_ci": intervals["chain_sr_ci"],
            "task_info": tasks,
            "task_ci": task_intervals(tasks),
            "intervals": intervals["intervals"],
            "reference": REFERENCE,
            **({"model_calls": calls} if calls else {}),
            **summarize_latency([s["latency"] for s in subtask_records(chains) if "latency" in s]),
            **({"tasks": list(parse_tasks(self.config.tasks))} if self.config.tasks else {}),
        }
        text = (
            chain_markdown(self.spec.label, {**metrics, **intervals}, tasks, tally, self._where())
            if n == CHAIN_LENGTH
            else task_markdown(self.spec.label, {**metrics, **intervals}, tasks, tally, self._where())
        )
        if "latency" in data:
            text += f"\n\n{latency_markdown(data)}"
        text += f"\n\n{model_calls_markdown(calls)}" if calls else ""
        return Summary(data, text, files)


def check_setup(config: CalvinConfig, spec: PolicySpec) -> None:
    """What would fail in every worker, as one-line input errors before any starts: calvin_env and its
    packages (``--backend official``), an EGL plugin that does not load here (``--renderer egl``; without
    a device it ends the process from C), and ``--obs-layout calvin`` with a built-in policy that reads
    the flat layout's images."""
    if config.backend == "official":
        from envs.calvin.official import calvin_env_problem

        try:
            problem = calvin_env_problem(config.calvin_env)
        except FileNotFoundError as error:
            raise InputError(str(error)) from None
        if problem:
            raise InputError(f"--backend official: {problem}")
    if config.renderer == "egl":
        from envs.calvin.camera import egl_problem

        if problem := egl_problem():
            raise InputError(problem)
    if config.obs_layout == "calvin" and ":" not in spec.name and not spec.blind:
        raise InputError(
            f"--obs-layout calvin: --policy {spec.name} reads the flat layout (obs['rgb_static']); the "
            "CALVIN layout is for your own policy written for CALVIN's evaluate_policy "
            "(--policy package.module:Class); drop --obs-layout for built-in policies"
        )


def action_space() -> gym.spaces.Space:
    """The env's action space (CALVIN's relative 7-D actions on either backend), built without a simulator."""
    from envs.calvin.env import _action_space

    return _action_space("relative")


def main(argv: Sequence[str] | None = None) -> Summary:
    config, spec = parse_benchmark_args(
        CalvinConfig,
        argv,
        prog="python -m benchmarks.calvin",
        policy_defaults=POLICY_DEFAULTS,
        benchmark="calvin",
    )
    cameras_for(config, spec)  # bad --cameras is an input error here, not in every worker
    check_setup(config, spec)
    if config.tasks is not None:
        try:
            parse_tasks(config.tasks)
        except ValueError as error:  # one line naming the bad input and the valid names
            raise InputError(str(error)) from None
    if config.probe is not None and config.backend != "builtin":
        raise InputError("--probe: the state probes read the built-in play table; use --backend builtin")
    config.check_probe_policy(spec.name, spec.manifest()["privileged"])
    preflight(spec, config, defaults=POLICY_DEFAULTS, action_space=action_space)
    bench = CalvinBenchmark(config, spec)
    with policy_serving(bench, spec, POLICY_DEFAULTS):
        return run_command(bench, bench.run_path, stopper_for(bench))
