"""A persistent response cache in front of any :class:`Backend`, so re-running a benchmark costs nothing.

Answers are stored in SQLite (WAL mode, so several worker processes can read and write one file at once),
keyed by a SHA-256 of the backend's identity (weights fingerprint or server URL + model name), the
:class:`GenerationConfig` and the messages, with every image replaced by the hash of its pixels. A cached
answer comes back with ``cached=True`` and the token counts of the original call. Empty (or blank) answers
are never stored: replaying one forever would turn a passing glitch into a permanent failure.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
import time
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from policies.backends.base import Backend, Generation, Message
from policies.backends.images import image_digest, is_image_part, validate_messages

if TYPE_CHECKING:
    import gymnasium as gym

_SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    key TEXT PRIMARY KEY,
    text TEXT NOT NULL,
    prompt_tokens INTEGER,
    completion_tokens INTEGER,
    cost_usd REAL,
    latency_s REAL,
    model_id TEXT,
    identity TEXT,
    created REAL
)
"""


def default_cache_path() -> Path:
    """``$SPATIAL_ARENA_CACHE_DIR/responses.sqlite``, else under ``$XDG_CACHE_HOME`` (``~/.cache``)."""
    if os.environ.get("SPATIAL_ARENA_CACHE_DIR"):
        return Path(os.environ["SPATIAL_ARENA_CACHE_DIR"]) / "responses.sqlite"
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "spatial_arena" / "responses.sqlite"


def backend_identity(backend: Backend) -> dict[str, Any]:
    """What, besides the messages and config, decides a backend's answer."""
    if hasattr(backend, "cache_identity"):
        return {"model_id": backend.model_id, **backend.cache_identity()}
    described = dict(backend.describe())
    described.pop("config", None)
    return described


def canonical_messages(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """The messages as JSON-safe data, each image replaced by the SHA-256 of its pixels."""
    out = []
    for message in messages:
        content = message["content"]
        if isinstance(content, list):
            content = [
                {"type": "image", "sha256": image_digest(p["image"])} if is_image_part(p) else dict(p)
                for p in content
            ]
        out.append({"role": message["role"], "content": content})
    return out


class CachedBackend(Backend):
    """Wraps ``inner``; answers found in the cache are returned without calling it.

    ``hits`` and ``misses`` count lookups over this object's lifetime.
    """

    def __init__(self, inner: Backend, path: str | os.PathLike[str] | None = None) -> None:
        self.inner = inner
        self.model_id = inner.model_id
        self.config = inner.config
        self.path = Path(path) if path is not None else default_cache_path()
        self.hits = self.misses = 0
        self._identity = backend_identity(inner)
        self._local = threading.local()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._connect() as db:
            db.execute(_SCHEMA)

    # ------------------------------------------------------------------------------------------ lookups

    def key(self, messages: Sequence[Message]) -> str:
        """The cache key of one conversation (hex SHA-256)."""
        blob = {
            "identity": self._identity,
            "config": asdict(self.config),
            "messages": canonical_messages(messages),
        }
        return hashlib.sha256(json.dumps(blob, sort_keys=True, ensure_ascii=False).encode()).hexdigest()

    def bind(self, env: gym.Env) -> None:
        self.inner.bind(env)

    def start_episode(self, context: object) -> None:
        self.inner.start_episode(context)

    def generate(self, messages: Sequence[Message]) -> Generation:
        return self.generate_batch([messages])[0]

    def generate_batch(self, conversations: Sequence[Sequence[Message]]) -> list[Generation]:
        """Serve what the cache has; send the rest to the inner backend in one batch, then store it."""
        for messages in conversations:
            validate_messages(messages)
        keys = [self.key(m) for m in conversations]
        began = time.perf_counter()
        found = {i: g for i, k in enumerate(keys) if (g := self._get(k)) is not None}
        lookup = time.perf_counter() - began
        missing = [i for i in range(len(keys)) if i not in found]
        fresh = self.inner.generate_batch([conversations[i] for i in missing]) if missing else []
        for i, generation in zip(missing, fresh):
            if generation.text.strip():  # an empty answer (a refusal, a glitch) is asked again next time
                self._put(keys[i], generation)
            found[i] = generation
        self.hits += len(keys) - len(missing)
        self.misses += len(missing)
        return [
            found[i] if i in missing else _as_hit(found[i], lookup / max(1, len(keys)))
            for i in range(len(keys))
        ]

    # ------------------------------------------------------------------------------------------ storage

    def _connect(self) -> sqlite3.Connection:
        """One connection per thread and process (sqlite connections must not cross either)."""
        conn = getattr(self._local, "conn", None)
        if conn is None or self._local.pid != os.getpid():
            conn = sqlite3.connect(self.path, timeout=60.0)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            self._local.conn, self._local.pid = conn, os.getpid()
        return conn

    def _get(self, key: str) -> Generation | None:
        row = (
            self._connect()
            .execute(
                "SELECT text, prompt_tokens, completion_tokens, cost_usd, latency_s FROM responses WHERE key = ?",
                (key,),
            )
            .fetchone()
        )
        return None if row is None else Generation(row[0], row[1], row[2], row[4] or 0.0, True, row[3])

    def _put(self, key: str, g: Generation) -> None:
        with self._connect() as db:  # commits; first writer wins when two processes race on one key
            db.execute(
                "INSERT OR IGNORE INTO responses VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    key,
                    g.text,
                    g.prompt_tokens,
                    g.completion_tokens,
                    g.cost_usd,
                    g.latency_s,
                    self.model_id,
                    json.dumps(self._identity, sort_keys=True),
                    time.time(),
                ),
            )

    def __len__(self) -> int:
        return self._connect().execute("SELECT COUNT(*) FROM responses").fetchone()[0]

    def close(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None

    # --------------------------------------------------------------------------------------- identity

    def describe(self) -> dict[str, Any]:
        return {**self.inner.describe(), "cache": str(self.path)}

    def cache_identity(self) -> dict[str, Any]:
        return self._identity


def _as_hit(stored: Generation, lookup_s: float) -> Generation:
    """A stored answer as served now: cached, with this lookup's time instead of the original latency."""
    return Generation(
        stored.text, stored.prompt_tokens, stored.completion_tokens, lookup_s, True, stored.cost_usd
    )
