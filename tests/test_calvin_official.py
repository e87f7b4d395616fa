"""The official-env bridge: info -> snapshot conversion (always), driving ``calvin_env`` (when installed)."""

from __future__ import annotations

import os

import numpy as np
import pytest

from envs.calvin.official import calvin_env_available, snapshot_from_official
from envs.calvin.tasks import completed_tasks

ROBOT, TABLE, PLANE, RED, BLUE, PINK = 1, 2, 3, 4, 5, 6


def contact(other: int, link: int) -> tuple:
    """A PyBullet contact tuple; only bodyB (index 2) and linkIndexB (index 4) matter here."""
    return (0, 0, other, -1, link, (0, 0, 0), (0, 0, 0), (0, 0, 1), 0.0, 1.0)


def official_info(red_contacts: list, robot_contacts: list, red_z: float = 0.46) -> dict:
    """The shape of calvin_env's ``env.get_info()``: robot_info + scene_info with uids and contacts."""
    def block(uid: int, pos: list, contacts: list) -> dict:
        return {"uid": uid, "current_pos": pos, "current_orn": [0, 0, 0, 1], "current_lin_vel": [0, 0, 0],
                "current_ang_vel": [0, 0, 0], "contacts": contacts}
    return {
        "robot_info": {"uid": ROBOT, "contacts": robot_contacts},
        "scene_info": {
            "fixed_objects": {"table": {"uid": TABLE, "links": {"base_link": -1, "plank_link": 6, "drawer_link": 3}}},
            "movable_objects": {"block_red": block(RED, [0.05, -0.12, red_z], red_contacts),
                                "block_blue": block(BLUE, [0.23, -0.12, 0.46], [contact(TABLE, -1)]),
                                "block_pink": block(PINK, [-0.24, 0.09, 0.46], [contact(TABLE, 6)])},
        },
    }


def test_official_info_becomes_an_oracle_snapshot():
    start = snapshot_from_official([0] * 15, [0] * 24, official_info([contact(TABLE, -1)], []))
    assert start["blocks"]["red"]["contacts"] == [["table", "base_link"]]
    assert start["blocks"]["pink"]["contacts"] == [["table", "plank_link"]]
    held = [contact(ROBOT, 9), contact(ROBOT, 11)]
    names = {(ROBOT, 9): "panda_leftfinger", (ROBOT, 11): "panda_rightfinger"}
    end = snapshot_from_official([0] * 15, [0] * 24, official_info(held, [contact(RED, -1)], red_z=0.53),
                                 link_name=lambda uid, link: names.get((uid, link), "base_link"))
    assert end["blocks"]["red"]["contacts"] == [["robot", "panda_leftfinger"], ["robot", "panda_rightfinger"]]
    assert end["robot_contacts"] == [["block_red", "base_link"]]
    assert completed_tasks(start, end) == {"lift_red_block_table"}
    floor = snapshot_from_official([0] * 15, [0] * 24, official_info([contact(PLANE, -1)], []))
    assert floor["blocks"]["red"]["contacts"] == [["plane", "base_link"]]


@pytest.mark.skipif(not calvin_env_available(), reason="calvin_env (mees/calvin) is not installed; it cannot "
                    "come from a package registry, so the official-env path is tested only where a user has it")
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
    CALVIN_ENV is None, reason="calvin_env is not importable (set CALVIN_ENV to a mees/calvin_env checkout and "
    "install the calvin-official extra); it cannot come from a package registry, so CI skips the official route")


@needs_calvin_env
def test_expert_chain_on_the_official_backend_records_the_commit(tmp_path):
    """`--backend official --calvin-env PATH` (no dataset split) runs the expert through a whole chain,
    without cameras, and the manifest names calvin_env's path, commit and asset hashes."""
    import json
    import subprocess

    from benchmarks.calvin import main

    summary = main(["--output", str(tmp_path), "--no-progress", "--backend", "official", "--calvin-env", CALVIN_ENV,
                    "--num-sequences", "1", "--run-name", "official"])
    assert summary.data["avg_seq_len"] == 5.0  # chain 0 (rotate, slider, lift, place, lightbulb) all solved
    manifest = json.loads((tmp_path / "calvin" / "official" / "manifest.json").read_text())
    commit = subprocess.run(["git", "-C", CALVIN_ENV, "rev-parse", "HEAD"], capture_output=True, text=True).stdout
    assert manifest["calvin_env"]["commit"] == commit.strip() and len(commit.strip()) == 40
    assert manifest["calvin_env"]["asset_sha256"]["calvin_table_D/urdf/calvin_table_D.urdf"]


@needs_calvin_env
def test_official_env_renders_only_the_asked_cameras_and_reports_link_poses():
    from envs.calvin.env import TABLE_LINKS, PlayTableEnv
    from envs.calvin.official import OfficialPlayTableEnv

    official = OfficialPlayTableEnv(calvin_env_path=CALVIN_ENV, cameras=("static",))
    builtin = PlayTableEnv(cameras=())
    scene = [0.0] * 6 + [0.05, -0.12, 0.46, 0, 0, 1.5, 0.23, -0.12, 0.46, 0, 0, 1.5, -0.24, 0.09, 0.46, 0, 0, 1.5]
    obs, _ = official.reset(options={"scene_obs": scene})
    builtin.reset(options={"scene_obs": scene})
    assert official.cameras == ("static",) and "rgb_static" in obs and "rgb_gripper" not in obs
    for link in TABLE_LINKS[1:]:  # the table bases differ in where their frame sits; the links agree
        (p_o, r_o), (p_b, r_b) = official.link_pose(link), builtin.link_pose(link)
        # CALVIN writes 1.5708 for pi/2 in some links: 4e-6 rad off
        assert np.allclose(p_o, p_b, atol=1e-3) and np.allclose(r_o, r_b, atol=1e-5), link
    official.close()
    builtin.close()
