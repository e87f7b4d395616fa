import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import pytest

from benchmarks.core import (
    InProcessExecutor,
    ProcessExecutor,
    ResumeError,
    RunDir,
    WorkerInitError,
    comparable,
    run_benchmark,
)
from benchmarks.core.executors import threads_per_worker, usable_cores
from benchmarks.core.streak import ErrorStreak, ErrorStreakStop, describe_endpoint
from benchmarks.core.work import WorkUnit
from benchmarks.core.worker import StepProgress
from policies.config_cli import EXIT_UNITS_ERRORED, arg, parse_config
from tests.runner_fixtures import CartPoleBenchmark, CartPoleConfig, threads_worker


def run(tmp_path, name="run", workers=1, **config):
    bench = CartPoleBenchmark(CartPoleConfig(marker_dir=str(tmp_path), **config))
    executor = InProcessExecutor() if workers == 1 else ProcessExecutor(workers, max_retries=1)
    summary = run_benchmark(bench, tmp_path / name, executor=executor, progress=False)
    return summary, RunDir(tmp_path / name)


def test_in_process_run_writes_the_output_folder(tmp_path):
    _summary, out = run(tmp_path)
    records = out.merged_records()
    assert [r["key"] for r in records] == [f"ep-{i:03d}" for i in range(6)]
    assert all(r["status"] == "ok" and r["result"]["steps"] >= 8 for r in records)
    manifest = json.loads(out.manifest.read_text())
    assert manifest["benchmark"] == "cartpole" and manifest["config"]["episodes"] == 6
    assert manifest["git"]["commit"] and "gymnasium" in manifest["packages"]
    data = json.loads(out.summary_json.read_text())
    assert data["episodes"] == 6 and data["run"] == {
        "complete": True,
        "units_total": 6,
        "units_completed": 6,
        "units_errored": 0,
        "errored_keys": [],
    }
    assert out.summary_md.read_text().startswith("| mean return | errored |")


def test_same_seed_same_records_and_different_seed_differs(tmp_path):
    _, a = run(tmp_path, "a")
    _, b = run(tmp_path, "b")
    _, c = run(tmp_path, "c", seed=1)
    assert [comparable(r) for r in a.merged_records()] == [comparable(r) for r in b.merged_records()]
    assert [r["result"] for r in a.merged_records()] != [r["result"] for r in c.merged_records()]


def test_two_processes_give_the_single_process_results(tmp_path):
    _, one = run(tmp_path, "one")
    _, two = run(tmp_path, "two", workers=2)
    assert [comparable(r) for r in two.merged_records()] == [comparable(r) for r in one.merged_records()]
    assert {r["timing"]["worker"] for r in two.merged_records()} <= {"p0", "p1"}


def test_each_worker_process_gets_its_share_of_the_cores(monkeypatch):
    """Two workers on two cores each ran torch with a thread per core (8.6 decisions/s between two tiny
    VLAs against 40 with one thread each); now each gets cores / workers, unless OMP_NUM_THREADS is set."""
    cores = usable_cores()
    assert threads_per_worker(2, {}) == max(1, cores // 2) and threads_per_worker(4 * cores, {}) == 1
    assert threads_per_worker(2, {"OMP_NUM_THREADS": "3"}) is None  # the user's choice stands
    units = [WorkUnit(index=i, key=f"u{i}", seed=i) for i in range(2)]

    def seen() -> list[tuple[int, str]]:
        records = ProcessExecutor(2).run(threads_worker, units)
        return sorted((r["result"]["torch"], r["result"]["omp"]) for r in records)

    share = max(1, cores // 2)
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    assert seen() == [(share, str(share))] * 2
    monkeypatch.setenv("OMP_NUM_THREADS", str(cores))  # the user's choice, here every core for each
    assert seen() == [(cores, str(cores))] * 2


def test_crashed_worker_loses_only_its_unit(tmp_path):
    _, out = run(tmp_path, workers=2, crash={"ep-001": "once", "ep-004": "always"})
    records = {r["key"]: r for r in out.merged_records()}
    assert len(records) == 6
    assert records["ep-001"]["status"] == "ok" and records["ep-001"]["attempts"] == 2
    assert records["ep-004"]["status"] == "error" and records["ep-004"]["attempts"] == 2
    assert "worker process died (exit code -9)" in records["ep-004"]["error"]
    assert json.loads(out.summary_json.read_text())["run"]["errored_keys"] == ["ep-004"]


def test_exception_in_a_unit_is_recorded_with_its_traceback(tmp_path):
    _, out = run(tmp_path, raise_on=["ep-002"])
    records = {r["key"]: r for r in out.merged_records()}
    assert (
        records["ep-002"]["status"] == "error" and "ValueError: bad unit ep-002" in records["ep-002"]["error"]
    )
    assert all(records[k]["status"] == "ok" for k in records if k != "ep-002")


class Interrupted(Exception):
    pass


class StopAfter(InProcessExecutor):
    def __init__(self, n):
        self.n = n

    def run(self, factory, units) -> Iterator[dict]:
        for i, record in enumerate(super().run(factory, units)):
            if i == self.n:
                raise Interrupted
            yield record


def test_resume_skips_finished_units(tmp_path):
    config = CartPoleConfig(marker_dir=str(tmp_path))
    with pytest.raises(Interrupted):
        run_benchmark(CartPoleBenchmark(config), tmp_path / "r", executor=StopAfter(3), progress=False)
    with (tmp_path / "r" / "records.jsonl").open("a") as f:
        f.write('{"index": 3, "key": "ep-0')  # a line cut off by the interruption
    (tmp_path / "runs.log").unlink()
    run_benchmark(
        CartPoleBenchmark(config), tmp_path / "r", resume=True, executor=InProcessExecutor(), progress=False
    )
    assert (tmp_path / "runs.log").read_text().split() == ["ep-003", "ep-004", "ep-005"]
    _, fresh = run(tmp_path, "fresh")
    assert [comparable(r) for r in RunDir(tmp_path / "r").merged_records()] == [
        comparable(r) for r in fresh.merged_records()
    ]
    manifest = json.loads((tmp_path / "r" / "manifest.json").read_text())
    assert len(manifest["resumed_from"]) == 1


def test_existing_results_need_resume(tmp_path):
    run(tmp_path, "x")
    with pytest.raises(ResumeError, match="pass --resume"):
        run(tmp_path, "x")


def test_resume_refuses_a_changed_configuration(tmp_path):
    run(tmp_path, "x")
    bench = CartPoleBenchmark(CartPoleConfig(marker_dir=str(tmp_path), seed=5))
    with pytest.raises(ResumeError, match=r"--seed \(0 -> 5\) changed since that run; .* --run-name"):
        run_benchmark(bench, tmp_path / "x", resume=True, executor=InProcessExecutor(), progress=False)
    # runtime-only fields such as the worker count may change
    bench = CartPoleBenchmark(CartPoleConfig(marker_dir=str(tmp_path), workers=3))
    run_benchmark(bench, tmp_path / "x", resume=True, executor=InProcessExecutor(), progress=False)


def test_resume_accepts_a_setting_the_old_run_predates_at_its_default(tmp_path):
    run(tmp_path, "x")
    manifest_path = tmp_path / "x" / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    del manifest["config"]["seed"]  # (a run made before the setting existed)
    manifest_path.write_text(json.dumps(manifest))
    bench = CartPoleBenchmark(CartPoleConfig(marker_dir=str(tmp_path), seed=5))
    with pytest.raises(ResumeError, match=r"--seed \(None -> 5\) changed since that run"):
        run_benchmark(bench, tmp_path / "x", resume=True, executor=InProcessExecutor(), progress=False)
    bench = CartPoleBenchmark(CartPoleConfig(marker_dir=str(tmp_path)))  # the default: as the old run ran
    run_benchmark(bench, tmp_path / "x", resume=True, executor=InProcessExecutor(), progress=False)


def test_worker_that_cannot_be_built_stops_the_run(tmp_path):
    bench = CartPoleBenchmark(CartPoleConfig())

    def broken_factory():
        raise OSError("no such checkpoint")

    bench.worker_factory = lambda: broken_factory
    with pytest.raises(WorkerInitError, match="no such checkpoint"):
        run_benchmark(bench, tmp_path / "y", executor=InProcessExecutor(), progress=False)


@dataclass
class DemoConfig:
    """Demo command."""

    num_sequences: int = arg(1000, "chains")
    policy: str = arg("expert", "policy")
    resume: bool = arg(False, "continue")
    backend: Literal["builtin", "official"] = arg("builtin", "which env")
    checkpoint: str | None = arg(None, "model dir")
    rate: float = arg(0.5, "a float")


def test_config_cli():
    cfg = parse_config(
        DemoConfig, ["--num-sequences", "10", "--resume", "--backend", "official", "--rate", "2"]
    )
    assert cfg == DemoConfig(10, "expert", True, "official", None, 2.0)
    assert parse_config(DemoConfig, ["--checkpoint", "/x", "--no-resume"]).checkpoint == "/x"
    with pytest.raises(SystemExit):
        parse_config(DemoConfig, ["--backend", "other"])


def test_decisions_jsonl_one_run_per_unit_across_workers_resume_and_retries(tmp_path):
    _, out = run(tmp_path, workers=2, raise_once=["ep-002"])
    lines = out.load_decisions()
    assert sorted((d["index"], d["call"]) for d in lines) == [
        (i, c) for i in range(6) for c in range(1 if i == 2 else 3)
    ]
    failed = [d for d in lines if d["key"] == "ep-002"]
    assert [d["unit_status"] for d in failed] == ["error"]  # what was decided before the unit raised is kept
    assert all("decisions" not in r for r in out.merged_records())
    # --retry-errors runs ep-002 again: its old lines are replaced, every other unit keeps its own.
    bench = CartPoleBenchmark(CartPoleConfig(marker_dir=str(tmp_path), raise_once=["ep-002"]))
    run_benchmark(
        bench, out.path, resume=True, retry_errors=True, executor=InProcessExecutor(), progress=False
    )
    again = out.load_decisions()
    assert [d for d in again if d["key"] != "ep-002"] == [d for d in lines if d["key"] != "ep-002"]
    assert [(d["call"], d["unit_status"]) for d in again if d["key"] == "ep-002"] == [
        (0, "ok"),
        (1, "ok"),
        (2, "ok"),
    ]


def test_limit_then_resume_extends_the_prefix(tmp_path):
    run(tmp_path, "x", limit=2)
    assert (tmp_path / "runs.log").read_text().split() == ["ep-000", "ep-001"]
    out = RunDir(tmp_path / "x")
    assert json.loads(out.summary_json.read_text())["run"]["units_total"] == 2
    bench = CartPoleBenchmark(CartPoleConfig(marker_dir=str(tmp_path), limit=4))
    run_benchmark(bench, out.path, resume=True, executor=InProcessExecutor(), progress=False)
    assert (tmp_path / "runs.log").read_text().split() == ["ep-000", "ep-001", "ep-002", "ep-003"]
    _, fresh = run(tmp_path, "fresh", limit=4)
    assert [comparable(r) for r in out.merged_records()] == [comparable(r) for r in fresh.merged_records()]
    # back to 3: the summary covers the run's first 3 units only
    bench = CartPoleBenchmark(CartPoleConfig(marker_dir=str(tmp_path), limit=3))
    summary = run_benchmark(bench, out.path, resume=True, executor=InProcessExecutor(), progress=False)
    assert summary.data["episodes"] == 3 and summary.data["run"]["units_total"] == 3


def test_a_run_whose_every_unit_failed_has_no_score(tmp_path):
    summary, out = run(tmp_path, episodes=3, raise_on=["ep-000", "ep-001", "ep-002"])
    assert summary.data["mean_return"] is None
    assert summary.data["run"] == {
        "complete": False,
        "units_total": 3,
        "units_completed": 0,
        "units_errored": 3,
        "errored_keys": ["ep-000", "ep-001", "ep-002"],
    }
    text = out.summary_md.read_text()
    assert "| n/a | 3 / 3 |" in text and "**Incomplete run**: 3 of 3 unit(s) ended in an error" in text


def test_resume_refuses_a_folder_whose_manifest_is_missing_or_damaged(tmp_path):
    """Without its manifest nothing says which configuration wrote the records: a seed-1 resume must not
    take seed-0 records as its own. The fix offered never deletes anything."""
    _, out = run(tmp_path, "x")
    before = out.records.read_bytes()
    out.manifest.unlink()
    bench = CartPoleBenchmark(CartPoleConfig(marker_dir=str(tmp_path), seed=1))
    with pytest.raises(
        ResumeError, match=r"manifest.json is missing.*restore manifest.json.*--run-name"
    ) as info:
        run_benchmark(bench, out.path, resume=True, executor=InProcessExecutor(), progress=False)
    assert "delete" not in str(info.value) and "\n" not in str(info.value)
    for damaged in (b'{"config": {"se', b"\xff\xfe", b"[1, 2]", b'{"config": 3}'):
        out.manifest.write_bytes(damaged)
        with pytest.raises(
            ResumeError, match=r"manifest.json is (damaged|not a run manifest).*restore"
        ) as info:
            run_benchmark(bench, out.path, resume=True, executor=InProcessExecutor(), progress=False)
        assert "delete" not in str(info.value)
    assert out.records.read_bytes() == before  # refused before touching anything


def test_resume_quarantines_damaged_record_lines_and_reruns_their_units(tmp_path, capsys):
    _, out = run(tmp_path, "x")
    good = out.records.read_bytes().splitlines()
    wrong_key = json.loads(good[1])
    wrong_key["key"] = ["ep-001"]  # a key of the wrong type (it made resume raise TypeError)
    wrong_index = json.loads(good[4])
    wrong_index["index"] = "4"
    damaged = [
        b'{"index": 2, "key": "ep-002", "status": "ok", "result": {"ret\xff\xfe"}',
        json.dumps(wrong_key).encode(),
        json.dumps(wrong_index).encode(),
        b"{}",
    ]
    lines = [good[0], damaged[0], damaged[1], good[3], damaged[2], damaged[3], good[5], b'{"index": 2, "ke']
    out.records.write_bytes(b"\n".join(lines))  # the last line torn by an interruption
    (tmp_path / "runs.log").unlink()
    capsys.readouterr()
    bench = CartPoleBenchmark(CartPoleConfig(marker_dir=str(tmp_path)))
    run_benchmark(bench, out.path, resume=True, executor=InProcessExecutor(), progress=False)
    err = capsys.readouterr().err
    assert "records.jsonl: 5 damaged line(s) (line 2, 3, 5, 6, 8) moved to records.damaged.jsonl" in err
    quarantine = out.path / "records.damaged.jsonl"
    assert quarantine.read_bytes() == b"".join(line + b"\n" for line in [*damaged, b'{"index": 2, "ke'])
    assert (tmp_path / "runs.log").read_text().split() == ["ep-001", "ep-002", "ep-004"]
    assert [r["key"] for r in out.merged_records()] == [f"ep-{i:03d}" for i in range(6)]
    assert all(json.loads(line) for line in out.records.read_text().splitlines())
    assert json.loads(out.manifest.read_text())["damaged_lines"] == {"records.jsonl": [2, 3, 5, 6, 8]}


REPO = Path(__file__).resolve().parents[3]
_PARENT = """
from benchmarks.core import ProcessExecutor, run_benchmark
from tests.runner_fixtures import CartPoleBenchmark, CartPoleConfig
bench = CartPoleBenchmark(CartPoleConfig(episodes=4, heartbeat={beat!r}))
run_benchmark(bench, {run!r}, executor=ProcessExecutor(2), progress=False)
"""


def _beating_pids(path: Path) -> set[int]:
    return {int(x) for x in path.read_text().split()} if path.exists() else set()


def test_workers_stop_within_a_second_of_their_parent_being_killed(tmp_path):
    """kill -9 of the runner: its workers stop at once instead of finishing their unit (a model call each
    heartbeat, billed by a paid API); before, they beat on for the unit's whole 60 s."""
    beat = tmp_path / "beats"
    code = _PARENT.format(beat=str(beat), run=str(tmp_path / "run"))
    parent = subprocess.Popen(
        [sys.executable, "-c", code], cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)}
    )
    try:
        deadline = time.monotonic() + 60
        while len(_beating_pids(beat)) < 2 and time.monotonic() < deadline and parent.poll() is None:
            time.sleep(0.1)
        assert len(_beating_pids(beat)) == 2, "the two workers never started"
        parent.send_signal(signal.SIGKILL)
        parent.wait(timeout=10)
        time.sleep(1.0)
        size = beat.stat().st_size
        time.sleep(1.5)
        assert beat.stat().st_size == size, "workers kept running after their parent was killed"
    finally:
        parent.kill()
        for pid in _beating_pids(beat):  # the workers this test started, if they outlived the parent
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def test_a_streak_of_errored_units_stops_the_run_in_one_line(tmp_path):
    """N units in a row in an error (a dead server) stop the run: what finished is kept and summarised, the
    message names the endpoint and the last error; a success in between starts the count again."""
    failing = ["ep-001", *(f"ep-{i:03d}" for i in range(3, 12))]
    bench = CartPoleBenchmark(CartPoleConfig(marker_dir=str(tmp_path), episodes=12, raise_on=failing))
    with pytest.raises(ErrorStreakStop) as info:
        run_benchmark(
            bench, tmp_path / "s", executor=InProcessExecutor(), progress=False, max_consecutive_errors=3
        )
    message = str(info.value)
    assert "\n" not in message and info.value.exit_status == EXIT_UNITS_ERRORED
    # no policy, no endpoint
    assert message.startswith("stopped: 3 units in a row ended in an error; last error")
    assert "last error: ValueError: bad unit ep-005. Fix the cause and continue with --resume" in message
    out = RunDir(tmp_path / "s")
    assert [r["key"] for r in out.merged_records()] == [f"ep-{i:03d}" for i in range(6)]
    assert json.loads(out.summary_json.read_text())["run"]["units_errored"] == 4
    # 0 never stops; --resume (with --retry-errors) continues the same run
    run_benchmark(
        bench, out.path, resume=True, executor=InProcessExecutor(), progress=False, max_consecutive_errors=0
    )
    assert len(out.merged_records()) == 12


def test_a_streak_stops_worker_processes_without_waiting_for_their_units(tmp_path):
    bench = CartPoleBenchmark(
        CartPoleConfig(marker_dir=str(tmp_path), episodes=40, raise_on=[f"ep-{i:03d}" for i in range(40)])
    )
    began = time.perf_counter()
    with pytest.raises(ErrorStreakStop, match="2 units in a row"):
        run_benchmark(
            bench, tmp_path / "p", executor=ProcessExecutor(2), progress=False, max_consecutive_errors=2
        )
    assert len(RunDir(tmp_path / "p").merged_records()) < 40 and time.perf_counter() - began < 30


def test_endpoint_named_in_the_stop_line():
    assert describe_endpoint({"model": "m", "api_base": "http://127.0.0.1:8000/v1"}) == (
        "model 'm' at http://127.0.0.1:8000/v1"
    )
    assert describe_endpoint({"checkpoint": "/ckpt/x"}, "vla") == "checkpoint /ckpt/x"
    streak = ErrorStreak(2, endpoint="model 'm' at http://h/v1")
    streak.add("Traceback (most recent call last):\n  File ...\nBackendUnavailableError: refused\n")
    streak.check()
    streak.add(None)
    streak.add("x")
    streak.check()  # the success ended the streak
    streak.add("BackendUnavailableError: " + "y" * 1000)
    with pytest.raises(
        ErrorStreakStop,
        match=r"2 units in a row .* calling model 'm' at http://h/v1; last error: "
        r"BackendUnavailableError: y+\.\.\.\. Fix",
    ):
        streak.check()


def test_step_progress_reports_at_most_once_per_interval():
    now, lines = [0.0], []
    hook = StepProgress("chain-0007", lines.append, interval_s=2.0, clock=lambda: now[0])
    for t in (0.0, 0.5, 1.9, 2.0, 2.5, 3.9, 4.1):  # the reset's observation, then steps 1..6
        now[0] = t
        hook({}, ["subtask 2: open the drawer and take out the pink block", "step"])
    assert lines == [
        "chain-0007: step 3, subtask 2: open the drawer and take o...",
        "chain-0007: step 6, subtask 2: open the drawer and take o...",
    ]


@pytest.mark.parametrize("workers", [1, 2])
def test_a_long_unit_reports_its_steps_while_it_runs(tmp_path, workers):
    """A unit of ~3 s (a slow model at each step) reports its step count every 2 s; a short one says nothing."""
    bench = CartPoleBenchmark(CartPoleConfig(marker_dir=str(tmp_path), episodes=2, step_s=0.08))
    executor = InProcessExecutor() if workers == 1 else ProcessExecutor(workers)
    lines: list[str] = []
    executor.unit_progress = lines.append
    records = list(executor.run(bench.worker_factory(), bench.units()))
    assert [r["status"] for r in records] == ["ok", "ok"]
    assert lines and all(
        re.fullmatch(r"ep-00[01]: step \d+, balance the pole \(ep-00[01]\)", x) for x in lines
    )
    assert len(lines) <= 2 * records[0]["timing"]["wall_s"] / 2.0 + 2


def test_the_progress_line_shows_the_running_unit(tmp_path, capsys):
    bench = CartPoleBenchmark(CartPoleConfig(marker_dir=str(tmp_path), episodes=1, step_s=0.08))
    run_benchmark(bench, tmp_path / "bar", executor=InProcessExecutor(), progress=True)
    err = capsys.readouterr().err
    assert re.search(r"now=ep-000: step \d+, balance the pole", err)
    assert err.count("now=") <= 2  # not a log flood: a log file gets one redraw per minute
