"""Speed of CALVIN chain generation, as ratios against baselines measured in the same run.

    python bench/calvin_sequences.py [--repeats 3]

Baselines: (1) the upstream-style loop (global ``np.random.seed`` + one ``np.random.choice`` per draw +
a dict-based validity check) on the first chain of the first 12 states, against the batched generator
on the same work; (2) drawing 10^7 raw 32-bit words from the legacy generator, against the full
1000-chain generation; (3) a cache hit against a full generation. Medians over the repeats.
"""

import argparse
import os
import statistics
import tempfile

import numpy as np

from benchmarks.core.timing import time_once
from envs.calvin import sequences as seq
from envs.calvin.instructions import CALVIN_TASKS

SUBSET = 12


def upstream_style_first_chains() -> list:
    saved = np.random.get_state()
    found = []
    for index, state in enumerate(seq.symbolic_initial_states()[:SUBSET]):
        np.random.seed(index)
        while True:
            tasks = tuple(np.random.choice(list(CALVIN_TASKS), 5, replace=False))
            if seq.is_valid_chain(state, tasks):
                found.append(tuple(map(str, tasks)))
                break
    np.random.set_state(saved)
    return found


def batched_first_chains() -> list:
    states = [tuple(s.values()) for s in seq.symbolic_initial_states()[:SUBSET]]
    return [seq._draw_chains(index, state, 1)[0] for index, state in enumerate(states)]


def raw_words() -> None:
    np.random.RandomState(0).randint(0, 2**32, size=10**7, dtype=np.uint32)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    repeats = parser.parse_args().repeats
    seq._transition_table_arrays()
    assert upstream_style_first_chains() == batched_first_chains()
    rows = {
        "upstream-style loop, 12 first chains": [],
        "batched, 12 first chains": [],
        "10^7 raw words": [],
        "get_sequences(1000), no cache": [],
        "get_sequences(1000), cache hit": [],
    }
    with tempfile.TemporaryDirectory() as cache:
        for _ in range(repeats):
            rows["upstream-style loop, 12 first chains"].append(time_once(upstream_style_first_chains))
            rows["batched, 12 first chains"].append(time_once(batched_first_chains))
            rows["10^7 raw words"].append(time_once(raw_words))
            rows["get_sequences(1000), no cache"].append(
                time_once(lambda: seq.get_sequences(1000, use_cache=False))
            )
            os.environ[seq.CACHE_DIR_ENV] = cache
            seq.get_sequences(1000)
            rows["get_sequences(1000), cache hit"].append(time_once(lambda: seq.get_sequences(1000)))
    median = {name: statistics.median(values) for name, values in rows.items()}
    for name, value in median.items():
        print(f"{name:40s} {value * 1000:10.1f} ms (median of {repeats})")
    print(
        f"speed-up of batched draws over the upstream-style loop: "
        f"{median['upstream-style loop, 12 first chains'] / median['batched, 12 first chains']:.1f}x"
    )
    print(
        f"full generation / 10^7 raw words: "
        f"{median['get_sequences(1000), no cache'] / median['10^7 raw words']:.0f}x"
    )
    print(
        f"full generation / cache hit: "
        f"{median['get_sequences(1000), no cache'] / median['get_sequences(1000), cache hit']:.0f}x"
    )


if __name__ == "__main__":
    main()
