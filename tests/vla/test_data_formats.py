"""The LeRobotDataset v3 and LIBERO HDF5 writers round-trip through the readers ``vla.train`` uses.

Fast: synthetic episodes, no simulator. Each frame's image is a flat grey whose level encodes the frame, so
a decoded video frame names the frame it came from despite lossy coding."""

import json

import h5py
import numpy as np
import pyarrow.parquet as pq
import pytest

from vla.data import (
    LeRobotDataset,
    LeRobotWriter,
    LiberoDataset,
    LiberoTaskInfo,
    LiberoWriter,
    VectorFeature,
    detect_format,
    open_dataset,
)
from vla.data.lerobot import read_episodes

H, W, FPS = 24, 32, 20
CAMS = ("observation.images.agentview_rgb", "observation.images.eye_in_hand_rgb")


def level(episode: int, frame: int, camera: int) -> int:
    return 8 + 3 * (episode * 20 + frame) + 100 * camera


def episode_frames(episode: int, length: int) -> dict[str, np.ndarray]:
    images = {
        key: np.stack([np.full((H, W, 3), level(episode, t, c), np.uint8) for t in range(length)])
        for c, key in enumerate(CAMS)
    }
    actions = np.stack([np.r_[np.full(6, 0.01 * (episode * 20 + t)), (-1) ** t] for t in range(length)])
    state = np.arange(length * 8, dtype=np.float32).reshape(length, 8) + episode
    return images | {"action": actions.astype(np.float32), "observation.state": state}


def new_writer(root, cams=CAMS) -> LeRobotWriter:
    return LeRobotWriter(
        root,
        fps=FPS,
        cameras={k: (H, W) for k in cams},
        vectors={"observation.state": VectorFeature(8), "action": VectorFeature(7, tuple("xyzabcg"))},
        robot_type="panda",
    )


@pytest.fixture(scope="module")
def lerobot_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("lerobot")
    writer = new_writer(root)
    writer.add_episode(episode_frames(0, 9), "put the bowl on the plate")
    writer.add_episode(episode_frames(1, 6), "open the drawer")
    writer.close()
    return root


def test_lerobot_meta_is_self_consistent(lerobot_root):
    info = json.loads((lerobot_root / "meta/info.json").read_text())
    assert info["codebase_version"] == "v3.0" and info["fps"] == FPS and info["robot_type"] == "panda"
    assert (info["total_episodes"], info["total_frames"], info["total_tasks"]) == (2, 15, 2)
    assert info["splits"] == {"train": "0:2"}
    features = info["features"]
    assert features[CAMS[0]]["dtype"] == "video" and features[CAMS[0]]["shape"] == [H, W, 3]
    assert features[CAMS[0]]["info"]["video.codec"] == "h264"
    assert features["action"] == {"dtype": "float32", "shape": [7], "names": list("xyzabcg")}
    for key in ("timestamp", "frame_index", "episode_index", "index", "task_index"):
        assert features[key]["shape"] == [1]
    episodes = read_episodes(lerobot_root)
    assert [e["length"] for e in episodes] == [9, 6] and [e["tasks"] for e in episodes] == [
        ["put the bowl on the plate"],
        ["open the drawer"],
    ]
    assert [(e["dataset_from_index"], e["dataset_to_index"]) for e in episodes] == [(0, 9), (9, 15)]
    for key in CAMS:  # one stream per camera, the second episode right after the first
        spans = [(e[f"videos/{key}/from_timestamp"], e[f"videos/{key}/to_timestamp"]) for e in episodes]
        assert spans == [(0.0, 9 / FPS), (9 / FPS, 15 / FPS)]
        path = lerobot_root / info["video_path"].format(video_key=key, chunk_index=0, file_index=0)
        assert path.is_file()
    data = pq.read_table(lerobot_root / info["data_path"].format(chunk_index=0, file_index=0)).to_pydict()
    assert data["index"] == list(range(15)) and data["episode_index"] == [0] * 9 + [1] * 6
    assert data["frame_index"] == list(range(9)) + list(range(6)) and data["task_index"] == [0] * 9 + [1] * 6
    np.testing.assert_allclose(data["timestamp"][9:], np.arange(6) / FPS, atol=1e-6)
    assert set(data) == {
        "action",
        "observation.state",
        "timestamp",
        "frame_index",
        "episode_index",
        "index",
        "task_index",
    }


def test_lerobot_tasks_and_stats_as_lerobot_reads_them(lerobot_root):
    pandas = pytest.importorskip("pandas")
    tasks = pandas.read_parquet(lerobot_root / "meta/tasks.parquet")  # LeRobot looks tasks up by this index
    assert tasks.index.name == "task" and tasks.loc["open the drawer", "task_index"] == 1
    stats = json.loads((lerobot_root / "meta/stats.json").read_text())
    everything = np.concatenate([episode_frames(0, 9)["action"], episode_frames(1, 6)["action"]])
    np.testing.assert_allclose(stats["action"]["mean"], everything.mean(0), atol=1e-6)
    np.testing.assert_allclose(stats["action"]["std"], everything.std(0), atol=1e-6)
    assert stats["action"]["count"] == [15] and set(stats["action"]) >= {"min", "max", "q01", "q50", "q99"}
    assert np.shape(stats[CAMS[1]]["mean"]) == (3, 1, 1) and 0 <= np.min(stats[CAMS[1]]["min"]) <= 1


def test_lerobot_reader_gives_frames_chunks_and_instruction(lerobot_root):
    assert detect_format(lerobot_root) == "lerobot"
    ds = open_dataset(
        lerobot_root, cameras=("agentview_rgb", "observation.images.eye_in_hand_rgb"), image_size=W
    )
    assert isinstance(ds, LeRobotDataset) and ds.data_format == "libero" and ds.gripper_open_value == -1.0
    assert ds.chunk_size == 4 and ds.cameras == ("agentview_rgb", "eye_in_hand_rgb")
    assert len(ds) == (9 - 3) + (6 - 3)  # every start whose 4-action chunk stays in its episode
    for i in range(len(ds)):
        sample = ds[i]
        episode, frame = (0, i) if i < 6 else (1, i - 6)
        for c, image in enumerate(sample.images):
            assert image.shape == (W, W, 3) and abs(float(image.mean()) - level(episode, frame, c)) < 1.5
        expected = episode_frames(episode, 9 if episode == 0 else 6)["action"][frame : frame + 4]
        np.testing.assert_allclose(sample.actions, expected)
        assert sample.instruction == ("put the bowl on the plate" if episode == 0 else "open the drawer")
    assert ds.action_samples().shape == (len(ds), 7)


def test_lerobot_append_adds_files_and_keeps_the_dataset_whole(tmp_path):
    writer = new_writer(tmp_path)
    writer.add_episode(episode_frames(0, 5), "a")
    writer.close()
    (tmp_path / "data/chunk-000/file-007.parquet").write_bytes(b"left by a crash")  # referenced by nothing
    again = LeRobotWriter.append_to(tmp_path)
    assert again.add_episode(episode_frames(1, 7), "b") == 1
    again.close()
    assert not (tmp_path / "data/chunk-000/file-007.parquet").exists()
    rows = read_episodes(tmp_path)
    assert [(r["data/file_index"], r[f"videos/{CAMS[0]}/file_index"]) for r in rows] == [(0, 0), (1, 1)]
    assert rows[1][f"videos/{CAMS[0]}/from_timestamp"] == 0.0 and rows[1]["dataset_from_index"] == 5
    info = json.loads((tmp_path / "meta/info.json").read_text())
    assert (info["total_episodes"], info["total_frames"], info["total_tasks"]) == (2, 12, 2)
    ds = LeRobotDataset(tmp_path, chunk_size=2)
    assert abs(float(ds[len(ds) - 1].images[0].mean()) - level(1, 5, 0)) < 1.5


def test_lerobot_calvin_cameras_follow_calvin_conventions(tmp_path):
    cams = ("observation.images.rgb_static", "observation.images.rgb_gripper")
    writer = new_writer(tmp_path, cams)
    frames = episode_frames(0, 12)
    writer.add_episode({cams[0]: frames[CAMS[0]], cams[1]: frames[CAMS[1]]} | frames, "open the drawer")
    writer.close()
    ds = LeRobotDataset(tmp_path)
    assert (ds.data_format, ds.gripper_open_value, ds.chunk_size, ds.cameras) == (
        "calvin",
        1.0,
        10,
        ("rgb_static",),
    )


def test_lerobot_writer_and_reader_errors(tmp_path):
    writer = new_writer(tmp_path)
    with pytest.raises(ValueError, match="lacks the features"):
        writer.add_episode({"action": np.zeros((3, 7))}, "x")
    bad = episode_frames(0, 3) | {"action": np.zeros((3, 6), np.float32)}
    with pytest.raises(ValueError, match="action"):
        writer.add_episode(bad, "x")
    with pytest.raises(ValueError, match="needs an 'action' feature"):
        LeRobotWriter(tmp_path, fps=FPS, cameras={}, vectors={})
    (tmp_path / "meta").mkdir()
    (tmp_path / "meta/info.json").write_text(json.dumps({"codebase_version": "v2.1"}))
    with pytest.raises(ValueError, match=r"v2\.1"):
        LeRobotDataset(tmp_path)


def libero_demo(length: int, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    images = rng.integers(0, 255, (2, length, 16, 16, 3), dtype=np.uint8)
    ee = rng.normal(size=(length, 6))
    rewards = np.zeros(length, np.uint8)
    rewards[-1] = 1
    return {
        "actions": rng.uniform(-1, 1, (length, 7)),
        "states": rng.normal(size=(length, 11)),
        "robot_states": rng.normal(size=(length, 9)),
        "rewards": rewards,
        "dones": rewards.copy(),
        "obs": {
            "agentview_rgb": images[0],
            "eye_in_hand_rgb": images[1],
            "gripper_states": rng.normal(size=(length, 2)),
            "joint_states": rng.normal(size=(length, 7)),
            "ee_states": ee,
            "ee_pos": ee[:, :3],
            "ee_ori": ee[:, 3:],
        },
    }


def test_libero_writer_round_trips_through_the_reader(tmp_path):
    task = LiberoTaskInfo(
        "put the bowl on the plate",
        "LIBERO_Tabletop_Manipulation",
        "robosuite",
        "/x.bddl",
        "(define)",
        {"a": 1},
    )
    path = tmp_path / "libero_object" / "TASK_demo.hdf5"
    writer = LiberoWriter(path, task)
    demos = [libero_demo(7, 0), libero_demo(5, 1)]
    assert [writer.add_demo(d, "<mujoco/>") for d in demos] == ["demo_0", "demo_1"]
    assert not path.exists()  # still being written
    writer.close()
    with h5py.File(path, "r") as f:
        attrs = f["data"].attrs
        assert json.loads(attrs["problem_info"])["language_instruction"] == "put the bowl on the plate"
        assert (attrs["num_demos"], attrs["total"], attrs["macros_image_convention"]) == (2, 12, "opengl")
        assert (
            json.loads(attrs["env_args"])["env_kwargs"] == {"a": 1}
            and attrs["bddl_file_content"] == "(define)"
        )
        demo = f["data/demo_1"]
        assert demo.attrs["num_samples"] == 5 and demo.attrs["model_file"] == "<mujoco/>"
        np.testing.assert_array_equal(demo.attrs["init_state"], demos[1]["states"][0])
        assert demo["rewards"].dtype == np.uint8 and list(demo["dones"][()]) == [0, 0, 0, 0, 1]
        assert sorted(demo["obs"]) == sorted(demos[1]["obs"]) and demo["obs/agentview_rgb"].shape == (
            5,
            16,
            16,
            3,
        )
    ds = LiberoDataset(tmp_path, cameras=("agentview_rgb", "eye_in_hand_rgb"), image_size=16)
    assert len(ds) == (7 - 3) + (5 - 3) and ds.instructions == ["put the bowl on the plate"]
    sample = ds[0]
    np.testing.assert_array_equal(sample.images[0], demos[0]["obs"]["agentview_rgb"][0][::-1])  # upright
    np.testing.assert_allclose(sample.actions, demos[0]["actions"][:4], rtol=1e-6)


def test_libero_writer_discard_leaves_nothing(tmp_path):
    writer = LiberoWriter(tmp_path / "T_demo.hdf5", LiberoTaskInfo("i", "p", "d", "b", "c", {}))
    with pytest.raises(ValueError, match="lacks"):
        writer.add_demo({"actions": np.zeros((2, 7)), "obs": {}}, "")
    writer.discard()
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("fmt", ["lerobot", pytest.param("libero", marks=pytest.mark.slow)])
def test_vla_train_trains_on_both_written_formats(fmt, lerobot_root, tmp_path, tiny_vlm):
    """A few optimizer steps of ``vla.train`` on what the writers wrote; the checkpoint keeps LIBERO's
    conventions and both cameras."""
    from vla.model import VLAModel
    from vla.train import main

    data = lerobot_root
    if fmt == "libero":
        data = tmp_path / "hdf5"
        writer = LiberoWriter(data / "T_demo.hdf5", LiberoTaskInfo("open the drawer", "p", "d", "b", "c", {}))
        writer.add_demo(libero_demo(9, 0), "")
        writer.close()
    out = tmp_path / "run"
    flags = ["--backbone", str(tiny_vlm("qwen2_5_vl")), "--data", str(data), "--output", str(out)]
    flags += ["--cameras", "agentview_rgb", "eye_in_hand_rgb", "--image-size", "28", "--batch-size", "2"]
    flags += ["--max-steps", "2", "--num-workers", "0", "--log-every", "1", "--warmup-steps", "1"]
    main(flags)
    model = VLAModel.from_pretrained(out / "checkpoints" / "last")
    assert model.config.data_format == "libero" and model.config.chunk_size == 4
    assert list(model.config.cameras) == ["agentview_rgb", "eye_in_hand_rgb"]
    assert len((out / "train_log.jsonl").read_text().splitlines()) == 2
