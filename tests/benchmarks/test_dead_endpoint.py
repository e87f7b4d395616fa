"""A run against a dead or wrong model endpoint ends in seconds, in one line.

Before: every closed-loop unit spent 23-29 s in the HTTP backend's retries and nothing stopped the run (the
README's `--api-base http://localhost:8000/v1` with no server showed an ETA of 6 h 15 min). Now nothing
listening is found by the preflight (exit 2, before any worker); a server that answers but fails every
request (a wrong server, or one that died mid-run) stops the run after the streak (exit 3)."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from policies.config_cli import EXIT_BAD_INPUT, EXIT_UNITS_ERRORED, run_cli


def _closed_port() -> int:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class _NotAModelServer(BaseHTTPRequestHandler):
    """A web server on the port that is not an OpenAI-compatible endpoint: every request gets 404."""

    def do_POST(self) -> None:
        self.send_error(404, "no such route")

    def log_message(self, *args: object) -> None:  # keep the test output clean
        pass


@pytest.fixture
def wrong_server() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _NotAModelServer)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()


def test_nothing_listening_is_refused_before_any_worker_starts(tmp_path, capsys, monkeypatch):
    from benchmarks import embodied

    monkeypatch.chdir(tmp_path)
    api_base = f"http://127.0.0.1:{_closed_port()}/v1"
    code = run_cli(
        embodied.main, ["nav", "--policy", "mllm", "--model", "m", "--api-base", api_base, "--no-progress"]
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert (
        code == EXIT_BAD_INPUT
        and len(err) == 1
        and err[0].startswith(f"error: --api-base {api_base}: nothing answers")
    )
    assert not Path("outputs").exists()  # no run folder: nothing started


def test_closed_loop_run_against_a_wrong_server_stops_after_the_streak(
    tmp_path, capsys, monkeypatch, wrong_server
):
    from benchmarks import embodied

    monkeypatch.chdir(tmp_path)
    argv = [
        "nav",
        "--policy",
        "mllm",
        "--model",
        "m",
        "--api-base",
        wrong_server,
        "--limit",
        "12",
        "--max-consecutive-errors",
        "3",
        "--no-progress",
        "--output",
        "out",
    ]
    began = time.perf_counter()
    code = run_cli(embodied.main, argv)
    elapsed = time.perf_counter() - began
    err = capsys.readouterr().err.strip().splitlines()
    assert code == EXIT_UNITS_ERRORED
    assert err[-1].startswith(
        f"error: stopped: 3 units in a row ended in an error calling model 'm' at {wrong_server}; "
        "last error: "
    )
    assert "HTTP 404" in err[-1] and "--resume" in err[-1]
    records = [
        json.loads(line) for line in next(Path("out").glob("*/*/records.jsonl")).read_text().splitlines()
    ]
    assert [r["status"] for r in records] == ["error"] * 3
    assert max(r["timing"]["wall_s"] for r in records) < 5  # no retries for a request the server refuses
    assert elapsed < 120


@pytest.mark.parametrize("value", ["-1", "x"])
def test_max_consecutive_errors_is_checked_when_parsed(value, capsys):
    from benchmarks import embodied

    with pytest.raises(SystemExit) as info:  # argparse's own one-line error
        run_cli(embodied.main, ["nav", "--max-consecutive-errors", value])
    assert info.value.code == 2 and "--max-consecutive-errors" in capsys.readouterr().err
