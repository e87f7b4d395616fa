"""The scene interface privileged policies read (snapshot, target pose, table link poses), on the built-in
table: what lets the scripted expert run on the official calvin_env as well
(tests/envs/calvin/test_official.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from envs.calvin import constants as C
from envs.calvin.assets import OFFICIAL_ROTATED_LINKS, builtin_frame, official_data_dir
from envs.calvin.env import TABLE_LINKS, PlayTableEnv
from policies.base import EpisodeContext
from policies.experts.calvin import ScriptedExpert

pytest.importorskip("pybullet")

# Drawer closed, slider right, lights off; blocks on the table (the red one at a table spot).
SCENE = np.array(
    [
        0.0,
        0.0,
        0.0,
        0.0,
        0.0,
        0.0,
        0.05,
        -0.12,
        0.46,
        0,
        0,
        math.pi / 2,
        0.23,
        -0.12,
        0.46,
        0,
        0,
        math.pi / 2,
        -0.24,
        0.09,
        0.46,
        0,
        0,
        math.pi / 2,
    ]
)


class InterfaceOnly:
    """Exposes nothing of an env but the scene interface (and Gymnasium's step), as calvin_env's bridge
    does: a policy reaching for the built-in env's internals (``env.sim``) fails here."""

    def __init__(self, env: PlayTableEnv) -> None:
        self._env = env
        self.action_mode = env.action_mode

    @property
    def unwrapped(self) -> InterfaceOnly:
        return self

    def snapshot(self) -> dict:
        return self._env.snapshot()

    def target_pose(self) -> tuple[np.ndarray, np.ndarray]:
        return self._env.target_pose()

    def link_pose(self, link: str) -> tuple[np.ndarray, np.ndarray]:
        return self._env.link_pose(link)


@pytest.fixture(scope="module")
def env():
    e = PlayTableEnv(cameras=())
    yield e
    e.close()


def test_link_poses_follow_the_joints(env):
    env.reset(options={"scene_obs": SCENE})
    closed = {link: env.link_pose(link) for link in TABLE_LINKS}
    for pos, rot in closed.values():
        assert pos.shape == (3,) and np.allclose(rot @ rot.T, np.eye(3), atol=1e-6)
    assert np.allclose(closed["drawer_link"][0], C.DRAWER_ORIGIN, atol=1e-6)
    opened = SCENE.copy()
    opened[1] = 0.22  # drawer open: its frame moves 0.22 m toward -y, without turning
    env.reset(options={"scene_obs": opened})
    pos, rot = env.link_pose("drawer_link")
    assert np.allclose(pos - closed["drawer_link"][0], [0, -0.22, 0], atol=1e-4)
    assert np.allclose(rot, closed["drawer_link"][1], atol=1e-6)


def test_unknown_link_is_a_clear_error(env):
    env.reset(options={"scene_obs": SCENE})
    with pytest.raises(ValueError, match="unknown table link 'door_link'; known: base_link"):
        env.link_pose("door_link")


def test_calvin_link_frames_turn_into_the_builtin_convention():
    calvin_drawer = Rotation.from_euler("x", math.pi / 2).as_matrix()  # CALVIN's URDF: rpy (pi/2, 0, 0)
    assert np.allclose(builtin_frame("drawer_link", calvin_drawer), np.eye(3), atol=1e-12)
    assert "slide_link" not in OFFICIAL_ROTATED_LINKS and "switch_link" not in OFFICIAL_ROTATED_LINKS
    assert builtin_frame("switch_link", calvin_drawer) is calvin_drawer


def test_calvin_assets_accept_a_checkout_or_its_data_folder(tmp_path):
    (tmp_path / "data" / "calvin_table_D").mkdir(parents=True)
    assert official_data_dir(tmp_path) == tmp_path / "data"
    assert official_data_dir(tmp_path / "data") == tmp_path / "data"
    from envs.calvin.assets import official_assets

    with pytest.raises(FileNotFoundError, match=r"plane/plane\.urdf"):
        official_assets(tmp_path)


def test_expert_needs_only_the_interface(env):
    """The expert opens the drawer driving an env it sees only through the scene interface."""
    env.reset(options={"scene_obs": SCENE})
    env.begin_subtask("open_drawer")
    policy = ScriptedExpert()
    policy.bind(InterfaceOnly(env))
    policy.reset(EpisodeContext("pull the handle to open the drawer", 0, extras={"task": "open_drawer"}))
    done = False
    for _ in range(200):
        _, _, done, _, _ = env.step(policy.act({}))
        if done:
            break
    assert done and env.snapshot()["scene_obs"][1] > 0.12


def test_calvin_env_flags_need_the_official_backend(tmp_path):
    from benchmarks.calvin import CalvinConfig

    with pytest.raises(
        ValueError, match="--calvin-env and --calvin-dataset configure calvin_env: add --backend official"
    ):
        CalvinConfig(calvin_env=str(tmp_path))
    with pytest.raises(ValueError, match="--calvin-assets is for the built-in table"):
        CalvinConfig(backend="official", calvin_assets=str(tmp_path))


def test_manifest_hashes_the_calvin_asset_files(tmp_path):
    """--calvin-assets runs record which CALVIN files they loaded (results depend on them)."""
    import hashlib

    from benchmarks.calvin import CalvinConfig, calvin_sources
    from envs.calvin.assets import OFFICIAL_LAYOUT

    for rel in OFFICIAL_LAYOUT.values():
        (tmp_path / "data" / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "data" / rel).write_text(f"<robot name='{rel}'/>")
    sources = calvin_sources(CalvinConfig(calvin_assets=str(tmp_path)))
    table = OFFICIAL_LAYOUT["table"]
    expected = hashlib.sha256(f"<robot name='{table}'/>".encode()).hexdigest()[:16]
    assert set(sources["calvin_assets"]) == set(OFFICIAL_LAYOUT.values())
    assert sources["calvin_assets"][table] == expected and "calvin_env" not in sources
