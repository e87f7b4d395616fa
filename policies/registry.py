"""Policies by name: a registry of config dataclasses, with the policy modules imported only when built.

Each entry maps a name (the value of a benchmark's ``--policy`` flag) to a config dataclass and a builder,
both given as ``"module:attribute"`` strings so that listing or parsing flags imports nothing heavy. A
config's fields are its command-line options: each field's ``metadata["help"]`` documents it. The
built-ins (``expert``, ``random``, ``replay``, ``constant``: :mod:`policies.builtins`), ``mllm`` and ``agent``
are registered here. Policies of higher layers and other packages (``vla``: :mod:`vla.policy`) register
through the ``spatial_arena.policies`` entry point group, read on first use with :mod:`importlib.metadata`
(a package declares them in its ``pyproject.toml``; ``pip install -e .`` registers this checkout's), so
nothing here names a higher layer. A ``package.module:Class`` name is a user class instead
(:mod:`policies.user`).

Where a policy runs is declared here too, once: ``benchmarks`` names the closed-loop benchmarks it supports
(:data:`CLOSED_LOOP_BENCHMARKS`; ``None``: all of them). The benchmark commands refuse ``--policy NAME``
elsewhere in one line, and ``spatial-arena list`` and each ``--help`` offer only what runs there. A config
field whose ``metadata["benchmarks"]`` names benchmarks is an option there only (e.g. the EB agent loop's).

    config = policy_config("mllm", model="/ckpt/Qwen2.5-VL-7B-Instruct", loop="eb", task="navigation")
    policy = build_policy("mllm", config)
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import TYPE_CHECKING, Any

from policies.base import Policy
from policies.entry_point import load_entry_point

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

#: The closed-loop benchmarks, by the name their commands and run folders use.
CLOSED_LOOP_BENCHMARKS = ("calvin", "libero", "embodied-nav", "embodied-manip")
EMBODIED = ("embodied-nav", "embodied-manip")


@dataclass(frozen=True)
class PolicyEntry:
    config: str  # "module:ConfigClass"
    builder: str  # "module:function", called with the config instance
    benchmarks: tuple[str, ...] | None = None  # where it runs (None: every closed-loop benchmark)


_REGISTRY: dict[str, PolicyEntry] = {}
#: The entry point group an installed package declares its policies in: ``NAME = "module:ENTRY"``, where
#: ``ENTRY`` is a :class:`PolicyEntry` (e.g. this project's ``vla``, declared in its pyproject.toml).
ENTRY_POINT_GROUP = "spatial_arena.policies"


def register_policy(
    name: str, *, config: str, builder: str, benchmarks: tuple[str, ...] | None = None
) -> None:
    """Register a policy under ``name``; both targets are lazy ``"module:attribute"`` strings; ``benchmarks``
    lists the closed-loop benchmarks it runs on (default: all)."""
    entry = PolicyEntry(config, builder, None if benchmarks is None else tuple(benchmarks))
    if name in _REGISTRY and _REGISTRY[name] != entry:
        raise ValueError(f"policy name {name!r} is already registered to {_REGISTRY[name]}")
    _REGISTRY[name] = entry


@functools.cache
def register_installed_policies() -> tuple[str, ...]:
    """Register the policies installed packages declare in :data:`ENTRY_POINT_GROUP` (once); their names."""
    names = []
    for point in entry_points(group=ENTRY_POINT_GROUP):
        entry = point.load()
        if not isinstance(entry, PolicyEntry):
            raise TypeError(
                f"entry point {point.name} = {point.value!r} in {ENTRY_POINT_GROUP!r}: expected a "
                f"policies.registry.PolicyEntry, got {type(entry).__name__}"
            )
        register_policy(point.name, config=entry.config, builder=entry.builder, benchmarks=entry.benchmarks)
        names.append(point.name)
    return tuple(names)


def registered_policies() -> list[str]:
    register_installed_policies()
    return sorted(_REGISTRY)


def policy_benchmarks(name: str) -> tuple[str, ...]:
    """The closed-loop benchmarks policy ``name`` runs on."""
    return _entry(name).benchmarks or CLOSED_LOOP_BENCHMARKS


def policies_for(benchmark: str | None) -> list[str]:
    """The registered policies that run on ``benchmark`` (``None``: all of them)."""
    return [
        name for name in registered_policies() if benchmark is None or benchmark in policy_benchmarks(name)
    ]


def option_applies(field: dataclasses.Field[Any], benchmark: str | None) -> bool:
    """Whether a policy config field is an option on ``benchmark`` (its ``metadata["benchmarks"]``)."""
    only = field.metadata.get("benchmarks")
    return benchmark is None or only is None or benchmark in only


def _entry(name: str) -> PolicyEntry:
    register_installed_policies()
    if name not in _REGISTRY:
        raise KeyError(
            f"unknown policy {name!r}; registered: {registered_policies()} (installed packages add theirs "
            f"through the {ENTRY_POINT_GROUP!r} entry points: pip install -e . registers this checkout's)"
        )
    return _REGISTRY[name]


def policy_config_class(name: str) -> type[DataclassInstance]:
    """The config dataclass of policy ``name`` (cheap: its module imports no model code)."""
    return load_entry_point(_entry(name).config, what=f"policy {name!r} config")


def policy_config(name: str, **values: Any) -> DataclassInstance:
    """An instance of ``name``'s config; unknown field names are an error that lists the valid ones."""
    cls = policy_config_class(name)
    valid = [f.name for f in dataclasses.fields(cls)]
    unknown = sorted(set(values) - set(valid))
    if unknown:
        raise TypeError(f"policy {name!r} has no option(s) {unknown}; valid options: {valid}")
    return cls(**values)


def build_policy(name: str, config: DataclassInstance | None = None, **values: Any) -> Policy:
    """Build policy ``name`` from a config instance, or from field values."""
    if config is None:
        config = policy_config(name, **values)
    elif values:
        config = dataclasses.replace(config, **values)
    return load_entry_point(_entry(name).builder, what=f"policy {name!r} builder")(config)


# The built-ins, then the model policies. The closed-loop agent acts in EB-Navigation only. The VLA
# (continuous 7-D end-effector actions: CALVIN, LIBERO) comes through the entry point group.
register_policy("expert", config="policies.builtins:ExpertConfig", builder="policies.builtins:build_expert")
register_policy("random", config="policies.builtins:RandomConfig", builder="policies.builtins:build_random")
register_policy("replay", config="policies.builtins:ReplayConfig", builder="policies.builtins:build_replay")
register_policy(
    "constant", config="policies.builtins:ConstantConfig", builder="policies.builtins:build_constant"
)
register_policy(
    "mllm", config="policies.mllm.config:MLLMPolicyConfig", builder="policies.mllm.config:build_mllm_policy"
)
register_policy(
    "agent",
    config="policies.agent.policy:AgentPolicyConfig",
    builder="policies.agent.policy:build_agent_policy",
    benchmarks=("embodied-nav",),
)
