"""``gym.make_vec`` on every family's registered ids: sync and async vector envs, seeding per sub-env,
gymnasium's next-step autoreset, and sub-envs that render in worker processes the parent forked.

The default run checks CALVIN's and EB-Navigation's first registered id in sync mode and navigation in
async mode; ``-m slow`` checks every id (LIBERO: the first task of each suite, its 130 ids differ only in
the task file) and the other families' async runs.
"""

from __future__ import annotations

import copy
import importlib.util
import multiprocessing
import os
import re
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces
from gymnasium.vector.utils import create_shared_memory, read_from_shared_memory, write_to_shared_memory

import envs
from envs.vector import TextObservation

ROOT = Path(__file__).resolve().parents[2]
OFFICIAL = "envs.calvin.official:OfficialPlayTableEnv"
LIBERO_FIRSTS = {
    f"SpatialArena/Libero-{suite}-0-v0"
    for suite in ("libero_spatial", "libero_object", "libero_goal", "libero_10", "libero_90")
}
IDS = [
    i
    for i in envs.registered_ids()
    if gym.spec(i).entry_point != OFFICIAL and ("/Libero-" not in i or i in LIBERO_FIRSTS)
]
FIRST_OF_EACH = {i.split("/")[1].split("-")[0]: i for i in reversed(IDS)}
# Built in about a second; a LIBERO or EB-Manipulation scene takes several (tens under load).
FAST = [FIRST_OF_EACH["CalvinPlayTable"], FIRST_OF_EACH["EBNavigation"]]


def small(env_id: str) -> dict[str, object]:
    """Kwargs that make the env's images tiny (CALVIN's cameras have fixed sizes)."""
    entry = str(gym.spec(env_id).entry_point)
    if "navigation" in entry:
        return {"width": 24, "height": 24}
    if "manipulation" in entry or "libero" in entry:
        return {"image_size": 24}
    return {}


def _params(ids: list[str], *, fast: list[str]) -> list:
    return [pytest.param(i, id=i, marks=[] if i in fast else [pytest.mark.slow]) for i in ids]


def _digest(obs: object) -> object:
    if isinstance(obs, dict):
        return tuple((k, _digest(v)) for k, v in sorted(obs.items()))
    if isinstance(obs, np.ndarray):
        return obs.tobytes()
    return obs


def _sub_obs(obs: object, index: int) -> object:
    """Sub-env ``index``'s observation in a batched one (arrays by row, batched text by item)."""
    if isinstance(obs, dict):
        return {k: _sub_obs(v, index) for k, v in obs.items()}
    return obs[index]  # type: ignore[index]


def _rollout(vec: gym.vector.VectorEnv, seed: int, steps: int = 2) -> list:
    vec.action_space.seed(seed)
    obs, _ = vec.reset(seed=seed)
    trace = [_digest(obs)]
    for _ in range(steps):
        obs, reward, terminated, truncated, _ = vec.step(vec.action_space.sample())
        trace.append((_digest(obs), reward.tolist(), terminated.tolist(), truncated.tolist()))
    return trace


@pytest.mark.parametrize("env_id", _params(IDS, fast=FAST))
def test_sync_vector_env_seeds_each_sub_env_as_a_single_env(env_id):
    """``reset(seed=s)`` seeds sub-env ``i`` with ``s + i``: its first observation is a single env's."""
    vec = gym.make_vec(env_id, 2, vectorization_mode="sync", **small(env_id))
    single = gym.make(env_id, **small(env_id))
    try:
        assert vec.metadata["autoreset_mode"] == gym.vector.AutoresetMode.NEXT_STEP
        obs, info = vec.reset(seed=5)
        boxes = {k: b.shape for k, b in vec.single_observation_space.items() if isinstance(b, spaces.Box)}
        assert boxes and all(obs[k].shape == (2, *shape) for k, shape in boxes.items()), boxes
        assert info["is_success"].shape == (2,) and not info["is_success"].any()
        for index in range(2):
            alone, _ = single.reset(seed=5 + index)
            assert _digest(_sub_obs(obs, index)) == _digest(alone), index
        vec.action_space.seed(0)
        _, reward, terminated, truncated, info = vec.step(vec.action_space.sample())
        assert reward.shape == terminated.shape == truncated.shape == (2,) and "is_success" in info
    finally:
        vec.close()
        single.close()


def test_next_step_autoreset_starts_the_next_episode_on_the_following_step():
    """Gymnasium 1.x ``NEXT_STEP``: the step that ends an episode returns its last observation and info;
    the next step ignores its action and returns the next episode's first observation, reward 0."""
    env_id = "SpatialArena/EBNavigation-v0"
    vec = gym.make_vec(env_id, 2, vectorization_mode="sync", max_steps=1, **small(env_id))
    try:
        vec.reset(seed=0)
        _, _, _, truncated, info = vec.step(np.array([4, 4]))  # turn right: never a success
        assert truncated.all() and info["steps"].tolist() == [1, 1]
        _, reward, terminated, truncated, info = vec.step(np.array([4, 4]))
        assert info["steps"].tolist() == [0, 0] and reward.tolist() == [0.0, 0.0]
        assert not terminated.any() and not truncated.any() and not info["is_success"].any()
    finally:
        vec.close()


def test_async_navigation_matches_sync():
    """Async sub-envs (fresh interpreters: forkserver) step exactly as sync ones."""
    env_id, kwargs = "SpatialArena/EBNavigation-v0", small("SpatialArena/EBNavigation-v0")
    sync = gym.make_vec(env_id, 2, vectorization_mode="sync", **kwargs)
    fresh = gym.make_vec(
        env_id, 2, vectorization_mode="async", vector_kwargs={"context": "forkserver"}, **kwargs
    )
    try:
        assert _rollout(fresh, seed=3) == _rollout(sync, seed=3)
    finally:
        sync.close()
        fresh.close()


def test_text_observations_read_from_shared_memory_are_current():
    """Gymnasium reads a batched ``Text`` out of shared memory once (async vector envs then returned the
    empty buffer's text forever); ``TextObservation`` decodes the latest writes at every read."""
    space = spaces.Dict({"instruction": TextObservation(16, min_length=0, charset="abcdefgh ")})
    memory = create_shared_memory(space, n=2, ctx=multiprocessing.get_context())
    batch = read_from_shared_memory(space, memory, n=2)  # read once, as AsyncVectorEnv does
    write_to_shared_memory(space, 0, {"instruction": "a bad egg"}, memory)
    write_to_shared_memory(space, 1, {"instruction": ""}, memory)
    assert copy.deepcopy(batch) == {"instruction": ("a bad egg", "")}
    write_to_shared_memory(space, 1, {"instruction": "fed"}, memory)
    assert batch["instruction"][1] == "fed" and list(batch["instruction"]) == ["a bad egg", "fed"]


# An env made (not rendered) in the parent, then vectorised with the default start method (fork on
# Linux): no GL context exists before the first render, so the forked workers render.
SCRIPT = textwrap.dedent("""
    import sys
    import gymnasium as gym
    import envs

    ID, KW = sys.argv[1], eval(sys.argv[2])

    if __name__ == "__main__":
        parent = gym.make(ID, **KW)  # built here, as AsyncVectorEnv also builds one to read the spaces
        vec = gym.make_vec(ID, 2, vectorization_mode="async", **KW)
        obs, info = vec.reset(seed=0)
        images = [v for v in obs.values() if getattr(v, "ndim", 0) == 4]
        print("rendered", images[0].shape, int(images[0].max()) > 0, info["is_success"].tolist())
        vec.close()
        parent.close()
""")

ASYNC_AFTER_BUILD = [
    pytest.param("SpatialArena/EBManipulation-pick-v0", id="manipulation", marks=pytest.mark.slow),
    pytest.param("SpatialArena/Libero-libero_spatial-0-v0", id="libero", marks=pytest.mark.slow),
    pytest.param("SpatialArena/EBNavigation-v0", id="navigation"),
    pytest.param("SpatialArena/CalvinPlayTable-v0", id="calvin", marks=pytest.mark.slow),
]


@pytest.mark.skipif(sys.platform != "linux", reason="fork is the default start method on Linux")
@pytest.mark.parametrize("env_id", ASYNC_AFTER_BUILD)
def test_async_vector_env_of_an_env_built_in_the_parent_renders_in_forked_workers(env_id, tmp_path):
    """EB-Manipulation and LIBERO used to make their GL context when built: the parent's copy (and
    AsyncVectorEnv's own template env) left a GL driver that forked workers refused to render with."""
    if "Libero" in env_id and importlib.util.find_spec("libero") is None:
        pytest.skip("LIBERO is not installed")
    script = tmp_path / "vector_after_build.py"
    script.write_text(SCRIPT)
    run = subprocess.Popen(
        [sys.executable, str(script), env_id, repr(small(env_id))],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # a hung worker dies with the script's process group
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    try:
        out, err = run.communicate(timeout=300)
    except subprocess.TimeoutExpired:
        os.killpg(run.pid, signal.SIGKILL)
        out, _ = run.communicate()
        pytest.fail(f"hung for 300 s: {out}")
    assert run.returncode == 0, err[-2000:]
    assert "rendered (2, " in out and "True [False, False]" in out, out


GUIDE = ROOT / "docs" / "guide" / "vector-envs.md"
SNIPPETS = re.findall(r"```python\n(.*?)```", GUIDE.read_text(), flags=re.S)


@pytest.mark.parametrize(
    "snippet",
    [
        pytest.param(code, id=f"snippet{i}", marks=[pytest.mark.slow] if '"async"' in code else [])
        for i, code in enumerate(SNIPPETS)
    ],
)
def test_the_guide_snippets_run(snippet, tmp_path):
    """docs/guide/vector-envs.md: every Python block runs as a script (the async one in the slow run)."""
    script = tmp_path / "snippet.py"
    script.write_text(snippet)
    done = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip(), "a snippet prints what it shows"
