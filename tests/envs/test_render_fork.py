"""Vectorised rendering envs after the process rendered: a forked copy refuses at once (it used to hang),
and the documented start method (forkserver) renders."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from envs.rendering import RENDER_SAFE_START

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = textwrap.dedent(f"""
    import gymnasium as gym
    import envs

    ID, SIZE = "SpatialArena/EBNavigation-v0", {{"width": 32, "height": 32}}

    def vector(context):
        return gym.make_vec(ID, 1, vectorization_mode="async", vector_kwargs={{"context": context}}, **SIZE)

    if __name__ == "__main__":
        env = gym.make(ID, **SIZE)
        env.reset(seed=0)  # this process now renders
        forked = vector("fork")
        try:
            forked.reset(seed=0)
            print("fork: rendered")
        except Exception as err:
            print("fork:", type(err).__name__, str(err).splitlines()[-1])
        forked.close(terminate=True)
        fresh = vector("{RENDER_SAFE_START}")
        obs, _ = fresh.reset(seed=0)
        print("{RENDER_SAFE_START}:", obs["rgb"].shape)
        fresh.close()
        env.close()
""")


@pytest.mark.skipif(sys.platform != "linux", reason="fork with EGL rendering is the Linux default")
def test_async_vector_env_after_rendering_refuses_to_fork_and_renders_with_forkserver(tmp_path):
    """Issue 29: ``gym.make_vec(ID, N, vectorization_mode="async")`` hung when the process had already made
    a navigation env: the forked worker waited forever on the parent's GL driver threads."""
    script = tmp_path / "vector_after_render.py"
    script.write_text(SCRIPT)
    # its own process group, so that a hung worker is killed with the script
    run = subprocess.Popen(
        [sys.executable, str(script)],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    try:
        out, err = run.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        os.killpg(run.pid, signal.SIGKILL)
        out, _ = run.communicate()
        pytest.fail(f"hung for 120 s: {out}")
    assert run.returncode == 0, err[-2000:]
    assert "fork: ForkedAfterRenderingError" in out and "vector_kwargs={'context': 'forkserver'}" in out, out
    assert f"{RENDER_SAFE_START}: (1, 32, 32, 3)" in out, out
