"""Expert demonstrations on the play-table in CALVIN's layout, and a trained tiny VLA in closed loop."""

import json

import numpy as np
import pytest

from envs.calvin import constants as C
from envs.calvin.instructions import instruction_for
from envs.calvin.sequences import is_valid_chain
from envs.files import load_pickled_npy
from vla.calvin_recording import sent_action
from vla.data import CalvinWriter, open_dataset
from vla.data.calvin import EPISODES_FILE, LANG_FILE, frame_path
from vla.data.calvin_embed import EMBEDDINGS_FILE
from vla.demos import DemoConfig, _setups, attempt_rng, generate, main, sample_start, task_list

TASK = "turn_on_led"  # the quickest task without setup (about 40 steps)


@pytest.fixture(scope="module")
def two_demos(tmp_path_factory):
    """Two turn_on_led demonstrations with both cameras, written by the CLI."""
    root = tmp_path_factory.mktemp("demos")
    summary = main(["--task", TASK, "--episodes", "2", "--out", str(root), "--seed", "3"])
    return root, summary


def _frames(split, first, last):
    return [dict(np.load(frame_path(split, t))) for t in range(first, last + 1)]


def test_dataset_layout_and_reader_chunks(two_demos):
    root, summary = two_demos
    split = root / "training"
    episodes = np.load(split / EPISODES_FILE)
    assert episodes.shape == (2, 2) and episodes[0, 0] == 0 and episodes[1, 0] == episodes[0, 1] + 1
    report = json.loads((root / "demos_training.json").read_text())
    assert report == json.loads(json.dumps(summary)) and report["kept"] == 2
    assert report["kept_fraction"] == 2 / report["attempts"]
    lang = load_pickled_npy(split / "lang_annotations" / "auto_lang_ann.npy")
    assert lang["language"]["ann"] == [instruction_for(TASK)] * 2 and lang["language"]["task"] == [TASK] * 2
    assert [tuple(w) for w in lang["info"]["indx"]] == [tuple(e) for e in episodes]

    frames = _frames(split, 0, int(episodes[-1, 1]))
    assert frames[0]["rgb_static"].shape == (200, 200, 3) and frames[0]["rgb_gripper"].shape == (84, 84, 3)
    rel = np.stack([f["rel_actions"] for f in frames])
    assert np.all(np.abs(rel[:, :6]) <= 1.0) and set(np.unique(rel[:, 6])) <= {-1.0, 1.0}
    assert {-1.0, 1.0} <= set(np.unique(rel[:, 6]))  # the gripper closes on the button and opens again
    # each demonstration ends 9 steps (tail) after its successful step, so every frame up to success starts a
    # chunk
    for row in report["tasks"][TASK]["episodes"]:
        if row["success"]:
            assert row["steps"] == row["success_step"] + 1 + 9

    dataset = open_dataset(root, cameras=["rgb_static", "rgb_gripper"])
    lengths = episodes[:, 1] - episodes[:, 0] + 1
    assert len(dataset) == int(np.sum(lengths - 9))  # chunk 10 stays inside each demonstration
    sample = dataset[len(dataset) - 1]  # last sample: the chunk ends on the last frame of episode 2
    np.testing.assert_allclose(sample.actions, rel[-10:], rtol=0, atol=1e-6)
    assert (
        sample.instruction == instruction_for(TASK)
        and [im.shape for im in sample.images] == [(224, 224, 3)] * 2
    )


def test_recorded_actions_are_the_sent_ones(two_demos):
    """Replaying the stored rel_actions open loop from the stored start reproduces every stored state."""
    from envs.calvin.env import PlayTableEnv

    root, summary = two_demos
    split = root / "training"
    first, last = (int(v) for v in np.load(split / EPISODES_FILE)[0])
    frames = _frames(split, first, last)
    start = next(e for e in summary["tasks"][TASK]["episodes"] if e["success"])
    neutral = np.asarray(C.NEUTRAL_ROBOT_OBS[7:14])
    # the start joints were perturbed
    assert not np.allclose(frames[0]["robot_obs"][7:14], neutral, atol=1e-3)
    np.testing.assert_allclose(frames[0]["robot_obs"][7:14], start["reset_robot_obs"][7:14], atol=1e-3)

    env = PlayTableEnv(cameras=())
    try:
        obs, _ = env.reset(
            options={
                "robot_obs": start["reset_robot_obs"],
                "scene_obs": start["reset_scene_obs"],
                "task": TASK,
            }
        )
        for t, frame in enumerate(frames):
            np.testing.assert_array_equal(obs["robot_obs"], frame["robot_obs"], err_msg=f"frame {t}")
            np.testing.assert_array_equal(obs["scene_obs"], frame["scene_obs"], err_msg=f"frame {t}")
            pos, orn = env.target_pose()
            np.testing.assert_allclose(
                frame["actions"][:3], pos + frame["rel_actions"][:3] * 0.02, atol=1e-12
            )
            np.testing.assert_allclose(
                frame["actions"][3:6], orn + frame["rel_actions"][3:6] * 0.05, atol=1e-12
            )
            obs, _, terminated, _, info = env.step(frame["rel_actions"].astype(np.float32))
            assert not info["action_clipped"]
            if t == start["success_step"]:
                assert terminated
    finally:
        env.close()


def test_same_seed_same_dataset_and_several_tasks(tmp_path):
    def run(out):
        generate(
            DemoConfig(
                task="turn_on_led,move_slider_left", episodes=1, out=str(out), seed=5, cameras="gripper"
            )
        )
        split = out / "training"
        return sorted(p.name for p in split.glob("*.npz")), split

    names_a, split_a = run(tmp_path / "a")
    names_b, split_b = run(tmp_path / "b")
    assert names_a == names_b
    for name in names_a[::7]:
        a, b = np.load(split_a / name), np.load(split_b / name)
        assert sorted(a.files) == ["actions", "rel_actions", "rgb_gripper", "robot_obs", "scene_obs"]
        assert all(np.array_equal(a[k], b[k]) for k in a.files)
    lang = load_pickled_npy(split_a / "lang_annotations" / "auto_lang_ann.npy")
    assert lang["language"]["task"] == ["turn_on_led", "move_slider_left"]
    # only the gripper view was rendered: asking the reader for the static view is a clear error
    assert len(open_dataset(split_a, cameras=["rgb_gripper"])) > 0
    with pytest.raises(KeyError, match="rgb_static"):
        open_dataset(split_a, cameras=["rgb_static"])[0]


def test_starts_are_valid_varied_and_seeded():
    a = [sample_start("open_drawer", attempt_rng(0, 0, i)) for i in range(12)]
    b = [sample_start("open_drawer", attempt_rng(0, 0, i)) for i in range(12)]
    assert all(
        np.array_equal(x.scene_obs, y.scene_obs) and np.array_equal(x.robot_obs, y.robot_obs)
        for x, y in zip(a, b)
    )
    for start in a:
        assert start.symbolic["drawer"] == "closed" and start.scene_obs[1] == 0.0 and start.prefix == []
        assert is_valid_chain(start.symbolic, ["open_drawer"])
        yaws = start.scene_obs[[11, 17, 23]]
        assert np.all((yaws >= np.pi / 2 - np.pi / 8) & (yaws <= np.pi / 2 + np.pi / 8))
        assert np.all(start.robot_obs[7:14] >= C.JOINT_LOWER) and np.all(
            start.robot_obs[7:14] <= C.JOINT_UPPER
        )
    joints = np.stack([s.robot_obs[7:14] for s in a])
    assert 0.05 < np.std(joints - np.asarray(C.NEUTRAL_ROBOT_OBS[7:14])) < 0.2  # default noise 0.1 rad
    assert len({s.scene_obs[11] for s in a}) == 12  # yaws drawn per start, not per symbolic state
    still = sample_start("open_drawer", attempt_rng(0, 0, 0), joint_noise=0.0)
    np.testing.assert_array_equal(still.robot_obs, C.NEUTRAL_ROBOT_OBS)


def test_tasks_needing_setup_get_the_shortest_valid_prefix():
    from envs.calvin.sequences import symbolic_initial_states

    setups = _setups("place_in_drawer")  # never valid from an initial state: something must be grasped first
    assert {len(prefix) for _, prefix in setups} == {1}
    assert {prefix[0].split("_")[0] for _, prefix in setups} == {"lift"}
    states = symbolic_initial_states()
    assert all(
        states[i]["drawer"] == "open" and is_valid_chain(states[i], [*p, "place_in_drawer"])
        for i, p in setups
    )
    assert sample_start("place_in_drawer", attempt_rng(0, 0, 0)).prefix[0].startswith("lift_")


def test_sent_action_clips_like_calvin_and_bad_input_is_an_error(tmp_path):
    np.testing.assert_array_equal(
        sent_action(np.array([1.5, -2, 0.3, 0, 0, 0, 0.2])), [1, -1, 0.3, 0, 0, 0, 1]
    )
    assert sent_action(np.zeros(7))[6] == -1.0  # CALVIN: gripper > 0 opens, anything else closes
    with pytest.raises(ValueError, match="open_drawre"):
        task_list("open_drawre")
    with pytest.raises(ValueError, match="twice"):
        task_list("open_drawer,open_drawer")
    with pytest.raises(ValueError, match="--out"):
        DemoConfig(task="open_drawer").check()
    with pytest.raises(ValueError, match="--cameras"):
        DemoConfig(out=str(tmp_path), cameras="wrist").check()
    with pytest.raises(ValueError, match="cameras"):
        CalvinWriter(tmp_path / "w", cameras=("rgb_wrist",))


def test_trained_checkpoint_runs_the_calvin_benchmark(two_demos, tiny_vlm, tmp_path):
    """vla.train on two demonstrations, then `benchmarks.calvin --checkpoint` end to end on the play-table."""
    from benchmarks.calvin import main as calvin_main
    from benchmarks.core import RunDir
    from vla.train import main as train_main

    root, _ = two_demos
    run = tmp_path / "run"
    train_main(
        [
            "--backbone",
            str(tiny_vlm("qwen2_5_vl")),
            "--data",
            str(root),
            "--output",
            str(run),
            "--batch-size",
            "4",
            "--max-steps",
            "3",
            "--lr",
            "1e-3",
            "--warmup-steps",
            "1",
            "--num-workers",
            "0",
            "--log-every",
            "1",
        ]
    )
    log = [json.loads(line) for line in (run / "train_log.jsonl").read_text().splitlines()]
    assert [r["step"] for r in log] == [1, 2, 3] and all(np.isfinite(r["loss"]) for r in log)
    checkpoint = run / "checkpoints" / "last"
    norm = json.loads((checkpoint / "normalization.json").read_text())
    assert norm["statistics"]["count"] == len(open_dataset(root))  # statistics of the generated demos

    summary = calvin_main(
        [
            "--checkpoint",
            str(checkpoint),
            "--num-sequences",
            "1",
            "--ep-len",
            "10",
            "--execute-steps",
            "5",
            "--output",
            str(tmp_path / "eval"),
            "--no-progress",
        ]
    )
    (record,) = RunDir(tmp_path / "eval" / "calvin" / "vla-run-last").merged_records()
    subtask = record["result"]["extras"]["subtasks"][0]
    assert record["status"] == "ok" and subtask["steps"] == 10 and subtask["policy_stats"]["model_calls"] == 2
    assert summary.data["policy"] == "vla-run-last" and summary.data["chains"] == 1
    manifest = json.loads((tmp_path / "eval" / "calvin" / "vla-run-last" / "manifest.json").read_text())
    assert manifest["policy"]["options"]["checkpoint"] == str(checkpoint)


def test_failed_attempts_are_counted_not_written(tmp_path, capsys):
    summary = generate(
        DemoConfig(task=TASK, episodes=1, out=str(tmp_path), ep_len=5, max_attempts=2, cameras="gripper")
    )
    row = summary["tasks"][TASK]
    assert (row["attempts"], row["kept"], row["kept_fraction"]) == (2, 0, 0.0)
    assert [e["steps"] for e in row["episodes"]] == [5, 5] and not any(e["success"] for e in row["episodes"])
    assert not list((tmp_path / "training").glob("episode_*.npz"))
    assert np.load(tmp_path / "training" / EPISODES_FILE).shape == (0, 2)
    assert "only 0 of 1 demonstrations succeeded in 2 attempts" in capsys.readouterr().out


def test_lang_encoder_embeds_the_demonstrations(sentence_encoder, tmp_path):
    """A validation split with ``--lang-encoder``: the demonstration carries the evaluation instruction, so its
    ``language.emb`` row is that task's vector in ``embeddings.npy``."""
    encoder = str(sentence_encoder)
    generate(DemoConfig(TASK, 1, str(tmp_path), split="validation", cameras="gripper", lang_encoder=encoder))
    split = tmp_path / "validation"
    emb = load_pickled_npy(split / LANG_FILE)["language"]["emb"]
    table = load_pickled_npy(split / EMBEDDINGS_FILE)
    assert emb.shape == (1, 1, 32) and table[TASK]["ann"] == [instruction_for(TASK)]
    np.testing.assert_array_equal(emb, table[TASK]["emb"])
