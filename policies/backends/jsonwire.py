"""JSON read from the network with a fixed nesting limit, whatever the caller's stack depth.

``json.loads`` recurses once per level and stops at Python's recursion limit, which counts the caller's
frames too: a document nested 990 deep parses at the top of a script and fails (or parses, and then makes
the next ``json.dumps`` of a part of it raise ``RecursionError``) inside a worker's deeper stack. Reading
through :func:`loads_bounded` makes the limit a fixed number of levels instead, checked without recursion.
"""

from __future__ import annotations

import json
from typing import Any

#: Nesting allowed in a chat request or answer (the deepest real one, content parts, is about 6 levels).
MAX_JSON_DEPTH = 64


class NestingError(ValueError):
    """The document nests arrays/objects deeper than the limit."""


def loads_bounded(raw: bytes | str, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """``json.loads(raw)``, refusing a document nested more than ``max_depth`` levels (:class:`NestingError`).

    Raises ``ValueError`` (``json.JSONDecodeError``, ``UnicodeDecodeError``) for text that is not JSON."""
    try:
        value = json.loads(raw)
    except RecursionError:
        raise NestingError(f"the JSON nests arrays/objects more than {max_depth} levels deep") from None
    if nesting_depth(value, max_depth) > max_depth:
        raise NestingError(f"the JSON nests arrays/objects more than {max_depth} levels deep")
    return value


def nesting_depth(value: object, stop_after: int | None = None) -> int:
    """Levels of arrays/objects in a parsed JSON value (a scalar is 0), walked without recursion; the walk
    stops as soon as the depth passes ``stop_after``."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        node, depth = stack.pop()
        children = node.values() if isinstance(node, dict) else node if isinstance(node, list) else None
        if children is None:
            continue
        deepest = max(deepest, depth)
        if stop_after is not None and deepest > stop_after:
            return deepest
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return deepest
