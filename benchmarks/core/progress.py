"""Progress of a run: units done, the benchmark's running statistics, the units in flight, and time left."""

from __future__ import annotations

import sys
import time
from typing import Any

from tqdm import tqdm

#: Least seconds between two redraws for a unit's own progress: on a terminal, and in a log file (where
#: each redraw is one more line).
UNIT_REFRESH_S = {"terminal": 2.0, "log": 60.0}


class Progress:
    """A progress bar over all units of a run (finished ones from a resumed run count as done).

    :meth:`unit` shows the latest progress line of a running unit (``"<key>: step N, ..."``) next to the
    statistics, redrawn at most every ``UNIT_REFRESH_S`` seconds, so a long unit shows it is moving."""

    def __init__(self, total: int, done: int, description: str, *, enabled: bool = True) -> None:
        self.enabled = enabled
        self._bar = tqdm(
            total=total,
            initial=done,
            desc=description,
            unit="unit",
            dynamic_ncols=True,
            file=sys.stderr,
            disable=not enabled,
            mininterval=0.5,
            smoothing=0.1,
        )
        self._stats: dict[str, Any] = {}
        terminal = enabled and sys.stderr.isatty()
        self._refresh_s = UNIT_REFRESH_S["terminal" if terminal else "log"]
        self._next_refresh = 0.0

    def update(self, stats: dict[str, Any]) -> None:
        self._stats = dict(stats)
        self._bar.set_postfix(stats, refresh=False)
        self._bar.update(1)

    def unit(self, text: str) -> None:
        """Show a running unit's progress line (throttled)."""
        self._bar.set_postfix({**self._stats, "now": text}, refresh=False)
        now = time.monotonic()
        if now >= self._next_refresh:
            self._next_refresh = now + self._refresh_s
            self._bar.refresh()

    def close(self) -> None:
        self._bar.close()
