"""Batched serving of a VLA: one process holds the model, closed-loop workers send it observations over a
local socket and get action chunks back, answered in dynamic batches.

:class:`BatchedVLAServer` (the run's process; the start, check and stop every served model shares are
:class:`policies.serve.process.ServerProcess`) starts the server process, which loads the model once, runs
one forward pass at ``max_batch`` (so a batch that does not fit in memory is a one-line error before any
worker starts) and listens on a Unix socket (loopback only, authenticated with a per-run key). Its loop
takes the oldest waiting request, then gathers more until ``max_batch`` are in hand or ``max_wait_ms``
have passed since that request arrived, and answers them with one ``predict`` call (one per gripper
convention). In each worker a :class:`RemoteVLAModel` stands where the model would be: the policy
(:class:`vla.policy.VLAPolicy`) is unchanged, its queue and chunking included.

Wire format (no pickle): a request is a JSON header (instruction, gripper value, image shapes) followed by
each image's raw ``uint8`` bytes; the answer is a JSON header (the chunk's shape, or an error) followed by
the chunk's raw ``float64`` bytes. A server that dies mid-run makes each waiting worker's call raise
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
from dataclasses import dataclass
from multiprocessing.connection import Client, Connection, Listener, wait
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from policies.serve.process import START_TIMEOUT_S, ServerProcess, start_problem

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
        self.batch_sizes: dict[int, int] = {}

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
        request = _Request(
            conn, images, str(header["instruction"]), header.get("gripper_open"), time.monotonic()
        )
        self.queue.append(request)

    def _answer(self, batch: list[_Request]) -> None:
        self.batch_sizes[len(batch)] = self.batch_sizes.get(len(batch), 0) + 1
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

    def start(self, timeout_s: float = START_TIMEOUT_S) -> ServerAddress:
        self.address = ServerAddress(self._path, self._key, super().start(timeout_s))
        return self.address

    def stop(self) -> None:
        super().stop()
        Path(self._path).unlink(missing_ok=True)
        Path(self._dir).rmdir() if Path(self._dir).exists() else None

    def __enter__(self) -> BatchedVLAServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
