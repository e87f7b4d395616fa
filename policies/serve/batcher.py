"""Dynamic batching: requests from many clients answered in batches by one model on one thread.

Client threads :meth:`DynamicBatcher.submit` parsed requests and wait on a future. The batcher thread takes
the oldest request, then gathers more until ``max_batch`` are in hand or ``max_wait_ms`` have passed since
that oldest request arrived (a request that already waited while the model was busy is not held longer),
and answers them with ``backend.generate_batch``. Only greedy requests with the same decoding settings and
the same kind of input (with or without images) share a forward pass, so every answer equals the one the
request would get alone; sampled requests run one by one, so a seeded sample does not depend on its
neighbours.
"""

from __future__ import annotations

import contextlib
import queue
import threading
import time
from collections import Counter
from collections.abc import Hashable, Iterator, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

from policies.backends.base import Backend, GenerationConfig
from policies.serve.protocol import ChatRequest, RequestError

_STOP = object()


@dataclass
class _Pending:
    request: ChatRequest
    future: Future = field(default_factory=Future)
    arrived: float = field(default_factory=time.monotonic)


@dataclass
class _Stats:
    requests: int = 0
    batch_sizes: Counter = field(default_factory=Counter)  # forward passes by number of conversations
    queue_wait_s: float = 0.0
    model_s: float = 0.0
    failed: int = 0


class DynamicBatcher:
    """Answers :class:`ChatRequest` s in dynamic batches on a background thread.

    Args:
        backend: the model; only the batcher thread calls it. Its ``config`` is set per batch to the
            requests' decoding settings.
        max_batch: most conversations in one ``generate_batch`` call.
        max_wait_ms: longest time the oldest waiting request is held back to fill a batch.
        max_queue: most requests waiting; beyond it :meth:`submit` refuses with HTTP 503.
    """

    def __init__(self, backend: Backend, *, max_batch: int = 8, max_wait_ms: float = 20.0,
                 max_queue: int = 1024) -> None:
        if max_batch < 1 or max_wait_ms < 0 or max_queue < 1:
            raise ValueError(f"need max_batch >= 1, max_wait_ms >= 0 and max_queue >= 1, got "
                             f"{max_batch}, {max_wait_ms}, {max_queue}")
        self.backend, self.max_batch, self.max_wait_s = backend, max_batch, max_wait_ms / 1000
        if hasattr(backend, "batch_size"):  # one forward pass per gathered group, never re-chunked
            backend.batch_size = max(backend.batch_size, max_batch)
        self._queue: queue.Queue[Any] = queue.Queue(max_queue)
        self._stats, self._lock = _Stats(), threading.Lock()
        self._thread = threading.Thread(target=self._loop, name="batcher", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout: float = 30.0) -> None:
        """Finish the batch in progress, refuse what is still queued, and end the thread."""
        with contextlib.suppress(queue.Full):
            self._queue.put(_STOP, timeout=timeout)
        self._thread.join(timeout)
        while not self._queue.empty():
            item = self._queue.get_nowait()
            if isinstance(item, _Pending):
                item.future.set_exception(RequestError(503, "the server is shutting down"))

    def submit(self, request: ChatRequest) -> Future:
        """Queue ``request``; the future resolves to its ``Generation`` (or raises its error)."""
        pending = _Pending(request)
        try:
            self._queue.put_nowait(pending)
        except queue.Full as err:
            raise RequestError(503, f"the server has {self._queue.maxsize} requests waiting; retry later") from err
        return pending.future

    def stats(self) -> dict[str, Any]:
        """Counters since start: requests, forward passes, batch-size histogram, mean wait and model time."""
        with self._lock:
            s = self._stats
            passes = sum(s.batch_sizes.values())
            answered = sum(size * n for size, n in s.batch_sizes.items())
            return {
                "requests": s.requests, "failed": s.failed, "forward_passes": passes,
                "batch_sizes": {str(k): v for k, v in sorted(s.batch_sizes.items())},
                "mean_batch_size": answered / passes if passes else 0.0,
                "max_batch_size": max(s.batch_sizes, default=0),
                "mean_queue_wait_s": s.queue_wait_s / s.requests if s.requests else 0.0,
                "model_s": s.model_s, "max_batch": self.max_batch, "max_wait_ms": self.max_wait_s * 1000,
            }  # fmt: skip

    # ----------------------------------------------------------------------------------------- thread

    def _loop(self) -> None:
        while True:
            first = self._queue.get()
            if first is _STOP:
                return
            batch, stopping = self._gather(first)
            self._answer(batch)
            if stopping:
                return

    def _gather(self, first: _Pending) -> tuple[list[_Pending], bool]:
        """``first`` plus what arrives until the batch is full or ``first`` has waited ``max_wait``."""
        batch, deadline = [first], first.arrived + self.max_wait_s
        while len(batch) < self.max_batch:
            remaining = deadline - time.monotonic()
            try:
                item = self._queue.get(timeout=remaining) if remaining > 0 else self._queue.get_nowait()
            except queue.Empty:
                break
            if item is _STOP:
                return batch, True
            batch.append(item)
        return batch, False

    def _answer(self, batch: Sequence[_Pending]) -> None:
        began = time.monotonic()
        with self._lock:
            self._stats.requests += len(batch)
            self._stats.queue_wait_s += sum(began - p.arrived for p in batch)
        for group in _groups(batch):
            self._run_group(group)

    def _run_group(self, group: list[_Pending]) -> None:
        began = time.perf_counter()
        try:
            with _decoding(self.backend, group[0].request.config):
                answers = self.backend.generate_batch([p.request.messages for p in group])
        except Exception as err:  # one bad conversation must not fail its neighbours: retry them alone
            if len(group) > 1:
                for pending in group:
                    self._run_group([pending])
                return
            self._fail(group[0], err)
            return
        self._record(len(group), time.perf_counter() - began)
        for pending, answer in zip(group, answers):
            pending.future.set_result(answer)

    def _record(self, size: int, seconds: float) -> None:
        with self._lock:
            self._stats.batch_sizes[size] += 1
            self._stats.model_s += seconds

    def _fail(self, pending: _Pending, err: Exception) -> None:
        with self._lock:
            self._stats.failed += 1
        status = 400 if isinstance(err, (ValueError, TypeError)) else 500
        message = f"the model could not answer this request: {type(err).__name__}: {err}"
        pending.future.set_exception(RequestError(status, message))


def _batch_key(pending: _Pending) -> Hashable:
    """Requests with equal keys may share a forward pass; a sampled request gets a key of its own."""
    request = pending.request
    if request.config.temperature > 0:
        return id(pending)
    return request.config, request.has_images


def _groups(batch: Sequence[_Pending]) -> list[list[_Pending]]:
    groups: dict[Hashable, list[_Pending]] = {}
    for pending in batch:
        groups.setdefault(_batch_key(pending), []).append(pending)
    return list(groups.values())


@contextlib.contextmanager
def _decoding(backend: Backend, config: GenerationConfig) -> Iterator[None]:
    """The backend decodes with ``config`` inside the block (backends fix their config at construction)."""
    saved, backend.config = backend.config, config
    try:
        yield
    finally:
        backend.config = saved

