"""LIBERO is configured without prompts, and writes only into the project's cache folder."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

pytest.importorskip("libero", reason="the libero extra is not installed")

from envs.libero import bootstrap

ROOT = Path(__file__).resolve().parents[3]
CONFIG_KEYS = {"benchmark_root", "bddl_files", "init_states", "datasets", "assets"}
_CLEARED = ("XDG_CACHE_HOME", bootstrap.CACHE_DIR_VARIABLE, "LIBERO_CONFIG_PATH", "MESA_SHADER_CACHE_DIR")


def test_config_points_at_the_installed_package_and_asset_wheels(tmp_path):
    path = bootstrap.write_config(tmp_path / "libero")
    config = yaml.safe_load(path.read_text())
    assert set(config) == CONFIG_KEYS
    assert (Path(config["assets"]) / "scenes" / "libero_kitchen_tabletop_base_style.xml").is_file()
    assert (Path(config["bddl_files"]) / "libero_10").is_dir()
    assert (Path(config["init_states"]) / "libero_goal" / "turn_on_the_stove.pruned_init").is_file()
    assert config["datasets"] == str(tmp_path / "libero" / "datasets")


def test_config_is_rewritten_only_when_it_changes(tmp_path):
    path = bootstrap.write_config(tmp_path)
    os.utime(path, (1, 1))
    bootstrap.write_config(tmp_path)
    assert path.stat().st_mtime == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["config.yaml"]  # no temporary file left


def test_cache_dir_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv(bootstrap.CACHE_DIR_VARIABLE, str(tmp_path / "mine"))
    assert bootstrap.libero_config_dir() == tmp_path / "mine" / "libero"
    monkeypatch.delenv(bootstrap.CACHE_DIR_VARIABLE)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert bootstrap.libero_config_dir() == tmp_path / "xdg" / "spatial_arena" / "libero"


def test_a_full_episode_writes_nothing_outside_the_project_cache(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    environment = {k: v for k, v in os.environ.items() if k not in _CLEARED} | {"HOME": str(home)}
    code = (
        "from envs.libero import make_libero_env\n"
        "env = make_libero_env('libero_goal', 7, image_size=32)\n"
        "env.reset(seed=0, options={'init_state_index': 0, 'num_steps_wait': 1})\n"
        "env.step(env.action_space.sample())\n"
        "env.close()\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", code], env=environment, cwd=ROOT, capture_output=True, text=True
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert "Initializing the default config file" not in run.stdout  # LIBERO found our config
    written = sorted(str(p.relative_to(home)) for p in home.rglob("*") if p.is_file())
    assert ".cache/spatial_arena/libero/config.yaml" in written
    assert [w for w in written if not w.startswith(".cache/spatial_arena/")] == []
