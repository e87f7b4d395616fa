"""Physics + oracle: parts moved in the simulator, and every articulation driven by the real arm."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks.calvin.chain import run_chain
from envs.calvin import constants as C
from envs.calvin.env import PlayTableEnv
from envs.calvin.tasks import completed_tasks
from policies.experts.calvin import ScriptedExpert
from tests.calvin_fixtures import CHAIN0_SCENE_OBS

pytest.importorskip("pybullet")

IDLE = np.array([0, 0, 0, 0, 0, 0, 1], np.float32)
# CALVIN's first evaluation chain: lights on, door left, drawer open, red in the left cabinet half,
# blue on the table, pink in the right half.
SCENE_CHAIN0 = np.array(CHAIN0_SCENE_OBS)


@pytest.fixture(scope="module")
def env():
    e = PlayTableEnv(cameras=())
    yield e
    e.close()


def settle(env: PlayTableEnv, steps: int = 10) -> dict:
    for _ in range(steps):
        *_, info = env.step(IDLE)
    return info["snapshot"]


def snapshot_of(env: PlayTableEnv, scene_obs: np.ndarray) -> dict:
    env.reset(options={"scene_obs": scene_obs})
    return settle(env)


# ---------------------------------------------------------------------- moved in the simulator


def test_block_moved_and_turned_in_the_simulator(env):
    start = snapshot_of(env, SCENE_CHAIN0)
    turned = SCENE_CHAIN0.copy()
    turned[17] += np.pi / 2  # blue yaw +90 degrees, same place
    assert completed_tasks(start, snapshot_of(env, turned)) == {"rotate_blue_block_left"}
    pushed = SCENE_CHAIN0.copy()
    pushed[12] -= 0.12  # blue 12 cm to the left, still on the table top
    assert completed_tasks(start, snapshot_of(env, pushed)) == {"push_blue_block_left"}
    nudged = SCENE_CHAIN0.copy()
    nudged[12] -= 0.08
    assert completed_tasks(start, snapshot_of(env, nudged)) == set()


def test_joints_moved_in_the_simulator(env):
    start = snapshot_of(env, SCENE_CHAIN0)
    moved = SCENE_CHAIN0.copy()
    moved[0], moved[1] = 0.12, 0.09  # door 16 cm right, drawer 13 cm in
    assert completed_tasks(start, snapshot_of(env, moved)) == {"move_slider_right", "close_drawer"}


def test_a_block_set_on_the_button_presses_it_and_toggles_the_led(env):
    """The 1 kg block outweighs the button's 4 N spring: one press edge, one LED toggle."""
    scene = SCENE_CHAIN0.copy()
    env.reset(options={"scene_obs": scene, "task": "turn_off_led"})
    start = env.snapshot()
    # blue on the cap
    scene[12:15] = [
        C.BUTTON_ORIGIN[0],
        C.BUTTON_ORIGIN[1],
        C.BUTTON_ORIGIN[2] + 0.024 + 0.021,
    ]
    env.reset(options={"scene_obs": scene})
    snap = settle(env, 15)
    assert snap["scene_obs"][2] > C.BUTTON_TRIGGER  # held down
    assert snap["scene_obs"][5] == 0.0  # toggled exactly once
    assert "turn_off_led" in completed_tasks(start, snap)


def test_switch_joint_drives_the_lightbulb(env):
    env.reset(options={"scene_obs": SCENE_CHAIN0, "task": "turn_off_lightbulb"})
    sim = env.sim
    joint = sim.scene.parts["switch"].joint
    sim.p.resetJointState(sim.scene.table, joint, 0.05)  # still past half of 0.088: stays on
    *_, info = env.step(IDLE)
    assert info["snapshot"]["scene_obs"][4] == 1.0
    sim.p.resetJointState(sim.scene.table, joint, 0.03)
    *_, info = env.step(IDLE)
    assert info["snapshot"]["scene_obs"][4] == 0.0 and info["is_success"]


def test_block_dropped_into_the_open_drawer_touches_drawer_link(env):
    scene = SCENE_CHAIN0.copy()
    scene[12:15] = [0.18, -0.30, 0.40]  # blue above the open drawer
    snap = snapshot_of(env, scene)
    snap = settle(env, 20)
    assert snap["blocks"]["blue"]["contacts"] == [["table", "drawer_link"]]
    # drawer floor top at 0.32 + 0.0214 (CALVIN's drawer_link_vhacd2.obj floor hull, y up to 0.0267 x 0.8)
    assert abs(snap["blocks"]["blue"]["pos"][2] - 0.3614) < 0.003


# --------------------------------------------------------------------- driven by the real arm


def run_expert(env: PlayTableEnv, scene: np.ndarray, tasks: list[str]) -> dict:
    policy = ScriptedExpert()
    policy.bind(env)
    return run_chain(env, policy, C.NEUTRAL_ROBOT_OBS, scene, tasks, tasks)


def closed_dark_right() -> np.ndarray:
    scene = SCENE_CHAIN0.copy()
    scene[:6] = [0.0, 0.0, 0.0, 0.0, 0.0, 0.0]
    return scene


@pytest.mark.parametrize(
    "tasks",
    [
        ["open_drawer", "close_drawer"],
        ["move_slider_left", "move_slider_right"],
        ["turn_on_led", "turn_off_led"],
        ["turn_on_lightbulb", "turn_off_lightbulb"],
        ["lift_blue_block_table", "place_in_drawer"],
    ],
    ids=["drawer", "slider", "button", "switch", "lift"],
)
def test_arm_drives_each_articulated_part(env, tasks):
    scene = closed_dark_right()
    if tasks[-1] == "place_in_drawer":
        scene[1] = 0.22
    record = run_expert(env, scene, tasks)
    assert [s["success"] for s in record["extras"]["subtasks"]] == [True, True], record
    final = env.snapshot()["scene_obs"]
    expected = {"drawer": (1, 0.0), "slider": (0, 0.0), "button": (5, 0.0), "switch": (4, 0.0)}
    name = {
        "open_drawer": "drawer",
        "move_slider_left": "slider",
        "turn_on_led": "button",
        "turn_on_lightbulb": "switch",
    }.get(tasks[0])
    if name:
        index, value = expected[name]
        assert abs(final[index] - value) < 0.08  # back where it started, well past the oracle's threshold


def test_first_public_chain_with_the_expert(env):
    tasks = [
        "rotate_blue_block_right",
        "move_slider_right",
        "lift_red_block_slider",
        "place_in_slider",
        "turn_off_lightbulb",
    ]
    record = run_expert(env, SCENE_CHAIN0, tasks)
    assert record["extras"]["num_completed"] == 5, record
