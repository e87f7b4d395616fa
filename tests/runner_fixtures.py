"""A small real benchmark for the runner tests: seeded random-policy CartPole episodes.

Lives in its own module so spawned worker processes can import it. ``crash`` maps unit keys to how the
worker process dies there: "once" (first attempt only, tracked by a marker file) or "always".
``heartbeat`` names a file each unit appends ``pid`` lines to for ``heartbeat_s`` seconds before its
episode, as a worker calling a model for a long time would. ``step_s`` > 0 makes the worker a closed-loop
:class:`EpisodeWorker` whose units take ``step_s`` per step (a model call each), for progress inside a unit.
"""

from __future__ import annotations

import os
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from benchmarks.core import Benchmark, EpisodeWorker, Summary, WorkUnit, score_cell, unit_seed


@dataclass
class CartPoleConfig:
    episodes: int = 6
    seed: int = 0
    marker_dir: str = ""
    crash: dict[str, str] = field(default_factory=dict)
    raise_on: list[str] = field(default_factory=list)
    raise_once: list[str] = field(default_factory=list)  # raise on the first attempt only (a marker file)
    workers: int = 1
    limit: int | None = None
    heartbeat: str = ""
    heartbeat_s: float = 60.0
    step_s: float = 0.0


class CartPoleWorker:
    def __init__(self, config: CartPoleConfig) -> None:
        self.config = config
        self.env = gym.make("CartPole-v1")
        self.decisions: list[dict[str, Any]] = []

    def run(self, unit: WorkUnit) -> dict[str, Any]:
        self.decisions = []
        mode = self.config.crash.get(unit.key)
        marker = Path(self.config.marker_dir) / f"{unit.key}.crashed"
        if mode == "always" or (mode == "once" and not marker.exists()):
            marker.touch()
            os.kill(os.getpid(), signal.SIGKILL)
        if self.config.heartbeat:
            _beat(Path(self.config.heartbeat), self.config.heartbeat_s)
        rng = np.random.default_rng(unit.seed)
        self.decisions.append({"step": 0, "action": int(rng.integers(2))})  # the random policy's first choice
        if unit.key in self.config.raise_on:
            raise ValueError(f"bad unit {unit.key}")
        raised = Path(self.config.marker_dir) / f"{unit.key}.raised"
        if unit.key in self.config.raise_once and not raised.exists():
            raised.touch()
            raise ValueError(f"bad unit {unit.key}, this time")
        if self.config.marker_dir:
            with (Path(self.config.marker_dir) / "runs.log").open("a") as f:
                f.write(unit.key + "\n")
        self.env.reset(seed=unit.seed)
        total, steps, done, action = 0.0, 0, False, self.decisions[0]["action"]
        while not done:
            _, reward, terminated, truncated, _ = self.env.step(action)
            total, steps, done = total + reward, steps + 1, terminated or truncated
            action = int(rng.integers(2))
            if steps < 3:
                self.decisions.append({"step": steps, "action": action})
        return {"return": total, "steps": steps}

    def unit_decisions(self) -> list[dict[str, Any]]:
        """The policy's first choices in the unit run last, as an MLLM worker's model calls would be."""
        return self.decisions

    def close(self) -> None:
        self.env.close()


def _beat(path: Path, seconds: float) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        with path.open("a") as f:
            f.write(f"{os.getpid()}\n")
        time.sleep(0.05)


class SlowStepsWorker(EpisodeWorker):
    """CartPole episodes whose every step waits ``step_s`` (as for a model's answer), captioned by step."""

    def __init__(self, config: CartPoleConfig) -> None:
        super().__init__(config.marker_dir, video_units=0)
        self.config, self.env = config, gym.make("CartPole-v1")

    def run_unit(self, unit: WorkUnit, on_step) -> dict[str, Any]:
        self.env.reset(seed=unit.seed)
        rng, steps, done = np.random.default_rng(unit.seed), 0, False
        on_step and on_step({}, [f"balance the pole ({unit.key})", "start"])
        while not done and steps < 40:
            time.sleep(self.config.step_s)
            _, _, terminated, truncated, _ = self.env.step(int(rng.integers(2)))
            steps, done = steps + 1, terminated or truncated
            on_step and on_step({}, [f"balance the pole ({unit.key})", f"step {steps}"])
        return {"return": float(steps), "steps": steps}


def build_worker(config: CartPoleConfig) -> CartPoleWorker | SlowStepsWorker:
    return SlowStepsWorker(config) if config.step_s else CartPoleWorker(config)


class CartPoleBenchmark(Benchmark):
    name = "cartpole"

    def units(self) -> list[WorkUnit]:
        return [
            WorkUnit(i, f"ep-{i:03d}", unit_seed(self.config.seed, i), {})
            for i in range(self.config.episodes)
        ]

    def worker_factory(self):
        import functools

        return functools.partial(build_worker, self.config)

    def summarize(self, records, run_dir, tally) -> Summary:
        returns = [r["result"]["return"] for r in records if r["status"] == "ok"]
        mean = float(np.mean(returns)) if returns else None
        return Summary(
            {"mean_return": mean, "episodes": len(returns)},
            f"| mean return | errored |\n|---|---|\n| {score_cell(mean, '.2f')} | {tally.errored_cell()} |",
        )

    def progress_stats(self, records):
        returns = [r["result"]["return"] for r in records if r["result"]]
        return {"mean_return": f"{np.mean(returns):.1f}" if returns else "-"}


class ThreadsWorker:
    """Reports the threads torch and OpenMP were given in its process."""

    def run(self, unit: WorkUnit) -> dict[str, Any]:
        import torch

        return {"torch": torch.get_num_threads(), "omp": os.environ.get("OMP_NUM_THREADS")}

    def close(self) -> None:
        pass


def threads_worker() -> ThreadsWorker:
    return ThreadsWorker()
