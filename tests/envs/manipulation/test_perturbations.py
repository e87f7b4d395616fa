"""EB-Manipulation's robustness axes: each changes what it says and nothing else, the same spec gives the same
scene byte for byte, the clean scene is untouched by the distractor pool, nothing of the spec reaches the
policy, and bad specs are one-line errors."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest

from envs.manipulation import language, objects, workspace
from envs.manipulation.env import CAMERAS, EBManipulationEnv
from envs.manipulation.episodes import make_episode
from envs.manipulation.perturbations import (
    AXES,
    FAMILY,
    camera,
    footprint,
    paraphrase_instruction,
    paraphrase_table,
)
from envs.manipulation.shapes import SHAPES
from envs.manipulation.tasks import FAMILIES, SUBSETS
from envs.perturbation import CHANNEL_AXES, PerturbationError, PerturbationSpec, parse_perturb

SEED = 918273645  # distinctive: its digits must not show up anywhere the policy looks
IMAGES = tuple(CAMERAS)
# The episode keys each scene axis may change (prefixes of dotted paths).
ALLOWED = {
    "camera": ("cameras.",),
    "lighting": ("lighting.",),
    "textures": ("surfaces.",),
    "distractors": ("objects.",),
    "initial_position": ("objects.*.xy",),
    "robot_joints": ("robot_joints",),
    "paraphrase": ("instruction",),
}


def _flat(data: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(data, dict):
        return {k: v for key, value in data.items() for k, v in _flat(value, f"{prefix}{key}.").items()}
    if isinstance(data, list) and data and isinstance(data[0], (dict, list)):
        return {k: v for i, value in enumerate(data) for k, v in _flat(value, f"{prefix}{i}.").items()}
    return {prefix.rstrip("."): data}


def _generic(path: str) -> str:
    return ".".join("*" if part.isdigit() else part for part in path.split("."))


@pytest.fixture(scope="module")
def env():
    env = EBManipulationEnv("pick", image_size=48)
    yield env
    env.close()


@pytest.mark.parametrize("axis", sorted(ALLOWED))
@pytest.mark.parametrize("family", FAMILIES)
def test_each_scene_axis_changes_what_it_says_and_nothing_else(axis, family):
    episode = make_episode(family, "spatial", 2)
    before = _flat(episode)
    out = AXES[axis].apply(episode, PerturbationSpec(axis, 5, SEED))  # type: ignore[misc]
    after = _flat(out)
    changed = {
        _generic(k) for k in set(before) | set(after) if before.get(k, "missing") != after.get(k, "missing")
    }
    assert changed, f"{axis} changed nothing"
    assert [c for c in changed if not c.startswith(ALLOWED[axis])] == []
    assert episode == make_episode(family, "spatial", 2)  # the input is left alone


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("subset", SUBSETS)
def test_distractors_are_new_kinds_on_free_table_and_keep_the_instruction_unique(family, subset):
    for index in range(3):
        episode = make_episode(family, subset, index)
        out = AXES["distractors"].apply(episode, PerturbationSpec("distractors", 5, SEED + index))  # type: ignore[misc]
        old, new = episode["objects"], out["objects"]
        added = new[len(old) :]
        assert new[: len(old)] == old and len(added) >= 4
        assert all(o["slot"] in objects.DISTRACTORS and o["pattern"] == "plain" for o in added)
        named = {o["kind"] for o in old} | {SHAPES[k].noun for k in SHAPES}
        assert {o["kind"] for o in added}.isdisjoint(named)
        for i, a in enumerate(new):  # no two footprints overlap
            for b in new[i + 1 :]:
                (ax, ay), (bx, by) = footprint(a), footprint(b)
                gap_x = abs(a["xy"][0] - b["xy"][0]) - ax - bx
                gap_y = abs(a["xy"][1] - b["xy"][1]) - ay - by
                assert max(gap_x, gap_y) > 0, (a["slot"], b["slot"])


def test_a_spatial_pick_instruction_still_names_one_object():
    for index in range(12):
        episode = make_episode("pick", "spatial", index)
        out = AXES["distractors"].apply(episode, PerturbationSpec("distractors", 5, SEED))  # type: ignore[misc]
        phrase = next(p for p in language.RELATIONS.values() if f"object {p} the " in episode["instruction"])
        relation = next(k for k, v in language.RELATIONS.items() if v == phrase)
        noun = episode["instruction"].split(f"object {phrase} the ")[1].split(" and ")[0]
        ref = next(o for o in out["objects"] if o["kind"] in SHAPES and SHAPES[o["kind"]].noun == noun)
        hits = [
            o["slot"]
            for o in out["objects"]
            if o is not ref
            and o["kind"] != "container"  # (the task's candidates: every object but the containers)
            and language.relation_holds(np.array(o["xy"]), np.array(ref["xy"]), relation)
        ]
        assert hits == [episode["goal"]["target"]], (episode["instruction"], hits)


def test_initial_position_moves_every_object_by_one_shift():
    episode = make_episode("wipe", "base", 0)
    out = AXES["initial_position"].apply(episode, PerturbationSpec("initial_position", 3, SEED))  # type: ignore[misc]
    shifts = {
        tuple(np.round(np.subtract(b["xy"], a["xy"]), 4)) for a, b in zip(episode["objects"], out["objects"])
    }
    assert len(shifts) == 1 and abs(np.hypot(*shifts.pop()) - 0.06) < 2e-4


def test_the_unperturbed_camera_pose_is_the_compiled_one(env):
    """The look code writes the pose the scene was compiled with when given the default camera spec."""
    m = env.scene.mj_model
    compiled = {
        name: (m.cam_pos[m.camera(name).id].copy(), m.cam_quat[m.camera(name).id].copy())
        for name in ("eb_front", "eb_overhead")
    }
    defaults = {"eb_front": workspace.FRONT_CAMERA, "eb_overhead": workspace.OVERHEAD_CAMERA}
    episode = make_episode("pick", "base", 0)
    episode["cameras"] = {n: {**d, "up": list(d.get("up", (0, 0, 1)))} for n, d in defaults.items()}
    env.reset(options={"episode": episode})
    for name, (pos, quat) in compiled.items():
        cam = m.camera(name).id
        assert np.allclose(m.cam_pos[cam], pos) and np.allclose(m.cam_quat[cam], quat, atol=1e-6)
    moved = camera(make_episode("pick", "base", 0), PerturbationSpec("camera", 5, SEED))
    env.reset(options={"episode": moved})
    assert not np.allclose(m.cam_quat[m.camera("eb_front").id], compiled["eb_front"][1])


@pytest.mark.parametrize("axis", list(AXES))
def test_same_spec_same_scene_byte_for_byte_and_the_next_episode_is_clean(env, axis):
    episode = make_episode("pick", "spatial", 3)
    spec = PerturbationSpec(axis, 4, SEED)
    clean, _ = env.reset(options={"episode": episode})
    first, _ = env.reset(options={"episode": episode, "perturbation": spec})
    again, _ = env.reset(options={"episode": episode, "perturbation": spec.to_json()})
    after, _ = env.reset(options={"episode": episode})
    assert all(first[k].tobytes() == again[k].tobytes() for k in IMAGES)
    assert first["instruction"] == again["instruction"]
    assert all(clean[k].tobytes() == after[k].tobytes() for k in IMAGES)  # nothing leaks into the next
    if axis != "action_noise":
        assert any(first[k].tobytes() != clean[k].tobytes() for k in IMAGES) or (
            first["instruction"] != clean["instruction"]
        )


def test_action_noise_moves_targets_the_same_way_every_time(env):
    episode = make_episode("pick", "base", 0)
    action = np.array([50, 50, 40, 0, 60, 90, 1])
    moves = []
    for _ in range(2):
        env.reset(options={"episode": episode, "perturbation": PerturbationSpec("action_noise", 5, SEED)})
        moves.append([env._channels.action(action).tolist() for _ in range(4)])
    assert moves[0] == moves[1] and any(m != action.tolist() for m in moves[0])
    assert all(m[6] == 1 for m in moves[0])  # the gripper bit is never flipped


def _texts(data: Any) -> str:
    return json.dumps(data, default=lambda v: v.tolist() if isinstance(v, np.ndarray) else repr(v))


@pytest.fixture(scope="module")
def wipe_env():
    env = EBManipulationEnv("wipe", image_size=32)
    yield env
    env.close()


@pytest.mark.parametrize("axis", list(AXES))
def test_nothing_of_the_spec_reaches_the_policy(env, wipe_env, axis):
    """No axis name, level, seed or file name in the observation's texts or ``info`` that the clean episode
    does not show too (a wipe instruction says "camera"); the instruction is the table's or the original."""
    spec = PerturbationSpec(axis, 5, SEED)
    for e, episode in (
        (env, make_episode("pick", "spatial", 1)),
        (wipe_env, make_episode("wipe", "common_sense", 1)),
    ):
        clean_obs, clean_info = e.reset(options={"episode": episode})
        obs, info = e.reset(options={"episode": episode, "perturbation": spec})
        clean = " ".join([clean_obs["instruction"], clean_obs["object_list"], _texts(clean_info)])
        text = " ".join([obs["instruction"], obs["feedback"], obs["object_list"], _texts(info)])
        words = (axis, axis.replace("_", " "), str(SEED), "perturb", "paraphrases", '"level"', '"axis"')
        assert [w for w in words if w in text and w not in clean] == [], axis
        expected = (
            paraphrase_instruction(episode["instruction"], 5)
            if axis == "paraphrase"
            else episode["instruction"]
        )
        assert obs["instruction"] == expected
        assert set(obs) == set(clean_obs)


def test_paraphrases_keep_what_the_instruction_names():
    """The table's review, checked: every entry keeps each phrase the original's row captured, every row
    has five distinct templates, and only the complex subset falls through to the neutral frame."""
    assert all(len(set(levels)) == 5 for _, levels in paraphrase_table())
    for family in FAMILIES:
        for subset in SUBSETS:
            for index in range(6):
                text = make_episode(family, subset, index)["instruction"]
                row = next(i for i, (p, _) in enumerate(paraphrase_table()) if p.match(text))
                assert (row == len(paraphrase_table()) - 1) == (subset == "complex"), text
                kept = [v for v in paraphrase_table()[row][0].match(text).groupdict().values() if v]  # type: ignore[union-attr]
                for level in range(1, 6):
                    out = paraphrase_instruction(text, level)
                    assert out != text and out.isascii() and all(v in out for v in kept), (text, out)


def test_channel_axes_leave_the_episode_alone(env):
    episode = make_episode("pick", "base", 3)
    for axis in CHANNEL_AXES:
        env.reset(options={"episode": episode, "perturbation": PerturbationSpec(axis, 5, SEED)})
        assert env.task.laid_out() == episode


@pytest.mark.parametrize(
    ("spec", "word"),
    [
        ({"axis": "weather", "level": 1}, "unknown axis"),
        ({"axis": "camera", "level": 9}, "level must be an integer 1-5"),
    ],
)
def test_bad_specs_are_one_line_errors(env, spec, word):
    with pytest.raises(PerturbationError, match=word) as error:
        env.reset(options={"episode": make_episode("pick", "base", 0), "perturbation": spec})
    assert "\n" not in str(error.value)


def test_at_least_six_scene_axes_and_every_level():
    assert len([a for a in AXES.values() if a.apply is not None]) >= 6
    assert parse_perturb("all", FAMILY) == [(name, (1, 2, 3, 4, 5)) for name in AXES]


def test_the_robustness_guide_lists_every_axis_with_its_levels():
    from pathlib import Path

    page = (Path(__file__).parents[3] / "docs" / "guide" / "robustness.md").read_text()
    for axis in AXES.values():
        assert f"| `{axis.name}` | {axis.changes} | " + " | ".join(axis.levels) + " |" in page, axis.name
