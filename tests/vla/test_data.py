"""CALVIN and LIBERO readers on small files in each real format; the CALVIN writer round-trips."""

import numpy as np
import pytest
from PIL import Image

from envs.files import load_pickled_npy
from tests.vla_helpers import calvin_frame, write_calvin_split, write_libero_file
from vla.data import CalvinDataset, CalvinWriter, LiberoDataset, detect_format, open_dataset


@pytest.fixture(scope="module")
def calvin_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("calvin") / "task_D_D" / "training"
    # two recorded episodes; one annotation inside each, the second reaches the episode's end
    actions = write_calvin_split(
        root,
        episodes=[(100, 129), (130, 149)],
        windows=[
            (102, 115, "open_drawer", "pull the handle to open the drawer"),
            (135, 149, "move_slider_left", "push the sliding door to the left side"),
        ],
    )
    return root, actions


def test_calvin_index_respects_windows_and_episode_ends(calvin_root):
    root, _ = calvin_root
    ds = CalvinDataset(root.parent)  # the dataset root: the reader finds training/
    # window 1: starts 102..115 all have 10 frames before the episode ends at 129 -> 14 samples
    # window 2: starts 135..140 (140 + 9 = 149 is the episode's last frame) -> 6 samples
    assert [f for f, _ in ds.index] == list(range(102, 116)) + list(range(135, 141))
    assert len(ds) == 20 and ds.chunk_size == 10 and ds.cameras == ("rgb_static",)


def test_calvin_sample_has_chunk_images_and_instruction(calvin_root):
    root, actions = calvin_root
    ds = CalvinDataset(root, cameras=("rgb_static", "rgb_gripper"))
    sample = ds[len(ds) - 1]  # frame 140
    assert sample.instruction == "push the sliding door to the left side"
    np.testing.assert_allclose(sample.actions, np.stack([actions[t] for t in range(140, 150)]), rtol=1e-6)
    assert sample.actions.dtype == np.float32 and sample.actions.shape == (10, 7)
    assert [im.shape for im in sample.images] == [(224, 224, 3), (224, 224, 3)]
    with np.load(root / "episode_0000140.npz") as npz:
        expected = np.asarray(
            Image.fromarray(npz["rgb_gripper"]).resize((224, 224), Image.Resampling.BICUBIC)
        )
    np.testing.assert_array_equal(sample.images[1], expected)


def test_calvin_actions_for_statistics(calvin_root):
    root, actions = calvin_root
    ds = CalvinDataset(root, chunk_size=3)
    sampled = ds.action_samples()
    assert sampled.shape == (len(ds), 7)
    np.testing.assert_allclose(sampled, np.stack([actions[f] for f, _ in ds.index]), rtol=1e-6)
    assert ds.action_samples(max_samples=5).shape == (5, 7)


def test_calvin_errors_name_the_problem(tmp_path, calvin_root):
    root, _ = calvin_root
    with pytest.raises(FileNotFoundError, match="ep_start_end_ids"):
        CalvinDataset(tmp_path)
    with pytest.raises(ValueError, match="rgb_static"):
        CalvinDataset(root, cameras=("rgb_tactile",))
    bad = tmp_path / "bad"
    write_calvin_split(bad, episodes=[(0, 5)], windows=[(3, 9, "open_drawer", "x")])
    with pytest.raises(ValueError, match="no annotated frame has a full chunk"):
        CalvinDataset(bad)


def test_calvin_writer_round_trips_through_reader(tmp_path):
    rng = np.random.default_rng(1)
    writer = CalvinWriter(tmp_path / "demos", first_index=5)
    frames = [calvin_frame(rng, 1.0) for _ in range(12)]
    assert writer.write_episode(frames, "open_drawer", "pull the handle to open the drawer") == (5, 16)
    assert writer.write_episode(frames[:11], "close_drawer", "push the handle to close the drawer") == (
        17,
        27,
    )
    writer.close()
    lang = load_pickled_npy(tmp_path / "demos" / "lang_annotations" / "auto_lang_ann.npy")
    assert lang["info"]["indx"] == [(5, 16), (17, 27)] and lang["language"]["task"] == [
        "open_drawer",
        "close_drawer",
    ]
    np.testing.assert_array_equal(np.load(tmp_path / "demos" / "ep_start_end_ids.npy"), [[5, 16], [17, 27]])
    ds = open_dataset(tmp_path / "demos")
    assert len(ds) == 3 + 2  # 12 - 10 + 1 and 11 - 10 + 1
    np.testing.assert_allclose(ds[0].actions, np.stack([f["rel_actions"] for f in frames[:10]]), rtol=1e-6)
    assert ds[4].instruction == "push the handle to close the drawer"


def test_calvin_writer_rejects_bad_frames(tmp_path):
    rng = np.random.default_rng(0)
    writer = CalvinWriter(tmp_path)
    writer.begin_episode()
    frame = calvin_frame(rng, 0.5)
    with pytest.raises(ValueError, match="exactly -1 or 1"):
        writer.add_frame(frame)
    with pytest.raises(KeyError, match="scene_obs"):
        writer.add_frame({k: v for k, v in calvin_frame(rng, 1.0).items() if k != "scene_obs"})


@pytest.fixture(scope="module")
def libero_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("libero")
    a = write_libero_file(
        root / "KITCHEN_SCENE3_turn_on_the_stove_demo.hdf5", "turn on the stove", [6, 4], seed=0
    )
    b = write_libero_file(
        root / "LIVING_ROOM_SCENE1_pick_up_the_soup_demo.hdf5", "pick up the soup", [5], seed=1
    )
    return root, a, b


def test_libero_samples_chunks_language_and_orientation(libero_dir):
    root, a, b = libero_dir
    ds = LiberoDataset(root, cameras=("agentview_rgb", "eye_in_hand_rgb"), image_size=32)
    # chunk 4: demo lengths 6, 4, 5 give 3 + 1 + 2 start frames
    assert len(ds) == 6 and ds.chunk_size == 4 and ds.gripper_open_value == -1.0
    sample = ds[1]  # file a, demo_0, frame 1
    np.testing.assert_allclose(sample.actions, a["demo_0"][1:5].astype(np.float32))
    assert sample.instruction == "turn on the stove"
    # "upright" flips rows: the stored upper-left pixel ends up in the lower-left corner
    assert tuple(sample.images[0][-1, 0]) == (0, 1, 7)
    last = ds[5]  # file b, demo_0, frame 1
    assert last.instruction == "pick up the soup"
    np.testing.assert_allclose(last.actions, b["demo_0"][1:5].astype(np.float32))
    raw = LiberoDataset(root, image_size=32, image_orientation="rot180")[1]
    assert tuple(raw.images[0][-1, -1]) == (0, 1, 7)


def test_libero_defaults_resize_and_detection(libero_dir):
    root, _, _ = libero_dir
    assert detect_format(root) == "libero"
    ds = open_dataset(root)
    assert ds.cameras == ("agentview_rgb",) and ds[0].images[0].shape == (224, 224, 3)
    assert ds.action_samples().shape == (6, 7)


def test_libero_missing_language_is_an_error(tmp_path):
    import h5py

    path = tmp_path / "x_demo.hdf5"
    write_libero_file(path, "x", [5])
    with h5py.File(path, "a") as f:
        del f["data"].attrs["problem_info"]
    with pytest.raises(ValueError, match="problem_info"):
        LiberoDataset(path)


def test_unknown_format_is_an_error(tmp_path):
    with pytest.raises(ValueError, match="cannot tell the format"):
        open_dataset(tmp_path)
