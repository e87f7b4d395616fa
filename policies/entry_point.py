"""The one loader of ``"package.module:attribute"`` entry points (policy registry, user policies, benchmark
families, static benchmarks, goal-scoring pair sources).

It lives in ``policies``, the lowest layer that names code by such strings, so that every layer above
reaches it without a cycle. Loading imports a module the user or a registry named; it reads no file.
"""

from __future__ import annotations

import importlib
from typing import Any


def split_entry_point(target: str, *, what: str = "entry point") -> tuple[str, str]:
    """``("package.module", "attribute")`` of ``target``; a string without both parts is a one-line error."""
    module, sep, attribute = target.partition(":")
    if not sep or not module or not attribute:
        raise ValueError(
            f"{what} {target!r}: expected 'package.module:attribute' (e.g. 'package.module:ClassOrFactory')"
        )
    return module, attribute


def load_entry_point(target: str, *, what: str = "entry point") -> Any:
    """The object named by ``"package.module:attribute"``; errors name ``what`` and ``target`` and say why.

    ``ImportError`` when the module cannot be imported (with the cause), ``AttributeError`` when it has no
    such attribute, ``ValueError`` when ``target`` is not of that form."""
    module_name, attribute = split_entry_point(target, what=what)
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ImportError(
            f"{what} {target!r}: cannot import {module_name!r} ({exc}); is it on PYTHONPATH?"
        ) from exc
    try:
        return getattr(module, attribute)
    except AttributeError:
        raise AttributeError(
            f"{what} {target!r}: module {module_name!r} has no attribute {attribute!r}"
        ) from None
