"""Goal-image dataset format, trajectory conversion and pair sources."""

import json

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from action_mapping import StepSizes, parse_plan, plan_to_trajectory
from benchmarks.goal_scoring import (
    DatasetError,
    DatasetWriter,
    generate_dataset,
    load_dataset,
    load_predictions,
)
from benchmarks.goal_scoring.convert import (
    convert_by_pose,
    convert_by_velocity,
    fit_step_sizes,
    keyframe_indices,
    read_trajectory,
)
from benchmarks.goal_scoring.sources import make_source, register_source
from tests.goal_data import WallPairSource, render_wall

SIZES = {"translation": 0.05, "rotation": 0.1}
PLAN = {
    "step_1": {"actions": ["W", "←"], "step_nums": [2, 1]},
    "step_2": {"actions": ["D"], "step_nums": [3]},
}


def record(sid="s1", **over):
    return {
        "id": sid,
        "kind": "nav",
        "instruction": "go",
        "step_sizes": SIZES,
        "plan": PLAN,
        "source": "test",
        **over,
    }


def trajectory_of(plan_obj, sizes=SIZES):
    return plan_to_trajectory(
        parse_plan(json.dumps(plan_obj)), np.eye(4), sizes["translation"], sizes["rotation"]
    )


def write(root, *records):
    image = render_wall(np.eye(4), 16)
    with DatasetWriter(root, {"name": "t"}) as w:
        for r in records:
            w.add(r, image, render_wall(trajectory_of(PLAN)[-1], 16))
    return root


def write_lines(root, *objs):
    root.mkdir(parents=True, exist_ok=True)
    (root / "samples.jsonl").write_text("".join(json.dumps(o) + "\n" for o in objs))
    return root


# --------------------------------------------------------------------------------------------------------
# Round trip


def test_round_trip_keeps_every_field_and_the_images(tmp_path):
    traj = trajectory_of(PLAN)
    write(
        tmp_path / "d",
        record("a"),
        record(
            "b",
            kind="manip",
            trajectory=traj.tolist(),
            metadata={"k": [1, 2]},
            plan={"step_1": {"actions": ["W"], "step_nums": [1], "gripper": 1}},
            max_step_num=5,
        )
        | {"trajectory": None},
    )
    ds = load_dataset(tmp_path / "d")
    assert [s.id for s in ds] == ["a", "b"] and ds.header["format"] == "spatialarena-goal/1"
    a, b = ds.samples
    assert a.plan.to_json() == PLAN and a.step_sizes == StepSizes(0.05, 0.1) and a.instruction == "go"
    assert (
        b.kind == "manip"
        and b.max_step_num == 5
        and b.metadata == {"k": [1, 2]}
        and b.plan.steps[0].gripper == 1
    )
    assert ds.load_image(a, "start").shape == (16, 16, 3)
    assert np.array_equal(ds.load_image(a, "goal"), render_wall(traj[-1], 16))  # PNG is lossless
    # the file written from a loaded sample is the file it was loaded from
    lines = (tmp_path / "d" / "samples.jsonl").read_text().splitlines()
    assert [json.dumps(s.to_json(), ensure_ascii=False) for s in ds] == lines


def test_trajectory_only_sample_derives_its_plan(tmp_path):
    traj = trajectory_of(PLAN)
    write(tmp_path / "d", {k: v for k, v in record(trajectory=traj.tolist()).items() if k != "plan"})
    sample = load_dataset(tmp_path / "d").samples[0]
    assert sample.plan.to_json() == PLAN
    assert np.allclose(sample.trajectory, traj)


def test_writer_refuses_existing_dataset_and_duplicate_ids(tmp_path):
    write(tmp_path / "d", record("a"))
    with pytest.raises(DatasetError, match=r"already holds a dataset"):
        DatasetWriter(tmp_path / "d")
    with (
        DatasetWriter(tmp_path / "d", append=True) as w,
        pytest.raises(DatasetError, match=r"'a' already exists"),
    ):
        w.add(record("a"), render_wall(np.eye(4), 8), render_wall(np.eye(4), 8))
    with (
        DatasetWriter(tmp_path / "e") as w,
        pytest.raises(DatasetError, match=r"uint8 arrays of shape \(H, W, 3\)"),
    ):
        w.add(record("x"), np.zeros((8, 8), np.float32), np.zeros((8, 8, 3), np.uint8))


# --------------------------------------------------------------------------------------------------------
# Errors name the sample and the fix


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"kind": "drive"}, r"'kind' must be one of \['nav', 'manip'\]"),
        ({"step_sizes": {"translation": 0.1}}, r"'step_sizes' must be \{\"translation\": 0.019375"),
        ({"step_sizes": {"translation": -1, "rotation": 0.1}}, "'step_sizes' must be"),
        (
            {"plan": {"step_1": {"actions": ["fly"], "step_nums": [1]}}},
            "ground-truth 'plan' is not clean.*unknown_action",
        ),
        ({"plan": {"step_1": {"actions": ["W"], "step_nums": [11]}}}, "step_num_capped.*step_nums 0..10"),
        ({"plan": {"step_2": {"actions": ["W"], "step_nums": [1]}}}, "step_order"),
        ({"plan": None}, "needs a ground truth"),
        ({"colour": "red"}, r"unknown field\(s\) \['colour'\]. Fix: move extra information under 'metadata'"),
        ({"id": "a/b"}, "'id' must be a string of letters"),
        ({"max_step_num": 0}, "'max_step_num' must be an integer >= 1"),
        (
            {"trajectory": [[[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]]] * 2},
            "2 plan steps need 3 trajectory poses",
        ),
        ({"trajectory": [np.diag([2.0, 1, 1, 1]).tolist()] * 3}, "not orthonormal.*Rotation.from_matrix"),
        (
            {"lmms_eval_extra_info": {"optimal_rel_pose": [[0, 0, 0, 0, 0, 0, 1]] * 2}},
            "no '0->1'-style segment",
        ),
    ],
)
def test_bad_samples_give_clear_errors(tmp_path, change, message):
    obj = record() | change
    obj |= {"start_image": "s.png", "goal_image": "g.png"}
    root = write_lines(tmp_path / "d", obj)
    with pytest.raises(DatasetError, match=message) as err:
        load_dataset(root, check_images=False)
    assert "samples.jsonl:1" in str(err.value)
    if "id" not in change:
        assert "(sample 's1')" in str(err.value)


def test_trajectory_that_needs_more_than_the_cap_is_refused_with_the_fix(tmp_path):
    far = np.eye(4)
    far[2, 3] = 5.0  # 5 m forward = 100 steps of 0.05 m
    obj = {k: v for k, v in record(trajectory=[np.eye(4).tolist(), far.tolist()]).items() if k != "plan"}
    root = write_lines(tmp_path / "d", obj | {"start_image": "s.png", "goal_image": "g.png"})
    with pytest.raises(DatasetError, match=r"more than 10 steps.*convert --fit-step-sizes"):
        load_dataset(root, check_images=False)


def test_file_level_errors(tmp_path):
    with pytest.raises(DatasetError, match=r"samples.jsonl not found. Fix: point --dataset"):
        load_dataset(tmp_path)
    (tmp_path / "samples.jsonl").write_text('{"id": \n')
    with pytest.raises(DatasetError, match=r"samples.jsonl:1: not valid JSON"):
        load_dataset(tmp_path)
    root = write_lines(tmp_path / "dup", *[record() | {"start_image": "s.png", "goal_image": "g.png"}] * 2)
    with pytest.raises(DatasetError, match=r"duplicate sample id 's1'"):
        load_dataset(root, check_images=False)
    with pytest.raises(DatasetError, match=r"start_image .*s.png does not exist. Fix: paths are relative"):
        load_dataset(root)
    (root / "dataset.json").write_text('{"format": "other/9"}')
    with pytest.raises(DatasetError, match=r"'format' must be 'spatialarena-goal/1'"):
        load_dataset(root, check_images=False)


def test_predictions_file_errors(tmp_path):
    path = tmp_path / "p.jsonl"
    with pytest.raises(DatasetError, match=r"not found. Fix: run `predict` first"):
        load_predictions(path)
    path.write_text('{"id": "a", "output": "x"}\n{"id": "a", "output": "y"}\n')
    with pytest.raises(DatasetError, match=r"p.jsonl:2: duplicate prediction for sample 'a'"):
        load_predictions(path)
    path.write_text('{"id": "a", "text": "x"}\n')
    with pytest.raises(DatasetError, match=r"string 'id' and 'output'"):
        load_predictions(path)


# --------------------------------------------------------------------------------------------------------
# Trajectory files and conversion


def _wiggle(n=31):
    """A smooth camera path: forward 0.6 m, left 0.2 m, panning 0.5 rad, over n poses."""
    s = np.linspace(0, 1, n)
    poses = np.tile(np.eye(4), (n, 1, 1))
    poses[:, :3, :3] = Rotation.from_rotvec(np.outer(s * 0.5, [0, -1, 0])).as_matrix()
    poses[:, :3, 3] = np.stack([-0.2 * s, np.zeros(n), 0.6 * s], axis=1)
    return poses


@pytest.mark.parametrize("fmt", ["npy", "json", "c2w", "nerf", "tum", "kitti", "flat16"])
def test_read_trajectory_formats(tmp_path, fmt):
    poses = _wiggle(5)
    quat = Rotation.from_matrix(poses[:, :3, :3]).as_quat()
    if fmt == "npy":
        path = tmp_path / "t.npy"
        np.save(path, poses)
    elif fmt in ("json", "c2w", "nerf"):
        gl = poses @ np.diag([1.0, -1, -1, 1])  # NeRF files hold OpenGL cameras
        value = {
            "json": poses.tolist(),
            "c2w": {"c2w": poses.tolist()},
            "nerf": {"frames": [{"transform_matrix": m.tolist()} for m in gl]},
        }[fmt]
        path = tmp_path / "t.json"
        path.write_text(json.dumps(value))
    else:
        rows = {
            "tum": np.column_stack([np.arange(5), poses[:, :3, 3], quat]),
            "kitti": poses[:, :3].reshape(5, 12),
            "flat16": poses.reshape(5, 16),
        }[fmt]
        path = tmp_path / "t.txt"
        np.savetxt(path, rows, header="poses")
    got = read_trajectory(path, "opengl" if fmt == "nerf" else "opencv")
    assert got == pytest.approx(poses, abs=1e-9)


def test_read_trajectory_errors(tmp_path):
    with pytest.raises(DatasetError, match=r"not found"):
        read_trajectory(tmp_path / "none.npy")
    np.save(tmp_path / "bad.npy", np.zeros((4, 5)))
    with pytest.raises(DatasetError, match=r"cannot read shape \(4, 5\)"):
        read_trajectory(tmp_path / "bad.npy")
    np.save(tmp_path / "nan.npy", np.full((3, 4, 4), np.nan))
    with pytest.raises(DatasetError, match=r"non-finite"):
        read_trajectory(tmp_path / "nan.npy")


def test_keyframes_and_fitted_step_sizes():
    assert keyframe_indices(31, 6).tolist() == [0, 5, 10, 15, 20, 25, 30]
    assert keyframe_indices(4, None).tolist() == [0, 1, 2, 3]
    with pytest.raises(DatasetError, match=r"between 1 and 3"):
        keyframe_indices(4, 5)
    poses = _wiggle()[[0, 30]]  # one step: 0.6 m forward (12 counts of 0.05 m), 0.5 rad pan
    fitted = fit_step_sizes(poses, StepSizes(0.05, 0.1), 10)
    # 0.5 / 10 < 0.1
    assert fitted.translation == pytest.approx(0.06) and fitted.rotation == pytest.approx(0.1)


def test_convert_by_pose_recovers_an_exact_plan_and_refuses_overflow():
    poses = trajectory_of(PLAN)
    conv = convert_by_pose(poses, StepSizes(0.05, 0.1), num_steps=None)
    assert conv.plan.to_json() == PLAN and len(conv.poses) == 3
    with pytest.raises(DatasetError, match=r"more than 10 counts.*--fit-step-sizes"):
        convert_by_pose(_wiggle(), StepSizes(0.05, 0.1), num_steps=1)
    fitted = convert_by_pose(_wiggle(), StepSizes(0.05, 0.1), num_steps=1, fit=True)
    assert fitted.plan.steps[0].step_nums == [3, 10, 5]  # A: 0.2/0.06, W: 0.6/0.06, ←: 0.5/0.1


def test_convert_by_velocity_counts_frames_above_the_speed_threshold():
    # 31 poses at 10 fps = 3 s; per frame the camera moves 0.02 m forward (0.2 m/s > 0.01 m/s), 0.0067 m left
    # (0.067 m/s) and pans 0.0167 rad (9.5°/s > 0.5°/s): every interval counts for W, A and ←
    conv = convert_by_velocity(_wiggle(), StepSizes(0.05, 0.1), fps=10, frames_per_step=5)
    assert len(conv.plan.steps) == 6 and len(conv.poses) == 7
    assert sorted(zip((a.symbol for a in conv.plan.steps[0].actions), conv.plan.steps[0].step_nums)) == [
        ("A", 5),
        ("W", 5),
        ("←", 5),
    ]
    with pytest.raises(DatasetError, match=r"counts 30 frame intervals"):
        convert_by_velocity(_wiggle(), StepSizes(0.05, 0.1), fps=10, frames_per_step=30)


# --------------------------------------------------------------------------------------------------------
# Pair sources


def test_generation_is_reproducible_from_the_seed(tmp_path):
    for name in ("a", "b"):
        generate_dataset(WallPairSource("manip"), 4, 7, tmp_path / name, name="wall")
    generate_dataset(WallPairSource("manip"), 4, 8, tmp_path / "c", name="wall")
    files = ["samples.jsonl", "dataset.json", "images/manip-00003_goal.png"]
    assert all((tmp_path / "a" / f).read_bytes() == (tmp_path / "b" / f).read_bytes() for f in files)
    assert (tmp_path / "a" / "samples.jsonl").read_bytes() != (tmp_path / "c" / "samples.jsonl").read_bytes()
    ds = load_dataset(tmp_path / "a")
    assert len(ds) == 4 and all(s.kind == "manip" and s.trajectory is not None for s in ds)
    assert ds.header["generator"] == {
        "source": {"class": "WallPairSource", "kind": "manip", "size": 32},
        "seed": 7,
        "n": 4,
    }
    # sample i depends only on (seed, i): a shorter run reproduces the prefix
    generate_dataset(WallPairSource("manip"), 2, 7, tmp_path / "short")
    assert (tmp_path / "short" / "samples.jsonl").read_text().splitlines() == (
        tmp_path / "a" / "samples.jsonl"
    ).read_text().splitlines()[:2]


def test_source_registry(tmp_path):
    with pytest.raises(
        DatasetError, match=r"no pair source is registered under 'navi'.*--source package.module:ClassName"
    ):
        make_source("navi")
    assert isinstance(make_source("tests.goal_data:WallPairSource", kind="manip"), WallPairSource)
    register_source("wall-test", WallPairSource, kind="manip")
    assert make_source("wall-test").kind == "manip"
    with pytest.raises(DatasetError, match=r"cannot load pair source 'tests.goal_data:Nope'"):
        make_source("tests.goal_data:Nope")
    with pytest.raises(DatasetError, match=r"does not implement PairSource"):
        make_source("tests.goal_data:render_wall", c2w=np.eye(4))
