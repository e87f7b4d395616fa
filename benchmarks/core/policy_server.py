"""The run's policy server (``--serve batched``, :mod:`benchmarks.core.serving`): started before the workers,
handed to them, checked and stopped after the run; one function for every closed-loop benchmark."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from benchmarks.core.serving import ServedMLLM, ServedPolicy, ServedVLA, servable
from policies.config_cli import InputError
from policies.serve.process import batch_stats_line

if TYPE_CHECKING:
    from benchmarks.core.policy_cli import PolicyDefaults, PolicySpec
    from benchmarks.core.runner import Benchmark, ExecutionConfig
    from policies.serve.process import ServerProcess


def policy_server(
    spec: PolicySpec, defaults: PolicyDefaults | None, config: ExecutionConfig
) -> tuple[ServerProcess, Callable[[Any], ServedPolicy]]:
    """The server of ``spec``'s model (not started) and what turns its address into the workers'
    :class:`ServedPolicy` (:func:`servable` says which models there are)."""
    from policies.mllm.config import MLLMPolicyConfig

    policy = servable(spec.name, spec.config(defaults))
    batch, wait_ms = config.max_batch or config.workers, config.max_wait_ms
    if isinstance(policy, MLLMPolicyConfig):
        from policies.serve.process import BackendServerProcess

        mllm, options = policy, policy.backend_options()
        server = BackendServerProcess(
            mllm.model, options, max_batch=batch, max_wait_ms=wait_ms, clients=config.workers
        )
        return server, lambda model: ServedMLLM(mllm, model)
    from vla.serving import BatchedVLAServer

    vla = policy
    return BatchedVLAServer(vla, max_batch=batch, max_wait_ms=wait_ms), lambda address: ServedVLA(
        vla, address
    )


@contextmanager
def policy_serving(bench: Benchmark, spec: PolicySpec, defaults: PolicyDefaults | None) -> Iterator[None]:
    """With ``--serve batched``, the run's policy server for the block: started before it (a model that does
    not load, or a batch that does not fit, is a one-line :class:`InputError`), handed to the workers
    (``bench.served``), and checked after it: a server that died mid-run ends the command with one line and
    exit status 1, whatever the records say; one that lived says how full its batches were, in a line and in
    the run's ``summary.json`` (``serving``). Without it, nothing."""
    from policies.serve.process import ServerStartError

    config: ExecutionConfig = bench.config
    if config.serve == "off":
        yield
        return
    server, served = policy_server(spec, defaults, config)
    try:
        bench.served = served(server.start())
    except ServerStartError as err:
        raise InputError(str(err)) from None
    try:
        yield
    finally:
        bench.served = None
        death = server.died()
        stats = server.batch_stats() if death is None else None
        server.stop()
        if stats is not None:
            record_batch_stats(bench, stats)
        if death is not None:
            print(
                f"error: {death}; the units it did not answer are errors and the run is incomplete "
                "(rerun with --resume --retry-errors)",
                file=sys.stderr,
            )
            raise SystemExit(1)


def record_batch_stats(bench: Benchmark, stats: dict[str, Any]) -> None:
    """Print the server's batch statistics in one line and add them to the run's summary (``serving``)."""
    from benchmarks.core.rundir import RunDir, write_json

    print(batch_stats_line(stats))
    summary = RunDir(bench.run_path).summary_json
    if summary.is_file():  # no summary: the run stopped before writing one
        write_json(summary, {**json.loads(summary.read_text()), "serving": stats})
