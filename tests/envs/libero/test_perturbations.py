"""LIBERO's robustness axes: the pure edits of a scene description, then every axis on the real simulator
(one env, reused): the same spec gives the same bytes, each axis changes what it says and nothing else,
and nothing of the spec reaches observations, ``info`` or the instruction."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from envs.libero import perturbations as P
from envs.perturbation import LEVELS, PerturbationError, PerturbationSpec

SIZE = 64


def _scene() -> dict:
    """A small table scene: two objects on the table (a bowl on the plate), one in a drawer, a fixture."""

    def obj(name, x, y, rests_on, half=0.04):
        return {
            "name": name,
            "qposadr": 0,
            "pos": [x, y, 0.9],
            "lo": [x - half, y - half],
            "hi": [x + half, y + half],
            "rests_on": rests_on,
        }

    return {
        "instruction": "put the bowl on the plate",
        "camera": {
            "pos": [0.66, 0.0, 1.61],
            "quat": [0.638, 0.305, 0.305, 0.638],
            "fovy": 45.0,
            "target": [-0.2, 0, 0.9],
        },
        "lights": [{"dir": [0.0, -0.15, -0.99], "diffuse": [0.8, 0.8, 0.8]}],
        "headlight": {"diffuse": [0.4, 0.4, 0.4], "ambient": [0.1, 0.1, 0.1]},
        "materials": [{"id": 0, "rgba": [1.0, 1.0, 1.0, 1.0]}],
        "objects": [
            obj("plate_1", 0.0, 0.2, "surface", 0.08),
            obj("bowl_1", 0.0, 0.2, "plate_1"),
            obj("cookies_1", -0.2, -0.05, "surface"),
            obj("bowl_2", 0.3, -0.3, "fixed"),
        ],
        "bounds": [[-0.4, -0.25], [0.25, 0.45]],
        "obstacles": [[[0.2, -0.4], [0.4, -0.2]]],
        "robot": {
            "q": [0.0, -0.17, 0.0, -2.46, 0.0, 2.24, 0.8],
            "low": [-2.9, -1.76, -2.9, -3.07, -2.9, -0.02, -2.9],
            "high": [2.9, 1.76, 2.9, -0.07, 2.9, 3.75, 2.9],
            "qposadr": [0, 1, 2, 3, 4, 5, 6],
        },
        "categories": ["bowl", "cookies", "plate", "wooden_cabinet"],
        "surface_z": 0.86,
        "view": [[-0.45, -0.3], [0.3, -0.3], [0.3, 0.5], [-0.45, 0.5]],
        "keepout": [[[-0.4, 0.3], [-0.3, 0.45]]],
        "distractors": [],
        "pool": [
            {"category": c, "quat": [1.0, 0.0, 0.0, 0.0], "radius": 0.03 + 0.005 * k, "bottom": 0.04}
            for k, c in enumerate(
                (
                    "butter",
                    "ketchup",
                    "milk",
                    "moka_pot",
                    "popcorn",
                    "porcelain_mug",
                    "white_bowl",
                    "yellow_cookies",
                    "yellow_plate",
                )
            )
        ],
    }


def _changed(before: dict, after: dict) -> set[str]:
    return {k for k in before if before[k] != after[k]}


SCENE_FIELDS = {
    "camera": {"camera"},
    "lighting": {"lights", "headlight"},
    "textures": {"materials"},
    "object_position": {"objects"},
    "robot_init": {"robot"},
    "distractors": {"distractors"},
    "paraphrase": {"instruction"},
}


@pytest.mark.parametrize("axis", list(SCENE_FIELDS))
@pytest.mark.parametrize("level", LEVELS)
def test_each_scene_axis_edits_its_fields_only_and_is_deterministic(axis, level):
    scene, spec = _scene(), PerturbationSpec(axis, level, 3)
    edited = P.AXES[axis].apply(scene, spec)
    assert scene == _scene()  # (a copy is edited)
    assert _changed(scene, edited) == SCENE_FIELDS[axis]
    assert P.AXES[axis].apply(_scene(), spec) == edited
    assert P.AXES[axis].apply(_scene(), PerturbationSpec(axis, level, 4)) != edited or axis == "paraphrase"


def test_the_camera_keeps_looking_at_its_point_and_changes_more_with_the_level():
    moved = []
    for level in LEVELS:
        cam = P.camera(_scene(), PerturbationSpec("camera", level, 0))["camera"]
        w, x, y, z = cam["quat"]
        from scipy.spatial.transform import Rotation

        forward = -Rotation.from_quat([x, y, z, w]).apply([0.0, 0.0, 1.0])
        to_target = np.asarray(cam["target"]) - np.asarray(cam["pos"])
        assert np.allclose(np.cross(forward, to_target / np.linalg.norm(to_target)), 0, atol=0.02)
        moved.append(np.linalg.norm(np.asarray(cam["pos"]) - _scene()["camera"]["pos"]))
    assert moved == sorted(moved)


@pytest.mark.parametrize("level", LEVELS)
def test_objects_move_feasibly_with_what_rests_on_them(level):
    scene = _scene()
    for seed in range(5):
        after = P.object_position(scene, PerturbationSpec("object_position", level, seed))
        by_name = {o["name"]: o for o in after["objects"]}
        before = {o["name"]: o for o in scene["objects"]}
        d_plate = np.subtract(by_name["plate_1"]["pos"], before["plate_1"]["pos"])
        assert np.allclose(np.subtract(by_name["bowl_1"]["pos"], before["bowl_1"]["pos"]), d_plate)
        assert by_name["bowl_2"] == before["bowl_2"]  # in a fixture: stays
        assert (
            0 < np.linalg.norm(d_plate[:2]) <= P._OBJECT_SHIFT[level - 1] + P._OBJECT_JITTER[level - 1] + 1e-6
        )
        low, high = np.asarray(scene["bounds"])
        for name in ("plate_1", "cookies_1"):
            assert np.all(np.asarray(by_name[name]["lo"]) >= low) and np.all(
                np.asarray(by_name[name]["hi"]) <= high
            )
        # left/right and front/back order kept
        gap0 = np.subtract(before["plate_1"]["pos"][:2], before["cookies_1"]["pos"][:2])
        gap1 = np.subtract(by_name["plate_1"]["pos"][:2], by_name["cookies_1"]["pos"][:2])
        assert np.all(np.sign(gap0) == np.sign(gap1))


@pytest.mark.parametrize("level", LEVELS)
def test_distractors_stand_clear_on_the_table_and_are_never_confusable(level):
    scene = _scene()
    objects = [np.asarray([o["lo"], o["hi"]]) for o in scene["objects"]]
    others = [np.asarray(b) for b in (*scene["obstacles"], *scene["keepout"])]
    low, high = np.asarray(scene["bounds"])
    for seed in range(5):
        placed = P.distractors(scene, PerturbationSpec("distractors", level, seed))["distractors"]
        assert len(placed) == P._DISTRACTORS[level - 1]
        names = [p["category"] for p in placed]
        assert len(set(names)) == len(names)
        # "bowl", "plate" and "cookies" name scene objects: no bowl, plate or cookies of another colour
        assert not {"white_bowl", "yellow_plate", "yellow_cookies"} & set(names)
        for k, p in enumerate(placed):
            xy, r = np.asarray(p["pos"][:2]), p["radius"]
            assert np.all(xy - r >= low - 1e-9) and np.all(xy + r <= high + 1e-9)
            assert P._in_polygon(xy, np.asarray(scene["view"]))
            gaps = [P._box_gap(xy, box) - r for box in objects]
            assert min(gaps) >= P._DISTRACTOR_GAP[level - 1] - 1e-9
            assert all(P._box_gap(xy, box) >= r + P._GAP - 1e-9 for box in others)
            for q in placed[k + 1 :]:
                assert np.hypot(*(xy - q["pos"][:2])) >= r + q["radius"] + P._GAP - 1e-9
            assert p["pos"][2] == pytest.approx(scene["surface_z"] + 0.04 + P._DROP)
            assert np.linalg.norm(p["quat"]) == pytest.approx(1.0, abs=1e-5)


def test_distractors_come_nearer_the_objects_with_the_level():
    scene = _scene()
    objects = [np.asarray([o["lo"], o["hi"]]) for o in scene["objects"]]

    def nearest(level, seed):
        placed = P.distractors(scene, PerturbationSpec("distractors", level, seed))["distractors"]
        return [min(P._box_gap(np.asarray(p["pos"][:2]), b) - p["radius"] for b in objects) for p in placed]

    far = [g for seed in range(5) for g in nearest(1, seed)]
    near = [g for seed in range(5) for g in nearest(5, seed)]
    assert min(far) >= P._DISTRACTOR_GAP[0] - 1e-9 and max(near) <= P._DISTRACTOR_REACH[4] + 1e-9
    assert np.mean(near) < np.mean(far)


def test_the_distractor_pool_holds_libero_pro_variants_with_their_assets():
    pytest.importorskip("libero", reason="the libero extra is not installed")
    from envs.libero import distractors
    from envs.libero.bootstrap import assets_dir

    distractors.register_pool()
    from libero.libero.envs.base_object import OBJECTS_DICT

    for category in distractors.POOL:
        path = OBJECTS_DICT[category](name="probe").file
        assert Path(path).is_file() and Path(path).is_relative_to(assets_dir()), category
    assert {"yellow_moka_pot", "white_porcelain_mug", "blue_ketchup"} <= set(distractors.POOL)


def test_a_distractor_bddl_adds_objects_and_changes_nothing_else():
    from envs.libero import distractors

    text = (
        "(define (problem P)\n  (:objects\n    plate_1 - plate\n  )\n  (:init\n    (On plate_1 r)\n  )\n)\n"
    )
    edited = distractors.bddl_with(text, ["ketchup", "yellow_moka_pot"])
    assert edited == text.replace(
        "  (:objects\n", "  (:objects\n    ketchup_1 - ketchup\n    yellow_moka_pot_1 - yellow_moka_pot\n"
    )
    assert distractors.bddl_with(text, ["ketchup", "yellow_moka_pot"]) == edited
    with pytest.raises(ValueError, match="objects"):
        distractors.bddl_with("(define (problem P))", ["ketchup"])


def test_robot_start_stays_inside_the_joint_limits():
    scene = _scene()
    for level in LEVELS:
        q = np.asarray(P.robot_init(scene, PerturbationSpec("robot_init", level, 1))["robot"]["q"])
        assert np.all(q > np.asarray(scene["robot"]["low"])) and np.all(
            q < np.asarray(scene["robot"]["high"])
        )
        assert 0 < np.abs(q - scene["robot"]["q"]).max() <= P._JOINT_OFFSET[level - 1] + 1e-9


def test_the_paraphrase_table_covers_the_40_main_suite_instructions_with_five_wordings():
    table = P.paraphrase_table()
    assert len(table) == 40
    for original, wordings in table.items():
        assert len(wordings) == 5 and len(set(wordings)) == 5 and original not in wordings
        for text in wordings:
            assert text == text.strip() and text[0].islower()
            assert not any(word in text for word in ("level", "axis", "paraphrase", "perturb", ".json"))
    assert P.paraphrase_instruction("an instruction the table lacks", 3) == "an instruction the table lacks"


def test_the_paraphrase_table_names_the_instructions_libero_ships():
    pytest.importorskip("libero", reason="the libero extra is not installed")
    from envs.libero.tasks import load_task

    shipped = {
        load_task(s, t).instruction
        for s in ("libero_spatial", "libero_object", "libero_goal", "libero_10")
        for t in range(10)
    }
    assert shipped == set(P.paraphrase_table())


# --------------------------------------------------------------------------------- on the simulator

CHANGED_OBS = {
    "camera": {"agentview_image"},
    "lighting": {"agentview_image", "eye_in_hand_image"},
    "textures": {"agentview_image", "eye_in_hand_image"},
    "object_position": {"agentview_image", "eye_in_hand_image"},
    "robot_init": {"agentview_image", "eye_in_hand_image", "joint_pos", "eef_pos", "eef_quat", "state"},
    "distractors": {"agentview_image", "eye_in_hand_image"},
    "paraphrase": {"instruction"},
    "image_noise": {"agentview_image", "eye_in_hand_image"},
    "image_blur": {"agentview_image", "eye_in_hand_image"},
    "image_jpeg": {"agentview_image", "eye_in_hand_image"},
    "action_noise": set(),
}


@pytest.fixture(scope="module")
def env():
    pytest.importorskip("libero", reason="the libero extra is not installed")
    from envs.libero import make_libero_env

    made = make_libero_env("libero_spatial", 0, image_size=SIZE)
    yield made
    made.close()


def _reset(env, spec):
    """Observation, info and the scene as read back, after a reset without settle steps (so that
    nothing moves that the axis did not move)."""
    from envs.libero.scene_edit import describe_scene

    options = {"init_state_index": 0, "num_steps_wait": 0}
    if spec is not None:
        options["perturbation"] = spec
    obs, info = env.reset(seed=5, options=options)
    scene = describe_scene(env.raw_env, env.instruction)
    scene["objects"] = [o["pos"] for o in scene["objects"]]
    scene["robot"] = scene["robot"]["q"]
    return (
        obs,
        info,
        {
            k: scene[k]
            for k in ("instruction", "camera", "lights", "headlight", "materials", "objects", "robot")
        },
    )


def _differing(a: dict, b: dict) -> set[str]:
    return {k for k in a if not np.array_equal(a[k], b[k])}


def test_every_axis_changes_what_it_says_only_the_same_bytes_every_time_and_leaks_nothing(env):
    clean_obs, clean_info, clean_scene = _reset(env, None)
    first = {}
    for axis in P.AXES:
        spec = PerturbationSpec(axis, 3, 11)
        obs, info, scene = _reset(env, spec.to_json())
        first[axis] = obs
        assert _differing(clean_obs, obs) == CHANGED_OBS[axis], axis
        changed = {k for k in clean_scene if clean_scene[k] != scene[k]}
        if axis != "distractors":  # (a scene of its own: its test below)
            assert changed == SCENE_FIELDS.get(axis, set()), axis
        assert obs.keys() == clean_obs.keys() and info == clean_info, axis  # nothing added, info as clean
        text = " ".join([obs["instruction"], repr(info)])
        assert axis not in text and "level" not in text and "~" not in text, axis
        assert obs["instruction"] in (
            clean_obs["instruction"],
            P.paraphrase_instruction(clean_obs["instruction"], 3),
        )
    for axis in P.AXES:  # again, after every other variant: the same bytes
        obs, _, _ = _reset(env, PerturbationSpec(axis, 3, 11))
        assert _differing(first[axis], obs) == set(), axis
    assert _differing(clean_obs, _reset(env, None)[0]) == set()  # the clean scene comes back


def _joints(raw_env) -> dict:
    model, data = raw_env.env.sim.model._model, raw_env.env.sim.data._data
    return {
        model.joint(j).name: data.qpos[
            model.jnt_qposadr[j] : model.jnt_qposadr[j] + (7 if model.jnt_type[j] == 0 else 1)
        ].copy()
        for j in range(model.njnt)
    }


def test_distractors_add_free_objects_touching_nothing_and_leave_the_scene_as_it_was(env):
    from envs.libero import distractors

    _reset(env, None)
    clean_raw, clean = env.raw_env, _joints(env.raw_env)
    cm = clean_raw.env.sim.model._model
    bodies = {cm.body(b).name: (cm.body_pos[b].copy(), cm.body_quat[b].copy()) for b in range(cm.nbody)}
    obs, _, _ = _reset(env, PerturbationSpec("distractors", 3, 11))
    variant = env.raw_env
    assert variant is not clean_raw
    joints = _joints(variant)
    assert all(np.array_equal(joints[name], value) for name, value in clean.items())  # objects, arm, drawers
    added = sorted(set(joints) - set(clean))
    assert len(added) == distractors.KINDS_PER_TASK and all(name.endswith("_1_joint0") for name in added)
    placed = [n for n in added if joints[n][0] < 5]  # on the table; the others parked out of sight
    assert len(placed) == 3 and all(joints[n][0] > 5 for n in added if n not in placed)
    vm, vd = variant.env.sim.model._model, variant.env.sim.data._data
    for name, (pos, quat) in bodies.items():  # fixtures where the clean reset put them
        assert np.array_equal(vm.body(name).pos, pos) and np.array_equal(vm.body(name).quat, quat), name
    extra = {vm.jnt_bodyid[vm.joint(n).id] for n in added}
    extra |= {b for b in range(vm.nbody) if vm.body_rootid[b] in extra}
    for g1, g2 in zip(vd.contact.geom1[: vd.ncon], vd.contact.geom2[: vd.ncon]):
        assert not (vm.geom_bodyid[g1] in extra or vm.geom_bodyid[g2] in extra)  # (3 mm above the table)
    words = obs["instruction"].lower()
    assert not any(n.removesuffix("_1_joint0").replace("_", " ") in words for n in added)
    text, original = env._variant_bddl.read_text(), env.task.bddl_file.read_text()
    new_lines = [line for line in text.splitlines() if line not in original.splitlines()]
    assert sorted(new_lines) == sorted(
        f"    {n.removesuffix('_joint0')} - {n.removesuffix('_1_joint0')}" for n in added
    )
    assert text == distractors.bddl_with(original, [line.split()[-1] for line in new_lines])
    for _ in range(5):  # the placed ones settle onto the table; the parked ones stay put
        env.step(np.zeros(7, np.float32))
    after = _joints(variant)
    assert all(np.abs(after[n][:3] - joints[n][:3]).max() < 1e-5 for n in added if n not in placed)
    assert all(np.abs(after[n][:2] - joints[n][:2]).max() < 0.01 for n in placed)


def test_action_noise_changes_the_actions_not_the_start(env):
    action = np.zeros(7, np.float32)
    _reset(env, None)
    clean = env.step(action)[0]
    _reset(env, PerturbationSpec("action_noise", 3, 0))
    noisy = env.step(action)[0]
    assert not np.array_equal(clean["joint_pos"], noisy["joint_pos"])


@pytest.mark.parametrize(
    ("spec", "words"),
    [
        ({"axis": "weather", "level": 1}, "an unknown axis"),
        ({"axis": "camera", "level": 6}, "1-5"),
        ({"axis": "distractors", "level": 0}, "1-5"),
        ({"axis": "initial_position", "level": 1}, "an axis the family lacks"),
    ],
)
def test_bad_specs_at_reset_get_one_line_errors(env, spec, words):
    import envs.navigation.perturbations  # noqa: F401  (registers EB navigation's axes)

    with pytest.raises(PerturbationError, match=words) as error:
        env.reset(seed=0, options={"init_state_index": 0, "perturbation": spec})
    assert "\n" not in str(error.value)


def test_the_robustness_guide_lists_every_axis_with_its_levels():
    from pathlib import Path

    page = (Path(__file__).parents[3] / "docs" / "guide" / "robustness.md").read_text()
    for axis in P.AXES.values():
        assert f"| `{axis.name}` | {axis.changes} | " + " | ".join(axis.levels) + " |" in page, axis.name
