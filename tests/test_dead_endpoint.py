"""A run against a model endpoint where nothing listens stops in seconds, in one line, with exit status 3.

Before: every closed-loop unit spent 23-29 s in the HTTP backend's retries and nothing stopped the run (the
README's `--api-base http://localhost:8000/v1` with no server showed an ETA of 6 h 15 min)."""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path

import pytest

from policies.config_cli import EXIT_UNITS_ERRORED, run_cli


def _closed_port() -> int:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_closed_loop_run_against_a_dead_server_stops_after_the_streak(tmp_path, capsys, monkeypatch):
    from benchmarks import embodied

    monkeypatch.chdir(tmp_path)
    api_base = f"http://127.0.0.1:{_closed_port()}/v1"
    argv = ["nav", "--policy", "mllm", "--model", "m", "--api-base", api_base, "--limit", "12",
            "--max-consecutive-errors", "3", "--no-progress", "--output", "out"]
    began = time.perf_counter()
    code = run_cli(embodied.main, argv)
    elapsed = time.perf_counter() - began
    err = capsys.readouterr().err.strip().splitlines()
    assert code == EXIT_UNITS_ERRORED
    assert err[-1].startswith(f"error: stopped: 3 units in a row ended in an error calling model 'm' at {api_base}; "
                              f"last error: policies.backends.errors.BackendUnavailableError: ")
    assert "Connection refused" in err[-1] and "--resume" in err[-1]
    records = [json.loads(line) for line in next(Path("out").glob("*/*/records.jsonl")).read_text().splitlines()]
    assert [r["status"] for r in records] == ["error"] * 3
    assert max(r["timing"]["wall_s"] for r in records) < 5  # ~1 s each (was 23-29 s)
    assert elapsed < 120


@pytest.mark.parametrize("value", ["-1", "x"])
def test_max_consecutive_errors_is_checked_when_parsed(value, capsys):
    from benchmarks import embodied

    with pytest.raises(SystemExit) as info:  # argparse's own one-line error
        run_cli(embodied.main, ["nav", "--max-consecutive-errors", value])
    assert info.value.code == 2 and "--max-consecutive-errors" in capsys.readouterr().err
