"""House style, checked in the default suite as ``make lint`` checks it: ``ruff check``, ``ruff format
--check``, no formatter escapes, and the short-function rule.

The rule: a function or method in the library packages is at most ``MAX_LINES`` lines as ``ruff format``
writes it, counted from its ``def`` line to its last line (``end_lineno - lineno + 1``), docstring and
comments included, decorators not. ``LONGER`` names the functions that were over the limit when the rule
came in, with their length then: each may only shrink, and comes off the list once it fits (the test says
so), so any new long function fails.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RUFF = Path(sys.executable).parent / "ruff"
LIBRARY = ("action_mapping", "envs", "policies", "vla", "benchmarks")
MAX_LINES = 50

#: "path:qualified name" -> formatted length when the rule came in.
LONGER: dict[str, int] = {
    # benchmarks/libero/ was being reworked on another branch when the rule came in; split on merge.
    "benchmarks/libero/episode.py:run_episode": 63,
}

needs_ruff = pytest.mark.skipif(
    not RUFF.exists(), reason="ruff is in the dev extra: pip install -c constraints.txt -e '.[dev]'"
)


def _ruff(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(RUFF), *args], cwd=cwd, capture_output=True, text=True, timeout=120)


def function_lengths(source: str) -> dict[str, int]:
    """Qualified name -> ``end_lineno - lineno + 1`` of every function and method in ``source``."""
    lengths: dict[str, int] = {}

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = prefix + child.name
                if not isinstance(child, ast.ClassDef):
                    lengths[name] = (child.end_lineno or child.lineno) - child.lineno + 1
                visit(child, name + ".")
            else:
                visit(child, prefix)

    visit(ast.parse(source), "")
    return lengths


def library_function_lengths() -> dict[str, int]:
    found: dict[str, int] = {}
    for package in LIBRARY:
        for path in sorted((ROOT / package).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            for name, length in function_lengths(path.read_text()).items():
                found[f"{rel}:{name}"] = length
    return found


@needs_ruff
def test_ruff_check_is_clean() -> None:
    result = _ruff("check", "--output-format", "concise", ".")
    assert result.returncode == 0, result.stdout + result.stderr


@needs_ruff
def test_the_tree_is_formatted() -> None:
    result = _ruff("format", "--check", ".")
    assert result.returncode == 0, "run `ruff format .`:\n" + result.stdout + result.stderr


@needs_ruff
def test_format_check_flags_an_unformatted_file(tmp_path: Path) -> None:
    """The same configuration on a toy file it must reformat: the check is not vacuous."""
    (tmp_path / "toy.py").write_text("x = {  'a':1 }\n")
    result = _ruff("format", "--check", "--config", str(ROOT / "pyproject.toml"), str(tmp_path / "toy.py"))
    assert result.returncode == 1, result.stdout + result.stderr


def _python_files() -> list[Path]:
    """The checkout's Python files, outside hidden folders (``.venv``, ``.git``) and ``outputs``."""
    found = []
    for folder, subfolders, files in os.walk(ROOT):
        subfolders[:] = [d for d in subfolders if not d.startswith(".") and d != "outputs"]
        found += [Path(folder) / name for name in files if name.endswith(".py")]
    return sorted(found)


def test_no_formatter_escapes() -> None:
    """No region is kept out of the formatter (``fmt: skip``, ``fmt: off``); the tree is formatted as a whole."""
    markers = tuple(f"# fmt: {word}" for word in ("skip", "off", "on"))
    found = [
        f"{path.relative_to(ROOT)}:{number}"
        for path in _python_files()
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if line.rstrip().endswith(markers) or line.strip() in markers
    ]
    assert not found, f"formatter escapes (drop them and run `ruff format .`): {found}"


def test_library_functions_are_short() -> None:
    lengths = library_function_lengths()
    too_long = {name: n for name, n in lengths.items() if n > MAX_LINES and n > LONGER.get(name, MAX_LINES)}
    assert not too_long, f"functions over {MAX_LINES} lines (split them into named helpers): {too_long}"
    fitted = sorted(name for name in LONGER if lengths.get(name, 0) <= MAX_LINES)
    assert not fitted, (
        f"now {MAX_LINES} lines or fewer (or gone): take them off LONGER in {__file__}: {fitted}"
    )


def test_function_lengths_count_formatted_lines_of_nested_defs() -> None:
    body = "".join(f"    x{i} = {i}\n" for i in range(49))
    source = f'class A:\n    def m(self) -> None:\n        """Doc."""\n{body.replace("    ", "        ")}\n'
    source += f"def f() -> None:\n{body}    def g() -> None:\n        pass\n"
    lengths = function_lengths(source)
    assert lengths == {"A.m": 51, "f": 52, "f.g": 2}
