"""LIBERO task lookup (BDDL file, instruction) and its fixed initial states."""

from __future__ import annotations

import contextlib
import io
import pickle
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np

from envs.libero.bootstrap import ensure_libero
from envs.libero.protocol import NUM_INIT_STATES, check_task


@dataclass(frozen=True)
class LiberoTask:
    """One LIBERO task: where its BDDL problem and initial states live, and its language instruction."""

    suite: str
    index: int
    name: str
    instruction: str
    bddl_file: Path
    init_states_file: Path


@cache
def load_task(suite: str, task_index: int) -> LiberoTask:
    """The task at ``task_index`` of ``suite`` in LIBERO's own task order (order 0, as evaluations use)."""
    check_task(suite, task_index)
    ensure_libero()
    from libero.libero import benchmark, get_libero_path

    with contextlib.redirect_stdout(io.StringIO()):  # LIBERO prints the task order it uses
        tasks = benchmark.get_benchmark_dict()[suite]()
    task = tasks.get_task(task_index)
    init_file = Path(get_libero_path("init_states")) / task.problem_folder / task.init_states_file
    return LiberoTask(
        suite=suite,
        index=int(task_index),
        name=task.name,
        instruction=task.language,
        bddl_file=Path(tasks.get_task_bddl_file_path(task_index)),
        init_states_file=init_file,
    )


def load_init_states(task: LiberoTask) -> np.ndarray:
    """The task's fixed initial simulator states, ``(50, 1 + nq + nv)`` float64 (time, qpos, qvel)."""
    import torch

    from envs.files import TORCH_NUMPY_GLOBALS

    # The files are numpy arrays pickled by torch.save inside the installed LIBERO package. weights_only=True
    # rejects numpy objects unless allowed: allow only numpy's array and dtype rebuilders, so a file can
    # hold arrays but never run code.
    with torch.serialization.safe_globals(TORCH_NUMPY_GLOBALS):
        try:
            loaded = torch.load(task.init_states_file, weights_only=True)
        except pickle.UnpicklingError as err:
            reason = next((ln for ln in str(err).splitlines() if "Unpickler error" in ln), str(err)[:200])
            raise ValueError(
                f"{task.init_states_file}: refused to load ({reason.strip()[:200]}); "
                "only arrays are read from initial-state files"
            ) from None
    states = np.asarray(loaded, dtype=np.float64)
    if states.ndim != 2 or states.shape[0] != NUM_INIT_STATES:
        raise ValueError(
            f"{task.init_states_file}: expected {NUM_INIT_STATES} initial states, got {states.shape}"
        )
    return states
