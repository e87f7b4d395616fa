"""The type checker (mypy, ``[tool.mypy]`` in pyproject.toml) passes on the library, as ``make lint`` runs it.

Its cache is ``.mypy_cache`` (git-ignored): a first run on a fresh checkout takes about 20 s on two cores, a
later one about a second.
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("mypy", reason="mypy is in the dev extra: pip install -c constraints.txt -e '.[dev]'")
from mypy import api

ROOT = Path(__file__).resolve().parents[1]
CONFIG = str(ROOT / "pyproject.toml")


def test_the_library_type_checks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)  # the packages and the cache dir in the config are relative to the checkout
    out, err, status = api.run(["--config-file", CONFIG])
    assert status == 0, out + err
    assert "Success: no issues found" in out, out


def test_the_checker_catches_a_wrong_override_and_an_undefined_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same configuration on a toy module with two faults it keeps checking: not vacuous."""
    toy = tmp_path / "toy.py"
    toy.write_text(
        "class Base:\n"
        "    def act(self, observation: dict) -> list[float]:\n"
        "        return []\n\n\n"
        "class Child(Base):\n"
        "    def act(self, observation: dict, extra: int) -> list[float]:\n"
        "        return [undefined_name]\n"
    )
    monkeypatch.chdir(ROOT)  # the checkout's cache: the standard library is analysed once
    out, _, status = api.run(["--config-file", CONFIG, str(toy)])
    assert status == 1, out
    assert "[override]" in out and "[name-defined]" in out, out
