"""``--serve batched`` on every closed-loop benchmark (``benchmarks/core/serving.py``): one server process
holds the model (an MLLM behind the project's OpenAI-compatible server, a VLA behind its socket server) and
the workers' policies talk to it. The records equal the sequential run's; a server that dies mid-run gives
error records, one line and exit status 1. (A model that does not load: a row of ``tests/bad_inputs.py``.)"""

import json

import pytest

from benchmarks.core import RunDir, comparable
from policies.serve.process import BackendServerProcess


@pytest.fixture(scope="module")
def model(tiny_vlm):
    return str(tiny_vlm("qwen2_5_vl"))


def records(path):
    return [comparable(r) for r in RunDir(path).merged_records()]


def nav(tmp_path, model, name, *args):
    from benchmarks.embodied import main

    return main(
        [
            *("nav", "--no-progress", "--output", str(tmp_path), "--run-name", name, "--image-size", "64"),
            *("--episodes", "2", "--subset", "base", "--env-kwargs", '{"max_steps": 3}'),
            *("--policy", "mllm", "--model", model, "--max-new-tokens", "6", *args),
        ]
    )


def test_eb_navigation_workers_on_one_mllm_server_give_the_sequential_records(tmp_path, model):
    """Two worker processes share one server (batches of up to 2) vs one worker with its own model."""
    nav(tmp_path, model, "alone", "--no-cache")
    nav(
        tmp_path, model, "served", "--no-cache", "--workers", "2", "--serve", "batched", "--max-wait-ms", "50"
    )
    alone, served = (records(tmp_path / "embodied-nav" / name) for name in ("alone", "served"))
    assert len(served) == 2 and all(r["status"] == "ok" for r in served)
    assert served == alone
    assert all(r["result"]["policy_stats"]["model_calls"] == 3 for r in served)
    # the server's batch statistics, in the run's summary: its 6 answers in batches of 1 or 2
    serving = json.loads((tmp_path / "embodied-nav" / "served" / "summary.json").read_text())["serving"]
    assert serving["requests"] == 6 and serving["max_batch"] == 2
    assert sum(int(k) * v for k, v in serving["batch_sizes"].items()) == 6


def calvin_calls(path):
    """Per chain, the model calls and cache hits of its subtasks."""
    return [
        [
            (s["policy_stats"]["model_calls"], s["policy_stats"]["cache_hits"])
            for s in r["result"]["extras"]["subtasks"]
        ]
        for r in RunDir(path).merged_records()
    ]


def test_calvin_mllm_served_equals_its_own_model_and_shares_its_cache(tmp_path, model):
    from benchmarks.calvin import main

    common = ["--output", str(tmp_path), "--no-progress", "--num-sequences", "2", "--ep-len", "3"]
    common += ["--policy", "mllm", "--model", model, "--max-new-tokens", "6"]
    main([*common, "--run-name", "alone", "--cache-path", str(tmp_path / "alone.sqlite")])
    main(
        [*common, "--run-name", "served", "--serve", "batched", "--cache-path", str(tmp_path / "new.sqlite")]
    )
    alone, served = (records(tmp_path / "calvin" / name) for name in ("alone", "served"))
    assert len(served) == 2 and all(r["status"] == "ok" for r in served)
    assert served == alone
    # answers are cached under the served model's identity (its weights), not the server's address: a served
    # run finds every answer the model gave in the worker (the first runs repeat only a prompt of their own)
    main(
        [*common, "--run-name", "again", "--serve", "batched", "--cache-path", str(tmp_path / "alone.sqlite")]
    )
    assert all(
        hits < calls for chain in calvin_calls(tmp_path / "calvin" / "served") for calls, hits in chain
    )
    assert calvin_calls(tmp_path / "calvin" / "again") == [[(3, 3)], [(3, 3)]]


def test_a_model_server_that_dies_mid_run_gives_error_records_and_exit_1(
    tmp_path, model, monkeypatch, capsys
):
    start = BackendServerProcess.start

    def start_then_die(self, *args, **kwargs):
        served = start(self, *args, **kwargs)
        self.process.kill()
        self.process.join(10)
        return served

    monkeypatch.setattr(BackendServerProcess, "start", start_then_die)
    with pytest.raises(SystemExit) as exit_:
        nav(tmp_path, model, "dead", "--no-cache", "--serve", "batched")
    assert exit_.value.code == 1
    err = [line for line in capsys.readouterr().err.splitlines() if "died mid-run" in line]
    assert len(err) == 1 and "exit code -9" in err[0]
    run = tmp_path / "embodied-nav" / "dead"
    assert json.loads((run / "summary.json").read_text())["run"] == {
        "complete": False,
        "units_total": 2,
        "units_completed": 0,
        "units_errored": 2,
        "errored_keys": [r["key"] for r in RunDir(run).merged_records()],
    }
    assert all("BackendUnavailableError" in r["error"] for r in RunDir(run).merged_records())


@pytest.mark.slow  # two LIBERO scenes in two worker processes and the server: about a minute on two cores
def test_libero_vla_served_gives_the_sequential_records(tmp_path):
    from benchmarks.libero import main

    common = ["--output", str(tmp_path), "--no-progress", "--backbone", "tiny-qwen2.5-vl", "--suite"]
    common += [
        "libero_goal",
        "--tasks",
        "3",
        "--trials-per-task",
        "2",
        "--max-steps",
        "6",
        "--image-size",
        "64",
    ]
    main([*common, "--run-name", "alone"])
    main([*common, "--run-name", "served", "--workers", "2", "--serve", "batched", "--max-wait-ms", "50"])
    alone, served = (records(tmp_path / "libero" / name) for name in ("alone", "served"))
    assert len(served) == 2 and all(r["status"] == "ok" for r in served)
    assert served == alone
