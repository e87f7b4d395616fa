"""Command-line construction of benchmark + policy configs, and building the policy inside a worker.

A benchmark command takes its own config dataclass plus the config dataclass of the chosen policy, both
turned into flags the same way (``policies.cli``)::

    python -m benchmarks.calvin --num-sequences 100 --policy mllm --model /ckpt --api-base http://...:8000/v1

``--policy`` names a registered policy (``policies.registry``: ``mllm``, ``vla``, ...), one of the
built-ins every benchmark has (``expert``, ``random``, ``replay``, ``constant --action JSON``), or a user
class ``module:Name``.
``--backbone X`` is short for ``--policy vla --backbone X`` (the VLM4VLA way of comparing backbones), and
``--checkpoint DIR`` for ``--policy vla --checkpoint DIR`` (a model trained with ``vla.train``).
A policy option whose name the benchmark already has (e.g. ``seed``) takes the benchmark's value.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from policies.base import Policy
from policies.cli import (
    InputError,
    OneLineParser,
    add_config_arguments,
    config_from_namespace,
    parse_json_option,
)

C = TypeVar("C")
BUILTIN_POLICIES = ("expert", "random", "replay", "constant")
#: Built-ins that look at no image (a benchmark renders no camera for them unless it records videos).
BLIND_POLICIES = ("expert", "random", "replay", "constant")


@dataclass(frozen=True)
class PolicySpec:
    """Everything needed to build the policy in another process (JSON-safe, picklable)."""

    name: str
    options: dict[str, Any]
    replay_file: str | None = None
    policy_kwargs: dict[str, Any] = dataclasses.field(default_factory=dict)

    def manifest(self) -> dict[str, Any]:
        """The policy's identity for the run manifest; for a model, the decoding settings its backend gets."""
        out = {"name": self.name, "options": self.options, "label": self.label,
               "privileged": self.name == "expert" or self.options.get("model") == "oracle"}
        config = self.config()
        if config is not None and hasattr(config, "generation"):
            out["generation"] = config.generation()
        return out

    def config(self) -> Any:
        """The registered policy's config dataclass instance (``None`` for built-ins and user classes)."""
        from policies.registry import policy_config_class, registered_policies

        if self.name not in registered_policies():
            return None
        cls = policy_config_class(self.name)
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in self.options.items() if k in names})

    @property
    def label(self) -> str:
        """A short name for run folders: the policy name, or the class of a user policy."""
        if self.name == "vla":
            checkpoint = self.options.get("checkpoint")
            return "vla-" + (_checkpoint_label(checkpoint) if checkpoint else _backbone_label(self.options.get("backbone")))
        if self.name == "mllm":
            return "mllm-" + str(self.options.get("model", "")).rstrip("/").split("/")[-1]
        if self.name == "constant":
            return "constant-" + _action_label(self.options.get("action"))
        return self.name.rsplit(":", 1)[-1]


def _backbone_label(path: object) -> str:
    """``RUN/final`` or ``RUN/checkpoint-500`` (how ``benchmarks.posttrain`` lays out a run) -> ``RUN-final`` /
    ``RUN-checkpoint-500``, so two post-trained backbones get two run folders; else the last part."""
    parts = str(path or "").rstrip("/").split("/")
    if len(parts) >= 2 and (parts[-1] == "final" or parts[-1].startswith("checkpoint-")):
        return f"{parts[-2]}-{parts[-1]}"
    return parts[-1]


def _action_label(action: object) -> str:
    """``0`` -> ``0``; ``[0, 0.5, -1]`` -> ``0_0.5_-1`` (safe in a folder name)."""
    values = action if isinstance(action, list) else [action]
    return "_".join(f"{v:g}" if isinstance(v, (int, float)) else str(v) for v in values)


def _checkpoint_label(checkpoint: str) -> str:
    """``RUN/checkpoints/last`` (how vla.train lays checkpoints out) -> ``RUN-last``; else the last part."""
    parts = str(checkpoint).rstrip("/").split("/")
    if len(parts) >= 3 and parts[-2] == "checkpoints":
        return f"{parts[-3]}-{parts[-1]}"
    return parts[-1]


def _policy_name(argv: Sequence[str], default: str) -> str:
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--policy", default=None)
    pre.add_argument("--backbone", default=None)
    pre.add_argument("--checkpoint", default=None)
    known, _ = pre.parse_known_args(argv)
    vla_flag = "--backbone" if known.backbone else "--checkpoint" if known.checkpoint else None
    if vla_flag and known.policy not in (None, "vla"):
        raise InputError(f"{vla_flag} builds a VLA policy; it cannot be combined with --policy {known.policy} "
                         f"(drop one of them)")
    return "vla" if vla_flag else (known.policy or default)


def parse_benchmark_args(
    cls: type[C],
    argv: Sequence[str] | None = None,
    *,
    prog: str | None = None,
    policy_defaults: dict[str, dict[str, Any]] | None = None,
) -> tuple[C, PolicySpec]:
    """Parse the benchmark config ``cls`` (which has ``policy``, ``replay_file`` and ``policy_kwargs``
    fields) and the options of the chosen policy. ``policy_defaults[name]`` overrides that policy's
    defaults for this benchmark (e.g. the EB agent loop for navigation); explicit flags still win."""
    import sys

    from policies.registry import policy_config_class, registered_policies

    argv = list(sys.argv[1:] if argv is None else argv)
    bench_fields = {f.name for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    default_policy = next(f.default for f in dataclasses.fields(cls) if f.name == "policy")  # type: ignore[arg-type]
    name = _policy_name(argv, default_policy)
    parser = OneLineParser(prog=prog, description=cls.__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_config_arguments(parser, cls)
    policy_cls = None
    if name not in BUILTIN_POLICIES and ":" not in name:
        if name not in registered_policies():
            parser.error(f"--policy {name!r}: choose one of {[*BUILTIN_POLICIES, *registered_policies()]} "
                         f"or a class of your own as module:Name")
        policy_cls = policy_config_class(name)
        group = parser.add_argument_group(f"--policy {name} options")
        add_config_arguments(group, policy_cls, skip=bench_fields)  # type: ignore[arg-type]
        parser.set_defaults(**(policy_defaults or {}).get(name, {}))
    if name == "constant":
        group = parser.add_argument_group("--policy constant options")
        group.add_argument("--action", required=True, type=_json_action, metavar="JSON",
                           help="the native action sent at every step: an integer (Discrete spaces, e.g. 0) or a "
                                "JSON list (e.g. '[0, 0, 1, 0, 0, 0, -1]')")
    elif policy_cls is None and {"-h", "--help"} & set(argv):
        parser.epilog = policy_options_help(bench_fields)
    namespace = parser.parse_args(argv)
    namespace.policy = name
    try:
        config = config_from_namespace(cls, namespace)
    except ValueError as exc:  # a value the config rejects (e.g. --limit 0): one line, argparse's exit status
        parser.exit(2, f"{parser.prog}: error: {exc}\n")
    options: dict[str, Any] = {}
    if policy_cls is not None:
        options = {f.name: getattr(namespace, f.name) for f in dataclasses.fields(policy_cls)
                   if f.name in vars(namespace)}
    if name == "constant":
        options = {"action": namespace.action}
    kwargs = parse_json_option("--policy-kwargs", getattr(config, "policy_kwargs", "{}"))
    _check_policy_inputs(name, getattr(config, "replay_file", None))
    spec = PolicySpec(name, _json_safe(options), getattr(config, "replay_file", None), kwargs)
    policy_config = spec.config()
    if policy_config is not None and hasattr(policy_config, "check_inputs"):
        try:
            policy_config.check_inputs()
        except ValueError as error:
            raise InputError(str(error)) from None
    return config, spec


def policy_options_help(skip: set[str] | frozenset[str] = frozenset()) -> str:
    """Every registered policy's options, one section per policy, for a help page where none is chosen.

    Policy options are parsed only once ``--policy NAME`` (or ``--backbone`` / ``--checkpoint``) picks the
    policy, so without this text ``--help`` would not show ``--model``, ``--backbone`` or ``--checkpoint``."""
    from policies.registry import policy_config_class, registered_policies

    sections = []
    for name in registered_policies():  # one parser each: two policies may share an option name (--device)
        listing = argparse.ArgumentParser(add_help=False, usage=argparse.SUPPRESS)
        shortcut = " (--backbone / --checkpoint select it)" if name == "vla" else ""
        group = listing.add_argument_group(f"--policy {name} options{shortcut}")
        add_config_arguments(group, policy_config_class(name), skip=skip)  # type: ignore[arg-type]
        sections.append(listing.format_help().strip())
    return "\n\n".join(["policy options (accepted once --policy picks the policy):", *sections])


def _check_policy_inputs(name: str, replay_file: str | None) -> None:
    """What would otherwise fail in every worker: a replay without its file, a user class that is not there."""
    if name == "replay" and not replay_file:
        raise InputError("--policy replay needs --replay-file PATH (a .jsonl, .hdf5, .npy or .npz of actions)")
    if ":" in name:
        import importlib

        module, _, attribute = name.partition(":")
        try:
            found = hasattr(importlib.import_module(module), attribute)
        except ImportError as e:
            raise InputError(f"--policy {name}: cannot import {module} ({e}); check the module path and that it "
                             f"is importable from here") from None
        if not found:
            raise InputError(f"--policy {name}: {module} has no attribute {attribute!r}")


def _json_action(text: str) -> int | float | list[Any]:
    """``--action`` value: a JSON number or a flat list of numbers."""
    try:
        value = json.loads(text)
    except ValueError:
        value = None
    numbers = value if isinstance(value, list) else [value]
    if not numbers or not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in numbers):
        raise argparse.ArgumentTypeError(f"{text!r} is not a number or a JSON list of numbers (e.g. 0 or '[0, 0, 1]')")
    return value


def _json_safe(options: dict[str, Any]) -> dict[str, Any]:
    return {k: list(v) if isinstance(v, tuple) else v for k, v in options.items()}


def build_policy_from_spec(spec: PolicySpec, *, expert: Callable[[], Policy] | None = None) -> Policy:
    """Build the policy a spec describes (called inside each worker process)."""
    from policies.baselines import ConstantPolicy, RandomPolicy, ReplayPolicy
    from policies.registry import build_policy
    from policies.user import load_user_policy

    if spec.name == "expert":
        if expert is None:
            raise ValueError("this benchmark has no scripted expert")
        return expert()
    if spec.name == "random":
        return RandomPolicy()
    if spec.name == "constant":
        if "action" not in spec.options:
            raise ValueError("--policy constant needs --action VALUE (an integer or a JSON list)")
        return ConstantPolicy(spec.options["action"])
    if spec.name == "replay":
        if not spec.replay_file:
            raise ValueError("--policy replay needs --replay-file PATH")
        return ReplayPolicy.from_file(spec.replay_file)
    if ":" in spec.name:
        return load_user_policy(spec.name, spec.policy_kwargs)
    return build_policy(spec.name, spec.config())
