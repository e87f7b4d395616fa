"""Steps per second of the LIBERO Gymnasium env against the raw LIBERO env, default vs fast rendering.

The raw baseline is the very ``OffScreenRenderEnv`` inside each Gymnasium env (same scene, same render
context), stepped directly: the ratio isolates what the wrapper adds (action check, GL context switch,
success check, observation dict, image flips). Single steps of the four cells (default / fast rendering
x raw / Gymnasium) are interleaved so machine load hits them alike; medians of paired per-step ratios
are reported::

    python bench/libero_speed.py --suite libero_10 --task 0 --image-size 256 --steps 40 --rounds 5
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from benchmarks.core.timing import time_once
from envs.libero import make_libero_env

MODES = ("raw", "gym")


def time_round(
    envs: dict[bool, object], actions: np.ndarray, seed: int
) -> dict[tuple[bool, str], list[float]]:
    """Seconds of every step of each (rendering, mode) cell over one episode, cells interleaved.

    Each action is applied once per cell, cells in rotating order, so load changes on a shared machine
    hit all four alike. Raw steps drive the Gymnasium env's own LIBERO env directly.
    """
    for env in envs.values():
        env.reset(seed=seed, options={"init_state_index": seed % 50, "max_steps": 10**6, "num_steps_wait": 0})
    cells = [(fast, mode) for fast in envs for mode in MODES]
    seconds: dict[tuple[bool, str], list[float]] = {cell: [] for cell in cells}
    for i, action in enumerate(actions):
        for fast, mode in cells[i % len(cells) :] + cells[: i % len(cells)]:
            env = envs[fast]
            env._make_render_context_current()  # untimed: a lone raw env never switches GL contexts
            step = env.raw_env.step if mode == "raw" else env.step
            native = action.astype(np.float64) if mode == "raw" else action
            start = time.perf_counter()
            step(native)
            seconds[(fast, mode)].append(time.perf_counter() - start)
    return seconds


def wrapper_work_ms(env, repeats: int = 200) -> float:
    """Milliseconds per step of what the wrapper adds, timed alone on one raw observation: a precise
    estimate of the overhead that the interleaved step timings (noisy on a shared machine) bound."""
    from envs.libero.env import _check_action

    raw_observation, _, _, _ = env.raw_env.step(np.zeros(7))
    action = np.zeros(7, np.float32)
    start = time.perf_counter()
    for _ in range(repeats):
        _check_action(action)
        env._make_render_context_current()
        env.evaluate()
        env._observation(raw_observation)
    return (time.perf_counter() - start) / repeats * 1000


def time_reset(env, seed: int) -> float:
    """Seconds for one soft reset with the protocol's 10 settle steps."""
    return time_once(lambda: env.reset(seed=seed, options={"init_state_index": seed % 50}))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--suite", default="libero_10")
    parser.add_argument("--task", type=int, default=0)
    parser.add_argument("--image-size", type=int, default=256)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()

    envs = {
        fast: make_libero_env(args.suite, args.task, image_size=args.image_size, fast_render=fast)
        for fast in (False, True)
    }
    seconds: dict[tuple[bool, str], list[float]] = {(fast, mode): [] for fast in envs for mode in MODES}
    resets: dict[bool, list[float]] = {fast: [] for fast in envs}
    rng = np.random.default_rng(0)
    try:
        for r in range(args.rounds):
            actions = rng.uniform(-1, 1, (args.steps, 7)).astype(np.float32)
            for cell, times in time_round(envs, actions, seed=r).items():
                seconds[cell].extend(times)
            for fast, env in envs.items():
                resets[fast].append(time_reset(env, seed=r))
            print(f"round {r + 1}/{args.rounds} done", flush=True)
        extra_ms = wrapper_work_ms(envs[True])
    finally:
        for env in envs.values():
            env.close()
    report(
        args,
        {k: np.asarray(v) for k, v in seconds.items()},
        {k: statistics.median(v) for k, v in resets.items()},
    )
    fast_step_ms = 1000 * statistics.median(seconds[(True, "raw")])
    print(
        f"wrapper work alone: {extra_ms:.3f} ms/step = {extra_ms / fast_step_ms * 100:.2f}% of a fast raw step"
    )


def report(args, seconds: dict[tuple[bool, str], np.ndarray], reset_s: dict[bool, float]) -> None:
    """Rates from median step times; wrapper cost and rendering speed-up from medians of paired ratios
    (step i of one cell against step i of another), which are robust to load spikes."""
    print(
        f"\nLIBERO {args.suite} task {args.task}, {args.image_size}x{args.image_size}, two cameras, "
        f"{args.steps} steps x {args.rounds} rounds"
    )
    print(
        f"{'rendering':<10}{'raw LIBERO steps/s':>20}{'Gymnasium steps/s':>20}{'wrapper cost':>14}{'reset+settle s':>16}"
    )
    for fast in (False, True):
        raw, gym = seconds[(fast, "raw")], seconds[(fast, "gym")]
        cost = np.median(gym / raw) - 1
        print(
            f"{'fast' if fast else 'default':<10}{1 / np.median(raw):>20.2f}{1 / np.median(gym):>20.2f}"
            f"{cost * 100:>13.1f}%{reset_s[fast]:>16.2f}"
        )
    for mode in MODES:
        speedup = np.median(seconds[(False, mode)] / seconds[(True, mode)])
        print(f"fast / default rendering ({mode}): {speedup:.2f}x")


if __name__ == "__main__":
    main()
