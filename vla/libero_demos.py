"""``spatial-arena demos --env libero``: scripted-expert demonstrations of LIBERO tasks, in LIBERO's HDF5
layout and as a LeRobotDataset v3.

For each chosen task of ``--suite`` the privileged expert (:class:`policies.experts.libero.LiberoExpert`)
runs from LIBERO's fixed initial states (``--states``; attempt ``i`` starts from the ``i``-th of them,
cycling, with reset seed ``--seed + i``), with both cameras (agent view and eye in hand) rendered at
``--image-size``. Every step records the observation before the action (both images, proprioception, the
flattened MuJoCo state) and the action sent. Failed episodes are discarded and counted; attempts stop
once ``--episodes`` succeeded or ``--max-attempts`` were made. Results do not depend on ``--workers``:
attempts run in parallel but are kept in attempt order.

Outputs under ``--out``:

- ``libero-hdf5/<suite>/<TASK_NAME>_demo.hdf5``: one file per task in LIBERO's own layout
  (:class:`vla.data.LiberoWriter`; images as LIBERO stores them, bottom row first);
- ``lerobot/``: one LeRobotDataset v3 for all tasks (:class:`vla.data.LeRobotWriter`): videos
  ``observation.images.agentview_rgb`` and ``observation.images.eye_in_hand_rgb`` (right side up: the true
  camera image), ``observation.state`` (8: end-effector position, axis-angle, finger joints) and
  ``action`` (7), at LIBERO's 20 Hz, the instruction as the task;
- ``demos_libero.json``: the settings, and per task the attempts, kept and discarded episodes, frames and
  every attempt's initial state, seed, steps and outcome; rewritten after each task.

Each task is finished in both formats before the next begins, so ``--resume`` continues an interrupted
run with the first unfinished task (same settings); ``--overwrite`` starts over.
"""

from __future__ import annotations

import json
import multiprocessing
import shutil
import sys
import time
from collections import deque
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from policies.config_cli import InputError, arg, parse_config, run_cli

if TYPE_CHECKING:
    from envs.libero.env import LiberoEnv
    from policies.experts.libero import LiberoExpert
    from vla.data import LeRobotWriter, LiberoTaskInfo, LiberoWriter

FORMATS = ("libero-hdf5", "lerobot")
SUMMARY = "demos_libero.json"
CAMERAS = {"agentview_rgb": "agentview_image", "eye_in_hand_rgb": "eye_in_hand_image"}
STATE_NAMES = ("eef_x", "eef_y", "eef_z", "eef_ax", "eef_ay", "eef_az", "finger_left", "finger_right")
ACTION_NAMES = ("dx", "dy", "dz", "ax", "ay", "az", "gripper")
#: settings that may differ between a run and its --resume
RUN_ONLY = ("workers", "resume", "overwrite")


@dataclass
class LiberoDemoConfig:
    """Record scripted-expert demonstrations of LIBERO tasks (LIBERO HDF5 and LeRobotDataset v3)."""

    suite: Literal["libero_spatial", "libero_object", "libero_goal", "libero_10", "libero_90"] = arg(
        "libero_object", "task suite"
    )
    tasks: str = arg("all", "task indices within the suite, comma-separated, or all")
    episodes: int = arg(10, "successful demonstrations to keep per task", minimum=1)
    out: str = arg("", "output folder (must be empty or absent unless --resume or --overwrite)")
    format: str = arg("libero-hdf5,lerobot", "formats to write, comma-separated: libero-hdf5, lerobot")
    states: str = arg("all", "fixed initial states to start from, cycling (e.g. 0-39, or all: 0-49)")
    seed: int = arg(0, "attempt i resets with seed SEED + i (fixture jitter)")
    image_size: int = arg(128, "camera image size (LIBERO's datasets: 128)", minimum=16)
    max_steps: int | None = arg(
        None, "step budget per attempt (default: the suite's protocol budget)", minimum=1
    )
    max_attempts: int | None = arg(None, "attempts per task (default: 3 x --episodes)", minimum=1)
    workers: int = arg(1, "processes recording attempts in parallel (each renders its own envs)", minimum=1)
    resume: bool = arg(False, "continue the run in --out with its first unfinished task")
    overwrite: bool = arg(False, "delete what --out holds and start over")

    def check(self) -> None:
        if not self.out:
            raise ValueError("--out DIR is required (the folder to write the demonstrations to)")
        if self.resume and self.overwrite:
            raise ValueError("--resume and --overwrite exclude each other: continue the run, or start over")
        self.task_indices()
        self.format_list()
        self.state_indices()

    def task_indices(self) -> list[int]:
        from envs.libero.protocol import parse_task_indices

        return parse_task_indices(self.tasks, self.suite)

    def format_list(self) -> tuple[str, ...]:
        names = tuple(f.strip() for f in self.format.split(",") if f.strip())
        bad = [f for f in names if f not in FORMATS]
        if bad or not names:
            raise ValueError(
                f"--format {self.format!r}: unknown format {bad or '(none)'}; choose from {', '.join(FORMATS)}"
            )
        return names

    def state_indices(self) -> list[int]:
        from envs.libero.protocol import NUM_INIT_STATES, parse_indices

        return parse_indices(self.states, NUM_INIT_STATES, "--states")

    def budget(self) -> int:
        from envs.libero.protocol import MAX_STEPS

        return MAX_STEPS[self.suite] if self.max_steps is None else self.max_steps


# ------------------------------------------------------------------------------------------- attempts


@dataclass(frozen=True)
class Attempt:
    """One attempt at a task: where it starts. Picklable, for worker processes."""

    suite: str
    task_index: int
    attempt: int
    init_state_index: int
    seed: int
    image_size: int
    max_steps: int


@dataclass
class Recorded:
    """What an attempt gave: its outcome and, for a success, every step's data."""

    attempt: Attempt
    success: bool
    steps: int
    seconds: float
    frames: dict[str, np.ndarray] = field(default_factory=dict)
    model_xml: str = ""

    def entry(self) -> dict[str, Any]:
        a = self.attempt
        return {
            "attempt": a.attempt,
            "init_state_index": a.init_state_index,
            "seed": a.seed,
            "success": self.success,
            "steps": self.steps,
            "seconds": round(self.seconds, 2),
        }


_ENVS: dict[tuple[str, int, int], tuple[LiberoEnv, LiberoExpert]] = {}


def _env(attempt: Attempt) -> tuple[LiberoEnv, LiberoExpert]:
    """This process's env and bound expert for the attempt's task (built once, reused)."""
    from envs.libero.env import LiberoEnv
    from policies.experts.libero import LiberoExpert

    key = (attempt.suite, attempt.task_index, attempt.image_size)
    if key not in _ENVS:
        env = LiberoEnv(
            attempt.suite, attempt.task_index, image_size=attempt.image_size, image_orientation="raw"
        )
        expert = LiberoExpert()
        expert.bind(env)
        _ENVS[key] = (env, expert)
    return _ENVS[key]


def record_attempt(attempt: Attempt) -> Recorded:
    """Run the expert once from the attempt's start, recording each step (kept only on success)."""
    from policies.base import EpisodeContext

    began = time.perf_counter()
    env, expert = _env(attempt)
    options = {"init_state_index": attempt.init_state_index, "max_steps": attempt.max_steps}
    obs, info = env.reset(seed=attempt.seed, options=options)
    expert.reset(EpisodeContext(instruction=env.instruction, seed=attempt.seed, info=info))
    rows: list[dict[str, np.ndarray]] = []
    done = False
    while not done:
        action = np.asarray(expert.act(obs), np.float32)
        rows.append(_step_row(env, obs, action))
        obs, reward, terminated, truncated, info = env.step(action)
        rows[-1]["rewards"] = np.asarray(reward > 0, np.uint8)
        done = terminated or truncated
    success = bool(info["is_success"])
    frames = {k: np.stack([r[k] for r in rows]) for k in rows[0]} if success else {}
    xml = env.raw_env.sim.model.get_xml() if success else ""
    return Recorded(attempt, success, len(rows), time.perf_counter() - began, frames, xml)


def _step_row(env: LiberoEnv, obs: dict[str, Any], action: np.ndarray) -> dict[str, np.ndarray]:
    """What one step records: the observation before ``action`` (raw images) and the action."""
    return {
        "agentview_rgb": obs["agentview_image"],
        "eye_in_hand_rgb": obs["eye_in_hand_image"],
        "state": obs["state"].astype(np.float32),
        "gripper_states": obs["gripper_qpos"],
        "joint_states": obs["joint_pos"],
        "robot_states": np.concatenate([obs["gripper_qpos"], obs["eef_pos"], obs["eef_quat"]]),
        "states": np.asarray(env.raw_env.get_sim_state(), np.float64),
        "actions": action,
    }


def task_attempts(config: LiberoDemoConfig, task_index: int) -> Iterator[Attempt]:
    states = config.state_indices()
    for i in range(config.max_attempts or 3 * config.episodes):
        yield Attempt(
            config.suite,
            task_index,
            i,
            states[i % len(states)],
            config.seed + i,
            config.image_size,
            config.budget(),
        )


class Recorder:
    """Runs attempts in this process (``workers == 1``) or in a pool of render-safe processes, and yields
    their results in attempt order."""

    def __init__(self, workers: int) -> None:
        self.pool: ProcessPoolExecutor | None = None
        if workers > 1:
            from envs.rendering import RENDER_SAFE_START

            self.pool = ProcessPoolExecutor(
                workers, mp_context=multiprocessing.get_context(RENDER_SAFE_START)
            )
        self.workers = workers

    def results(self, attempts: Iterable[Attempt]) -> Iterator[Recorded]:
        if self.pool is None:
            yield from map(record_attempt, attempts)
            return
        pending: deque[Future[Recorded]] = deque()
        todo = iter(attempts)
        try:
            for attempt in todo:
                pending.append(self.pool.submit(record_attempt, attempt))
                if len(pending) >= self.workers:
                    break
            while pending:
                result = pending.popleft().result()
                following = next(todo, None)
                if following is not None:
                    pending.append(self.pool.submit(record_attempt, following))
                yield result
        finally:
            for future in pending:
                future.cancel()

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown(cancel_futures=True)


# -------------------------------------------------------------------------------------------- writing


def task_info(suite: str, task_index: int, image_size: int) -> LiberoTaskInfo:
    """What the task's HDF5 file says about it, read from the task's BDDL problem (no simulator)."""
    from envs.libero.tasks import load_task
    from vla.data import LiberoTaskInfo

    task = load_task(suite, task_index)
    content = task.bddl_file.read_text()
    return LiberoTaskInfo(
        instruction=task.instruction,
        problem_name=_bddl_field(content, "problem"),
        domain_name=_bddl_field(content, "domain"),
        bddl_file=str(task.bddl_file),
        bddl_content=content,
        env_kwargs={
            "bddl_file_name": str(task.bddl_file),
            "camera_heights": image_size,
            "camera_widths": image_size,
            "camera_names": ["agentview", "robot0_eye_in_hand"],
            "control_freq": 20,
            "controller": "OSC_POSE",
        },
    )


def _bddl_field(content: str, name: str) -> str:
    """``LIBERO_Kitchen_Tabletop_Manipulation`` from ``(problem LIBERO_...)`` (``:domain`` likewise)."""
    for token in (f"(:{name} ", f"({name} "):
        at = content.find(token)
        if at >= 0:
            return content[at + len(token) :].split(")", 1)[0].strip()
    return ""


def hdf5_demo(frames: dict[str, np.ndarray]) -> dict[str, Any]:
    """A recorded success in the shape :meth:`vla.data.LiberoWriter.add_demo` takes."""
    steps = len(frames["actions"])
    dones = np.zeros(steps, np.uint8)
    dones[-1] = 1
    state = frames["state"].astype(np.float64)
    obs = {k: frames[k] for k in ("agentview_rgb", "eye_in_hand_rgb", "gripper_states", "joint_states")}
    obs |= {"ee_states": state[:, :6], "ee_pos": state[:, :3], "ee_ori": state[:, 3:6]}
    demo = {k: frames[k] for k in ("actions", "states", "robot_states", "rewards")}
    return demo | {"dones": dones, "obs": obs}


def lerobot_frames(frames: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """A recorded success as LeRobot features: images right side up (raw frames are bottom row first)."""
    images = {f"observation.images.{k}": np.ascontiguousarray(frames[k][:, ::-1]) for k in CAMERAS}
    return images | {"observation.state": frames["state"], "action": frames["actions"]}


def lerobot_writer(root: Path, image_size: int) -> LeRobotWriter:
    """The dataset at ``root``, reopened to append, or a new one."""
    from vla.data import LeRobotWriter, VectorFeature

    if (root / "meta" / "info.json").is_file():
        return LeRobotWriter.append_to(root)
    return LeRobotWriter(
        root,
        fps=20,
        cameras={f"observation.images.{k}": (image_size, image_size) for k in CAMERAS},
        vectors={
            "observation.state": VectorFeature(8, STATE_NAMES),
            "action": VectorFeature(7, ACTION_NAMES),
        },
        robot_type="panda",
    )


@dataclass
class TaskReport:
    task_index: int
    task_name: str
    instruction: str
    attempts: int = 0
    kept: int = 0
    discarded: int = 0
    frames: int = 0
    seconds: float = 0.0
    done: bool = False
    episodes: list[dict[str, Any]] = field(default_factory=list)


def record_task(config: LiberoDemoConfig, task_index: int, recorder: Recorder, root: Path) -> TaskReport:
    """Record one task's demonstrations into every chosen format; both are complete when it returns."""
    from envs.libero.tasks import load_task
    from vla.data import LiberoWriter

    task, formats, began = load_task(config.suite, task_index), config.format_list(), time.perf_counter()
    report = TaskReport(task_index, task.name, task.instruction)
    hdf5 = None
    if "libero-hdf5" in formats:
        path = root / "libero-hdf5" / config.suite / f"{task.name}_demo.hdf5"
        hdf5 = LiberoWriter(path, task_info(config.suite, task_index, config.image_size))
    lerobot = lerobot_writer(root / "lerobot", config.image_size) if "lerobot" in formats else None
    for result in recorder.results(task_attempts(config, task_index)):
        report.attempts += 1
        report.episodes.append(result.entry())
        if not result.success:
            report.discarded += 1
            continue
        report.kept += 1
        report.frames += result.steps
        if hdf5 is not None:
            hdf5.add_demo(hdf5_demo(result.frames), result.model_xml)
        if lerobot is not None:
            lerobot.add_episode(lerobot_frames(result.frames), task.instruction)
        if report.kept >= config.episodes:
            break
    _finish(hdf5, lerobot, report)
    report.seconds = round(time.perf_counter() - began, 1)
    return report


def _finish(hdf5: LiberoWriter | None, lerobot: LeRobotWriter | None, report: TaskReport) -> None:
    if report.kept == 0:  # nothing to write: no empty files
        if hdf5 is not None:
            hdf5.discard()
    else:
        if hdf5 is not None:
            hdf5.close()
        if lerobot is not None:
            lerobot.close()
    report.done = True


# --------------------------------------------------------------------------------------------- runs


def prepare_out(config: LiberoDemoConfig) -> dict[str, Any]:
    """Check ``--out`` against ``--resume``/``--overwrite``; the earlier run's summary when resuming."""
    root = Path(config.out)
    if root.exists() and not root.is_dir():
        raise InputError(f"--out {root} is a file; give a folder")
    busy = root.is_dir() and any(root.iterdir())
    if busy and config.overwrite:
        shutil.rmtree(root)
    elif busy and not config.resume:
        raise InputError(
            f"--out {root} is not empty; pass --resume to continue that run or --overwrite to start over"
        )
    if not (busy and config.resume):
        return {}
    summary_path = root / SUMMARY
    if not summary_path.is_file():
        raise InputError(
            f"--resume: {summary_path} is missing, so {root} holds no run to continue; use --overwrite"
        )
    earlier = json.loads(summary_path.read_text())
    mine = {k: v for k, v in asdict(config).items() if k not in RUN_ONLY}
    theirs = {k: v for k, v in earlier.get("config", {}).items() if k not in RUN_ONLY}
    if mine != theirs:
        changed = sorted(k for k in mine if mine[k] != theirs.get(k))
        raise InputError(
            f"--resume: {root} was made with other settings ({', '.join(changed)}); use --overwrite"
        )
    return earlier


def generate(config: LiberoDemoConfig) -> dict[str, Any]:
    """Record the demonstrations ``config`` describes; returns the summary also saved in ``--out``."""
    earlier = prepare_out(config)
    root = Path(config.out)
    root.mkdir(parents=True, exist_ok=True)
    done = {int(k): v for k, v in earlier.get("tasks", {}).items() if v.get("done")}
    reports: dict[int, dict[str, Any]] = dict(done)
    recorder = Recorder(config.workers)
    try:
        for task_index in config.task_indices():
            if task_index in done:
                continue
            report = record_task(config, task_index, recorder, root)
            _warn_if_short(config, report)
            reports[task_index] = asdict(report)
            _save(root, config, reports)
    finally:
        recorder.close()
    return _save(root, config, reports)


def _warn_if_short(config: LiberoDemoConfig, report: TaskReport) -> None:
    if report.kept < config.episodes:
        print(
            f"[demos] warning: {config.suite} task {report.task_index}: {report.kept} of {config.episodes} "
            f"demonstrations succeeded in {report.attempts} attempts (raise --max-attempts)",
            flush=True,
        )


def _save(root: Path, config: LiberoDemoConfig, reports: dict[int, dict[str, Any]]) -> dict[str, Any]:
    rows = [reports[k] for k in sorted(reports)]
    seconds = sum(r["seconds"] for r in rows)
    kept = sum(r["kept"] for r in rows)
    summary = {
        "config": asdict(config),
        "attempts": sum(r["attempts"] for r in rows),
        "kept": kept,
        "discarded": sum(r["discarded"] for r in rows),
        "frames": sum(r["frames"] for r in rows),
        "seconds": round(seconds, 1),
        "episodes_per_minute": round(60 * kept / seconds, 2) if seconds else None,
        "tasks": {str(r["task_index"]): r for r in rows},
    }
    (root / SUMMARY).write_text(json.dumps(summary, indent=1) + "\n")
    return summary


def main(argv: list[str] | None = None) -> dict[str, Any]:
    config = parse_config(LiberoDemoConfig, argv, prog="spatial-arena demos --env libero")
    summary = generate(config)
    for row in summary["tasks"].values():
        print(
            f"[demos] {config.suite} task {row['task_index']} ({row['task_name']}): kept {row['kept']}, "
            f"discarded {row['discarded']}, {row['frames']} frames, {row['seconds']} s",
            flush=True,
        )
    print(
        f"[demos] {summary['kept']} demonstrations ({summary['discarded']} failed attempts discarded), "
        f"{summary['frames']} frames in {summary['seconds']} s -> {config.out}",
        flush=True,
    )
    return summary


if __name__ == "__main__":
    sys.exit(run_cli(main))
