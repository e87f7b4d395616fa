"""EB-Navigation's robustness axes: each changes what it says and nothing else, the same spec gives the same
scene byte for byte, nothing of the spec reaches the policy, and bad specs are one-line errors."""

from __future__ import annotations

import json
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

import envs  # noqa: F401  (registers the ids)
from envs.navigation.episodes import SUCCESS_DISTANCE, make_episode, make_episode_set
from envs.navigation.perturbations import AXES, paraphrase_instruction, paraphrase_table
from envs.navigation.planner import Lattice
from envs.navigation.scene import house_bounds, scene_obstacles
from envs.perturbation import CHANNEL_AXES, PerturbationError, PerturbationSpec

SEED = 918273645  # distinctive: its digits must not show up anywhere the policy looks
# The episode paths each scene axis may change (prefixes of dotted paths).
ALLOWED = {
    "camera": ("agent.pitch_deg", "agent.height", "camera_fov"),
    "lighting": ("scene.lighting.", "scene.rooms.*.light."),
    "textures": (
        "scene.rooms.*.floor.",
        "scene.rooms.*.wall_rgb",
        "scene.furniture.*.rgb",
        "scene.furniture.*.accent_rgb",
    ),
    "distractors": ("scene.objects.",),
    "initial_position": ("agent.x", "agent.y", "agent.heading_deg", "shortest_path"),
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
    env = gym.make("SpatialArena/EBNavigation-v0", width=64, height=64)
    yield env
    env.close()


@pytest.mark.parametrize("axis", sorted(ALLOWED))
@pytest.mark.parametrize("subset", ["base", "long_horizon"])
def test_each_scene_axis_changes_what_it_says_and_nothing_else(axis, subset):
    episode = make_episode(subset, 2)
    before = _flat(episode)
    out = AXES[axis].apply(episode, PerturbationSpec(axis, 5, SEED))  # type: ignore[misc]
    after = _flat(out)
    changed = {
        _generic(k) for k in set(before) | set(after) if before.get(k, "missing") != after.get(k, "missing")
    }
    assert changed, f"{axis} changed nothing"
    assert [c for c in changed if not c.startswith(ALLOWED[axis])] == []
    assert episode == make_episode(subset, 2)  # the input is left alone


def test_distractors_add_new_categories_and_keep_the_target_unique():
    episode = make_episode("base", 0)
    out = AXES["distractors"].apply(episode, PerturbationSpec("distractors", 5, SEED))  # type: ignore[misc]
    old, new = episode["scene"]["objects"], out["scene"]["objects"]
    assert new[: len(old)] == old and len(new) > len(old)
    assert {o["category"] for o in new[len(old) :]}.isdisjoint({o["category"] for o in old})


@pytest.mark.parametrize("level", [1, 3, 5])
def test_initial_position_starts_further_along_the_shortest_path(level):
    def steps(ep: dict[str, Any]) -> int:
        scene, agent = ep["scene"], ep["agent"]
        lattice = Lattice.build(
            scene_obstacles(scene), house_bounds(scene), (agent["x"], agent["y"]), agent["heading_deg"]
        )
        dist = lattice.steps_to_goal(ep["target"]["position"][:2], SUCCESS_DISTANCE)
        return int(
            dist[lattice.nearest((agent["x"], agent["y"])), lattice.heading_index(agent["heading_deg"])]
        )

    episode = make_episode("base", 1)
    out = AXES["initial_position"].apply(episode, PerturbationSpec("initial_position", level, SEED))  # type: ignore[misc]
    assert steps(out) > steps(episode)


def test_paraphrases_keep_what_the_instruction_names():
    """The table's review, checked: every entry keeps each phrase the original's row captured (the target,
    its room, its use or look), and every row has five distinct templates."""
    assert all(len(set(levels)) == 5 for _, levels in paraphrase_table())
    for subset in ("base", "common_sense", "complex_instruction", "visual_appearance", "long_horizon"):
        for episode in make_episode_set(subset, 8):
            text = episode["instruction"]
            match = next(p.match(text) for p, _ in paraphrase_table() if p.match(text))
            kept = [v for v in match.groupdict().values() if v]
            for level in range(1, 6):
                out = paraphrase_instruction(text, level)
                assert out != text and out.isascii() and all(v in out for v in kept), (text, out)


@pytest.mark.parametrize("axis", list(AXES))
def test_same_spec_same_scene_byte_for_byte(env, axis):
    episode = make_episode("base", 3)
    spec = PerturbationSpec(axis, 4, SEED)
    first, _ = env.reset(options={"episode": episode, "perturbation": spec})
    first_step = env.step(0)[0]
    clean, _ = env.reset(options={"episode": episode})
    again, _ = env.reset(options={"episode": episode, "perturbation": spec.to_json()})
    again_step = env.step(0)[0]
    assert first["rgb"].tobytes() == again["rgb"].tobytes() and first["instruction"] == again["instruction"]
    assert first_step["rgb"].tobytes() == again_step["rgb"].tobytes()
    if axis not in ("action_noise", "distractors"):  # (distractors may all stand out of view)
        assert (
            first["rgb"].tobytes() != clean["rgb"].tobytes() or first["instruction"] != clean["instruction"]
        )


def _texts(data: Any) -> str:
    return json.dumps(data, default=lambda v: v.tolist() if isinstance(v, np.ndarray) else repr(v))


@pytest.mark.parametrize("axis", list(AXES))
def test_nothing_of_the_spec_reaches_the_policy(env, axis):
    episode = make_episode("complex_instruction", 1)
    spec = PerturbationSpec(axis, 5, SEED)
    obs, info = env.reset(options={"episode": episode, "perturbation": spec})
    seen = [obs["instruction"], obs["feedback"], _texts(info)]
    step_obs, _, _, _, step_info = env.step(0)
    seen += [step_obs["instruction"], step_obs["feedback"], _texts(step_info)]
    text = " ".join(seen)
    for word in (axis, str(SEED), "perturb", "paraphrases.json", '"level"', '"axis"', '"seed"'):
        assert word not in text, (axis, word)
    expected = (
        paraphrase_instruction(episode["instruction"], 5) if axis == "paraphrase" else episode["instruction"]
    )
    assert obs["instruction"] == step_obs["instruction"] == expected
    assert set(obs) == {"rgb", "instruction", "feedback"}


def test_channel_axes_leave_the_episode_alone(env):
    episode = make_episode("base", 3)
    for axis in CHANNEL_AXES:
        env.reset(options={"episode": episode, "perturbation": PerturbationSpec(axis, 5, SEED)})
        assert env.unwrapped.episode == episode


@pytest.mark.parametrize(
    ("spec", "word"),
    [
        ({"axis": "weather", "level": 1}, "unknown axis"),
        ({"axis": "camera", "level": 9}, "level must be an integer 1-5"),
    ],
)
def test_bad_specs_are_one_line_errors(env, spec, word):
    with pytest.raises(PerturbationError, match=word) as error:
        env.reset(options={"episode": make_episode("base", 0), "perturbation": spec})
    assert "\n" not in str(error.value)


def test_the_robustness_guide_lists_every_axis_with_its_levels():
    from pathlib import Path

    page = (Path(__file__).parents[3] / "docs" / "guide" / "robustness.md").read_text()
    for axis in AXES.values():
        assert f"| `{axis.name}` | {axis.changes} | " + " | ".join(axis.levels) + " |" in page, axis.name
