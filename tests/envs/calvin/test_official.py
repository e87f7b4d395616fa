"""The official-env bridge: info -> snapshot conversion (always), driving ``calvin_env`` (when installed)."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import numpy as np
import pytest

from envs.calvin.official import (
    CALVIN_ENV_PACKAGES,
    INSTALL_EXTRA,
    calvin_env_action,
    calvin_env_available,
    calvin_env_problem,
    import_problem,
    snapshot_from_official,
)
from envs.calvin.tasks import completed_tasks
from policies.config_cli import EXIT_BAD_INPUT, run_cli

ROOT = Path(__file__).resolve().parents[3]

ROBOT, TABLE, PLANE, RED, BLUE, PINK = 1, 2, 3, 4, 5, 6


def contact(other: int, link: int) -> tuple:
    """A PyBullet contact tuple; only bodyB (index 2) and linkIndexB (index 4) matter here."""
    return (0, 0, other, -1, link, (0, 0, 0), (0, 0, 0), (0, 0, 1), 0.0, 1.0)


def official_info(red_contacts: list, robot_contacts: list, red_z: float = 0.46) -> dict:
    """The shape of calvin_env's ``env.get_info()``: robot_info + scene_info with uids and contacts."""

    def block(uid: int, pos: list, contacts: list) -> dict:
        return {
            "uid": uid,
            "current_pos": pos,
            "current_orn": [0, 0, 0, 1],
            "current_lin_vel": [0, 0, 0],
            "current_ang_vel": [0, 0, 0],
            "contacts": contacts,
        }

    return {
        "robot_info": {"uid": ROBOT, "contacts": robot_contacts},
        "scene_info": {
            "fixed_objects": {
                "table": {"uid": TABLE, "links": {"base_link": -1, "plank_link": 6, "drawer_link": 3}}
            },
            "movable_objects": {
                "block_red": block(RED, [0.05, -0.12, red_z], red_contacts),
                "block_blue": block(BLUE, [0.23, -0.12, 0.46], [contact(TABLE, -1)]),
                "block_pink": block(PINK, [-0.24, 0.09, 0.46], [contact(TABLE, 6)]),
            },
        },
    }


def test_official_info_becomes_an_oracle_snapshot():
    start = snapshot_from_official([0] * 15, [0] * 24, official_info([contact(TABLE, -1)], []))
    assert start["blocks"]["red"]["contacts"] == [["table", "base_link"]]
    assert start["blocks"]["pink"]["contacts"] == [["table", "plank_link"]]
    held = [contact(ROBOT, 9), contact(ROBOT, 11)]
    names = {(ROBOT, 9): "panda_leftfinger", (ROBOT, 11): "panda_rightfinger"}
    end = snapshot_from_official(
        [0] * 15,
        [0] * 24,
        official_info(held, [contact(RED, -1)], red_z=0.53),
        link_name=lambda uid, link: names.get((uid, link), "base_link"),
    )
    assert end["blocks"]["red"]["contacts"] == [["robot", "panda_leftfinger"], ["robot", "panda_rightfinger"]]
    assert end["robot_contacts"] == [["block_red", "base_link"]]
    assert completed_tasks(start, end) == {"lift_red_block_table"}
    floor = snapshot_from_official([0] * 15, [0] * 24, official_info([contact(PLANE, -1)], []))
    assert floor["blocks"]["red"]["contacts"] == [["plane", "base_link"]]


@pytest.mark.skipif(
    not calvin_env_available(),
    reason="calvin_env (mees/calvin) is not installed; it cannot "
    "come from a package registry, so the official-env path is tested only where a user has it",
)
def test_official_env_runs_through_the_same_interface():
    from envs.calvin.official import OfficialPlayTableEnv

    dataset = os.environ.get("CALVIN_DATASET")
    if not dataset:
        pytest.skip("set CALVIN_DATASET to a CALVIN split folder with .hydra/merged_config.yaml")
    env = OfficialPlayTableEnv(dataset_path=dataset)
    obs, info = env.reset(options={"task": "open_drawer"})
    assert obs["robot_obs"].shape == (15,) and set(info["snapshot"]["blocks"]) == {"red", "blue", "pink"}
    obs, _, _, truncated, info = env.step(np.array([0, 0, 0, 0, 0, 0, 1.0]))
    assert "is_success" in info and not truncated
    env.close()


def _calvin_env_checkout() -> str | None:
    """A calvin_env checkout to test with: $CALVIN_ENV, else the importable package's (None: neither)."""
    path = os.environ.get("CALVIN_ENV")
    if path:
        return path if calvin_env_available(path) else None
    if not calvin_env_available():
        return None
    from envs.calvin.official import checkout_root

    return str(checkout_root())


CALVIN_ENV = _calvin_env_checkout()
needs_calvin_env = pytest.mark.skipif(
    CALVIN_ENV is None,
    reason="calvin_env is not importable (set CALVIN_ENV to a mees/calvin_env checkout and "
    "install the calvin-official extra); it cannot come from a package registry, so CI skips the official route",
)


@needs_calvin_env
def test_expert_chain_on_the_official_backend_records_the_commit(tmp_path):
    """`--backend official --calvin-env PATH` (no dataset split) runs the expert through a whole chain,
    without cameras, and the manifest names calvin_env's path, commit and asset hashes."""
    import json
    import subprocess

    from benchmarks.calvin import main

    summary = main(
        [
            "--output",
            str(tmp_path),
            "--no-progress",
            "--backend",
            "official",
            "--calvin-env",
            CALVIN_ENV,
            "--num-sequences",
            "1",
            "--run-name",
            "official",
        ]
    )
    assert summary.data["avg_seq_len"] == 5.0  # chain 0 (rotate, slider, lift, place, lightbulb) all solved
    manifest = json.loads((tmp_path / "calvin" / "official" / "manifest.json").read_text())
    commit = subprocess.run(
        ["git", "-C", CALVIN_ENV, "rev-parse", "HEAD"], capture_output=True, text=True
    ).stdout
    assert manifest["calvin_env"]["commit"] == commit.strip() and len(commit.strip()) == 40
    assert manifest["calvin_env"]["asset_sha256"]["calvin_table_D/urdf/calvin_table_D.urdf"]


@needs_calvin_env
def test_official_env_renders_only_the_asked_cameras_and_reports_link_poses():
    from envs.calvin.env import TABLE_LINKS, PlayTableEnv
    from envs.calvin.official import OfficialPlayTableEnv

    official = OfficialPlayTableEnv(calvin_env_path=CALVIN_ENV, cameras=("static",))
    builtin = PlayTableEnv(cameras=())
    scene = [0.0] * 6 + [
        0.05,
        -0.12,
        0.46,
        0,
        0,
        1.5,
        0.23,
        -0.12,
        0.46,
        0,
        0,
        1.5,
        -0.24,
        0.09,
        0.46,
        0,
        0,
        1.5,
    ]
    obs, _ = official.reset(options={"scene_obs": scene})
    builtin.reset(options={"scene_obs": scene})
    assert official.cameras == ("static",) and "rgb_static" in obs and "rgb_gripper" not in obs
    for link in TABLE_LINKS[1:]:  # the table bases differ in where their frame sits; the links agree
        (p_o, r_o), (p_b, r_b) = official.link_pose(link), builtin.link_pose(link)
        # CALVIN writes 1.5708 for pi/2 in some links: 4e-6 rad off
        assert np.allclose(p_o, p_b, atol=1e-3) and np.allclose(r_o, r_b, atol=1e-5), link
    official.close()
    builtin.close()


# ------------------------------------------------------------------------------ installing calvin_env


@pytest.fixture
def checkout_without_cv2(tmp_path, monkeypatch):
    """A calvin_env checkout whose env module imports cv2 at module level, as calvin_env's does, in a
    process where cv2 is not installed; the real calvin_env modules (if any) come back afterwards."""
    root = tmp_path / "calvin_env"
    (root / "conf").mkdir(parents=True)
    (root / "calvin_env" / "envs").mkdir(parents=True)
    (root / "calvin_env" / "__init__.py").write_text("")
    (root / "calvin_env" / "envs" / "__init__.py").write_text("")
    (root / "calvin_env" / "envs" / "play_table_env.py").write_text("import cv2\n")
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setitem(sys.modules, "cv2", None)  # `import cv2` raises ModuleNotFoundError(name="cv2")
    for name in [m for m in sys.modules if m.split(".")[0] == "calvin_env"]:
        monkeypatch.delitem(sys.modules, name)
    yield str(root)
    for name in [m for m in sys.modules if m.split(".")[0] == "calvin_env"]:
        del sys.modules[name]  # the fake's; monkeypatch puts the real ones back


def test_a_missing_package_is_named_with_the_exact_fix(checkout_without_cv2, capsys):
    """calvin_env imports cv2 at module level: the error names cv2, its package and the install command
    (with the constraints file), and the benchmark refuses in one line with exit 2 before any worker."""
    from benchmarks.calvin import main

    problem = calvin_env_problem(checkout_without_cv2)
    assert "'cv2'" in problem and "opencv-python-headless" in problem and INSTALL_EXTRA in problem
    argv = ["--backend", "official", "--calvin-env", checkout_without_cv2, "--output", "/no/such/dir"]
    assert run_cli(main, argv) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert (
        err.startswith("error: --backend official: calvin_env needs the module 'cv2'")
        and err.count("\n") == 1
    )


@pytest.mark.parametrize(
    ("error", "words"),
    [
        (
            ModuleNotFoundError("No module named 'calvin_env'", name="calvin_env"),
            ["--calvin-env PATH", "mees/calvin_env"],
        ),
        (
            ModuleNotFoundError("No module named 'quaternion'", name="quaternion"),
            ["numpy-quaternion", INSTALL_EXTRA],
        ),
        (ModuleNotFoundError("No module named 'tacto'", name="tacto"), ["'tacto'", "pip install tacto"]),
        (ImportError("numpy.core.multiarray failed to import"), ["numpy.core.multiarray", INSTALL_EXTRA]),
    ],
)
def test_import_problems_say_what_is_missing_and_how_to_fix_it(error, words):
    problem = import_problem(error)
    assert all(w in problem for w in words) and "\n" not in problem


def test_the_extra_installs_every_package_calvin_env_imports_under_the_pins():
    """Each module calvin_env imports for scene D comes with the calvin-official extra; the constraints pin
    OpenCV to a release built for the pinned NumPy 1.26 (both builds alike), and the guide installs with them."""
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    requirements = [*project["dependencies"], *extras["calvin"], *extras["calvin-official"]]
    names = {re.split(r"[<>=!;\[ ]", r, maxsplit=1)[0].lower() for r in requirements}
    assert set(CALVIN_ENV_PACKAGES.values()) <= names
    pins = dict(
        line.split("==")
        for line in (ROOT / "constraints.txt").read_text().splitlines()
        if "==" in line and not line.startswith("#")
    )
    assert (
        pins["numpy"].startswith("1.")
        and pins["opencv-python-headless"] == pins["opencv-python"] == "4.11.0.86"
    )
    assert INSTALL_EXTRA in (ROOT / "docs" / "guide" / "calvin.md").read_text()


# ---------------------------------------------------------------------------------------- actions


def test_absolute_actions_become_calvin_envs_pose_tuple_and_the_next_target():
    """Our absolute action (world xyz in metres, PyBullet Euler xyz, gripper) is calvin_env's
    (pos, euler, gripper) tuple unchanged, and the pose comes back as the target the next action builds on
    (calvin_env leaves its own accumulated target where the reset put it)."""
    from scipy.spatial.transform import Rotation

    from envs.calvin.bullet import pb

    pose = np.array([0.1, -0.2, 0.5, 3.1, -0.03, 1.5, 0.7])
    (pos, orn, gripper), target = calvin_env_action(pose, "absolute")
    assert pos.tolist() == pose[:3].tolist() and orn.tolist() == pose[3:6].tolist() and gripper == 1
    np.testing.assert_array_equal(target[0], pose[:3])
    np.testing.assert_array_equal(target[1], pose[3:6])
    # calvin_env drives to getQuaternionFromEuler(orn): the extrinsic xyz rotation robot_obs[3:6] reports
    quat = Rotation.from_quat(pb.getQuaternionFromEuler(orn.tolist()))
    assert np.allclose(quat.as_matrix(), Rotation.from_euler("xyz", orn).as_matrix(), atol=1e-6)
    assert np.allclose(pb.getEulerFromQuaternion(pb.getQuaternionFromEuler(orn.tolist())), orn, atol=1e-6)
    command, target = calvin_env_action(np.array([2, 0, -3, 0, 0, 0.5, -0.2]), "relative")
    assert command.tolist() == [1, 0, -1, 0, 0, 0.5, -1] and target is None
    with pytest.raises(ValueError, match="7 finite"):
        calvin_env_action(np.array([0, 0, 0, 0, 0, np.nan, 1]), "absolute")


# ---------------------------------------------------------------------------- with calvin_env here


@needs_calvin_env
def test_absolute_actions_on_the_official_env_solve_a_chain_as_on_the_builtin_table():
    """The expert in absolute mode completes chain 0 on calvin_env (0 of 5 subtasks before: every action was
    built from the reset pose), and target_pose() is the last commanded pose on both backends."""
    from benchmarks.calvin import evaluation_chains
    from benchmarks.calvin.chain import run_chain
    from envs.calvin.env import PlayTableEnv
    from envs.calvin.official import OfficialPlayTableEnv
    from envs.calvin.sequences import initial_env_state
    from policies.experts.calvin import ScriptedExpert

    ((state, tasks),) = evaluation_chains(1)
    robot_obs, scene_obs = initial_env_state(state)
    for env in (
        OfficialPlayTableEnv(calvin_env_path=CALVIN_ENV, cameras=(), action_mode="absolute"),
        PlayTableEnv(cameras=(), action_mode="absolute"),
    ):
        obs, _ = env.reset(options={"robot_obs": robot_obs, "scene_obs": scene_obs})
        goal = obs["robot_obs"][:7] + np.array([0.03, 0.0, -0.02, 0.0, 0.0, 0.0, 0.0])
        goal[6] = 1.0  # open
        env.step(goal)
        assert np.allclose(np.concatenate(env.target_pose()), goal[:6]), type(env).__name__
        policy = ScriptedExpert()
        policy.bind(env)
        record = run_chain(env, policy, robot_obs, scene_obs, list(tasks), list(tasks))
        assert record["extras"]["num_completed"] == 5, type(env).__name__
        env.close()


@needs_calvin_env
def test_the_official_env_honours_the_egl_renderer():
    """renderer="egl" loads calvin_env's EGL plugin (shadows, other lighting: the image changes) and the env
    says which renderer it used."""
    from envs.calvin.camera import egl_problem
    from envs.calvin.official import OfficialPlayTableEnv

    if problem := egl_problem():
        pytest.skip(problem)
    images = {}
    for renderer in ("tiny", "egl"):
        env = OfficialPlayTableEnv(calvin_env_path=CALVIN_ENV, cameras=("static",), renderer=renderer)
        assert env.renderer == renderer and env._env.use_egl == (renderer == "egl")
        images[renderer] = env.reset()[0]["rgb_static"].astype(int)
        env.close()
    assert np.abs(images["egl"] - images["tiny"]).mean() > 3


@needs_calvin_env
def test_the_calvin_layout_is_calvin_envs_own_get_obs():
    """obs_layout="calvin" on the official bridge has exactly the keys, at every level, and the images of
    calvin_env's get_obs() (what CALVIN's evaluate_policy hands a model)."""
    from envs.calvin.official import OfficialPlayTableEnv

    env = OfficialPlayTableEnv(calvin_env_path=CALVIN_ENV, depth=True, obs_layout="calvin")
    obs, _ = env.reset()
    raw = env._env.get_obs()
    assert set(obs) == set(raw) and set(obs["rgb_obs"]) == set(raw["rgb_obs"]) == {
        "rgb_static",
        "rgb_gripper",
    }
    assert set(obs["depth_obs"]) == set(raw["depth_obs"]) == {"depth_static", "depth_gripper"}
    np.testing.assert_array_equal(obs["rgb_obs"]["rgb_static"], raw["rgb_obs"]["rgb_static"])
    np.testing.assert_allclose(
        obs["depth_obs"]["depth_gripper"], raw["depth_obs"]["depth_gripper"], rtol=1e-6
    )
    assert env.observation_space.contains(obs)
    env.close()


@needs_calvin_env
@pytest.mark.parametrize("scene", ["A", "C"])
def test_official_scene_lists_its_blocks_in_its_own_order_as_the_builtin_does(scene):
    """calvin_env composed for ``scene`` and the built-in table reset to the same evaluation state report the
    same ``scene_obs`` (block slots in the scene's order) and the same link origins."""
    from envs.calvin.env import PlayTableEnv
    from envs.calvin.official import OfficialPlayTableEnv
    from envs.calvin.sequences import initial_env_state, symbolic_initial_states

    official = OfficialPlayTableEnv(calvin_env_path=CALVIN_ENV, cameras=(), scene=scene)
    builtin = PlayTableEnv(cameras=(), scene=scene)
    try:
        robot_obs, scene_obs = initial_env_state(symbolic_initial_states()[7], scene)
        a, _ = official.reset(options={"robot_obs": robot_obs, "scene_obs": scene_obs})
        b, _ = builtin.reset(options={"robot_obs": robot_obs, "scene_obs": scene_obs})
        np.testing.assert_allclose(a["scene_obs"][:6], b["scene_obs"][:6], atol=1e-6)
        for color in official.scene_spec.block_colors:  # each slot holds the same block, resting in place
            s = official.scene_spec.block_slice(color)
            np.testing.assert_allclose(a["scene_obs"][s][:2], b["scene_obs"][s][:2], atol=2e-3)
        for link in ("slide_link", "drawer_link", "button_link", "switch_link"):
            np.testing.assert_allclose(official.link_pose(link)[0], builtin.link_pose(link)[0], atol=1e-3)
    finally:
        official.close()
        builtin.close()
