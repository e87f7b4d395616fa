"""``spatial-arena report``: the page from real runs, opened in headless Chromium; errored units shown as
errors; refusals in one line (issue 34)."""

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from benchmarks.command import main as arena
from tests.run_folders import write_calvin_run, write_libero_run

TASK = "turn_on_led"  # its first evaluation chain (0013) is short for the answer key


def calvin_run(out: Path, *extra: str) -> Path:
    from benchmarks.calvin import main as calvin

    args = ["--output", str(out), "--no-progress", "--tasks", TASK, "--num-sequences", "1"]
    model = ["--policy", "mllm", "--model", "answer-key", "--cameras", "static", "--video", "1"]
    calvin([*args, *model, *extra])
    return out / "calvin" / "mllm-answer-key"


def static_run(root: Path) -> Path:
    from benchmarks.static.config import RunConfig
    from benchmarks.static.runner import run
    from tests.static_helpers import ScriptedBackend, write_spatialscore

    config = RunConfig(
        bench="spatialscore",
        data=write_spatialscore(root / "data"),
        output=root / "out",
        model="says-A",
        plot=False,
        allow_errors=True,
    )
    fails = lambda call, text: "bowl next to" in text  # noqa: E731 - one item errors
    return run(config, backend=ScriptedBackend(lambda prompt: "A", fails)).out_dir


def chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found:
        return found
    if os.environ.get("CI") or os.environ.get("REQUIRE_CHROMIUM"):
        pytest.fail("chromium is missing: `make test` installs it through `make system-deps`")
    pytest.skip("chromium is not installed (sudo apt-get install chromium, or run `make system-deps`)")


def browse(page: Path, profile: Path, *flags: str) -> tuple[str, str]:
    """Chromium headless on ``page``: (stdout, stderr with console messages logged)."""
    command = [
        chromium(),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        f"--user-data-dir={profile}",
        "--enable-logging=stderr",
        "--v=0",
        *flags,
        page.resolve().as_uri(),
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout, done.stderr


def test_report_of_real_runs_opens_in_headless_chromium(tmp_path):
    clean = calvin_run(tmp_path / "clean")
    noisy = calvin_run(tmp_path / "noisy", "--answer-key-error-rate", "0.5", "--answer-key-error-seed", "2")
    report, static_report = tmp_path / "report.html", tmp_path / "static.html"
    assert arena(["report", str(clean), str(noisy), "-o", str(report)]) == 0
    assert arena(["report", str(static_run(tmp_path / "static")), "-o", str(static_report)]) == 0

    dom, log = browse(report, tmp_path / "profile", "--dump-dom")
    assert 'data-js-errors="0"' in dom and ":CONSOLE" not in log and "Uncaught" not in log
    assert dom.count('class="headline"') == 4  # both runs, on top and in their sections
    assert "avg. len <strong>1.000 [1.000, 1.000]</strong>" in dom and "over n = 1 units" in dom
    unit = dom[dom.index('<details class="unit" data-key="chain-0013"') :]
    unit = unit[: unit.index("</details>\n") if "</details>\n" in unit else len(unit)]
    assert 'class="unit-video"' in unit and 'src="data:video/mp4;base64,' in unit
    assert "press the button to turn on the led light" in unit and "prompt id <code>" in unit
    assert 'class="raw"' in unit and 'class="parsed"' in unit and "step_1" in unit
    assert re.search(r"injected error: ", dom) and 'class="error">parse errors: ' in dom  # the noisy run
    comparison = dom[dom.index('id="comparison"') :]
    assert "B - A [95 % interval]" in comparison and "sign-flip-permutation" in comparison
    assert "steps/s" in dom and "decisions/s" in dom and "git revision" in dom
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", dom)  # nothing to fetch

    artifacts = Path(os.environ.get("ARTIFACTS_DIR") or tmp_path / "artifacts")
    artifacts.mkdir(parents=True, exist_ok=True)
    shot = artifacts / "report.png"
    browse(report, tmp_path / "profile", "--window-size=1200,1600", f"--screenshot={shot}")
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 10_000

    static_dom, static_log = browse(static_report, tmp_path / "profile", "--dump-dom")
    assert 'data-js-errors="0"' in static_dom and ":CONSOLE" not in static_log
    assert 'data-outcome="error"' in static_dom and "ConnectionError: scripted failure" in static_dom
    assert "1 errored (shown as errors, never counted)" in static_dom


def test_errored_units_are_shown_as_errors_never_as_results(tmp_path):
    run = write_calvin_run(tmp_path / "run", [5, None, 2])
    out = tmp_path / "r.html"
    assert arena(["report", str(run), "-o", str(out)]) == 0
    page = out.read_text()
    # the two finished chains only: (5 + 2) / 2
    assert "avg. len <strong>3.500 [" in page and "over n = 2 units; 3 units run" in page
    assert '<details class="unit" data-key="chain-0001" data-outcome="error">' in page
    assert "error: RuntimeError: boom" in page and "1 errored (shown as errors, never counted)" in page
    assert "<tr><td>reached 1</td><td>2</td>" in page  # the group table counts the 2 results


def test_refusals_are_one_line(tmp_path, capsys):
    calvin, libero = write_calvin_run(tmp_path / "c", [1, 2]), write_libero_run(tmp_path / "l", [True])
    assert arena(["report", str(calvin), str(libero), "-o", str(tmp_path / "r.html")]) == 2
    err = capsys.readouterr().err.strip()
    assert "differ in benchmark" in err and "--no-compare" in err and "\n" not in err
    assert arena(["report", str(calvin), str(libero), "--no-compare", "-o", str(tmp_path / "r.html")]) == 0
    assert 'id="comparison"' not in (tmp_path / "r.html").read_text()
    assert arena(["report", str(calvin), "-o", str(tmp_path / "no" / "r.html")]) == 2
    assert "does not exist" in capsys.readouterr().err
