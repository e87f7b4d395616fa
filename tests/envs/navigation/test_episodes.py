"""Episode sets: reproducible, validated solvable, subset-specific instructions and start states."""

import json

import numpy as np
import pytest

from envs.navigation.catalog import CATEGORIES
from envs.navigation.env import EBNavigationEnv
from envs.navigation.episodes import (
    EPISODES_PER_SCENE,
    SUBSETS,
    EpisodeError,
    load_episodes,
    make_episode,
    make_episode_set,
    save_episodes,
)

N = 4  # two scene groups per subset


@pytest.fixture(scope="module")
def sets():
    return {s: make_episode_set(s, N, seed=0) for s in SUBSETS}


@pytest.fixture(scope="module")
def env():
    e = EBNavigationEnv(width=224, height=224)  # the default size: "in view" is checked at it
    yield e
    e.close()


def test_regenerates_identically_and_independently(sets):
    for subset, episodes in sets.items():
        again = make_episode_set(subset, N, seed=0)
        assert json.dumps(again, sort_keys=True) == json.dumps(episodes, sort_keys=True)
        assert make_episode(subset, 3, seed=0) == episodes[3]
        assert [e["episode_id"] for e in episodes] == [f"{subset}/{i:04d}" for i in range(N)]
    assert make_episode("base", 0, seed=1) != sets["base"][0]


def test_no_single_repeated_action_solves_an_episode_in_the_env(sets):
    """The no-blind-success rule, checked in the env itself: each move repeated for the whole budget walks
    straight until blocked and never succeeds (turns and looks leave the position alone, and every start
    is at least 3 actions from success)."""
    env = EBNavigationEnv(width=16, height=16)  # success does not depend on the image
    for episodes in sets.values():
        for ep in episodes[:2]:  # the generator applies the rule to every start (kept short: seconds)
            for action in range(4):
                env.reset(options={"episode": ep})
                for _ in range(ep["max_steps"]):
                    _, _, terminated, truncated, info = env.step(action)
                    assert not info["is_success"], (ep["episode_id"], action)
                    if terminated or truncated:
                        break
    env.close()


def test_scene_groups_share_scenes(sets):
    episodes = sets["base"]
    assert episodes[0]["scene"] == episodes[EPISODES_PER_SCENE - 1]["scene"]
    assert episodes[0]["scene"] != episodes[EPISODES_PER_SCENE]["scene"]
    targets = [e["target"]["id"] for e in episodes[:EPISODES_PER_SCENE]]
    assert len(set(targets)) == EPISODES_PER_SCENE


def test_stored_shortest_path_solves_every_episode_in_the_env(sets, env):
    for episodes in sets.values():
        for ep in episodes:
            assert 1 <= len(ep["shortest_path"]) <= ep["max_steps"]
            _, info = env.reset(options={"episode": ep})
            assert not info["is_success"]
            for i, a in enumerate(ep["shortest_path"]):
                _, _, terminated, _, info = env.step(a)
                assert info["last_action_success"]
                assert terminated == (i == len(ep["shortest_path"]) - 1), ep["episode_id"]


def test_instruction_styles(sets):
    for ep in sets["base"] + sets["long_horizon"] + sets["complex_instruction"]:
        assert CATEGORIES[ep["target"]["category"]].noun in ep["instruction"]
    for ep in sets["common_sense"]:
        assert CATEGORIES[ep["target"]["category"]].noun not in ep["instruction"].lower()
        assert any(use in ep["instruction"] for use in CATEGORIES[ep["target"]["category"]].uses)
    for ep in sets["visual_appearance"]:
        cat = CATEGORIES[ep["target"]["category"]]
        assert f"{ep['target']['colour']} {cat.shape} object" in ep["instruction"]
        assert cat.noun not in ep["instruction"]
    base_len = np.mean([len(e["instruction"]) for e in sets["base"]])
    assert np.mean([len(e["instruction"]) for e in sets["complex_instruction"]]) > 3 * base_len


def test_start_views(sets, env):
    for ep in sets["long_horizon"]:
        _, info = env.reset(options={"episode": ep})
        assert info["visibility"] == 0, ep["episode_id"]
        assert len(ep["shortest_path"]) >= 8
    for subset in ("base", "common_sense", "complex_instruction", "visual_appearance"):
        for ep in sets[subset]:
            _, info = env.reset(options={"episode": ep})
            assert info["visibility"] > 0, ep["episode_id"]


def test_jsonl_round_trip_and_errors(sets, tmp_path):
    path = save_episodes(sets["base"], tmp_path / "base.jsonl")
    assert load_episodes(path) == sets["base"]
    lines = path.read_text().splitlines()
    bad = json.loads(lines[1])
    bad["target"]["id"] = "nothing_9"
    path.write_text("\n".join([lines[0], json.dumps(bad)]) + "\n")
    with pytest.raises(EpisodeError, match=r"base\.jsonl:2: .*'nothing_9' is not an object"):
        load_episodes(path)
    with pytest.raises(FileNotFoundError, match="save_episodes"):
        load_episodes(tmp_path / "missing.jsonl")
    with pytest.raises(ValueError, match="unknown subset 'spatial'"):
        make_episode_set("spatial", 2)
