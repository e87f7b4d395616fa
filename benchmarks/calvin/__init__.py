"""``python -m benchmarks.calvin``: CALVIN's long-horizon protocol on the built-in play-table or ``calvin_env``.

The protocol as published: 1000 evaluation chains of 5 subtasks (``envs.calvin.get_sequences``, identical
to the public evaluation's), the robot reset to its neutral pose once per chain, at most 360 steps per
subtask, the fixed validation instruction per task, success from the task oracle, and the chain stopped
at its first failure. Results: CALVIN's ``results.json`` (``avg_seq_len``, ``chain_sr``, ``task_info``)
plus the shared run folder (records, manifest, summary, plots, videos).

The body lives in named modules: :mod:`~benchmarks.calvin.config` (the run's flags),
:mod:`~benchmarks.calvin.protocol` (which chains), :mod:`~benchmarks.calvin.chain` (one chain),
:mod:`~benchmarks.calvin.report` (scores and tables), :mod:`~benchmarks.calvin.benchmark` (worker, benchmark,
command).
"""

from benchmarks.calvin.benchmark import CalvinBenchmark, CalvinWorker, calvin_sources, check_setup, main
from benchmarks.calvin.config import CHAIN_LENGTH, CalvinConfig
from benchmarks.calvin.protocol import evaluation_chains, parse_tasks, task_episodes
from benchmarks.calvin.report import chain_markdown, chain_metrics, task_info

__all__ = [
    "CHAIN_LENGTH",
    "CalvinBenchmark",
    "CalvinConfig",
    "CalvinWorker",
    "calvin_sources",
    "chain_markdown",
    "chain_metrics",
    "check_setup",
    "evaluation_chains",
    "main",
    "parse_tasks",
    "task_episodes",
    "task_info",
]
