"""Stopping a run that only produces errors: ``--max-consecutive-errors``, one mechanism for every runner.

A dead or wrong model server (nothing listening, a wrong model name, a revoked key) makes every unit fail
the same way. Without a stop, a closed-loop run would go on erroring chain after chain for hours, and a
static run item after item. :class:`ErrorStreak` counts failures in a row (in the order they finish) and
raises :class:`ErrorStreakStop` when the count reaches the limit: one line naming the endpoint and the
last error, exit status 3 (a run with errored units). What was recorded stays; ``--resume`` continues.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from policies.config_cli import EXIT_UNITS_ERRORED, RunAborted

#: The default of ``--max-consecutive-errors`` (closed-loop and static runs): small enough that a dead
#: server stops a run within seconds, large enough that a few unlucky units in a row do not.
DEFAULT_MAX_CONSECUTIVE_ERRORS = 8
_LAST_ERROR_CHARS = 300


class ErrorStreakStop(RunAborted):
    """A run stopped after too many failures in a row; exit status 3 like any run with errored units."""

    exit_status = EXIT_UNITS_ERRORED


class ErrorStreak:
    """Failures in a row of a run's units (chains, episodes, items); ``limit`` 0 never stops.

    ``what`` names the units ("units", "items"), ``endpoint`` what they called (:func:`describe_endpoint`)."""

    def __init__(self, limit: int, *, what: str = "units", endpoint: str = "") -> None:
        if limit < 0:
            raise ValueError(f"--max-consecutive-errors must be at least 0, got {limit}")
        self.limit, self.what, self.endpoint = limit, what, endpoint
        self.count = 0
        self.last: str | None = None

    def add(self, error: str | None) -> None:
        """Count one finished unit: ``error`` None means it succeeded and the streak ends."""
        self.count = 0 if error is None else self.count + 1
        self.last = error if error is not None else self.last

    def check(self) -> None:
        """Raise :class:`ErrorStreakStop` when ``limit`` failures came in a row."""
        if self.limit and self.count >= self.limit:
            raise ErrorStreakStop(self.message())

    def message(self) -> str:
        calling = f" calling {self.endpoint}" if self.endpoint else ""
        return (
            f"stopped: {self.count} {self.what} in a row ended in an error{calling}; last error: "
            f"{last_error_line(self.last or '')}. Fix the cause and continue with --resume "
            f"(--max-consecutive-errors 0 never stops)"
        )


def last_error_line(error: str) -> str:
    """The line that says what went wrong: a traceback's last line (the exception), shortened."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    line = lines[-1] if lines else "(no message)"
    return line if len(line) <= _LAST_ERROR_CHARS else line[: _LAST_ERROR_CHARS - 3] + "..."


def describe_endpoint(options: Mapping[str, Any], policy: str | None = None) -> str:
    """What a run's units call, from its policy options: ``model 'm' at http://host/v1``, ``model 'm'``
    (in-process), ``checkpoint DIR``, or ``policy NAME``."""
    model, api_base = options.get("model"), options.get("api_base")
    if model and api_base:
        return f"model {model!r} at {api_base}"
    if model:
        return f"model {model!r}"
    if api_base:
        return f"the server at {api_base}"
    if options.get("checkpoint"):
        return f"checkpoint {options['checkpoint']}"
    return f"policy {policy}" if policy else ""
