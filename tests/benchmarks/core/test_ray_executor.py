"""The Ray executor against a private local Ray instance (loopback only), including killed actors."""

import pytest

from benchmarks.core import InProcessExecutor, RunDir, comparable, run_benchmark
from tests.runner_fixtures import CartPoleBenchmark, CartPoleConfig

ray = pytest.importorskip("ray")


def test_ray_matches_in_process_and_survives_killed_actors(tmp_path):
    from benchmarks.core.ray_executor import RayExecutor

    config = CartPoleConfig(
        episodes=6, marker_dir=str(tmp_path), crash={"ep-002": "once", "ep-004": "always"}
    )
    run_benchmark(
        CartPoleBenchmark(config),
        tmp_path / "ray",
        executor=RayExecutor(workers=2, max_retries=1),
        progress=False,
    )
    clean = CartPoleConfig(episodes=6, marker_dir=str(tmp_path / "clean"))
    (tmp_path / "clean").mkdir()
    run_benchmark(CartPoleBenchmark(clean), tmp_path / "local", executor=InProcessExecutor(), progress=False)

    on_ray = {r["key"]: r for r in RunDir(tmp_path / "ray").merged_records()}
    local = {r["key"]: r for r in RunDir(tmp_path / "local").merged_records()}
    assert on_ray["ep-002"]["status"] == "ok" and on_ray["ep-002"]["attempts"] == 2
    assert on_ray["ep-004"]["status"] == "error" and "Ray actor died" in on_ray["ep-004"]["error"]
    for key in local:
        if key != "ep-004":
            assert comparable(on_ray[key]) == comparable(local[key])
    assert not ray.is_initialized()  # the private instance is shut down


def test_actor_resources_come_from_the_command_line_and_are_checked(tmp_path):
    from benchmarks.calvin import CalvinConfig
    from benchmarks.core.executors import make_executor
    from policies.config_cli import parse_config

    config = parse_config(CalvinConfig, ["--ray", "local", "--ray-num-cpus", "0.5", "--ray-num-gpus", "2"])
    executor = make_executor(
        config.workers, ray=config.ray, num_cpus=config.ray_num_cpus, num_gpus=config.ray_num_gpus
    )
    assert (executor.num_cpus, executor.num_gpus) == (0.5, 2.0)
    with pytest.raises(ValueError, match=r"asks for 2 GPU\(s\) \(--ray-num-gpus\) but the cluster has 0"):
        executor._actors_that_fit({"CPU": 8.0})
    assert make_executor(1, ray="local", num_cpus=0.5)._actors_that_fit({"CPU": 2.0}) == 4

    # Half-CPU actors: the run still matches the in-process one.
    config = CartPoleConfig(episodes=4, marker_dir=str(tmp_path))
    run_benchmark(
        CartPoleBenchmark(config),
        tmp_path / "ray",
        ray="local",
        ray_resources={"num_cpus": 0.5},
        progress=False,
    )
    run_benchmark(CartPoleBenchmark(config), tmp_path / "local", executor=InProcessExecutor(), progress=False)
    assert [comparable(r) for r in RunDir(tmp_path / "ray").merged_records()] == [
        comparable(r) for r in RunDir(tmp_path / "local").merged_records()
    ]
