"""Dynamic batching: requests from many clients answered in batches by one model on one thread.

Client threads :meth:`DynamicBatcher.submit` parsed requests and wait on a future. The batcher thread picks
the next request to run, then gathers requests that can share its forward pass until ``max_batch`` are in
hand or ``max_wait_ms`` have passed since that request arrived (a request that already waited while the
model was busy is not held longer), and answers them with ``backend.generate_batch``. Only greedy requests
with the same decoding settings, the same kind of input (with or without images) and prompts of similar
length share a forward pass, so every answer equals the one the request would get alone and a short prompt
is never padded to a long one; sampled requests run one by one, so a seeded sample does not depend on its
neighbours.

Scheduling is fair to small requests: the next request is the one with the least work (prompt tokens plus
``max_tokens``) unless the oldest has waited half its deadline, which then goes first (so nothing starves).
Each request carries a deadline: one still queued at its deadline is answered HTTP 503 without running,
and a backend with ``supports_deadlines`` stops one at its deadline mid-generation (HTTP 504). A request
whose client has gone is cancelled the same way (:meth:`DynamicBatcher.cancel`).
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections import Counter
from collections.abc import Hashable, Iterator, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

from policies.backends.base import FINISH_DEADLINE, Backend, Generation, GenerationConfig
from policies.serve.protocol import ChatRequest, RequestError

SHORT_PROMPT = 256  # prompts under this many tokens batch together whatever their length


@dataclass(eq=False)  # identity: two equal requests are still two requests
class _Pending:
    request: ChatRequest
    future: Future = field(default_factory=Future)
    arrived: float = field(default_factory=time.monotonic)
    deadline: float = float("inf")  # time.monotonic() by which it must be answered
    prompt_tokens: int = 0  # counted or estimated; sizes the request for scheduling

    @property
    def work(self) -> int:
        return self.prompt_tokens + self.request.config.max_new_tokens


@dataclass
class _Stats:
    requests: int = 0
    batch_sizes: Counter = field(default_factory=Counter)  # forward passes by number of conversations
    queue_wait_s: float = 0.0
    model_s: float = 0.0
    failed: int = 0
    expired: int = 0  # deadline passed (in the queue or mid-generation), or the client went away


class DynamicBatcher:
    """Answers :class:`ChatRequest` s in dynamic batches on a background thread.

    Args:
        backend: the model; only the batcher thread calls it. Its ``config`` is set per batch to the
            requests' decoding settings.
        max_batch: most conversations in one ``generate_batch`` call.
        max_wait_ms: longest time the request picked to run next is held back to fill a batch.
        max_queue: most requests waiting; beyond it :meth:`submit` refuses with HTTP 503.
    """

    def __init__(
        self, backend: Backend, *, max_batch: int = 8, max_wait_ms: float = 20.0, max_queue: int = 1024
    ) -> None:
        if max_batch < 1 or max_wait_ms < 0 or max_queue < 1:
            raise ValueError(
                f"need max_batch >= 1, max_wait_ms >= 0 and max_queue >= 1, got "
                f"{max_batch}, {max_wait_ms}, {max_queue}"
            )
        self.backend, self.max_batch, self.max_wait_s = backend, max_batch, max_wait_ms / 1000
        self.max_queue = max_queue
        if hasattr(backend, "batch_size"):  # one forward pass per gathered group, never re-chunked
            backend.batch_size = max(backend.batch_size, max_batch)
        self._waiting: list[_Pending] = []
        self._changed = threading.Condition()
        self._stopping = False
        self._stats, self._lock = _Stats(), threading.Lock()
        self._thread = threading.Thread(target=self._loop, name="batcher", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout: float = 30.0) -> None:
        """Finish the batch in progress, refuse what is still queued, and end the thread."""
        with self._changed:
            self._stopping = True
            self._changed.notify_all()
        if self._thread.is_alive():
            self._thread.join(timeout)
        with self._changed:
            left, self._waiting = self._waiting, []
        for pending in left:
            _settle(pending.future, error=RequestError(503, "the server is shutting down"))

    def submit(
        self, request: ChatRequest, *, deadline: float = float("inf"), prompt_tokens: int = 0
    ) -> Future:
        """Queue ``request`` (to be answered by ``deadline``, a ``time.monotonic()`` value); the future
        resolves to its ``Generation`` (or raises its :class:`RequestError`)."""
        pending = _Pending(request, deadline=deadline, prompt_tokens=prompt_tokens)
        with self._changed:
            if self._stopping:
                raise RequestError(503, "the server is shutting down")
            if len(self._waiting) >= self.max_queue:
                raise RequestError(503, f"the server has {self.max_queue} requests waiting; retry later")
            self._waiting.append(pending)
            self._changed.notify_all()
        pending.future.pending = pending  # type: ignore[attr-defined]  # for cancel()
        return pending.future

    def cancel(self, future: Future) -> bool:
        """Give up on a request (its client went away, or its deadline passed): dropped if still queued
        (then True), else stopped at its next token on a backend with ``supports_deadlines``."""
        pending: _Pending | None = getattr(future, "pending", None)
        if pending is None:
            return False
        with self._changed:
            pending.deadline = min(pending.deadline, time.monotonic())
            queued = pending in self._waiting
            if queued:
                self._waiting.remove(pending)
            self._changed.notify_all()
        if queued:
            with self._lock:
                self._stats.expired += 1
        return queued

    def stats(self) -> dict[str, Any]:
        """Counters since start: requests, forward passes, batch-size histogram, mean wait and model time."""
        with self._lock:
            s = self._stats
            passes = sum(s.batch_sizes.values())
            answered = sum(size * n for size, n in s.batch_sizes.items())
            stats = {
                "requests": s.requests,
                "failed": s.failed,
                "expired": s.expired,
                "forward_passes": passes,
                "batch_sizes": {str(k): v for k, v in sorted(s.batch_sizes.items())},
                "mean_batch_size": answered / passes if passes else 0.0,
                "max_batch_size": max(s.batch_sizes, default=0),
                "mean_queue_wait_s": s.queue_wait_s / s.requests if s.requests else 0.0,
                "model_s": s.model_s,
                "max_batch": self.max_batch,
                "max_wait_ms": self.max_wait_s * 1000,
            }
        with self._changed:
            stats["queued"] = len(self._waiting)
        return stats

    # ----------------------------------------------------------------------------------------- thread

    def _loop(self) -> None:
        while True:
            batch = self._next_batch()
            if batch is None:
                return
            self._answer(batch)

    def _next_batch(self) -> list[_Pending] | None:
        """The next request to run and those that may share its forward pass (None: stopping). Waits for
        work, and up to ``max_wait`` after the chosen request arrived for more of its kind."""
        with self._changed:
            while True:
                self._expire_queued()
                if self._stopping:
                    return None
                if self._waiting:
                    break
                self._changed.wait()
            head = _pick(self._waiting, time.monotonic())
            self._waiting.remove(head)
            batch, key = [head], _batch_key(head)
            until = head.arrived + self.max_wait_s
            while len(batch) < self.max_batch:
                batch += self._take_matching(key, self.max_batch - len(batch))
                remaining = until - time.monotonic()
                if len(batch) >= self.max_batch or remaining <= 0 or self._stopping:
                    break
                self._changed.wait(remaining)
            return batch

    def _take_matching(self, key: Hashable, n: int) -> list[_Pending]:
        matching = sorted(
            (p for p in self._waiting if _batch_key(p) == key), key=lambda p: (p.work, p.arrived)
        )[:n]
        for pending in matching:
            self._waiting.remove(pending)
        return matching

    def _expire_queued(self) -> None:
        now = time.monotonic()
        late = [p for p in self._waiting if p.deadline <= now]
        for pending in late:
            self._waiting.remove(pending)
            _settle(pending.future, error=queued_too_long(now - pending.arrived))
        if late:
            with self._lock:
                self._stats.expired += len(late)

    def _answer(self, batch: Sequence[_Pending]) -> None:
        began = time.monotonic()
        with self._lock:
            self._stats.requests += len(batch)
            self._stats.queue_wait_s += sum(began - p.arrived for p in batch)
        self._run_group(list(batch))

    def _run_group(self, group: list[_Pending]) -> None:
        began = time.perf_counter()
        try:
            with _decoding(self.backend, group[0].request.config):
                answers = self._generate(group)
        except Exception as err:  # one bad conversation must not fail its neighbours: retry them alone
            if len(group) > 1:
                for pending in group:
                    self._run_group([pending])
                return
            self._fail(group[0], err)
            return
        self._record(len(group), time.perf_counter() - began)
        for pending, answer in zip(group, answers):
            self._resolve(pending, answer)

    def _generate(self, group: list[_Pending]) -> list[Generation]:
        conversations = [p.request.messages for p in group]
        if getattr(self.backend, "supports_deadlines", False):
            return self.backend.generate_batch(conversations, deadlines=_Deadlines(group))  # type: ignore[call-arg]
        return self.backend.generate_batch(conversations)

    def _resolve(self, pending: _Pending, answer: Generation) -> None:
        if answer.finish_reason != FINISH_DEADLINE:
            _settle(pending.future, result=answer)
            return
        with self._lock:
            self._stats.expired += 1
        took = time.monotonic() - pending.arrived
        _settle(
            pending.future,
            error=RequestError(
                504,
                f"the request reached its deadline after {took:.1f} s, "
                f"{answer.completion_tokens or 0} tokens into its answer "
                f"(--request-deadline-s); ask for fewer max_tokens or a "
                f"shorter prompt",
            ),
        )

    def _record(self, size: int, seconds: float) -> None:
        with self._lock:
            self._stats.batch_sizes[size] += 1
            self._stats.model_s += seconds

    def _fail(self, pending: _Pending, err: Exception) -> None:
        with self._lock:
            self._stats.failed += 1
        status = 400 if isinstance(err, (ValueError, TypeError)) else 500
        message = f"the model could not answer this request: {type(err).__name__}: {err}"
        _settle(pending.future, error=RequestError(status, message))


class _Deadlines(Sequence[float]):
    """The group's deadlines as the backend reads them, live: :meth:`DynamicBatcher.cancel` moves one."""

    def __init__(self, group: Sequence[_Pending]) -> None:
        self._group = group

    def __len__(self) -> int:
        return len(self._group)

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return _Deadlines(self._group[index])
        return self._group[index].deadline


def queued_too_long(waited_s: float) -> RequestError:
    """HTTP 503 for a request whose deadline came while it waited for the model (the server is busy)."""
    return RequestError(
        503,
        f"the request waited {waited_s:.1f} s in the queue and reached its deadline before "
        f"the model was free (--request-deadline-s); retry later",
    )


def _pick(waiting: list[_Pending], now: float) -> _Pending:
    """The request to run next: the oldest once it has waited half its deadline, else the least work."""
    oldest = min(waiting, key=lambda p: p.arrived)
    if now - oldest.arrived >= (oldest.deadline - oldest.arrived) / 2:
        return oldest
    return min(waiting, key=lambda p: (p.work, p.arrived))


def _settle(future: Future, *, result: Any = None, error: BaseException | None = None) -> None:
    """Resolve ``future`` once (a shutdown may race with the batcher thread)."""
    with contextlib.suppress(Exception):  # InvalidStateError: already resolved
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(result)


def _batch_key(pending: _Pending) -> Hashable:
    """Requests with equal keys may share a forward pass; a sampled request gets a key of its own. Prompts
    share a key when their lengths are within a factor of 4 (all short ones together), so a short prompt
    is not padded to a long one."""
    request = pending.request
    if request.config.temperature > 0:
        return id(pending)
    size = max(pending.prompt_tokens, 1) / SHORT_PROMPT
    return request.config, request.has_images, 0 if size <= 1 else 1 + int(size).bit_length() // 2


@contextlib.contextmanager
def _decoding(backend: Backend, config: GenerationConfig) -> Iterator[None]:
    """The backend decodes with ``config`` inside the block (backends fix their config at construction)."""
    saved, backend.config = backend.config, config
    try:
        yield
    finally:
        backend.config = saved
