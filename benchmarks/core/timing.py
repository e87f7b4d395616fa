"""The one set of timing helpers of the bench scripts (``bench/*.py``) and of anything else that times code.

Every helper takes a zero-argument callable and a clock (default ``time.perf_counter``, wall time; pass
``time.process_time`` for this process's CPU time, the steadier figure on a shared machine).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

Clock = Callable[[], float]


def timed_call(fn: Callable[[], Any], clock: Clock = time.perf_counter) -> tuple[float, Any]:
    """``(seconds, result)`` of one call of ``fn``."""
    began = clock()
    result = fn()
    return clock() - began, result


def time_once(fn: Callable[[], Any], clock: Clock = time.perf_counter) -> float:
    """Seconds of one call of ``fn``."""
    return timed_call(fn, clock)[0]


def repeat_times(
    fn: Callable[[], Any], repeats: int, *, warmup: int = 0, clock: Clock = time.perf_counter
) -> list[float]:
    """Seconds of each of ``repeats`` calls, after ``warmup`` untimed calls (lazy initialisation, caches)."""
    if repeats < 1:
        raise ValueError(f"repeats must be at least 1, got {repeats}")
    for _ in range(warmup):
        fn()
    return [time_once(fn, clock) for _ in range(repeats)]


def median_time(
    fn: Callable[[], Any], repeats: int, *, warmup: int = 0, clock: Clock = time.perf_counter
) -> float:
    """Median seconds of ``repeats`` calls after ``warmup`` untimed ones."""
    return statistics.median(repeat_times(fn, repeats, warmup=warmup, clock=clock))


def best_time(
    fn: Callable[[], Any], repeats: int, *, warmup: int = 0, clock: Clock = time.perf_counter
) -> float:
    """Fastest of ``repeats`` calls after ``warmup`` untimed ones (the least disturbed run)."""
    return min(repeat_times(fn, repeats, warmup=warmup, clock=clock))


def wall_and_cpu(fn: Callable[[], Any]) -> tuple[float, float]:
    """``(wall seconds, CPU seconds of this process)`` of one call of ``fn``."""
    wall, cpu = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - wall, time.process_time() - cpu
