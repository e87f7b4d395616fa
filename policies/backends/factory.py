"""One entry point for every backend: ``make_backend(model, api_base=..., cache=...)``."""

from __future__ import annotations

import inspect
import os
from dataclasses import fields
from typing import Any

from policies.backends.base import Backend, GenerationConfig
from policies.backends.oracle import ORACLE_MODEL

_GENERATION_FIELDS = {f.name for f in fields(GenerationConfig)}


def make_backend(
    model: str, *, api_base: str | None = None, cache: bool | str | os.PathLike[str] = True, **options: Any
) -> Backend:
    """Build the backend for ``model``: the oracle for ``"oracle"``, HTTP when ``api_base`` is given, else
    local transformers.

    Args:
        model: ``"oracle"`` (the competent stand-in, :mod:`policies.backends.oracle`; never cached),
            checkpoint directory or hub id (transformers), or the server's model name (HTTP).
        api_base: base URL of an OpenAI-compatible server, e.g. ``"http://localhost:8000/v1"``.
        cache: ``True`` for the default response cache, a path for another SQLite file, ``False`` for none.
        options: :class:`GenerationConfig` fields (``max_new_tokens``, ``temperature``, ``top_p``, ``seed``)
            or a ``config=GenerationConfig(...)``, plus the chosen backend's keyword arguments
            (:class:`~policies.backends.transformers_backend.TransformersBackend`,
            :class:`~policies.backends.http_backend.HTTPBackend`).
    """
    config = options.pop("config", None) or GenerationConfig()
    overrides = {k: options.pop(k) for k in list(options) if k in _GENERATION_FIELDS}
    config = GenerationConfig(**{**_as_dict(config), **overrides})
    if model == ORACLE_MODEL:
        from policies.backends.oracle import OracleBackend

        _check_options(OracleBackend, options)
        return OracleBackend(config, **options)
    if api_base:
        from policies.backends.http_backend import HTTPBackend

        _check_options(HTTPBackend, options)
        backend: Backend = HTTPBackend(model, api_base, config=config, **options)
    else:
        from policies.backends.transformers_backend import TransformersBackend

        _check_options(TransformersBackend, options)
        backend = TransformersBackend(model, config=config, **options)
    if cache is False or cache is None:
        return backend
    from policies.backends.cache import CachedBackend

    return CachedBackend(backend, None if cache is True else cache)


def _as_dict(config: GenerationConfig) -> dict[str, Any]:
    return {f: getattr(config, f) for f in _GENERATION_FIELDS}


def _check_options(cls: type, options: dict[str, Any]) -> None:
    accepted = [p for p in inspect.signature(cls.__init__).parameters if p not in ("self", "model", "api_base", "config")]
    unknown = sorted(set(options) - set(accepted))
    if unknown:
        raise TypeError(
            f"{cls.__name__} does not take option(s) {unknown}; it accepts {accepted} and the "
            f"generation settings {sorted(_GENERATION_FIELDS)}"
        )
