"""The CALVIN play-table family of the spatial corpus: every kind's answer re-derived from the row's own
snapshot with an independent pinhole camera, determinism, and disjointness from the CALVIN test sets."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

pytest.importorskip("datasets")

from benchmarks.datagen.calvin_corpus import (
    CALVIN_CORPUS_SEEDS,
    CALVIN_KINDS,
    check_calvin_disjoint,
    evaluation_scene_keys,
    scene_key,
)
from benchmarks.datagen.corpus import CorpusConfig, corpus_rows
from envs.calvin import constants as C

CALVIN_ONLY = {"families": "calvin", "kinds": ",".join(CALVIN_KINDS)}


@pytest.fixture(scope="module")
def rows():
    """One item of each CALVIN kind."""
    return list(corpus_rows(CorpusConfig(n=len(CALVIN_KINDS), **CALVIN_ONLY), range(len(CALVIN_KINDS))))


def _pixels_depth(points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """An independent pinhole model of the static camera (look-at from calvin.md's eye, 10 deg vertical fov)."""
    eye, target, up = (np.asarray(v, dtype=np.float64) for v in (C.STATIC_EYE, C.STATIC_TARGET, C.STATIC_UP))
    forward = (target - eye) / np.linalg.norm(target - eye)
    right = np.cross(forward, up)
    right /= np.linalg.norm(right)
    down = np.cross(forward, right)
    rel = np.atleast_2d(points) - eye
    z = rel @ forward
    f = (C.STATIC_CAMERA.height / 2) / np.tan(np.radians(C.STATIC_CAMERA.fov) / 2)
    cols = C.STATIC_CAMERA.width / 2 + f * (rel @ right) / z
    rws = C.STATIC_CAMERA.height / 2 + f * (rel @ down) / z
    return np.c_[cols, rws], z


def _letter_of(question: str, text: str) -> str:
    match = re.search(r"\(([A-D])\) " + re.escape(text) + r"$", question, re.M)
    assert match, (text, question)
    return f"({match.group(1)})"


def test_every_calvin_answer_follows_from_the_snapshot(rows):
    from scipy.spatial.transform import Rotation

    assert sorted(r["kind"] for r in rows) == sorted(CALVIN_KINDS)
    for row in rows:
        truth = json.loads(row["truth"])
        facts, blocks = truth["truth"], truth["blocks"]
        pos = {c: np.asarray(b["pos"]) for c, b in blocks.items()}
        question = row["messages"][0]["content"][-1]["text"]
        assert row["family"] == "calvin" and row["images"][0].size == (200, 200)
        assistant = row["messages"][1]["content"][0]["text"]
        kind = row["kind"]
        if kind == "calvin_multihop":  # the recipe's two lines: the lettered answer, then the block's box
            assert (
                assistant
                == f"Answer: {row['answer']}\nBounding Box: [{', '.join(map(str, row['bbox_normalized']))}]"
            )
        else:
            assert assistant == row["answer"] == row["response"]
        if kind == "calvin_distance":
            a, b = facts["blocks"]
            assert row["answer"] == f"{np.linalg.norm(pos[a] - pos[b]):.2f}"
        elif kind == "calvin_depth":
            _, z = _pixels_depth(pos[facts["block"]])
            assert row["answer"] == f"{z[0]:.2f}"
        elif kind == "calvin_nearest_gripper":
            tcp = np.asarray(truth["robot_obs"][:3])
            nearest = min(pos, key=lambda c: np.linalg.norm(pos[c] - tcp))
            assert row["answer"] == _letter_of(question, f"the {nearest} block")
        elif kind == "calvin_left_right":
            a, b = facts["blocks"]
            cols = _pixels_depth(np.stack([pos[a], pos[b]]))[0][:, 0]
            assert row["answer"] == _letter_of(question, "left" if cols[0] < cols[1] else "right")
        elif kind == "calvin_counting":
            cabinet = facts["where"] == "in the cabinet"
            n = sum((p[1] > 0.0) == cabinet for p in pos.values())
            assert row["answer"] == _letter_of(question, str(n))
        elif kind == "calvin_localisation":
            color = facts["block"]
            half = np.asarray(C.BLOCKS[color].size) / 2
            signs = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)])
            corners = pos[color] + Rotation.from_quat(blocks[color]["orn_xyzw"]).apply(signs * half)
            px = np.clip(_pixels_depth(corners)[0], 0, 200) * 5  # 200 px -> 0-1000
            expected = [*np.floor(px.min(axis=0)), *np.ceil(px.max(axis=0))]
            assert np.abs(np.asarray(row["bbox_normalized"]) - expected).max() <= 1  # rounding at a cell edge
            x1, y1, x2, y2 = row["bbox_normalized"]
            assert 0 <= x1 < x2 <= 1000 and 0 <= y1 < y2 <= 1000
            image = np.asarray(row["images"][0])[y1 // 5 : -(-y2 // 5), x1 // 5 : -(-x2 // 5)]
            rgba = np.asarray(C.BLOCKS[color].rgba[:3]) * 255  # the block's colour shows inside its box
            assert (np.abs(image.astype(float) - rgba).max(axis=-1) < 90).sum() >= 5
        elif kind == "calvin_multihop":
            tcp = np.asarray(truth["robot_obs"][:3])
            candidates = facts["candidates"]
            assert len(candidates) >= 2 and all(pos[c][1] < 0.0 for c in candidates)  # on the table
            distance = {c: np.linalg.norm(pos[c] - tcp) for c in candidates}
            pick = min if facts["extreme"] == "nearest to" else max
            best = pick(candidates, key=distance.__getitem__)
            # its letter in the list
            assert row["answer"].endswith(f") {best} block") and row["answer"] in question


def test_calvin_items_are_deterministic(rows):
    again = list(corpus_rows(CorpusConfig(n=2, **CALVIN_ONLY), [0, 1]))
    other = list(corpus_rows(CorpusConfig(n=2, seed=1, **CALVIN_ONLY), [0, 1]))
    assert [r["truth"] for r in again] == [r["truth"] for r in rows[:2]]
    assert [r["truth"] for r in other] != [r["truth"] for r in rows[:2]]


def test_calvin_corpus_is_disjoint_from_the_calvin_test_sets(rows):
    from envs.calvin.sequences import initial_env_state, symbolic_initial_states

    scenes = [(r["home_seed"], r["scene_key"], json.loads(r["truth"])["scene_obs"]) for r in rows]
    assert check_calvin_disjoint(scenes) == len(rows)
    assert len(evaluation_scene_keys()) == 192
    seed, key, scene_obs = scenes[0]
    # the goal-scoring manip source's seeds are below 2**31 - 1
    with pytest.raises(ValueError, match="outside"):
        check_calvin_disjoint([(CALVIN_CORPUS_SEEDS[0] - 1, key, scene_obs)])
    evaluation = initial_env_state(symbolic_initial_states()[0])[1].tolist()
    with pytest.raises(ValueError, match="evaluation spot"):  # every test scene has its blocks on the spots
        check_calvin_disjoint([(seed, scene_key(evaluation), evaluation)])
    with pytest.raises(ValueError, match="also a test scene"):
        check_calvin_disjoint(scenes, {key})
    with pytest.raises(ValueError, match="hashes differently"):
        check_calvin_disjoint([(seed, "0" * 16, scene_obs)])


def test_families_alternate_and_bad_families_are_refused():
    config = CorpusConfig(kinds="counting,calvin_depth,calvin_distance")
    assert [config.item_kind(i) for i in range(4)] == [
        ("nav", "counting"),
        ("calvin", "calvin_depth"),
        ("nav", "counting"),
        ("calvin", "calvin_distance"),
    ]
    with pytest.raises(ValueError, match="--families 'lab'"):
        CorpusConfig(families="lab").family_kinds()
    with pytest.raises(ValueError, match="no kind of family 'calvin'"):
        CorpusConfig(kinds="counting").family_kinds()


def test_mixed_corpus_on_disk_passes_the_check_command(tmp_path, capsys):
    """Both families written by the CLI path, then ``corpus check`` proves both disjoint."""
    from benchmarks.datagen.corpus import dataset_calvin_scenes, dataset_homes, generate_corpus, main

    out = tmp_path / "mixed"
    stats = generate_corpus(
        CorpusConfig(out=out, n=4, validation=0.25, kinds="counting,calvin_counting", width=96, height=96)
    )
    assert stats["family_mix"] == {"calvin": 2, "nav": 2} and stats["failed"]["count"] == 0
    assert len(dataset_homes(out)) == 2 and len(dataset_calvin_scenes(out)) == 2
    clean = tmp_path / "clean.jsonl"
    clean.write_text(json.dumps({"index": 0, "home_seed": 7, "scene_key": "0123456789abcdef"}) + "\n")
    assert main(["check", str(out), str(clean)]) == 0
    assert "2 CALVIN corpus scenes" in capsys.readouterr().out


def test_a_split_whose_items_all_fail_is_empty_and_counted(tmp_path, monkeypatch):
    """Regression: a validation split with no item made ``datasets`` raise 'corresponds to no data'."""
    import benchmarks.datagen.corpus as corpus

    real = corpus.draw_calvin_question
    calls = iter(range(100))
    monkeypatch.setattr(corpus, "draw_calvin_question", lambda *a: real(*a) if next(calls) < 2 else None)
    stats = corpus.generate_corpus(
        CorpusConfig(out=tmp_path / "c", n=3, validation=0.34, families="calvin", kinds="calvin_counting")
    )
    assert stats["splits"] == {"train": 2, "validation": 0}
    assert stats["failed"] == {"count": 1, "indices": [2]}


def test_one_pass_over_the_simulators_with_progress_and_eta(tmp_path, monkeypatch, capsys):
    """Regression: ``datasets`` split the item list into one shard per item, so every simulator was built again
    for every item (7 s per EB-Manipulation family). One call now makes every row; the bar shows items/s and ETA."""
    import benchmarks.datagen.corpus as corpus

    calls: list[list[int]] = []
    real = corpus.corpus_rows
    monkeypatch.setattr(
        corpus, "corpus_rows", lambda config, indices: calls.append(list(indices)) or real(config, indices)
    )
    stats = corpus.generate_corpus(
        CorpusConfig(out=tmp_path / "c", n=4, validation=0.25, families="calvin", kinds="calvin_counting")
    )
    assert calls == [[0, 1, 2, 3]] and stats["splits"] == {"train": 3, "validation": 1}
    bar = capsys.readouterr().err.replace("\r", "\n")
    assert "corpus items: 100%" in bar and "4/4 [" in bar and "item/s]" in bar
