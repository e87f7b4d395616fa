"""CALVIN robustness: certification rate per axis and level, the answer-key plan loop's drop from the clean
arm, and what building (and certifying) a variant costs next to its chain.

The first two come from one run of the benchmark's own command (``benchmarks.calvin --policy mllm --model
answer-key --perturb all``: the scripted expert certifies each variant, then the answer key runs it, next
to the clean arm). The build cost times the reset that loads a level-5 variant plus the clean reset after
it (which puts CALVIN's world back), minus two clean resets, on the benchmark's env (both cameras),
against the clean arm's median chain time in that run; the certification cost is the expert's chain on
the camera-less copy. Resumable (``--resume`` on the same ``--output``). Writes
``bench/results/robustness_calvin.{json,md}``.

    nice python bench/robustness_calvin.py suite --policy expert --num-sequences 5 --workers 2
    nice python bench/robustness_calvin.py suite --policy answer-key --num-sequences 1 --perturb all
    nice python bench/robustness_calvin.py build-cost --build-chains 3
    nice python bench/robustness_calvin.py certify-cost --build-chains 2
    python bench/robustness_calvin.py report
"""

from __future__ import annotations

import argparse
import datetime
import json
import platform
import statistics
import time
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).parent / "results"


def _timed(fn: Any, *args: Any, **kwargs: Any) -> float:
    """CPU seconds of this process (PyBullet runs in it): on a shared machine wall time mostly measures the
    other jobs."""
    start = time.process_time()
    fn(*args, **kwargs)
    return time.process_time() - start


def build_cost(chains: int) -> dict[str, Any]:
    """Per axis (level 5): the median extra CPU seconds of its resets and of the expert's certification
    chain, and the clean expert chain's CPU seconds (camera-less: the cheapest chain there is)."""
    import gymnasium as gym

    import envs  # noqa: F401  (registers the ids)
    from benchmarks.calvin.chain import run_chain
    from envs.calvin import initial_env_state
    from envs.calvin.perturbations import AXES, variant_instruction
    from envs.calvin.sequences import get_sequences
    from envs.perturbation import PerturbationSpec
    from policies.experts.calvin import ScriptedExpert

    env = gym.make("SpatialArena/CalvinPlayTable-v0")
    bare = gym.make("SpatialArena/CalvinPlayTable-State-v0")
    expert = ScriptedExpert()
    expert.bind(bare)
    extra: dict[str, list[float]] = {axis: [] for axis in AXES}
    certify: dict[str, list[float]] = {axis: [] for axis in AXES}
    episode: list[float] = []
    for state, tasks in get_sequences(1000)[:chains]:
        robot_obs, scene_obs = initial_env_state(state, "D")
        clean = {"robot_obs": robot_obs, "scene_obs": scene_obs}
        originals = [variant_instruction(t, None) for t in tasks]
        episode.append(_timed(run_chain, bare, expert, robot_obs, scene_obs, tasks, originals))
        env.reset(options=clean)
        base = statistics.median(_timed(env.reset, options=clean) for _ in range(3))
        for axis in AXES:
            spec = PerturbationSpec(axis, 5, 0).to_json()
            variant = _timed(env.reset, options={**clean, "perturbation": spec})
            back = _timed(env.reset, options=clean)
            extra[axis].append(variant + back - 2 * base)
            words = [variant_instruction(t, spec) for t in tasks]
            certify[axis].append(
                _timed(run_chain, bare, expert, robot_obs, scene_obs, tasks, words, perturbation=spec)
            )
    env.close()
    bare.close()
    return {
        "clean_expert_chain_cpu_seconds_median": round(statistics.median(episode), 3),
        "axes": {
            axis: {
                "extra_build_seconds_median": round(statistics.median(extra[axis]), 4),
                "certification_seconds_median": round(statistics.median(certify[axis]), 3),
            }
            for axis in AXES
        },
    }


def certification_cost(chains: int) -> dict[str, Any]:
    """CPU seconds the scripted expert spends certifying every axis at every level of the first ``chains``
    evaluation chains, through the benchmark's own certification flow (``run_certified``, a fresh cache
    each time): with the clean chain's certificate standing for the axes CALVIN declares ``same_physics``,
    and with every variant certified on its own (the policy's runs are left out: they are the same)."""
    import tempfile

    import gymnasium as gym

    import envs  # noqa: F401  (registers the ids)
    from benchmarks.calvin.protocol import evaluation_chains
    from benchmarks.robustness import CertificateCache
    from envs.calvin.perturbations import AXES, FAMILY
    from envs.perturbation import LEVELS, same_physics_axes
    from policies.experts.calvin import ScriptedExpert

    bare = gym.make("SpatialArena/CalvinPlayTable-State-v0")
    expert = ScriptedExpert()
    expert.bind(bare)
    result: dict[str, Any] = {"same_physics_axes": sorted(same_physics_axes(FAMILY))}
    with tempfile.TemporaryDirectory() as folder:
        for label, axes_family in (("reused", FAMILY), ("each_variant", None)):
            cache, tally = CertificateCache(Path(folder) / f"{label}.json"), {"runs": 0, "cpu": 0.0}
            certified = 0
            for i, (state, tasks) in enumerate(evaluation_chains(chains)):
                outcomes = _certify_chain(bare, expert, cache, i, state, tasks, axes_family, tally)
                certified += sum(outcomes.values())
            result[label] = {
                "variants": chains * len(AXES) * len(LEVELS),
                "expert_runs": tally["runs"],
                "cpu_seconds": round(tally["cpu"], 1),
                "certified": certified,
            }
    bare.close()
    return result


def certify_chains(args: argparse.Namespace) -> dict[str, Any]:
    """Certify every axis and level of the first ``--num-sequences`` evaluation chains into the certificate
    cache a ``--perturb`` run reads (``--certificates``; the benchmark's keys and flow, ``run_certified``):
    a later run over these chains certifies nothing again. Saved after each chain, so an interrupted
    sweep resumes; returns the certification rate per axis and level (95 % Wilson intervals)."""
    import gymnasium as gym

    import envs  # noqa: F401  (registers the ids)
    from benchmarks.calvin.protocol import evaluation_chains
    from benchmarks.robustness import CertificateCache
    from envs.calvin.perturbations import AXES, FAMILY
    from envs.perturbation import LEVELS
    from policies.experts.calvin import ScriptedExpert

    bare = gym.make("SpatialArena/CalvinPlayTable-State-v0")
    expert = ScriptedExpert()
    expert.bind(bare)
    cache, tally = CertificateCache(args.certificates), {"runs": 0, "cpu": 0.0}
    outcomes: dict[tuple[str, int], list[bool]] = {(axis, level): [] for axis in AXES for level in LEVELS}
    for i, (state, tasks) in enumerate(evaluation_chains(args.num_sequences)):
        for variant, certified in _certify_chain(bare, expert, cache, i, state, tasks, FAMILY, tally).items():
            outcomes[variant].append(certified)
        cache.save()
        print(
            f"[certify] chain {i}: {tally['runs']} expert chains so far, {tally['cpu']:.0f} CPU s", flush=True
        )
    bare.close()
    return {
        "chains": args.num_sequences,
        "certificates": str(args.certificates),
        "expert_runs_this_time": tally["runs"],
        "cpu_seconds_this_time": round(tally["cpu"], 1),
        "rates": {axis: {str(level): _rate(outcomes[axis, level]) for level in LEVELS} for axis in AXES},
    }


def _certify_chain(
    bare: Any,
    expert: Any,
    cache: Any,
    index: int,
    state: Any,
    tasks: Any,
    axes_family: str | None,
    tally: dict[str, Any],
) -> dict[tuple[str, int], bool]:
    """Every axis and level of evaluation chain ``index`` certified through the benchmark's own flow
    (``run_certified``, the benchmark's keys and spec seeds; ``axes_family`` ``None``: no certificate
    shared by same_physics axes): ``{(axis, level): certified}``."""
    from benchmarks.calvin.config import POLICY_DEFAULTS
    from benchmarks.core import WorkUnit, unit_seed
    from benchmarks.robustness import run_certified
    from envs.calvin.perturbations import AXES, FAMILY
    from envs.perturbation import LEVELS

    seed = unit_seed(0, index)
    run_expert = _timed_expert(bare, expert, state, tasks, seed, tally)
    outcomes = {}
    for axis in AXES:
        for level in LEVELS:
            spec = {"axis": axis, "level": level, "seed": seed}
            record = run_certified(
                WorkUnit(index, f"chain-{index:04d}~{axis}:{level}", seed, {"perturbation": spec}),
                cache,
                family=FAMILY,
                expert=POLICY_DEFAULTS["expert"]["expert"],
                episode={"initial_state": state, "tasks": list(tasks), "scene": "D"},
                episode_id=f"chain-{index:04d}",
                run_policy=lambda _: {"success": True, "steps": 0, "extras": {}},
                run_expert=run_expert,
                axes_family=axes_family,
            )
            outcomes[axis, level] = bool(record["extras"]["certified"])
    return outcomes


def _rate(certified: list[bool]) -> dict[str, Any]:
    from benchmarks.stats.intervals import wilson

    rate = wilson(sum(certified), len(certified)).scaled(100)
    return {
        "certified": sum(certified),
        "variants": len(certified),
        "rate": rate.estimate,
        "ci": rate.bounds(1),
    }


def _timed_expert(env: Any, expert: Any, state: Any, tasks: Any, seed: int, tally: dict[str, Any]) -> Any:
    """The certification run of one chain (``run_expert`` of the runner), its CPU seconds added to ``tally``."""
    from benchmarks.calvin.chain import run_chain
    from envs.calvin import initial_env_state
    from envs.calvin.perturbations import variant_instruction

    robot_obs, scene_obs = initial_env_state(state, "D")

    def run_expert(spec: dict[str, Any] | None) -> Any:
        words = [variant_instruction(t, spec) for t in tasks]
        start = time.process_time()
        record = run_chain(env, expert, robot_obs, scene_obs, tasks, words, seed=seed, perturbation=spec)
        tally["cpu"] += time.process_time() - start
        tally["runs"] += 1
        return record

    return run_expert


#: The two runs of the benchmark's command: the scripted expert as the policy (cheap, camera-less: the
#: certification rates over more chains; its drop checks that a certified variant replays the same on the
#: policy's env) and the answer-key plan loop (with the static camera it prompts with).
POLICIES = {
    "expert": (["--policy", "expert", "--cameras", "none"], "expert"),
    "answer-key": (["--policy", "mllm", "--model", "answer-key", "--cameras", "static"], "mllm-answer-key"),
}


def suite(args: argparse.Namespace) -> dict[str, Any]:
    from benchmarks.calvin import main
    from benchmarks.core import RunDir

    flags, label = POLICIES[args.policy]
    argv = [*flags, "--perturb", args.perturb, "--no-progress", "--num-sequences", str(args.num_sequences)]
    argv += ["--output", args.output, "--workers", str(args.workers)] + (["--resume"] if args.resume else [])
    start = time.perf_counter()
    summary = main(argv)
    seconds = round(time.perf_counter() - start, 1)
    records = RunDir(Path(args.output) / "calvin" / label).merged_records()
    clean = [r for r in records if "~" not in r["key"] and r["status"] == "ok"]
    return {
        "policy": args.policy,
        "command": " ".join(["spatial-arena calvin", *flags, "--perturb", args.perturb]),
        "num_sequences": args.num_sequences,
        "seconds": seconds,
        "clean_chain_seconds_median": round(statistics.median(r["timing"]["episode_s"] for r in clean), 2),
        "clean_avg_seq_len": summary.data["avg_seq_len"],
        **summary.data["robustness"],
    }


def collect(args: argparse.Namespace) -> dict[str, Any]:
    """The suite's part from a run folder the benchmark's own command wrote (a finished run, or the units an
    interrupted one finished), scored by the same report the benchmark's summary uses; the command is the
    run's own, read from its manifest."""
    from benchmarks.calvin.report import chain_metrics
    from benchmarks.core import RunDir
    from benchmarks.core.episode_record import ok_results
    from benchmarks.robustness import robustness_table

    flags, label = POLICIES[args.policy]
    run = RunDir(Path(args.output) / "calvin" / (args.run_name or label))
    records = run.merged_records()
    results = ok_results(records)
    clean = [r for r in results if r["extras"].get("perturbation") is None]
    timing = {r["key"]: r["timing"]["episode_s"] for r in records if r["status"] == "ok"}
    clean_s = [s for key, s in timing.items() if "~" not in key]
    finished = run.summary_json.is_file()
    return {
        "policy": args.policy,
        "command": _run_command(run) or " ".join(["spatial-arena calvin", *flags, "--perturb", args.perturb]),
        "num_sequences": len(clean),
        "seconds": None,
        "chain_seconds_total": round(sum(timing.values()), 1),
        "units_finished": f"{len(results)} of {_planned_units(run) or len(records)}"
        + (" (the run finished)" if finished else " (interrupted: the units that finished are scored)"),
        "clean_chain_seconds_median": round(statistics.median(clean_s), 2),
        "clean_avg_seq_len": chain_metrics([r["extras"]["num_completed"] for r in clean], 5)["avg_seq_len"],
        **robustness_table(results),
    }


def _planned_units(run: Any) -> int | None:
    """How many units the run's configuration asks for (clean chains and their variants), from its manifest."""
    from envs.calvin.perturbations import FAMILY
    from envs.perturbation import parse_perturb

    try:
        config = json.loads(run.manifest.read_text())["config"]
    except (OSError, ValueError, KeyError):
        return None
    variants = (
        sum(len(levels) for _, levels in parse_perturb(config["perturb"], FAMILY)) if config["perturb"] else 0
    )
    return int(config["num_sequences"]) * (1 + variants)


def _run_command(run: Any) -> str | None:
    """The run's command line as a user types it (its entry point's arguments, local paths left out);
    ``None`` for a run started from another script (its manifest holds that script's command line)."""
    try:
        argv = json.loads(run.manifest.read_text())["command"]
    except (OSError, ValueError, KeyError):
        return None
    if len(argv) < 2 or not argv[1].endswith(str(Path("calvin", "__main__.py"))):
        return None
    # after ``python .../benchmarks/calvin/__main__.py``; how the run was driven, not what it measured, left out
    args = [a for a in argv[2:] if a not in ("--no-progress", "--resume")]
    if "--output" in args:
        at = args.index("--output")
        del args[at : at + 2]
    return " ".join(["spatial-arena calvin", *args])


def markdown(result: dict[str, Any]) -> str:
    from benchmarks.robustness import robustness_markdown
    from benchmarks.robustness.blind import blind_column

    lines = [
        "CALVIN's evaluation chains on the built-in table (scene D), every axis at the levels named; the "
        "variant seed is the chain's. Certification: the scripted expert completes the whole 5-subtask "
        "chain on the camera-less table. Machine: " + result["machine"] + ".",
        "",
        *([result["note"], ""] if result.get("note") else []),
    ]
    for name, run in result["suites"].items():
        lines += [
            f"### `{name}`: {run['num_sequences']} chains, `{run['command']}`",
            "",
            (
                f"Wall time {run['seconds']:.0f} s"
                if run["seconds"] is not None
                else f"Chains (policy runs) took {run['chain_seconds_total']:.0f} s in all; units scored: "
                f"{run['units_finished']}"
            )
            + f"; clean chain median {run['clean_chain_seconds_median']:.1f} s.",
            "",
            robustness_markdown(run, *blind_column("calvin")).replace("## Robustness\n\n", ""),
        ]
    cost = result["build_cost"]
    episode = cost["clean_expert_chain_cpu_seconds_median"]
    lines += [
        "### Variant build and certification cost (level 5)",
        "",
        "CPU seconds of the process (on this shared machine wall time mostly measures the other jobs). "
        f"Against the clean chain of the scripted expert on the camera-less table (median {episode:.2f} "
        "CPU s; the cheapest chain there is: a policy's chain with cameras costs more, e.g. the answer-key "
        f"chain above, {result['suites']['answer-key']['clean_chain_seconds_median']:.0f} s wall at this "
        "load). Build: the variant's reset plus the clean reset after it (which puts CALVIN's world back), "
        "minus two clean resets, both cameras rendered; certification: the expert's chain of the variant, "
        f"once per variant (cached). Timed on {result['build_chains']} chains.",
        "",
        "| axis | extra build CPU s (median) | share of the chain | certification CPU s (median) |",
        "|---|---:|---:|---:|",
        *[
            f"| {axis} | {c['extra_build_seconds_median']:.4f} | "
            f"{100 * max(0.0, c['extra_build_seconds_median']) / episode:.1f} % | "
            f"{c['certification_seconds_median']:.2f} |"
            for axis, c in cost["axes"].items()
        ],
        "",
    ]
    return "\n".join(lines + _reuse_lines(result) + _sweep_lines(result))


def _reuse_lines(result: dict[str, Any]) -> list[str]:
    """The certification cost with and without the clean certificate standing for same_physics axes."""
    cost = result.get("certification_cost")
    if not cost:
        return []
    reused, each = cost["reused"], cost["each_variant"]
    saved = each["cpu_seconds"] - reused["cpu_seconds"]
    return [
        "### Certification cost: the clean chain's certificate for same_physics axes",
        "",
        f"Every axis at every level on the first {cost['chains']} chains ({each['variants']} variants), "
        "certified through the benchmark's flow (`run_certified`, a fresh cache each), CPU seconds of the "
        "expert's chains on the camera-less table. Axes declared same_physics: "
        + ", ".join(cost["same_physics_axes"])
        + ".",
        "",
        "| certification | expert chains run | CPU s | variants certified |",
        "|---|---:|---:|---:|",
        f"| each variant on its own | {each['expert_runs']} | {each['cpu_seconds']:.1f} | {each['certified']} |",
        f"| clean certificate reused | {reused['expert_runs']} | {reused['cpu_seconds']:.1f} | "
        f"{reused['certified']} |",
        "",
        f"Saved: {saved:.1f} CPU s ({100 * saved / each['cpu_seconds']:.0f} %) on {cost['chains']} chains.",
        "",
    ]


def _sweep_lines(result: dict[str, Any]) -> list[str]:
    """The certification rate per axis and level over the sweep's chains (the ``certify`` step)."""
    sweep = result.get("certification_sweep")
    if not sweep:
        return []
    levels = list(next(iter(sweep["rates"].values())))
    lines = [
        f"### Certification over the first {sweep['chains']} evaluation chains",
        "",
        "Every axis at every level of each chain, certified by the scripted expert through the benchmark's "
        "flow into the certificate cache a `--perturb` run reads, so such a run over these chains certifies "
        "nothing again (`python bench/robustness_calvin.py certify --num-sequences "
        f"{sweep['chains']}`). Certified % [95 % Wilson interval] (certified/variants):",
        "",
        "| axis | " + " | ".join(f"level {level}" for level in levels) + " |",
        "|---|" + "---|" * len(levels),
    ]
    for axis, cells in sweep["rates"].items():
        shown = [
            f"{c['rate']:.0f} [{c['ci'][0]:.0f}, {c['ci'][1]:.0f}] ({c['certified']}/{c['variants']})"
            for c in cells.values()
        ]
        lines.append(f"| {axis} | " + " | ".join(shown) + " |")
    return [*lines, ""]


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "step",
        choices=["suite", "collect", "certify", "build-cost", "certify-cost", "report"],
        help="what to run (then report)",
    )
    parser.add_argument("--policy", choices=list(POLICIES), default="answer-key")
    parser.add_argument("--perturb", default="all", help="the suite's --perturb")
    parser.add_argument("--num-sequences", type=int, default=20, help="evaluation chains in the suite")
    parser.add_argument(
        "--suite-name", default=None, help="the suite's name in the results (default: --policy)"
    )
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument(
        "--build-chains", type=int, default=3, help="chains the build and certification costs are timed on"
    )
    parser.add_argument("--output", default="outputs/bench_robustness_calvin", help="the run folder root")
    parser.add_argument(
        "--run-name", default=None, help="collect: the run folder's name (default: the policy's label)"
    )
    parser.add_argument("--resume", action="store_true", help="continue an interrupted run in --output")
    parser.add_argument(
        "--certificates",
        default="outputs/bench_robustness_calvin/calvin/certificates.json",
        help="certify: the certificate cache to fill (a --perturb run's --certificates)",
    )
    parser.add_argument("--machine", default="2 shared cores", help="how to describe this machine")
    parser.add_argument("--note", default=None, help="report: a paragraph saying what was run and why")
    return parser.parse_args(argv)


def main(args: argparse.Namespace) -> None:
    """Each step adds its part to ``robustness_calvin.json`` (resumable, one part at a time); ``report``
    writes the Markdown from it."""
    part: dict[str, Any] = {}
    if args.step in ("suite", "collect"):
        part["suites"] = {args.suite_name or args.policy: (suite if args.step == "suite" else collect)(args)}
    elif args.step == "certify":
        part = {"certification_sweep": certify_chains(args)}
    elif args.step == "build-cost":
        part = {"build_chains": args.build_chains, "build_cost": build_cost(args.build_chains)}
    elif args.step == "certify-cost":
        part = {"certification_cost": {"chains": args.build_chains, **certification_cost(args.build_chains)}}
    path = RESULTS / "robustness_calvin.json"  # (read after the step: other steps may have run meanwhile)
    result = json.loads(path.read_text()) if path.exists() else {"suites": {}}
    result["suites"].update(part.pop("suites", {}))
    if args.note:
        result["note"] = args.note
    result.update(part)
    result.update(
        title="CALVIN robustness: certification, answer-key drop, build cost",
        source="bench/robustness_calvin.py",
        date=datetime.date.today().isoformat(),
        machine=f"{platform.machine()}, {args.machine}",
    )
    RESULTS.mkdir(exist_ok=True)
    path.write_text(json.dumps(result, indent=1) + "\n")
    if args.step == "report":
        (RESULTS / "robustness_calvin.md").write_text(markdown(result))
        print(markdown(result))


if __name__ == "__main__":
    main(parse())
