"""bench/sequential_stopping.py: the simulation beside the real runs keeps the level and finds a real gap."""

from bench import sequential_stopping as bench


def test_simulated_error_rates_and_units():
    alike = bench.simulate(0.1, 0.1, 200)  # discordant pairs split evenly: the null holds
    assert alike["sequential_decided"] <= 0.05 and alike["fixed_n_decided"] <= 0.05
    gap = bench.simulate(0.2, 0.0, 200)  # the model loses one pair in five and never wins one
    assert gap["sequential_decided"] == 1.0 and gap["fixed_n_decided"] == 1.0
    assert gap["sequential_mean_units"] < 100
