"""CALVIN's 34-task oracle on hand-made snapshots: every task family on both sides of each threshold."""

from __future__ import annotations

import copy
import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.spatial.transform import Rotation

from envs.calvin.tasks import TASKS, completed_tasks, validate_snapshot

TABLE = ["table", "base_link"]
PLANK = ["table", "plank_link"]
DRAWER = ["table", "drawer_link"]
FINGERS = [["robot", "panda_leftfinger"], ["robot", "panda_rightfinger"]]
BLOCK_XY = {"red": (0.05, -0.12), "blue": (0.23, -0.12), "pink": (-0.24, 0.09)}


def snapshot() -> dict:
    """Red and blue on the table, pink on the cabinet shelf; everything at rest, robot touching nothing."""
    blocks = {}
    for color, (x, y) in BLOCK_XY.items():
        blocks[color] = {
            "pos": [x, y, 0.46],
            "orn_xyzw": [0.0, 0.0, 0.0, 1.0],
            "lin_vel": [0.0] * 3,
            "ang_vel": [0.0] * 3,
            "contacts": [PLANK if color == "pink" else TABLE],
        }
    return {"robot_obs": [0.0] * 15, "scene_obs": [0.0] * 24, "robot_contacts": [], "blocks": blocks}


def done(start: dict, end: dict) -> set[str]:
    return completed_tasks(start, end)


def test_task_list_is_calvins_34_in_order():
    assert len(TASKS) == 34 and len(set(TASKS)) == 34
    assert TASKS[:2] == ("rotate_red_block_right", "rotate_red_block_left")
    assert TASKS[12:16] == ("move_slider_left", "move_slider_right", "open_drawer", "close_drawer")
    assert TASKS[-1] == "push_into_drawer"


def test_nothing_happens_nothing_completes():
    s = snapshot()
    assert done(s, copy.deepcopy(s)) == set()


# ------------------------------------------------------------------------------------------- rotate


def rotated_end(color: str, yaw_deg: float, tilt_deg: float = 0.0, move: float = 0.0, contacts=None) -> dict:
    end = snapshot()
    quat = Rotation.from_euler("xyz", [tilt_deg, 0.0, yaw_deg], degrees=True).as_quat()
    end["blocks"][color]["orn_xyzw"] = quat.tolist()
    end["blocks"][color]["pos"][0] += move
    if contacts is not None:
        end["blocks"][color]["contacts"] = contacts
    return end


@pytest.mark.parametrize("color", ["red", "blue", "pink"])
@pytest.mark.parametrize(
    ("yaw", "left", "right"),
    [
        (61, True, False),
        (59, False, False),
        (179, True, False),
        (-61, False, True),
        (-59, False, False),
        (-179, False, True),
    ],
)
def test_rotate_yaw_thresholds(color, yaw, left, right):
    got = done(snapshot(), rotated_end(color, yaw))
    assert (f"rotate_{color}_block_left" in got) is left
    assert (f"rotate_{color}_block_right" in got) is right


def test_rotate_tilt_displacement_and_contact_rules():
    s = snapshot()
    assert "rotate_red_block_left" in done(s, rotated_end("red", 90, tilt_deg=29))
    assert "rotate_red_block_left" not in done(s, rotated_end("red", 90, tilt_deg=31))
    assert "rotate_red_block_left" in done(s, rotated_end("red", 90, move=0.099))
    assert "rotate_red_block_left" not in done(s, rotated_end("red", 90, move=0.101))
    assert "rotate_red_block_left" not in done(s, rotated_end("red", 90, contacts=FINGERS))  # still held
    assert "rotate_red_block_left" in done(s, rotated_end("red", 90, contacts=[*FINGERS, TABLE]))


def test_rotation_is_relative_to_the_start_orientation():
    start = rotated_end("blue", 80)
    assert "rotate_blue_block_left" not in done(start, rotated_end("blue", 120))  # only 40 degrees
    assert "rotate_blue_block_left" in done(start, rotated_end("blue", 150))  # 70 degrees


@settings(max_examples=60, deadline=None)
@given(st.floats(-179.0, 179.0).filter(lambda z: min(abs(abs(z) - 60), abs(abs(z) - 180)) > 0.01))
def test_rotate_property_matches_the_yaw_window(yaw):
    got = done(snapshot(), rotated_end("pink", yaw))
    assert ("rotate_pink_block_left" in got) == (60 < yaw < 180)
    assert ("rotate_pink_block_right" in got) == (-180 < yaw < -60)


# --------------------------------------------------------------------------------------------- push


def moved(color: str, dx: float = 0.0, dz: float = 0.0, contacts=None) -> dict:
    end = snapshot()
    end["blocks"][color]["pos"][0] += dx
    end["blocks"][color]["pos"][2] += dz
    if contacts is not None:
        end["blocks"][color]["contacts"] = contacts
    return end


@pytest.mark.parametrize("color", ["red", "blue"])
@pytest.mark.parametrize(
    ("dx", "right", "left"),
    [(0.101, True, False), (0.099, False, False), (-0.101, False, True), (-0.099, False, False)],
)
def test_push_distance_thresholds(color, dx, right, left):
    got = done(snapshot(), moved(color, dx, contacts=[TABLE, *FINGERS]))
    assert (f"push_{color}_block_right" in got) is right
    assert (f"push_{color}_block_left" in got) is left


def test_push_contact_rules():
    s = snapshot()
    assert "push_red_block_right" in done(
        s, moved("red", 0.12, contacts=[TABLE, ["block_blue", "base_link"]])
    )
    assert "push_red_block_right" not in done(s, moved("red", 0.12, contacts=FINGERS))  # lifted off the table
    assert "push_red_block_right" not in done(s, moved("red", 0.12, contacts=[DRAWER]))  # start contact lost
    held = snapshot()
    held["blocks"]["red"]["contacts"] = FINGERS  # no surface contact at the start
    assert "push_red_block_right" not in done(held, moved("red", 0.12, contacts=[TABLE]))
    assert "push_pink_block_right" in done(s, moved("pink", 0.12, contacts=[PLANK]))  # any surface counts


# ------------------------------------------------------------------------------------- doors, lights


def with_scene(**values: float) -> dict:
    s = snapshot()
    index = {"slide": 0, "drawer": 1, "button": 2, "switch": 3, "lightbulb": 4, "led": 5}
    for key, value in values.items():
        s["scene_obs"][index[key]] = value
    return s


@pytest.mark.parametrize(
    ("start", "end", "expected"),
    [
        (0.0, 0.151, {"move_slider_left"}),
        (0.0, 0.149, set()),
        (0.28, 0.129, {"move_slider_right"}),
        (0.28, 0.131, set()),
    ],
)
def test_slider_thresholds(start, end, expected):
    assert done(with_scene(slide=start), with_scene(slide=end)) == expected


@pytest.mark.parametrize(
    ("start", "end", "expected"),
    [
        (0.0, 0.121, {"open_drawer"}),
        (0.0, 0.119, set()),
        (0.22, 0.099, {"close_drawer"}),
        (0.22, 0.101, set()),
    ],
)
def test_drawer_thresholds(start, end, expected):
    assert done(with_scene(drawer=start), with_scene(drawer=end)) == expected


@pytest.mark.parametrize(
    ("light", "before", "after", "expected"),
    [
        ("lightbulb", 0, 1, {"turn_on_lightbulb"}),
        ("lightbulb", 1, 0, {"turn_off_lightbulb"}),
        ("led", 0, 1, {"turn_on_led"}),
        ("led", 1, 0, {"turn_off_led"}),
        ("led", 1, 1, set()),
        ("lightbulb", 0, 0, set()),
    ],
)
def test_light_transitions(light, before, after, expected):
    assert done(with_scene(**{light: before}), with_scene(**{light: after})) == expected


def test_switch_and_button_joints_alone_complete_nothing():
    """Only the logical light states count, not the joints that drive them."""
    assert done(with_scene(switch=0.0, button=0.0), with_scene(switch=0.088, button=0.02)) == set()


# --------------------------------------------------------------------------------------------- lift


@pytest.mark.parametrize(
    ("surface", "start_contact", "color", "threshold"),
    [
        ("table", TABLE, "red", 0.05),
        ("slider", PLANK, "pink", 0.03),
        ("drawer", DRAWER, "blue", 0.05),
    ],
)
def test_lift_height_thresholds(surface, start_contact, color, threshold):
    start = snapshot()
    start["blocks"][color]["contacts"] = [start_contact]
    task = f"lift_{color}_block_{surface}"
    assert task in done(start, moved(color, dz=threshold + 0.001, contacts=FINGERS))
    assert task not in done(start, moved(color, dz=threshold - 0.001, contacts=FINGERS))


def test_lift_contact_rules():
    s = snapshot()
    # not only robot
    assert "lift_red_block_table" not in done(s, moved("red", dz=0.1, contacts=[*FINGERS, TABLE]))
    assert "lift_red_block_table" not in done(s, moved("red", dz=0.1, contacts=[]))  # thrown, not held
    # started on the table
    assert "lift_red_block_slider" not in done(s, moved("red", dz=0.1, contacts=FINGERS))
    # started on the shelf
    assert "lift_pink_block_table" not in done(s, moved("pink", dz=0.1, contacts=FINGERS))
    start = snapshot()
    start["blocks"]["red"]["contacts"] = [TABLE, *FINGERS]  # touching the robot at the start is allowed
    assert "lift_red_block_table" in done(start, moved("red", dz=0.1, contacts=FINGERS))


# -------------------------------------------------------------------------------------------- place


def holding(color: str) -> dict:
    s = snapshot()
    s["robot_contacts"] = [[f"block_{color}", "base_link"]]
    s["blocks"][color]["contacts"] = FINGERS
    return s


def released(color: str, contacts: list) -> dict:
    end = snapshot()
    end["blocks"][color]["contacts"] = contacts
    return end


@pytest.mark.parametrize(("task", "link"), [("place_in_slider", PLANK), ("place_in_drawer", DRAWER)])
def test_place_positive_and_contact_rules(task, link):
    start = holding("blue")
    assert task in done(start, released("blue", [link]))
    assert task not in done(start, released("blue", [TABLE]))  # wrong surface
    still_held = released("blue", [link, *FINGERS])
    still_held["robot_contacts"] = [["block_blue", "base_link"]]
    assert task not in done(start, still_held)
    two = holding("blue")
    two["robot_contacts"].append(TABLE)  # the robot touches two bodies at the start
    assert task not in done(two, released("blue", [link]))
    resting = holding("blue")
    resting["blocks"]["blue"]["contacts"] = [*FINGERS, TABLE]  # the block was not lifted
    assert task not in done(resting, released("blue", [link]))


# ------------------------------------------------------------------------------------- stack, unstack


def stacked_end(velocity: float = 0.0, extra: list | None = None) -> dict:
    end = snapshot()
    end["blocks"]["red"]["contacts"] = [["block_blue", "base_link"], *(extra or [])]
    end["blocks"]["red"]["lin_vel"] = [velocity, 0.0, 0.0]
    end["blocks"]["blue"]["contacts"] = [TABLE, ["block_red", "base_link"]]
    return end


def test_stack_rules():
    start = holding("red")
    assert "stack_block" in done(start, stacked_end())
    assert "stack_block" in done(start, stacked_end(velocity=0.99))
    assert "stack_block" not in done(start, stacked_end(velocity=1.01))
    assert "stack_block" not in done(start, stacked_end(extra=[TABLE]))  # also on the table
    assert "stack_block" not in done(start, stacked_end(extra=FINGERS))  # not let go
    assert "stack_block" not in done(stacked_end(), stacked_end())  # already stacked at the start


def test_unstack_rules():
    start = stacked_end()
    assert "unstack_block" in done(start, released("red", FINGERS))
    assert "unstack_block" in done(start, released("red", [TABLE]))
    assert "unstack_block" not in done(start, stacked_end())
    assert "unstack_block" not in done(stacked_end(velocity=1.01), released("red", [TABLE]))  # start speed
    # not only on blocks
    assert "unstack_block" not in done(stacked_end(extra=[TABLE]), released("red", [TABLE]))


@settings(max_examples=60, deadline=None)
@given(
    dx=st.floats(-0.3, 0.3),
    dz=st.floats(0.0, 0.3),
    contacts=st.sampled_from([[TABLE], FINGERS, [TABLE, *FINGERS], [PLANK], []]),
)
def test_an_unstack_by_lifting_leaves_the_blocks_table_tasks_unreachable(dx, dz, contacts):
    """The next subtask starts from the snapshot in which ``unstack_block`` fired. Fired by lifting, the block
    touches only the fingers there, and no end state completes a push or a lift from the table. (Why the
    expert misses three subtasks in the first 100 chains, docs/guide/calvin.md.)"""
    lifted_off = released("red", FINGERS)
    assert "unstack_block" in done(stacked_end(), lifted_off)
    after = done(lifted_off, moved("red", dx, dz=dz, contacts=contacts))
    assert not after & {"push_red_block_left", "push_red_block_right", "lift_red_block_table"}


def test_an_unstack_that_sets_the_block_down_leaves_its_table_tasks_reachable():
    set_down = released("red", [TABLE, *FINGERS])
    assert "unstack_block" in done(stacked_end(), set_down)
    assert "push_red_block_left" in done(set_down, moved("red", -0.12, contacts=[TABLE]))
    assert "lift_red_block_table" in done(set_down, moved("red", dz=0.06, contacts=FINGERS))


# --------------------------------------------------------------------------------- push into drawer


def test_push_into_drawer_rules():
    s = snapshot()
    assert "push_into_drawer" in done(s, released("blue", [DRAWER]))
    assert "push_into_drawer" in done(s, released("blue", [DRAWER, TABLE]))  # resting on the edge too
    assert "push_into_drawer" not in done(s, released("blue", [DRAWER, *FINGERS]))  # robot at the end
    assert "push_into_drawer" not in done(s, released("pink", [DRAWER]))  # started on the shelf
    touched = snapshot()
    touched["blocks"]["blue"]["contacts"] = [TABLE, *FINGERS]  # robot at the start
    assert "push_into_drawer" not in done(touched, released("blue", [DRAWER]))
    assert "push_into_drawer" not in done(s, released("blue", [TABLE]))


# ----------------------------------------------------------------------------------------- interface


def test_snapshots_are_json_round_trippable_and_validated():
    s = snapshot()
    assert json.loads(json.dumps(s)) == s
    with pytest.raises(ValueError, match="blocks"):
        completed_tasks({k: v for k, v in s.items() if k != "blocks"}, s)
    broken = snapshot()
    del broken["blocks"]["red"]["lin_vel"]
    with pytest.raises(ValueError, match="red"):
        validate_snapshot(broken)
    with pytest.raises(ValueError, match="unknown CALVIN task"):
        completed_tasks(s, s, tasks=["open_the_pod_bay_doors"])


def test_task_filter_restricts_the_answer():
    start, end = with_scene(drawer=0.0, led=0), with_scene(drawer=0.2, led=1)
    assert done(start, end) == {"open_drawer", "turn_on_led"}
    assert completed_tasks(start, end, tasks=["turn_on_led"]) == {"turn_on_led"}


def test_yaw_helper_sanity():
    """The rotation test helper builds the yaw it is given (guards the tests above)."""
    q = rotated_end("red", 90)["blocks"]["red"]["orn_xyzw"]
    assert math.isclose(Rotation.from_quat(q).as_euler("xyz", degrees=True)[2], 90.0, abs_tol=1e-9)
