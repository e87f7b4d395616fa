"""What building a robustness variant costs next to its episode, per axis, for every family with axes.

For each episode: the family expert's whole clean episode is timed; then, in rounds of pairs, the clean
reset and each axis's level-5 variant reset (the axis's ``apply`` plus the env reset that loads the variant)
are timed back to back and subtracted, and each scene axis's ``apply`` is timed alone. EB navigation compiles a scene per episode, so every reset there
starts from a cold scene (as a variant's own scene always is); EB manipulation keeps one compiled scene
per task family. Times are this process's CPU seconds (rendering included: it runs on the CPU here), not
wall time: on a shared machine wall time also counts the other processes' turns. The issue's target: a
variant's build costs at most 10 % of its episode. Writes
``bench/results/robustness_build.{json,md}``.

    nice python bench/robustness_build.py --families nav manip --episodes 2
"""

from __future__ import annotations

import argparse
import datetime
import json
import platform
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).parent / "results"
TARGET = 0.10


def _setup(
    family: str, episodes: int, image_size: int
) -> tuple[Any, Any, list[dict[str, Any]], dict, Callable]:
    """(env, expert, episodes, axes, make_cold) of a family."""
    import gymnasium as gym

    import envs  # noqa: F401  (registers the ids)

    if family == "nav":
        from envs.navigation.episodes import SUBSETS, make_episode_set
        from envs.navigation.perturbations import AXES
        from policies.experts.navigation import ShortestPathExpert

        env = gym.make("SpatialArena/EBNavigation-v0", width=image_size, height=image_size)
        chosen = [e for s in SUBSETS for e in make_episode_set(s, n=episodes)]

        def cold() -> None:
            env.unwrapped._world = None  # (the next reset compiles its scene)

        return env, ShortestPathExpert(), chosen, AXES, cold
    from envs.manipulation.episodes import make_episode_set as manip_set
    from envs.manipulation.perturbations import AXES as MANIP_AXES
    from policies.experts.manipulation import EBManipulationExpert

    env = gym.make("SpatialArena/EBManipulation-v0", image_size=image_size)
    return env, EBManipulationExpert(), manip_set("base", n=episodes), MANIP_AXES, lambda: None


def _timed_reset(env: Any, options: dict[str, Any], cold: Callable[[], None]) -> tuple[Any, float]:
    cold()
    start = time.process_time()
    obs, _ = env.reset(options=options)
    return obs, time.process_time() - start


def _expert_episode(env: Any, expert: Any, episode: dict[str, Any], cold: Callable[[], None]) -> float:
    """Seconds of the clean episode the expert runs (its reset included)."""
    start = time.process_time()
    obs, _ = _timed_reset(env, {"episode": episode}, cold)
    expert.reset(None)
    done = False
    while not done:
        obs, _, terminated, truncated, _ = env.step(expert.act(obs))
        done = terminated or truncated
    return time.process_time() - start


def _paired_extras(env: Any, episode: dict[str, Any], axes: dict, cold: Callable, rounds: int) -> dict:
    """Per axis, ``rounds`` differences: the variant's reset (apply included) minus the clean reset just
    before it (pairs in one round share the machine's momentary load)."""
    from envs.perturbation import PerturbationSpec

    out: dict[str, list[float]] = {axis: [] for axis in axes}
    for _ in range(rounds):
        for axis in axes:
            _, clean = _timed_reset(env, {"episode": episode}, cold)
            spec = PerturbationSpec(axis, 5, 0)
            _, seconds = _timed_reset(env, {"episode": episode, "perturbation": spec}, cold)
            out[axis].append(seconds - clean)
    return out


def _apply_seconds(episode: dict[str, Any], axes: dict, rounds: int) -> dict[str, list[float]]:
    """Per scene axis, the seconds of its ``apply`` alone (the variant's episode edit)."""
    from envs.perturbation import PerturbationSpec

    out: dict[str, list[float]] = {}
    for name, axis in axes.items():
        if axis.apply is not None:
            for _ in range(rounds):
                start = time.process_time()
                axis.apply(episode, PerturbationSpec(name, 5, 0))
                out.setdefault(name, []).append(time.process_time() - start)
    return out


def build_cost(family: str, episodes: int, image_size: int, rounds: int = 3) -> dict[str, Any]:
    """Per axis: the median extra seconds a level-5 variant's build adds (paired with the clean reset),
    its ``apply`` alone, and the extra's share of the median clean expert episode."""
    import numpy as np

    env, expert, chosen, axes, cold = _setup(family, episodes, image_size)
    expert.bind(env)
    extra: dict[str, list[float]] = {axis: [] for axis in axes}
    applied: dict[str, list[float]] = {}
    episode_seconds = []
    for episode in chosen:
        env.reset(options={"episode": episode})  # (manip builds a task family's scene on first use)
        episode_seconds.append(_expert_episode(env, expert, episode, cold))
        for axis, values in _paired_extras(env, episode, axes, cold, rounds).items():
            extra[axis] += values
        for axis, values in _apply_seconds(episode, axes, rounds).items():
            applied.setdefault(axis, []).extend(values)
    env.close()
    median = float(np.median(episode_seconds))
    rows = {axis: _row(v, applied.get(axis), median, rounds) for axis, v in extra.items()}
    return {
        "episodes": len(chosen),
        "rounds": rounds,
        "episode_seconds_median": round(median, 4),
        "axes": rows,
    }


def _row(extras: list[float], applied: list[float] | None, episode: float, rounds: int) -> dict[str, Any]:
    """An axis's medians: over every pair, over each episode's first pair alone (nothing kept from an
    earlier build of the same episode: the cold cost), and of its ``apply``."""
    import numpy as np

    cold = float(np.median(extras[::rounds]))
    both = float(np.median(extras))
    return {
        "extra_seconds_median": round(both, 4),
        "extra_seconds_cold": round(cold, 4),
        "apply_seconds_median": None if applied is None else round(float(np.median(applied)), 4),
        "share_of_episode": round(max(0.0, both) / episode, 4),
        "share_of_episode_cold": round(max(0.0, cold) / episode, 4),
    }


def _apply(cell: dict[str, Any]) -> str:
    return "-" if cell.get("apply_seconds_median") is None else f"{cell['apply_seconds_median']:.4f}"


def markdown(result: dict[str, Any]) -> str:
    lines = [
        f"`{result['command']}` ({result['date']}, {result['machine']}; images {result['image_size']} px).",
        "CPU seconds of the measuring process. Level-5 variants; extra build: the variant's reset (its apply included) minus the clean reset of the "
        "same episode just before it, over rounds of pairs (medians; negative: within the noise); first build: "
        "each episode's first pair only (nothing kept from an earlier build of the same episode); apply: the "
        f"scene axis's episode edit alone. Target: at most {100 * TARGET:.0f} % of the episode.",
        "",
    ]
    for family, cost in result["families"].items():
        lines += [
            f"### {family}: {cost['episodes']} episodes, clean expert episode {cost['episode_seconds_median']:.3f} s",
            "",
            "| axis | extra build s (median) | share of the episode | first build s | share | apply s |",
            "|---|---:|---:|---:|---:|---:|",
            *[
                f"| {axis} | {c['extra_seconds_median']:.4f} | {100 * c['share_of_episode']:.1f} % "
                f"| {c['extra_seconds_cold']:.4f} | {100 * c['share_of_episode_cold']:.1f} % | {_apply(c)} |"
                for axis, c in cost["axes"].items()
            ],
            "",
        ]
    return "\n".join(lines)


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--families", nargs="+", default=["nav", "manip"], choices=["nav", "manip"])
    parser.add_argument("--episodes", type=int, default=2, help="episodes per subset (nav) or family (manip)")
    parser.add_argument("--image-size", type=int, default=112)
    parser.add_argument("--machine", default="2 shared cores", help="how to describe this machine")
    return parser.parse_args(argv)


def run(args: argparse.Namespace) -> dict[str, Any]:
    families = " ".join(args.families)
    return {
        "title": "Robustness variants: build cost per axis",
        "source": "bench/robustness_build.py",
        "command": f"python bench/robustness_build.py --families {families} --episodes {args.episodes} "
        f"--image-size {args.image_size}",
        "date": datetime.date.today().isoformat(),
        "machine": f"{platform.machine()}, {args.machine}",
        "image_size": args.image_size,
        "target_share": TARGET,
        "families": {f: build_cost(f, args.episodes, args.image_size) for f in args.families},
    }


if __name__ == "__main__":
    outcome = run(parse())
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "robustness_build.json").write_text(json.dumps(outcome, indent=1) + "\n")
    (RESULTS / "robustness_build.md").write_text(markdown(outcome))
    print(markdown(outcome))
