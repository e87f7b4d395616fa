"""``python -m benchmarks.calvin``: CALVIN's long-horizon protocol on the built-in play-table or ``calvin_env``.

The protocol as published: 1000 evaluation chains of 5 subtasks (``envs.calvin.get_sequences``, identical
to the public evaluation's), the robot reset to its neutral pose once per chain, at most 360 steps per
subtask, the fixed validation instruction per task, success from the task oracle, and the chain stopped
at its first failure. Results: CALVIN's ``results.json`` (``avg_seq_len``, ``chain_sr``, ``task_info``)
plus the shared run folder (records, manifest, summary, plots, videos).
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from benchmarks.core import Benchmark, RunDir, Summary, UnitTally, WorkUnit, score_cell, unit_seed
from benchmarks.core.episode import StepHook
from benchmarks.core.episode_record import EpisodeRecord, ok_results
from benchmarks.core.latency import (
    Latency,
    checked_latency,
    latency_arg,
    latency_markdown,
    latency_mode_arg,
    parse_latency,
    summarize_latency,
)
from benchmarks.core.plots import bar_plot, line_plot
from benchmarks.core.policy_cli import PolicySpec, build_policy_from_spec, parse_benchmark_args, preflight
from benchmarks.core.rundir import write_json
from benchmarks.core.runner import ExecutionConfig, require_count, run_command
from benchmarks.core.worker import EpisodeWorker
from envs.calvin.constants import CONTROL_HZ
from policies.cli import InputError, arg
from policies.mllm.common import model_call_totals, model_calls_markdown

CHAIN_LENGTH = 5
#: Per-policy defaults on this benchmark (``parse_benchmark_args``' ``policy_defaults``).
POLICY_DEFAULTS = {"expert": {"expert": "policies.experts.calvin:ScriptedExpert"}}
# Published reference (VLM4VLA, Qwen3-VL-4B, ABC->D on the official env), from MultihopSpatial Table 3.
REFERENCE = {"label": "VLM4VLA Qwen3-VL-4B, ABC→D (published)", "chain_sr": [92.4, 81.8, 74.1, 66.8, 59.9],
             "avg_seq_len": 3.75}


@dataclass
class CalvinConfig(ExecutionConfig):
    """Evaluate a policy on CALVIN's long-horizon protocol (chains of 5 subtasks, 360 steps each)."""

    policy: str = arg("expert", "expert | random | constant --action JSON | replay | mllm | vla | package.module:Class (your own policy)")
    replay_file: str | None = arg(None, "actions to replay with --policy replay (.jsonl keyed chain-NNNN/i, .npz, .npy)", must_exist=True)
    policy_kwargs: str = arg("{}", "JSON keyword arguments for a user policy class", json_kind=dict)
    num_sequences: int = arg(1000, "the first N of the 1000 public evaluation chains (the protocol uses all 1000; "
                                   "--limit N is the same option)", aliases=("--limit",), minimum=1)
    tasks: str | None = arg(None, "evaluate only these tasks (comma-separated names): one-subtask episodes from the "
                                  "first --num-sequences evaluation chains that start with one of them")
    ep_len: int = arg(360, "step budget per subtask (the protocol uses 360)", minimum=1)
    seed: int = arg(0, "run seed; each chain's seed derives from it and the chain index")
    backend: Literal["builtin", "official"] = arg("builtin", "built-in play-table, or the official calvin_env if importable")
    calvin_assets: str | None = arg(None, "a calvin_env checkout or its data/ folder: load the original table and robot meshes (builtin)", must_exist=True)
    calvin_env: str | None = arg(None, "--backend official: the calvin_env checkout to run (default: the importable one); "
                                       "configured for scene D from its own conf/", must_exist=True)
    calvin_dataset: str | None = arg(None, "--backend official: configure calvin_env from a CALVIN split folder's .hydra/ instead", must_exist=True)
    renderer: Literal["tiny", "egl"] = arg("tiny", "PyBullet renderer on either backend (tiny: CPU TinyRenderer; egl: "
                                                   "PyBullet's EGL plugin, refused where it does not load)")
    obs_layout: Literal["flat", "calvin"] = arg("flat", "observations the policy gets: flat (rgb_static, robot_obs, ...) or "
                                                        "calvin (calvin_env's obs['rgb_obs']['rgb_static'], obs['depth_obs'], "
                                                        "as CALVIN's evaluate_policy passes them)")
    cameras: str = arg("auto", "cameras to render: auto (what the policy needs), none, static, gripper, static,gripper")
    video: int = arg(0, "write MP4 videos of the first K chains (static and gripper views, instruction overlaid)", minimum=0)
    latency: str = latency_arg(CONTROL_HZ)
    latency_mode: Literal["continue", "hold"] = latency_mode_arg()
    output: str = arg("outputs", "results go to OUTPUT/calvin/RUN_NAME/")
    run_name: str | None = arg(None, "run folder name (default: the policy's label)")
    limit: int | None = arg(None, "CALVIN's units are the chains: --limit is --num-sequences", cli=False)

    def __post_init__(self) -> None:
        super().__post_init__()
        require_count("--num-sequences", self.num_sequences)
        require_count("--ep-len", self.ep_len)
        require_count("--video", self.video, minimum=0)
        checked_latency(self.latency, self.latency_mode, CONTROL_HZ)
        if self.backend != "official" and (self.calvin_env or self.calvin_dataset):
            raise ValueError("--calvin-env and --calvin-dataset configure calvin_env: add --backend official "
                             "(or use --calvin-assets PATH to load CALVIN's files into the built-in table)")
        if self.backend == "official" and self.calvin_assets:
            raise ValueError("--calvin-assets is for the built-in table; with --backend official calvin_env loads "
                             "its own files (point --calvin-env at the checkout)")
        if self.limit is not None:  # set from Python: the one prefix option is num_sequences
            self.num_sequences, self.limit = min(self.num_sequences, self.limit), None

    def latency_setting(self) -> Latency | None:
        """The parsed ``--latency`` at CALVIN's 30 Hz control rate (``None``: the published protocol)."""
        return parse_latency(self.latency, self.latency_mode, CONTROL_HZ)


# ------------------------------------------------------------------------------------------- metrics


def chain_metrics(num_completed: Sequence[int], chain_length: int = CHAIN_LENGTH) -> dict[str, Any]:
    """CALVIN's headline numbers: average completed length and success rate of reaching position i.

    Without a completed chain there is no score: every number is ``None`` (JSON null), never 0."""
    completed = np.asarray(num_completed, dtype=float)
    if completed.size == 0:
        return {"avg_seq_len": None, "chain_sr": {str(i): None for i in range(1, chain_length + 1)}}
    return {"avg_seq_len": float(completed.mean()),
            "chain_sr": {str(i): float((completed >= i).mean()) for i in range(1, chain_length + 1)}}


def task_info(chains: Sequence[EpisodeRecord]) -> dict[str, dict[str, int]]:
    """Per task: successes, and attempts (the successful subtasks plus the one that failed), as CALVIN counts."""
    success, total = Counter(), Counter()
    for subtask in _subtasks(chains):
        total[subtask["extras"]["task"]] += 1
        success[subtask["extras"]["task"]] += int(subtask["success"])
    return {task: {"success": success[task], "total": total[task]} for task in sorted(total)}


def _ok_results(records: Sequence[dict[str, Any]]) -> list[EpisodeRecord]:
    """The completed chains' records, also those written before the shared schema."""
    from benchmarks.calvin.chain import read_chain

    return ok_results(records, read_chain)


def _subtasks(chains: Sequence[EpisodeRecord]) -> list[EpisodeRecord]:
    return [s for c in chains for s in c["extras"]["subtasks"]]


def _percent(metrics: dict[str, Any], chain_length: int = CHAIN_LENGTH) -> list[float | None]:
    return [None if v is None else 100 * v for v in (metrics["chain_sr"][str(i)] for i in range(1, chain_length + 1))]


def _markdown(label: str, metrics: dict[str, Any], tasks: dict[str, dict[str, int]], tally: UnitTally,
              backend: str) -> str:
    ref = REFERENCE
    lines = [
        f"## CALVIN long-horizon evaluation: {label} ({tally.completed} of {tally.total} chains completed, "
        f"{backend} env)",
        "",
        "| policy | 1 | 2 | 3 | 4 | 5 | avg. len | chains errored |",
        "|---|---|---|---|---|---|---|---|",
        f"| {label} | " + " | ".join(score_cell(v) for v in _percent(metrics))
        + f" | {score_cell(metrics['avg_seq_len'], '.2f')} | {tally.errored_cell()} |",
        f"| {ref['label']} | " + " | ".join(f"{v:.1f}" for v in ref["chain_sr"]) + f" | {ref['avg_seq_len']:.2f} | |",
        *_blind_rows(),
        "",
        "Success rate (%) of completing at least i subtasks in a row; avg. len = mean completed subtasks (0-5), "
        "over the chains that ran to their end (an errored chain is not scored; n/a: none did).",
        "",
        "| task | success | attempts | rate |",
        "|---|---|---|---|",
    ]
    lines += [f"| {t} | {v['success']} | {v['total']} | {100 * v['success'] / v['total']:.0f}% |"
              for t, v in tasks.items()]
    return "\n".join(lines)


def _blind_rows() -> list[str]:
    """Random and the best constant action (``bench/results/blind_baselines.json``), with their provenance."""
    from benchmarks.core.blind import blind_table_rows

    rows, note = blind_table_rows("calvin", lambda v: [f"{x:.1f}" for x in v["chain_sr"]] + [f"{v['avg_seq_len']:.2f}", ""])
    return [*rows, "", note] if note else rows


def _task_markdown(label: str, metrics: dict[str, Any], tasks: dict[str, dict[str, int]], tally: UnitTally,
                   backend: str) -> str:
    rate = metrics["chain_sr"]["1"]
    lines = [f"## CALVIN single-task episodes: {label} ({tally.completed} of {tally.total} episodes completed, "
             f"{backend} env)", "",
             f"Success rate: {score_cell(None if rate is None else 100 * rate)}% (one subtask per episode, from the "
             f"evaluation chains that start with it); episodes errored: {tally.errored_cell()}", "",
             "| task | success | episodes | rate |", "|---|---|---|---|"]
    lines += [f"| {t} | {v['success']} | {v['total']} | {100 * v['success'] / v['total']:.0f}% |"
              for t, v in tasks.items()]
    return "\n".join(lines)


def evaluation_chains(n: int) -> list[tuple[dict[str, Any], tuple[str, ...]]]:
    """The first ``n`` of the 1000 published evaluation chains (all of CALVIN's own list beyond 1000).

    Upstream's ``get_sequences(n)`` re-splits a smaller ``n`` over the 192 states, which gives different
    chains; a prefix keeps a short run comparable with (and resumable into) the full evaluation.
    """
    from envs.calvin.sequences import NUM_SEQUENCES, get_sequences

    if n < 1:
        raise InputError(f"--num-sequences must be at least 1, got {n}")
    return get_sequences(NUM_SEQUENCES)[:n] if n <= NUM_SEQUENCES else get_sequences(n)


def parse_tasks(text: str) -> tuple[str, ...]:
    """``--tasks`` as task names, checked: each must be a CALVIN task that starts some evaluation chain."""
    from envs.calvin.sequences import NUM_SEQUENCES, get_sequences
    from envs.calvin.tasks import TASKS

    chosen = tuple(dict.fromkeys(t.strip() for t in text.split(",") if t.strip()))
    unknown = [t for t in chosen if t not in TASKS]
    if unknown or not chosen:
        raise ValueError(f"--tasks {','.join(unknown) or repr(text)}: unknown CALVIN task; valid: {', '.join(TASKS)}")
    starters = {tasks[0] for _, tasks in get_sequences(NUM_SEQUENCES)}
    alone = [t for t in TASKS if t in starters]
    never = [t for t in chosen if t not in starters]
    if never:
        raise ValueError(f"--tasks {','.join(never)}: no evaluation chain starts with it (it needs an earlier subtask, "
                         f"e.g. a block in the hand); tasks that can be evaluated alone: {', '.join(alone)}")
    return chosen


def task_episodes(tasks: Sequence[str], n: int) -> list[tuple[int, dict[str, Any], tuple[str, ...]]]:
    """``(chain index, initial state, (task,))`` for the first ``n`` public evaluation chains whose first
    subtask is one of ``tasks``: CALVIN's own initial states, in which that subtask is feasible as it is."""
    from envs.calvin.sequences import NUM_SEQUENCES, get_sequences

    if n < 1:
        raise ValueError(f"--num-sequences must be at least 1, got {n}")
    chosen = set(tasks)
    found = [(i, state, seq[:1]) for i, (state, seq) in enumerate(get_sequences(NUM_SEQUENCES)) if seq[0] in chosen]
    return found[:n]


# ------------------------------------------------------------------------------------------- worker


def cameras_for(config: CalvinConfig, spec: PolicySpec) -> tuple[str, ...]:
    """The cameras to render: what the policy looks at, plus both views for videos."""
    if config.cameras != "auto":
        chosen = tuple(c for c in config.cameras.split(",") if c and c != "none")
        unknown = sorted(set(chosen) - {"static", "gripper"})
        if unknown:
            raise InputError(f"--cameras {config.cameras}: unknown camera(s) {unknown}; use auto, none, static, "
                             f"gripper or static,gripper")
    else:
        chosen = () if spec.blind else ("static", "gripper")
    return ("static", "gripper") if config.video and not chosen else chosen


def calvin_sources(config: CalvinConfig) -> dict[str, Any]:
    """What the manifest records about CALVIN's own code and files: the calvin_env checkout (path, commit,
    asset hashes) on the official backend, the asset folder's hashes with --calvin-assets."""
    from envs.calvin.official import calvin_env_sources

    out: dict[str, Any] = {}
    if config.backend == "official":
        out["calvin_env"] = calvin_env_sources(config.calvin_env)
    if config.calvin_assets:
        from envs.calvin.assets import official_asset_hashes

        out["calvin_assets"] = official_asset_hashes(config.calvin_assets)
    return out


class CalvinWorker(EpisodeWorker):
    """One env and one policy, reused for every chain this process runs."""

    video_fps = 30

    def __init__(self, config: CalvinConfig, spec: PolicySpec, run_path: str) -> None:
        from envs.calvin.factory import calvin_env_spec

        super().__init__(run_path, config.video)
        self.config = config
        self.cameras = cameras_for(config, spec)
        self.video_keys = [f"rgb_{camera}" for camera in self.cameras]
        # CALVIN's layout carries depth for every camera, as calvin_env's get_obs does
        env_id, kwargs = calvin_env_spec(config.backend, cameras=self.cameras, renderer=config.renderer,
                                         calvin_assets=config.calvin_assets, calvin_dataset=config.calvin_dataset,
                                         calvin_env=config.calvin_env, obs_layout=config.obs_layout,
                                         depth=config.obs_layout == "calvin")
        self.env = self.make_env(env_id, **kwargs)
        self.policy = build_policy_from_spec(spec, defaults=POLICY_DEFAULTS)
        self.policy.bind(self.env)

    def run_unit(self, unit: WorkUnit, on_step: StepHook | None) -> EpisodeRecord:
        """One chain; its model calls are logged per subtask."""
        from benchmarks.calvin.chain import run_chain
        from envs.calvin import initial_env_state
        from envs.calvin.instructions import instruction_for

        robot_obs, scene_obs = initial_env_state(unit.spec["initial_state"])
        tasks = list(unit.spec["tasks"])
        if on_step is not None and self.config.obs_layout != "flat":  # videos read the flat keys
            on_step = _flat_frames(on_step)
        result = run_chain(self.env, self.policy, robot_obs, scene_obs, tasks, [instruction_for(t) for t in tasks],
                           ep_len=self.config.ep_len, seed=unit.seed, replay_key=unit.key, on_step=on_step,
                           decisions=self.decisions, latency=self.config.latency_setting())
        result["extras"]["initial_state"] = unit.spec["initial_state"]
        return result


def _flat_frames(on_step: StepHook) -> StepHook:
    from envs.calvin.obs_layout import flat_observation

    return lambda obs, caption: on_step(flat_observation(obs), caption)


def _build_worker(config: CalvinConfig, spec: PolicySpec, run_path: str) -> CalvinWorker:
    return CalvinWorker(config, spec, run_path)


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
        """Chains in the public order; with ``--tasks``, one-subtask episodes keyed by their chain's index
        (same key and seed as in the full evaluation, so a task run can be compared chain by chain)."""
        if self.config.tasks:
            episodes = task_episodes(parse_tasks(self.config.tasks), self.config.num_sequences)
            return [WorkUnit(j, f"chain-{i:04d}", unit_seed(self.config.seed, i),
                             {"initial_state": state, "tasks": list(tasks)})
                    for j, (i, state, tasks) in enumerate(episodes)]
        return [WorkUnit(i, f"chain-{i:04d}", unit_seed(self.config.seed, i),
                         {"initial_state": state, "tasks": list(tasks)})
                for i, (state, tasks) in enumerate(evaluation_chains(self.config.num_sequences))]

    def worker_factory(self) -> Any:
        return functools.partial(_build_worker, self.config, self.spec, self.run_path)

    prefix_keys = frozenset({"limit", "num_sequences"})

    def manifest_extra(self) -> dict[str, Any]:
        return {"policy": self.spec.manifest(),
                "protocol": {"num_sequences": self.config.num_sequences, "chain_length": self.chain_length,
                             "ep_len": self.config.ep_len, "backend": self.config.backend,
                             **({"latency": setting.describe()} if (setting := self.config.latency_setting()) else {}),
                             **({"tasks": list(parse_tasks(self.config.tasks))} if self.config.tasks else {})},
                **calvin_sources(self.config)}

    def progress_stats(self, records: Sequence[dict[str, Any]]) -> dict[str, Any]:
        done = [r["extras"]["num_completed"] for r in _ok_results(records)]
        m = chain_metrics(done, self.chain_length)
        return {"avg_len": score_cell(m["avg_seq_len"], ".2f"),
                "sr%": "/".join(score_cell(v, ".0f") for v in _percent(m, self.chain_length))}

    def summarize(self, records: Sequence[dict[str, Any]], run_dir: RunDir, tally: UnitTally) -> Summary:
        chains = _ok_results(records)
        n = self.chain_length
        metrics = chain_metrics([c["extras"]["num_completed"] for c in chains], n)
        tasks = task_info(chains)
        # CALVIN's own keys, plus a marker its tools ignore: scored over the completed chains only.
        incomplete = {"chains_total": tally.total, "chains_completed": tally.completed,
                      "chains_errored": tally.errored, "complete": tally.complete}
        results = {self.spec.label: {**metrics, "task_info": tasks, "spatial_arena_run": incomplete}}
        calls = model_call_totals(s["policy_stats"] for s in _subtasks(chains))
        files: dict[str, Any] = {"results.json": functools.partial(write_json, data=results)}
        if chains:  # no plot of scores that do not exist
            sr = _percent(metrics, n)
            reference = {REFERENCE["label"]: REFERENCE["chain_sr"]} if n == CHAIN_LENGTH else {}
            files["plots/chain_success.png"] = lambda p: line_plot(
                p, list(range(1, n + 1)), {self.spec.label: sr, **reference},
                xlabel="subtasks completed in a row", ylabel="success rate (%)", title="CALVIN chain success")
            files["plots/task_success.png"] = lambda p: bar_plot(
                p, list(tasks), [100 * v["success"] / v["total"] for v in tasks.values()],
                value_label="success rate (%)", title="CALVIN success per task")
        data = {"benchmark": "calvin", "policy": self.spec.label, "chains": len(chains), **metrics,
                "task_info": tasks, "reference": REFERENCE, **({"model_calls": calls} if calls else {}),
                **summarize_latency([s["latency"] for s in _subtasks(chains) if "latency" in s]),
                **({"tasks": list(parse_tasks(self.config.tasks))} if self.config.tasks else {})}
        text = (_markdown(self.spec.label, metrics, tasks, tally, self.config.backend) if n == CHAIN_LENGTH
                else _task_markdown(self.spec.label, metrics, tasks, tally, self.config.backend))
        if "latency" in data:
            text += f"\n\n{latency_markdown(data)}"
        return Summary(data, text + (f"\n\n{model_calls_markdown(calls)}" if calls else ""), files)


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
        raise InputError(f"--obs-layout calvin: --policy {spec.name} reads the flat layout (obs['rgb_static']); the "
                         "CALVIN layout is for your own policy written for CALVIN's evaluate_policy "
                         "(--policy package.module:Class); drop --obs-layout for built-in policies")


def action_space() -> Any:
    """The env's action space (CALVIN's relative 7-D actions on either backend), built without a simulator."""
    from envs.calvin.env import _action_space

    return _action_space("relative")


def main(argv: Sequence[str] | None = None) -> Summary:
    config, spec = parse_benchmark_args(CalvinConfig, argv, prog="python -m benchmarks.calvin",
                                        policy_defaults=POLICY_DEFAULTS, benchmark="calvin")
    cameras_for(config, spec)  # bad --cameras is an input error here, not in every worker
    check_setup(config, spec)
    if config.tasks is not None:
        try:
            parse_tasks(config.tasks)
        except ValueError as error:  # one line naming the bad input and the valid names
            raise InputError(str(error)) from None
    preflight(spec, config, defaults=POLICY_DEFAULTS, action_space=action_space)
    bench = CalvinBenchmark(config, spec)
    return run_command(bench, bench.run_path)

