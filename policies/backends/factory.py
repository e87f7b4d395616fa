"""One entry point for every backend, ``make_backend(model, api_base=..., cache=...)``, dispatching through a
registry of backends that users extend with :func:`register_backend`.

Built in: ``transformers`` (a local checkpoint), ``openai`` (an OpenAI-compatible HTTP server) and
``answer-key`` (the competent stand-in, :mod:`policies.backends.answer_key`; ``oracle`` is its former name).
Without ``backend=``, :func:`default_backend` picks one from the model and the endpoint, as every ``--model`` flag always has.
Every backend except those that say ``cacheable = False`` (the answer-key stand-in, whose answers come from
its truth) is wrapped in the SQLite response cache (:class:`~policies.backends.cache.CachedBackend`).

A registered backend is a :class:`~policies.backends.base.Backend` subclass named by a lazy
``"module:Class"`` string (choosing another backend never imports it) and built as
``Class(model=model, config=GenerationConfig(...), **options)``; its other keyword arguments are its
options, checked before building so that an unknown one is a one-line error.
"""

from __future__ import annotations

import inspect
import os
from dataclasses import fields
from typing import Any, Protocol

from policies.backends.answer_key import ANSWER_KEY_MODEL, canonical_model
from policies.backends.base import Backend, GenerationConfig
from policies.entry_point import load_entry_point

_GENERATION_FIELDS = {f.name for f in fields(GenerationConfig)}
_BACKENDS: dict[str, str] = {}


class BackendClass(Protocol):
    """A registered backend class, as :func:`make_backend` builds it."""

    __name__: str
    cacheable: bool

    def __call__(self, *, model: str, config: GenerationConfig, **options: Any) -> Backend: ...


def register_backend(name: str, target: str) -> None:
    """Register the backend class ``target`` (``"package.module:Class"``, imported when first built) as
    ``name``, the value of ``make_backend(..., backend=name)`` and of ``--model-backend``."""
    if name in _BACKENDS and _BACKENDS[name] != target:
        raise ValueError(f"backend name {name!r} is already registered to {_BACKENDS[name]!r}")
    _BACKENDS[name] = target


def registered_backends() -> list[str]:
    return sorted(_BACKENDS)


def backend_class(name: str) -> BackendClass:
    """The class registered as ``name`` (imports its module)."""
    if name not in _BACKENDS:
        raise ValueError(
            f"unknown model backend {name!r}; registered: {registered_backends()} "
            f"(add one with policies.backends.factory.register_backend)"
        )
    return load_entry_point(_BACKENDS[name], what=f"model backend {name!r}")


def default_backend(model: str, api_base: str | None) -> str:
    """The backend a plain ``--model`` gets: the stand-in for ``"answer-key"`` (or its deprecated name
    ``"oracle"``), HTTP when ``api_base`` is given, else local transformers."""
    if canonical_model(model) == ANSWER_KEY_MODEL:
        return ANSWER_KEY_MODEL
    return "openai" if api_base else "transformers"


def make_backend(
    model: str,
    *,
    backend: str | None = None,
    api_base: str | None = None,
    cache: bool | str | os.PathLike[str] = True,
    **options: Any,
) -> Backend:
    """Build the backend for ``model``: the registered ``backend``, or the :func:`default_backend` for it.

    Args:
        model: ``"answer-key"`` (the competent stand-in, :mod:`policies.backends.answer_key`; never cached;
            ``"oracle"`` is its deprecated name),
            checkpoint directory or hub id (transformers), or the server's model name (HTTP).
        backend: a registered backend name (:func:`registered_backends`); ``None`` picks by ``model`` and
            ``api_base``.
        api_base: base URL of an OpenAI-compatible server, e.g. ``"http://localhost:8000/v1"``; passed to
            the backend as its ``api_base`` option.
        cache: ``True`` for the default response cache, a path for another SQLite file, ``False`` for none.
        options: :class:`GenerationConfig` fields (``max_new_tokens``, ``temperature``, ``top_p``, ``seed``)
            or a ``config=GenerationConfig(...)``, plus the chosen backend's keyword arguments
            (:class:`~policies.backends.transformers_backend.TransformersBackend`,
            :class:`~policies.backends.http_backend.HTTPBackend`,
            :class:`~policies.backends.answer_key.AnswerKeyBackend`).
    """
    model, backend = canonical_model(model) or model, canonical_model(backend)
    config = options.pop("config", None) or GenerationConfig()
    overrides = {k: options.pop(k) for k in list(options) if k in _GENERATION_FIELDS}
    config = GenerationConfig(**{**_as_dict(config), **overrides})
    if api_base:
        options["api_base"] = api_base
    cls = backend_class(backend or default_backend(model, api_base))
    _check_options(cls, options)
    built = cls(model=model, config=config, **options)
    if cache is False or cache is None or not cls.cacheable:
        return built
    from policies.backends.cache import CachedBackend

    return CachedBackend(built, None if cache is True else cache)


def _as_dict(config: GenerationConfig) -> dict[str, Any]:
    return {f: getattr(config, f) for f in _GENERATION_FIELDS}


def _check_options(cls: BackendClass, options: dict[str, Any]) -> None:
    accepted = [p for p in inspect.signature(cls).parameters if p not in ("self", "model", "config")]
    unknown = sorted(set(options) - set(accepted))
    if unknown:
        raise TypeError(
            f"{cls.__name__} does not take option(s) {unknown}; it accepts {accepted} and the "
            f"generation settings {sorted(_GENERATION_FIELDS)}"
        )


register_backend("transformers", "policies.backends.transformers_backend:TransformersBackend")
register_backend("openai", "policies.backends.http_backend:HTTPBackend")
register_backend(ANSWER_KEY_MODEL, "policies.backends.answer_key:AnswerKeyBackend")
