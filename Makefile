# Two entry points for a fresh machine (see README.md, Quick start):
#   make demo   - set up .venv and run the main job (CALVIN protocol, scripted expert, built-in play-table)
#   make test   - set up .venv with every optional group and run the test suite
# Every pip call goes through constraints.txt (torch==2.13.0 CPU build, pinned simulators).

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
PIP_INSTALL := $(PIP) install --quiet --disable-pip-version-check -c constraints.txt
# Headless rendering: MuJoCo through EGL (Mesa llvmpipe on CPU), PyBullet's TinyRenderer needs no GL.
export MUJOCO_GL ?= egl
export PYOPENGL_PLATFORM ?= egl
DEMO_ARGS ?= --policy expert --num-sequences 10 --output outputs

.PHONY: demo test test-slow test-gpu lint docs bench system-deps clean

demo: $(VENV)/.stamp-calvin
	$(PY) -m benchmarks.calvin $(DEMO_ARGS)

# REQUIRE_CHROMIUM: system-deps installed it, so the report's browser test fails rather than skips without it.
test: $(VENV)/.stamp-all system-deps
	REQUIRE_CHROMIUM=1 $(PY) -m pytest -q -p no:cacheprovider tests; rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "pytest collected no tests: failing on purpose"; exit 1; fi; exit $$rc

test-slow: $(VENV)/.stamp-all system-deps
	$(PY) -m pytest -q -p no:cacheprovider -m slow tests

# On a CUDA machine: the gpu-marked tests (bf16 training, CPU/GPU agreement); bench/gpu_check.sh adds SFT/GRPO.
test-gpu: $(VENV)/.stamp-all
	$(PY) -m pytest -q -p no:cacheprovider -m gpu tests/test_gpu.py

lint: $(VENV)/.stamp-all
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports
	$(VENV)/bin/mypy

# The documentation site (mkdocs-material, dev extra) into site/; `$(VENV)/bin/mkdocs serve` to browse it.
docs: $(VENV)/.stamp-all
	$(VENV)/bin/mkdocs build --strict

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --disable-pip-version-check --upgrade pip

# pyproject.toml is a prerequisite of the stamps: a change to it (extras, scripts, the spatial_arena.policies
# entry points that register `--policy vla`) re-runs the editable install, which rewrites the installed metadata.
$(VENV)/.stamp-calvin: pyproject.toml constraints.txt | $(VENV)/bin/python
	$(PIP_INSTALL) -e ".[calvin]"
	touch $@

$(VENV)/.stamp-all: pyproject.toml constraints.txt | $(VENV)/bin/python
	$(PIP_INSTALL) torch==2.13.0
	$(PIP_INSTALL) -e ".[all,dev]"
	touch $@ $(VENV)/.stamp-calvin

# OSMesa is the fallback OpenGL for MuJoCo when EGL is unavailable; EGL's Mesa libraries ship with the base image.
# Chromium (Debian's package) is the headless browser the report test opens pages in.
system-deps:
	@if ! ldconfig -p | grep -q libOSMesa.so; then \
		echo "installing libosmesa6 (software OpenGL fallback for MuJoCo)"; \
		SUDO=$$( [ "$$(id -u)" -eq 0 ] || echo sudo ); \
		$$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq libosmesa6 libegl1 libgl1 >/dev/null; \
	fi
	@if ! command -v chromium >/dev/null; then \
		echo "installing chromium (headless browser for the report test)"; \
		SUDO=$$( [ "$$(id -u)" -eq 0 ] || echo sudo ); \
		$$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq chromium chromium-driver >/dev/null; \
	fi

clean:
	rm -rf $(VENV) outputs .pytest_cache .ruff_cache .mypy_cache
