"""Action normalisation: published bounds, data-derived bounds, round trips, gripper conventions, files."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from vla.normalization import ActionNormalizer


def test_published_bounds_hand_worked():
    norm = ActionNormalizer.fit(np.array([[0.0, 0.65, -0.65, 0.325, 1.0, -1.0, 1.0]]))
    # clip to [-0.65, 0.65], then 2 (a + 0.65) / 1.3 - 1
    np.testing.assert_allclose(
        norm.normalize_arm([0.0, 0.65, -0.65, 0.325, 1.0, -1.0]), [0, 1, -1, 0.5, 1, -1], atol=1e-6
    )
    np.testing.assert_allclose(
        norm.unnormalize_arm([0.5, -0.5, 0, 1, -1, 2.0]), [0.325, -0.325, 0, 0.65, -0.65, 0.65], atol=1e-6
    )
    assert norm.low == [-0.65] * 6 and norm.mode == "published"
    assert norm.clipped_fraction == [0, 0, 0, 0, 1, 1]  # 1.0 and -1.0 lie outside the bounds


def test_statistics_are_those_of_the_training_data():
    rng = np.random.default_rng(0)
    actions = np.concatenate([rng.normal(0, 0.1, (500, 6)), np.ones((500, 1))], 1)
    norm = ActionNormalizer.fit(actions.reshape(50, 10, 7), mode="quantile")
    stats = norm.statistics
    assert stats.count == 500
    np.testing.assert_allclose(stats.mean, actions[:, :6].mean(0))
    np.testing.assert_allclose(stats.std, actions[:, :6].std(0))
    np.testing.assert_allclose(norm.low, np.quantile(actions[:, :6], 0.01, axis=0))
    np.testing.assert_allclose(norm.high, np.quantile(actions[:, :6], 0.99, axis=0))
    np.testing.assert_allclose(norm.clipped_fraction, [0.02] * 6, atol=0.005)


def test_constant_dimension_gets_a_defined_interval():
    actions = np.zeros((20, 7))
    actions[:, 0] = np.linspace(-0.5, 0.5, 20)
    norm = ActionNormalizer.fit(actions, mode="quantile")
    assert all(h > lo for lo, h in zip(norm.low, norm.high))
    np.testing.assert_allclose(norm.unnormalize_arm(norm.normalize_arm(actions[:, :6]))[:, 1:], 0, atol=1e-6)


@settings(max_examples=60, deadline=None)
@given(
    arrays(np.float64, (8, 6), elements=st.floats(-0.65, 0.65)), st.sampled_from(["published", "quantile"])
)
def test_round_trip_inside_the_bounds(arm, mode):
    data = np.concatenate([arm, np.ones((8, 1))], 1)
    norm = ActionNormalizer.fit(data, mode=mode)
    inside = np.clip(arm, norm.low, norm.high)
    unit = norm.normalize_arm(inside)
    assert np.all(np.abs(unit) <= 1 + 1e-6)
    np.testing.assert_allclose(norm.unnormalize_arm(unit), inside, atol=1e-5)


@pytest.mark.parametrize(
    ("open_value", "raw", "target"), [(1.0, [1, -1, 1], [1, 0, 1]), (-1.0, [1, -1, 1], [0, 1, 0])]
)
def test_gripper_targets_follow_the_datasets_convention(open_value, raw, target):
    norm = ActionNormalizer.published(open_value)
    np.testing.assert_array_equal(norm.gripper_target(raw), target)
    np.testing.assert_array_equal(norm.gripper_value([0.9, 0.1]), [open_value, -open_value])
    np.testing.assert_array_equal(norm.gripper_value([0.9, 0.1], open_value=1.0), [1.0, -1.0])


def test_save_load_and_bad_input(tmp_path):
    norm = ActionNormalizer.fit(
        np.random.default_rng(0).uniform(-1, 1, (30, 7)), mode="quantile", gripper_open_value=-1
    )
    norm.save(tmp_path / "n.json")
    assert ActionNormalizer.load(tmp_path / "n.json") == norm
    with pytest.raises(ValueError, match="published"):
        ActionNormalizer.fit(np.zeros((3, 7)), mode="minmax")
    with pytest.raises(ValueError, match="empty"):
        ActionNormalizer.fit(np.zeros((0, 7)))
    with pytest.raises(ValueError, match="high > low"):
        ActionNormalizer(low=[0] * 6, high=[0] * 6)
