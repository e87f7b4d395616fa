"""``python -m benchmarks.embodied nav|manip``: EmbodiedBench-style closed-loop evaluation.

EB-Navigation on procedurally generated MuJoCo homes and EB-Manipulation on robosuite, with EB's protocol:
the five (navigation) or five (manipulation) subsets, a step budget per episode, success checked after
every action, and per-episode records with EB's fields (task success, steps, planner calls, planner
output errors). The MLLM agent loop is ``--policy mllm --model ...`` (EB prompt, ``executable_plan``,
feedback, history of the last 5 messages).
"""

from __future__ import annotations

import functools
import json
import sys
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.core import Benchmark, RunDir, Summary, UnitTally, WorkUnit, score_cell, unit_seed
from benchmarks.core.episode import StepHook
from benchmarks.core.episode_record import EpisodeRecord, ok_results
from benchmarks.core.plots import bar_plot
from benchmarks.core.policy_cli import PolicySpec, build_policy_from_spec, parse_benchmark_args, preflight
from benchmarks.core.runner import ExecutionConfig, require_count, run_command
from benchmarks.core.worker import EpisodeWorker
from policies.cli import InputError, arg
from policies.entry_point import load_entry_point


@dataclass(frozen=True)
class Family:
    """What differs between EB-Navigation and EB-Manipulation; everything else is shared."""

    name: str
    title: str
    env_id: str
    subsets: str  # "module:ATTR" with the subset names
    episodes_per_subset: int
    make_episodes: str  # "module:fn(subset, n, seed) -> list[dict]" (or with a family argument, see below)
    load_episodes: str  # "module:fn(path) -> list[dict]"
    run_episode: str  # "module:fn(env, policy, episode, *, seed, on_step) -> dict"
    expert: str  # "module:Class"
    video_keys: tuple[str, ...]
    size_kwargs: tuple[str, ...]  # env kwargs set by --image-size
    mllm_defaults: dict[str, Any] = field(default_factory=dict)

    def policy_defaults(self) -> dict[str, dict[str, Any]]:
        """Per-policy defaults on this family (``parse_benchmark_args``' ``policy_defaults``)."""
        return {"mllm": self.mllm_defaults, "expert": {"expert": self.expert}}


FAMILIES = {
    "nav": Family(
        name="nav", title="EB-Navigation (MuJoCo homes)", env_id="SpatialArena/EBNavigation-v0",
        subsets="envs.navigation.episodes:SUBSETS", episodes_per_subset=60,
        make_episodes="envs.navigation.episodes:make_episode_set",
        load_episodes="envs.navigation.episodes:load_episodes",
        run_episode="benchmarks.embodied.navigation:run_episode", expert="policies.experts.navigation:ShortestPathExpert",
        video_keys=("rgb",), size_kwargs=("width", "height"),
        mllm_defaults={"loop": "eb", "task": "navigation", "image_keys": ("rgb",)},
    ),
    "manip": Family(
        name="manip", title="EB-Manipulation (robosuite)", env_id="SpatialArena/EBManipulation-v0",
        subsets="envs.manipulation.tasks:SUBSETS", episodes_per_subset=12,
        make_episodes="envs.manipulation.episodes:make_episode_set",
        load_episodes="envs.manipulation.episodes:load_episodes",
        run_episode="benchmarks.embodied.manipulation:run_episode", expert="policies.experts.manipulation:EBManipulationExpert",
        video_keys=("front_rgb",), size_kwargs=("image_size",),
        mllm_defaults={"loop": "eb", "task": "manipulation", "image_keys": ("front_rgb",)},
    ),
}


@dataclass
class EmbodiedConfig(ExecutionConfig):
    """Evaluate a policy on EB-style navigation or manipulation (first argument: nav or manip)."""

    family: str = arg("nav", "nav or manip (given as the first argument)", cli=False)
    policy: str = arg("expert", "expert | random | constant --action JSON | replay | mllm | package.module:Class (your own policy)")
    replay_file: str | None = arg(None, "actions to replay with --policy replay (.jsonl keyed by episode id)", must_exist=True)
    policy_kwargs: str = arg("{}", "JSON keyword arguments for a user policy class", json_kind=dict)
    subset: str = arg("all", "a subset name, several separated by commas, or all")
    episodes: int | None = arg(None, "episodes per subset (default: 60 navigation, 12 per task family manipulation)", minimum=1)
    episodes_file: str | None = arg(None, "evaluate the episodes in this JSONL file instead of generating them", must_exist=True)
    episode_seed: int = arg(0, "seed of the generated episode sets")
    seed: int = arg(0, "run seed; each episode's seed derives from it and the episode index")
    image_size: int | None = arg(None, "camera image size in pixels (default: the env's; EB used 500)", minimum=1)
    env_kwargs: str = arg("{}", "JSON keyword arguments passed to the env", json_kind=dict)
    video: int = arg(0, "write MP4 videos of the first K episodes", minimum=0)
    output: str = arg("outputs", "results go to OUTPUT/embodied-FAMILY/RUN_NAME/")
    run_name: str | None = arg(None, "run folder name (default: the policy's label)")

    def __post_init__(self) -> None:
        super().__post_init__()
        require_count("--episodes", self.episodes)
        require_count("--image-size", self.image_size)
        require_count("--video", self.video, minimum=0)


def _env_kwargs(config: EmbodiedConfig, family: Family) -> dict[str, Any]:
    kwargs = json.loads(config.env_kwargs or "{}")
    if config.image_size:
        kwargs.update({k: config.image_size for k in family.size_kwargs})
    return kwargs


def action_space(family: str, env_kwargs: dict[str, Any]) -> Any:
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
    parameters = inspect.signature(cls).parameters
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()):
        return
    unknown = sorted(set(kwargs) - set(parameters))
    if unknown:
        raise InputError(f"--env-kwargs: {env_id} takes no argument(s) {', '.join(unknown)}; it takes "
                         f"{', '.join(parameters)}")


class EmbodiedWorker(EpisodeWorker):
    """One env (the family's registered id) and one policy, reused for every episode this process runs."""

    video_fps, video_height = 2, 320

    def __init__(self, config: EmbodiedConfig, spec: PolicySpec, run_path: str) -> None:
        super().__init__(run_path, config.video)
        self.family = FAMILIES[config.family]
        self.config, self.video_keys = config, self.family.video_keys
        self.env = self.make_env(self.family.env_id, **_env_kwargs(config, self.family))
        self.policy = build_policy_from_spec(spec, defaults=self.family.policy_defaults())
        self.policy.bind(self.env)
        self._run_episode = load_entry_point(self.family.run_episode)

    def run_unit(self, unit: WorkUnit, on_step: StepHook | None) -> EpisodeRecord:
        return self._run_episode(self.env, self.policy, unit.spec["episode"], seed=unit.seed, on_step=on_step,
                                 decisions=self.decisions)


def _build_worker(config: EmbodiedConfig, spec: PolicySpec, run_path: str) -> EmbodiedWorker:
    return EmbodiedWorker(config, spec, run_path)


# ------------------------------------------------------------------------------------------ summary


def _planner_errors(stats: dict[str, float]) -> float:
    return stats.get("planner_output_error", stats.get("parse_errors", 0.0))


def planner_calls(record: EpisodeRecord) -> float:
    """The episode's planner (model) calls: the policy's own count, ``policy_stats["model_calls"]`` (the
    number CALVIN's and LIBERO's model-call totals add up); a policy that calls no model (the expert, the
    baselines) plans on every ``act`` (``policy_calls``). ``policy_calls`` alone counts env actions for a
    policy that returns a plan's actions one by one."""
    return float(record["policy_stats"].get("model_calls", record["policy_calls"]))


def subset_table(results: Sequence[EpisodeRecord], key: str = "subset") -> dict[str, dict[str, float]]:
    """EB's numbers per subset (or per another ``extras`` field, ``key``): success rate (%), mean steps,
    planner calls, invalid actions, output errors."""
    by_subset: dict[str, list[EpisodeRecord]] = defaultdict(list)
    for r in results:
        by_subset[r["extras"][key]].append(r)
    table = {}
    for subset, rows in by_subset.items():
        stats = [r["policy_stats"] for r in rows]
        table[subset] = {
            "episodes": len(rows),
            "success_rate": 100.0 * float(np.mean([r["success"] for r in rows])),
            "avg_steps": float(np.mean([r["steps"] for r in rows])),
            "avg_planner_calls": float(np.mean([planner_calls(r) for r in rows])),
            "avg_invalid_actions": float(np.mean([r["extras"]["num_invalid_actions"] for r in rows])),
            "planner_output_errors": float(np.sum([_planner_errors(s) for s in stats])),
        }
    return table


def _rows(table: dict[str, dict[str, float]], heading: str) -> list[str]:
    lines = [f"| {heading} | episodes | success % | avg. steps | avg. planner calls | avg. invalid actions | "
             "planner output errors |", "|---|---|---|---|---|---|---|"]
    for subset, row in table.items():
        lines.append(f"| {subset} | {row['episodes']} | {row['success_rate']:.1f} | {row['avg_steps']:.1f} | "
                     f"{row['avg_planner_calls']:.1f} | {row['avg_invalid_actions']:.1f} | "
                     f"{row['planner_output_errors']:.0f} |")
    return lines


def _markdown(title: str, label: str, table: dict[str, dict[str, float]], average: float | None, tally: UnitTally,
              families: dict[str, dict[str, float]] | None = None, family: str | None = None) -> str:
    lines = [f"## {title}: {label}", "", f"{tally.completed} of {tally.total} episodes completed; success is over "
             "completed episodes (errored ones are counted, never scored).", "", *_rows(table, "subset")]
    lines += [f"| **average over subsets** | | **{score_cell(average)}** | | | | |",
              f"| **episodes errored** | {tally.errored_cell()} | | | | | |"]
    blind, note = _blind_rows(family, list(table)) if family else ([], None)
    lines += [*blind, "", *([note, ""] if note else [])]
    if families:
        lines += [*_rows(families, "task family"), ""]
    lines.append("Planner calls are model calls (a policy without a model: its act calls). Planner output errors "
                 "are model answers that could not be parsed into an action (counted, and handled by the policy's "
                 "recorded fallback).")
    return "\n".join(lines)


def _blind_rows(family: str, subsets: list[str]) -> tuple[list[str], str | None]:
    """Random and the best constant action (``bench/results/blind_baselines.json``), averaged over the
    subsets this run has, as rows under the run's average."""
    from benchmarks.core.blind import blind_table_rows

    def cells(values: dict[str, Any]) -> list[str]:
        measured = [s for s in subsets if s in values.get("by_subset", {})]
        rate = f"{np.mean([values['by_subset'][s] for s in measured]):.1f}" if measured else "-"
        if measured and len(measured) < len(subsets):
            rate += f" ({', '.join(measured)} only)"
        return ["", rate, "", "", "", ""]

    return blind_table_rows(family, cells)


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
        return [WorkUnit(i, key, unit_seed(self.config.seed, i), {"episode": e})
                for i, (key, e) in enumerate(zip(ids, episodes))]

    def worker_factory(self) -> Any:
        return functools.partial(_build_worker, self.config, self.spec, self.run_path)

    def manifest_extra(self) -> dict[str, Any]:
        return {"policy": self.spec.manifest(),
                "env": {"id": self.family.env_id, "kwargs": _env_kwargs(self.config, self.family)},
                "subsets": self._subsets()}

    def progress_stats(self, records: Sequence[dict[str, Any]]) -> dict[str, Any]:
        ok = ok_results(records)
        return {"success%": f"{100 * np.mean([r['success'] for r in ok]):.1f}" if ok else "-"}

    def summarize(self, records: Sequence[dict[str, Any]], run_dir: RunDir, tally: UnitTally) -> Summary:
        results = ok_results(records)
        table = subset_table(results)
        average = float(np.mean([row["success_rate"] for row in table.values()])) if table else None
        families = subset_table(results, "family") if results and "family" in results[0]["extras"] else None
        data = {"benchmark": self.name, "policy": self.spec.label, "subsets": table,
                "average_success_rate": average, "episodes": len(results), "families": families}
        files = {"plots/success_by_subset.png": lambda p: bar_plot(
            p, list(table), [row["success_rate"] for row in table.values()], value_label="success rate (%)",
            title=f"{self.family.title}: {self.spec.label}")} if table else {}
        return Summary(data, _markdown(self.family.title, self.spec.label, table, average, tally, families,
                                       self.family.name), files)


def main(argv: Sequence[str] | None = None) -> Summary | int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] in (["-h"], ["--help"]):  # the options depend on the family: say which there are
        print(f"usage: python -m benchmarks.embodied {{{','.join(FAMILIES)}}} [options]\n\n"
              + "\n".join(f"  {name}: {family.title}" for name, family in FAMILIES.items())
              + "\n\nThe options: python -m benchmarks.embodied FAMILY --help")
        return 0
    if not argv or argv[0] not in FAMILIES:
        raise InputError(f"python -m benchmarks.embodied needs a family first: {' or '.join(FAMILIES)} "
                         f"(e.g. python -m benchmarks.embodied nav --help)")
    family = FAMILIES[argv[0]]
    config, spec = parse_benchmark_args(EmbodiedConfig, argv[1:], prog=f"python -m benchmarks.embodied {argv[0]}",
                                        policy_defaults=family.policy_defaults(), benchmark=f"embodied-{family.name}")
    config.family = family.name
    if config.env_kwargs.strip() not in ("", "{}"):  # (importing the env class may import its simulator)
        check_env_kwargs(family.env_id, json.loads(config.env_kwargs))
    preflight(spec, config, defaults=family.policy_defaults(),
              action_space=lambda: action_space(family.name, _env_kwargs(config, family)))
    bench = EmbodiedBenchmark(config, spec)
    return run_command(bench, bench.run_path)

