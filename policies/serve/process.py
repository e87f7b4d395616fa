"""One model server process for one run: started before the run's workers, checked and stopped after.

:class:`ServerProcess` is the part every kind of served model shares: a spawned process that loads the
model, proves it can answer a full batch, and announces itself (``("ready", payload)``) or says in one line
why it cannot (``("error", line)``, raised as :class:`ServerStartError`); :meth:`ServerProcess.died` tells a
server that stopped mid-run. VLA action-head models use it with their own socket protocol
(:mod:`vla.serving`); MLLM backends with :class:`BackendServerProcess`, which runs this package's
OpenAI-compatible :class:`~policies.serve.server.ModelServer` on loopback (an ephemeral port, an API key
made for the run). :meth:`ServerProcess.batch_stats` asks either kind how full its batches were (the same
keys: :meth:`~policies.serve.batcher.DynamicBatcher.stats`), :func:`batch_stats_line` says it in a line.
In each worker :func:`served_backend` is the model: an HTTP client of that server whose
response-cache identity is the served model's, so the cache, the records and the answers are those of the
same model loaded in the worker (``--serve off``).
"""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import secrets
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from multiprocessing.connection import Connection, wait
from typing import TYPE_CHECKING, Any

from policies.backends.http_backend import HTTPBackend

if TYPE_CHECKING:
    from policies.backends.base import Backend, GenerationConfig

START_TIMEOUT_S = 600.0  # loading a real-size model on a busy machine takes minutes
#: How long one served request may take. A local model has no deadline on the sequential route either; this
#: only ends a wedged server's requests (a long answer on CPU takes minutes, never an hour).
REQUEST_DEADLINE_S = 3600.0
WARM_UP_SIDE = 224  # the blank image of each warm-up conversation (pixels per side)


class ServerStartError(RuntimeError):
    """The server could not start (bad model options, a batch that does not fit in memory): one line."""


def start_problem(err: BaseException, max_batch: int) -> str:
    """One line for a server that failed to load its model or its warm-up batch (out of memory: the flag)."""
    text = str(err).splitlines()[0] if str(err) else type(err).__name__
    if "out of memory" in text.lower() or type(err).__name__ == "OutOfMemoryError":
        return f"--max-batch {max_batch}: a batch of {max_batch} does not fit in memory ({text}); lower --max-batch"
    return f"the batched policy server could not load the model: {text}"


def batch_stats_line(stats: dict[str, Any]) -> str:
    """One line from a server's batch statistics: requests, forward passes, the mean batch against the
    most, the histogram of batch sizes (size x passes) and the mean wait for a batch."""
    sizes = " ".join(f"{k}x{v}" for k, v in stats["batch_sizes"].items()) or "-"
    mean, most = float(stats["mean_batch_size"]), int(stats["max_batch"])
    return (
        f"batched server: {stats['requests']} requests in {stats['forward_passes']} forward passes, mean batch "
        f"{mean:.2f} of {most} ({100 * mean / most:.0f} % full; size x passes: {sizes}), mean wait "
        f"{1000 * float(stats['mean_queue_wait_s']):.1f} ms"
    )


class ServerProcess:
    """A spawned server process seen from the run: :meth:`start` (its ready payload), :meth:`died`,
    :meth:`stop`. ``target(conn, *args)`` runs in the child and sends ``("ready", payload)`` once it
    serves, or ``("error", line)``. A ``graceful`` server then waits on ``conn`` and returns when it reads
    anything or the end (:meth:`stop`, or the run's process gone): it exits cleanly, releasing what it holds;
    the others are terminated."""

    graceful = False
    STOP_WAIT_S = 10.0  # longest a graceful server is given to finish its answers and exit

    def __init__(self, target: Callable[..., None], args: tuple[Any, ...], name: str) -> None:
        self.target, self.args, self.name = target, args, name
        self.process: Any = None
        self._conn: Connection | None = None

    def start(self, timeout_s: float = START_TIMEOUT_S) -> Any:
        ctx = mp.get_context("spawn")
        parent, child = ctx.Pipe()
        self.process = ctx.Process(target=self.target, args=(child, *self.args), name=self.name, daemon=True)
        self.process.start()
        child.close()
        if not wait([parent, self.process.sentinel], timeout=timeout_s):
            self.stop()
            raise ServerStartError(f"the batched policy server did not start within {timeout_s:.0f} s")
        try:
            kind, payload = parent.recv()
        except EOFError:
            self.process.join(5)
            raise ServerStartError(
                f"the batched policy server died while starting (exit code {self.process.exitcode})"
            ) from None
        if kind == "error":
            self.stop()
            raise ServerStartError(payload)
        self._conn = parent
        return payload

    def died(self) -> str | None:
        """A one-line account of the server's death, or ``None`` while it runs (or before it started)."""
        if self.process is None or self.process.is_alive():
            return None
        return f"the batched policy server died mid-run (exit code {self.process.exitcode})"

    def batch_stats(self) -> dict[str, Any] | None:
        """How full the batches have been (:func:`batch_stats_line`'s keys); ``None`` where the server does
        not say (not running, no answer). Ask before :meth:`stop`."""
        return None

    def stop(self) -> None:
        if self._conn is not None:
            with contextlib.suppress(OSError):  # (a server already gone)
                self._conn.send("stop")
            self._conn.close()
            self._conn = None
            if self.graceful and self.process.is_alive():
                self.process.join(self.STOP_WAIT_S)
        if self.process is not None and self.process.is_alive():
            self.process.terminate()
            self.process.join(10)


# ------------------------------------------------------------------------------------------ MLLM backends


@dataclass(frozen=True)
class ServedModel:
    """What a worker needs to reach a :class:`BackendServerProcess`: its URL, the run's API key, and the
    served model's name and response-cache identity."""

    url: str
    api_key: str
    model: str
    identity: dict[str, Any]


class BackendServerProcess(ServerProcess):
    """The model backend ``make_backend(model, **backend_options)`` builds, served by a
    :class:`~policies.serve.server.ModelServer` in its own process on loopback (port chosen by the system,
    API key made here), answering up to ``max_batch`` requests per forward pass. Before it announces itself
    it answers one batch of ``max_batch`` conversations (a blank image and a one-token answer each), so a
    batch that does not fit in memory fails here."""

    def __init__(
        self,
        model: str,
        backend_options: dict[str, Any],
        *,
        max_batch: int,
        max_wait_ms: float,
        clients: int,
    ) -> None:
        self.api_key, self.url = secrets.token_urlsafe(32), None
        options = {**backend_options, "cache": False}  # the workers' clients keep the cache (same identity)
        server = {"max_batch": max_batch, "max_wait_ms": max_wait_ms, "clients": clients}
        super().__init__(_serve_backend, (model, options, server, self.api_key), "model-server")

    graceful = True

    def start(self, timeout_s: float = START_TIMEOUT_S) -> ServedModel:
        url, model, identity = super().start(timeout_s)
        self.url = url
        return ServedModel(url, self.api_key, model, identity)

    def batch_stats(self) -> dict[str, Any] | None:
        """The server's ``GET /stats`` (its batcher's counters), or ``None`` when it does not answer."""
        import json
        import urllib.request

        if self.url is None or self.died() is not None:
            return None
        root = self.url.removesuffix("/v1")  # the API lives under /v1, the statistics at the root
        request = urllib.request.Request(root + "/stats", headers={"Authorization": f"Bearer {self.api_key}"})
        try:
            with urllib.request.urlopen(request, timeout=30) as answer:  # loopback only
                stats: dict[str, Any] = json.loads(answer.read())
        except (OSError, ValueError):
            return None
        return stats


def _serve_backend(
    conn: Connection, model: str, backend_options: dict[str, Any], server: dict[str, Any], key: str
) -> None:
    """The server process: load, bind loopback, answer one full batch, announce, serve until the run says
    stop (or its end of the pipe closes: the run's process is gone)."""
    from policies.backends import make_backend
    from policies.backends.cache import backend_identity
    from policies.serve.server import LOOPBACK, ModelServer

    try:
        backend = make_backend(model, **backend_options)
        options = _server_options(server, key, getattr(backend, "context_length", None))
        served = ModelServer(backend, **options, host=LOOPBACK, port=0)
    except Exception as err:
        conn.send(("error", start_problem(err, server["max_batch"])))
        return
    try:
        warm_up(backend, server["max_batch"])  # after the batcher has widened the backend's batch
    except Exception as err:
        served.stop()
        conn.send(("error", start_problem(err, server["max_batch"])))
        return
    identity = {k: v for k, v in backend_identity(backend).items() if k != "model_id"}
    served.start()
    conn.send(("ready", (served.url, backend.model_id, identity)))
    with contextlib.suppress(EOFError, OSError):  # the end of the pipe: the run's process is gone
        conn.recv()
    served.stop()


def _server_options(server: dict[str, Any], key: str, context: int | None) -> dict[str, Any]:
    """The :class:`ModelServer` limits for the run's own workers on loopback: their requests are the
    policy's prompts (several camera images, a chat history), never a stranger's, so a prompt may fill the
    model's whole ``context`` as it may in a worker's own model."""
    return {
        "max_prompt_tokens": context,
        "max_batch": server["max_batch"],
        "max_wait_ms": server["max_wait_ms"],
        "api_key": key,
        "request_deadline_s": REQUEST_DEADLINE_S,
        "max_connections": max(32, 2 * server["clients"]),
        "max_body_mb": 256.0,
        "max_images": 256,
        "max_image_pixels": 2**26,
    }


def warm_up(backend: Backend, max_batch: int) -> None:
    """One batch of ``max_batch`` conversations, each a blank image and a short text, answered with one token."""
    import numpy as np

    blank = np.zeros((WARM_UP_SIDE, WARM_UP_SIDE, 3), np.uint8)
    text = {"type": "text", "text": "warm up"}
    conversation = [{"role": "user", "content": [{"type": "image", "image": blank}, text]}]
    with _one_token(backend):
        backend.generate_batch([conversation] * max_batch)


@contextmanager
def _one_token(backend: Backend) -> Iterator[None]:
    saved = backend.config
    backend.config = replace(saved, max_new_tokens=1)
    try:
        yield
    finally:
        backend.config = saved


class ServedBackend(HTTPBackend):
    """An :class:`HTTPBackend` for the run's own :class:`BackendServerProcess`: it sends the run's key and
    keys the response cache as the served model (its weights' fingerprint), not as the server's address."""

    def __init__(self, served: ServedModel, config: GenerationConfig, **options: Any) -> None:
        super().__init__(served.model, served.url, config=config, api_key_env="", **options)
        self.served = served

    def _headers(self) -> dict[str, str]:
        return {**super()._headers(), "Authorization": f"Bearer {self.served.api_key}"}

    def cache_identity(self) -> dict[str, Any]:
        return dict(self.served.identity)


def served_backend(
    served: ServedModel, config: GenerationConfig, *, cache: bool | str, max_retries: int
) -> Backend:
    """The backend a worker's policy uses in place of its own model: :class:`ServedBackend`, behind the
    response cache when ``cache`` is on (``True`` or a path), as ``make_backend`` would put it."""
    backend: Backend = ServedBackend(
        served, config, timeout_s=REQUEST_DEADLINE_S, max_retries=max_retries, max_concurrency=1
    )
    if cache is False:
        return backend
    from policies.backends.cache import CachedBackend

    return CachedBackend(backend, None if cache is True else cache)
