"""``python -m vla.demos`` (``spatial-arena demos``): expert demonstrations, by ``--env``.

``--env calvin`` (the default) records the play-table in CALVIN's dataset layout, as described below;
with ``--scenes`` or ``--frames`` it records continuous play instead (:mod:`vla.calvin_play`);
``--env libero`` records LIBERO tasks in LIBERO's HDF5 layout and as a LeRobotDataset v3
(:mod:`vla.libero_demos`, ``spatial-arena demos --env libero --help``).

For each requested task the privileged scripted expert (:class:`policies.experts.calvin.ScriptedExpert`) is run
from varied initial states and every step of the task is recorded: the observation before the step
(``rgb_static``, ``rgb_gripper``, ``robot_obs``, ``scene_obs``), the relative action actually sent
(``rel_actions``, clipped to [-1, 1] with the gripper exactly -1 or 1, as CALVIN's dataset stores it) and
the absolute TCP target it set (``actions``). Only successful demonstrations are written, through
:class:`vla.data.CalvinWriter`, as ``OUT/<split>/episode_XXXXXXX.npz`` + ``ep_start_end_ids.npy`` +
``lang_annotations/auto_lang_ann.npy`` (one window per demonstration, with the task's evaluation
instruction; ``language.emb`` and, for ``--split validation``, ``embeddings.npy`` with ``--lang-encoder``,
see :mod:`vla.data.calvin_embed`). ``OUT/demos_<split>.json`` records every attempt, kept or not, and the kept fraction.

Initial states are drawn as CALVIN's evaluation draws them: a symbolic state (LED, lightbulb, door,
drawer, block placements) among the 192 evaluation states, turned into a real scene by the protocol's
``initial_env_state``, except that the two table spots' order and the block yaws (pi/2 +- pi/8) come from
the demonstration's own seed instead of the state's hash, so scenes do not repeat every 192 draws. Only
states from which the task is valid under CALVIN's symbolic task model are used; a task that is never
valid from an initial state (``place_in_drawer``, ``stack_block``, ...) gets the shortest valid chain of
tasks before it, run by the expert unrecorded. The robot's start joints are the neutral pose plus
Gaussian noise (``--joint-noise`` radians), so a policy cannot succeed without looking.

After the oracle reports success the expert goes on for ``--tail-steps`` more steps (default: a chunk of
10 minus one), so every frame up to the successful one starts a full 10-action chunk.

Everything is a function of ``--seed``: attempt ``i`` of task ``k`` draws from its own generator seeded
with ``(seed, k, i)``, and the expert and simulator are deterministic.
"""

from __future__ import annotations

import itertools
import json
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from policies.config_cli import InputError, arg, parse_config, run_cli
from vla.calvin_recording import CAMERA_KEYS, LANG_ENCODER_HELP, Episode, perturbed_robot_obs, record_task

if TYPE_CHECKING:
    import gymnasium as gym

    from policies.experts.calvin import ScriptedExpert
    from vla.data import CalvinWriter

ENVS = ("calvin", "libero")
DEFAULT_JOINT_NOISE = 0.1  # radians (std per joint): moves the start TCP by several centimetres
MAX_PREFIX = 2  # setup tasks before the recorded one (lift + stack before unstack_block)


@dataclass
class DemoConfig:
    """Record scripted-expert demonstrations on the play-table as a CALVIN-format dataset (--env calvin, the
    default; continuous play over scenes instead: spatial-arena demos --env calvin --scenes A,B,C --help;
    for LIBERO: spatial-arena demos --env libero --help)."""

    task: str = arg(
        "open_drawer", "CALVIN task(s) to demonstrate, comma-separated (e.g. open_drawer,move_slider_left)"
    )
    episodes: int = arg(10, "successful demonstrations to keep per task", minimum=1)
    out: str = arg("", "dataset root; frames go to OUT/<split>/ (must not hold frames yet)")
    split: str = arg("training", "split subdirectory (training or validation, as CALVIN's layout)")
    seed: int = arg(0, "seed of the initial states (everything else is deterministic)")
    cameras: str = arg("static,gripper", "cameras to render and store: static, gripper or static,gripper")
    joint_noise: float = arg(
        DEFAULT_JOINT_NOISE, "std (radians) of the Gaussian noise added to each start joint", minimum=0
    )
    ep_len: int = arg(360, "step budget of the expert per demonstration (CALVIN's subtask budget)", minimum=1)
    tail_steps: int = arg(
        9, "steps recorded after success, so the last frames still start full chunks", minimum=0
    )
    max_attempts: int | None = arg(
        None, "attempts per task before giving up (default: 3 x --episodes)", minimum=1
    )
    lang_encoder: str = arg("", LANG_ENCODER_HELP)

    def check(self) -> None:
        if not self.out:
            raise ValueError("--out DIR is required (the dataset root to write)")
        if self.episodes < 1 or self.ep_len < 1 or self.tail_steps < 0 or self.joint_noise < 0:
            raise ValueError(
                f"--episodes and --ep-len must be >= 1, --tail-steps and --joint-noise >= 0; got "
                f"{self.episodes}, {self.ep_len}, {self.tail_steps}, {self.joint_noise}"
            )
        task_list(self.task)
        camera_list(self.cameras)
        if self.lang_encoder:
            from vla.data.calvin_embed import encoder_layout

            encoder_layout(self.lang_encoder)


def task_list(text: str) -> list[str]:
    """The task names in ``text`` (comma-separated); a clear error names an unknown one."""
    from envs.calvin.instructions import instruction_for

    tasks = [t.strip() for t in text.split(",") if t.strip()]
    if not tasks:
        raise ValueError("--task needs at least one CALVIN task name")
    for task in tasks:
        instruction_for(task)  # raises with the closest names
    if len(set(tasks)) != len(tasks):
        raise ValueError(f"--task lists a task twice: {text!r}")
    return tasks


def camera_list(text: str) -> tuple[str, ...]:
    names = tuple(c.strip() for c in text.split(",") if c.strip())
    bad = [c for c in names if c not in CAMERA_KEYS]
    if bad or not names:
        raise ValueError(f"--cameras must be static, gripper or static,gripper; got {text!r}")
    return names


# ------------------------------------------------------------------------------------------ starts


@dataclass
class Start:
    """One initial state: the symbolic state, the real reset vectors and the unrecorded setup tasks."""

    symbolic: dict[str, Any]
    robot_obs: np.ndarray
    scene_obs: np.ndarray
    prefix: list[str]


@cache
def _setups(task: str) -> tuple[tuple[int, tuple[str, ...]], ...]:
    """(state index, shortest setup prefix) pairs from which ``prefix + [task]`` is a valid CALVIN chain."""
    from envs.calvin.instructions import CALVIN_TASKS
    from envs.calvin.sequences import is_valid_chain, symbolic_initial_states

    states = symbolic_initial_states()
    for length in range(MAX_PREFIX + 1):
        found = [
            (i, prefix)
            for i, state in enumerate(states)
            for prefix in itertools.product(CALVIN_TASKS, repeat=length)
            if is_valid_chain(state, [*prefix, task])
        ]
        if found:
            return tuple(found)
    raise ValueError(f"no CALVIN initial state reaches {task!r} within {MAX_PREFIX} setup tasks")


def sample_start(task: str, rng: np.random.Generator, joint_noise: float = DEFAULT_JOINT_NOISE) -> Start:
    """A varied initial state for ``task`` (see the module docstring), drawn from ``rng``."""
    from envs.calvin.sequences import initial_env_state, symbolic_initial_states

    options = _setups(task)
    index, prefix = options[int(rng.integers(len(options)))]
    symbolic = symbolic_initial_states()[index]
    robot_obs, scene_obs = initial_env_state(symbolic)
    _redraw_table_spots_and_yaws(scene_obs, rng)
    return Start(symbolic, perturbed_robot_obs(robot_obs, rng, joint_noise), scene_obs, list(prefix))


def _redraw_table_spots_and_yaws(scene_obs: np.ndarray, rng: np.random.Generator) -> None:
    """The protocol's own random draws (table-spot order, yaws), taken from ``rng`` instead of the hash."""
    from envs.calvin.sequences import BLOCK_TABLE_SPOTS, BLOCK_YAW_RANGE

    swap = rng.random() < 0.5
    spots = np.asarray(BLOCK_TABLE_SPOTS)
    for start in (6, 12, 18):  # red, blue, pink: xyz at [start:start+3], yaw at start+5
        xyz = scene_obs[start : start + 3]
        at = [k for k in range(2) if np.allclose(xyz, spots[k])]
        if swap and at:
            scene_obs[start : start + 3] = spots[1 - at[0]]
        scene_obs[start + 5] = rng.uniform(*BLOCK_YAW_RANGE)


def attempt_rng(seed: int, task_index: int, attempt: int) -> np.random.Generator:
    return np.random.default_rng([seed, task_index, attempt])


def run_attempt(env: gym.Env, expert: ScriptedExpert, task: str, start: Start, config: DemoConfig) -> Episode:
    """Reset to ``start``, run the setup tasks unrecorded, then record ``task``."""
    from envs.calvin.instructions import instruction_for

    obs, _ = env.reset(seed=0, options={"robot_obs": start.robot_obs, "scene_obs": start.scene_obs})
    for setup in start.prefix:  # as in a CALVIN chain: each subtask ends the moment the oracle fires
        done = record_task(env, expert, setup, instruction_for(setup), obs, config.ep_len, tail_steps=0)
        if not done.success:
            return Episode([], None, prefix_ok=False)
        obs = done.last_obs
    return record_task(env, expert, task, instruction_for(task), obs, config.ep_len, config.tail_steps)


def attempts(
    env: gym.Env, expert: ScriptedExpert, task: str, task_index: int, config: DemoConfig
) -> Iterator[tuple[int, Start, Episode]]:
    """Attempts at ``task`` until ``config.episodes`` succeed or the attempt budget is spent."""
    budget = config.max_attempts or 3 * config.episodes
    kept = 0
    for attempt in range(budget):
        if kept >= config.episodes:
            return
        start = sample_start(task, attempt_rng(config.seed, task_index, attempt), config.joint_noise)
        episode = run_attempt(env, expert, task, start, config)
        kept += int(episode.success)
        yield attempt, start, episode


# -------------------------------------------------------------------------------------------- writing


@dataclass
class TaskReport:
    task: str
    instruction: str
    attempts: int = 0
    kept: int = 0
    setup_failed: int = 0
    frames: int = 0
    success_steps: list[int] = field(default_factory=list)
    episodes: list[dict[str, Any]] = field(default_factory=list)

    @property
    def kept_fraction(self) -> float:
        return self.kept / self.attempts if self.attempts else 0.0


def generate(config: DemoConfig) -> dict[str, Any]:
    """Write the dataset ``config`` describes; returns the report also saved as ``demos_<split>.json``."""
    from envs.calvin.env import PlayTableEnv
    from envs.calvin.instructions import instruction_for
    from policies.experts.calvin import ScriptedExpert
    from vla.data import CalvinWriter
    from vla.data.calvin_embed import SentenceEncoder, write_embeddings

    config.check()
    cameras = camera_list(config.cameras)
    root = Path(config.out)
    encoder = SentenceEncoder(config.lang_encoder) if config.lang_encoder else None  # fails before recording
    writer = CalvinWriter(root / config.split, cameras=tuple(CAMERA_KEYS[c] for c in cameras))
    env = PlayTableEnv(cameras=cameras)
    expert = ScriptedExpert()
    expert.bind(env)
    began, reports = time.perf_counter(), []
    try:
        for index, task in enumerate(task_list(config.task)):
            report = TaskReport(task, instruction_for(task))
            for attempt, start, episode in attempts(env, expert, task, index, config):
                _account(report, writer, attempt, start, episode)
            reports.append(report)
            _warn_if_short(report, config.episodes)
    finally:
        env.close()
    writer.close()
    if encoder is not None:
        write_embeddings(root / config.split, encoder)
    summary = _summary(config, reports, time.perf_counter() - began)
    (root / f"demos_{config.split}.json").write_text(json.dumps(summary, indent=1) + "\n")
    return summary


def _account(report: TaskReport, writer: CalvinWriter, attempt: int, start: Start, episode: Episode) -> None:
    report.attempts += 1
    report.setup_failed += int(not episode.prefix_ok)
    entry = {
        "attempt": attempt,
        "symbolic_state": start.symbolic,
        "setup": start.prefix,
        "reset_robot_obs": [float(v) for v in start.robot_obs],
        "reset_scene_obs": [float(v) for v in start.scene_obs],
        "success": episode.success,
        "steps": len(episode.frames),
        "success_step": episode.success_step,
    }
    if episode.success and episode.success_step is not None:  # success implies the step
        first, last = writer.write_episode(episode.frames, report.task, report.instruction)
        entry["frames"] = [first, last]
        report.kept += 1
        report.frames += last - first + 1
        report.success_steps.append(int(episode.success_step) + 1)
    report.episodes.append(entry)


def _warn_if_short(report: TaskReport, wanted: int) -> None:
    if report.kept < wanted:
        print(
            f"[vla.demos] warning: {report.task}: only {report.kept} of {wanted} demonstrations succeeded in "
            f"{report.attempts} attempts (raise --max-attempts)",
            flush=True,
        )


def _summary(config: DemoConfig, reports: Sequence[TaskReport], seconds: float) -> dict[str, Any]:
    tasks = {}
    for r in reports:
        row = asdict(r)
        row["kept_fraction"] = r.kept_fraction
        row["median_success_steps"] = float(np.median(r.success_steps)) if r.success_steps else None
        tasks[r.task] = row
    attempts_total = sum(r.attempts for r in reports)
    kept_total = sum(r.kept for r in reports)
    return {
        "config": asdict(config),
        "attempts": attempts_total,
        "kept": kept_total,
        "kept_fraction": kept_total / attempts_total if attempts_total else 0.0,
        "frames": sum(r.frames for r in reports),
        "seconds": round(seconds, 1),
        "tasks": tasks,
    }


def split_env(argv: Sequence[str]) -> tuple[str, list[str]]:
    """``--env NAME`` (default calvin) and the remaining arguments, which belong to that env's command."""
    env, rest, args = "calvin", [], list(argv)
    while args:
        item = args.pop(0)
        if item == "--env":
            if not args:
                raise InputError(f"--env needs a value: {' or '.join(ENVS)}")
            env = args.pop(0)
        elif item.startswith("--env="):
            env = item.partition("=")[2]
        else:
            rest.append(item)
    if env not in ENVS:
        raise InputError(f"--env {env!r}: no demonstrations for it; choose {' or '.join(ENVS)}")
    return env, rest


def main(argv: list[str] | None = None) -> dict[str, Any]:
    env, args = split_env(sys.argv[1:] if argv is None else argv)
    if env == "libero":
        from vla import libero_demos

        return libero_demos.main(args)
    from vla import calvin_play

    if calvin_play.wants_play(args):
        return calvin_play.main(args)
    summary = generate(parse_config(DemoConfig, args, prog="python -m vla.demos"))
    for task, row in summary["tasks"].items():
        print(
            f"[vla.demos] {task}: kept {row['kept']}/{row['attempts']} ({100 * row['kept_fraction']:.0f}%), "
            f"{row['frames']} frames, median {row['median_success_steps']} steps to success",
            flush=True,
        )
    print(
        f"[vla.demos] {summary['kept']} demonstrations, {summary['frames']} frames in {summary['seconds']} s "
        f"-> {Path(summary['config']['out']) / summary['config']['split']}",
        flush=True,
    )
    return summary


if __name__ == "__main__":
    sys.exit(run_cli(main))
