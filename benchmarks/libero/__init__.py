"""``python -m benchmarks.libero``: LIBERO suites with the standard (OpenVLA) evaluation protocol.

Per task, one trial per fixed initial state (50), ``num_steps_wait`` no-op settle steps, then at most the
suite's step budget (spatial 220, object 280, goal 300, libero_10 520, libero_90 400); success is LIBERO's
goal check. Reported: success rate per task and per suite, with every protocol number in the manifest.
"""

from __future__ import annotations

import functools
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
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
from benchmarks.core.plots import bar_plot
from benchmarks.core.policy_cli import PolicySpec, build_policy_from_spec, parse_benchmark_args, preflight
from benchmarks.core.runner import ExecutionConfig, require_count, run_command
from benchmarks.core.work import RECORD_ERROR
from benchmarks.core.worker import EpisodeWorker
from envs.libero import protocol
from policies.cli import InputError, arg
from policies.mllm.common import model_call_totals, model_calls_markdown

# Published reference (VLM4VLA with Qwen3-VL-4B on LIBERO-10), from MultihopSpatial Table 3.
#: Per-policy defaults on this benchmark (``parse_benchmark_args``' ``policy_defaults``): the scripted
#: expert is :class:`policies.experts.libero.LiberoExpert`.
POLICY_DEFAULTS = {"expert": {"expert": "policies.experts.libero:LiberoExpert"},
                   "mllm": {"loop": "spatial", "task": "manipulation", "image_keys": ("agentview_image",)},
                   "vla": {"data_format": "libero", "chunk_size": 4}}
REFERENCE = {"libero_10": {"label": "VLM4VLA Qwen3-VL-4B (published)", "success_rate": 35.8}}


@dataclass
class LiberoConfig(ExecutionConfig):
    """Evaluate a policy on a LIBERO suite (one trial per fixed initial state, OpenVLA's step budgets)."""

    policy: str = arg("random", "random | expert | constant --action JSON | replay | mllm | vla | package.module:Class (your own policy)")
    replay_file: str | None = arg(None, "actions to replay with --policy replay (.jsonl keyed SUITE/TASK/TRIAL, .npz, .npy)", must_exist=True)
    policy_kwargs: str = arg("{}", "JSON keyword arguments for a user policy class", json_kind=dict)
    suite: Literal["libero_spatial", "libero_object", "libero_goal", "libero_10", "libero_90"] = arg(
        "libero_10", "task suite")
    tasks: str = arg("all", "task indices within the suite, comma-separated, or all")
    trials_per_task: int = arg(protocol.TRIALS_PER_TASK, "trials per task, one per fixed initial state (protocol: 50)", minimum=1)
    max_steps: int | None = arg(None, "step budget per episode (default: the suite's, 220/280/300/520/400)", minimum=1)
    num_steps_wait: int = arg(protocol.NUM_STEPS_WAIT, "no-op settle steps before the policy acts (protocol: 10)", minimum=0)
    seed: int = arg(7, "run seed (the OpenVLA evaluation uses 7); each trial's seed derives from it")
    image_size: int = arg(protocol.IMAGE_SIZE, "camera image size (protocol: 256; models resize for themselves)", minimum=1)
    fast_render: bool = arg(True, "shadows, reflections and multisampling off (about 1.8x faster on CPU; changes images)")
    image_orientation: Literal["upright", "rot180", "raw"] = arg(
        "upright", "camera image convention: upright, or rot180 as OpenVLA/LeRobot training data")
    video: int = arg(0, "write MP4 videos of the first K episodes", minimum=0)
    latency: str = latency_arg(protocol.CONTROL_FREQ)
    latency_mode: Literal["continue", "hold"] = latency_mode_arg()
    output: str = arg("outputs", "results go to OUTPUT/libero/RUN_NAME/")
    run_name: str | None = arg(None, "run folder name (default: SUITE-POLICY)")

    def __post_init__(self) -> None:
        super().__post_init__()
        require_count("--trials-per-task", self.trials_per_task)
        require_count("--max-steps", self.max_steps)
        require_count("--num-steps-wait", self.num_steps_wait, minimum=0)
        require_count("--video", self.video, minimum=0)
        checked_latency(self.latency, self.latency_mode, protocol.CONTROL_FREQ)

    def latency_setting(self) -> Latency | None:
        """The parsed ``--latency`` at LIBERO's 20 Hz control rate (``None``: the published protocol)."""
        return parse_latency(self.latency, self.latency_mode, protocol.CONTROL_FREQ)

    def budget(self) -> int:
        return protocol.MAX_STEPS[self.suite] if self.max_steps is None else self.max_steps

    def task_indices(self) -> list[int]:
        count = protocol.TASK_COUNTS[self.suite]
        if self.tasks == "all":
            return list(range(count))
        try:
            chosen = [int(t) for t in self.tasks.split(",") if t.strip()]
        except ValueError:
            raise InputError(f"--tasks {self.tasks}: give task indices separated by commas (e.g. 0,3), or "
                             f"all") from None
        bad = [t for t in chosen if not 0 <= t < count]
        if bad:
            raise InputError(f"--tasks {bad}: {self.suite} has tasks 0..{count - 1}")
        return chosen


class LiberoWorker(EpisodeWorker):
    """Keeps the env of the task it last ran (creating a LIBERO scene takes seconds)."""

    video_keys = ("agentview_image", "eye_in_hand_image")
    video_fps, video_height = 20, 256

    def __init__(self, config: LiberoConfig, spec: PolicySpec, run_path: str) -> None:
        super().__init__(run_path, config.video)
        self.config, self.spec = config, spec
        self.policy = build_policy_from_spec(spec, defaults=POLICY_DEFAULTS)
        self.task_index: int | None = None

    def _env_for(self, task_index: int) -> Any:
        from envs.libero.protocol import env_id

        if task_index != self.task_index:
            if self.env is not None:
                self.env.close()
            c = self.config
            self.env = self.make_env(env_id(c.suite, task_index), image_size=c.image_size, max_steps=c.budget(),
                                     num_steps_wait=c.num_steps_wait, fast_render=c.fast_render,
                                     image_orientation=c.image_orientation,
                                     cameras=c.video > 0 or not self.spec.blind)
            self.task_index = None  # set once bound: a policy that refuses this env fails every trial alike
            self.policy.bind(self.env)
            self.task_index = task_index
        return self.env

    def run_unit(self, unit: WorkUnit, on_step: StepHook | None) -> EpisodeRecord:
        from benchmarks.libero.episode import run_episode

        env = self._env_for(unit.spec["task_index"])
        return run_episode(env, self.policy, init_state_index=unit.spec["init_state_index"],
                           max_steps=self.config.budget(), num_steps_wait=self.config.num_steps_wait, seed=unit.seed,
                           replay_key=unit.key, on_step=on_step, decisions=self.decisions,
                           latency=self.config.latency_setting())


def _build_worker(config: LiberoConfig, spec: PolicySpec, run_path: str) -> LiberoWorker:
    return LiberoWorker(config, spec, run_path)


def task_table(results: Sequence[EpisodeRecord], errored: Mapping[int, int] | None = None) -> dict[int, dict[str, Any]]:
    """Per task: instruction, completed trials, successes, success rate (%) and errored trials (``errored``:
    task index -> count). A task whose every trial errored keeps its row, with no instruction (it comes
    from the episodes) and success rate ``None``."""
    by_task: dict[int, list[EpisodeRecord]] = defaultdict(list)
    for r in results:
        by_task[r["extras"]["task_index"]].append(r)
    errored = errored or {}
    table = {}
    for t in sorted({*by_task, *errored}):
        rows = by_task.get(t, [])
        table[t] = {"instruction": rows[0]["extras"]["instruction"] if rows else None, "trials": len(rows),
                    "successes": sum(r["success"] for r in rows),
                    "success_rate": 100.0 * float(np.mean([r["success"] for r in rows])) if rows else None,
                    "errored": errored.get(t, 0)}
    return table


def task_label(task: int, row: Mapping[str, Any]) -> str:
    """A task as a person reads it: its index and instruction."""
    return f"{task}: {row['instruction'] or '(instruction unknown: every trial errored)'}"


def task_plot(path: Path, table: Mapping[int, Mapping[str, Any]], title: str) -> Path:
    """Success per task as bars named by instruction; an errored task is a hatched row saying so."""
    notes = [(f"{row['errored']} errored" if row["trials"] else f"all {row['errored']} trials errored")
             if row["errored"] else "" for row in table.values()]
    return bar_plot(path, [task_label(t, row) for t, row in table.items()],
                    [row["success_rate"] for row in table.values()], value_label="success rate (%)", title=title,
                    notes=notes)


class LiberoBenchmark(Benchmark):
    name = "libero"

    def __init__(self, config: LiberoConfig, spec: PolicySpec) -> None:
        super().__init__(config)
        self.spec = spec
        self.run_path = str(Path(config.output) / self.name / (config.run_name or f"{config.suite}-{spec.label}"))

    def units(self) -> list[WorkUnit]:
        c = self.config
        if not 1 <= c.trials_per_task <= protocol.NUM_INIT_STATES:
            raise InputError(f"--trials-per-task must be 1..{protocol.NUM_INIT_STATES} (one per fixed initial state)")
        if self.spec.name == "expert":
            check_expert_goals(c.suite, c.task_indices())
        pairs = [(t, k) for t in c.task_indices() for k in range(c.trials_per_task)]
        return [WorkUnit(i, f"{c.suite}/{t:02d}/{k:02d}", unit_seed(c.seed, i), {"task_index": t, "init_state_index": k})
                for i, (t, k) in enumerate(pairs)]

    def worker_factory(self) -> Any:
        return functools.partial(_build_worker, self.config, self.spec, self.run_path)

    def manifest_extra(self) -> dict[str, Any]:
        c = self.config
        return {"policy": self.spec.manifest(),
                "protocol": {"suite": c.suite, "tasks": c.task_indices(), "trials_per_task": c.trials_per_task,
                             "max_steps": c.budget(), "num_steps_wait": c.num_steps_wait, "image_size": c.image_size,
                             "fast_render": c.fast_render, "image_orientation": c.image_orientation,
                             **({"latency": setting.describe()} if (setting := c.latency_setting()) else {})}}

    def progress_stats(self, records: Sequence[dict[str, Any]]) -> dict[str, Any]:
        ok = [r["success"] for r in ok_results(records)]
        return {"success%": f"{100 * np.mean(ok):.1f}" if ok else "-"}

    def errored_by_task(self, records: Sequence[dict[str, Any]]) -> Counter[int]:
        """Errored trials per task index (an errored record has no result: its unit says the task)."""
        task_of = {u.key: u.spec["task_index"] for u in self.units()}
        return Counter(task_of[r["key"]] for r in records if r["status"] == RECORD_ERROR)

    def summarize(self, records: Sequence[dict[str, Any]], run_dir: RunDir, tally: UnitTally) -> Summary:
        results = ok_results(records)
        table = task_table(results, self.errored_by_task(records))
        overall = 100.0 * float(np.mean([r["success"] for r in results])) if results else None
        c = self.config
        lines = [f"## LIBERO {c.suite}: {self.spec.label}", "",
                 f"{tally.completed} of {tally.total} episodes completed; budget {c.budget()} steps after "
                 f"{c.num_steps_wait} settle steps; fast rendering {'on' if c.fast_render else 'off'}. Success is "
                 "over completed episodes; errored ones are counted, never scored.", "",
                 "| task | instruction | trials | success % | episodes errored |", "|---|---|---|---|---|"]
        lines += [f"| {t} | {row['instruction'] or '(every trial errored)'} | {row['trials']} | "
                  f"{score_cell(row['success_rate'])} | {row['errored']} |" for t, row in table.items()]
        lines.append(f"| **suite** | | {len(results)} | **{score_cell(overall)}** | {tally.errored_cell()} |")
        lines += _blind_rows(c.suite)
        if c.suite in REFERENCE:
            ref = REFERENCE[c.suite]
            lines += ["", f"Reference: {ref['label']}: {ref['success_rate']:.1f} %."]
        calls = model_call_totals(r["policy_stats"] for r in results)
        if calls:
            lines += ["", model_calls_markdown(calls)]
        latency = summarize_latency([r["latency"] for r in results if "latency" in r])
        if latency:
            lines += ["", latency_markdown(latency)]
        data = {"benchmark": "libero", "suite": c.suite, "policy": self.spec.label, "episodes": len(results),
                "success_rate": overall, "tasks": {str(t): row for t, row in table.items()},
                **({"model_calls": calls} if calls else {}), **latency}
        files = {"plots/success_by_task.png": functools.partial(
            task_plot, table=table, title=f"LIBERO {c.suite}: {self.spec.label}")} if table else {}
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


def _blind_rows(suite: str) -> list[str]:
    """Random and the best constant action (``bench/results/blind_baselines.json``) when measured on ``suite``."""
    from benchmarks.core.blind import blind_baselines, blind_table_rows

    entry = blind_baselines("libero")
    if entry is None or entry.get("suite") != suite:
        return []
    rows, note = blind_table_rows("libero", lambda v: ["", str(v["units"]), f"{v['success_rate']:.1f}", ""])
    return [*rows, "", note] if note else rows


def action_space() -> Any:
    """The env's action space (delta end-effector pose and gripper, in [-1, 1]), built without a simulator."""
    from envs.libero.env import action_space

    return action_space()


def main(argv: Sequence[str] | None = None) -> Summary:
    config, spec = parse_benchmark_args(
        LiberoConfig, argv, prog="python -m benchmarks.libero",
        policy_defaults=POLICY_DEFAULTS, benchmark="libero")
    preflight(spec, config, defaults=POLICY_DEFAULTS, action_space=action_space)
    bench = LiberoBenchmark(config, spec)
    return run_command(bench, bench.run_path)

