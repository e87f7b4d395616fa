"""``python -m benchmarks.libero --perturb``: the clean arm and the variants in one run, certificates from
the cache, and nothing of a variant's spec reaching the policy (context, observations, info)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest

pytest.importorskip("libero", reason="the libero extra is not installed")

from benchmarks.core import RunDir, unit_seed
from benchmarks.libero import main
from benchmarks.libero.benchmark import CERTIFYING_EXPERT
from benchmarks.robustness import certificate_key
from benchmarks.robustness.certificates import FORMAT
from envs.libero.distractors import POOL
from envs.libero.perturbations import FAMILY, paraphrase_instruction
from envs.libero.tasks import load_task
from envs.perturbation import PerturbationSpec
from policies.base import EpisodeContext, Policy


class SeesEverything(Policy):
    """Holds still and keeps everything it is shown."""

    name = "sees-everything"
    shown: ClassVar[list[Any]] = []

    def reset(self, context: EpisodeContext) -> None:
        self.shown.append(("context", context.instruction, dict(context.info), dict(context.extras)))

    def act(self, observation: Mapping[str, Any]) -> np.ndarray:
        text = {k: v for k, v in observation.items() if not isinstance(v, np.ndarray)}
        self.shown.append(("observation", sorted(observation), text))
        return np.array([0, 0, 0, 0, 0, 0, -1.0])


def _prefilled(path: Path, certified: dict[str, bool]) -> None:
    """Certificates for the variants of libero_goal task 7, state 0, as a run with 3 steps keys them."""
    episode = {
        "suite": "libero_goal",
        "task_index": 7,
        "init_state_index": 0,
        "max_steps": 3,
        "num_steps_wait": 10,
    }
    entries = {}
    for name, ok in certified.items():
        axis, level = name.split(":")
        spec = PerturbationSpec(axis, int(level), unit_seed(7, 0))
        entries[certificate_key(FAMILY, CERTIFYING_EXPERT, episode, spec)] = {
            "certified": ok,
            "axis": axis,
            "level": int(level),
            "episode_id": "libero_goal/07/00",
            "expert_steps": 1,
        }
    path.write_text(json.dumps({"format": FORMAT, "certificates": entries}))


def test_a_perturbed_run_pairs_variants_with_the_clean_arm_and_leaks_nothing(tmp_path):
    certificates = tmp_path / "certificates.json"
    _prefilled(certificates, {"paraphrase:4": True, "camera:2": False, "distractors:2": True})
    SeesEverything.shown.clear()
    summary = main(
        [
            "--policy",
            f"{__name__}:SeesEverything",
            "--suite",
            "libero_goal",
            "--tasks",
            "7",
            "--trials-per-task",
            "1",
            "--max-steps",
            "3",
            "--image-size",
            "32",
            "--no-progress",
            "--perturb",
            "paraphrase:4,camera:2,distractors:2",
            "--certificates",
            str(certificates),
            "--output",
            str(tmp_path),
            "--run-name",
            "robust",
        ]
    )
    records = RunDir(tmp_path / "libero" / "robust").merged_records()
    keys = [r["key"] for r in records]
    assert keys == [
        "libero_goal/07/00",
        "libero_goal/07/00~paraphrase:4",
        "libero_goal/07/00~camera:2",
        "libero_goal/07/00~distractors:2",
    ]
    extras = [r["result"]["extras"] for r in records]
    assert {e["episode_id"] for e in extras} == {"libero_goal/07/00"}
    assert [e.get("certified") for e in extras] == [None, True, False, True]
    assert all(e["certificate"]["cached"] for e in extras[1:])  # (no expert ran)
    table = summary.data["robustness"]
    assert (
        table["axes"]["camera"]["2"]["scored"] == 0
        and table["axes"]["camera"]["2"]["certification_rate"] == 0
    )
    assert table["axes"]["paraphrase"]["4"]["scored"] == 1
    # what the policy was shown: the clean instruction or the table's wording, and no spec field
    contexts = [s for s in SeesEverything.shown if s[0] == "context"]
    instruction = "turn on the stove"
    assert [c[1] for c in contexts] == [
        instruction,
        paraphrase_instruction(instruction, 4),
        instruction,
        instruction,
    ]
    shown = json.dumps(SeesEverything.shown, default=str)
    for word in ("paraphrase", "camera", "distractor", "~", "level", "perturb", "certif"):
        assert word not in shown, word
    scene = load_task("libero_goal", 7).bddl_file.read_text()
    for category in POOL:  # no added object is named
        assert category in scene or category.replace("_", " ") not in shown.replace("_", " "), category
