"""Command-line construction of benchmark + policy configs, and building the policy inside a worker.

A benchmark command takes its own config dataclass plus the config dataclass of the chosen policy, both
turned into flags the same way (``policies.config_cli``)::

    python -m benchmarks.calvin --num-sequences 100 --policy mllm --model /ckpt --api-base http://...:8000/v1

``--policy`` names a registered policy (``policies.registry``: the built-ins every benchmark has,
``expert``, ``random``, ``replay``, ``constant --action JSON``, and ``mllm``, ``vla``, ...) or a user class
``module:Name``. What a benchmark needs to know about a policy (does it look at images, is it privileged,
its run-folder label) comes from the policy's config, never from its name (:mod:`policies.builtins`).
``--backbone X`` is short for ``--policy vla --backbone X`` (the VLM4VLA way of comparing backbones), and
``--checkpoint DIR`` for ``--policy vla --checkpoint DIR`` (a model trained with ``vla.train``).
A policy option whose name the benchmark already has (e.g. ``seed``) takes the benchmark's value.
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from benchmarks.core.jsonsafe import json_safe
from policies.base import Policy
from policies.config_cli import (
    InputError,
    OneLineParser,
    add_config_arguments,
    config_from_namespace,
    parse_json_option,
)

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

    from benchmarks.core.serving import ServedPolicy

C = TypeVar("C", bound="DataclassInstance")  # a config dataclass
#: Per benchmark, policy name -> option values that replace the policy's defaults there (e.g. the
#: benchmark's scripted expert, the EB agent loop for navigation); explicit flags still win.
PolicyDefaults = Mapping[str, Mapping[str, Any]]


@dataclass(frozen=True)
class PolicySpec:
    """Everything needed to build the policy in another process (JSON-safe, picklable)."""

    name: str
    options: dict[str, Any]
    policy_kwargs: dict[str, Any] = dataclasses.field(default_factory=dict)

    def manifest(self) -> dict[str, Any]:
        """The policy's identity for the run manifest; for a model, the decoding settings its backend gets."""
        config = self.config()
        out = {
            "name": self.name,
            "options": self.options,
            "label": self.label,
            "privileged": bool(getattr(config, "privileged", False)),
        }
        if config is not None and hasattr(config, "generation"):
            out["generation"] = config.generation()
        return out

    def config(self, defaults: PolicyDefaults | None = None) -> DataclassInstance | None:
        """The registered policy's config dataclass instance (``None`` for a user class): ``defaults[name]``
        (the benchmark's) under the spec's options."""
        from policies.registry import policy_config_class

        if ":" in self.name:
            return None
        cls = policy_config_class(self.name)
        names = {f.name for f in dataclasses.fields(cls)}
        values = {**(defaults or {}).get(self.name, {}), **self.options}
        return cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in values.items() if k in names})

    @property
    def blind(self) -> bool:
        """The policy looks at no image (its config says ``blind``): a benchmark renders no camera for it."""
        from policies.registry import policy_config_class

        return ":" not in self.name and bool(getattr(policy_config_class(self.name), "blind", False))

    @property
    def label(self) -> str:
        """A short name for run folders: the config's ``label()``, else the policy name, or the class of a
        user policy."""
        config = self.config()
        if config is not None and hasattr(config, "label"):
            return config.label()
        return self.name.rsplit(":", 1)[-1]


def _policy_name(argv: Sequence[str], default: str) -> str:
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--policy", default=None)
    pre.add_argument("--backbone", default=None)
    pre.add_argument("--checkpoint", default=None)
    known, _ = pre.parse_known_args(argv)
    vla_flag = "--backbone" if known.backbone else "--checkpoint" if known.checkpoint else None
    if vla_flag and known.policy not in (None, "vla"):
        raise InputError(
            f"{vla_flag} builds a VLA policy; it cannot be combined with --policy {known.policy} "
            f"(drop one of them)"
        )
    return "vla" if vla_flag else (known.policy or default)


def parse_benchmark_args(
    cls: type[C],
    argv: Sequence[str] | None = None,
    *,
    prog: str | None = None,
    policy_defaults: PolicyDefaults | None = None,
    benchmark: str | None = None,
) -> tuple[C, PolicySpec]:
    """Parse the benchmark config ``cls`` (which has ``policy`` and ``policy_kwargs`` fields) and the
    options of the chosen policy. ``policy_defaults[name]`` overrides that policy's defaults for this
    benchmark (e.g. its scripted expert, the EB agent loop for navigation); explicit flags still win. A
    policy option the benchmark also has (``--seed``, ``--replay-file``) takes the benchmark's value.

    ``benchmark`` (a name in ``policies.registry.CLOSED_LOOP_BENCHMARKS``) offers only the policies and the
    policy options that run there, and refuses the others in one line; ``None`` offers everything."""
    import sys

    argv = list(sys.argv[1:] if argv is None else argv)
    bench_fields = {f.name for f in dataclasses.fields(cls)}
    default_policy = next(f.default for f in dataclasses.fields(cls) if f.name == "policy")
    assert isinstance(default_policy, str), f"{cls.__name__}.policy needs a default policy name"
    name = _policy_name(argv, default_policy)
    parser, policy_cls = _parser_for(cls, name, bench_fields, prog, policy_defaults, benchmark)
    if not _has_flags(policy_cls, bench_fields, benchmark) and {"-h", "--help"} & set(argv):
        parser.epilog = policy_options_help(bench_fields, benchmark)
    namespace = parser.parse_args(argv)
    namespace.policy = name
    try:
        config = config_from_namespace(cls, namespace)
    except ValueError as exc:  # a value the config rejects (e.g. --limit 0): one line, argparse's exit status
        parser.exit(2, f"{parser.prog}: error: {exc}\n")
    return config, _checked_spec(name, namespace, policy_cls, config)


def _parser_for(
    cls: type,
    name: str,
    bench_fields: set[str],
    prog: str | None,
    policy_defaults: PolicyDefaults | None,
    benchmark: str | None,
) -> tuple[OneLineParser, type | None]:
    """The benchmark's parser with the registered policy ``name``'s options (none for a user's class)."""
    from policies.registry import policies_for, policy_benchmarks, policy_config_class, registered_policies

    parser = OneLineParser(
        prog=prog, description=cls.__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    add_config_arguments(parser, cls)
    offered = policies_for(benchmark)
    for action in parser._actions:  # --policy's help lists what runs here, from the registry
        if action.dest == "policy":
            action.help = (
                f"{' | '.join(offered)} | package.module:Class (your own policy) (default: {action.default})"
            )
    if ":" in name:
        return parser, None
    if name not in registered_policies():
        parser.error(f"--policy {name!r}: choose one of {offered} or a class of your own as module:Name")
    if name not in offered:
        runs_on = ", ".join(b.replace("-", " ") for b in policy_benchmarks(name))
        parser.error(
            f"--policy {name} does not run on {(benchmark or '').replace('-', ' ')} (it runs on {runs_on}); "
            f"choose one of {offered}"
        )
    policy_cls = policy_config_class(name)
    group = parser.add_argument_group(f"--policy {name} options")
    add_config_arguments(
        group, policy_cls, skip=bench_fields | _other_benchmarks_options(policy_cls, benchmark)
    )
    parser.set_defaults(**(policy_defaults or {}).get(name, {}))
    return parser, policy_cls


def _other_benchmarks_options(config_cls: type, benchmark: str | None) -> set[str]:
    """The fields of a policy config that are options on other benchmarks only (no flag here)."""
    from policies.registry import option_applies

    return {f.name for f in dataclasses.fields(config_cls) if not option_applies(f, benchmark)}


def _checked_spec(
    name: str, namespace: argparse.Namespace, policy_cls: type | None, config: object
) -> PolicySpec:
    """The policy's spec from the parsed flags, after the policy's own input checks (one-line errors)."""
    options: dict[str, Any] = {}
    if policy_cls is not None:
        options = {
            f.name: getattr(namespace, f.name)
            for f in dataclasses.fields(policy_cls)
            if f.name in vars(namespace)
        }
    kwargs = parse_json_option("--policy-kwargs", getattr(config, "policy_kwargs", "{}"))
    _check_user_class(name)
    spec = PolicySpec(name, json_safe(options), kwargs)
    policy_config = spec.config()
    if policy_config is not None and hasattr(policy_config, "check_inputs"):
        try:
            policy_config.check_inputs()
        except ValueError as error:
            raise InputError(str(error)) from None
    return spec


def policy_options_help(skip: set[str] | frozenset[str] = frozenset(), benchmark: str | None = None) -> str:
    """The options of every policy that runs on ``benchmark`` (``None``: every registered policy), one
    section per policy, for a help page where none is chosen.

    Policy options are parsed only once ``--policy NAME`` (or ``--backbone`` / ``--checkpoint``) picks the
    policy, so without this text ``--help`` would not show ``--model``, ``--backbone`` or ``--checkpoint``."""
    from policies.registry import policies_for, policy_config_class

    sections = []
    for name in policies_for(benchmark):  # one parser each: two policies may share an option name (--device)
        listing = argparse.ArgumentParser(add_help=False, usage=argparse.SUPPRESS)
        shortcut = " (--backbone / --checkpoint select it)" if name == "vla" else ""
        group = listing.add_argument_group(f"--policy {name} options{shortcut}")
        config_cls = policy_config_class(name)
        add_config_arguments(
            group, config_cls, skip=set(skip) | _other_benchmarks_options(config_cls, benchmark)
        )
        section = listing.format_help().strip()
        if section:  # a policy without options of its own (random, expert) has no section
            sections.append(section)
    return "\n\n".join(["policy options (accepted once --policy picks the policy):", *sections])


def _has_flags(config_cls: type | None, skip: set[str], benchmark: str | None = None) -> bool:
    """Whether the config dataclass adds flags of its own (fields with a flag that the benchmark lacks)."""
    return config_cls is not None and any(
        f.init and f.metadata.get("cli") is not False and f.name not in skip
        for f in dataclasses.fields(config_cls)
        if f.name not in _other_benchmarks_options(config_cls, benchmark)
    )


def _check_user_class(name: str) -> None:
    """What would otherwise fail in every worker: a user class that is not there."""
    if ":" in name:
        from policies.entry_point import load_entry_point

        try:
            load_entry_point(name, what="--policy")
        except (ImportError, AttributeError, ValueError) as e:  # the message names the input and the fix
            raise InputError(str(e)) from None


def preflight(
    spec: PolicySpec,
    config: object,
    *,
    defaults: PolicyDefaults | None = None,
    action_space: Callable[[], Any] | None = None,
) -> None:
    """What would otherwise stop every worker as it is built, checked once in this process before any starts:
    Ray GPUs this machine lacks, a policy ``--serve batched`` cannot serve, the policy config's ``preflight()``
    (model folder, checkpoint, server, device: no model is loaded) and its ``check_action_space`` against
    ``action_space()`` (the env's space, built without a simulator). Each failure is one :class:`InputError`
    naming the flag and the fix."""
    policy_config = spec.config(defaults)
    if getattr(config, "serve", "off") != "off":
        from benchmarks.core.serving import servable

        servable(spec.name, policy_config)
    try:
        _check_ray(config)
        if policy_config is not None and hasattr(policy_config, "preflight"):
            policy_config.preflight()
        if (
            policy_config is not None
            and hasattr(policy_config, "check_action_space")
            and action_space is not None
        ):
            policy_config.check_action_space(action_space())
    except ValueError as error:
        raise InputError(str(error)) from None


def _check_ray(config: object) -> None:
    """``--ray-num-gpus`` goes with ``--ray``; with ``--ray local`` this machine must have the GPUs."""
    from policies.preflight import check_gpus

    gpus, ray = getattr(config, "ray_num_gpus", 0.0), getattr(config, "ray", None)
    if gpus and ray is None:
        raise ValueError(
            f"--ray-num-gpus {gpus:g} is what each Ray worker declares: add --ray local (or auto, or "
            f"a cluster address), or drop it"
        )
    if ray == "local":
        check_gpus("--ray-num-gpus", gpus)


def build_policy_from_spec(
    spec: PolicySpec, *, defaults: PolicyDefaults | None = None, served: ServedPolicy | None = None
) -> Policy:
    """Build the policy a spec describes (called inside each worker process); ``defaults`` are the
    benchmark's policy defaults (its ``policy_defaults``), for specs made in code rather than parsed. With
    ``served`` (``--serve batched``) the same policy is built around the run's server instead of a model."""
    from policies.registry import build_policy
    from policies.user import load_user_policy

    if served is not None:
        return served.build()
    if ":" in spec.name:
        return load_user_policy(spec.name, spec.policy_kwargs)
    return build_policy(spec.name, spec.config(defaults))
