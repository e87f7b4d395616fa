"""Batched serving of a VLA: one process holds the model, closed-loop workers send it observations over a
local socket and get action chunks back, answered in dynamic batches.

:class:`BatchedVLAServer` (the run's process; the start, check and stop every served model shares are
:class:`policies.serve.process.ServerProcess`) starts the server process, which loads the model once, runs
one forward pass at ``max_batch`` (so a batch that does not fit in memory is a one-line error before any
worker starts) and listens on a Unix socket (loopback only, authenticated with a per-run key). Its loop
takes the oldest waiting request, then gathers more until ``max_batch`` are in hand or ``max_wait_ms``
have passed since that request arrived, and answers them with one ``predict`` call (one per gripper
convention). It counts how full its batches were (:class:`BatchStats`: a histogram of batch sizes and the
mean wait from a request's arrival to its batch's start), which :meth:`BatchedVLAServer.stats` asks for
over the same socket. In each worker a :class:`RemoteVLAModel` stands where the model would be: the policy
(:class:`vla.policy.VLAPolicy`) is unchanged, its queue and chunking included.

Wire format (no pickle): a request is a JSON header (instruction, gripper value, image shapes) followed by
each image's raw ``uint8`` bytes; the answer is a JSON header (the chunk's shape, or an error) followed by
the chunk's raw ``float64`` bytes; a header ``{"stats": true}`` with no images is answered with the
statistics. A server that dies mid-run makes each waiting worker's call raise
:class:`ServerGone` (its unit is recorded as an error; the run exits non-zero and is marked incomplete).
"""

from __future__ import annotations

import contextlib
import json
import multiprocessing as mp
import os
import secrets
import tempfile
import threading
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from multiprocessing.connection import Client, Connection, Listener, wait
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from policies.serve.process import START_TIMEOUT_S, ServerProcess, batch_stats_line, start_problem

if TYPE_CHECKING:
    from vla.model import VLAModel
    from vla.policy import VLAPolicyConfig


class ServerGone(RuntimeError):
    """The batched policy server stopped answering (it died, or the run is ending)."""


@dataclass(frozen=True)
class ServerAddress:
    """What a worker needs to reach the server: socket path, key, and the model's config (JSON)."""

    path: str
    authkey: bytes
    model_config: str


# ------------------------------------------------------------------------------------------ wire


def send_arrays(conn: Connection, header: dict[str, Any], arrays: Sequence[np.ndarray]) -> None:
    """One message: the JSON header (with each array's shape and dtype), then each array's bytes."""
    meta = [{"shape": list(a.shape), "dtype": str(a.dtype)} for a in arrays]
    conn.send_bytes(json.dumps({**header, "arrays": meta}).encode())
    for array in arrays:
        conn.send_bytes(np.ascontiguousarray(array).tobytes())


_DTYPES = {"uint8", "float32", "float64"}


def recv_arrays(conn: Connection) -> tuple[dict[str, Any], list[np.ndarray]]:
    """The header and arrays :func:`send_arrays` sent (``EOFError`` when the other side is gone)."""
    header = json.loads(conn.recv_bytes())
    arrays = []
    for meta in header.pop("arrays"):
        if meta["dtype"] not in _DTYPES:
            raise ValueError(f"array dtype {meta['dtype']!r} is not one of {sorted(_DTYPES)}")
        data = np.frombuffer(conn.recv_bytes(), dtype=meta["dtype"])
        arrays.append(data.reshape(meta["shape"]))
    return header, arrays


# ------------------------------------------------------------------------------------------ client


class RemoteVLAModel:
    """Stands in for a :class:`vla.model.VLAModel` in a worker: ``config`` and ``predict`` answered by the
    server. One request is in flight per worker, so the answers need no ids."""

    def __init__(self, address: ServerAddress) -> None:
        from vla.model import VLAConfig

        self.address, self.config = address, VLAConfig.from_json(address.model_config)
        self._conn: Connection | None = None

    def _connection(self) -> Connection:
        if self._conn is None:
            try:
                self._conn = Client(self.address.path, family="AF_UNIX", authkey=self.address.authkey)
            except OSError as err:
                raise ServerGone(
                    f"cannot reach the batched policy server at {self.address.path}: {err}"
                ) from None
        return self._conn

    def predict(
        self,
        images: Sequence[Sequence[Any]],
        instructions: Sequence[str],
        gripper_open_value: float | None = None,
    ) -> np.ndarray:
        """Chunks ``(B, C, 7)`` for ``B`` observations, each sent as its own request (they batch on the server
        with other workers' requests)."""
        return np.stack([self._one(row, text, gripper_open_value) for row, text in zip(images, instructions)])

    def _one(self, images: Sequence[Any], instruction: str, gripper_open: float | None) -> np.ndarray:
        conn = self._connection()
        header = {"instruction": instruction, "gripper_open": gripper_open}
        try:
            send_arrays(conn, header, [np.asarray(i, dtype=np.uint8) for i in images])
            answer, arrays = recv_arrays(conn)
        except (EOFError, OSError) as err:
            raise ServerGone(
                f"the batched policy server at {self.address.path} stopped answering ({type(err).__name__}); "
                "it died mid-run: see its error above, then rerun with --resume --retry-errors"
            ) from None
        if "error" in answer:
            raise RuntimeError(f"batched policy server: {answer['error']}")
        return arrays[0]

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None


# ------------------------------------------------------------------------------------------ server


@dataclass
class BatchStats:
    """How full the server's batches were: ``histogram`` maps a batch size to the number of forward passes
    of that size; ``wait_s`` sums each request's wait from its arrival to the start of the batch that
    answered it, ``model_s`` the time spent in ``predict``. The JSON has the shape of the MLLM server's
    statistics (:meth:`policies.serve.batcher.DynamicBatcher.stats`), so both read alike."""

    max_batch: int
    max_wait_ms: float
    histogram: dict[int, int] = field(default_factory=dict)
    wait_s: float = 0.0
    model_s: float = 0.0

    def add(self, waits: Sequence[float], model_s: float) -> None:
        """One batch: each of its requests' waits and the model's time on it (seconds)."""
        self.histogram[len(waits)] = self.histogram.get(len(waits), 0) + 1
        self.wait_s += sum(waits)
        self.model_s += model_s

    def to_json(self) -> dict[str, Any]:
        """Counters for the run's summary and ``bench/throughput.py`` (sizes as strings: JSON keys)."""
        passes = sum(self.histogram.values())
        requests = sum(size * count for size, count in self.histogram.items())
        mean = requests / passes if passes else 0.0
        return {
            "requests": requests,
            "forward_passes": passes,
            "batch_sizes": {str(k): self.histogram[k] for k in sorted(self.histogram)},
            "mean_batch_size": round(mean, 3),
            "fill": round(mean / self.max_batch, 3),
            "mean_queue_wait_s": round(self.wait_s / requests, 6) if requests else 0.0,
            "model_s": round(self.model_s, 3),
            "max_batch": self.max_batch,
            "max_wait_ms": self.max_wait_ms,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> BatchStats:
        histogram = {int(k): int(v) for k, v in data["batch_sizes"].items()}
        wait = float(data["mean_queue_wait_s"]) * int(data["requests"])
        return cls(
            int(data["max_batch"]), float(data["max_wait_ms"]), histogram, wait, float(data["model_s"])
        )

    def line(self) -> str:
        """One line: :func:`policies.serve.process.batch_stats_line`."""
        return batch_stats_line(self.to_json())


def query_stats(address: ServerAddress, timeout_s: float = 30.0) -> BatchStats | None:
    """The server's :class:`BatchStats` (``None`` when it does not answer within ``timeout_s``)."""
    try:
        with Client(address.path, family="AF_UNIX", authkey=address.authkey) as conn:
            send_arrays(conn, {"stats": True}, [])
            if not conn.poll(timeout_s):
                return None
            header, _ = recv_arrays(conn)
    except (OSError, EOFError):
        return None
    return BatchStats.from_json(header["stats"])


@dataclass
class _Request:
    conn: Connection
    images: list[np.ndarray]
    instruction: str
    gripper_open: float | None
    arrived: float


class BatchLoop:
    """The server's loop: requests from every connected worker, answered in dynamic batches by ``model``."""

    def __init__(self, model: VLAModel, listener: Listener, max_batch: int, max_wait_ms: float) -> None:
        self.model, self.listener = model, listener
        self.max_batch, self.max_wait_s = max_batch, max_wait_ms / 1000
        self.clients: list[Connection] = []
        self.queue: deque[_Request] = deque()
        self.lock = threading.Lock()
        self.stats = BatchStats(max_batch, max_wait_ms)

    def _accept(self) -> None:
        while True:  # the listener lives as long as the server process
            try:
                conn = self.listener.accept()
            except (OSError, EOFError, mp.AuthenticationError):  # a client that failed the key check
                continue
            with self.lock:
                self.clients.append(conn)

    def run(self) -> None:
        threading.Thread(target=self._accept, name="accept", daemon=True).start()
        while True:
            with self.lock:
                clients = list(self.clients)
            timeout = 0.05 if not self.queue else max(0.0, self._due() - time.monotonic())
            if not clients:
                time.sleep(timeout)
            for conn in wait(clients, timeout=timeout) if clients else []:
                self._read(conn)  # type: ignore[arg-type]  # wait() returns what it was given
            if self.queue and (len(self.queue) >= self.max_batch or time.monotonic() >= self._due()):
                self._answer([self.queue.popleft() for _ in range(min(self.max_batch, len(self.queue)))])

    def _due(self) -> float:
        return self.queue[0].arrived + self.max_wait_s

    def _read(self, conn: Connection) -> None:
        try:
            header, images = recv_arrays(conn)
        except (EOFError, OSError, ValueError):  # a worker that finished (or sent garbage): drop it
            with self.lock:
                self.clients.remove(conn)
            conn.close()
            return
        if header.get("stats"):  # the run asking how full the batches were: answered at once
            with contextlib.suppress(OSError):
                send_arrays(conn, {"stats": self.stats.to_json()}, [])
            return
        request = _Request(
            conn, images, str(header["instruction"]), header.get("gripper_open"), time.monotonic()
        )
        self.queue.append(request)

    def _answer(self, batch: list[_Request]) -> None:
        start = time.monotonic()
        self._predict(batch)
        self.stats.add([start - r.arrived for r in batch], time.monotonic() - start)

    def _predict(self, batch: list[_Request]) -> None:
        groups: dict[float | None, list[_Request]] = {}
        for request in batch:  # one predict per gripper convention (in practice one)
            groups.setdefault(request.gripper_open, []).append(request)
        for gripper, group in groups.items():
            try:
                chunks = self.model.predict(
                    [r.images for r in group], [r.instruction for r in group], gripper
                )
                answers: list[tuple[dict[str, Any], list[np.ndarray]]] = [
                    ({}, [c.astype(np.float64)]) for c in chunks
                ]
            except Exception as err:  # a request the model cannot take: its workers record the error
                answers = [({"error": f"{type(err).__name__}: {err}"}, [])] * len(group)
            for request, (header, arrays) in zip(group, answers):
                with contextlib.suppress(OSError):  # a worker gone: its connection drops on the next read
                    send_arrays(request.conn, header, arrays)


def warm_up(model: VLAModel, max_batch: int) -> None:
    """One forward pass at ``max_batch`` blank observations: a batch too large for memory fails here."""
    side = model.config.image_size
    cameras = max(1, len(model.config.cameras))
    blank = np.zeros((side, side, 3), np.uint8)
    model.predict([[blank] * cameras] * max_batch, ["warm up"] * max_batch)


def _serve_main(
    conn: Connection, config: VLAPolicyConfig, max_batch: int, max_wait_ms: float, path: str, key: bytes
) -> None:
    """The server process: load, check the batch fits, listen, announce, serve until terminated."""
    from vla.policy import load_vla_model

    try:
        model = load_vla_model(config)
        warm_up(model, max_batch)
    except Exception as err:
        conn.send(("error", start_problem(err, max_batch)))
        return
    listener = Listener(path, family="AF_UNIX", authkey=key)
    conn.send(("ready", model.config.to_json()))
    BatchLoop(model, listener, max_batch, max_wait_ms).run()


class BatchedVLAServer(ServerProcess):
    """The server process seen from the run: start it, hand :attr:`address` to workers, check it, stop it."""

    def __init__(self, config: VLAPolicyConfig, *, max_batch: int, max_wait_ms: float) -> None:
        self.config, self.max_batch, self.max_wait_ms = config, max_batch, max_wait_ms
        self._dir = tempfile.mkdtemp(prefix="vla-serve-")
        self._path, self._key = os.path.join(self._dir, "socket"), secrets.token_bytes(32)
        args = (config, max_batch, max_wait_ms, self._path, self._key)
        super().__init__(_serve_main, args, "vla-server")
        self.address: ServerAddress | None = None
        self._final_stats: BatchStats | None = None

    def start(self, timeout_s: float = START_TIMEOUT_S) -> ServerAddress:
        self.address = ServerAddress(self._path, self._key, super().start(timeout_s))
        return self.address

    def batch_stats(self) -> dict[str, Any] | None:
        stats = self.stats()
        return None if stats is None else stats.to_json()

    def stats(self, timeout_s: float = 30.0) -> BatchStats | None:
        """How full the batches have been so far (asked over the socket); ``None`` when the server is not
        running or does not answer within ``timeout_s``. :meth:`stop` asks once more first and keeps the
        answer, so after a run this is the whole run's."""
        if self.address is None or self.process is None or not self.process.is_alive():
            return self._final_stats
        return query_stats(self.address, timeout_s)

    def stop(self) -> None:
        if self.process is not None and self.process.is_alive():
            self._final_stats = self.stats() or self._final_stats
        super().stop()
        Path(self._path).unlink(missing_ok=True)
        Path(self._dir).rmdir() if Path(self._dir).exists() else None

    def __enter__(self) -> BatchedVLAServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
