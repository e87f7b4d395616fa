"""Model backends behind one interface: ``generate(messages) -> Generation``.

``make_backend(model, api_base=None, cache=True, **options)`` builds a registered backend (transformers,
OpenAI-compatible HTTP, the others registered in :mod:`policies.backends.factory`, or one a user added with
``register_backend``) with the SQLite response cache in front. Heavy modules (torch, transformers) load only when a transformers backend is built.
"""

from policies.backends.base import Backend, Generation, GenerationConfig, Message
from policies.backends.errors import (
    BackendError,
    BackendRequestError,
    BackendUnavailableError,
    MalformedResponseError,
)
from policies.backends.factory import make_backend, register_backend, registered_backends

__all__ = [
    "Backend",
    "BackendError",
    "BackendRequestError",
    "BackendUnavailableError",
    "Generation",
    "GenerationConfig",
    "MalformedResponseError",
    "Message",
    "make_backend",
    "register_backend",
    "registered_backends",
]
