"""The built-in CALVIN play-table as a Gymnasium env: contract, exact placement, determinism, cameras."""

from __future__ import annotations

import json
import subprocess
import sys
import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import envs
from action_mapping import Primitive
from action_mapping.trajectory import StepMotion
from envs.calvin import constants as C
from envs.calvin.assets import block_urdf, table_urdf, write_cached
from envs.calvin.camera import egl_problem
from envs.calvin.env import PlayTableEnv
from envs.calvin.obs_layout import flat_observation
from policies.config_cli import EXIT_BAD_INPUT, run_cli
from tests.calvin_fixtures import CHAIN0_SCENE_OBS

pytest.importorskip("pybullet")

SCENE_CHAIN0 = CHAIN0_SCENE_OBS


@pytest.fixture(scope="module")
def state_env():
    env = PlayTableEnv(cameras=())
    yield env
    env.close()


def rollout(env: gym.Env, options: dict, actions: np.ndarray) -> list[np.ndarray]:
    obs, _ = env.reset(seed=0, options=options)
    states = [np.concatenate([obs["robot_obs"], obs["scene_obs"]])]
    for a in actions:
        obs, *_ = env.step(a)
        states.append(np.concatenate([obs["robot_obs"], obs["scene_obs"]]))
    return states


def random_actions(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    a = rng.uniform(-1, 1, (n, 7)).astype(np.float32)
    a[:, 6] = np.where(rng.random(n) < 0.5, -1.0, 1.0)
    return a


# ------------------------------------------------------------------------------------------ contract


def test_registered_ids_and_cheap_import():
    assert {
        "SpatialArena/CalvinPlayTable-v0",
        "SpatialArena/CalvinPlayTable-Abs-v0",
        "SpatialArena/CalvinPlayTable-Static-v0",
        "SpatialArena/CalvinPlayTable-State-v0",
    } <= set(envs.registered_ids())
    code = "import sys, envs; print('pybullet' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"  # `import envs` loads no simulator


@pytest.mark.parametrize("env_id", ["SpatialArena/CalvinPlayTable-v0", "SpatialArena/CalvinPlayTable-Abs-v0"])
def test_check_env_is_clean(env_id):
    env = gym.make(env_id, render_mode="rgb_array")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        # absolute actions are CALVIN's raw TCP targets in metres/radians, not a normalised box
        warnings.filterwarnings("ignore", message=".*symmetric and normalized space.*")
        check_env(env.unwrapped)
    env.close()


def test_spaces_and_observation_layout():
    env = PlayTableEnv(depth=True, render_mode="rgb_array")
    obs, _ = env.reset(seed=1)
    assert obs["rgb_static"].shape == (200, 200, 3) and obs["rgb_static"].dtype == np.uint8
    assert obs["rgb_gripper"].shape == (84, 84, 3)
    assert obs["robot_obs"].shape == (15,) and obs["scene_obs"].shape == (24,)
    assert env.observation_space.contains(obs)
    # the static camera looks at its target on the table from ~4.2 m: metric depth at the image centre
    assert 3.6 < obs["depth_static"][100, 100] < 4.6
    assert env.render().shape == (200, 200, 3)
    assert env.action_space.shape == (7,) and env.action_space.low[0] == -1.0
    env.close()


def test_no_camera_variant_renders_nothing(state_env):
    obs, _ = state_env.reset(seed=0)
    assert set(obs) == {"robot_obs", "scene_obs"}


def test_bad_arguments_and_actions_raise_clear_errors(state_env):
    with pytest.raises(ValueError, match="action_mode"):
        PlayTableEnv(action_mode="joint")
    with pytest.raises(ValueError, match="cameras"):
        PlayTableEnv(cameras=("static", "tactile"))
    state_env.reset(seed=0)
    with pytest.raises(ValueError, match="finite"):
        state_env.step(np.array([np.nan, 0, 0, 0, 0, 0, 1]))
    with pytest.raises(ValueError, match="7 values"):
        state_env.step(np.zeros(6))
    with pytest.raises(ValueError, match="unknown reset option"):
        state_env.reset(options={"robot_state": C.NEUTRAL_ROBOT_OBS})
    with pytest.raises(ValueError, match="scene_obs"):
        state_env.reset(options={"scene_obs": [0.0] * 23})
    with pytest.raises(ValueError, match="unknown CALVIN task"):
        state_env.reset(options={"task": "fly"})
    *_, info = state_env.step(np.array([3.0, 0, 0, 0, 0, 0, 1]))
    assert info["action_clipped"] is True


# --------------------------------------------------------------------------------- exact placement


def test_reset_places_robot_and_scene_exactly(state_env):
    obs, info = state_env.reset(options={"robot_obs": C.NEUTRAL_ROBOT_OBS, "scene_obs": SCENE_CHAIN0})
    # the neutral joints give CALVIN's neutral TCP pose (z 0.14 TCP on the evaluation robot, base pose)
    np.testing.assert_allclose(obs["robot_obs"], C.NEUTRAL_ROBOT_OBS, atol=2e-5)
    scene = obs["scene_obs"]
    np.testing.assert_allclose(scene[:6], SCENE_CHAIN0[:6], atol=1e-6)
    for color in C.BLOCK_COLORS:
        s = C.block_slice(color)
        np.testing.assert_allclose(scene[s], np.asarray(SCENE_CHAIN0)[s], atol=1e-4)
    blocks = info["snapshot"]["blocks"]
    assert blocks["red"]["contacts"] == [["table", "plank_link"]]  # CALVIN's slider spot rests on the shelf
    assert blocks["blue"]["contacts"] == [["table", "base_link"]]


def test_light_colours_follow_the_logical_state(state_env):
    state_env.reset(options={"scene_obs": SCENE_CHAIN0})
    sim = state_env.sim
    colours = {d[1]: d[7] for d in sim.p.getVisualShapeData(sim.scene.table)}
    np.testing.assert_allclose(colours[sim.scene.links["light_link"]], C.LIGHT_ON_RGBA["lightbulb"])
    np.testing.assert_allclose(colours[sim.scene.links["led_link"]], C.LIGHT_ON_RGBA["led"])
    off = list(SCENE_CHAIN0)
    off[3:6] = [0.0, 0.0, 0.0]
    state_env.reset(options={"scene_obs": off})
    colours = {d[1]: d[7] for d in sim.p.getVisualShapeData(sim.scene.table)}
    np.testing.assert_allclose(colours[sim.scene.links["led_link"]], C.LIGHT_OFF_RGBA)


def test_snapshot_format_is_json_safe(state_env):
    _, info = state_env.reset(seed=3)
    snap = info["snapshot"]
    assert json.loads(json.dumps(snap)) == snap
    assert set(snap) == {"robot_obs", "scene_obs", "robot_contacts", "blocks"}
    assert set(snap["blocks"]) == {"red", "blue", "pink"}
    assert set(snap["blocks"]["red"]) == {"pos", "orn_xyzw", "lin_vel", "ang_vel", "contacts"}


# ------------------------------------------------------------------------------------- determinism


def test_same_seed_same_rollout():
    a, b = PlayTableEnv(cameras=("static",)), PlayTableEnv(cameras=("static",))
    oa, _ = a.reset(seed=7)
    ob, _ = b.reset(seed=7)
    for action in random_actions(15, 1):
        oa, *_ = a.step(action)
        ob, *_ = b.step(action)
    np.testing.assert_array_equal(oa["rgb_static"], ob["rgb_static"])
    np.testing.assert_array_equal(oa["scene_obs"], ob["scene_obs"])
    a.close()
    b.close()


def test_a_reset_fully_determines_the_episode(state_env):
    """Identical rollouts whether or not other episodes ran before in the same env (no leakage)."""
    options = {"robot_obs": C.NEUTRAL_ROBOT_OBS, "scene_obs": SCENE_CHAIN0}
    actions = random_actions(40, 2)
    fresh = PlayTableEnv(cameras=())
    reference = rollout(fresh, options, actions)
    fresh.close()
    other = dict(
        options,
        scene_obs=[
            0.0,
            0.1,
            0,
            0,
            0,
            1,
            0.1,
            -0.1,
            0.46,
            0,
            0,
            0.3,
            0.25,
            -0.1,
            0.46,
            0,
            0,
            2.0,
            -0.2,
            0.09,
            0.461,
            0,
            0,
            1.0,
        ],
    )
    rollout(state_env, other, random_actions(60, 3))
    again = rollout(state_env, options, actions)
    for r, g in zip(reference, again):
        np.testing.assert_array_equal(r, g)


# ---------------------------------------------------------------------------------------- actions


def test_relative_actions_accumulate_a_target_pose(state_env):
    obs, _ = state_env.reset(options={"scene_obs": SCENE_CHAIN0})
    start = obs["robot_obs"][:3].copy()
    for _ in range(20):
        obs, *_ = state_env.step(np.array([0.5, 0, 0, 0, 0, 0, 1], np.float32))
    target, _ = state_env.target_pose()
    np.testing.assert_allclose(target - start, [0.2, 0, 0], atol=1e-4)  # 20 x 0.5 x 0.02 m
    for _ in range(15):
        obs, *_ = state_env.step(np.array([0, 0, 0, 0, 0, 0, 1], np.float32))
    np.testing.assert_allclose(obs["robot_obs"][:3], target, atol=0.01)


def test_gripper_closes_and_opens(state_env):
    state_env.reset(options={"scene_obs": SCENE_CHAIN0})
    for _ in range(10):
        obs, *_ = state_env.step(np.array([0, 0, 0, 0, 0, 0, -1], np.float32))
    assert obs["robot_obs"][6] < 0.005 and obs["robot_obs"][14] == -1
    for _ in range(15):
        obs, *_ = state_env.step(np.array([0, 0, 0, 0, 0, 0, 0.3], np.float32))
    assert obs["robot_obs"][6] > 0.075 and obs["robot_obs"][14] == 1


def test_absolute_mode_reaches_a_target():
    env = PlayTableEnv(cameras=(), action_mode="absolute")
    obs, _ = env.reset(options={"scene_obs": SCENE_CHAIN0})
    goal = obs["robot_obs"][:6] + np.array([0.05, 0.05, -0.05, 0, 0, 0.3])
    for _ in range(30):
        obs, *_ = env.step(np.array([*goal, 1.0], np.float32))
    np.testing.assert_allclose(obs["robot_obs"][:3], goal[:3], atol=0.01)
    assert abs(obs["robot_obs"][5] - goal[5]) < 0.03
    (action,) = env.native_actions(StepMotion(np.array([0.0, 0.0, 0.04]), np.zeros(3)))  # one absolute target
    target, _ = env.target_pose()
    assert np.linalg.norm(action[:3] - target) == pytest.approx(0.04, abs=1e-5) and action[6] == 1.0
    env.close()


def test_seeded_default_scenes_are_valid_evaluation_scenes(state_env):
    for seed in range(4):
        obs, _ = state_env.reset(seed=seed)
        snap = state_env.snapshot()
        for color in C.BLOCK_COLORS:  # every block rests on the table top or the cabinet shelf
            assert snap["blocks"][color]["contacts"] in ([["table", "base_link"]], [["table", "plank_link"]])
        assert obs["scene_obs"][0] in (0.0, 0.28) and obs["scene_obs"][4] == (obs["scene_obs"][3] > 0.044)


def test_native_actions_move_along_the_tcp_frame(state_env):
    obs, _ = state_env.reset(options={"scene_obs": SCENE_CHAIN0})
    motion = StepMotion(np.array([0.0, 0.0, 0.05]), np.zeros(3), gripper=1)  # 5 cm forward = down here
    actions = state_env.native_actions(motion)
    assert len(actions) == 3 and all(np.all(np.abs(a) <= 1) for a in actions)
    before, _ = state_env.target_pose()
    for a in actions:
        state_env.step(a)
    after, _ = state_env.target_pose()
    tcp_z = state_env.sim.p.getMatrixFromQuaternion(
        state_env.sim.p.getQuaternionFromEuler(obs["robot_obs"][3:6])
    )
    np.testing.assert_allclose(after - before, 0.05 * np.array(tcp_z)[[2, 5, 8]], atol=1e-6)
    assert Primitive.DOLLY_IN.axis == 2  # "forward" of the camera/TCP frame is its z axis


def test_task_option_scores_success_through_info(state_env):
    closed = list(SCENE_CHAIN0)
    closed[1] = 0.0
    _, info = state_env.reset(options={"scene_obs": closed, "task": "open_drawer"})
    assert info["task"] == "open_drawer" and info["is_success"] is False
    sim = state_env.sim
    sim.p.resetJointState(sim.scene.table, sim.scene.parts["drawer"].joint, 0.121)  # pull it out by hand
    _, reward, terminated, _, info = state_env.step(np.array([0, 0, 0, 0, 0, 0, 1], np.float32))
    assert terminated and reward == 1.0 and info["is_success"]
    state_env.begin_subtask("close_drawer")  # a new subtask is scored from here on
    *_, info = state_env.step(np.array([0, 0, 0, 0, 0, 0, 1], np.float32))
    assert info["task"] == "close_drawer" and not info["is_success"]


# ----------------------------------------------------------------------------------------- assets


def test_generated_assets_are_deterministic_and_content_addressed(tmp_path):
    assert table_urdf() == table_urdf()
    first = write_cached(tmp_path, "t", table_urdf())
    assert write_cached(tmp_path, "t", table_urdf()) == first
    assert write_cached(tmp_path, "t", table_urdf(scale=1.25)) != first
    text = table_urdf()
    for link in C.TABLE_LINKS:
        assert f'name="{link}"' in text
    assert 'size="0.056 0.04 0.04"' in block_urdf("red") and 'value="0.7"' in block_urdf("red")


def test_missing_calvin_assets_name_the_files(tmp_path):
    with pytest.raises(FileNotFoundError, match="calvin_table_D"):
        PlayTableEnv(cameras=(), calvin_assets=str(tmp_path))


def test_calvin_assets_folder_is_loaded_with_calvins_scaling(tmp_path):
    """A folder in CALVIN's ``data/`` layout (here: our URDFs written at 1/0.8 size) loads like the original."""
    import pybullet_data

    from envs.calvin.assets import OFFICIAL_LAYOUT, OFFICIAL_SCALING, plane_urdf, robot_urdf

    texts = {
        "table": table_urdf(scale=1 / OFFICIAL_SCALING),
        "plane": plane_urdf(),
        "robot": robot_urdf(pybullet_data.getDataPath()),
        **{c: block_urdf(c, scale=1 / OFFICIAL_SCALING) for c in C.BLOCK_COLORS},
    }
    for key, rel in OFFICIAL_LAYOUT.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(texts[key])
    scaled = PlayTableEnv(cameras=(), calvin_assets=str(tmp_path))
    native = PlayTableEnv(cameras=())
    a, _ = scaled.reset(options={"scene_obs": SCENE_CHAIN0})
    b, _ = native.reset(options={"scene_obs": SCENE_CHAIN0})
    for _ in range(10):
        a, *_ = scaled.step(np.array([0.3, 0, 0, 0, 0, 0, 1], np.float32))
        b, *_ = native.step(np.array([0.3, 0, 0, 0, 0, 0, 1], np.float32))
    np.testing.assert_allclose(a["scene_obs"], b["scene_obs"], atol=1e-3)
    np.testing.assert_allclose(a["robot_obs"], b["robot_obs"], atol=1e-3)
    assert scaled.sim.scene.parts["slide"].upper == pytest.approx(C.SLIDE_RANGE[1])
    scaled.close()
    native.close()


def test_egl_renderer_when_available():
    """PyBullet's EGL plugin (GPU machines; Mesa's llvmpipe on CPU) draws the same scene as TinyRenderer,
    with its own lighting and shadows."""
    with pytest.raises(ValueError, match="renderer"):
        PlayTableEnv(renderer="vulkan")
    if problem := egl_problem():  # without an EGL device the plugin ends the process from C
        pytest.skip(problem)
    env = PlayTableEnv(cameras=("static",), renderer="egl")
    egl, _ = env.reset(options={"scene_obs": SCENE_CHAIN0})
    env.close()
    tiny_env = PlayTableEnv(cameras=("static",))
    tiny, _ = tiny_env.reset(options={"scene_obs": SCENE_CHAIN0})
    tiny_env.close()
    diff = np.abs(egl["rgb_static"].astype(int) - tiny["rgb_static"].astype(int)).mean()
    assert egl["rgb_static"].std() > 20 and diff < 50


def test_renderer_egl_is_refused_in_one_line_where_the_plugin_cannot_load(monkeypatch, capsys):
    """Without an EGL device PyBullet's plugin ends the process from C (exit 1, "failed to EGL with glad."):
    the benchmark asks in a child process first and refuses with exit 2 before any worker starts."""
    from benchmarks.calvin import main

    monkeypatch.setenv("__EGL_VENDOR_LIBRARY_FILENAMES", "/no/such/egl_vendor.json")  # glvnd finds no EGL
    assert (
        run_cli(main, ["--renderer", "egl", "--num-sequences", "1", "--output", "/no/such/dir"])
        == EXIT_BAD_INPUT
    )
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: --renderer egl:") and "--renderer tiny" in err and "\n" not in err


# ------------------------------------------------------------------------- CALVIN's observation layout


def test_calvin_observation_layout_nests_the_same_arrays():
    """obs_layout="calvin" gives calvin_env's get_obs() layout (rgb_obs/depth_obs dicts) with the flat
    layout's arrays; the space describes it (gym.make's checker tests every observation against it)."""
    options = {"scene_obs": SCENE_CHAIN0}
    flat_env = PlayTableEnv(cameras=("gripper",), depth=True)
    nested_env = gym.make(
        "SpatialArena/CalvinPlayTable-v0", cameras=["gripper"], depth=True, obs_layout="calvin"
    )
    flat, _ = flat_env.reset(options=options)
    nested, _ = nested_env.reset(options=options)
    action = np.array([0.3, 0, -0.2, 0, 0, 0, -1], np.float32)
    flat, nested = flat_env.step(action)[0], nested_env.step(action)[0]
    assert set(nested) == {"rgb_obs", "depth_obs", "robot_obs", "scene_obs"}
    assert set(nested["rgb_obs"]) == {"rgb_gripper"} and set(nested["depth_obs"]) == {"depth_gripper"}
    assert nested_env.observation_space.contains(nested)
    back = flat_observation(nested)
    assert set(back) == set(flat)
    for key in flat:
        np.testing.assert_array_equal(back[key], flat[key])
    nested_env.close()
    flat_env.close()
    with pytest.raises(ValueError, match="obs_layout"):
        PlayTableEnv(cameras=(), obs_layout="nested")


def test_a_model_written_for_calvins_evaluate_policy_runs_on_the_calvin_layout(tmp_path):
    """A model reading obs["rgb_obs"]["rgb_static"] and obs["depth_obs"] (CALVIN's evaluate_policy) solves
    its task episodes with --obs-layout calvin, video included; on the flat layout every episode errors."""
    from benchmarks.calvin import main

    args = [
        "--policy",
        "tests.user_policy_example:CalvinLayoutButtonModel",
        "--tasks",
        "turn_on_led",
        "--ep-len",
        "60",
        "--output",
        str(tmp_path),
        "--no-progress",
    ]
    summary = main(
        [*args, "--num-sequences", "2", "--obs-layout", "calvin", "--run-name", "calvin", "--video", "1"]
    )
    assert summary.data["task_info"] == {"turn_on_led": {"success": 2, "total": 2}}
    assert (tmp_path / "calvin" / "calvin" / "videos" / "chain-0013.mp4").stat().st_size > 0
    flat = main([*args, "--num-sequences", "1", "--run-name", "flat", "--allow-errors"])
    assert flat.data["chains"] == 0
    records = (tmp_path / "calvin" / "flat" / "records.jsonl").read_text()
    assert "rgb_obs" in records  # the KeyError a CALVIN model raises on the flat layout


def test_calvin_layout_with_a_builtin_image_policy_is_refused(capsys):
    from benchmarks.calvin import main

    argv = ["--obs-layout", "calvin", "--policy", "mllm", "--model", "answer-key", "--output", "/no/such/dir"]
    assert run_cli(main, argv) == EXIT_BAD_INPUT
    assert capsys.readouterr().err.startswith(
        "error: --obs-layout calvin: --policy mllm reads the flat layout"
    )
