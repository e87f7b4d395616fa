"""Every command answers bad input with one line that names the input, and exit status 2, before any
worker starts.

The table (``tests/bad_inputs.py``) walks each CLI's entry point in-process through the shared handler
(``run_cli``), which is what ``python -m ...`` runs; a few cases also run as real subprocesses to pin that
wiring.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from policies.config_cli import EXIT_BAD_INPUT, run_cli
from tests.bad_inputs import BAD_INPUTS, MODULES, case_id, dead_endpoint, fill

ROOT = Path(__file__).resolve().parent.parent


def _mains():
    from benchmarks import calvin, command, embodied, libero
    from benchmarks.goal_scoring import cli as goal
    from benchmarks.static import __main__ as static
    from policies.serve import __main__ as serve
    from vla import demos, train
    from vla.data import calvin_embed

    return {
        "calvin": calvin.main,
        "libero": libero.main,
        "embodied": embodied.main,
        "static": static.main,
        "goal": goal.main,
        "serve": serve.main,
        "train": train.main,
        "demos": demos.main,
        "embed": calvin_embed.main,
        "arena": command.main,
    }


def invoke(command: str, argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    """Exit status and stderr of one command run through the shared handler (argparse exits included)."""
    try:
        code = run_cli(_mains()[command], argv)
    except SystemExit as e:  # argparse's own (one-line) usage errors
        code = e.code if isinstance(e.code, int) else 1
    return code, capsys.readouterr().err


@pytest.fixture
def no_workers(monkeypatch):
    """Starting a worker (or the static runner) fails the test: every bad input must be found before."""
    import benchmarks.core.runner as runner
    import benchmarks.static.__main__ as static

    def started(*args, **kwargs):
        raise AssertionError("a worker was about to start: the input was not checked up front")

    monkeypatch.setattr(runner, "make_executor", started)
    monkeypatch.setattr(static, "run", started)


@pytest.mark.parametrize(
    ("command", "argv", "named"), BAD_INPUTS, ids=[case_id(c, a) for c, a, _ in BAD_INPUTS]
)
def test_bad_input_gets_one_line_naming_it(command, argv, named, capsys, tmp_path, monkeypatch, no_workers):
    """Exit status 2, one line on stderr naming the input, no traceback, and no worker started."""
    monkeypatch.chdir(tmp_path)
    if "cuda:99" in argv:
        pytest.importorskip("torch")
    dead = dead_endpoint()
    code, err = invoke(command, [fill(a, tmp_path, dead) for a in argv], capsys)
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == EXIT_BAD_INPUT, (code, err)
    assert len(lines) == 1, err
    assert fill(named, tmp_path, dead) in lines[0], lines[0]
    assert "Traceback" not in err


def test_the_table_covers_every_command_and_many_inputs():
    assert {c for c, _, _ in BAD_INPUTS} == set(MODULES) == set(_mains())
    assert len(BAD_INPUTS) >= 120
    assert len({case_id(c, a) for c, a, _ in BAD_INPUTS}) == len(BAD_INPUTS)


def test_a_corrupt_response_cache_is_named_before_any_worker_starts(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    cache = tmp_path / "responses.sqlite"
    cache.write_bytes(b"this is not a database" * 100)
    code, err = invoke(
        "calvin", ["--policy", "mllm", "--model", "/no/model", "--cache-path", str(cache)], capsys
    )
    assert code == EXIT_BAD_INPUT and "--cache-path" in err and "not a SQLite response cache" in err
    assert len(err.strip().splitlines()) == 1


def test_the_manifest_records_the_decoding_settings_the_backend_gets(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    args = [
        "--policy",
        "mllm",
        "--model",
        "answer-key",
        "--max-new-tokens",
        "77",
        "--tasks",
        "open_drawer",
        "--num-sequences",
        "1",
        "--ep-len",
        "1",
        "--no-progress",
        "--output",
        "out",
    ]
    assert invoke("calvin", args, capsys)[0] in (0, 3)
    manifest = json.loads(next((tmp_path / "out" / "calvin").glob("*/manifest.json")).read_text())
    assert (
        manifest["policy"]["generation"]["max_new_tokens"] == 77 and manifest["policy"]["privileged"] is True
    )


def test_damaged_run_folders_resume_or_say_why(tmp_path, capsys, monkeypatch):
    """A half-written manifest is refused with a fix that keeps the results; a foreign `{}` records line is
    moved to records.damaged.jsonl, the unit reruns."""
    monkeypatch.chdir(tmp_path)
    args = ["--policy", "random", "--num-sequences", "1", "--ep-len", "2", "--no-progress", "--output", "out"]
    assert invoke("calvin", args, capsys)[0] == 0
    run = tmp_path / "out" / "calvin" / "random"
    records = run / "records.jsonl"
    records.write_text("{}\n" + records.read_text())
    code, err = invoke("calvin", [*args, "--resume"], capsys)
    assert code == 0, err
    assert [json.loads(line)["key"] for line in records.read_text().splitlines()] == ["chain-0000"]
    assert (run / "records.damaged.jsonl").read_text() == "{}\n" and "1 damaged line(s) (line 1)" in err
    (run / "manifest.json").write_text('{"config": {"num_seq')
    code, err = invoke("calvin", [*args, "--resume"], capsys)
    assert code == EXIT_BAD_INPUT and "manifest.json is damaged" in err and "restore manifest.json" in err
    assert "delete" not in err
    code, err = invoke("calvin", args, capsys)  # without --resume: the folder holds results
    assert code == EXIT_BAD_INPUT and "--resume" in err


def test_changed_configuration_is_refused_in_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    args = ["--policy", "random", "--num-sequences", "1", "--ep-len", "2", "--no-progress", "--output", "out"]
    assert invoke("calvin", args, capsys)[0] == 0
    code, err = invoke("calvin", [*args, "--resume", "--seed", "3"], capsys)
    assert code == EXIT_BAD_INPUT
    assert "seed" in err and "--run-name" in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize(
    "argv",
    [
        ["-m", "benchmarks.calvin", "--ep-len", "0"],
        ["-m", "benchmarks.embodied", "nav", "--env-kwargs", "{"],
        ["-m", "vla.train", "--batch-size", "0"],
        ["-m", "benchmarks.calvin", "--policy", "mllm", "--model", "/ckpt/Qwen2.5-VL-7B"],
        ["-m", "benchmarks.libero", "--policy", "agent", "--model", "answer-key"],
    ],
)
def test_python_m_entry_points_exit_2_with_one_line(argv):
    done = subprocess.run([sys.executable, *argv], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == EXIT_BAD_INPUT, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_the_preflight_lets_through_what_is_there(tmp_path):
    """A listening server, a checkpoint folder, the CPU and an existing path pass; a closed port fails fast."""
    import socket
    import time

    from policies.preflight import check_device, check_model, check_path, check_server

    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        check_server("--api-base", f"http://127.0.0.1:{server.getsockname()[1]}/v1")
    (tmp_path / "config.json").write_text("{}")
    check_model("--model", str(tmp_path))
    check_device("--device", "cpu")
    check_path("--data", tmp_path)
    start = time.perf_counter()
    with pytest.raises(ValueError, match=r"nothing answers at 127\.0\.0\.1"):
        check_server("--api-base", dead_endpoint())
    assert time.perf_counter() - start < 3


def test_each_policy_declares_where_it_runs():
    from policies.registry import CLOSED_LOOP_BENCHMARKS, policies_for, policy_benchmarks, registered_policies

    assert policies_for("libero") == ["constant", "expert", "mllm", "random", "replay", "vla"]
    assert policies_for("embodied-nav") == ["agent", "constant", "expert", "mllm", "random", "replay"]
    assert policies_for(None) == registered_policies()
    assert all(set(policy_benchmarks(name)) <= set(CLOSED_LOOP_BENCHMARKS) for name in registered_policies())


def test_the_hardening_guide_lists_every_bad_input_with_its_message():
    text = (ROOT / "docs" / "guide" / "hardening.md").read_text()
    shown = {
        case: f"| `{' '.join(argv).replace('|', chr(92) + '|') or '(none)'}` | "
        for case, argv in ((case_id(c, a), a) for c, a, _ in BAD_INPUTS)
    }
    assert [case for case, row in shown.items() if row not in text] == []
