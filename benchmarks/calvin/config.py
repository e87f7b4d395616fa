"""CALVIN's run configuration (one flag per field) and the protocol's constants."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, TypedDict

from benchmarks.attribution.config import ProbeArgs
from benchmarks.core.latency import (
    Latency,
    checked_latency,
    latency_arg,
    latency_mode_arg,
    parse_latency,
)
from benchmarks.core.runner import ExecutionConfig, require_count
from benchmarks.robustness.config import RobustnessArgs
from envs.calvin.constants import CONTROL_HZ
from policies.config_cli import arg

CHAIN_LENGTH = 5
#: Per-policy defaults on this benchmark (``parse_benchmark_args``' ``policy_defaults``).
POLICY_DEFAULTS = {"expert": {"expert": "policies.experts.calvin:ScriptedExpert"}}


class Reference(TypedDict):
    label: str
    chain_sr: list[float]
    avg_seq_len: float


# Published reference (VLM4VLA, Qwen3-VL-4B, ABC->D on the official env), from MultihopSpatial Table 3.
REFERENCE: Reference = {
    "label": "VLM4VLA Qwen3-VL-4B, ABC→D (published)",
    "chain_sr": [92.4, 81.8, 74.1, 66.8, 59.9],
    "avg_seq_len": 3.75,
}


@dataclass
class CalvinConfig(RobustnessArgs, ProbeArgs, ExecutionConfig):
    """Evaluate a policy on CALVIN's long-horizon protocol (chains of 5 subtasks, 360 steps each)."""

    policy: str = arg(
        "expert",
        "expert | random | constant --action JSON | replay | mllm | vla | package.module:Class (your own policy)",
    )
    replay_file: str | None = arg(
        None,
        "actions to replay with --policy replay (.jsonl keyed chain-NNNN/i, .npz, .npy)",
        must_exist=True,
    )
    policy_kwargs: str = arg("{}", "JSON keyword arguments for a user policy class", json_kind=dict)
    num_sequences: int = arg(
        1000,
        "the first N of the 1000 public evaluation chains (the protocol uses all 1000; "
        "--limit N is the same option)",
        aliases=("--limit",),
        minimum=1,
    )
    tasks: str | None = arg(
        None,
        "evaluate only these tasks (comma-separated names): one-subtask episodes from the "
        "first --num-sequences evaluation chains that start with one of them",
    )
    ep_len: int = arg(360, "step budget per subtask (the protocol uses 360)", minimum=1)
    seed: int = arg(0, "run seed; each chain's seed derives from it and the chain index")
    backend: Literal["builtin", "official"] = arg(
        "builtin", "built-in play-table, or the official calvin_env if importable"
    )
    calvin_assets: str | None = arg(
        None,
        "a calvin_env checkout or its data/ folder: load the original table and robot meshes (builtin)",
        must_exist=True,
    )
    calvin_env: str | None = arg(
        None,
        "--backend official: the calvin_env checkout to run (default: the importable one); "
        "configured for scene D from its own conf/",
        must_exist=True,
    )
    calvin_dataset: str | None = arg(
        None,
        "--backend official: configure calvin_env from a CALVIN split folder's .hydra/ instead",
        must_exist=True,
    )
    scene: Literal["A", "B", "C", "D"] = arg(
        "D",
        "CALVIN's scene (furniture, woods, blocks) on either backend; the protocol evaluates on D, chains "
        "in A, B and C start from the same symbolic states at that scene's spots",
    )
    renderer: Literal["tiny", "egl"] = arg(
        "tiny",
        "PyBullet renderer on either backend (tiny: CPU TinyRenderer; egl: "
        "PyBullet's EGL plugin, refused where it does not load)",
    )
    obs_layout: Literal["flat", "calvin"] = arg(
        "flat",
        "observations the policy gets: flat (rgb_static, robot_obs, ...) or "
        "calvin (calvin_env's obs['rgb_obs']['rgb_static'], obs['depth_obs'], "
        "as CALVIN's evaluate_policy passes them)",
    )
    cameras: str = arg(
        "auto", "cameras to render: auto (what the policy needs), none, static, gripper, static,gripper"
    )
    video: int = arg(
        0,
        "write MP4 videos of the first K chains (static and gripper views, instruction overlaid)",
        minimum=0,
    )
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
        self.probe_schedule()  # a bad --probe: an input error before anything runs
        checked_latency(self.latency, self.latency_mode, CONTROL_HZ)
        if self.backend != "official" and (self.calvin_env or self.calvin_dataset):
            raise ValueError(
                "--calvin-env and --calvin-dataset configure calvin_env: add --backend official "
                "(or use --calvin-assets PATH to load CALVIN's files into the built-in table)"
            )
        if self.backend == "official" and self.perturb:
            raise ValueError(
                "--perturb: the robustness variants are built by the built-in table; drop --backend official"
            )
        if self.backend == "official" and self.calvin_assets:
            raise ValueError(
                "--calvin-assets is for the built-in table; with --backend official calvin_env loads "
                "its own files (point --calvin-env at the checkout)"
            )
        if self.limit is not None:  # set from Python: the one prefix option is num_sequences
            self.num_sequences, self.limit = min(self.num_sequences, self.limit), None

    def latency_setting(self) -> Latency | None:
        """The parsed ``--latency`` at CALVIN's 30 Hz control rate (``None``: the published protocol)."""
        return parse_latency(self.latency, self.latency_mode, CONTROL_HZ)
