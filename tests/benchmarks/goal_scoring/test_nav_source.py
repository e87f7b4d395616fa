"""Goal-image navigation pairs from the navigation homes: camera maths, physical motions, exact ground truth,
reproducibility, and the ``generate --source nav`` command end to end."""

from __future__ import annotations

import dataclasses
import itertools
import json
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from action_mapping import (
    NAVIGATION_STEP_SIZES,
    PlanStep,
    Primitive,
    parse_plan,
    plan_to_trajectory,
    trajectory_to_plan,
)
from action_mapping.trajectory import step_count_rows
from benchmarks.goal_scoring import load_dataset
from benchmarks.goal_scoring.cli import main
from envs.navigation.camera import Intrinsics, c2w_from_pose, pose_from_c2w, project, view_overlap
from envs.navigation.env import EBNavigationEnv
from envs.navigation.motion import execute_step, shrink_translation
from envs.navigation.scene import generate_scene, scene_key, scene_obstacles
from envs.navigation.world import AgentPose, World, camera_height_limits
from tests.nav_scenes import empty_room, episode

SIZES = NAVIGATION_STEP_SIZES
N_PAIRS = 4


# ------------------------------------------------------------------------------------------- camera


def test_projection_hand_worked():
    # Heading 90 deg looks along world +y; its right is world +x, down is world -z.
    c2w = c2w_from_pose(AgentPose(1.0, 2.0, heading_deg=90.0, height=1.5))
    assert np.allclose(c2w[:3, :3], [[1, 0, 0], [0, 0, 1], [0, -1, 0]], atol=1e-12)
    intr = Intrinsics(100, 100, 90.0)  # focal 50 px
    u, v, z = project(np.array([2.0, 4.0, 1.5]), intr, c2w)  # 1 m right, 2 m ahead, level
    assert (float(u), float(v), float(z)) == pytest.approx((75.0, 50.0, 2.0))
    u, v, _ = project(np.array([1.0, 3.0, 1.0]), intr, c2w)  # 0.5 m below, 1 m ahead: 25 px down
    assert (float(u), float(v)) == pytest.approx((50.0, 75.0))


@settings(max_examples=60, deadline=None)
@given(st.floats(0, 360), st.floats(-80, 80), st.floats(-170, 170), st.floats(0.3, 2.5))
def test_pose_c2w_round_trip(heading, pitch, roll, height):
    c2w = c2w_from_pose(AgentPose(0.5, -1.0, heading, pitch, roll, height))
    assert np.allclose(c2w_from_pose(pose_from_c2w(c2w)), c2w, atol=1e-9)


def _wall_views(size: int = 64) -> tuple[Intrinsics, np.ndarray, np.ndarray, np.ndarray]:
    """A camera 2 m from a fronto-parallel wall and one stepped 2 m back (depth images of both)."""
    intr = Intrinsics(size, size, 90.0)
    start = np.eye(4)
    goal = np.eye(4)
    goal[2, 3] = -2.0
    return intr, start, goal, np.full((size, size), 2.0)


def test_view_overlap_hand_worked():
    intr, start, goal, start_depth = _wall_views()
    # From 4 m the goal sees a wall patch twice as wide: the start view covers its middle half per axis.
    assert view_overlap(np.full((64, 64), 4.0), goal, start_depth, start, intr) == pytest.approx(0.25)
    assert view_overlap(start_depth, start, start_depth, start, intr) == 1.0
    # Something 1 m in front of the start camera hides the wall: nothing of the goal is seen from the start.
    assert view_overlap(np.full((64, 64), 4.0), goal, np.full((64, 64), 1.0), start, intr) == 0.0


# ------------------------------------------------------------------------------------------ motions


def test_blocked_translation_is_shortened_to_a_free_whole_count():
    world = World(empty_room(4.0, 4.0, objects=[]))
    # Facing +x at x = 3.6: the wall face is at 3.94 and the disc radius 0.18, so 0.16 m are free.
    c2w = c2w_from_pose(AgentPose(3.6, 2.0, 0.0))
    step, reached = execute_step(
        world, c2w, PlanStep([Primitive.DOLLY_IN, Primitive.PAN_LEFT], [10, 1]), SIZES
    )
    # 10 -> 7 -> fits
    assert step.actions == [Primitive.DOLLY_IN, Primitive.PAN_LEFT] and step.step_nums == [
        7,
        1,
    ]
    assert reached[0, 3] == pytest.approx(3.6 + 7 * SIZES.translation)
    assert shrink_translation(PlanStep([Primitive.TRUCK_LEFT], [1])) is None
    # A tilt beyond the +30 deg limit cannot be carried out; a free move is kept as drawn.
    assert execute_step(world, c2w, PlanStep([Primitive.TILT_UP], [2]), SIZES) is None
    step, _ = execute_step(world, c2w, PlanStep([Primitive.DOLLY_OUT], [10]), SIZES)
    assert step.step_nums == [10]


# ------------------------------------------------------------------------------- generated datasets


@pytest.fixture(scope="module")
def nav_sets(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The same command run twice (same seed) into two folders."""
    roots = [tmp_path_factory.mktemp(name) / "nav" for name in ("first", "second")]
    for root in roots:
        assert (
            main(["generate", "--source", "nav", "--n", str(N_PAIRS), "--seed", "7", "--out", str(root)]) == 0
        )
    return roots[0], roots[1]


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_same_seed_gives_byte_identical_datasets(nav_sets):
    first, second = _files(nav_sets[0]), _files(nav_sets[1])
    assert len(first) == 2 + 2 * N_PAIRS and first == second


def test_plans_match_the_recorded_trajectories(nav_sets):
    for sample in load_dataset(nav_sets[0]):
        poses = sample.trajectory
        assert 1 <= len(sample.plan.steps) <= 6 and len(poses) == len(sample.plan.steps) + 1
        assert sample.plan.step_sizes == SIZES
        assert np.allclose(
            plan_to_trajectory(sample.plan, poses[0], SIZES.translation, SIZES.rotation), poses, atol=1e-9
        )
        derived = trajectory_to_plan(poses, SIZES.translation, SIZES.rotation)
        assert step_count_rows(derived.steps)[0] == step_count_rows(sample.plan.steps)[0]
        commanded = step_count_rows(load_commanded(sample.metadata["commanded_plan"]))[0]
        executed = step_count_rows(sample.plan.steps)[0]
        unclipped = [i for i in range(len(executed)) if i not in sample.metadata["clipped_steps"]]
        assert all(commanded[i] == executed[i] for i in unclipped)


def load_commanded(plan_json: dict) -> list[PlanStep]:
    return parse_plan(json.dumps(plan_json, ensure_ascii=False)).steps


def test_motions_are_physically_possible(nav_sets):
    for sample in load_dataset(nav_sets[0]):
        scene = generate_scene(sample.metadata["home_seed"])
        assert scene_key(scene) == sample.metadata["scene_key"]
        obstacles, (low, high) = scene_obstacles(scene), camera_height_limits(scene)
        poses = sample.trajectory
        for a, b in itertools.pairwise(poses):
            assert obstacles.blocker(a[:2, 3], b[:2, 3]) is None
        assert np.all((poses[:, 2, 3] >= low - 1e-9) & (poses[:, 2, 3] <= high + 1e-9))
        pitches = [math.degrees(math.asin(p[2, 2])) for p in poses]  # elevation of the optical axis
        assert all(-60 - 1e-6 <= p <= 30 + 1e-6 for p in pitches)


def test_images_re_render_from_the_recorded_cameras(nav_sets):
    """Re-render every start and goal view through the env at the recorded C2W poses and compare."""
    dataset = load_dataset(nav_sets[0])
    camera = dataset.samples[0].metadata["camera"]
    env = EBNavigationEnv(width=camera["width"], height=camera["height"], fov=camera["fovy_deg"], depth=True)
    try:
        for sample in dataset:
            scene = generate_scene(sample.metadata["home_seed"])
            env.reset(options={"episode": episode(scene, 0.0, 0.0, 0.0, target=scene["objects"][0]["id"])})
            views = {}
            for which, c2w in (("start", sample.trajectory[0]), ("goal", sample.trajectory[-1])):
                snapshot = env.unwrapped.snapshot()
                snapshot["agent"] = dataclasses.asdict(pose_from_c2w(c2w))  # unrounded: the exact camera
                obs = env.unwrapped.restore(snapshot)
                assert np.array_equal(obs["rgb"], dataset.load_image(sample, which)), (sample.id, which)
                views[which] = obs["depth"]
            overlap = view_overlap(
                views["goal"],
                sample.trajectory[-1],
                views["start"],
                sample.trajectory[0],
                Intrinsics(camera["width"], camera["height"], camera["fovy_deg"]),
            )
            assert overlap >= sample.metadata["min_overlap"] == 0.5
            assert overlap == pytest.approx(sample.metadata["overlap"], abs=1e-4)
    finally:
        env.close()


def test_oracle_scores_one_and_blind_less(nav_sets, tmp_path, capsys):
    assert (
        main(
            [
                "score",
                "--dataset",
                str(nav_sets[0]),
                "--predictions",
                "answer-key",
                "--output",
                str(tmp_path / "o"),
            ]
        )
        == 0
    )
    assert f"| answer-key | {N_PAIRS} | 1.0000 [1.0000, 1.0000] |" in capsys.readouterr().out
    summary = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert summary["mean_score"] == 1.0 and 0.0 <= summary["baselines"]["blind"] < 1.0
