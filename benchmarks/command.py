"""``spatial-arena``: one command with a subcommand per entry point, plus ``spatial-arena list``.

    spatial-arena calvin --num-sequences 10            # same as python -m benchmarks.calvin --num-sequences 10
    spatial-arena embodied nav --policy random
    spatial-arena list                                 # benchmarks, env ids, policies, backbones, scoring modes

A subcommand runs its ``python -m`` module exactly as ``python -m`` does (``runpy``), so arguments, help
and exit statuses are the same (2: bad input, 3: a run with errored units). Subcommands are addressed by
their ``python -m`` name, the stable public interface, not by where their ``main`` lives. This module and
``list`` import no simulator and no torch: everything listed comes from cheap registries.
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import runpy
import sys
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from policies.config_cli import OneLineParser


@dataclass(frozen=True)
class Subcommand:
    """One entry point: the ``python -m`` module it runs and a one-line summary."""

    module: str
    summary: str
    #: argument prefixes whose ``--help`` pages make up the command's reference (e.g. each family).
    help_pages: tuple[tuple[str, ...], ...] = ((),)


SUBCOMMANDS: dict[str, Subcommand] = {
    "calvin": Subcommand("benchmarks.calvin", "CALVIN long-horizon protocol (chains of 5 subtasks)"),
    "libero": Subcommand("benchmarks.libero", "LIBERO suites (50 fixed initial states per task)"),
    "embodied": Subcommand(
        "benchmarks.embodied",
        "EmbodiedBench-style navigation (nav) or manipulation (manip)",
        (("nav",), ("manip",)),
    ),
    "static": Subcommand(
        "benchmarks.static",
        "static spatial benchmarks (SpatialScore, SPACE-10, ...); 'static generate' makes fresh sets",
        ((), ("generate",)),
    ),
    "goal": Subcommand(
        "benchmarks.goal_scoring",
        "goal-image scoring: predict, score, convert, generate",
        ((), ("predict",), ("score",), ("convert",), ("generate",)),
    ),
    "compare": Subcommand(
        "benchmarks.evidence.compare", "paired comparison of runs on their shared units (McNemar, bootstrap)"
    ),
    "power": Subcommand("benchmarks.evidence.power", "units needed to detect a difference, from a pilot run"),
    "report": Subcommand(
        "benchmarks.evidence.report", "one self-contained HTML report of runs (and their paired comparison)"
    ),
    "serve": Subcommand("policies.serve", "serve a transformers model over an OpenAI-compatible API"),
    "train": Subcommand("vla.train", "train a VLA (backbone + action head) on CALVIN/LIBERO-format data"),
    "demos": Subcommand(
        "vla.demos",
        "scripted-expert demonstrations: --env calvin (CALVIN layout) or libero (LIBERO HDF5, LeRobot v3)",
        ((), ("--env", "libero")),
    ),
    "tiny": Subcommand("policies.tiny", "build a tiny randomly initialised VLM for smoke tests"),
    "posttrain": Subcommand(
        "benchmarks.posttrain",
        "post-train a VLM on the spatial corpus with TRL (sft or grpo)",
        (("sft",), ("grpo",)),
    ),
}
BENCHMARKS = ("calvin", "libero", "embodied", "static", "goal")


def run_module(module: str, args: Sequence[str], prog: str) -> int:
    """Run ``python -m module args`` in this process and return its exit status."""
    saved = sys.argv
    sys.argv = [prog, *args]
    try:
        # imported earlier in this process (tests): runpy runs a fresh copy anyway
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", "'.*' found in sys.modules", RuntimeWarning)
            runpy.run_module(module, run_name="__main__", alter_sys=True)
    except SystemExit as done:
        return exit_status(done.code)
    finally:
        sys.argv = saved
    return 0


def exit_status(code: object) -> int:
    """The process exit status Python gives ``sys.exit(code)``: None -> 0, an int as is, text -> 1 (printed)."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


# ------------------------------------------------------------------------------------------------ list


def env_families() -> dict[str, list[str]]:
    """Registered ``SpatialArena/*`` env ids grouped by the class that implements them."""
    import gymnasium as gym

    import envs

    groups: dict[str, list[str]] = {}
    for env_id in envs.registered_ids():
        entry = gym.spec(env_id).entry_point
        # a registered id always has an entry point: a "module:Class" string or the class itself
        name = entry if isinstance(entry, str) else getattr(entry, "__qualname__", str(entry))
        groups.setdefault(name, []).append(env_id)
    return groups


def policy_names() -> list[str]:
    """The registered policies: the built-ins (expert, random, replay, constant), mllm, vla, agent and any a
    user registered."""
    from policies.registry import registered_policies

    return registered_policies()


def policy_benchmarks() -> dict[str, list[str]]:
    """Each registered policy and the closed-loop benchmarks it runs on, as their commands spell them
    (``embodied nav``), from the registry's declaration."""
    from policies.registry import policy_benchmarks as runs_on

    return {name: [b.replace("-", " ") for b in runs_on(name)] for name in policy_names()}


def vla_backbones() -> dict[str, list[str]]:
    """VLA backbone names by kind, read from ``vla.backbones``'s source without importing it (it needs torch).

    ``tiny``: ``--backbone`` names built locally; ``native``: non-transformers backbones; ``transformers``:
    the checkpoint ``model_type`` values a registered backbone class handles (pass a checkpoint path or id).
    """
    spec = importlib.util.find_spec("vla.backbones")
    if spec is None or spec.origin is None:
        return {}
    with open(spec.origin, encoding="utf-8") as f:
        tree = ast.parse(f.read())
    found = {
        "tiny": _dict_keys(tree, "TINY_BACKBONES"),
        "native": _dict_keys(tree, "NATIVE_BACKBONES"),
        "transformers": sorted(_registered_model_types(tree)),
    }
    return {kind: names for kind, names in found.items() if names}


def _dict_keys(tree: ast.Module, name: str) -> list[str]:
    """The string keys of the module-level dict literal assigned to ``name``."""
    for node in tree.body:
        if not isinstance(node, (ast.Assign, ast.AnnAssign)):
            continue
        target = node.target if isinstance(node, ast.AnnAssign) else node.targets[0]
        if isinstance(target, ast.Name) and target.id == name and isinstance(node.value, ast.Dict):
            return [
                k.value for k in node.value.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)
            ]
    return []


def _registered_model_types(tree: ast.Module) -> Iterator[str]:
    """``model_types`` of every class decorated with ``@register_backbone``."""
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and any(
            isinstance(d, ast.Name) and d.id == "register_backbone" for d in node.decorator_list
        ):
            for item in node.body:
                if isinstance(item, ast.Assign) and any(
                    isinstance(t, ast.Name) and t.id == "model_types" for t in item.targets
                ):
                    yield from (
                        e.value
                        for e in getattr(item.value, "elts", ())
                        if isinstance(e, ast.Constant) and isinstance(e.value, str)
                    )


def static_benchmarks() -> dict[str, list[str]]:
    """Static benchmarks and their scoring modes (the project's first)."""
    from benchmarks.static.registry import benchmark_names, get_benchmark

    return {name: list(get_benchmark(name).modes) for name in benchmark_names()}


def goal_scorers() -> list[str]:
    """Goal-image scorers (``--scorer`` of ``spatial-arena goal score``)."""
    from benchmarks.scoring.goal import SCORERS

    return sorted(SCORERS)


def embodied_families() -> list[str]:
    """The families of ``spatial-arena embodied``."""
    from benchmarks.embodied import FAMILIES

    return list(FAMILIES)


def listing() -> str:
    """Everything ``spatial-arena list`` prints."""
    lines = ["benchmarks (spatial-arena NAME --help):"]
    for name in BENCHMARKS:
        families = f" [{' | '.join(embodied_families())}]" if name == "embodied" else ""
        lines.append(f"  {name}{families}: {SUBCOMMANDS[name].summary}")
    lines.append("static benchmarks (spatial-arena static --bench NAME --mode MODE; --policy mllm or agent):")
    lines += [f"  {name}: modes {', '.join(modes)}" for name, modes in static_benchmarks().items()]
    lines.append(f"goal-image scorers (spatial-arena goal score --scorer NAME): {', '.join(goal_scorers())}")
    lines.append("policies (--policy NAME, or package.module:Class on any benchmark), where each runs:")
    lines += [f"  {name}: {', '.join(where)}" for name, where in policy_benchmarks().items()]
    lines.append("VLA backbones (--backbone NAME_OR_PATH):")
    lines += [f"  {kind}: {', '.join(names)}" for kind, names in vla_backbones().items()]
    groups = env_families()
    lines.append(f"environments ({sum(map(len, groups.values()))} ids; gym.make(ID) after `import envs`):")
    for entry, ids in groups.items():
        lines.append(f"  {entry} ({len(ids)}):")
        lines += [f"    {env_id}" for env_id in ids]
    return "\n".join(lines)


# ------------------------------------------------------------------------------------------------ main


def build_parser() -> argparse.ArgumentParser:
    """The top-level parser: its help lists each subcommand; arguments after the name are the module's."""
    parser = OneLineParser(
        prog="spatial-arena",
        description="SpatialArena: one command with a subcommand per entry point, and `list` to see what exists.",
        epilog="Each subcommand takes the options of its python -m module: spatial-arena NAME --help.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, command in SUBCOMMANDS.items():
        sub.add_parser(name, help=f"{command.summary} (python -m {command.module})", add_help=False)
    sub.add_parser(
        "list", help="benchmarks, env ids, policies, VLA backbones, static benchmarks and scoring modes"
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Dispatch ``spatial-arena COMMAND ARGS``; returns the exit status of the command."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] in SUBCOMMANDS:  # everything after the name belongs to the module, --help included
        return run_module(SUBCOMMANDS[args[0]].module, args[1:], prog=f"spatial-arena {args[0]}")
    parsed = build_parser().parse_args(args)  # exits 2 with a one-line error for an unknown command
    if parsed.command == "list":
        print(listing())
    return 0


def console_main() -> None:
    """The ``spatial-arena`` console script."""
    sys.exit(main())


if __name__ == "__main__":
    console_main()
