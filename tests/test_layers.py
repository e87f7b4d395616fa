"""The import layers (action_mapping -> envs -> policies -> vla -> benchmarks), the rooms inside ``benchmarks``
and no import cycles.

The contracts are in pyproject.toml (``[tool.importlinter]``); ``lint-imports`` checks them on this checkout.
Imports inside functions count, so a lazy import cannot hide an upward dependency or a cycle.
"""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

pytest.importorskip(
    "importlinter", reason="import-linter is in the dev extra: pip install -c constraints.txt -e '.[dev]'"
)
from importlinter.cli import lint_imports

ROOT = Path(__file__).resolve().parents[1]


def test_layer_and_cycle_contracts_hold(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(ROOT)
    monkeypatch.syspath_prepend(str(ROOT))  # analyse this checkout's packages, not an installed copy
    status = lint_imports(config_filename=str(ROOT / "pyproject.toml"), no_cache=True, no_logo=True)
    out = capsys.readouterr().out
    assert status == 0, out
    assert "3 kept, 0 broken" in out, out


def test_the_contracts_catch_an_upward_import_and_a_cycle(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The same three contracts on a two-layer toy tree that breaks each: the checker is not vacuous."""
    (tmp_path / "low").mkdir()
    (tmp_path / "high").mkdir()
    (tmp_path / "low" / "__init__.py").write_text("")
    (tmp_path / "high" / "__init__.py").write_text("")
    (tmp_path / "low" / "a.py").write_text("def f():\n    import high.c  # hidden in a function\n")
    (tmp_path / "low" / "b.py").write_text("import low.a\n")
    (tmp_path / "low" / "a2.py").write_text("import low.b2\n")
    (tmp_path / "low" / "b2.py").write_text("import low.a2\n")
    (tmp_path / "high" / "c.py").write_text("import low.b\n")
    config = ROOT / "pyproject.toml"
    rooms = re.search(r'containers = \["benchmarks"\].*?layers = \[(.*?)\]', config.read_text(), re.S)
    for room in re.findall(r"\w+", " ".join(re.findall(r'"([^"]*)"', rooms.group(1)))):
        (tmp_path / "high" / f"{room}.py").write_text("")
    (tmp_path / "high" / "core.py").write_text("import high.datagen\n")  # a lower room importing a higher one
    contracts = config.read_text().split("[tool.importlinter]", 1)[1].split("[tool.pytest", 1)[0]
    toy = contracts.replace('"action_mapping", "envs", "policies", "vla", "benchmarks"', '"low", "high"')
    toy = toy.replace('["benchmarks", "vla", "policies", "envs", "action_mapping"]', '["high", "low"]')
    toy = toy.replace('containers = ["benchmarks"]', 'containers = ["high"]')
    # the real ones, renamed
    assert toy.count('"low", "high"') == 2 and '["high", "low"]' in toy and '["high"]' in toy
    (tmp_path / "toy.toml").write_text("[tool.importlinter]" + textwrap.dedent(toy))
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    status = lint_imports(config_filename=str(tmp_path / "toy.toml"), no_cache=True, no_logo=True)
    out = capsys.readouterr().out
    assert status == 1, out
    assert "0 kept, 3 broken" in out, out
    assert "low.a -> high.c" in out and "high.core -> high.datagen" in out, out


def test_static_builtins_resolve_to_their_names() -> None:
    """The static registry names its benchmarks as lazy strings; each must load the benchmark it names."""
    from benchmarks.static.registry import _BUILTINS, get_benchmark

    assert {name: get_benchmark(name).name for name in _BUILTINS} == {name: name for name in _BUILTINS}


def test_every_room_of_benchmarks_is_on_a_floor_of_the_contract() -> None:
    """A new package or module in ``benchmarks/`` left out of the rooms contract would be checked by nothing."""
    config = (ROOT / "pyproject.toml").read_text()
    floors = re.search(r'containers = \["benchmarks"\].*?layers = \[(.*?)\]', config, re.S)
    assert floors is not None
    listed = set(re.findall(r"\w+", " ".join(re.findall(r'"([^"]*)"', floors.group(1)))))
    rooms = {p.parent.name for p in (ROOT / "benchmarks").glob("*/__init__.py")}
    rooms |= {p.stem for p in (ROOT / "benchmarks").glob("*.py") if p.stem not in {"__init__", "__main__"}}
    assert rooms - listed == set(), (
        f"rooms of benchmarks/ missing from the contract in pyproject.toml: {rooms - listed}"
    )
    assert listed - rooms == set(), f"floors naming no room: {listed - rooms}"
