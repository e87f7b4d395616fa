"""The tests mirror the packages: the tests of ``envs/calvin/`` live in ``tests/envs/calvin/``, so a new test has
one place to go (docs/guide/development.md, "Where a test goes"). Only project-wide checks sit in ``tests/``."""

from pathlib import Path

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent

# Checks of the whole tree, or of a rule that every package keeps, rather than of one package.
PROJECT_WIDE = {
    "test_cli_errors.py",
    "test_docs.py",
    "test_gpu.py",
    "test_layers.py",
    "test_parser_bounds.py",
    "test_readme.py",
    "test_safe_files.py",
    "test_stand_in_edge.py",
    "test_style.py",
    "test_tests_layout.py",
    "test_typecheck.py",
}
# Folders of scripts, not packages, whose code has tests of its own.
SCRIPT_FOLDERS = {"bench"}


def mirrors_code(folder: Path) -> bool:
    """Whether ``tests/X/`` has a package (or a script folder) ``X/`` in the repository to mirror."""
    relative = folder.relative_to(TESTS).as_posix()
    return (ROOT / relative / "__init__.py").is_file() or relative in SCRIPT_FOLDERS


def test_root_holds_only_project_wide_checks():
    root_tests = {path.name for path in TESTS.glob("test_*.py")}
    stray = sorted(root_tests - PROJECT_WIDE)
    assert not stray, f"move these into tests/<package path>/ (docs/guide/development.md): {stray}"
    assert root_tests == PROJECT_WIDE, (
        f"PROJECT_WIDE names missing files: {sorted(PROJECT_WIDE - root_tests)}"
    )


def test_every_test_folder_mirrors_a_package():
    folders = {path.parent for path in TESTS.rglob("test_*.py")} - {TESTS}
    unmirrored = sorted(str(folder.relative_to(TESTS)) for folder in folders if not mirrors_code(folder))
    assert not unmirrored, f"these test folders have no package of the same path to mirror: {unmirrored}"


def test_every_test_folder_is_a_package():
    """Test files of the same name in two folders (``envs/calvin/test_env.py``, ``envs/libero/test_env.py``)
    import as distinct modules only when every folder on the way has an ``__init__.py``."""
    folders = {folder for path in TESTS.rglob("test_*.py") for folder in path.relative_to(TESTS).parents}
    missing = sorted(str(folder) for folder in folders if not (TESTS / folder / "__init__.py").is_file())
    assert not missing, f"add an empty __init__.py to these test folders: {missing}"
