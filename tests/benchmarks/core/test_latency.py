"""Latency-aware closed loop (``--latency``): env steps spent during inference are exact with ``fixed:MS``,
filled with the previous chunk's remaining actions (``continue``) or holding still (``hold``); off by default."""

from collections import deque
from types import SimpleNamespace

import pytest

from benchmarks.core.episode import ActionStream
from benchmarks.core.latency import Latency, latency_stats, parse_latency
from policies.base import Policy


class ChunkPolicy(Policy):
    """Chunks of ``chunk`` labelled actions ``(call, i)``, the first ``execute`` executed (as VLAPolicy does)."""

    name = "chunk-test"

    def __init__(self, chunk: int = 5, execute: int = 2) -> None:
        self.chunk, self.execute, self.queue, self.tail, self.model_calls = chunk, execute, deque(), [], 0

    def reset(self, context):
        self.queue.clear()

    def act(self, observation):
        if not self.queue:
            self.model_calls += 1
            actions = [(self.model_calls, i) for i in range(self.chunk)]
            self.queue.extend(actions[: self.execute])
            self.tail = actions[self.execute :]
        return self.queue.popleft()

    def pending_actions(self):
        return [*self.queue, *self.tail]

    def episode_stats(self):
        return {"model_calls": float(self.model_calls)}


def _env():
    return SimpleNamespace(unwrapped=SimpleNamespace(noop_action=lambda: "hold"))


def _run(latency, steps=12):
    stream = ActionStream(_env(), ChunkPolicy(), latency)
    return [stream.next_action({}) for _ in range(steps)], stream


def test_steps_at_control_rate():
    latency = Latency(100.0, "continue", 30.0)
    assert latency.steps(100.0) == 3  # 100 ms at 30 Hz: exactly 3 periods, no float round-off to 2
    assert Latency(300.0, "hold", 30.0).steps(300.0) == 9 and latency.steps(70.0) == 2
    assert latency.steps(33.0) == latency.steps(0.0) == 0  # shorter than one period: the frozen protocol


def test_fixed_latency_continue_runs_the_previous_chunk_then_holds():
    actions, stream = _run(parse_latency("fixed:100", "continue", 30))
    # call 1: no previous chunk -> 3 held steps; call 2: 3 of call 1's unexecuted tail, ...
    assert actions == [
        "hold",
        "hold",
        "hold",
        (1, 0),
        (1, 1),
        (1, 2),
        (1, 3),
        (1, 4),
        (2, 0),
        (2, 1),
        (2, 2),
        (2, 3),
    ]
    # the third decision (step 10) has spent 2 of its 3 steps when the budget ends
    assert stream.latencies_ms == [100.0] * 3 and stream.latency_steps == 8 and stream.held_steps == 3
    # deterministic
    assert stream.idle_steps == 0 and _run(parse_latency("fixed:100", "continue", 30))[0] == actions


def test_fixed_latency_hold_and_off():
    held, stream = _run(parse_latency("fixed:100", "hold", 30), 10)
    assert held == ["hold"] * 3 + [(1, 0), (1, 1)] + ["hold"] * 3 + [(2, 0), (2, 1)]
    assert stream.held_steps == stream.latency_steps == 6
    off, stream = _run(None, 6)  # default: the frozen-world protocol, one decision per executed pair
    assert off == [(1, 0), (1, 1), (2, 0), (2, 1), (3, 0), (3, 1)]
    assert stream.latencies_ms == [] and stream.latency_record() == {}


def test_latency_in_control_steps_is_exact_in_both_modes():
    """``steps:N`` charges N control steps per decision whatever the rate (a latency curve's x axis), as
    ``fixed:MS`` would with MS = N / rate, but without the round-off of a period that does not divide 1 s."""
    latency = parse_latency("steps:7", "continue", 30)
    assert latency.steps(0.0) == latency.steps(10_000.0) == 7 and latency.describe()["latency"] == "steps:7"
    assert parse_latency("steps:0", "hold", 15).steps(5.0) == 0
    held, stream = _run(parse_latency("steps:3", "hold", 20), 10)  # 3 steps at 20 Hz (150 ms)
    assert held == ["hold"] * 3 + [(1, 0), (1, 1)] + ["hold"] * 3 + [(2, 0), (2, 1)]
    assert (
        stream.latencies_ms == [150.0, 150.0] and stream.latency_record()["latency"]["latency"] == "steps:3"
    )
    continued, stream = _run(parse_latency("steps:3", "continue", 20))
    assert continued == _run(parse_latency("fixed:100", "continue", 30))[0]  # 3 steps either way
    assert stream.held_steps == 3 and stream.latency_steps == 8
    for bad in ("steps", "steps:-1", "steps:2.5", "steps:x", "steps:\u0663"):
        with pytest.raises(ValueError, match="steps:N"):
            parse_latency(bad)


def test_parse_latency_and_stats():
    assert parse_latency(None) is None and parse_latency("off") is None
    assert parse_latency("real").fixed_ms is None
    for bad in ("fixed", "fixed:-1", "fixed:x", "slow"):
        with pytest.raises(ValueError, match="--latency"):
            parse_latency(bad)
    with pytest.raises(ValueError, match="--latency-mode"):
        parse_latency("real", "skip")
    stats = latency_stats([10.0, 20.0, 30.0, 40.0])
    assert (
        stats["decisions"] == 4
        and stats["mean_ms"] == 25.0
        and stats["p50_ms"] == 25.0
        and stats["p90_ms"] == 37.0
    )
    assert latency_stats([])["mean_ms"] is None


def test_tiny_vla_calvin_chain_with_fixed_latency(tiny_vlm):
    """A tiny VLA on the play-table with ``--latency fixed:100``: 3 steps per decision, continued from the
    previous chunk's tail, recorded per subtask; the same chain without latency records none."""
    pytest.importorskip("pybullet")
    from benchmarks.calvin.chain import run_chain
    from envs.calvin import constants as C
    from envs.calvin.env import PlayTableEnv
    from tests.policies.experts.test_calvin import SCENE
    from vla.model import VLAModel
    from vla.policy import VLAPolicy

    model = VLAModel.build(str(tiny_vlm("paligemma")), chunk_size=10, seed=0).eval()
    env = PlayTableEnv(cameras=("static",))
    try:

        def chain(latency):
            policy = VLAPolicy(model, execute_steps=3)
            record = run_chain(
                env,
                policy,
                C.NEUTRAL_ROBOT_OBS,
                SCENE,
                ["open_drawer"],
                ["open the drawer"],
                ep_len=12,
                latency=latency,
            )
            return record["extras"]["subtasks"][0], policy

        subtask, policy = chain(parse_latency("fixed:100", "continue", C.CONTROL_HZ))
        # decisions at steps 0 and 6: 3 held (no previous chunk) + 3 actions, 3 from the tail + 3 actions
        assert policy.model_calls == 2 and subtask["steps"] == 12
        lat = subtask["latency"]
        assert lat["latencies_ms"] == [100.0, 100.0] and lat["steps"] == 6 and lat["held_steps"] == 3
        assert lat["mean_ms"] == lat["p50_ms"] == lat["p90_ms"] == 100.0 and lat["latency"] == "fixed:100"
        plain, policy = chain(None)
        assert "latency" not in plain and policy.model_calls == 4  # steps 0, 3, 6, 9
    finally:
        env.close()


def test_libero_run_with_latency(tmp_path):
    """``python -m benchmarks.libero --latency fixed:100 --latency-mode hold`` at LIBERO's 20 Hz: a policy
    without a model_calls stat decides every call, each decision holds 2 steps, recorded and summarised."""
    pytest.importorskip("robosuite")
    from benchmarks.core import RunDir
    from benchmarks.libero import main

    summary = main(
        [
            "--policy",
            "random",
            "--suite",
            "libero_goal",
            "--tasks",
            "3",
            "--trials-per-task",
            "1",
            "--max-steps",
            "6",
            "--image-size",
            "64",
            "--no-progress",
            "--output",
            str(tmp_path),
            "--latency",
            "fixed:100",
            "--latency-mode",
            "hold",
        ]
    )
    (record,) = RunDir(tmp_path / "libero" / "libero_goal-random").merged_records()
    lat = record["result"]["latency"]
    assert record["result"]["policy_calls"] == 2 and lat["steps"] == lat["held_steps"] == 4  # H H A H H A
    assert lat["latencies_ms"] == [100.0, 100.0] and lat["control_hz"] == 20.0
    assert summary.data["latency"]["decisions"] == 2 and summary.data["latency"]["p90_ms"] == 100.0


class StepPolicy(Policy):
    """One action per call, no model: defines neither ``pending_actions`` nor ``episode_calls``."""

    name = "step-test"

    def reset(self, context):
        pass

    def act(self, observation):
        return "move"


def test_policy_declares_pending_actions_and_episode_calls_with_empty_defaults():
    """Every policy answers both (the loop probes no attribute); one that plans a step at a time without a
    model has nothing pending and no calls, so ``continue`` holds still during inference as ``hold`` does."""
    from benchmarks.core.episode import policy_decisions

    policy = StepPolicy()
    assert policy.pending_actions() == [] and policy.episode_calls() == []
    assert policy_decisions(policy, subtask="x") == []
    stream = ActionStream(_env(), policy, parse_latency("fixed:100", "continue", 30))
    assert [stream.next_action({}) for _ in range(4)] == ["hold"] * 3 + ["move"]
