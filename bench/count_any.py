"""Count ``Any`` in the library's function signatures (issue 30: types at the edges).

    python bench/count_any.py [--by-file] [--name env]

Prints, over the parameters and returns of every function in the five library packages: how many are annotated
exactly ``Any`` (the issue's measure: 453 when it was filed), how many ``Any`` the annotations hold in all
(``dict[str, Any]`` counts one), and how many parameters named ``--name`` are annotated exactly ``Any``.
"""

from __future__ import annotations

import argparse
import ast
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("action_mapping", "envs", "policies", "vla", "benchmarks")


def _anys(annotation: ast.expr | None) -> int:
    if annotation is None:
        return 0
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):  # a quoted annotation
        annotation = ast.parse(annotation.value, mode="eval").body
    return sum(
        1
        for node in ast.walk(annotation)
        if (isinstance(node, ast.Name) and node.id == "Any")
        or (isinstance(node, ast.Attribute) and node.attr == "Any")
    )


def _bare(annotation: ast.expr | None) -> bool:
    return isinstance(annotation, ast.Name) and annotation.id == "Any"


def count(path: Path, name: str) -> tuple[int, int, int]:
    """(annotations exactly ``Any``, ``Any`` in all annotations, parameters ``name: Any``) of one file."""
    bare = total = named = 0
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        args = [
            *node.args.posonlyargs,
            *node.args.args,
            *node.args.kwonlyargs,
            *(a for a in (node.args.vararg, node.args.kwarg) if a is not None),
        ]
        bare += _bare(node.returns) + sum(_bare(a.annotation) for a in args)
        total += _anys(node.returns) + sum(_anys(a.annotation) for a in args)
        named += sum(1 for a in args if a.arg == name and _bare(a.annotation))
    return bare, total, named


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--by-file", action="store_true", help="also list the files, most Any first")
    parser.add_argument(
        "--name", default="env", help="the parameter name to count `NAME: Any` for (default env)"
    )
    args = parser.parse_args()
    per_file: Counter[str] = Counter()
    total = named = 0
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            bare, anys, n = count(path, args.name)
            per_file[str(path.relative_to(ROOT))] = bare
            total, named = total + anys, named + n
    print(
        f"annotations exactly Any: {sum(per_file.values())}; Any in all annotations: {total}; "
        f"`{args.name}: Any` parameters: {named}"
    )
    if args.by_file:
        for file, n in per_file.most_common():
            if n:
                print(f"{n:5d}  {file}")


if __name__ == "__main__":
    main()
