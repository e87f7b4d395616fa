"""The shared timing helpers of the bench scripts (benchmarks.core.timing)."""

import pytest

from benchmarks.core.timing import best_time, median_time, repeat_times, time_once, timed_call, wall_and_cpu


class Clock:
    """A fake clock that advances by the listed amounts, one per reading after the first."""

    def __init__(self, steps):
        self.now, self.steps = 0.0, list(steps)

    def __call__(self):
        value = self.now
        if self.steps:
            self.now += self.steps.pop(0)
        return value


def test_repeats_warm_up_untimed_and_take_the_median_or_best():
    calls = []
    clock = Clock([1.0, 0.0, 3.0, 0.0, 2.0])  # each call reads the clock twice: 1, 3, 2 seconds
    assert repeat_times(lambda: calls.append(1), 3, warmup=2, clock=clock) == [1.0, 3.0, 2.0]
    assert len(calls) == 5
    assert median_time(lambda: None, 3, clock=Clock([1.0, 0.0, 3.0, 0.0, 2.0])) == 2.0
    assert best_time(lambda: None, 3, clock=Clock([1.0, 0.0, 3.0, 0.0, 2.0])) == 1.0


def test_one_call_returns_its_result_and_time():
    assert timed_call(lambda: "x", Clock([0.5])) == (0.5, "x")
    assert time_once(lambda: None, Clock([0.25])) == 0.25
    wall, cpu = wall_and_cpu(lambda: sum(range(10_000)))
    assert wall >= 0 and cpu >= 0


def test_repeats_must_be_positive():
    with pytest.raises(ValueError, match="repeats must be at least 1"):
        median_time(lambda: None, 0)
