"""``spatial-arena power`` from given numbers and from pilot runs (issue 34)."""

import json

import numpy as np

from benchmarks.command import main as arena
from benchmarks.stats.power import paired_mean, paired_rates, two_means, two_rates
from tests.run_folders import write_calvin_run, write_libero_run


def last_json(capsys):
    return json.loads(capsys.readouterr().out.strip().splitlines()[-1])


def test_from_numbers(capsys):
    assert arena(["power", "--difference", "0.1", "--rate", "0.5"]) == 0
    assert last_json(capsys)["units_per_run"] == 388  # tests/benchmarks/stats/test_power.py by hand
    assert arena(["power", "--difference", "0.5", "--sd", "1", "--paired"]) == 0
    assert last_json(capsys)["units"] == 32
    assert arena(["power", "--difference", "0.5", "--sd", "1"]) == 0
    assert last_json(capsys)["units_per_run"] == 63


def test_from_pilot_runs(tmp_path, capsys):
    libero = write_libero_run(tmp_path / "lib", [True, False, True, False])
    assert arena(["power", "--difference", "0.1", str(libero)]) == 0
    assert last_json(capsys) | {} == {
        "design": "two independent runs, success rate",
        "rate": 0.5,
        "pilot_units": 4,
        "units_per_run": two_rates(0.5, 0.1),
        "difference": 0.1,
        "alpha": 0.05,
        "power": 0.8,
    }
    other = write_libero_run(tmp_path / "lib2", [True, True, False, False])
    assert arena(["power", "--difference", "0.1", str(libero), str(other)]) == 0
    assert last_json(capsys)["units"] == paired_rates(0.5, 0.1)  # 2 of 4 units disagree
    a = write_calvin_run(tmp_path / "a", [5, 2, 0, 3])
    b = write_calvin_run(tmp_path / "b", [5, 3, 2, 3, None])
    assert arena(["power", "--difference", "0.5", str(a)]) == 0
    assert last_json(capsys)["units_per_run"] == two_means(float(np.std([5, 2, 0, 3], ddof=1)), 0.5)
    assert arena(["power", "--difference", "0.5", str(a), str(b)]) == 0
    assert last_json(capsys)["units"] == paired_mean(float(np.std([0, 1, 2, 0], ddof=1)), 0.5)


def test_bad_input_is_one_line(tmp_path, capsys):
    pilot = write_libero_run(tmp_path / "lib", [True, False])
    flat = write_libero_run(tmp_path / "flat", [True, True])
    for args, word in [
        (["--difference", "0.1", "--rate", "0.5", "--alpha", "2"], "alpha"),
        (["--difference", "0.1", "--rate", "0.5", "--power", "1"], "power"),
        (["--difference", "0", "--rate", "0.5"], "difference"),
        (["--difference", "0.1"], "--rate"),
        (["--difference", "0.1", str(tmp_path / "missing")], "does not exist"),
        (["--difference", "0.1", str(pilot), str(pilot), str(pilot)], "two runs"),
        (["--rate", "0.5"], "--difference"),
        (["--difference", "0.1", str(flat), str(flat)], "discordant"),
    ]:
        assert arena(["power", *args]) == 2, args
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and word in err, err
