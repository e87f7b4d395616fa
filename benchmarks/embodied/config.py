"""The EB families (what differs between EB-Navigation and EB-Manipulation) and the run configuration."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from benchmarks.attribution.config import ProbeArgs
from benchmarks.core.latency import Latency, checked_latency, latency_arg, latency_mode_arg, parse_latency
from benchmarks.core.runner import ExecutionConfig, require_count
from benchmarks.robustness.config import RobustnessArgs
from policies.config_cli import arg


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
    #: EB actions per second assumed by ``--latency`` (the env's ``metadata["render_fps"]``: one action a frame).
    control_hz: float = 1.0
    mllm_defaults: dict[str, Any] = field(default_factory=dict)
    perturbations: str | None = None  # "module:FAMILY": the module registering the env's robustness axes
    probes: str | None = (
        None  # "module:PROBES": the family's state probes (benchmarks.attribution.ProbeFamily)
    )

    def policy_defaults(self) -> dict[str, dict[str, Any]]:
        """Per-policy defaults on this family (``parse_benchmark_args``' ``policy_defaults``)."""
        return {"mllm": self.mllm_defaults, "expert": {"expert": self.expert}}


FAMILIES = {
    "nav": Family(
        name="nav",
        title="EB-Navigation (MuJoCo homes)",
        env_id="SpatialArena/EBNavigation-v0",
        subsets="envs.navigation.episodes:SUBSETS",
        episodes_per_subset=60,
        make_episodes="envs.navigation.episodes:make_episode_set",
        load_episodes="envs.navigation.episodes:load_episodes",
        run_episode="benchmarks.embodied.navigation:run_episode",
        expert="policies.experts.navigation:ShortestPathExpert",
        video_keys=("rgb",),
        size_kwargs=("width", "height"),
        control_hz=4.0,
        mllm_defaults={"loop": "eb", "task": "navigation", "image_keys": ("rgb",)},
        perturbations="envs.navigation.perturbations:FAMILY",
        probes="benchmarks.attribution.navigation:PROBES",
    ),
    "manip": Family(
        name="manip",
        title="EB-Manipulation (robosuite)",
        env_id="SpatialArena/EBManipulation-v0",
        subsets="envs.manipulation.tasks:SUBSETS",
        episodes_per_subset=12,
        make_episodes="envs.manipulation.episodes:make_episode_set",
        load_episodes="envs.manipulation.episodes:load_episodes",
        run_episode="benchmarks.embodied.manipulation:run_episode",
        expert="policies.experts.manipulation:EBManipulationExpert",
        video_keys=("front_rgb",),
        size_kwargs=("image_size",),
        control_hz=2.0,
        mllm_defaults={"loop": "eb", "task": "manipulation", "image_keys": ("front_rgb",)},
        perturbations="envs.manipulation.perturbations:FAMILY",
        probes="benchmarks.attribution.manipulation:PROBES",
    ),
}


@dataclass
class EmbodiedConfig(ProbeArgs, RobustnessArgs, ExecutionConfig):
    """Evaluate a policy on EB-style navigation or manipulation (first argument: nav or manip)."""

    family: str = arg("nav", "nav or manip (given as the first argument)", cli=False)
    policy: str = arg(
        "expert",
        "expert | random | constant --action JSON | replay | mllm | package.module:Class (your own policy)",
    )
    replay_file: str | None = arg(
        None, "actions to replay with --policy replay (.jsonl keyed by episode id)", must_exist=True
    )
    policy_kwargs: str = arg("{}", "JSON keyword arguments for a user policy class", json_kind=dict)
    subset: str = arg("all", "a subset name, several separated by commas, or all")
    episodes: int | None = arg(
        None, "episodes per subset (default: 60 navigation, 12 per task family manipulation)", minimum=1
    )
    episodes_file: str | None = arg(
        None, "evaluate the episodes in this JSONL file instead of generating them", must_exist=True
    )
    episode_seed: int = arg(0, "seed of the generated episode sets")
    seed: int = arg(0, "run seed; each episode's seed derives from it and the episode index")
    image_size: int | None = arg(
        None, "camera image size in pixels (default: the env's; EB used 500)", minimum=1
    )
    env_kwargs: str = arg("{}", "JSON keyword arguments passed to the env", json_kind=dict)
    video: int = arg(0, "write MP4 videos of the first K episodes", minimum=0)
    latency: str = latency_arg("one action per 0.25 s (nav) or 0.5 s (manip)")
    latency_mode: Literal["continue", "hold"] = latency_mode_arg()
    output: str = arg("outputs", "results go to OUTPUT/embodied-FAMILY/RUN_NAME/")
    run_name: str | None = arg(None, "run folder name (default: the policy's label)")

    def __post_init__(self) -> None:
        super().__post_init__()
        require_count("--episodes", self.episodes)
        require_count("--image-size", self.image_size)
        require_count("--video", self.video, minimum=0)
        checked_latency(self.latency, self.latency_mode, FAMILIES[self.family].control_hz)
        self.probe_schedule()  # a bad --probe: an input error before anything runs

    def latency_setting(self) -> Latency | None:
        """The parsed ``--latency`` at the family's action rate (``None``: EB's protocol, the world waits)."""
        return parse_latency(self.latency, self.latency_mode, FAMILIES[self.family].control_hz)
