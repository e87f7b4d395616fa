"""Play data (``spatial-arena demos --env calvin --scenes A,B,C --frames N``): CALVIN's training side.

The switch is ``--scenes`` or ``--frames``: with either, ``demos --env calvin`` records play; without
them it records per-task demonstrations (:mod:`vla.demos`).

As CALVIN's teleoperated play, each scene is one continuous episode without resets between subtasks.
It starts from one of CALVIN's 192 symbolic initial states, placed in the scene by
:func:`envs.calvin.sequences.initial_env_state` (block yaws redrawn from the seed, start joints noised as
in :mod:`vla.demos`). Then, until ``--frames`` frames are recorded, a subtask is drawn uniformly among
the tasks (``--tasks``, default all 34) that have exactly one transition from the current symbolic state under CALVIN's task model
(:func:`envs.calvin.sequences.next_symbolic_state`) and the scripted expert runs it for at most
``--ep-len`` steps, every step recorded. A success moves the symbolic state and adds a language
window; a failure (no success within ``--ep-len`` steps) is counted and play goes on from wherever the scene is, with the symbolic state
unchanged. After ``--max-failures`` failures in a row the scene is reset to a new initial state and a
new episode row begins (the symbolic state no longer describes the scene).

Written per split (``OUT/<split>/``, default ``training``: CALVIN's ABC->D trains on A, B and C in one
``training`` folder and validates on D in ``validation``; run ``--scenes D --split validation`` for that):

- ``episode_XXXXXXX.npz``: ``rgb_static`` (200x200x3), ``rgb_gripper`` (84x84x3), ``depth_static``
  (200x200), ``depth_gripper`` (84x84) (float32 metres), ``robot_obs``, ``scene_obs``, ``actions``
  (absolute TCP target), ``rel_actions``;
- ``ep_start_end_ids.npy``; ``scene_info.npy`` (``{"calvin_scene_X": [first, last]}``, as CALVIN's ABC
  splits have);
- ``lang_annotations/auto_lang_ann.npy``: one window per successful subtask, ending on the frame whose
  action completed it and at most ``--window`` frames long (default :data:`WINDOW`, CALVIN's annotation
  window length; never reaching back before the subtask's first frame), with a
  sentence drawn from CALVIN's training annotations (the evaluation sentences are held out,
  :func:`envs.calvin.instructions.train_instructions`); ``language.emb`` (``(N, 1, D)`` float32) with
  ``--lang-encoder PATH`` (a local sentence-transformers checkpoint, e.g. CALVIN's paraphrase-MiniLM-L3-v2),
  else left out (the project's readers use ``ann``; :mod:`vla.data.calvin_embed` adds it later);
- ``lang_annotations/embeddings.npy`` (``--split validation`` with ``--lang-encoder``): the evaluation
  instruction of each of the 34 tasks embedded, as CALVIN's rollouts read it;
- ``statistics.yaml``: mean/std of ``robot_obs`` and ``scene_obs`` as CALVIN's ``NormalizeVector``
  transforms, and ``act_min_bound``/``act_max_bound`` of ``actions``;
- ``.hydra/merged_config.yaml``: calvin_env's composed configuration of the split's scene when calvin_env
  is importable (what ``get_env`` reads), else the recorded facts (scene, cameras, rates) only.

``OUT/lerobot/`` (``--format`` with ``lerobot``) holds the same windows as LeRobotDataset v3 episodes:
window frames plus up to ``CHUNK - 1`` following ones (so the last window frames start full chunks, as
the CALVIN reader allows), both cameras, ``observation.state`` (robot_obs), ``observation.environment_state``
(scene_obs) and ``action`` (rel_actions); depth is not stored there. ``OUT/play_<split>.json`` reports
subtasks tried, succeeded and failed per scene and task (the last subtask, cut by ``--frames``, is
counted apart), frames and frames per second.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from policies.config_cli import InputError, arg, parse_config
from vla.calvin_recording import LANG_ENCODER_HELP

if TYPE_CHECKING:
    import gymnasium as gym

    from policies.experts.calvin import ScriptedExpert
    from vla.data import CalvinWriter, LeRobotWriter

WINDOW = 64  # frames per CALVIN language annotation window
CHUNK = 10
FORMATS = ("calvin", "lerobot")
PLAY_FLAGS = ("--scenes", "--frames")


@dataclass
class PlayConfig:
    """Record scripted-expert play (random feasible subtask sequences, no resets) in CALVIN's dataset
    layout and as a LeRobotDataset v3."""

    scenes: str = arg("A,B,C", "scenes to play in, comma-separated (A, B, C, D); one episode each")
    frames: int = arg(1000, "frames to record per scene", minimum=1)
    out: str = arg("", "dataset root; frames go to OUT/<split>/ (must not hold frames yet)")
    split: str = arg("training", "split subdirectory (CALVIN: training = A,B,C; validation = D)")
    seed: int = arg(0, "seed of initial states, subtasks and sentences (the rest is deterministic)")
    format: str = arg("calvin,lerobot", "formats to write: calvin, lerobot or calvin,lerobot")
    joint_noise: float = arg(0.1, "std (radians) of the noise on each start joint", minimum=0)
    ep_len: int = arg(360, "step budget of the expert per subtask (CALVIN's)", minimum=1)
    window: int = arg(
        WINDOW,
        "frames per annotation window, ending on the success frame and never before the subtask's first "
        "(CALVIN: 64; the scripted expert's subtasks are longer, so a larger value annotates the approach too)",
        minimum=1,
    )
    max_failures: int = arg(3, "failed subtasks in a row before the scene is reset (new episode)", minimum=1)
    rest: float = arg(
        0.0,
        "probability of a rest before each subtask: the arm moves to CALVIN's neutral pose, where every "
        "evaluation chain starts (recorded, not annotated; 0: play goes from subtask to subtask)",
        minimum=0,
    )
    tasks: str = arg(
        "",
        "draw subtasks only among these CALVIN tasks (comma-separated; default: all 34); the scene is reset "
        "(new episode) when none of them is feasible",
    )
    lang_encoder: str = arg("", LANG_ENCODER_HELP)

    def check(self) -> None:
        if not self.out:
            raise InputError("--out DIR is required (the dataset root to write)")
        if min(self.frames, self.ep_len, self.max_failures, self.window) < 1:
            raise InputError(
                f"--frames, --ep-len, --max-failures and --window must be >= 1; got {self.frames}, "
                f"{self.ep_len}, {self.max_failures}, {self.window}"
            )
        if self.rest > 1:
            raise InputError(f"--rest {self.rest}: a probability, between 0 and 1")
        scene_list(self.scenes)
        format_list(self.format)
        task_list(self.tasks)
        if self.lang_encoder:
            from vla.data.calvin_embed import encoder_layout

            if "calvin" not in format_list(self.format):
                raise InputError("--lang-encoder embeds CALVIN's annotations: add calvin to --format")
            encoder_layout(self.lang_encoder)
        root = Path(self.out)
        if any((root / self.split).glob("episode_*.npz")) or (root / "lerobot" / "meta").exists():
            raise InputError(
                f"--out {root} already holds play data ({self.split}/ or lerobot/); give a new folder"
            )


def scene_list(text: str) -> list[str]:
    from envs.calvin.scenes import SCENES

    names = [s.strip().upper() for s in text.split(",") if s.strip()]
    bad = [s for s in names if s not in SCENES]
    if bad or not names or len(set(names)) != len(names):
        raise InputError(f"--scenes {text!r}: give distinct scenes among {', '.join(sorted(SCENES))}")
    return names


@lru_cache(maxsize=8)
def task_list(text: str) -> tuple[str, ...]:
    """``--tasks`` as task names (all 34 when empty); each must be a CALVIN task, and one of them must be
    feasible from some of CALVIN's initial states (else play could never start)."""
    from envs.calvin.instructions import CALVIN_TASKS
    from envs.calvin.sequences import next_symbolic_state, symbolic_initial_states

    names = tuple(dict.fromkeys(t.strip() for t in text.split(",") if t.strip())) or tuple(CALVIN_TASKS)
    unknown = [t for t in names if t not in CALVIN_TASKS]
    if unknown:
        raise InputError(
            f"--tasks {','.join(unknown)}: unknown CALVIN task; valid: {', '.join(CALVIN_TASKS)}"
        )
    if not any(next_symbolic_state(s, t) for s in symbolic_initial_states() for t in names):
        raise InputError(
            f"--tasks {text}: none is feasible from CALVIN's initial states (nothing in the hand); add a "
            "task such as open_drawer or lift_red_block_table"
        )
    return names


def format_list(text: str) -> tuple[str, ...]:
    names = tuple(f.strip() for f in text.split(",") if f.strip())
    if not names or any(f not in FORMATS for f in names):
        raise InputError(f"--format {text!r}: choose calvin, lerobot or calvin,lerobot")
    return names


def wants_play(args: list[str]) -> bool:
    """Whether ``demos --env calvin`` arguments ask for play data (``--scenes`` or ``--frames`` given)."""
    return any(a == f or a.startswith(f + "=") for a in args for f in PLAY_FLAGS)


# ------------------------------------------------------------------------------------------- play


@dataclass
class SceneReport:
    scene: str
    frames: int = 0
    episodes: int = 0
    tried: Counter[str] = field(default_factory=Counter)
    succeeded: Counter[str] = field(default_factory=Counter)
    cut: int = 0  # the last subtask, stopped by the frame budget: neither success nor failure
    rests: int = 0
    seconds: float = 0.0

    def row(self) -> dict[str, Any]:
        failed = sum(self.tried.values()) - sum(self.succeeded.values()) - self.cut
        return {
            "frames": self.frames,
            "episodes": self.episodes,
            "subtasks": sum(self.tried.values()),
            "succeeded": sum(self.succeeded.values()),
            "failed": failed,
            "cut_by_frame_budget": self.cut,
            "rests": self.rests,
            "seconds": round(self.seconds, 1),
            "frames_per_second": round(self.frames / self.seconds, 2) if self.seconds else None,
            "tasks": {t: {"tried": n, "succeeded": self.succeeded[t]} for t, n in sorted(self.tried.items())},
        }


@dataclass
class Sinks:
    """Where frames go: the CALVIN writer and, optionally, LeRobot windows waiting for their tail."""

    calvin: CalvinWriter
    lerobot: LeRobotWriter | None
    window: int = WINDOW  # the longest annotation window: how far back LeRobot frames are kept
    recent: dict[int, dict[str, np.ndarray]] = field(default_factory=dict)  # index -> LeRobot frame
    pending: list[tuple[int, int, str]] = field(default_factory=list)  # window first, last, sentence
    vectors: dict[str, list[np.ndarray]] = field(
        default_factory=lambda: {"robot_obs": [], "scene_obs": [], "actions": []}
    )

    def add(self, frame: dict[str, np.ndarray]) -> int:
        index = self.calvin.add_frame(frame)
        for key, rows in self.vectors.items():
            rows.append(np.asarray(frame[key], np.float64))
        if self.lerobot is not None:
            self.recent[index] = lerobot_frame(frame)
            self.flush(index, final=False)
        return index

    def flush(self, index: int, final: bool) -> None:
        """Write the LeRobot windows whose tail is complete at frame ``index`` (all of them if ``final``)."""
        while self.pending and (final or self.pending[0][1] + CHUNK - 1 <= index):
            first, last, sentence = self.pending.pop(0)
            rows = [self.recent[t] for t in range(first, min(last + CHUNK - 1, index) + 1)]
            if self.lerobot is not None:
                self.lerobot.add_episode({k: np.stack([r[k] for r in rows]) for k in rows[0]}, sentence)
        keep = min([p[0] for p in self.pending], default=index + 1 - self.window)
        for t in [t for t in self.recent if t < keep]:
            del self.recent[t]


def lerobot_frame(frame: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    return {
        "observation.images.rgb_static": frame["rgb_static"],
        "observation.images.rgb_gripper": frame["rgb_gripper"],
        "observation.state": np.asarray(frame["robot_obs"], np.float32),
        "observation.environment_state": np.asarray(frame["scene_obs"], np.float32),
        "action": np.asarray(frame["rel_actions"], np.float32),
    }


def new_start(
    env: gym.Env, scene: str, rng: np.random.Generator, config: PlayConfig
) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """Reset ``env`` to a random CALVIN initial state placed in ``scene``; (symbolic state, observation)."""
    from envs.calvin.scenes import scene_spec
    from envs.calvin.sequences import BLOCK_YAW_RANGE, initial_env_state, symbolic_initial_states
    from vla.calvin_recording import perturbed_robot_obs

    states = [s for s in symbolic_initial_states() if options(s, task_list(config.tasks))]
    symbolic = states[int(rng.integers(len(states)))]
    robot_obs, scene_obs = initial_env_state(symbolic, scene)
    for color in scene_spec(scene).block_colors:
        scene_obs[scene_spec(scene).block_slice(color).start + 5] = rng.uniform(*BLOCK_YAW_RANGE)
    robot = perturbed_robot_obs(robot_obs, rng, config.joint_noise)
    obs, _ = env.reset(seed=0, options={"robot_obs": robot, "scene_obs": scene_obs})
    return symbolic, obs


def options(state: dict[str, Any], tasks: tuple[str, ...]) -> list[tuple[str, dict[str, Any]]]:
    """The ``tasks`` valid from ``state`` (exactly one transition), each with the state it leads to."""
    from envs.calvin.sequences import next_symbolic_state

    return [(t, s) for t in tasks if (s := next_symbolic_state(state, t)) is not None]


def next_task(
    state: dict[str, Any], rng: np.random.Generator, tasks: tuple[str, ...]
) -> tuple[str, dict[str, Any]]:
    """A subtask drawn uniformly among ``tasks`` valid from ``state``, and the state it leads to."""
    valid = options(state, tasks)
    return valid[int(rng.integers(len(valid)))]


def play_scene(scene: str, index: int, sinks: Sinks, config: PlayConfig) -> SceneReport:
    """Record ``config.frames`` frames of play in ``scene`` into ``sinks``."""
    from envs.calvin.env import PlayTableEnv
    from policies.experts.calvin import ScriptedExpert

    rng, report, began = np.random.default_rng([config.seed, index]), SceneReport(scene), time.perf_counter()
    env = PlayTableEnv(cameras=("static", "gripper"), depth=True, scene=scene)
    expert = ScriptedExpert()
    expert.bind(env)
    try:
        state, obs = new_start(env, scene, rng, config)
        sinks.calvin.begin_episode()
        report.episodes, failures = 1, 0
        while report.frames < config.frames:
            if failures >= config.max_failures or not options(state, task_list(config.tasks)):
                sinks.calvin.end_episode(None)
                sinks.flush(sinks.calvin.next_index - 1, final=True)
                state, obs = new_start(env, scene, rng, config)
                sinks.calvin.begin_episode()
                report.episodes, failures = report.episodes + 1, 0
            state, obs, failures = _subtask(env, expert, state, obs, failures, sinks, report, rng, config)
        sinks.calvin.end_episode(None)
        sinks.flush(sinks.calvin.next_index - 1, final=True)
    finally:
        env.close()
    report.seconds = time.perf_counter() - began
    return report


def _subtask(
    env: gym.Env,
    expert: ScriptedExpert,
    state: dict[str, Any],
    obs: dict[str, np.ndarray],
    failures: int,
    sinks: Sinks,
    report: SceneReport,
    rng: np.random.Generator,
    config: PlayConfig,
) -> tuple[dict[str, Any], dict[str, np.ndarray], int]:
    """Run one drawn subtask, record its frames, annotate it on success; (state, obs, failures in a row)."""
    from envs.calvin.instructions import train_instructions
    from vla.calvin_recording import record_task

    if config.rest > 0 and rng.random() < config.rest:  # (no draw at 0: the play stays as it was)
        obs = _rest(env, obs, sinks, report, config)
        if report.frames >= config.frames:
            return state, obs, failures
    task, after = next_task(state, rng, task_list(config.tasks))
    sentences = train_instructions()[task]
    sentence = sentences[int(rng.integers(len(sentences)))]
    budget = min(config.ep_len, config.frames - report.frames)
    episode = record_task(env, expert, task, sentence, obs, budget, tail_steps=0)
    first = sinks.calvin.next_index
    for raw in episode.frames:
        sinks.add(raw)
    report.frames += len(episode.frames)
    report.tried[task] += 1
    if episode.last_obs is not None:
        obs = episode.last_obs
    if episode.success_step is None:
        if budget < config.ep_len and len(episode.frames) == budget:
            report.cut += 1
            return state, obs, failures
        return state, obs, failures + 1
    report.succeeded[task] += 1
    last = first + episode.success_step
    start = max(first, last - config.window + 1)
    sinks.calvin.annotate(start, last, task, sentence)
    if sinks.lerobot is not None:
        sinks.pending.append((start, last, sentence))
    return after, obs, 0


REST_STEPS = 150  # at most this many steps per rest (the expert's FAST transit covers the table in fewer)


def _rest(
    env: gym.Env, obs: dict[str, np.ndarray], sinks: Sinks, report: SceneReport, config: PlayConfig
) -> dict[str, np.ndarray]:
    """Move to the neutral pose (:func:`policies.experts.calvin.rest_motion`), recording the frames."""
    from envs.calvin.env import PlayTableInterface
    from policies.experts.calvin import rest_motion
    from vla.calvin_recording import record_motion

    budget = min(REST_STEPS, config.frames - report.frames)
    motion = rest_motion(cast(PlayTableInterface, env.unwrapped))
    episode = record_motion(env, motion, obs, budget)
    for raw in episode.frames:
        sinks.add(raw)
    report.frames += len(episode.frames)
    report.rests += 1
    return episode.last_obs if episode.last_obs is not None else obs


# ----------------------------------------------------------------------------------------- writing


def statistics(vectors: dict[str, list[np.ndarray]]) -> dict[str, Any]:
    """CALVIN's ``statistics.yaml``: NormalizeVector mean/std of robot_obs and scene_obs, action bounds."""
    target = "calvin_agent.utils.transforms.NormalizeVector"
    out: dict[str, Any] = {}
    for key in ("robot_obs", "scene_obs"):
        rows = np.stack(vectors[key])
        out[key] = [{"_target_": target, "mean": rows.mean(0).tolist(), "std": rows.std(0).tolist()}]
    actions = np.stack(vectors["actions"])
    return out | {"act_min_bound": actions.min(0).tolist(), "act_max_bound": actions.max(0).tolist()}


def hydra_config(scene: str) -> dict[str, Any]:
    """``.hydra/merged_config.yaml``: calvin_env's own composed configuration when it is importable."""
    from envs.calvin import constants as C

    try:
        from omegaconf import OmegaConf

        from envs.calvin.official import checkout_root, compose_config

        composed = OmegaConf.to_container(compose_config(checkout_root(), scene=scene), resolve=True)
        return dict(composed) if isinstance(composed, dict) else {}
    except ImportError:
        return {
            "scene": f"calvin_scene_{scene}",
            "cameras": {"static": {"width": 200, "height": 200}, "gripper": {"width": 84, "height": 84}},
            "env": {"control_freq": C.CONTROL_HZ},
            "generator": "spatial-arena demos --env calvin (play); calvin_env was not importable",
        }


def write_metadata(
    split: Path, scenes: dict[str, tuple[int, int]], vectors: dict[str, list[np.ndarray]]
) -> None:
    import yaml

    info = {f"calvin_scene_{s}": list(span) for s, span in scenes.items()}
    np.save(split / "scene_info.npy", np.asarray(info, dtype=object), allow_pickle=True)
    (split / "statistics.yaml").write_text(yaml.safe_dump(statistics(vectors), sort_keys=False))
    (split / ".hydra").mkdir(exist_ok=True)
    config = hydra_config(list(scenes)[-1])
    (split / ".hydra" / "merged_config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))


def lerobot_writer(root: Path) -> LeRobotWriter:
    from envs.calvin import constants as C
    from vla.data import LeRobotWriter, VectorFeature

    return LeRobotWriter(
        root,
        fps=C.CONTROL_HZ,
        cameras={"observation.images.rgb_static": (200, 200), "observation.images.rgb_gripper": (84, 84)},
        vectors={
            "observation.state": VectorFeature(15),
            "observation.environment_state": VectorFeature(24),
            "action": VectorFeature(7),
        },
        robot_type="panda",
    )


def generate(config: PlayConfig) -> dict[str, Any]:
    """Write the play data ``config`` describes; returns the report saved as ``play_<split>.json``."""
    from vla.data import CalvinWriter
    from vla.data.calvin_embed import SentenceEncoder, write_embeddings

    config.check()
    root, formats = Path(config.out), format_list(config.format)
    split = root / config.split
    encoder = SentenceEncoder(config.lang_encoder) if config.lang_encoder else None  # fails before play
    writer = CalvinWriter(split)
    lerobot = lerobot_writer(root / "lerobot") if "lerobot" in formats else None
    sinks, reports, spans = Sinks(writer, lerobot, config.window), {}, {}
    for index, scene in enumerate(scene_list(config.scenes)):
        first = writer.next_index
        reports[scene] = play_scene(scene, index, sinks, config).row()
        spans[scene] = (first, writer.next_index - 1)
    writer.close()
    if encoder is not None:
        write_embeddings(split, encoder)
    write_metadata(split, spans, sinks.vectors)
    if lerobot is not None:
        lerobot.close()
    if "calvin" not in formats:  # the CALVIN split was the staging area
        import shutil

        shutil.rmtree(split)
    frames, seconds = sum(r["frames"] for r in reports.values()), sum(r["seconds"] for r in reports.values())
    summary = {
        "config": asdict(config),
        "frames": frames,
        "seconds": round(seconds, 1),
        "frames_per_second": round(frames / seconds, 2) if seconds else None,
        "scenes": reports,
    }
    (root / f"play_{config.split}.json").write_text(json.dumps(summary, indent=1) + "\n")
    return summary


def main(argv: list[str]) -> dict[str, Any]:
    summary = generate(parse_config(PlayConfig, argv, prog="spatial-arena demos --env calvin"))
    for scene, row in summary["scenes"].items():
        print(
            f"[vla.demos] scene {scene}: {row['frames']} frames, {row['succeeded']}/{row['subtasks']} subtasks "
            f"succeeded ({row['failed']} failed), {row['episodes']} episode(s), {row['frames_per_second']} frames/s",
            flush=True,
        )
    print(
        f"[vla.demos] {summary['frames']} frames in {summary['seconds']} s -> {summary['config']['out']}",
        flush=True,
    )
    return summary
