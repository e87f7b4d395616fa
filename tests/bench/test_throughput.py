"""``bench/throughput.py --autotune``: the shard count and batch picked from synthetic measurements, in the
three regimes (the model, the envs or the memory is the limit), with the numbers it rests on in its reason."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench.throughput import choose_point


def demand(rates):
    return [{"shards": n, "obs_per_s": r} for n, r in rates.items()]


def supply(rates, memory=None):
    return [{"batch": b, "decisions_per_s": r, "memory_gib": (memory or {}).get(b)} for b, r in rates.items()]


ENVS = demand({1: 30.0, 2: 60.0, 4: 110.0, 8: 200.0, 16: 380.0})


def test_model_bound_stops_adding_shards_once_the_model_is_saturated():
    """The model answers about 25/s whatever the batch: 2 shards already ask more than that."""
    model = supply({1: 20.0, 2: 24.0, 4: 25.0, 8: 25.0})
    choice = choose_point(ENVS, model, cpus=16)
    assert (choice.shards, choice.max_batch, choice.bound) == (2, 2, "model")
    assert choice.rate == 24.0
    first, second = choice.why.splitlines()
    assert "model-bound" in first and "demand 60.0 obs/s at 2 shard(s)" in first
    assert "supply 24.0 decisions/s at batch 2" in first and "4 shard(s) 25.0/s" in second


def test_env_bound_takes_every_core_and_a_batch_per_shard():
    """A fast model: every shard's observation is answered; shards stop at the CPU count."""
    model = supply({1: 100.0, 2: 190.0, 4: 350.0, 8: 600.0, 16: 900.0})
    choice = choose_point(ENVS, model, cpus=8)
    assert (choice.shards, choice.max_batch, choice.bound, choice.rate) == (8, 8, "env", 200.0)
    assert "env-bound" in choice.why and "shards <= 8 CPU cores (1,2,4,8,16 measured)" in choice.why
    assert choose_point(ENVS, model, cpus=64).shards == 16


def test_memory_bound_caps_the_batch_at_what_fits():
    """Supply keeps growing with the batch, but batch 8 needs 9 GiB of a 6 GiB budget: batch 4, 4 shards."""
    model = supply({1: 20.0, 2: 38.0, 4: 70.0, 8: 120.0}, memory={1: 2.0, 2: 3.0, 4: 5.0, 8: 9.0})
    unbounded = choose_point(ENVS, model, cpus=16)
    assert (unbounded.shards, unbounded.max_batch, unbounded.bound) == (8, 8, "model")
    choice = choose_point(ENVS, model, cpus=16, memory_budget_gib=6.0)
    assert (choice.shards, choice.max_batch, choice.bound, choice.rate) == (4, 4, "memory", 70.0)
    assert "memory-bound" in choice.why and "memory budget 6.0 GiB rules out batch 8 9.0 GiB" in choice.why


def test_a_batch_of_one_that_does_not_fit_is_a_one_line_error():
    model = supply({1: 20.0, 2: 38.0}, memory={1: 8.0, 2: 9.0})
    with pytest.raises(ValueError, match=r"even batch 1 needs 8.0 GiB, more than the 4.0 GiB budget") as err:
        choose_point(ENVS, model, cpus=16, memory_budget_gib=4.0)
    assert "\n" not in str(err.value)
