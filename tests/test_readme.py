"""What the README shows a newcomer works as shown: its Python examples run, its subcommand list is the
registry, and the folders its commands write are ignored by git."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.command import SUBCOMMANDS

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
#: Pages whose Python examples need no model, checkpoint or data set, so they run as written.
RUNNABLE = ("README.md", "docs/guide/action-mapping.md")


def code_blocks(text: str, language: str) -> list[str]:
    """The fenced ```` ```language ```` blocks of a markdown text, in order."""
    return re.findall(rf"^```{language}\n(.*?)^```", text, flags=re.M | re.S)


@pytest.mark.parametrize("page", RUNNABLE)
def test_the_python_examples_run_as_written(page, tmp_path):
    """Issue 29: the README's action-mapping example used ``model_output`` without defining it."""
    blocks = code_blocks((ROOT / page).read_text(encoding="utf-8"), "python")
    assert blocks, f"{page} has no python example"
    for block in blocks:
        done = subprocess.run(
            [sys.executable, "-c", block],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
        assert done.returncode == 0, f"{page}:\n{block}\n{done.stderr[-2000:]}"


def test_the_subcommand_list_is_the_registry():
    listed = re.search(r"^Subcommands: (.*)$", README, flags=re.M)
    assert listed is not None
    assert re.findall(r"`(\w+)`", listed.group(1)) == list(SUBCOMMANDS)


def test_the_folders_the_commands_write_are_ignored_and_nothing_tracked_is():
    """Issue 29: ``data/``, where the README's generate commands write, was not git-ignored."""
    git = shutil.which("git")
    if git is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    commands = "\n".join(code_blocks(README, "bash"))
    written = sorted(
        {
            path
            for path in re.findall(r"--(?:out|output|data|dataset) (\S+)", commands)
            if not path.startswith(("/", "$", "<", "."))
        }
    )
    assert any(path.startswith("data/") for path in written) and any(
        path.startswith("runs/") for path in written
    )
    for path in written:
        inside = f"{path.rstrip('/')}/file"  # a file the command writes (a folder pattern needs the slash)
        done = subprocess.run([git, "check-ignore", "--no-index", "-q", inside], cwd=ROOT, timeout=30)
        assert done.returncode == 0, f"{path} (written by a README command) is not git-ignored"
    tracked_ignored = subprocess.run(
        [git, "ls-files", "--cached", "--ignored", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=30,
    ).stdout.split()
    assert tracked_ignored == [], (
        "tracked files match .gitignore (tests/data and package data/ must stay tracked)"
    )
