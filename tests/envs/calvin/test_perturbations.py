"""CALVIN's robustness axes: each changes what it says and nothing else, the same spec gives the same
images byte for byte (and a clean reset after any variant is a fresh env's), nothing of the spec reaches
the policy, and bad specs are one-line errors."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

import envs  # noqa: F401  (registers the ids)
from envs.calvin import initial_env_state
from envs.calvin.instructions import CALVIN_TASKS, instruction_for
from envs.calvin.perturbations import (
    AXES,
    SCENE_LEVELS,
    clean_episode,
    paraphrase_table,
    scene_obs_in,
    variant_instruction,
)
from envs.calvin.scenes import SCENES
from envs.calvin.sequences import get_sequences
from envs.perturbation import CHANNEL_AXES, PerturbationError, PerturbationSpec

SEED = 918273645  # distinctive: its digits must not show up anywhere the policy looks
# The episode paths each scene axis may change (prefixes of dotted paths).
ALLOWED = {
    "camera": ("camera.",),
    "lighting": ("light.",),
    "textures": ("looks",),
    "distractors": ("distractors",),
    "block_positions": tuple(f"scene_obs.{i}" for i in range(6, 24)),
    "robot_joints": tuple(f"robot_obs.{i}" for i in range(7, 14)),
    "paraphrase": ("instructions.",),
    "scene": ("scene", "scene_obs."),
}
CHAINS = get_sequences(1000)[:3]
HOLD = np.array([0, 0, 0, 0, 0, 0, 1], np.float32)


def _flat(data: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(data, dict):
        return {k: v for key, value in data.items() for k, v in _flat(value, f"{prefix}{key}.").items()}
    if isinstance(data, list):
        return {k: v for i, value in enumerate(data) for k, v in _flat(value, f"{prefix}{i}.").items()}
    return {prefix.rstrip("."): data}


def _options(chain: int = 0) -> dict[str, Any]:
    state, _ = CHAINS[chain]
    robot_obs, scene_obs = initial_env_state(state, "D")
    return {"robot_obs": robot_obs, "scene_obs": scene_obs}


def _episode(chain: int = 0) -> dict[str, Any]:
    options = _options(chain)
    return clean_episode(options["robot_obs"], options["scene_obs"], "D", CHAINS[chain][1])


@pytest.fixture(scope="module")
def env():
    env = gym.make("SpatialArena/CalvinPlayTable-v0")
    yield env
    env.close()


@pytest.mark.parametrize("axis", sorted(ALLOWED))
@pytest.mark.parametrize("chain", [0, 2])
def test_each_scene_axis_changes_what_it_says_and_nothing_else(axis, chain):
    episode = _episode(chain)
    before = _flat(episode)
    out = AXES[axis].apply(episode, PerturbationSpec(axis, 5, SEED))  # type: ignore[misc]
    after = _flat(out)
    changed = {k for k in set(before) | set(after) if before.get(k, "missing") != after.get(k, "missing")}
    assert changed, f"{axis} changed nothing"
    assert [c for c in changed if not c.startswith(ALLOWED[axis])] == []
    assert episode == _episode(chain)  # the input is left alone


def test_every_scene_axis_is_tested():
    assert set(ALLOWED) == {name for name, axis in AXES.items() if axis.apply is not None}
    assert len(AXES) >= 8 + len(CHANNEL_AXES)


@pytest.mark.parametrize("level", [1, 3, 5])
def test_distractors_are_untasked_blocks_clear_of_the_table_blocks(level):
    episode = _episode(0)
    out = AXES["distractors"].apply(episode, PerturbationSpec("distractors", level, SEED))  # type: ignore[misc]
    extras = out["distractors"]
    assert len(extras) == level
    assert not {e["color"] for e in extras} & {"red", "blue", "pink"}
    table = [
        np.asarray(episode["scene_obs"][s : s + 2]) for s in (6, 12, 18) if episode["scene_obs"][s + 1] < 0
    ]
    for e in extras:
        xy = np.asarray(e["pose"][:2])
        assert all(abs(xy[0] - b[0]) >= 0.24 or abs(xy[1] - b[1]) >= 0.08 for b in table)


@pytest.mark.parametrize("level", [1, 3, 5])
@pytest.mark.parametrize("chain", [0, 1, 2])
def test_block_positions_keep_every_block_on_its_surface(level, chain):
    episode = _episode(chain)
    out = AXES["block_positions"].apply(episode, PerturbationSpec("block_positions", level, SEED))  # type: ignore[misc]
    spec = SCENES["D"]
    for color in spec.block_colors:
        s = spec.block_slice(color)
        old, new = np.asarray(episode["scene_obs"][s]), np.asarray(out["scene_obs"][s])
        inside = [
            name
            for name, ((x0, y0), (x1, y1)) in spec.surfaces.items()
            if x0 <= new[0] <= x1 and y0 <= new[1] <= y1
        ]
        assert inside, (color, new[:2])
        assert np.hypot(*(new[:2] - old[:2])) <= 0.08 + 1e-9 and new[2] == old[2]


@pytest.mark.parametrize("scene", ["A", "B", "C"])
def test_the_scene_axis_places_the_chain_as_the_scene_would(scene):
    """D's initial state moved into another scene is that scene's own initial state of the chain."""
    for state, _ in CHAINS:
        _, d_obs = initial_env_state(state, "D")
        _, x_obs = initial_env_state(state, scene)
        np.testing.assert_allclose(scene_obs_in(d_obs, SCENES["D"], SCENES[scene]), x_obs, atol=1e-6)


def test_scene_levels_run_from_the_closest_scene_to_the_furthest():
    assert SCENE_LEVELS == ("A", "A", "C", "C", "B")


def test_the_paraphrase_table_covers_every_task_with_five_distinct_rewordings():
    table = paraphrase_table()
    assert set(table) == set(CALVIN_TASKS)
    for task, levels in table.items():
        original = instruction_for(task)
        assert len(set(levels)) == 5 and original not in levels and all(t.isascii() for t in levels), task
        for color in ("red", "blue", "pink"):
            assert all((color in t) == (color in original) for t in levels), task


def test_the_policy_gets_the_paraphrase_or_the_original():
    for task in CALVIN_TASKS:
        for axis in AXES:
            spec = PerturbationSpec(axis, 4, SEED).to_json()
            expected = paraphrase_table()[task][3] if axis == "paraphrase" else instruction_for(task)
            assert variant_instruction(task, spec) == expected
        assert variant_instruction(task, None) == instruction_for(task)


def _same(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return set(a) == set(b) and all(np.asarray(a[k]).tobytes() == np.asarray(b[k]).tobytes() for k in a)


@pytest.mark.parametrize("axis", list(AXES))
def test_same_spec_same_images_byte_for_byte(env, axis):
    spec = PerturbationSpec(axis, 4, SEED)
    first, _ = env.reset(seed=3, options={**_options(), "perturbation": spec})
    first_step = env.step(HOLD)[0]
    clean, _ = env.reset(seed=3, options=_options())
    clean_step = env.step(HOLD)[0]
    again, _ = env.reset(seed=3, options={**_options(), "perturbation": spec.to_json()})
    again_step = env.step(HOLD)[0]
    assert _same(first, again) and _same(first_step, again_step)
    if axis == "action_noise":
        assert _same(first, clean) and not _same(first_step, clean_step)
    elif axis != "paraphrase":
        for camera in ("rgb_static", "rgb_gripper") if axis != "camera" else ("rgb_static",):
            assert first[camera].tobytes() != clean[camera].tobytes(), camera


def test_a_clean_reset_after_any_variant_is_a_fresh_envs(env):
    fresh = gym.make("SpatialArena/CalvinPlayTable-v0")
    expected = fresh.reset(seed=5, options=_options(1))[0]
    expected_step = fresh.step(HOLD)[0]
    fresh.close()
    for axis in AXES:
        env.reset(seed=5, options={**_options(1), "perturbation": PerturbationSpec(axis, 5, SEED)})
        env.step(HOLD)
        clean = env.reset(seed=5, options=_options(1))[0]
        assert _same(clean, expected) and _same(env.step(HOLD)[0], expected_step), axis


def _texts(data: Any) -> str:
    return json.dumps(data, default=lambda v: v.tolist() if isinstance(v, np.ndarray) else repr(v))


@pytest.mark.parametrize("axis", list(AXES))
def test_nothing_of_the_spec_reaches_the_policy(env, axis):
    spec = PerturbationSpec(axis, 5, SEED)
    obs, info = env.reset(options={**_options(2), "task": CHAINS[2][1][0], "perturbation": spec})
    step_obs, _, _, _, step_info = env.step(HOLD)
    seen = [_texts({k: v for k, v in o.items() if not k.startswith("rgb")}) for o in (obs, step_obs)]
    text = " ".join([*seen, _texts(info), _texts(step_info)])
    for word in (axis, str(SEED), "perturb", "paraphrases", "level", "axis", "seed"):
        assert not re.search(rf"\b{word}\b", text), (axis, word)
    assert set(obs) == {"rgb_static", "rgb_gripper", "robot_obs", "scene_obs"}
    assert set(info) == {"is_success", "task", "snapshot", "action_clipped"}


@pytest.mark.parametrize(
    ("spec", "word"),
    [
        ({"axis": "weather", "level": 1}, "an unknown axis"),
        ({"axis": "camera", "level": 9}, "level must be an integer 1-5"),
        ({"axis": "initial_position", "level": 2}, "an axis the family lacks"),
    ],
)
def test_bad_specs_are_one_line_errors(env, spec, word):
    import envs.navigation.perturbations  # noqa: F401  (declares initial_position for another family)

    with pytest.raises(PerturbationError, match=word) as error:
        env.reset(options={**_options(), "perturbation": spec})
    assert "\n" not in str(error.value)


def test_action_noise_needs_relative_actions():
    env = gym.make("SpatialArena/CalvinPlayTable-Abs-v0", cameras=[])
    with pytest.raises(PerturbationError, match="action_mode='relative'"):
        env.reset(options={**_options(), "perturbation": {"axis": "action_noise", "level": 1}})
    env.close()


def test_the_robustness_guide_lists_every_axis_with_its_levels():
    page = (Path(__file__).parents[3] / "docs" / "guide" / "robustness.md").read_text()
    section = page[page.index("## CALVIN axes") :]
    for axis in AXES.values():
        assert f"| `{axis.name}` | {axis.changes} | " + " | ".join(axis.levels) + " |" in section, axis.name
