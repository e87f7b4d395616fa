"""How full the batched VLA server's batches were: the histogram of batch sizes, the mean wait, and the
query that reads them from a running server (the loop runs in a thread here with a stand-in model)."""

import threading
import time
from multiprocessing.connection import Client, Listener

import numpy as np
import pytest

from vla.serving import BatchLoop, BatchStats, ServerAddress, query_stats, recv_arrays, send_arrays


def test_stats_count_batches_requests_and_mean_wait():
    stats = BatchStats(max_batch=4, max_wait_ms=5.0)
    stats.add([0.010, 0.002], model_s=0.5)
    stats.add([0.004, 0.004, 0.004, 0.004], model_s=0.7)
    stats.add([0.006], model_s=0.2)
    data = stats.to_json()
    assert data["batch_sizes"] == {"1": 1, "2": 1, "4": 1}
    assert (data["requests"], data["forward_passes"]) == (7, 3)
    assert data["mean_batch_size"] == pytest.approx(7 / 3, abs=1e-3)
    assert data["fill"] == pytest.approx(7 / 12, abs=1e-3)
    assert data["mean_queue_wait_s"] == pytest.approx(0.034 / 7, abs=1e-6)
    assert data["model_s"] == pytest.approx(1.4)
    assert BatchStats.from_json(data).to_json() == data
    line = stats.line()
    assert "7 requests in 3 forward passes" in line and "mean batch 2.33 of 4" in line
    assert "1x1 2x1 4x1" in line and "mean wait 4.9 ms" in line


def test_no_batches_reads_as_empty_not_a_division_error():
    data = BatchStats(max_batch=2, max_wait_ms=5.0).to_json()
    assert (data["requests"], data["mean_batch_size"], data["fill"], data["mean_queue_wait_s"]) == (
        0,
        0,
        0,
        0,
    )


class _EchoModel:
    """Stands in for VLAModel: a chunk filled with each request's first pixel value; records batch sizes."""

    def __init__(self) -> None:
        self.batches: list[int] = []

    def predict(self, images, instructions, gripper_open_value=None):
        self.batches.append(len(images))
        time.sleep(0.01)
        return np.stack([np.full((2, 7), float(row[0][0, 0, 0])) for row in images])


def test_a_running_loop_reports_its_batches_to_a_stats_query(tmp_path):
    """Three workers send at once with a generous wait: one batch of three, then one request alone."""
    key, path = b"k" * 32, str(tmp_path / "socket")
    model = _EchoModel()
    loop = BatchLoop(model, Listener(path, family="AF_UNIX", authkey=key), max_batch=3, max_wait_ms=2000)
    threading.Thread(target=loop.run, daemon=True).start()
    workers = [Client(path, family="AF_UNIX", authkey=key) for _ in range(3)]
    for i, conn in enumerate(workers):
        send_arrays(conn, {"instruction": "open", "gripper_open": None}, [np.full((4, 4, 3), i, np.uint8)])
    answers = [recv_arrays(conn)[1][0] for conn in workers]
    assert [a[0, 0] for a in answers] == [0.0, 1.0, 2.0]
    send_arrays(workers[0], {"instruction": "open", "gripper_open": None}, [np.zeros((4, 4, 3), np.uint8)])
    recv_arrays(workers[0])
    stats = query_stats(ServerAddress(path, key, "{}"), timeout_s=10)
    assert stats is not None and model.batches == [3, 1]
    data = stats.to_json()
    assert data["batch_sizes"] == {"1": 1, "3": 1} and data["requests"] == 4 and data["max_batch"] == 3
    # the batch of three waited for the last worker, the one alone for the whole --max-wait-ms
    assert 0 < data["mean_queue_wait_s"] < 2.0 and data["model_s"] >= 0.02
    for conn in workers:
        conn.close()


def test_a_server_that_is_gone_gives_no_stats(tmp_path):
    assert query_stats(ServerAddress(str(tmp_path / "none"), b"k" * 32, "{}"), timeout_s=1) is None


class _AliveThenStopped:
    """Stands in for the server's process: alive until terminated."""

    exitcode = None

    def __init__(self) -> None:
        self.alive = True

    def is_alive(self) -> bool:
        return self.alive

    def terminate(self) -> None:
        self.alive = False

    def join(self, timeout=None) -> None:
        pass


def test_stop_asks_for_the_stats_first_and_keeps_them(monkeypatch):
    """After the run the process is gone; the statistics it gave just before stopping remain readable."""
    from vla import serving
    from vla.policy import VLAPolicyConfig

    asked = []
    final = BatchStats(max_batch=2, max_wait_ms=5.0, histogram={2: 3})
    monkeypatch.setattr(
        serving, "query_stats", lambda address, timeout_s=30.0: asked.append(address) or final
    )
    server = serving.BatchedVLAServer(VLAPolicyConfig(backbone="tiny-qwen2.5-vl"), max_batch=2, max_wait_ms=5)
    assert server.stats() is None  # never started
    server.process, server.address = _AliveThenStopped(), ServerAddress(server._path, b"k", "{}")
    server.stop()
    assert len(asked) == 1 and not server.process.is_alive()
    assert server.stats() is final and server.stats().to_json()["requests"] == 6
