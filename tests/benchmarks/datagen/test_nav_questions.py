"""SpatialScore-style questions generated from the navigation homes: exact measurements, reproducibility,
ground truth re-derived through the env's own renders, and the static runner scoring them end to end."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from action_mapping import Primitive
from action_mapping.se3 import axes_from_rotation, body_motion
from benchmarks.datagen.nav_questions import KINDS, plural
from benchmarks.scoring.parsers import split_lettered_options
from benchmarks.scoring.units import Quantity
from benchmarks.static.__main__ import main
from benchmarks.static.config import RunConfig
from benchmarks.static.registry import LoadOptions, get_benchmark
from benchmarks.static.runner import run
from envs.navigation import measure
from envs.navigation.camera import Intrinsics, backproject, pose_from_c2w
from envs.navigation.env import EBNavigationEnv
from envs.navigation.scene import generate_scene, scene_key
from envs.navigation.world import World
from policies.backends.base import Backend, Generation, GenerationConfig, Message
from tests.nav_scenes import empty_room, episode

N_ITEMS = 3 * len(KINDS)
SEED = 3


# ---------------------------------------------------------------------------------------- measurements


def _ball(entity_id: str, x: float, y: float, yaw: float = 0.0) -> dict[str, Any]:
    return {
        "id": entity_id,
        "category": "ball",
        "colour": "red",
        "scale": 1.0,
        "pos": [x, y, 0.0],
        "yaw": yaw,
        "room": 0,
        "support": "floor",
    }


def test_measurements_hand_worked():
    mug = {
        "id": "mug_2",
        "category": "mug",
        "colour": "red",
        "scale": 1.0,
        "pos": [1.0, 1.0, 0.0],
        "yaw": 30.0,
        "room": 0,
        "support": "floor",
    }
    world = World(empty_room(objects=[_ball("ball_0", 3.0, 2.0), _ball("ball_1", 2.0, 2.0), mug]))
    # A ball: sphere r 0.12 with two bands of radius 0.1205 -> 24.1 cm every way, centred 0.12 m up.
    assert measure.extents(world, 1) == pytest.approx([0.241] * 3)
    assert measure.centre(world, 1) == pytest.approx([3.0, 2.0, 0.12])
    # Two balls 1 m apart along x: 1 - 2 x 0.1205 between their surfaces.
    assert measure.closest_distance(world, 1, 2) == pytest.approx(0.759)
    # A mug: body r 0.048 (9.6 cm), handle out to x = 0.082 (13 cm long), lid top at 0.112 m; yaw does not
    # matter.
    assert measure.extents(world, 3) == pytest.approx([0.13, 0.096, 0.112])
    assert measure.longest_dimension(world, 3) == pytest.approx(0.13)
    assert [plural(n) for n in ("shelf", "teddy bear", "box", "knife", "chair")] == [
        "shelves",
        "teddy bears",
        "boxes",
        "knives",
        "chairs",
    ]


# ------------------------------------------------------------------------------------- generated sets


def _generate(root: Path, n: int) -> Path:
    assert main(["generate", "--out", str(root), "--n", str(n), "--seed", str(SEED)]) == 0
    return root / "SpatialScore.json"


@pytest.fixture(scope="module")
def qa_set(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _generate(tmp_path_factory.mktemp("qa") / "set", N_ITEMS)


def _items(path: Path) -> list[dict[str, Any]]:
    return json.loads(path.read_text(encoding="utf-8"))


def _truths(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (path.parent / "ground_truth.jsonl").read_text().splitlines()]


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_same_seed_same_files_and_prefixes_regenerate(qa_set, tmp_path):
    a, b = _generate(tmp_path / "a" / "set", len(KINDS)), _generate(tmp_path / "b" / "set", len(KINDS))
    assert _files(a.parent) == _files(b.parent)
    assert _items(a) == _items(qa_set)[: len(KINDS)] and _truths(a) == _truths(qa_set)[: len(KINDS)]
    for item in _items(a):
        for image in item["img_paths"]:
            assert (a.parent / image).read_bytes() == (qa_set.parent / image).read_bytes()


def test_items_load_through_the_spatialscore_loader(qa_set):
    items = get_benchmark("spatialscore").load(qa_set, LoadOptions())
    truths = _truths(qa_set)
    assert len(items) == N_ITEMS and [t["kind"] for t in truths] == list(KINDS) * 3
    for item, truth in zip(items, truths):
        assert item.tags["source"] == "SpatialArena-Nav" and all(Path(m).is_file() for m in item.media)
        if truth["kind"] in ("absolute_depth", "object_distance"):
            assert item.task == "numeric" and item.meta["key"].unit == "m"
        elif truth["kind"] == "object_size":
            assert item.task == "numeric" and item.meta["key"] == Quantity(float(item.answer), "cm")
        elif truth["kind"] == "camera_motion":
            assert item.task == "mcq" and item.modality == "multi-image" and len(item.options) == 4
        else:
            assert item.task in ("mcq", "judgment")
        if item.task == "mcq":
            assert item.meta["key"] in item.options and item.answer == f"({item.meta['key']})"


class _EnvViews:
    """Renders the recorded cameras through the navigation env (RGB, depth, entity mask)."""

    def __init__(self, camera: dict[str, Any]) -> None:
        self.env = EBNavigationEnv(
            width=camera["width"], height=camera["height"], fov=camera["fovy_deg"], depth=True, mask=True
        )
        self.intrinsics = Intrinsics(camera["width"], camera["height"], camera["fovy_deg"])

    def load(self, truth: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
        scene = generate_scene(truth["home_seed"])
        assert scene_key(scene) == truth["scene_key"]
        _, info = self.env.reset(
            options={"episode": episode(scene, 0.0, 0.0, 0.0, target=scene["objects"][0]["id"])}
        )
        return scene, info["mask_labels"]

    def render(self, c2w: Sequence[Sequence[float]]) -> dict[str, np.ndarray]:
        snapshot = self.env.unwrapped.snapshot()
        snapshot["agent"] = dataclasses.asdict(pose_from_c2w(np.asarray(c2w)))  # unrounded: the exact camera
        return self.env.unwrapped.restore(snapshot)


@pytest.fixture(scope="module")
def rendered(qa_set) -> list[tuple[dict[str, Any], dict[str, Any], list[str], list[dict[str, np.ndarray]]]]:
    """(item, truth, mask labels, env observations at each recorded camera) for every generated item."""
    truths = _truths(qa_set)
    views = _EnvViews(truths[0]["camera"])
    try:
        out = []
        for item, truth in zip(_items(qa_set), truths):
            _, labels = views.load(truth)
            out.append((item, truth, labels, [views.render(c) for c in truth["cameras_c2w"]]))
        return out
    finally:
        views.env.close()


def test_images_are_the_env_views_at_the_recorded_cameras(qa_set, rendered):
    from PIL import Image

    for item, _, _, observations in rendered:
        for path, obs in zip(item["img_paths"], observations):
            saved = np.asarray(Image.open(qa_set.parent / path).convert("RGB"))
            assert np.array_equal(saved, obs["rgb"]), path


def _pixels(obs: dict[str, np.ndarray], labels: list[str], entity_id: str) -> np.ndarray:
    return obs["object_ids"] == labels.index(entity_id)


def test_depth_answers_match_the_depth_render(rendered):
    checked = 0
    for item, truth, labels, (obs, *_) in rendered:
        if truth["kind"] == "absolute_depth":
            depth = float(np.median(obs["depth"][_pixels(obs, labels, truth["truth"]["entity"])]))
            assert depth == pytest.approx(truth["truth"]["median_depth_m"], abs=2e-3)
            assert item["answer"] == f"{truth['truth']['median_depth_m']:.2f}"
            checked += 1
        if truth["kind"] == "relative_depth":
            depths = [
                float(np.median(obs["depth"][_pixels(obs, labels, e)])) for e in truth["truth"]["entities"]
            ]
            assert item["answer"] == ("(A)" if depths[0] < depths[1] else "(B)")
            assert max(depths) >= 1.25 * min(depths)
            checked += 1
    assert checked == 6


def _noun(scene: dict[str, Any], entity_id: str) -> str:
    """Category noun of an entity id, read from the scene dict."""
    entry = next(e for e in scene["objects"] + scene["furniture"] if e["id"] == entity_id)
    return entry.get("category", entry.get("kind", "")).replace("_", " ")


def _points(
    obs: dict[str, np.ndarray], labels: list[str], entity_id: str, intr: Intrinsics, c2w: Any
) -> np.ndarray:
    return backproject(obs["depth"], intr, np.asarray(c2w))[_pixels(obs, labels, entity_id)]


def test_sizes_and_distances_bound_the_visible_surfaces(rendered):
    """The visible surface points of an entity fit inside its measured extents, and the nearest visible points of
    two entities are no closer than the measured surface distance."""
    kinds = []
    for item, truth, labels, (obs, *_) in rendered:
        t = truth["truth"]
        kinds.append(truth["kind"])
        intr = Intrinsics(truth["camera"]["width"], truth["camera"]["height"], truth["camera"]["fovy_deg"])
        c2w = truth["cameras_c2w"][0]
        if truth["kind"] == "object_size":
            pts = _points(obs, labels, t["entity"], intr, c2w)
            assert np.ptp(pts[:, 2]) <= t["extents_m"][2] + 0.01  # heights are along the body's z axis
            assert max(np.ptp(pts[:, 0]), np.ptp(pts[:, 1])) <= math.hypot(*t["extents_m"][:2]) + 0.01
            assert item["answer"] == str(round(100 * t["longest_m"]))
        if truth["kind"] == "object_distance":
            a, b = (_points(obs, labels, e, intr, c2w) for e in t["entities"])
            nearest = np.min(np.linalg.norm(a[::7, None, :] - b[None, ::7, :], axis=-1))
            assert t["distance_m"] - 0.01 <= nearest and t["distance_m"] >= 0.2
    assert kinds.count("object_size") == kinds.count("object_distance") == 3


def test_counts_directions_and_motions_re_derived(rendered):
    checked = []
    for item, truth, labels, observations in rendered:
        t, obs, scene = truth["truth"], observations[0], generate_scene(truth["home_seed"])
        checked.append(truth["kind"])
        if truth["kind"] == "counting":
            same = [e for e in labels[1:] if _noun(scene, e) == t["noun"]]
            shown = [np.count_nonzero(_pixels(obs, labels, e)) for e in same]
            assert sum(px >= 150 for px in shown) == t["count"] and not any(0 < px < 150 for px in shown)
            assert f"How many {plural(t['noun'])} are in the image?" in item["question"]
        if truth["kind"] == "relative_direction":
            columns = [np.nonzero(_pixels(obs, labels, e))[1].mean() for e in t["entities"]]
            assert (columns[0] < columns[1]) == (t["side_of_first"] == "left")
        if truth["kind"] == "camera_motion":
            motion = body_motion(*np.asarray(truth["cameras_c2w"]))
            primitive = Primitive(t["primitive"])
            moved = motion[:3, 3] if t["unit"] == "m" else np.degrees(axes_from_rotation(motion[:3, :3]))
            expected = np.zeros(3)
            expected[primitive.axis] = primitive.sign * t["amount"]
            assert moved == pytest.approx(expected, abs=1e-6)
    assert all(checked.count(k) == 3 for k in ("counting", "relative_direction", "camera_motion"))


# ------------------------------------------------------------------------------------- scoring end to end


class _AnswerKeyBackend(Backend):
    """A fake model answering each item from a table keyed by the pixels of its images."""

    def __init__(self, answers: dict[str, str], model_id: str) -> None:
        self.model_id, self.config, self.answers = model_id, GenerationConfig(), answers

    def generate(self, messages: Sequence[Message]) -> Generation:
        images = [p["image"] for p in messages[-1]["content"] if p.get("type") == "image"]
        return Generation(text=self.answers[_image_key(np.asarray(i) for i in images)], latency_s=0.0)


def _image_key(images: Any) -> str:
    digest = hashlib.sha256()
    for image in images:
        digest.update(np.ascontiguousarray(image).tobytes())
    return digest.hexdigest()


def _wrong(item: dict[str, Any]) -> str:
    """A wrong answer of the right form: the next option, the other of yes/no, 1.5 x the number."""
    answer = item["answer"]
    if item["question_type"] == "multi-choice":
        letters = sorted(split_lettered_options(item["question"]))
        return f"({letters[(letters.index(answer.strip('()')) + 1) % len(letters)]})"
    if item["question_type"] == "judgment":
        return "No" if answer == "Yes" else "Yes"
    return f"{1.5 * float(answer):.6g}"


def _answer_table(qa_set: Path, wrong: bool) -> dict[str, str]:
    from PIL import Image

    table = {}
    for item in _items(qa_set):
        images = [np.asarray(Image.open(qa_set.parent / p).convert("RGB")) for p in item["img_paths"]]
        table[_image_key(images)] = _wrong(item) if wrong else item["answer"]
    return table


def test_runner_scores_the_answer_key_100_and_wrong_answers_lower(qa_set, tmp_path):
    right = run(
        RunConfig(bench="spatialscore", data=qa_set, output=tmp_path, model="answer-key"),
        backend=_AnswerKeyBackend(_answer_table(qa_set, wrong=False), "answer-key"),
    )
    assert right.summary["headline"]["overall"] == 100.0 and right.summary["counts"]["items"] == N_ITEMS
    assert len(right.summary["tables"]["by_category"]["rows"]) == 5
    wrong = run(
        RunConfig(bench="spatialscore", data=qa_set, output=tmp_path, model="wrong"),
        backend=_AnswerKeyBackend(_answer_table(qa_set, wrong=True), "wrong"),
    )
    # Wrong options and yes/no score 0; 1.5 x the truth is 50 % off: MRA 0.1 (only the 0.50 threshold passes).
    numeric = sum(1 for item in _items(qa_set) if item["question_type"] == "open-ended")
    assert wrong.summary["headline"]["overall"] == pytest.approx(100.0 * 0.1 * numeric / N_ITEMS)


def test_tiny_model_runs_end_to_end(qa_set, tmp_path, tiny_vlm):
    config = RunConfig(
        bench="spatialscore",
        data=qa_set,
        output=tmp_path,
        model=str(tiny_vlm("qwen2_5_vl")),
        limit=len(KINDS),
        max_new_tokens=8,
        cache=tmp_path / "responses.sqlite",
    )
    result = run(config)
    counts = result.summary["counts"]
    assert counts["items"] == len(KINDS) and counts["missing_predictions"] == 0
    assert all(r["response"] is not None and r["error"] is None for r in result.records)
    assert 0.0 <= result.summary["headline"]["overall"] <= 100.0
    assert (result.out_dir / "samples.jsonl").is_file() and (result.out_dir / "summary.md").is_file()


def test_generate_refuses_bad_settings(qa_set, tmp_path, capsys):
    assert main(["generate", "--out", str(qa_set.parent), "--n", "1"]) == 2
    assert "already holds SpatialScore.json" in capsys.readouterr().err
    assert main(["generate", "--out", str(tmp_path / "x"), "--kinds", "depth"]) == 2
    assert "unknown ['depth']" in capsys.readouterr().err
