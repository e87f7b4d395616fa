"""``--serve batched``: one process holds the VLA and answers the workers in dynamic batches. Same records as
the sequential run; a server that dies mid-run ends the command with one line and a non-zero status."""

import json

import numpy as np
import pytest

from benchmarks.calvin import main
from benchmarks.core import RunDir, comparable
from vla.policy import VLAPolicyConfig
from vla.serving import BatchedVLAServer, RemoteVLAModel, ServerGone

TINY = ["--backbone", "tiny-qwen2.5-vl", "--num-sequences", "2", "--ep-len", "12", "--execute-steps", "5"]


def run(tmp_path, name, *args):
    return main(["--output", str(tmp_path), "--no-progress", "--run-name", name, *TINY, *args])


def records(tmp_path, name):
    return [comparable(r) for r in RunDir(tmp_path / "calvin" / name).merged_records()]


def test_batched_server_gives_the_sequential_records(tmp_path, capsys):
    """Two chains, two worker processes sharing one server (batches of up to 2) vs one worker alone; the
    server's batch statistics (histogram of sizes, mean wait) are printed and in summary.json."""
    run(tmp_path, "alone")
    run(tmp_path, "served", "--workers", "2", "--serve", "batched", "--max-batch", "2", "--max-wait-ms", "50")
    alone, served = records(tmp_path, "alone"), records(tmp_path, "served")
    assert len(served) == 2 and all(r["status"] == "ok" for r in served)
    assert served == alone
    assert served[0]["result"]["policy_calls"] == 12  # every step went through the server's queue
    decisions = int(sum(r["result"]["policy_stats"]["model_calls"] for r in served))
    serving = json.loads((tmp_path / "calvin" / "served" / "summary.json").read_text())["serving"]
    assert serving["requests"] == decisions > 0 and serving["max_batch"] == 2
    assert sum(int(size) * n for size, n in serving["batch_sizes"].items()) == decisions
    assert serving["mean_queue_wait_s"] >= 0 and serving["model_s"] > 0
    line = [x for x in capsys.readouterr().out.splitlines() if x.startswith("batched server:")]
    assert len(line) == 1 and f"{decisions} requests in {serving['forward_passes']} forward passes" in line[0]


def test_a_server_that_dies_mid_run_ends_the_run_with_one_line(tmp_path, monkeypatch, capsys):
    start = BatchedVLAServer.start

    def start_then_die(self, *args, **kwargs):
        address = start(self, *args, **kwargs)
        self.process.kill()
        self.process.join(10)
        return address

    monkeypatch.setattr(BatchedVLAServer, "start", start_then_die)
    with pytest.raises(SystemExit) as exit_:
        run(tmp_path, "dead", "--serve", "batched")
    assert exit_.value.code == 1
    err = [line for line in capsys.readouterr().err.splitlines() if "died mid-run" in line]
    assert len(err) == 1 and "exit code -9" in err[0]
    summary = json.loads((tmp_path / "calvin" / "dead" / "summary.json").read_text())
    assert summary["run"]["units_errored"] == 2 and summary["run"]["complete"] is False


@pytest.mark.slow  # the command-level test above covers the same death; this one pins the client's error
def test_the_client_raises_server_gone_once_the_server_is_killed():
    server = BatchedVLAServer(VLAPolicyConfig(backbone="tiny-qwen2.5-vl"), max_batch=2, max_wait_ms=1)
    try:
        model = RemoteVLAModel(server.start())
        image = np.zeros((224, 224, 3), np.uint8)
        assert model.predict([[image]], ["open the drawer"]).shape == (1, 10, 7)
        assert server.died() is None
        server.process.kill()
        server.process.join(10)
        with pytest.raises(ServerGone, match="stopped answering"):
            model.predict([[image]], ["open the drawer"])
        assert "exit code -9" in server.died()
    finally:
        server.stop()


def test_a_batch_too_large_for_memory_is_named_by_its_flag():
    from policies.serve.process import start_problem

    line = start_problem(RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB\nmore"), 16)
    assert line.startswith("--max-batch 16: a batch of 16 does not fit in memory") and "\n" not in line
    assert "could not load the model" in start_problem(OSError("no such folder"), 16)


def test_the_wire_carries_arrays_without_pickle_and_refuses_other_dtypes():
    from multiprocessing import Pipe

    from vla.serving import recv_arrays, send_arrays

    a, b = Pipe()
    image = np.arange(12, dtype=np.uint8).reshape(2, 2, 3)
    send_arrays(a, {"instruction": "x"}, [image])
    header, (got,) = recv_arrays(b)
    assert header == {"instruction": "x"} and np.array_equal(got, image)
    send_arrays(a, {}, [np.zeros(2, dtype=np.int64)])
    with pytest.raises(ValueError, match="int64"):
        recv_arrays(b)
