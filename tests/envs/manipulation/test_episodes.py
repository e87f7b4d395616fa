"""EB-Manipulation episodes, wording, geometry and the voxel grid: pure checks, no simulator."""

import json
import math
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from action_mapping.adapters import eb_manipulation_decode, eb_manipulation_encode
from envs.manipulation import language, shapes, workspace
from envs.manipulation.episodes import (
    EB_SUBSET_FAMILIES,
    load_episodes,
    make_episode,
    make_episode_set,
    make_episodes,
    save_episodes,
)
from envs.manipulation.tasks import FAMILIES, SUBSETS, TASKS, EpisodeError
from envs.manipulation.tasks.base import LAYOUT_MARGIN

ALL_EPISODES = {(f, s): make_episodes(f, s) for f in FAMILIES for s in SUBSETS}
GRID = {"bounds": workspace.WORKSPACE_BOUNDS}


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("subset", SUBSETS)
def test_default_sets_have_twelve_json_safe_reproducible_episodes(family, subset):
    episodes = ALL_EPISODES[(family, subset)]
    assert len(episodes) == 12
    assert json.loads(json.dumps(episodes)) == episodes
    assert make_episodes(family, subset) == episodes
    assert [e["index"] for e in episodes] == list(range(12))
    assert len({e["instruction"] + json.dumps(e["objects"]) for e in episodes}) == 12
    assert all(e["family"] == family and e["subset"] == subset for e in episodes)


def test_episode_seed_changes_the_episode_and_single_episodes_match_the_set():
    assert make_episode("pick", "base", 3, seed=1) != make_episode("pick", "base", 3, seed=0)
    assert make_episode("stack", "visual", 5) == ALL_EPISODES[("stack", "visual")][5]


def test_episode_sets_for_the_runner_have_unique_ids_and_round_trip_through_jsonl(tmp_path):
    episodes = make_episode_set("spatial", n=2)
    assert [e["episode_id"] for e in episodes] == [f"{f}/spatial/{i:02d}" for f in FAMILIES for i in range(2)]
    assert all(e["max_steps"] == 15 and e["eb_task"].endswith("_relative") for e in episodes)
    path = save_episodes(episodes, tmp_path / "episodes.jsonl")
    assert load_episodes(path) == episodes
    path.write_text(path.read_text() + '{"episode_id": "x", "family": "pick"}\n')
    with pytest.raises(EpisodeError, match=r"episodes\.jsonl:9: .*lacks the key 'subset'"):
        load_episodes(path)


def test_unknown_family_or_subset_is_named_in_the_error():
    with pytest.raises(ValueError, match="'push'"):
        make_episode("push", "base", 0)
    with pytest.raises(ValueError, match="'long_horizon'"):
        make_episode("pick", "long_horizon", 0)


def test_eb_subset_composition_leaves_wipe_out_of_visual_only():
    assert EB_SUBSET_FAMILIES["visual"] == ("pick", "stack", "place")
    assert EB_SUBSET_FAMILIES["spatial"] == FAMILIES


@pytest.mark.parametrize("family", FAMILIES)
def test_layouts_stay_in_the_region_without_overlap(family):
    task = TASKS[family]()
    for subset in SUBSETS:
        for episode in ALL_EPISODES[(family, subset)]:
            xy = np.array([o["xy"] for o in episode["objects"]])
            assert np.all(xy[:, 0] >= workspace.PLACEMENT_X[0]) and np.all(
                xy[:, 0] <= workspace.PLACEMENT_X[1]
            )
            assert np.all(xy[:, 1] >= workspace.PLACEMENT_Y[0]) and np.all(
                xy[:, 1] <= workspace.PLACEMENT_Y[1]
            )
            slots = [o["slot"] for o in episode["objects"]]
            assert len(set(slots)) == len(slots)
            assert set(slots) <= set(task.free_slots) | set(task.fixture_slots)
            dists = np.linalg.norm(xy[:, None] - xy[None], axis=-1) + np.eye(len(xy))
            assert dists.min() > 2 * LAYOUT_MARGIN


def test_base_instructions_follow_eb_templates():
    pick = ALL_EPISODES[("pick", "base")][0]
    target = next(o for o in pick["objects"] if o["slot"] == pick["goal"]["target"])
    box = next(o for o in pick["objects"] if o["slot"] == pick["goal"]["container"])
    noun = shapes.SHAPES[target["kind"]].noun
    assert pick["instruction"] == f"Pick up the {noun} and place it into the {box['color']} container."
    stack = ALL_EPISODES[("stack", "base")][0]
    colors = {o["slot"]: o["color"] for o in stack["objects"]}
    kind = stack["objects"][0]["kind"]
    noun = shapes.SHAPES[kind].noun
    assert stack["instruction"] == (
        f"Stack the {colors[stack['goal']['bottom']]} {noun} and the "
        f"{colors[stack['goal']['top']]} {noun} in sequence."
    )
    place = ALL_EPISODES[("place", "base")][0]
    colors = {o["slot"]: o["color"] for o in place["objects"]}
    assert place["instruction"] == f"Put the {colors[place['goal']['target']]} star into the shape sorter."
    wipe = ALL_EPISODES[("wipe", "base")][0]
    assert wipe["instruction"] == f"Wipe the {wipe['goal']['direction']} area."


def test_base_pick_targets_are_unique_by_shape_and_containers_by_colour():
    for episode in ALL_EPISODES[("pick", "base")]:
        kinds = [o["kind"] for o in episode["objects"] if o["kind"] != "container"]
        boxes = [o["color"] for o in episode["objects"] if o["kind"] == "container"]
        assert len(set(kinds)) == len(kinds) and len(set(boxes)) == 2


_RELATION = re.compile(r"(to the left of|to the right of|in front of|behind)")


@pytest.mark.parametrize("family", FAMILIES)
def test_spatial_instructions_name_exactly_one_object(family):
    phrase_to_key = {v: k for k, v in language.RELATIONS.items()}
    for episode in ALL_EPISODES[(family, "spatial")]:
        relation = phrase_to_key[_RELATION.search(episode["instruction"]).group(1)]
        objs = {o["slot"]: o for o in episode["objects"]}
        goal = episode["goal"]
        target = goal["target"] if "target" in goal else goal["top"]
        ref = _spatial_reference(family, episode, objs)
        kinds = {
            "pick": lambda o: o["kind"] != "container",
            "stack": lambda o: True,
            "place": lambda o: o["kind"] == "star",
            "wipe": lambda o: o["kind"] == "area",
        }[family]
        candidates = {s: np.array(o["xy"]) for s, o in objs.items() if kinds(o) and s != ref}
        hits = [s for s, xy in candidates.items() if language.relation_holds(xy, objs[ref]["xy"], relation)]
        assert hits == [target], episode["instruction"]


def _spatial_reference(family, episode, objs):
    text = episode["instruction"]
    if family == "wipe":
        return "sponge"
    if family == "stack":
        return episode["goal"]["bottom"]
    if family == "place":
        color = re.search(r"the (\w+) star into", text).group(1)
        return next(s for s, o in objs.items() if o["kind"] == "star" and o["color"] == color)
    noun = re.search(r"(?:of|behind) the ([\w ]+?) and place", text).group(1)
    return next(
        s for s, o in objs.items() if o["kind"] != "container" and shapes.SHAPES[o["kind"]].noun == noun
    )


@pytest.mark.parametrize("family", ["pick", "stack", "place", "wipe"])
def test_visual_instructions_name_a_pattern_only_the_target_has(family):
    for episode in ALL_EPISODES[(family, "visual")]:
        goal = episode["goal"]
        target = goal.get("target", goal.get("top"))
        objs = {o["slot"]: o for o in episode["objects"]}
        pattern = objs[target]["pattern"]
        assert pattern in ("checkered", "speckled") and pattern in episode["instruction"]
        same_kind = [
            o
            for o in objs.values()
            if o["kind"] == objs[target]["kind"] or (family == "pick" and o["kind"] != "container")
        ]
        assert sum(o["pattern"] == pattern for o in same_kind) == 1


def test_common_sense_instructions_use_clues_not_names():
    for episode in ALL_EPISODES[("place", "common_sense")]:
        target = next(o for o in episode["objects"] if o["slot"] == episode["goal"]["target"])
        assert language.COLOR_CLUES[target["color"]] in episode["instruction"]
        assert f" {target['color']} " not in episode["instruction"]


# ------------------------------------------------------------------------------------- relations


def test_relations_read_in_the_front_image():
    ref = np.array([0.0, 0.0])
    assert language.relation_holds([0.0, -0.10], ref, "left")
    assert language.relation_holds([0.0, 0.10], ref, "right")
    assert language.relation_holds([0.10, 0.0], ref, "front")
    assert language.relation_holds([-0.10, 0.0], ref, "behind")
    assert not language.relation_holds([0.0, -0.03], ref, "left")  # within the margin
    assert not language.relation_holds([0.2, -0.1], ref, "left")  # mostly in front, not left


@given(st.floats(-0.3, 0.3), st.floats(-0.3, 0.3), st.floats(-0.3, 0.3), st.floats(-0.3, 0.3))
@settings(max_examples=200, deadline=None)
def test_relations_are_antisymmetric(ax, ay, bx, by):
    a, b = np.array([ax, ay]), np.array([bx, by])
    for rel, inverse in (("left", "right"), ("front", "behind")):
        assert language.relation_holds(a, b, rel) == language.relation_holds(b, a, inverse)
    assert sum(language.relation_holds(a, b, r) for r in language.RELATIONS) <= 1


# -------------------------------------------------------------------------------------- geometry


def test_shape_pieces_are_convex_and_sized_for_the_gripper():
    for spec in shapes.SHAPES.values():
        for piece in spec.pieces:
            if piece.kind == "mesh":
                assert shapes.is_convex(piece.polygon)
        assert 2 * spec.radius < 0.08  # the Panda gripper opens 8 cm
    tri = np.array(shapes.triangle_polygon())
    assert np.allclose(np.linalg.norm(tri - np.roll(tri, 1, axis=0), axis=1), shapes.TRIANGLE_SIDE)
    star = shapes.star_polygons()
    assert len(star) == 6 and len(star[0]) == 5
    assert max(np.hypot(*v) for piece in star for v in piece) == pytest.approx(shapes.STAR_OUTER)


def test_moon_slices_lie_between_the_two_circles():
    for piece in shapes.moon_polygons():
        for x, y in piece:
            assert math.hypot(x, y) <= shapes.MOON_OUTER + 1e-9
            assert math.hypot(x - shapes.MOON_OFFSET, y) >= shapes.MOON_INNER - 1e-9


def test_prism_vertices_span_the_height():
    v = shapes.prism_vertices(shapes.triangle_polygon(), 0.04)
    assert v.shape == (6, 3) and v[:, 2].min() == -0.02 and v[:, 2].max() == 0.02


# ------------------------------------------------------------------------------------ voxel grid


def test_grid_sits_on_the_table_as_in_eb():
    lo, hi = workspace.WORKSPACE_BOUNDS
    assert np.allclose(hi - lo, 1.0)
    assert lo[0] == pytest.approx(workspace.ROBOT_BASE_X)  # X starts at the robot base
    assert lo[1] == pytest.approx(-0.5) and hi[1] == pytest.approx(0.5)
    table = np.array([0.0, 0.0, workspace.TABLE_TOP_Z])
    assert workspace.world_to_voxel(table)[2] == 15  # EB: table top 0.752 m, grid floor 0.6 m
    # a 4 cm object's centre, as in EB
    assert workspace.world_to_voxel(table + np.array([0, 0, 0.02]))[2] == 17
    corner = workspace.voxel_to_world([0, 0, 0])
    assert np.allclose(corner, lo + 0.005)


@given(
    st.lists(st.integers(0, 99), min_size=3, max_size=3),
    st.lists(st.integers(0, 119), min_size=3, max_size=3),
    st.integers(0, 1),
)
@settings(max_examples=200, deadline=None)
@pytest.mark.filterwarnings("ignore:Gimbal lock")  # pitch +-90 deg: the Euler triple is not unique
def test_eb_encode_decode_round_trip_in_the_table_frame(pos_idx, rot_idx, gripper):
    action = np.array([*pos_idx, *rot_idx, gripper])
    position, rotation, closed = eb_manipulation_decode(action, **GRID)
    assert np.all(workspace.world_to_voxel(position) == pos_idx)
    again = eb_manipulation_encode(position, rotation, closed, **GRID)
    assert np.all(again[:3] == action[:3]) and again[6] == gripper
    back, _, _ = eb_manipulation_decode(again, **GRID)
    assert np.allclose(back, position)
    _, rot_again, _ = eb_manipulation_decode(again, **GRID)
    assert np.allclose(rot_again, rotation, atol=1e-9)  # same rotation, possibly another Euler triple


def test_task_template_samples_valid_episodes():
    from envs.manipulation.tasks.template import LiftCubeColor

    task = LiftCubeColor()
    episode = task.sample_episode(np.random.default_rng(0), "base")
    assert json.loads(json.dumps(episode)) == episode
    target = next(o for o in episode["objects"] if o["slot"] == episode["goal"]["target"])
    assert episode["instruction"] == f"Lift the {target['color']} cube."
