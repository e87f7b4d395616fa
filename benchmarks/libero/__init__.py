"""``python -m benchmarks.libero``: LIBERO suites with the standard (OpenVLA) evaluation protocol.

Per task, one trial per fixed initial state (50), ``num_steps_wait`` no-op settle steps, then at most the
suite's step budget (spatial 220, object 280, goal 300, libero_10 520, libero_90 400); success is LIBERO's
goal check. Reported: success rate per task and per suite, with every protocol number in the manifest.

The body lives in named modules: :mod:`~benchmarks.libero.config` (the run's flags),
:mod:`~benchmarks.libero.episode` (one trial), :mod:`~benchmarks.libero.report` (scores, tables, plot),
:mod:`~benchmarks.libero.benchmark` (worker, benchmark, command).
"""

from benchmarks.libero.benchmark import LiberoBenchmark, LiberoWorker, action_space, main
from benchmarks.libero.config import LiberoConfig
from benchmarks.libero.report import task_label, task_plot, task_table

__all__ = [
    "LiberoBenchmark",
    "LiberoConfig",
    "LiberoWorker",
    "action_space",
    "main",
    "task_label",
    "task_plot",
    "task_table",
]
