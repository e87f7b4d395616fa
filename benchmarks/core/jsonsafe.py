"""The one JSON normaliser of the benchmarks: what every record, manifest and summary goes through.

:func:`json_safe` turns a value into strict JSON data (no NaN, no NumPy, no tuples); :func:`json_default`
is the ``default=`` hook of ``json.dumps`` for writers that keep their data as it is and only need the odd
NumPy array, set or path converted. Both live in ``benchmarks.core``, the lowest benchmark package, which
imports no other benchmark package, so the static, goal-scoring and closed-loop benchmarks share them.
"""

from __future__ import annotations

import math
from pathlib import PurePath
from typing import Any

import numpy as np

_PRINTABLE_INT_BITS = 13_000  # about 3,900 decimal digits, under Python's 4,300-digit str() limit


def json_safe(x: object) -> Any:
    """Recursively make ``x`` strict JSON: dict keys -> str, tuples -> lists, sets -> sorted lists, NumPy ->
    Python, non-finite floats -> ``None``, paths -> str; any other object becomes its ``repr``."""
    if isinstance(x, dict):
        return {str(k): json_safe(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [json_safe(v) for v in x]
    if isinstance(x, (set, frozenset)):
        return sorted((json_safe(v) for v in x), key=repr)
    if isinstance(x, np.ndarray):
        return json_safe(x.tolist())
    if isinstance(x, (bool, np.bool_)):
        return bool(x)
    if isinstance(x, (int, np.integer)):
        # JSON writers print ints in decimal, which raises past 4,300 digits: name such an int instead.
        return (
            int(x) if int(x).bit_length() <= _PRINTABLE_INT_BITS else f"<int of {int(x).bit_length()} bits>"
        )
    if isinstance(x, (float, np.floating)):
        return float(x) if math.isfinite(x) else None
    if isinstance(x, PurePath):
        return str(x)
    if x is None or isinstance(x, str):
        return x
    return repr(x)


def json_default(obj: object) -> Any:
    """``json.dumps(..., default=json_default)``: arrays and scalars with ``tolist``, sets and paths; anything else is
    a ``TypeError`` (a writer that meets an unknown object should fail, not write its repr)."""
    if hasattr(obj, "tolist"):  # NumPy arrays and scalars (and tensors)
        return obj.tolist()
    if isinstance(obj, (set, frozenset)):
        return sorted(obj)
    if isinstance(obj, PurePath):
        return str(obj)
    raise TypeError(f"{type(obj).__name__} is not JSON serialisable")
