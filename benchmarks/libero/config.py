"""LIBERO's run configuration (one flag per field), per-policy defaults and the published reference."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

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
from envs.libero import protocol
from policies.config_cli import InputError, arg

# Published reference (VLM4VLA with Qwen3-VL-4B on LIBERO-10), from MultihopSpatial Table 3.
#: Per-policy defaults on this benchmark (``parse_benchmark_args``' ``policy_defaults``): the scripted
#: expert is :class:`policies.experts.libero.LiberoExpert`.
POLICY_DEFAULTS: dict[str, dict[str, Any]] = {
    "expert": {"expert": "policies.experts.libero:LiberoExpert"},
    "mllm": {"loop": "spatial", "task": "manipulation", "image_keys": ("agentview_image",)},
    "vla": {"data_format": "libero", "chunk_size": 4},
}
REFERENCE = {"libero_10": {"label": "VLM4VLA Qwen3-VL-4B (published)", "success_rate": 35.8}}


@dataclass
class LiberoConfig(RobustnessArgs, ProbeArgs, ExecutionConfig):
    """Evaluate a policy on a LIBERO suite (one trial per fixed initial state, OpenVLA's step budgets)."""

    policy: str = arg(
        "random",
        "random | expert | constant --action JSON | replay | mllm | vla | package.module:Class (your own policy)",
    )
    replay_file: str | None = arg(
        None,
        "actions to replay with --policy replay (.jsonl keyed SUITE/TASK/TRIAL, .npz, .npy)",
        must_exist=True,
    )
    policy_kwargs: str = arg("{}", "JSON keyword arguments for a user policy class", json_kind=dict)
    suite: Literal["libero_spatial", "libero_object", "libero_goal", "libero_10", "libero_90"] = arg(
        "libero_10", "task suite"
    )
    tasks: str = arg("all", "task indices within the suite, comma-separated, or all")
    trials_per_task: int = arg(
        protocol.TRIALS_PER_TASK, "trials per task, one per fixed initial state (protocol: 50)", minimum=1
    )
    max_steps: int | None = arg(
        None, "step budget per episode (default: the suite's, 220/280/300/520/400)", minimum=1
    )
    num_steps_wait: int = arg(
        protocol.NUM_STEPS_WAIT, "no-op settle steps before the policy acts (protocol: 10)", minimum=0
    )
    seed: int = arg(7, "run seed (the OpenVLA evaluation uses 7); each trial's seed derives from it")
    image_size: int = arg(
        protocol.IMAGE_SIZE, "camera image size (protocol: 256; models resize for themselves)", minimum=1
    )
    fast_render: bool = arg(
        True, "shadows, reflections and multisampling off (about 1.8x faster on CPU; changes images)"
    )
    image_orientation: Literal["upright", "rot180", "raw"] = arg(
        "upright", "camera image convention: upright, or rot180 as OpenVLA/LeRobot training data"
    )
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
        self.probe_schedule()  # a bad --probe: an input error before anything runs
        checked_latency(self.latency, self.latency_mode, protocol.CONTROL_FREQ)

    def latency_setting(self) -> Latency | None:
        """The parsed ``--latency`` at LIBERO's 20 Hz control rate (``None``: the published protocol)."""
        return parse_latency(self.latency, self.latency_mode, protocol.CONTROL_FREQ)

    def budget(self) -> int:
        return protocol.MAX_STEPS[self.suite] if self.max_steps is None else self.max_steps

    def task_indices(self) -> list[int]:
        try:
            return protocol.parse_task_indices(self.tasks, self.suite)
        except ValueError as error:
            raise InputError(str(error)) from None
