"""CALVIN's scenes A-D on the built-in table: furniture where the scene description says, each scene's
``scene_obs`` block order and sizes, feasible evaluation-style initial states, the expert in every scene.

Where ``$CALVIN_ENV`` names a calvin_env checkout, the scene descriptions are also checked against its
``conf/scene/calvin_scene_X.yaml`` and ``data/calvin_table_X/urdf`` (the facts they were read from).
"""

from __future__ import annotations

import os
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

from envs.calvin.assets import OFFICIAL_SCALING, official_layout
from envs.calvin.env import PlayTableEnv
from envs.calvin.scenes import SCENE_NAMES, SCENES, SceneSpec, scene_spec
from envs.calvin.sequences import NUM_SEQUENCES, get_sequences, initial_env_state, symbolic_initial_states

LINKS = {
    "slide_link": "slide",
    "drawer_link": "drawer",
    "button_link": "button",
    "switch_link": "switch",
    "led_link": "led",
    "light_link": "lightbulb",
    "plank_link": "plank",
}


@pytest.fixture(scope="module", params=SCENE_NAMES)
def scene_env(request):
    env = PlayTableEnv(cameras=(), scene=request.param)
    yield env
    env.close()


def test_each_scene_loads_with_its_furniture_where_its_description_says(scene_env):
    spec = scene_env.scene_spec
    scene_obs = initial_env_state(symbolic_initial_states()[0], spec.name)[1]
    scene_obs[:6] = 0.0  # every joint at 0: the link frames sit at the joint origins
    scene_env.reset(options={"scene_obs": scene_obs})
    for link, field in LINKS.items():
        pos, _ = scene_env.link_pose(link)
        np.testing.assert_allclose(pos, getattr(spec, field), atol=1e-9, err_msg=f"scene {spec.name} {link}")
    slide = scene_env.sim.scene.parts["slide"]
    assert (slide.lower, slide.upper) == pytest.approx((0.0, spec.slide_travel))


def test_scene_obs_lists_each_scenes_blocks_in_its_own_order_and_sizes(scene_env):
    spec = scene_env.scene_spec
    _, scene_obs = initial_env_state(symbolic_initial_states()[5], spec.name)
    obs, info = scene_env.reset(options={"scene_obs": scene_obs})
    p, blocks = scene_env.sim.p, scene_env.sim.scene.blocks
    assert list(blocks) == list(spec.block_colors)
    for color in spec.block_colors:
        pose = obs["scene_obs"][spec.block_slice(color)]
        np.testing.assert_allclose(pose[:3], info["snapshot"]["blocks"][color]["pos"], atol=1e-6)
        box = p.getCollisionShapeData(blocks[color], -1)[0][3]  # the box's full extents
        assert tuple(box) == pytest.approx(spec.block_size(color)), (spec.name, color)
    assert spec.scene_obs_labels()[6] == f"block_{spec.block_colors[0]}_x"


def test_slot_zero_is_a_different_block_per_scene_as_in_calvin():
    assert {s: SCENES[s].block_colors[0] for s in SCENE_NAMES} == {
        "A": "pink",
        "B": "red",
        "C": "blue",
        "D": "red",
    }
    assert SCENES["A"].block_size("blue") == (0.08, 0.04, 0.04) and SCENES["D"].block_size("blue")[0] == 0.04
    assert official_layout("C")["red"] == "blocks/block_red_big.urdf"
    assert list(official_layout("A"))[3:] == ["pink", "blue", "red"]


@pytest.mark.parametrize("scene", SCENE_NAMES)
def test_every_evaluation_spot_lies_inside_its_surface(scene):
    spec = scene_spec(scene)
    for surface, ((x0, y0), (x1, y1)) in spec.surfaces.items():
        for x, y, _ in spec.spots(surface):
            assert x0 < x < x1 and y0 < y < y1, (scene, surface, x, y)
    left, right = spec.spots("slider_left")[0][0], spec.spots("slider_right")[0][0]
    assert left < spec.slider_split < right  # each cabinet spot in its own compartment


def test_scene_d_spots_are_calvins():
    _, scene_obs = initial_env_state(symbolic_initial_states()[0], "D")
    assert np.array_equal(scene_obs, initial_env_state(symbolic_initial_states()[0])[1])
    assert SCENES["D"].spots("table")[1][:2] == (2.29995412e-01, -1.19995140e-01)


def _block_contacts(env: PlayTableEnv, scene_obs: np.ndarray) -> dict[str, set[tuple[str, str]]]:
    _, info = env.reset(options={"scene_obs": scene_obs})
    return {c: {tuple(x) for x in b["contacts"]} for c, b in info["snapshot"]["blocks"].items()}


def test_every_evaluation_initial_state_is_feasible_in_every_scene(scene_env):
    """All 1000 chains' start states: every block rests on the table top or the cabinet's plank alone."""
    spec = scene_env.scene_spec
    states = {repr(s): s for s, _ in get_sequences(NUM_SEQUENCES)}
    for state in states.values():
        contacts = _block_contacts(scene_env, initial_env_state(state, spec.name)[1])
        for color, pairs in contacts.items():
            where = "plank_link" if state[f"{color}_block"].startswith("slider") else "base_link"
            assert pairs == {("table", where)}, (spec.name, state, color, pairs)


def test_calvins_own_block_spots_land_on_the_button_in_scene_b():
    """The trap the per-scene spots avoid: CALVIN's scene-D positions put a block on B's button housing."""
    env = PlayTableEnv(cameras=(), scene="B")
    try:
        hits = 0
        for state in symbolic_initial_states():
            contacts = _block_contacts(env, initial_env_state(state, "D")[1][_reorder("D", "B")])
            hits += any(pair[1] == "button_link" for pairs in contacts.values() for pair in pairs)
        assert hits > 0
    finally:
        env.close()


def _reorder(src: str, dst: str) -> np.ndarray:
    """Index that turns a ``src``-scene scene_obs into ``dst``'s block order (same colours, same poses)."""
    a, b = SCENES[src], SCENES[dst]
    index = list(range(6))
    for color in b.block_colors:
        s = a.block_slice(color)
        index += list(range(s.start, s.stop))
    return np.array(index)


def test_an_unknown_scene_is_refused_in_one_line():
    with pytest.raises(ValueError, match="unknown CALVIN scene 'E': use one of A, B, C, D"):
        PlayTableEnv(cameras=(), scene="E")


# ------------------------------------------------------------------------------ against calvin_env's files


def _calvin_root() -> Path:
    return Path(os.environ["CALVIN_ENV"])


needs_calvin_env = pytest.mark.skipif(
    not os.environ.get("CALVIN_ENV"),
    reason="set CALVIN_ENV to a calvin_env checkout to check the scenes against it",
)


@needs_calvin_env
@pytest.mark.parametrize("scene", SCENE_NAMES)
def test_scene_descriptions_match_calvin_envs_files(scene):
    spec = scene_spec(scene)
    conf = (_calvin_root() / "conf" / "scene" / f"calvin_scene_{scene}.yaml").read_text()
    movable = conf[conf.index("movable_objects") :]
    found = re.findall(r"block_(\w+):\s*\n\s*file: blocks/block_\1_(\w+)\.urdf", movable)
    assert tuple(found) == spec.blocks
    for surface, rect in spec.surfaces.items():
        m = re.search(
            rf"{surface}: \[\[([-\d.]+), ([-\d.]+), [\d.]+\], \[([-\d.]+), ([-\d.]+), [\d.]+\]\]", conf
        )
        assert m is not None
        assert rect == ((float(m[1]), float(m[2])), (float(m[3]), float(m[4])))
    _check_joints(
        spec, _calvin_root() / "data" / f"calvin_table_{scene}" / "urdf" / f"calvin_table_{scene}.urdf"
    )


def _check_joints(spec: SceneSpec, urdf: Path) -> None:
    joints = {j.get("name"): j for j in ET.parse(urdf).getroot().iter("joint")}
    names = {
        "slide": "base__slide",
        "drawer": "base__drawer",
        "button": "base__button",
        "switch": "base__switch",
    }
    names |= {"led": "base__led", "lightbulb": "base__light", "plank": "base__plank"}
    for field, joint in names.items():
        xyz = [float(v) * OFFICIAL_SCALING for v in joints[joint].find("origin").get("xyz").split()]
        np.testing.assert_allclose(getattr(spec, field), xyz, atol=3e-4, err_msg=f"{spec.name} {field}")
    upper = float(joints["base__slide"].find("limit").get("upper")) * OFFICIAL_SCALING
    assert spec.slide_travel == pytest.approx(upper)


@pytest.mark.slow
@pytest.mark.parametrize("scene", SCENE_NAMES)
def test_the_expert_completes_an_evaluation_chain_in_every_scene(scene):
    from benchmarks.calvin.chain import run_chain
    from envs.calvin.instructions import instruction_for
    from policies.experts.calvin import ScriptedExpert

    state, tasks = get_sequences(NUM_SEQUENCES)[0]
    env = PlayTableEnv(cameras=(), scene=scene)
    try:
        policy = ScriptedExpert()
        policy.bind(env)
        robot_obs, scene_obs = initial_env_state(state, scene)
        record = run_chain(
            env, policy, robot_obs, scene_obs, list(tasks), [instruction_for(t) for t in tasks]
        )
        assert record["extras"]["num_completed"] == 5, record["extras"]
    finally:
        env.close()
