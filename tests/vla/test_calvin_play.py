"""Expert play data (``demos --env calvin --scenes ... --frames ...``) in CALVIN's layout and as LeRobot v3."""

import json

import numpy as np
import pytest
import yaml

from envs.calvin.instructions import CALVIN_TASKS, EVAL_INSTRUCTIONS, train_instructions
from envs.calvin.sequences import next_symbolic_state, symbolic_initial_states
from envs.files import load_pickled_npy
from policies.config_cli import InputError
from vla.calvin_play import WINDOW, PlayConfig, next_task, options, task_list, wants_play
from vla.data import open_dataset
from vla.data.calvin import EPISODES_FILE, LANG_FILE, frame_path
from vla.data.calvin_embed import EMBEDDINGS_FILE, SentenceEncoder, embed
from vla.demos import main

FRAMES = 100  # scene A, seed 0: one pick-and-push subtask succeeds well inside the budget


@pytest.fixture(scope="module")
def play(tmp_path_factory):
    root = tmp_path_factory.mktemp("play")
    summary = main(
        ["--env", "calvin", "--scenes", "A", "--frames", str(FRAMES), "--seed", "0", "--out", str(root)]
    )
    return root, summary


def _frames(split, last):
    return [dict(np.load(frame_path(split, t))) for t in range(last + 1)]


def test_play_writes_calvins_layout_with_depth_and_scene_info(play):
    root, summary = play
    split = root / "training"
    episodes = np.load(split / EPISODES_FILE)
    assert episodes.tolist() == [[0, FRAMES - 1]]  # one continuous episode: no reset between subtasks
    assert load_pickled_npy(split / "scene_info.npy") == {"calvin_scene_A": [0, FRAMES - 1]}
    frames = _frames(split, FRAMES - 1)
    shapes = {k: v.shape for k, v in frames[0].items()}
    assert shapes == {
        "rgb_static": (200, 200, 3),
        "rgb_gripper": (84, 84, 3),
        "depth_static": (200, 200),
        "depth_gripper": (84, 84),
        "robot_obs": (15,),
        "scene_obs": (24,),
        "actions": (7,),
        "rel_actions": (7,),
    }
    depth = frames[0]["depth_static"]
    assert (
        depth.dtype == np.float32 and 0.5 < float(np.median(depth)) < 10
    )  # metres from the camera to the table
    row = summary["scenes"]["A"]
    assert row["frames"] == FRAMES and row["succeeded"] >= 1
    assert row["subtasks"] == row["succeeded"] + row["failed"] + row["cut_by_frame_budget"]
    assert json.loads((root / "play_training.json").read_text()) == json.loads(json.dumps(summary))


def test_annotation_windows_follow_successes_with_training_sentences_only(play):
    root, summary = play
    split = root / "training"
    lang = load_pickled_npy(split / LANG_FILE)
    windows, anns, tasks = lang["info"]["indx"], lang["language"]["ann"], lang["language"]["task"]
    assert len(windows) == len(anns) == len(tasks) == summary["scenes"]["A"]["succeeded"]
    held_out = set(EVAL_INSTRUCTIONS.values())
    for (first, last), ann, task in zip(windows, anns, tasks):
        assert 0 <= first <= last < FRAMES and last - first + 1 <= WINDOW
        assert ann in train_instructions()[task] and ann not in held_out
    assert "emb" not in lang["language"]  # without --lang-encoder: documented, added later on demand


def test_statistics_yaml_is_calvins_normalisation_of_the_frames(play):
    split = play[0] / "training"
    stats = yaml.safe_load((split / "statistics.yaml").read_text())
    frames = _frames(split, FRAMES - 1)
    for key in ("robot_obs", "scene_obs"):
        (entry,) = stats[key]
        rows = np.stack([f[key] for f in frames])
        assert entry["_target_"].endswith("NormalizeVector")
        np.testing.assert_allclose(entry["mean"], rows.mean(0), atol=1e-9)
        np.testing.assert_allclose(entry["std"], rows.std(0), atol=1e-9)
    actions = np.stack([f["actions"] for f in frames])
    np.testing.assert_allclose(stats["act_min_bound"], actions.min(0))
    np.testing.assert_allclose(stats["act_max_bound"], actions.max(0))
    config = yaml.safe_load((split / ".hydra" / "merged_config.yaml").read_text())
    assert "calvin_scene_A" in json.dumps(config)


def test_readers_round_trip_calvin_and_lerobot(play):
    root, _ = play
    split = root / "training"
    lang = load_pickled_npy(split / LANG_FILE)
    (first, last), ann = lang["info"]["indx"][0], lang["language"]["ann"][0]
    rel = np.stack([np.load(frame_path(split, t))["rel_actions"] for t in range(first, last + 10)])

    calvin = open_dataset(root, cameras=["rgb_static", "rgb_gripper"], image_size=32)
    sample = calvin[0]
    assert [im.shape for im in sample.images] == [(32, 32, 3)] * 2 and sample.instruction == ann
    np.testing.assert_allclose(sample.actions, rel[:10], atol=1e-6)

    lerobot = open_dataset(root / "lerobot", cameras=["rgb_static"], image_size=32)
    first_sample = lerobot[0]
    assert first_sample.instruction == ann and first_sample.images[0].shape == (32, 32, 3)
    np.testing.assert_allclose(first_sample.actions, rel[:10], atol=1e-6)
    assert len(lerobot) == len(calvin)  # each window plus its chunk tail, as the CALVIN reader samples it


def test_play_data_trains(play, tiny_vlm, tmp_path):
    from vla.train import main as train_main

    run = tmp_path / "run"
    argv = ["--backbone", str(tiny_vlm("qwen2_5_vl")), "--data", str(play[0]), "--output", str(run)]
    argv += ["--batch-size", "2", "--max-steps", "2", "--num-workers", "0", "--log-every", "1"]
    train_main(argv)
    log = [json.loads(line) for line in (run / "train_log.jsonl").read_text().splitlines()]
    assert [r["step"] for r in log] == [1, 2] and all(np.isfinite(r["loss"]) for r in log)


def test_next_task_draws_only_valid_subtasks_and_walks_grasped_states():
    state = symbolic_initial_states()[0]
    rng = np.random.default_rng(0)
    seen = set()
    for _ in range(200):
        task, after = next_task(state, rng, tuple(CALVIN_TASKS))
        assert next_symbolic_state(state, task) == after
        seen.add(task)
        state = after
    assert "place_in_slider" in seen or "place_in_drawer" in seen or "stack_block" in seen  # after a lift
    lifted = next_symbolic_state(
        {**symbolic_initial_states()[0], "red_block": "table"}, "lift_red_block_table"
    )
    assert lifted is not None and lifted["grasped"] == 1
    assert next_symbolic_state(symbolic_initial_states()[0], "place_in_slider") is None  # nothing in the hand
    with pytest.raises(ValueError, match="fly_away"):
        next_symbolic_state(state, "fly_away")


def test_tasks_restrict_the_draws_and_a_dead_end_is_seen():
    assert task_list("") == tuple(CALVIN_TASKS)
    assert task_list(" open_drawer,close_drawer,open_drawer") == ("open_drawer", "close_drawer")
    state, rng = symbolic_initial_states()[0], np.random.default_rng(0)
    for _ in range(10):  # the drawer alternates: exactly one of the two is valid from every state
        task, after = next_task(state, rng, ("open_drawer", "close_drawer"))
        assert task == ("close_drawer" if state["drawer"] == "open" else "open_drawer")
        state = after
    lifted = next_symbolic_state({**state, "red_block": "table"}, "lift_red_block_table")
    assert options(state, ("lift_red_block_table",)) == [] or state["red_block"] == "table"
    assert lifted is not None and options(lifted, ("lift_red_block_table",)) == []  # play resets here
    for text, word in (("open_drawer,fly_away", "--tasks fly_away"), ("place_in_slider", "none is feasible")):
        with pytest.raises(InputError, match=word):
            PlayConfig(out="x", scenes="A", tasks=text).check()


def test_restricted_play_records_only_the_chosen_tasks_in_whole_subtask_windows(tmp_path):
    """``--window 360``: the first subtask (the expert's reach to the handle and the drawer move, longer
    than CALVIN's 64 frames) is annotated from its first frame; both formats hold the same windows."""
    argv = ["--scenes", "D", "--frames", "160", "--tasks", "open_drawer,close_drawer", "--window", "360"]
    row = main(["--env", "calvin", *argv, "--out", str(tmp_path)])["scenes"]["D"]
    assert row["succeeded"] >= 1 and set(row["tasks"]) <= {"open_drawer", "close_drawer"}
    lang = load_pickled_npy(tmp_path / "training" / LANG_FILE)
    tasks, windows = lang["language"]["task"], lang["info"]["indx"]
    assert tasks and set(tasks) <= {"open_drawer", "close_drawer"}
    assert windows[0][0] == 0 and windows[0][1] + 1 > WINDOW
    lerobot = open_dataset(tmp_path / "lerobot", cameras=["rgb_static"], image_size=32)
    assert len(lerobot) == len(open_dataset(tmp_path, cameras=["rgb_static"], image_size=32))


def test_training_sentences_hold_out_every_evaluation_instruction():
    sentences = train_instructions()
    assert sorted(sentences) == sorted(CALVIN_TASKS) and all(len(s) >= 5 for s in sentences.values())
    assert not set(EVAL_INSTRUCTIONS.values()) & {s for group in sentences.values() for s in group}


def test_play_switch_and_its_checks(tmp_path):
    assert wants_play(["--scenes", "A"]) and wants_play(["--frames=5"]) and not wants_play(["--task", "x"])
    for bad, flag in (
        ({"scenes": "A,E"}, "--scenes"),
        ({"frames": 0}, "--frames"),
        ({"format": "rlds"}, "--format"),
    ):
        with pytest.raises(InputError, match=flag):
            PlayConfig(**{"out": str(tmp_path), **bad}).check()
    (tmp_path / "training").mkdir()
    (tmp_path / "training" / "episode_0000000.npz").write_bytes(b"")
    with pytest.raises(InputError, match="already holds"):
        PlayConfig(out=str(tmp_path)).check()


def test_failed_subtasks_are_counted_and_resets_start_new_episodes(tmp_path):
    """With 5 steps per subtask every subtask fails: 3 in a row reset the scene (a new episode row); the same
    seed writes the same frames."""
    argv = ["--scenes", "D", "--frames", "32", "--ep-len", "5", "--format", "calvin", "--seed", "4"]
    runs = [main(["--env", "calvin", *argv, "--out", str(tmp_path / name)]) for name in ("a", "b")]
    row = runs[0]["scenes"]["D"]
    assert row["succeeded"] == 0 and row["failed"] == 6 and row["cut_by_frame_budget"] == 1
    assert row["episodes"] == 3
    split = tmp_path / "a" / "training"
    assert np.load(split / EPISODES_FILE).tolist() == [[0, 14], [15, 29], [30, 31]]
    assert load_pickled_npy(split / LANG_FILE)["info"]["indx"] == []
    for t in (0, 31):
        a, b = np.load(frame_path(split, t)), np.load(frame_path(tmp_path / "b" / "training", t))
        assert all(np.array_equal(a[k], b[k]) for k in a.files)


def test_lang_encoder_writes_calvins_embeddings_and_the_split_still_reads(sentence_encoder, tmp_path):
    """``--lang-encoder``: ``language.emb`` (N, 1, D) float32, the vectors of the windows' sentences, and
    with ``--split validation`` CALVIN's ``embeddings.npy``; the project's reader still reads the split."""
    argv = ["--scenes", "D", "--split", "validation", "--frames", "100", "--format", "calvin"]
    main(["--env", "calvin", *argv, "--out", str(tmp_path), "--lang-encoder", str(sentence_encoder)])
    split = tmp_path / "validation"
    lang = load_pickled_npy(split / LANG_FILE)
    emb, anns = lang["language"]["emb"], lang["language"]["ann"]
    assert len(anns) >= 1 and emb.shape == (len(anns), 1, 32) and emb.dtype == np.float32
    np.testing.assert_array_equal(emb, embed(SentenceEncoder(sentence_encoder), anns))
    assert list(load_pickled_npy(split / EMBEDDINGS_FILE)) == list(CALVIN_TASKS)
    assert len(open_dataset(split, cameras=["rgb_static"], image_size=32)) > 0
    with pytest.raises(InputError, match="--format"):
        PlayConfig(out=str(tmp_path / "x"), format="lerobot", lang_encoder=str(sentence_encoder)).check()


def test_rests_take_the_arm_back_to_the_neutral_pose_before_subtasks(tmp_path):
    """``--rest 1``: before every subtask the arm goes back to CALVIN's neutral pose (where evaluation
    chains start), so each annotated window starts there, also after a drawer move that ended far from it;
    the rest's frames are recorded, not annotated."""
    from envs.calvin.constants import NEUTRAL_ROBOT_OBS

    argv = ["--scenes", "D", "--frames", "330", "--tasks", "open_drawer,close_drawer", "--window", "360"]
    row = main(["--env", "calvin", *argv, "--rest", "1", "--out", str(tmp_path)])["scenes"]["D"]
    assert row["rests"] >= 2 and row["succeeded"] >= 2
    split = tmp_path / "training"
    windows = load_pickled_npy(split / LANG_FILE)["info"]["indx"]
    home = np.asarray(NEUTRAL_ROBOT_OBS[:3])
    for first, _ in windows:
        tcp = np.load(frame_path(split, first))["robot_obs"][:3]
        assert np.linalg.norm(tcp - home) < 0.03, (first, tcp)
        before = np.load(frame_path(split, first - 1))["robot_obs"][:3]  # the rest's last frame
        assert np.linalg.norm(before - home) < 0.03
    end_of_first = np.load(frame_path(split, windows[0][1]))["robot_obs"][:3]
    assert np.linalg.norm(end_of_first - home) > 0.1  # the drawer move ended far from the neutral pose


def test_rest_is_a_probability(tmp_path):
    with pytest.raises(InputError, match="--rest 2"):
        PlayConfig(out=str(tmp_path), rest=2.0).check()
