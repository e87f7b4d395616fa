"""The closed-loop VLA policy: its chunk queue, env units, gripper conventions, registry entry."""

import numpy as np
import pytest

from policies.base import EpisodeContext
from policies.registry import build_policy, policy_config_class, registered_policies
from vla.model import VLAModel
from vla.policy import VLAPolicy, VLAPolicyConfig


@pytest.fixture(scope="module")
def calvin_model(tiny_vlm):
    return VLAModel.build(str(tiny_vlm("qwen2_5_vl")), chunk_size=10, seed=0).eval()


def _calvin_observation(seed):
    rng = np.random.default_rng(seed)
    return {
        "rgb_static": rng.integers(0, 256, (200, 200, 3), dtype=np.uint8),
        "rgb_gripper": rng.integers(0, 256, (84, 84, 3), dtype=np.uint8),
        "robot_obs": np.zeros(15),
        "scene_obs": np.zeros(24),
    }


def _spy(model):
    chunks, real = [], model.predict

    def predict(*args, **kwargs):
        chunks.append(real(*args, **kwargs)[0])
        return chunks[-1][None]

    model.predict = predict
    return chunks


def test_queue_executes_k_actions_per_query(calvin_model):
    policy = VLAPolicy(calvin_model, execute_steps=3)
    chunks = _spy(calvin_model)
    try:
        policy.reset(EpisodeContext(instruction="pull the handle to open the drawer", seed=0))
        actions = [policy.act(_calvin_observation(t)) for t in range(7)]
    finally:
        del calvin_model.predict
    assert policy.model_calls == 3 and len(chunks) == 3  # steps 0, 3, 6
    expected = np.concatenate([chunks[0][:3], chunks[1][:3], chunks[2][:1]])
    np.testing.assert_allclose(np.stack(actions), expected)
    assert all(
        a.shape == (7,) and a[6] in (-1.0, 1.0) and np.all(np.abs(a[:6]) <= 0.65 + 1e-6) for a in actions
    )
    assert policy.episode_stats() == {"model_calls": 3.0, "steps": 7.0}
    policy.reset(EpisodeContext(instruction="x", seed=1))  # a new episode starts with an empty queue
    assert not policy.queue and policy.model_calls == 0


def test_predict_action_chunk_is_the_models_unnormalised_chunk(calvin_model):
    policy = VLAPolicy(calvin_model)
    policy.reset(EpisodeContext(instruction="open the drawer", seed=0))
    chunk = policy.predict_action_chunk(_calvin_observation(0))
    assert chunk.shape == (10, 7)
    from vla.data import resize_image

    direct = calvin_model.predict(
        [[resize_image(_calvin_observation(0)["rgb_static"])]], ["open the drawer"]
    )[0]
    np.testing.assert_allclose(chunk, direct)
    flipped = VLAPolicy(calvin_model, gripper_open=-1.0)
    flipped.reset(EpisodeContext(instruction="open the drawer", seed=0))
    np.testing.assert_array_equal(flipped.predict_action_chunk(_calvin_observation(0))[:, 6], -chunk[:, 6])


def test_bad_settings_and_missing_images_are_errors(calvin_model):
    with pytest.raises(ValueError, match="execute_steps"):
        VLAPolicy(calvin_model, execute_steps=11)
    policy = VLAPolicy(calvin_model, image_keys=("agentview_image",))
    policy.reset(EpisodeContext(instruction="x", seed=0))
    with pytest.raises(KeyError, match="agentview_image"):
        policy.act(_calvin_observation(0))


def test_registry_builds_untrained_and_trained_policies(tiny_vlm, calvin_model, tmp_path):
    assert "vla" in registered_policies() and policy_config_class("vla") is VLAPolicyConfig
    calvin_model.save_pretrained(tmp_path / "ckpt")
    trained = build_policy("vla", checkpoint=str(tmp_path / "ckpt"), execute_steps=5)
    assert isinstance(trained, VLAPolicy) and trained.execute_steps == 5
    info = trained.describe()
    assert (
        info["trained"] is True
        and info["model_type"] == "qwen2_5_vl"
        and info["image_keys"] == ["rgb_static"]
    )
    libero = build_policy("vla", backbone=str(tiny_vlm("paligemma")), data_format="libero", chunk_size=4)
    assert libero.image_keys == ("agentview_image",) and libero.execute_steps == 4
    libero.reset(EpisodeContext(instruction="turn on the stove", seed=0))
    rng = np.random.default_rng(0)
    action = libero.act({"agentview_image": rng.integers(0, 256, (128, 128, 3), dtype=np.uint8)})
    assert action.shape == (7,) and action[6] in (-1.0, 1.0)
    with pytest.raises(ValueError, match="--checkpoint"):
        build_policy("vla")
