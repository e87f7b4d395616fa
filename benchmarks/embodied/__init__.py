"""``python -m benchmarks.embodied nav|manip``: EmbodiedBench-style closed-loop evaluation.

EB-Navigation on procedurally generated MuJoCo homes and EB-Manipulation on robosuite, with EB's protocol:
the five (navigation) or five (manipulation) subsets, a step budget per episode, success checked after
every action, and per-episode records with EB's fields (task success, steps, planner calls, planner
output errors). The MLLM agent loop is ``--policy mllm --model ...`` (EB prompt, ``executable_plan``,
feedback, history of the last 5 messages).

The body lives in named modules: :mod:`~benchmarks.embodied.config` (families and flags),
:mod:`~benchmarks.embodied.navigation` and :mod:`~benchmarks.embodied.manipulation` (one episode),
:mod:`~benchmarks.embodied.report` (scores and tables), :mod:`~benchmarks.embodied.benchmark` (worker,
benchmark, command).
"""

from benchmarks.embodied.benchmark import (
    EmbodiedBenchmark,
    EmbodiedWorker,
    action_space,
    check_env_kwargs,
    main,
)
from benchmarks.embodied.config import FAMILIES, EmbodiedConfig, Family
from benchmarks.embodied.report import planner_calls, subset_markdown, subset_table

__all__ = [
    "FAMILIES",
    "EmbodiedBenchmark",
    "EmbodiedConfig",
    "EmbodiedWorker",
    "Family",
    "action_space",
    "check_env_kwargs",
    "main",
    "planner_calls",
    "subset_markdown",
    "subset_table",
]
