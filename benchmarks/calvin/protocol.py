"""The protocol's units: the published evaluation chains in their order, and ``--tasks`` episodes drawn from them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from policies.config_cli import InputError


def evaluation_chains(n: int) -> list[tuple[dict[str, Any], tuple[str, ...]]]:
    """The first ``n`` of the 1000 published evaluation chains (all of CALVIN's own list beyond 1000).

    Upstream's ``get_sequences(n)`` re-splits a smaller ``n`` over the 192 states, which gives different
    chains; a prefix keeps a short run comparable with (and resumable into) the full evaluation.
    """
    from envs.calvin.sequences import NUM_SEQUENCES, get_sequences

    if n < 1:
        raise InputError(f"--num-sequences must be at least 1, got {n}")
    return get_sequences(NUM_SEQUENCES)[:n] if n <= NUM_SEQUENCES else get_sequences(n)


def parse_tasks(text: str) -> tuple[str, ...]:
    """``--tasks`` as task names, checked: each must be a CALVIN task that starts some evaluation chain."""
    from envs.calvin.sequences import NUM_SEQUENCES, get_sequences
    from envs.calvin.tasks import TASKS

    chosen = tuple(dict.fromkeys(t.strip() for t in text.split(",") if t.strip()))
    unknown = [t for t in chosen if t not in TASKS]
    if unknown or not chosen:
        raise ValueError(
            f"--tasks {','.join(unknown) or repr(text)}: unknown CALVIN task; valid: {', '.join(TASKS)}"
        )
    starters = {tasks[0] for _, tasks in get_sequences(NUM_SEQUENCES)}
    alone = [t for t in TASKS if t in starters]
    never = [t for t in chosen if t not in starters]
    if never:
        raise ValueError(
            f"--tasks {','.join(never)}: no evaluation chain starts with it (it needs an earlier subtask, "
            f"e.g. a block in the hand); tasks that can be evaluated alone: {', '.join(alone)}"
        )
    return chosen


def task_episodes(tasks: Sequence[str], n: int) -> list[tuple[int, dict[str, Any], tuple[str, ...]]]:
    """``(chain index, initial state, (task,))`` for the first ``n`` public evaluation chains whose first
    subtask is one of ``tasks``: CALVIN's own initial states, in which that subtask is feasible as it is."""
    from envs.calvin.sequences import NUM_SEQUENCES, get_sequences

    if n < 1:
        raise ValueError(f"--num-sequences must be at least 1, got {n}")
    chosen = set(tasks)
    found = [
        (i, state, seq[:1]) for i, (state, seq) in enumerate(get_sequences(NUM_SEQUENCES)) if seq[0] in chosen
    ]
    return found[:n]
