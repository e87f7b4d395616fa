"""Every command answers bad input with one line that names the input, and a non-zero exit status.

The table walks each CLI's entry point in-process through the shared handler (``run_cli``), which is what
``python -m ...`` runs; a few cases also run as real subprocesses to pin that wiring.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from policies.cli import EXIT_BAD_INPUT, run_cli

ROOT = Path(__file__).resolve().parent.parent


def _mains():
    from benchmarks import calvin, embodied, libero
    from benchmarks.goal_scoring import cli as goal
    from benchmarks.static import __main__ as static
    from policies.serve import __main__ as serve
    from vla import demos, train

    return {"calvin": calvin.main, "libero": libero.main, "embodied": embodied.main, "static": static.main,
            "goal": goal.main, "serve": serve.main, "train": train.main, "demos": demos.main}


def invoke(command: str, argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    """Exit status and stderr of one command run through the shared handler (argparse exits included)."""
    try:
        code = run_cli(_mains()[command], argv)
    except SystemExit as e:  # argparse's own (one-line) usage errors
        code = e.code if isinstance(e.code, int) else 1
    return code, capsys.readouterr().err


def _corrupt_file(tmp_path: Path, name: str, content: str) -> str:
    path = tmp_path / name
    path.write_text(content)
    return str(path)


BAD_INPUTS = [
    # (command, argv, a word the message must contain)
    ("calvin", ["--num-sequences", "0"], "--num-sequences"),
    ("calvin", ["--ep-len", "0"], "--ep-len"),
    ("calvin", ["--ep-len", "-5"], "--ep-len"),
    ("calvin", ["--video", "-1"], "--video"),
    ("calvin", ["--workers", "0"], "--workers"),
    ("calvin", ["--num-sequences", "ten"], "--num-sequences"),
    ("calvin", ["--policy-kwargs", "{bad"], "--policy-kwargs"),
    ("calvin", ["--policy-kwargs", "[1, 2]"], "--policy-kwargs"),
    ("calvin", ["--policy", "nope"], "--policy"),
    ("calvin", ["--policy", "no_such_module_xyz:Policy"], "no_such_module_xyz"),
    ("calvin", ["--policy", "replay"], "--replay-file"),
    ("calvin", ["--policy", "replay", "--replay-file", "/no/such/file.jsonl"], "/no/such/file.jsonl"),
    ("calvin", ["--calvin-assets", "/no/such/calvin/data"], "/no/such/calvin/data"),
    ("calvin", ["--cameras", "front"], "--cameras"),
    ("calvin", ["--backend", "mujoco"], "--backend"),
    ("calvin", ["--backbone", "x", "--policy", "random"], "--backbone"),
    ("calvin", ["--policy", "mllm", "--model", "oracle", "--max-new-tokens", "0"], "--max-new-tokens"),
    ("calvin", ["--policy", "mllm", "--model", "oracle", "--oracle-error-rate", "2"], "--oracle-error-rate"),
    ("calvin", ["--policy", "mllm", "--model", "oracle", "--num-steps", "0"], "--num-steps"),
    ("calvin", ["--policy", "mllm", "--model", "m", "--model-backend", "nope"], "--model-backend"),
    ("calvin", ["--output", "/etc/hostname/sub", "--num-sequences", "1", "--no-progress"], "/etc/hostname"),
    ("libero", ["--trials-per-task", "0"], "--trials-per-task"),
    ("libero", ["--image-size", "0"], "--image-size"),
    ("libero", ["--suite", "libero_100"], "--suite"),
    ("embodied", [], "nav"),
    ("embodied", ["boat"], "nav"),
    ("embodied", ["nav", "--episodes", "0"], "--episodes"),
    ("embodied", ["nav", "--image-size", "0"], "--image-size"),
    ("embodied", ["nav", "--env-kwargs", "{"], "--env-kwargs"),
    ("embodied", ["nav", "--episodes-file", "/no/such/episodes.jsonl"], "/no/such/episodes.jsonl"),
    ("embodied", ["manip", "--workers", "-1"], "--workers"),
    ("static", ["--bench", "nope", "--data", "x.json", "--model", "m"], "--bench"),
    ("static", ["generate", "--format", "gqa", "--out", "x"], "--format"),
    ("static", ["generate", "--format", "multihop", "--kinds", "counting", "--out", "x"], "--kinds"),
    ("static", ["--bench", "spatialscore", "--data", "x.json"], "--model"),
    ("static", ["--bench", "spatialscore", "--data", "x.json", "--model", "m", "--limit", "0"], "--limit"),
    ("static", ["--bench", "spatialscore", "--data", "x.json", "--model", "m", "--batch-size", "0"], "--batch-size"),
    ("goal", ["predict"], "--dataset"),
    ("goal", ["score", "--dataset", "/no/such/goal_set", "--predictions", "/no/such/p.jsonl", "--output", "o"], "/no/such"),
    ("goal", ["fly"], "fly"),
    ("serve", [], "--model"),
    ("serve", ["--model", "m", "--port", "-1"], "--port"),
    ("serve", ["--model", "m", "--max-batch", "0"], "--max-batch"),
    ("serve", ["--model", "m", "--host", "node"], "--host"),
    ("train", ["--batch-size", "0"], "--batch-size"),
    ("train", ["--lr", "-1"], "--lr"),
    ("demos", ["--episodes", "0"], "--episodes"),
    ("demos", ["--ep-len", "0"], "--ep-len"),
]


@pytest.mark.parametrize(("command", "argv", "named"), BAD_INPUTS, ids=[f"{c}:{' '.join(a)}" for c, a, _ in BAD_INPUTS])
def test_bad_input_gets_one_line_naming_it(command, argv, named, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, err = invoke(command, argv, capsys)
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == EXIT_BAD_INPUT, (code, err)
    assert len(lines) == 1, err
    assert named in lines[0], lines[0]
    assert "Traceback" not in err


def test_a_corrupt_response_cache_is_named_before_any_worker_starts(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    cache = tmp_path / "responses.sqlite"
    cache.write_bytes(b"this is not a database" * 100)
    code, err = invoke("calvin", ["--policy", "mllm", "--model", "/no/model", "--cache-path", str(cache)], capsys)
    assert code == EXIT_BAD_INPUT and "--cache-path" in err and "not a SQLite response cache" in err
    assert len(err.strip().splitlines()) == 1


def test_the_manifest_records_the_decoding_settings_the_backend_gets(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    args = ["--policy", "mllm", "--model", "oracle", "--max-new-tokens", "77", "--tasks", "open_drawer",
            "--num-sequences", "1", "--ep-len", "1", "--no-progress", "--output", "out"]
    assert invoke("calvin", args, capsys)[0] in (0, 3)
    manifest = json.loads(next((tmp_path / "out" / "calvin").glob("*/manifest.json")).read_text())
    assert manifest["policy"]["generation"]["max_new_tokens"] == 77 and manifest["policy"]["privileged"] is True


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


@pytest.mark.parametrize("argv", [["-m", "benchmarks.calvin", "--ep-len", "0"],
                                  ["-m", "benchmarks.embodied", "nav", "--env-kwargs", "{"],
                                  ["-m", "vla.train", "--batch-size", "0"]])
def test_python_m_entry_points_exit_2_with_one_line(argv):
    done = subprocess.run([sys.executable, *argv], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == EXIT_BAD_INPUT, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
