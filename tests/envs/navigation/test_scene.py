"""Procedural scenes: reproducible from the seed, data that regenerates identical MJCF, physically sane."""

import json

import mujoco
import numpy as np
import pytest

from envs.navigation.assets import object_parts
from envs.navigation.catalog import CATEGORIES, COLOURS, FURNITURE
from envs.navigation.mjcf import entity_labels, scene_to_mjcf
from envs.navigation.planner import Lattice
from envs.navigation.scene import (
    SceneError,
    furniture_rect,
    generate_scene,
    object_rect,
    room_of,
    scene_key,
    scene_obstacles,
)

SEEDS = (0, 1, 2, 7)


@pytest.fixture(scope="module")
def scenes():
    return {s: generate_scene(s) for s in SEEDS}


def test_same_seed_same_scene_and_different_seeds_differ(scenes):
    for s in SEEDS:
        assert generate_scene(s) == scenes[s]
    assert len({scene_key(sc) for sc in scenes.values()}) == len(SEEDS)


def test_scene_is_json_data_that_regenerates_identical_mjcf(scenes):
    for sc in scenes.values():
        text = json.dumps(sc)
        assert scene_to_mjcf(json.loads(text)) == scene_to_mjcf(sc)
        model = mujoco.MjModel.from_xml_string(scene_to_mjcf(json.loads(text)))
        names = {model.body(b).name for b in range(model.nbody)}
        assert {f"object:{o['id']}" for o in sc["objects"]} <= names
        assert {f"furniture:{f['id']}" for f in sc["furniture"]} <= names


@pytest.mark.parametrize("n_rooms", [1, 2, 3])
def test_room_count_doors_and_connectivity(n_rooms):
    sc = generate_scene(11, n_rooms=n_rooms)
    assert len(sc["rooms"]) == n_rooms and len(sc["doors"]) == n_rooms - 1
    assert len({r["type"] for r in sc["rooms"]}) == n_rooms  # "the kitchen" always means one room
    lattice = Lattice.for_scene(sc, scene_obstacles(sc))
    free = np.flatnonzero(lattice.free)
    sizes = []
    remaining = set(free.tolist())
    while remaining:
        comp = lattice.component(min(remaining))
        sizes.append(comp)
        remaining -= set(comp)
    main = max(sizes, key=len)
    assert {room_of(sc, lattice.points[i]) for i in main} == set(range(n_rooms))


def test_objects_and_furniture_are_placed_sensibly(scenes):
    for sc in scenes.values():
        categories = [o["category"] for o in sc["objects"]]
        assert len(categories) == len(set(categories)) >= 3  # distinct categories: names are unambiguous
        rects = {f["id"]: furniture_rect(f) for f in sc["furniture"]}
        for f in sc["furniture"]:
            assert f["yaw"] % 90 == 0
            x0, y0, x1, y1 = sc["rooms"][f["room"]]["bounds"]
            r = rects[f["id"]]
            assert x0 <= r[0] and r[2] <= x1 and y0 <= r[1] and r[3] <= y1
        for o in sc["objects"]:
            assert room_of(sc, o["pos"]) == o["room"]
            if o["support"] == "floor":
                assert o["pos"][2] == 0.0
                r = object_rect(o)
                assert not any(
                    r[0] < f[2] and f[0] < r[2] and r[1] < f[3] and f[1] < r[3] for f in rects.values()
                )
            else:
                # on a surface (the lowest shelf board is low)
                assert o["support"] in rects and o["pos"][2] > 0.05
                fr = rects[o["support"]]
                assert fr[0] <= o["pos"][0] <= fr[2] and fr[1] <= o["pos"][1] <= fr[3]


def test_every_category_and_colour_builds():
    for name, cat in CATEGORIES.items():
        for colour in cat.colours:
            assert colour in COLOURS
            assert object_parts(name, colour), name
    assert set(FURNITURE) >= {"table", "sofa", "bed", "cabinet", "shelf", "chair"}


def test_mask_labels_cover_objects_then_furniture(scenes):
    sc = scenes[0]
    labels = entity_labels(sc)
    assert labels[0] == "none"
    assert labels[1 : 1 + len(sc["objects"])] == [o["id"] for o in sc["objects"]]


def test_malformed_scenes_raise_clear_errors(scenes):
    sc = json.loads(json.dumps(scenes[0]))
    sc["objects"][0]["category"] = "unicorn"
    with pytest.raises(SceneError, match="unknown category 'unicorn'"):
        scene_to_mjcf(sc)
    sc = json.loads(json.dumps(scenes[0]))
    sc["furniture"][0]["yaw"] = 45
    with pytest.raises(SceneError, match="multiple of 90"):
        scene_to_mjcf(sc)
    with pytest.raises(SceneError, match="format"):
        scene_to_mjcf({"rooms": []})
    with pytest.raises(ValueError, match="n_rooms"):
        generate_scene(0, n_rooms=4)
