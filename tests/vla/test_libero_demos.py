"""``spatial-arena demos --env libero``: dispatch, options, output folder rules and (slow) real recordings
read back through both readers."""

import json

import h5py
import numpy as np
import pytest

from policies.config_cli import InputError
from vla import demos
from vla.libero_demos import SUMMARY, LiberoDemoConfig, hdf5_demo, lerobot_frames, prepare_out, task_attempts


def test_env_flag_picks_the_command_and_keeps_the_rest():
    assert demos.split_env(["--task", "open_drawer"]) == ("calvin", ["--task", "open_drawer"])
    assert demos.split_env(["--suite", "x", "--env", "libero", "--out", "o"]) == (
        "libero",
        ["--suite", "x", "--out", "o"],
    )
    assert demos.split_env(["--env=libero"]) == ("libero", [])
    with pytest.raises(InputError, match="--env 'mujoco'"):
        demos.split_env(["--env", "mujoco"])


def test_attempts_cycle_the_chosen_states_with_their_own_seeds():
    config = LiberoDemoConfig(suite="libero_goal", tasks="7", episodes=2, out="x", states="40-41,45", seed=5)
    attempts = list(task_attempts(config, 7))
    assert len(attempts) == 6  # 3 x --episodes
    assert [(a.init_state_index, a.seed) for a in attempts] == [
        (40, 5),
        (41, 6),
        (45, 7),
        (40, 8),
        (41, 9),
        (45, 10),
    ]
    assert {a.max_steps for a in attempts} == {300}  # libero_goal's protocol budget


def test_out_must_be_empty_unless_resumed_with_the_same_settings(tmp_path):
    out = tmp_path / "run"
    config = LiberoDemoConfig(tasks="0", out=str(out))
    assert prepare_out(config) == {}  # absent: a fresh run
    out.mkdir()
    (out / "x").write_text("")
    with pytest.raises(InputError, match=r"--resume .* --overwrite"):
        prepare_out(config)
    config.resume = True
    with pytest.raises(InputError, match=r"demos_libero\.json is missing"):
        prepare_out(config)
    earlier = {"config": {**config.__dict__, "workers": 4, "resume": False}, "tasks": {}}
    (out / SUMMARY).write_text(json.dumps(earlier))
    assert prepare_out(config)["tasks"] == {}  # same settings (the worker count may change)
    config.episodes = 99
    with pytest.raises(InputError, match="other settings \\(episodes\\)"):
        prepare_out(config)
    config.resume, config.overwrite = False, True
    assert prepare_out(config) == {} and not out.exists()


def test_a_recording_becomes_libero_and_lerobot_rows():
    steps = 3
    frames = {
        "agentview_rgb": np.arange(steps * 4 * 4 * 3, dtype=np.uint8).reshape(steps, 4, 4, 3),
        "eye_in_hand_rgb": np.zeros((steps, 4, 4, 3), np.uint8),
        "state": np.arange(steps * 8, dtype=np.float32).reshape(steps, 8),
        "gripper_states": np.zeros((steps, 2)),
        "joint_states": np.zeros((steps, 7)),
        "robot_states": np.zeros((steps, 9)),
        "states": np.zeros((steps, 5)),
        "actions": np.ones((steps, 7), np.float32),
        "rewards": np.array([0, 0, 1], np.uint8),
    }
    demo = hdf5_demo(frames)
    assert list(demo["dones"]) == [0, 0, 1]
    np.testing.assert_array_equal(demo["obs"]["ee_ori"], frames["state"][:, 3:6])
    row = lerobot_frames(frames)
    np.testing.assert_array_equal(
        row["observation.images.agentview_rgb"][1], frames["agentview_rgb"][1][::-1]
    )
    assert set(row) == {
        "observation.images.agentview_rgb",
        "observation.images.eye_in_hand_rgb",
        "observation.state",
        "action",
    }


@pytest.mark.slow
def test_recorded_libero_demos_read_back_through_both_readers(tmp_path):
    """One task, one kept episode at 32 px, both formats; then both readers agree on it (about a minute)."""
    from vla.data import open_dataset
    from vla.libero_demos import generate

    pytest.importorskip("libero")
    out = tmp_path / "demos"
    config = LiberoDemoConfig(suite="libero_goal", tasks="7", episodes=1, out=str(out), image_size=32)
    summary = generate(config)
    row = summary["tasks"]["7"]
    assert row["done"] and row["kept"] == 1 and row["attempts"] == row["kept"] + row["discarded"]
    steps = row["frames"]
    files = list((out / "libero-hdf5" / "libero_goal").glob("*_demo.hdf5"))
    assert [f.name for f in files] == ["turn_on_the_stove_demo.hdf5"]
    with h5py.File(files[0], "r") as f:
        demo = f["data/demo_0"]
        assert demo["actions"].shape == (steps, 7) and demo["obs/agentview_rgb"].shape == (steps, 32, 32, 3)
        assert demo["states"].shape[0] == steps and demo["robot_states"].shape == (steps, 9)
        assert (
            int(demo["rewards"][-1]) == 1
            and json.loads(f["data"].attrs["problem_info"])["language_instruction"] == "turn on the stove"
        )
    cams = ("agentview_rgb", "eye_in_hand_rgb")
    hdf5 = open_dataset(out / "libero-hdf5", cameras=cams, image_size=32)
    lerobot = open_dataset(out / "lerobot", cameras=cams, image_size=32)
    assert len(hdf5) == len(lerobot) == steps - 3 and lerobot.data_format == hdf5.data_format == "libero"
    for i in (0, len(hdf5) - 1):
        a, b = hdf5[i], lerobot[i]
        assert a.instruction == b.instruction == "turn on the stove"
        np.testing.assert_allclose(a.actions, b.actions, atol=1e-6)
        for x, y in zip(a.images, b.images, strict=True):  # same frame, H.264 against raw
            assert np.abs(x.astype(int) - y.astype(int)).mean() < 8
    again = generate(LiberoDemoConfig(**{**config.__dict__, "resume": True}))  # nothing left to do
    assert again["kept"] == 1
