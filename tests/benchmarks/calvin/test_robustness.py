"""``--perturb`` on CALVIN: the clean control arm and the variants run in one invocation, the scripted expert
certifies each variant once (the cache holds it), and the policy sees the paraphrase table's entry or the
original instruction, never the variant's key."""

from __future__ import annotations

import json

import gymnasium as gym
import numpy as np

from benchmarks.calvin import main
from benchmarks.calvin.chain import run_chain
from benchmarks.core import RunDir
from envs.calvin import initial_env_state
from envs.calvin.factory import calvin_env_spec
from envs.calvin.instructions import instruction_for
from envs.calvin.perturbations import FAMILY, paraphrase_instruction, variant_instruction
from envs.calvin.sequences import get_sequences
from envs.perturbation import same_physics_axes
from policies.experts.calvin import ScriptedExpert


def run(tmp_path, *args):
    return main(["--output", str(tmp_path), "--no-progress", "--cameras", "none", *args])


def records_of(tmp_path, label):
    return [r["result"] for r in RunDir(tmp_path / "calvin" / label).merged_records()]


def test_perturbed_run_has_clean_arm_certified_variants_and_cached_certificates(tmp_path):
    args = ("--tasks", "open_drawer", "--num-sequences", "1", "--perturb", "paraphrase:2,block_positions:1")
    summary = run(tmp_path, *args)
    records = records_of(tmp_path, "expert")
    variants = [r for r in records if r["extras"].get("perturbation")]
    assert len(records) == 3 and len(variants) == 2
    assert all(r["extras"]["certified"] and not r["extras"]["certificate"]["cached"] for r in variants)
    assert {r["extras"]["episode_id"] for r in records} == {"chain-0004"}  # the clean key, for pairing
    table = summary.data["robustness"]
    assert set(table["axes"]) == {"paraphrase", "block_positions"} and table["clean"]["episodes"] == 1
    assert table["axes"]["paraphrase"]["2"]["certification_rate"] == 100.0
    assert summary.data["chains"] == 1  # the headline is the clean arm
    assert "| block_positions | 1 |" in summary.markdown
    cache = json.loads((tmp_path / "calvin" / "certificates.json").read_text())
    assert len(cache["certificates"]) == 2

    run(tmp_path, *args, "--run-name", "again")
    again = records_of(tmp_path, "again")
    assert all(r["extras"]["certificate"]["cached"] for r in again if r["extras"].get("perturbation"))


def test_the_policy_gets_the_paraphrase_and_the_clean_replay_key(tmp_path):
    log = tmp_path / "instructions.txt"
    common = ("--tasks", "open_drawer", "--num-sequences", "1", "--ep-len", "2", "--perturb", "paraphrase:3")
    kwargs = json.dumps({"path": str(log)})
    run(
        tmp_path,
        *common,
        "--policy",
        "tests.user_policy_example:InstructionRecorder",
        "--policy-kwargs",
        kwargs,
    )
    seen = set(log.read_text().splitlines())
    assert seen == {instruction_for("open_drawer"), paraphrase_instruction("open_drawer", 3)}

    actions = tmp_path / "actions.jsonl"
    actions.write_text(json.dumps({"key": "chain-0004/0", "actions": [[0, 0, 0, 0, 0, 0, 1]] * 2}) + "\n")
    run(tmp_path, *common, "--policy", "replay", "--replay-file", str(actions))
    replayed = [r["extras"]["subtasks"][0] for r in records_of(tmp_path, "replay")]
    assert [s["idle_steps"] for s in replayed] == [0, 0]  # the variant found the clean chain's actions


def _expert_trajectory(env, spec):
    """Every step's robot_obs and scene_obs while the scripted expert plays chain 1's first two subtasks on
    the certification env (camera-less), as the benchmark's certification runs them."""
    state, tasks = get_sequences(1000)[1]
    robot_obs, scene_obs = initial_env_state(state, "D")
    tasks = list(tasks[:2])
    expert = ScriptedExpert()
    expert.bind(env)
    states = []
    run_chain(
        env,
        expert,
        robot_obs,
        scene_obs,
        tasks,
        [variant_instruction(t, spec) for t in tasks],
        seed=3,
        on_step=lambda obs, caption: states.append(np.concatenate([obs["robot_obs"], obs["scene_obs"]])),
        perturbation=spec,
    )
    return np.array(states)


def test_same_physics_axes_leave_the_experts_state_trajectory_as_the_clean_one():
    """What lets a same_physics variant reuse the clean chain's certificate: the expert's every state is
    the clean chain's, bit for bit, at the strongest level (action noise, which is not declared, differs)."""
    env_id, kwargs = calvin_env_spec("builtin", cameras=())
    env = gym.make(env_id, **kwargs)
    clean = _expert_trajectory(env, None)
    declared = same_physics_axes(FAMILY)
    assert declared == {
        "camera",
        "lighting",
        "textures",
        "paraphrase",
        "image_noise",
        "image_blur",
        "image_jpeg",
    }
    for axis in sorted(declared):
        assert np.array_equal(_expert_trajectory(env, {"axis": axis, "level": 5, "seed": 11}), clean), axis
    noisy = _expert_trajectory(env, {"axis": "action_noise", "level": 1, "seed": 11})
    assert noisy.shape != clean.shape or not np.array_equal(noisy, clean)
    env.close()


def test_same_physics_variants_reuse_the_clean_chains_certificate(tmp_path):
    args = ("--tasks", "open_drawer", "--num-sequences", "1")
    run(tmp_path, *args, "--perturb", "paraphrase:2,camera:1,image_blur:4,block_positions:1")
    variants = [r for r in records_of(tmp_path, "expert") if r["extras"].get("perturbation")]
    certificates = {r["extras"]["perturbation"]["axis"]: r["extras"]["certificate"] for r in variants}
    assert certificates["block_positions"]["axis"] == "block_positions"  # its own expert run
    shared = {certificates[a]["key"] for a in ("paraphrase", "camera", "image_blur")}
    assert len(shared) == 1 and certificates["camera"]["axis"] is None  # one clean expert run for all three
    assert sum(not c["cached"] for c in certificates.values()) == 2
    cache = json.loads((tmp_path / "calvin" / "certificates.json").read_text())["certificates"]
    assert len(cache) == 2 and all(r["extras"]["certified"] for r in variants)
