"""LIBERO protocol constants and registration: no scene is built here."""

import json
import subprocess
import sys

import gymnasium as gym
import pytest

import envs
from envs.libero import protocol

pytest.importorskip("libero", reason="the libero extra is not installed")


def test_published_protocol_numbers():
    assert protocol.MAX_STEPS == {
        "libero_spatial": 220,
        "libero_object": 280,
        "libero_goal": 300,
        "libero_10": 520,
        "libero_90": 400,
    }
    assert protocol.TRIALS_PER_TASK == 50
    assert protocol.NUM_STEPS_WAIT == 10
    assert protocol.IMAGE_SIZE == 256
    assert protocol.settle_action().tolist() == [0, 0, 0, 0, 0, 0, -1]
    assert sum(protocol.TASK_COUNTS.values()) == 130 == len(protocol.all_tasks())


def test_task_counts_match_libero_task_map():
    from envs.libero.bootstrap import ensure_libero

    ensure_libero()
    from libero.libero.benchmark.libero_suite_task_map import libero_task_map

    assert {suite: len(libero_task_map[suite]) for suite in protocol.SUITES} == protocol.TASK_COUNTS


def test_every_task_is_registered_with_json_kwargs():
    ids = [i for i in envs.registered_ids() if i.startswith("SpatialArena/Libero-")]
    assert len(ids) == 130
    spec = gym.spec("SpatialArena/Libero-libero_90-89-v0")
    assert spec.entry_point == "envs.libero.env:LiberoEnv"
    assert spec.kwargs == {"suite": "libero_90", "task_index": 89}
    assert json.loads(json.dumps(spec.kwargs)) == spec.kwargs
    assert protocol.env_id("libero_10", 0) == "SpatialArena/Libero-libero_10-0-v0"


def test_registration_imports_no_simulator():
    code = "import sys, envs; print(sorted(m for m in ('libero.libero', 'robosuite', 'torch', 'mujoco') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize(
    ("suite", "index", "message"),
    [
        ("libero_100", 0, "unknown LIBERO suite"),
        ("libero_10", 10, "out of range"),
        ("libero_90", -1, "out of range"),
        ("libero_goal", 1.0, "must be an int"),
        ("libero_goal", True, "must be an int"),
    ],
)
def test_bad_task_names_the_input(suite, index, message):
    with pytest.raises(ValueError, match=message):
        protocol.check_task(suite, index)
