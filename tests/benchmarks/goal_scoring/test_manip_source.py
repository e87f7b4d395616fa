"""Goal-image manipulation pairs from the CALVIN play-table: real TCP poses as ground truth, reproducibility,
re-rendering from the recorded states, and ``generate --source manip`` scored end to end."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from action_mapping import trajectory_to_plan
from action_mapping.trajectory import step_count_rows
from benchmarks.goal_scoring import load_dataset
from benchmarks.goal_scoring.cli import main
from benchmarks.goal_scoring.manip_source import (
    CALVIN_STEP_SIZES,
    WORKSPACE,
    gripper_state,
    in_workspace,
    static_pixel,
    tcp_in_view,
    tcp_pose,
)
from envs.calvin import constants as C
from envs.calvin.env import PlayTableEnv

N_PAIRS = 3


def test_static_camera_and_tcp_frame_hand_worked():
    # the look-at point is the centre
    assert static_pixel(np.array(C.STATIC_TARGET)) == pytest.approx((100.0, 100.0))
    neutral = np.array(C.NEUTRAL_ROBOT_OBS)
    T = tcp_pose(neutral)
    assert T[2, 2] == pytest.approx(-1.0, abs=0.01)  # the TCP z axis (approach, "dolly in") points down
    assert in_workspace(T) and tcp_in_view(T)
    lifted = T.copy()
    lifted[2, 3] = 1.2  # far above the reachable box
    assert not in_workspace(lifted)
    # CALVIN 1 open, -1 closed
    assert (gripper_state(neutral), gripper_state(np.r_[neutral[:14], -1.0])) == (
        0,
        1,
    )


@pytest.fixture(scope="module")
def manip_sets(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    roots = [tmp_path_factory.mktemp(name) / "manip" for name in ("first", "second")]
    for root in roots:
        assert (
            main(["generate", "--source", "manip", "--n", str(N_PAIRS), "--seed", "2", "--out", str(root)])
            == 0
        )
    return roots[0], roots[1]


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_same_seed_gives_byte_identical_datasets(manip_sets):
    first, second = _files(manip_sets[0]), _files(manip_sets[1])
    assert len(first) == 2 + 2 * N_PAIRS and first == second


def test_plans_are_the_real_tcp_motion_with_gripper_states(manip_sets):
    for sample in load_dataset(manip_sets[0]):
        assert sample.kind == "manip" and sample.plan.step_sizes == CALVIN_STEP_SIZES
        poses = sample.trajectory
        derived = trajectory_to_plan(poses, CALVIN_STEP_SIZES.translation, CALVIN_STEP_SIZES.rotation)
        assert step_count_rows(derived.steps)[0] == step_count_rows(sample.plan.steps)[0]
        assert all(step.gripper in (0, 1) for step in sample.plan.steps)
        assert sample.metadata["max_rounding"] < 0.5
        assert tcp_pose(np.array(sample.metadata["start"]["robot_obs"])) == pytest.approx(poses[0])
        assert tcp_pose(np.array(sample.metadata["end"]["robot_obs"])) == pytest.approx(poses[-1])
        assert sample.plan.steps[-1].gripper == gripper_state(np.array(sample.metadata["end"]["robot_obs"]))
        # commanded box + tracking error
        low, high = (
            np.array(WORKSPACE[0]) - 0.02,
            np.array(WORKSPACE[1]) + 0.02,
        )
        assert np.all((poses[:, :3, 3] >= low) & (poses[:, :3, 3] <= high))
        assert tcp_in_view(poses[0]) and tcp_in_view(poses[-1])


def test_images_re_render_from_the_recorded_states(manip_sets):
    """Reset a fresh env to the recorded start and end states: same TCP poses, same static images."""
    dataset = load_dataset(manip_sets[0])
    env = PlayTableEnv(cameras=("static",))
    try:
        for sample in dataset:
            for which, index in (("start", 0), ("end", -1)):
                state = sample.metadata[which]
                obs, _ = env.reset(options={"robot_obs": state["robot_obs"], "scene_obs": state["scene_obs"]})
                assert tcp_pose(obs["robot_obs"]) == pytest.approx(sample.trajectory[index], abs=1e-4)
                image = dataset.load_image(sample, "start" if which == "start" else "goal")
                same = np.all(obs["rgb_static"] == image, axis=-1).mean()
                # a reset places the state from robot_obs/scene_obs and takes one physics step: a handful of
                # edge pixels move
                assert same > 0.999, (sample.id, which, same)
    finally:
        env.close()


def test_oracle_scores_one_and_blind_less(manip_sets, tmp_path):
    assert (
        main(
            [
                "score",
                "--dataset",
                str(manip_sets[0]),
                "--predictions",
                "answer-key",
                "--output",
                str(tmp_path / "o"),
            ]
        )
        == 0
    )
    summary = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert summary["mean_score"] == 1.0 and 0.0 <= summary["baselines"]["blind"] < 1.0
    assert summary["by_kind"]["manip"]["components"]["s_grip"] == 1.0
