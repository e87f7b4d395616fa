"""``spatial-arena compare``: paired comparison of run folders written with the project's writers (issue 34)."""

import json

import pytest

from benchmarks.command import main as arena
from benchmarks.evidence.compare import compare_runs
from benchmarks.evidence.runs import load_run
from benchmarks.stats.paired import mcnemar_p
from policies.config_cli import InputError
from tests.run_folders import write_calvin_run, write_libero_run


def test_calvin_runs_pair_by_chain_and_leave_errored_chains_out(tmp_path, capsys):
    a = write_calvin_run(tmp_path / "a", [5, 2, 0, 3, 1, 4], policy="model-a")
    b = write_calvin_run(tmp_path / "b", [5, 3, 1, None, 2, 5, 4], policy="model-b")  # one more, one errored
    out = tmp_path / "cmp.json"
    assert arena(["compare", str(a), str(b), "--output", str(out)]) == 0
    result = json.loads(out.read_text())
    assert result["units"] == {"a": 6, "b": 7, "shared": 6, "paired": 5}
    assert result["left_out"] == {"chain-0003": "B: RuntimeError: boom"}
    avg = result["overall"]["avg. len"]
    # chains 0, 1, 2, 4, 5: A 5 2 0 1 4 (mean 2.4), B 5 3 1 2 5 (mean 3.2); differences 0 1 1 1 1
    assert (avg["n"], avg["a"], avg["b"]) == (5, 2.4, 3.2) and avg["difference"] == pytest.approx(0.8)
    assert avg["p_value"] == pytest.approx(2 / 16) and avg["test"] == "sign-flip-permutation"
    assert avg["ci"][0] <= 0.8 <= avg["ci"][1]
    # reaching position 3: A 1 0 0 0 1, B 1 1 0 0 1 -> one discordant pair for B
    third = result["groups"]["reached 3"]
    assert (third["a"], third["b"], third["p_value"]) == (0.4, 0.6, mcnemar_p(0, 1))
    text = capsys.readouterr().out
    assert (
        "| **avg. len** | 5 | 2.400 | 3.200 | 0.800 [" in text
        and "chain-0003 (B: RuntimeError: boom)" in text
    )


def test_libero_success_uses_exact_mcnemar_per_task(tmp_path):
    a = load_run(write_libero_run(tmp_path / "a", [True, False, False, False, True, False, False, False]))
    b = load_run(write_libero_run(tmp_path / "b", [True, True, True, True, True, True, False, True]))
    result = compare_runs(a, b)
    success = result["overall"]["success"]
    assert success["n"] == 8 and success["difference"] == pytest.approx(5 / 8)
    assert success["p_value"] == pytest.approx(mcnemar_p(0, 5)) == pytest.approx(1 / 16)
    assert set(result["groups"]) == {"task 0", "task 1"} and result["by"] == "task"
    assert result["groups"]["task 1"]["b"] == 1.0 and result["groups"]["task 1"]["a"] == 0.0


def test_refusals_are_one_line(tmp_path, capsys):
    a = write_calvin_run(tmp_path / "a", [5, 2])
    cases = [
        ([str(a), str(tmp_path / "missing")], "does not exist"),
        ([str(a), str(write_calvin_run(tmp_path / "seed", [5, 2], seed=1))], "--seed (0 vs 1)"),
        ([str(a), str(write_calvin_run(tmp_path / "ep", [5, 2], ep_len=100))], "--ep-len (360 vs 100)"),
        ([str(a), str(write_libero_run(tmp_path / "lib", [True]))], "benchmark ('calvin' vs 'libero')"),
        ([str(a), str(a), "--alpha", "1.5"], "--alpha"),
        ([str(a)], "two run folders"),
        ([str(a), str(tmp_path)], "no manifest.json"),
    ]
    for args, word in cases:
        assert arena(["compare", *args, "--output", str(tmp_path / "x.json")]) == 2, args
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and word in err, err
    other = write_libero_run(tmp_path / "l1", [True, False])
    shifted = tmp_path / "l2"
    write_libero_run(shifted, [True])
    (shifted / "records.jsonl").write_text(
        (shifted / "records.jsonl").read_text().replace('"key": "task0-trial0"', '"key": "task9-trial9"')
    )
    assert arena(["compare", str(other), str(shifted), "--output", str(tmp_path / "x.json")]) == 2
    assert "share no units" in capsys.readouterr().err


def test_a_larger_limit_and_another_policy_still_compare(tmp_path):
    a = load_run(write_calvin_run(tmp_path / "a", [1, 2], policy="x", limit=2))
    b = load_run(write_calvin_run(tmp_path / "b", [1, 2, 3], policy="y"))
    assert compare_runs(a, b)["units"]["paired"] == 2


def test_static_runs_pair_by_item_id_and_errored_items_are_left_out(tmp_path):
    from benchmarks.static.config import RunConfig
    from benchmarks.static.runner import run
    from tests.static_helpers import ScriptedBackend, write_spatialscore

    data = write_spatialscore(tmp_path / "data")

    def static_run(name, answer, fail_on=None):
        config = RunConfig(
            bench="spatialscore",
            data=data,
            output=tmp_path / "out",
            model=name,
            plot=False,
            allow_errors=True,
        )
        return run(config, backend=ScriptedBackend(answer, fail_on)).out_dir

    a = static_run("blank", lambda prompt: "I am not sure.")
    b = static_run("partly", lambda prompt: "A", fail_on=lambda call, text: "bowl next to" in text)
    result = compare_runs(load_run(a), load_run(b))
    assert result["benchmark"] == "static" and result["units"]["paired"] == 3
    assert list(result["left_out"].values()) == ["B: ConnectionError: scripted failure"]
    overall = next(iter(result["overall"].values()))
    assert overall["n"] == 3 and overall["a"] == 0.0 and overall["b"] >= overall["a"]
    assert result["by"] == "category" and all(row["n"] >= 1 for row in result["groups"].values())


def test_across_scene_pairs_one_checkpoint_in_two_scenes(tmp_path, capsys):
    a = write_calvin_run(tmp_path / "a", [1, 0, 1, 1], scene="A")
    d = write_calvin_run(tmp_path / "d", [0, 0, 1, 0], scene="D")
    with pytest.raises(InputError, match=r"--scene \('A' vs 'D'\)"):
        compare_runs(load_run(a), load_run(d))
    result = compare_runs(load_run(a), load_run(d), across=("scene",))
    assert result["across"] == {"scene": ["A", "D"]} and result["units"]["paired"] == 4
    first = result["groups"]["reached 1"]
    assert (first["a"], first["b"], first["p_value"]) == (0.75, 0.25, mcnemar_p(2, 0))
    out = tmp_path / "x.json"
    assert arena(["compare", str(a), str(d), "--across", "scene", "--output", str(out)]) == 0
    assert "(scene D vs A)" in capsys.readouterr().out
    assert arena(["compare", str(a), str(d), "--across", "sceen", "--output", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--across sceen" in err and "scene" in err


def test_cameras_choose_what_the_policy_sees_and_may_differ(tmp_path):
    a = load_run(write_calvin_run(tmp_path / "a", [1, 0], policy="random", cameras="none"))
    b = load_run(write_calvin_run(tmp_path / "b", [1, 1], policy="vla", cameras="auto"))
    assert compare_runs(a, b)["units"]["paired"] == 2
