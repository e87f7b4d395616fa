"""LIBERO robustness: the expert's certification of every axis and level, what building a variant costs next
to its episode, and the answer-key plan loop's drop from the clean arm.

Certification runs the benchmark's certifying expert (``policies.experts.libero:LiberoExpert``) on a
camera-less env of each task, as ``benchmarks.libero --perturb`` does, once per variant, into the same
certificate file format (key: family, expert, episode, spec), so the benchmark finds them. The build cost
is the wall time of building a variant on the loaded initial state (read the scene, apply the axis, write
it back, render the frames again; median of ``--repeats``) and, for the image axes, of corrupting every
frame, against the clean expert episode with the cameras on. The
answer-key rows come from benchmark runs (``--answer-key-runs``: their ``summary.json``), made with

    python -m benchmarks.libero --policy mllm --model answer-key --suite S --tasks T --trials-per-task 1 \\
        --image-size 64 --perturb all:LEVEL

Resumable: certificates already in ``--certificates`` are not run again. Writes
``bench/results/robustness_libero.{json,md}``.

    nice python bench/robustness_libero.py --tasks libero_spatial:0,libero_object:0,libero_goal:0,libero_10:0
"""

from __future__ import annotations

import argparse
import datetime
import json
import platform
import time
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).parent / "results"
SETTINGS = {"init_state_index": 0, "num_steps_wait": 10}
RUN_SEED = 7  # the benchmark's default --seed: unit 0's seed is unit_seed(7, 0), its variants' spec seed too


def _seed() -> int:
    from benchmarks.core import unit_seed

    return unit_seed(RUN_SEED, 0)


def _episode(suite: str, task: int, max_steps: int) -> dict[str, Any]:
    """The unperturbed episode as the benchmark's certificate keys describe it."""
    return {"suite": suite, "task_index": task, **SETTINGS, "max_steps": max_steps}


class TaskRunner:
    """One task's camera-less env and bound expert, made on first use."""

    def __init__(self, suite: str, task: int) -> None:
        self.suite, self.task, self.env, self.expert = suite, task, None, None

    def episode(self, spec: Any) -> dict[str, Any]:
        """The expert's episode on state 0 (``spec``: a PerturbationSpec or None): success, steps, seconds."""
        from benchmarks.libero.benchmark import CERTIFYING_EXPERT
        from benchmarks.libero.episode import run_episode
        from envs.libero import make_libero_env, protocol
        from policies.entry_point import load_entry_point

        if self.env is None:
            self.env = make_libero_env(self.suite, self.task, cameras=False)
            self.expert = load_entry_point(CERTIFYING_EXPERT)()
            self.expert.bind(self.env)
        start = time.perf_counter()
        record = run_episode(
            self.env,
            self.expert,
            **SETTINGS,
            max_steps=protocol.MAX_STEPS[self.suite],
            seed=_seed(),
            perturbation=None if spec is None else spec.to_json(),
        )
        seconds = round(time.perf_counter() - start, 2)
        return {
            "certified": bool(record["success"]),
            "expert_steps": int(record["steps"]),
            "seconds": seconds,
        }

    def close(self) -> None:
        if self.env is not None:
            self.env.close()


def certify_task(suite: str, task: int, done: dict[str, Any], cache: Any, save: Any) -> None:
    """Every axis and level of one task (state 0) certified by the expert, and the clean episode, into
    ``done`` (``{"clean": row, axis: {level: row}}``) and the benchmark's certificate ``cache``."""
    from benchmarks.libero.benchmark import CERTIFYING_EXPERT
    from benchmarks.robustness import certificate_key
    from envs.libero import protocol
    from envs.libero.perturbations import AXES, FAMILY
    from envs.perturbation import LEVELS, PerturbationSpec

    runner = TaskRunner(suite, task)
    if "clean" not in done:
        done["clean"] = runner.episode(None)
        save()
    episode = _episode(suite, task, protocol.MAX_STEPS[suite])
    for axis in AXES:
        for level in LEVELS:
            if str(level) in done.get(axis, {}):
                continue
            spec = PerturbationSpec(axis, level, _seed())
            row = runner.episode(spec)
            done.setdefault(axis, {})[str(level)] = row
            cache.put(
                certificate_key(FAMILY, CERTIFYING_EXPERT, episode, spec),
                {
                    "certified": row["certified"],
                    "axis": axis,
                    "level": level,
                    "episode_id": f"{suite}/{task:02d}/00",
                    "expert_steps": row["expert_steps"],
                },
            )
            cache.save()
            save()
    runner.close()


def _build_seconds(env: Any, spec: Any) -> float:
    """Seconds to build ``spec``'s variant on the loaded clean state: read the scene, apply the axis, write
    it back and render the frames again (what a perturbed reset adds; channel axes build nothing;
    ``distractors`` builds a scene of its own: :func:`distractor_build_seconds`)."""
    from envs.libero.perturbations import AXES
    from envs.libero.scene_edit import describe_scene, write_scene

    env.reset(seed=_seed(), options=dict(SETTINGS))
    start, apply = time.perf_counter(), AXES[spec.axis].apply
    if apply is not None:
        scene = describe_scene(env.raw_env, env.instruction)
        if write_scene(env.raw_env, scene, apply(scene, spec)):
            env.raw_env.env._get_observations(force_update=True)
    return time.perf_counter() - start


def distractor_build_seconds(env: Any, spec: Any) -> tuple[float, float]:
    """(first, later): a distractors variant's reset minus the clean reset just before it (the settle
    steps in both), in an env that has not built the task's distractor scene yet (its compile included)
    and then again for another variant (the scene kept)."""
    from envs.perturbation import PerturbationSpec

    out = []
    for seed in (spec.seed, spec.seed + 1):
        start = time.perf_counter()
        env.reset(seed=_seed(), options=dict(SETTINGS))
        clean = time.perf_counter() - start
        start = time.perf_counter()
        variant = PerturbationSpec(spec.axis, spec.level, seed)
        env.reset(seed=_seed(), options={**SETTINGS, "perturbation": variant})
        out.append(time.perf_counter() - start - clean)
    return out[0], out[1]


def build_cost(suite: str, task: int, image_size: int, repeats: int) -> dict[str, Any]:
    """Per axis at level 5: the median seconds of building a variant (:func:`_build_seconds`) and of
    corrupting every frame (image axes), each over the clean expert episode with the cameras on."""
    import numpy as np

    from benchmarks.libero.benchmark import CERTIFYING_EXPERT
    from benchmarks.libero.episode import run_episode
    from envs.libero import make_libero_env, protocol
    from envs.libero.perturbations import AXES
    from envs.perturbation import Channels, PerturbationSpec
    from policies.entry_point import load_entry_point

    env = make_libero_env(suite, task, image_size=image_size)
    expert = load_entry_point(CERTIFYING_EXPERT)()
    expert.bind(env)
    start = time.perf_counter()
    record = run_episode(env, expert, **SETTINGS, max_steps=protocol.MAX_STEPS[suite], seed=_seed())
    episode_s, frames = time.perf_counter() - start, int(record["steps"]) + 1
    obs, _ = env.reset(seed=_seed(), options=dict(SETTINGS))
    axes: dict[str, Any] = {}
    for axis in (a for a in AXES if a != "distractors"):  # (its own measurement below)
        spec = PerturbationSpec(axis, 5, _seed())
        build = float(np.median([_build_seconds(env, spec) for _ in range(repeats)]))
        channels, t0 = Channels(spec, env.action_space), time.perf_counter()
        for _ in range(5):
            channels.images(obs)
        per_frame = (time.perf_counter() - t0) / 5
        axes[axis] = {
            "build_seconds_median": round(build, 4),
            "build_share_of_episode": round(build / episode_s, 4),
            "frame_corruption_share_of_episode": round(per_frame * frames / episode_s, 4),
        }
    env.close()
    cost = {"episode_seconds": round(episode_s, 2), "expert_steps": frames - 1, "image_size": image_size}
    cost["axes"] = axes
    add_distractor_cost(cost, suite, task, repeats)
    return cost


def add_distractor_cost(cost: dict[str, Any], suite: str, task: int, repeats: int) -> None:
    """The ``distractors`` row added to an earlier build-cost measurement of the task (same image size)."""
    import numpy as np

    from envs.libero import make_libero_env
    from envs.perturbation import PerturbationSpec

    spec, pairs = PerturbationSpec("distractors", 5, _seed()), []
    for _ in range(repeats):  # (a new env each time: the first variant compiles the task's scene)
        env = make_libero_env(suite, task, image_size=cost["image_size"])
        env.reset(seed=_seed(), options=dict(SETTINGS))
        pairs.append(distractor_build_seconds(env, spec))
        env.close()
    first, build = (float(np.median(v)) for v in zip(*pairs))
    cost["axes"]["distractors"] = {
        "build_seconds_median": round(build, 4),
        "build_share_of_episode": round(build / cost["episode_seconds"], 4),
        "frame_corruption_share_of_episode": 0.0,
        "first_build_seconds_median": round(first, 4),
        "first_build_share_of_episode": round(first / cost["episode_seconds"], 4),
    }


def answer_key(runs: list[str]) -> list[dict[str, Any]]:
    """The robustness tables of ``benchmarks.libero --perturb`` runs, from the records they hold so far."""
    from benchmarks.core import RunDir
    from benchmarks.core.episode_record import ok_results
    from benchmarks.robustness import robustness_table

    out = []
    for run in runs:
        records = RunDir(Path(run)).merged_records()
        manifest = json.loads((Path(run) / "manifest.json").read_text())
        results = ok_results(records)
        argv = manifest.get("command") or []
        command = " ".join(["python -m benchmarks.libero", *argv[2:]])  # (argv[:2]: python, __main__.py)
        out.append({"run": Path(run).name, "command": command, **robustness_table(results)})
    return out


def certification_rows(certification: dict[str, Any]) -> list[str]:
    """Per axis and level: certified / variants over the tasks; the clean episodes first."""
    from envs.libero.perturbations import AXES
    from envs.perturbation import LEVELS

    tasks = list(certification)
    clean = sum(certification[t]["clean"]["certified"] for t in tasks if "clean" in certification[t])
    lines = [
        f"Clean episodes the expert solved: {clean} / {len(tasks)}.",
        "",
        "| axis | " + " | ".join(f"level {lv}" for lv in LEVELS) + " | levels 1-3 |",
        "|---|" + "---:|" * (len(LEVELS) + 1),
    ]
    for axis in AXES:
        cells, low = [], [0, 0]
        for level in LEVELS:
            done = [
                certification[t][axis][str(level)]
                for t in tasks
                if str(level) in certification[t].get(axis, {})
            ]
            ok = sum(r["certified"] for r in done)
            cells.append(f"{ok} / {len(done)}")
            if level <= 3:
                low = [low[0] + ok, low[1] + len(done)]
        rate = f"{100 * low[0] / low[1]:.0f} %" if low[1] else "n/a"
        lines.append(f"| {axis} | " + " | ".join(cells) + f" | {rate} |")
    return lines


def markdown(result: dict[str, Any]) -> str:
    from benchmarks.robustness import robustness_markdown
    from benchmarks.robustness.blind import blind_column

    lines = [
        f"Tasks (state 0 each): {', '.join(result['tasks'])}; every axis at levels 1-5, spec seed = the "
        "benchmark's unit seed. Certification by the LIBERO expert on a camera-less env.",
        "",
        "### Certification",
        "",
        *certification_rows(result["certification"]),
        "",
        "### Variant build cost (level 5, cameras on)",
        "",
        "| task | axis | build s (median) | build share | frame corruption share |",
        "|---|---|---:|---:|---:|",
    ]
    for task, cost in result["build_cost"].items():
        for axis, c in cost["axes"].items():
            lines.append(
                f"| {task} | {axis} | {c['build_seconds_median']:.3f} | "
                f"{100 * c['build_share_of_episode']:.1f} % | {100 * c['frame_corruption_share_of_episode']:.1f} % |"
            )
    lines += [""] + [
        f"Clean expert episode with cameras ({c['image_size']} px), {task}: {c['episode_seconds']:.1f} s, "
        f"{c['expert_steps']} steps."
        for task, c in result["build_cost"].items()
    ]
    lines += [
        f"`distractors` on {task}: the first variant in an env also compiles the task's distractor scene, "
        f"{c['first_build_seconds_median']:.1f} s ({100 * c['first_build_share_of_episode']:.1f} % of the "
        "episode, once per task and env); the row above is every later variant."
        for task, cost in result["build_cost"].items()
        if (c := cost["axes"].get("distractors", {})).get("first_build_seconds_median") is not None
    ]
    for run in result["answer_key"]:
        lines += ["", f"### Answer key: {run['run']}", "", f"`{run['command']}`", ""]
        lines.append(robustness_markdown(run, *blind_column("libero")).replace("## Robustness\n", ""))
    return "\n".join(lines) + "\n"


def run(args: argparse.Namespace) -> dict[str, Any]:
    from benchmarks.robustness import CertificateCache

    path = Path(args.json)
    result = json.loads(path.read_text()) if path.exists() else {}
    result.update(
        title="LIBERO robustness: certification, build cost, answer-key drop",
        source="bench/robustness_libero.py",
        command="python bench/robustness_libero.py " + " ".join(args.argv),
        date=datetime.date.today().isoformat(),
        machine=f"{platform.machine()}, {args.machine}",
        tasks=args.tasks.split(","),
    )
    result.setdefault("certification", {})
    result.setdefault("build_cost", {})

    def save() -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(result, indent=1) + "\n")

    cache = CertificateCache(args.certificates)
    for item in result["tasks"]:
        suite, _, task = item.partition(":")
        if not args.skip_certification:
            certify_task(suite, int(task), result["certification"].setdefault(item, {}), cache, save)
        if args.build_cost and item not in result["build_cost"]:
            result["build_cost"][item] = build_cost(suite, int(task), args.image_size, args.repeats)
            save()
        elif args.build_cost and "distractors" not in result["build_cost"][item]["axes"]:
            add_distractor_cost(result["build_cost"][item], suite, int(task), args.repeats)
            save()
    if args.answer_key_runs or "answer_key" not in result:  # (kept from an earlier run otherwise)
        result["answer_key"] = answer_key(args.answer_key_runs)
    save()
    return result


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", default="libero_spatial:0,libero_object:0,libero_goal:0,libero_10:0")
    parser.add_argument("--certificates", default="outputs/libero/certificates.json")
    parser.add_argument("--json", default=str(RESULTS / "robustness_libero.json"), help="results (resumed)")
    parser.add_argument("--skip-certification", action="store_true")
    parser.add_argument("--build-cost", action="store_true", help="time variant builds (cameras on)")
    parser.add_argument("--image-size", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--answer-key-runs", nargs="*", default=[], help="benchmark run folders")
    parser.add_argument("--machine", default="2 shared cores", help="how to describe this machine")
    args = parser.parse_args(argv)
    args.argv = list(argv) if argv is not None else __import__("sys").argv[1:]
    return args


if __name__ == "__main__":
    arguments = parse()
    outcome = run(arguments)
    Path(arguments.json).with_suffix(".md").write_text(markdown(outcome))
    print(markdown(outcome))
