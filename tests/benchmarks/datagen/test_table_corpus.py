"""The EB-Manipulation and LIBERO families of the spatial corpus: answers re-derived from each row's own
record with an independent pinhole camera, the multi-hop gold answer's full reward, determinism, and
disjointness from the test sets (the EB-Manipulation episode sets, LIBERO's fixed initial states)."""

from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("datasets")

from benchmarks.datagen.corpus import CorpusConfig, corpus_rows
from benchmarks.posttrain.multihop_rewards import msr_total_reward

# one task family: one env to build
MANIP = {
    "families": "manip",
    "kinds": "manip_depth,manip_localisation,manip_counting,manip_multihop,manip_camera_motion",
    "manip_families": "pick",
}


@pytest.fixture(scope="module")
def manip_corpus(tmp_path_factory):
    """Three items (depth, localisation, counting) written to disk, from one task family's env."""
    from benchmarks.datagen.corpus import generate_corpus

    out = tmp_path_factory.mktemp("manip") / "c"
    stats = generate_corpus(CorpusConfig(out=out, n=3, validation=0.34, **MANIP))
    assert stats["failed"]["count"] == 0 and stats["family_mix"] == {"manip": 3}
    assert stats["category_mix"] == {"Counting": 1, "Depth and Distance": 1, "Object Localization": 1}
    return out


@pytest.fixture(scope="module")
def manip_rows(manip_corpus):
    from datasets import load_from_disk

    data = load_from_disk(str(manip_corpus))
    return [*data["train"], *data["validation"]]


def _project(truth: dict, point: np.ndarray) -> tuple[float, float, float]:
    c2w, size = np.asarray(truth["c2w"]), 224
    x = (np.asarray(point) - c2w[:3, 3]) @ c2w[:3, :3]
    f = (size / 2) / np.tan(np.radians(truth["fovy_deg"]) / 2)
    return size / 2 + f * x[0] / x[2], size / 2 + f * x[1] / x[2], x[2]


def _check_row(row: dict) -> None:
    """Each kind's answer from the row's record alone."""
    truth = json.loads(row["truth"])
    facts, objects = truth["truth"], truth["objects"]
    kind = row["kind"].split("_", 1)[1]
    if kind == "depth":
        bounds = np.asarray(objects[facts["object"]]["bounds_m"])
        assert row["answer"] == f"{_project(truth, bounds.mean(axis=0))[2]:.2f}"
    elif kind == "localisation":  # the visible pixels' box lies inside the projected bounding box
        bounds = np.asarray(objects[facts["object"]]["bounds_m"])
        corners = np.array(
            [[bounds[i, 0], bounds[j, 1], bounds[k, 2]] for i in (0, 1) for j in (0, 1) for k in (0, 1)]
        )
        px = np.array([_project(truth, c)[:2] for c in corners]) * 1000 / 224
        x1, y1, x2, y2 = row["bbox_normalized"]
        assert 0 <= x1 < x2 <= 1000 and 0 <= y1 < y2 <= 1000
        assert x1 >= px[:, 0].min() - 5 and x2 <= px[:, 0].max() + 5
        assert y1 >= px[:, 1].min() - 5 and y2 <= px[:, 1].max() + 5
    elif kind == "counting":  # the counted objects are the noun's, and the lettered option says how many
        assert (
            all(objects[o]["noun"] == facts["noun"] for o in facts["objects"])
            and len(facts["objects"]) == facts["count"]
        )
        question = row["messages"][0]["content"][-1]["text"]
        assert f"{row['answer']} {facts['count']}\n" in question + "\n"
    elif kind == "multihop":
        answer = row["messages"][1]["content"][0]["text"]
        assert msr_total_reward(
            [answer], response=[row["response"]], bbox_normalized=[row["bbox_normalized"]]
        ) == [3.0]
        sign = -1 if facts["side"] == "left" else 1
        centre = {k: np.asarray(v["bounds_m"]).mean(axis=0) for k, v in objects.items()}
        u_ref = _project(truth, centre[facts["reference"]])[0]
        assert all(sign * (_project(truth, centre[c])[0] - u_ref) >= 10 for c in facts["candidates"])
        depths = {c: _project(truth, centre[c])[2] for c in facts["candidates"]}
        pick = min if facts["extreme"] == "closest to" else max
        assert pick(depths, key=depths.__getitem__) == facts["answer_object"]
        assert row["response"].endswith(objects[facts["answer_object"]]["name"])
    elif kind == "camera_motion":
        first, second = (np.asarray(im, dtype=float) for im in row["images"])
        assert np.abs(first - second).mean() > 1.0  # the camera really moved
        assert facts["unit"] in ("m", "deg") and facts["c2w_start"] == truth["c2w"]


def test_manip_answers_follow_from_the_records(manip_rows):
    assert [r["kind"] for r in manip_rows] == MANIP["kinds"].split(",")[:3]
    for row in manip_rows:
        assert row["family"] == "manip" and row["images"][0].size == (224, 224)
        _check_row(row)


@pytest.mark.slow
def test_manip_multihop_and_camera_motion_follow_from_the_records():
    rows = list(corpus_rows(CorpusConfig(n=5, **MANIP), [3, 4]))
    assert [r["kind"] for r in rows] == MANIP["kinds"].split(",")[3:]
    for row in rows:
        _check_row(row)


@pytest.mark.slow  # builds the env again (tens of seconds on a loaded machine)
def test_manip_items_are_deterministic(manip_rows):
    again = list(corpus_rows(CorpusConfig(n=3, **MANIP), [0]))
    assert again[0]["truth"] == manip_rows[0]["truth"]


def test_manip_corpus_is_disjoint_from_the_episode_sets(manip_rows, tmp_path):
    from benchmarks.datagen.manip_corpus import (
        check_manip_disjoint,
        default_test_keys,
        episode_file_keys,
        layout_key,
    )
    from envs.manipulation.episodes import make_episode, save_episodes

    scenes = [
        (r["home_seed"], r["scene_key"], json.loads(r["truth"])["scene"]["episode"]) for r in manip_rows
    ]
    keys = default_test_keys()
    assert len(keys) == 5 * 4 * 12  # every default episode is a distinct layout
    assert check_manip_disjoint(scenes, keys) == len(scenes)
    seed, key, episode = scenes[0]
    with pytest.raises(ValueError, match="also a test episode"):
        check_manip_disjoint(scenes, {key})
    with pytest.raises(ValueError, match="outside"):
        check_manip_disjoint([(5, key, episode)], keys)
    with pytest.raises(ValueError, match="hashes differently"):
        check_manip_disjoint([(seed, "0" * 16, episode)], keys)
    test_episode = make_episode("pick", "spatial", 3)  # an episode file of the embodied benchmark is read too
    path = save_episodes([test_episode], tmp_path / "episodes.jsonl")
    assert episode_file_keys(str(path)) == [layout_key(test_episode)] and layout_key(test_episode) in keys


def test_check_command_covers_the_manip_rows(manip_corpus, manip_rows, tmp_path, capsys):
    from benchmarks.datagen.corpus import main
    from envs.manipulation.episodes import EPISODE_FORMAT, make_episode, save_episodes

    clean = save_episodes([make_episode("stack", "base", 0)], tmp_path / "clean.jsonl")
    assert main(["check", str(manip_corpus), str(clean)]) == 0
    assert "3 EB-Manipulation corpus scenes, none a test episode" in capsys.readouterr().out
    episode = json.loads(manip_rows[0]["truth"])["scene"]["episode"]  # a test file that holds a corpus layout
    dirty = tmp_path / "dirty.jsonl"
    dirty.write_text(json.dumps({**episode, "format": EPISODE_FORMAT, "episode_id": "x"}) + "\n")
    assert main(["check", str(manip_corpus), str(dirty)]) == 1
    assert manip_rows[0]["scene_key"] in capsys.readouterr().err
    pretty = tmp_path / "corpus.json"  # a JSON document, not JSON lines: one line naming the file and line
    pretty.write_text('{\n  "n": 3\n}\n')
    assert main(["check", str(manip_corpus), str(pretty)]) == 1
    err = capsys.readouterr().err.strip()
    assert (
        len(err.splitlines()) == 1 and f"{pretty} line 1 is not a JSON record" in err and "JSON-lines" in err
    )


@pytest.mark.slow
def test_libero_answers_and_disjointness_from_the_initial_states():
    pytest.importorskip("libero")
    from benchmarks.datagen.libero_corpus import check_libero_disjoint

    kinds = "libero_depth,libero_localisation,libero_multihop,libero_camera_motion"
    rows = list(corpus_rows(CorpusConfig(n=4, families="libero", kinds=kinds), range(4)))
    assert [r["kind"] for r in rows] == kinds.split(",")
    for row in rows:
        _check_row(row)
    scenes = [(r["home_seed"], r["scene_key"], json.loads(r["truth"])["scene"]) for r in rows]
    assert check_libero_disjoint(scenes) == len(rows)
    from envs.libero.tasks import load_init_states, load_task

    seed, _, state = scenes[0]
    init = load_init_states(load_task(state["suite"], state["task_index"]))[state["init_state_index"]]
    # the test start itself
    replayed = {k: init[1 + a : 4 + a].tolist() for k, a in state["qpos_addresses"].items()}
    from benchmarks.datagen.libero_corpus import libero_scene_key

    clash = {**state, "positions": replayed}
    with pytest.raises(ValueError, match="matches initial state"):
        check_libero_disjoint([(seed, libero_scene_key(state["task"], replayed), clash)])


def test_bad_manip_families_are_refused_in_one_line(tmp_path, capsys):
    from benchmarks.datagen.corpus import main

    assert (
        main(
            [
                "--out",
                str(tmp_path / "c"),
                "--families",
                "manip",
                "--kinds",
                "manip_depth",
                "--manip-families",
                "pick,juggle",
            ]
        )
        == 2
    )
    assert capsys.readouterr().err.strip() == (
        "error: --manip-families 'pick,juggle': unknown ['juggle']; choose from pick, stack, place, wipe"
    )
