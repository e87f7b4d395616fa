"""The ``spatial-arena`` console script: subcommands forward to their ``python -m`` module, ``list`` is cheap."""

from __future__ import annotations

import importlib
import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import pytest

import envs
from benchmarks.command import SUBCOMMANDS, env_families, main, policy_names, vla_backbones
from benchmarks.static.registry import benchmark_names, get_benchmark
from policies.registry import policies_for, policy_benchmarks, registered_policies

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("torch", "transformers", "pybullet", "mujoco", "robosuite", "libero")


def _python(code: str) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a fresh interpreter from the repository root (so imports are this checkout's)."""
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )


def test_the_console_script_points_at_the_dispatcher():
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    module, _, attribute = scripts["spatial-arena"].partition(":")
    assert callable(getattr(importlib.import_module(module), attribute))


def test_the_installed_script_lists_what_the_module_lists():
    script = shutil.which("spatial-arena", path=str(Path(sys.executable).parent))
    if script is None:
        pytest.skip("the console script is not installed in this environment (pip install -e . installs it)")
    done = subprocess.run(
        [script, "list"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 0, done.stderr
    assert (
        done.stdout.strip() == _python("from benchmarks.command import main; main(['list'])").stdout.strip()
    )


def test_every_subcommand_runs_an_existing_python_m_module():
    assert set(SUBCOMMANDS) == {
        "calvin",
        "libero",
        "embodied",
        "static",
        "goal",
        "compare",
        "power",
        "report",
        "serve",
        "train",
        "demos",
        "tiny",
        "posttrain",
    }
    for name, command in SUBCOMMANDS.items():
        assert importlib.util.find_spec(command.module) is not None, name


def test_list_prints_everything_registered_without_importing_torch_or_a_simulator():
    done = _python(
        "import sys; from benchmarks.command import main; code = main(['list']); "
        f"print('HEAVY', [m for m in {HEAVY!r} if m in sys.modules]); sys.exit(code)"
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "HEAVY []" in out
    for env_id in envs.registered_ids():
        assert f"    {env_id}\n" in out
    for name in registered_policies():
        where = ", ".join(b.replace("-", " ") for b in policy_benchmarks(name))
        assert f"\n  {name}: {where}\n" in out
    assert "\n  agent: embodied nav\n" in out and "\n  vla: calvin, libero\n" in out
    for name in benchmark_names():
        assert f"  {name}: modes {', '.join(get_benchmark(name).modes)}" in out
    for kind, names in vla_backbones().items():
        assert f"  {kind}: {', '.join(names)}" in out


def test_list_groups_env_ids_by_their_class():
    families = env_families()
    assert sorted(i for ids in families.values() for i in ids) == envs.registered_ids()
    for entry_point, ids in families.items():
        assert all(gym.spec(i).entry_point == entry_point for i in ids)


def test_policies_are_the_registered_ones_built_ins_included():
    assert policy_names() == registered_policies()
    assert {"expert", "random", "replay", "constant", "mllm", "vla"} <= set(policy_names())


def test_backbones_read_from_source_match_the_registry():
    pytest.importorskip("torch")
    from vla import backbones

    found = vla_backbones()
    assert found["tiny"] == list(backbones.TINY_BACKBONES)
    assert found["native"] == list(backbones.NATIVE_BACKBONES)
    # vla.backbones' own registrations (other modules, e.g. vla.vision_backbones, add theirs when imported)
    own = sorted(
        t
        for t in backbones.supported_model_types()
        if backbones.backbone_class(t).__module__ == backbones.__name__
    )
    assert found["transformers"] == own


HELP_CASES = {
    "calvin": ["calvin"],
    "libero": ["libero"],
    "embodied-nav": ["embodied", "nav"],
    "embodied-manip": ["embodied", "manip"],
}


@pytest.mark.parametrize("benchmark", list(HELP_CASES))
def test_benchmark_help_shows_the_options_of_what_runs_there_without_heavy_imports(benchmark):
    argv = HELP_CASES[benchmark]
    done = _python(
        "import sys; from benchmarks.command import main; code = main("
        f"{[*argv, '--help']!r}); print('HEAVY', [m for m in {HEAVY!r} if m in sys.modules]); sys.exit(code)"
    )
    assert done.returncode == 0, done.stderr
    assert "HEAVY []" in done.stdout
    assert done.stdout.startswith(f"usage: python -m benchmarks.{argv[0]}")
    offered = policies_for(benchmark)
    assert " | ".join(offered) in " ".join(done.stdout.split())  # --policy's own help
    for name in registered_policies():
        assert (f"--policy {name} options" in done.stdout) == (
            name in offered and name not in ("expert", "random", "replay")
        ), name
    for flag in ("--model", "--api-base"):
        assert flag in done.stdout, flag
    vla = benchmark in ("calvin", "libero")
    assert ("--backbone" in done.stdout) == vla and ("--checkpoint" in done.stdout) == vla
    eb_loop = benchmark.startswith("embodied")
    # the EB agent loop's options
    for flag in (
        "--loop",
        "--n-examples",
        "--no-chat-history",
        "--history-messages",
    ):
        assert (flag in done.stdout) == eb_loop, flag
    assert ("--object-info-key" in done.stdout) == (benchmark == "embodied-manip")


@pytest.mark.parametrize(
    ("argv", "named"),
    [
        (["libero", "--policy", "agent", "--model", "answer-key"], "--policy agent does not run on libero"),
        (["calvin", "--policy", "agent", "--model", "answer-key"], "runs on embodied nav"),
        (["embodied", "nav", "--backbone", "tiny-qwen2.5-vl"], "--policy vla"),
        (
            ["calvin", "--policy", "mllm", "--model", "answer-key", "--n-examples", "2"],
            "unrecognized arguments: --n-examples",
        ),
    ],
)
def test_what_is_not_offered_is_refused_in_one_line(argv, named, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert named in err and len(err.strip().splitlines()) == 1, err


def test_help_of_a_chosen_policy_has_no_listing_of_the_others(capsys):
    assert main(["calvin", "--policy", "mllm", "--help"]) == 0
    out = capsys.readouterr().out
    assert "--policy mllm options:" in out and "--policy vla options" not in out


def test_top_level_help_and_an_unknown_command(capsys):
    with pytest.raises(SystemExit) as done:
        main(["--help"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    assert all(re.search(rf"^    {name}\b", out, re.MULTILINE) for name in [*SUBCOMMANDS, "list"])
    with pytest.raises(SystemExit) as done:
        main(["calvn"])
    assert done.value.code == 2
    assert "invalid choice: 'calvn'" in capsys.readouterr().err


def test_exit_statuses_are_the_modules(tmp_path, capsys):
    assert main(["calvin", "--num-sequences", "0"]) == 2
    assert "--num-sequences/--limit must be at least 1" in capsys.readouterr().err
    assert main(["embodied"]) == 2  # the module's own one-line error: a family is needed
    assert "needs a family first" in capsys.readouterr().err
    assert main(["embodied", "--help"]) == 0
    assert "nav: EB-Navigation" in capsys.readouterr().out
    failing = [
        "calvin",
        "--policy",
        "tests.closed_loop_policies:FailingModel",
        "--num-sequences",
        "1",
        "--ep-len",
        "2",
        "--output",
        str(tmp_path),
    ]
    assert main(failing) == 3
    assert "1 of 1 units ended in an error" in capsys.readouterr().err
    assert sys.argv[0] != "spatial-arena calvin"  # the caller's argv is restored


def test_a_subprocess_gets_the_same_status_as_python_m():
    ours = subprocess.run(
        [sys.executable, "-m", "benchmarks.command", "static", "--bench", "nope"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    theirs = subprocess.run(
        [sys.executable, "-m", "benchmarks.static", "--bench", "nope"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert ours.returncode == theirs.returncode == 2
    assert ours.stderr == theirs.stderr and "--bench must be one of" in ours.stderr


@pytest.mark.parametrize(
    "argv",
    [[name, *prefix] for name, command in SUBCOMMANDS.items() for prefix in {(), *command.help_pages}],
    ids=" ".join,
)
def test_every_subcommand_and_its_help_pages_answer_help(argv, capsys):
    """Issue 29: ``spatial-arena posttrain --help`` was an error; every registered command's help exits 0."""
    assert main([*argv, "--help"]) == 0, capsys.readouterr().err
    out = capsys.readouterr().out
    assert out.startswith("usage:"), out[:200]
    if argv == ["posttrain"]:
        assert "sft:" in out and "grpo:" in out
