"""Generated documentation pages, as a mkdocs hook: env pages, CLI reference, results, parity ledger.

Every page here is built from the code or from committed data, never typed by hand:

- ``envs/``: one page per env class, from the registered ``SpatialArena/*`` ids (``import envs``), the class
  docstring (Gymnasium's sections: Description, Action Space, ...) and the spaces each id builds. Making a
  LIBERO or robosuite env takes 5-17 s, so the spaces come from ``env_spaces.json`` beside this file,
  written by ``python docs/_scripts/gen_pages.py --update-spaces`` (``gym.make`` of every id, or of the
  first id of a class with more than :data:`MAX_IDS_MADE`) and checked against ``gym.make`` by the tests.
- ``cli/``: one page per ``spatial-arena`` subcommand, from the parser its ``python -m`` module builds from
  its config dataclass (captured at ``--help``), and one for the registered policies' config dataclasses.
- ``results/``: one page per committed ``bench/results/*.json`` file (numbers with date, machine, command),
  followed by the Markdown of ``bench/results/NAME.md`` where one sits beside ``NAME.json``: the measurement's
  tables and dated findings, which the guides link instead of carrying them.
- ``guide/parity.md``: the parity ledger, one row per official-compatible route the code registers
  (:func:`official_routes`), its agreement with the official implementation read from the results file that
  :data:`PARITY_LEDGER` names for it, or "not measured" with what would measure it.

mkdocs runs :func:`on_config` (generate, extend the nav) and :func:`on_files` (add the pages).
"""

from __future__ import annotations

import argparse
import inspect
import json
import re
import runpy
import sys
import textwrap
import time
import warnings
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

ROOT = Path(__file__).resolve().parents[2]
SPACES_FILE = Path(__file__).with_name("env_spaces.json")
RESULTS_DIR = ROOT / "bench" / "results"
MAX_IDS_MADE = 8  # a class with more ids (LIBERO: 130 tasks) is documented by the spaces of its first id
RESULT_KEYS = ("title", "date", "machine", "source")
_PAGES: dict[str, str] = {}


# ------------------------------------------------------------------------------------------- environments


def env_classes() -> dict[str, list[str]]:
    """Registered env ids grouped by entry point (``"module:Class"``), in registration-module order."""
    from benchmarks.command import env_families

    return env_families()


def ids_to_make(ids: Sequence[str]) -> list[str]:
    """The ids whose spaces are recorded: all of a class's ids, or its first when there are many."""
    return list(ids) if len(ids) <= MAX_IDS_MADE else list(ids[:1])


def describe_space(space: Any) -> list[str]:
    """One line per leaf of a space; ``Text`` spaces without their (long) charset."""
    from gymnasium import spaces

    if isinstance(space, spaces.Dict):
        return [f"{key}: {line}" for key, sub in space.spaces.items() for line in describe_space(sub)]
    if isinstance(space, spaces.Text):
        return [
            f"Text(min_length={space.min_length}, max_length={space.max_length}, "
            f"{len(space.character_set)} characters)"
        ]
    return [" ".join(repr(space).split())]  # Box reprs of arrays wrap over lines


def measure_spaces(env_id: str) -> dict[str, Any]:
    """``gym.make(env_id)``'s spaces, described, and how long making it took."""
    import gymnasium as gym

    import envs  # noqa: F401  (registers the ids)

    start = time.perf_counter()
    env = gym.make(env_id)
    try:
        return {
            "action_space": describe_space(env.action_space),
            "observation_space": describe_space(env.observation_space),
            "make_s": round(time.perf_counter() - start, 2),
        }
    finally:
        env.close()


def update_spaces() -> dict[str, Any]:
    """Make every env whose spaces the pages show and write :data:`SPACES_FILE`."""
    recorded = {
        env_id: measure_spaces(env_id) for ids in env_classes().values() for env_id in ids_to_make(ids)
    }
    SPACES_FILE.write_text(json.dumps(recorded, indent=1) + "\n")
    return recorded


def load_spaces(classes: Mapping[str, Sequence[str]]) -> dict[str, Any]:
    """The recorded spaces, checked to cover exactly the ids the registry has now."""
    recorded = json.loads(SPACES_FILE.read_text())
    wanted = {env_id for ids in classes.values() for env_id in ids_to_make(ids)}
    if set(recorded) != wanted:
        raise ValueError(
            f"{SPACES_FILE.name} is stale (missing {sorted(wanted - set(recorded))}, extra "
            f"{sorted(set(recorded) - wanted)}): run python docs/_scripts/gen_pages.py --update-spaces"
        )
    return recorded


def docstring_markdown(doc: str) -> str:
    """A Gymnasium-style docstring as Markdown: ``Section:`` lines become headings, roles become code."""
    text = re.sub(r":(?:meth|class|func|mod|attr|data):`~?([^`]+)`", r"`\1`", inspect.cleandoc(doc))
    lines = text.splitlines()
    out = [lines[0], ""]
    section: list[str] = []
    for line in lines[1:]:
        heading = re.fullmatch(r"([A-Z][A-Za-z /]+):", line) or re.fullmatch(r"#+ +([A-Z][A-Za-z /]+)", line)
        if heading:
            out += [*_section_body(section), f"### {heading.group(1)}", ""]
            section = []
        else:
            section.append(line)
    return "\n".join(out + _section_body(section)).strip() + "\n"


def _section_body(lines: list[str]) -> list[str]:
    """A section's indented body, dedented; ``name: text`` argument lines become a list."""
    body = textwrap.dedent("\n".join(lines)).strip("\n")
    if not body:
        return []
    items = re.split(r"\n(?=[A-Za-z_][\w, ]*: )", body)
    if len(items) > 1 and all(re.match(r"[A-Za-z_][\w, ]*: ", item) for item in items):
        return [f"- {' '.join(item.split())}" for item in items] + [""]
    return [_paragraph(paragraph) for paragraph in body.split("\n\n")] + [""]


def _paragraph(text: str) -> str:
    """Wrapped lines joined; a ``- item`` list keeps one line per item."""
    if not text.lstrip().startswith("- "):
        return " ".join(text.split())
    return "\n".join(
        "- " + " ".join(item.split()) for item in re.split(r"(?:^|\n)\s*- ", text) if item.strip()
    )


def env_page(entry_point: str, ids: Sequence[str], spaces: Mapping[str, Any]) -> str:
    """The page of one env class: docstring, registered ids with their kwargs, recorded spaces."""
    import gymnasium as gym

    module, _, name = entry_point.partition(":")
    cls = getattr(__import__(module, fromlist=[name]), name)
    lines = [
        f"# {name}",
        "",
        f"`{entry_point}`",
        "",
        docstring_markdown(cls.__doc__ or "(no docstring)"),
        "## Registered ids",
        "",
        "| id | kwargs | max_episode_steps |",
        "|---|---|---|",
    ]
    for env_id in ids:
        spec = gym.spec(env_id)
        lines.append(f"| `{env_id}` | `{json.dumps(spec.kwargs)}` | {spec.max_episode_steps} |")
    lines += ["", "## Spaces", ""]
    if len(ids) > MAX_IDS_MADE:
        lines += [
            f"Spaces recorded for the first of the {len(ids)} ids; the others differ in the kwargs "
            f"listed above.",
            "",
        ]
    for group, env_ids in _same_spaces(ids_to_make(ids), spaces):
        lines += [
            ", ".join(f"`{i}`" for i in env_ids) + ":",
            "",
            "```text",
            "action_space:",
            *(f"  {line}" for line in group["action_space"]),
            "observation_space:",
            *(f"  {line}" for line in group["observation_space"]),
            "```",
            "",
        ]
    return "\n".join(lines)


def _same_spaces(ids: Sequence[str], spaces: Mapping[str, Any]) -> Iterator[tuple[dict[str, Any], list[str]]]:
    """Ids grouped by identical spaces, so variants that share them are shown once."""
    groups: dict[str, tuple[dict[str, Any], list[str]]] = {}
    for env_id in ids:
        record = {k: spaces[env_id][k] for k in ("action_space", "observation_space")}
        groups.setdefault(json.dumps(record), (record, []))[1].append(env_id)
    yield from groups.values()


def env_pages() -> dict[str, str]:
    """``envs/index.md`` and one page per env class."""
    classes = env_classes()
    spaces = load_spaces(classes)
    pages, index = (
        {},
        [
            "# Environments",
            "",
            "Every id is made with `gym.make(ID)` after `import envs`. Pages are generated from the "
            "registry and the classes' docstrings (see [Add an env](../howto/add-env.md)).",
            "",
            "| class | ids |",
            "|---|---|",
        ],
    )
    for entry_point, ids in classes.items():
        slug = entry_point.partition(":")[2].lower()
        pages[f"envs/{slug}.md"] = env_page(entry_point, ids, spaces)
        index.append(f"| [{entry_point.partition(':')[2]}]({slug}.md) | {len(ids)} |")
    return {"envs/index.md": "\n".join(index) + "\n", **pages}


# ------------------------------------------------------------------------------------------- CLI reference


class _Captured(BaseException):  # a BaseException passes through run_cli's `except Exception`
    """Raised instead of printing help, carrying the parser that would have printed it."""

    def __init__(self, parser: argparse.ArgumentParser) -> None:
        super().__init__()
        self.parser = parser


def captured_parser(module: str, args: Sequence[str]) -> argparse.ArgumentParser:
    """The parser ``python -m module ARGS --help`` prints: the command's config dataclass as flags."""

    def capture(parser: argparse.ArgumentParser, file: Any = None) -> None:
        raise _Captured(parser)

    saved_argv, saved_help = sys.argv, argparse.ArgumentParser.print_help
    sys.argv, argparse.ArgumentParser.print_help = [module, *args, "--help"], capture  # type: ignore[method-assign]
    try:
        with warnings.catch_warnings():  # a module imported earlier in this process: runpy runs a fresh copy
            warnings.filterwarnings("ignore", "'.*' found in sys.modules", RuntimeWarning)
            runpy.run_module(module, run_name="__main__", alter_sys=True)
    except _Captured as found:
        return found.parser
    finally:
        sys.argv, argparse.ArgumentParser.print_help = saved_argv, saved_help  # type: ignore[method-assign]
    raise RuntimeError(f"python -m {module} {' '.join(args)} --help printed no help")


def _cell(text: object) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def parser_markdown(parser: argparse.ArgumentParser) -> list[str]:
    """Each option group of a parser as a table: flags, default, help."""
    lines = []
    for group in parser._action_groups:
        rows = [
            a
            for a in group._group_actions
            if a.help != argparse.SUPPRESS and not isinstance(a, argparse._HelpAction)
        ]
        if not rows:
            continue
        header = (
            "| option | default | help |"
            if group._group_actions[0].option_strings
            else "| command | | what |"
        )
        lines += [f"**{group.title}**", "", header, "|---|---|---|"]
        for action in rows:
            if isinstance(action, argparse._SubParsersAction):
                lines += [
                    f"| `{name}` | | {_cell(sub.description or '')} |" for name, sub in action.choices.items()
                ]
                continue
            flags = ", ".join(f"`{flag}`" for flag in action.option_strings) or f"`{action.dest}`"
            choices = f" (one of: {', '.join(map(str, action.choices))})" if action.choices else ""
            unset = action.default in (None, "", argparse.SUPPRESS) or action.required
            default = "" if unset else f"`{action.default}`"
            # the column says it
            help_text = (action.help or "").removesuffix(f" (default: {action.default})")
            lines.append(
                f"| {flags} | {_cell(default) if default else ('required' if action.required else '')} "
                f"| {_cell(help_text + choices)} |"
            )
        lines.append("")
    return lines


def command_page(name: str) -> str:
    """The reference of ``spatial-arena NAME``: one section per help page the command has."""
    from benchmarks.command import SUBCOMMANDS

    command = SUBCOMMANDS[name]
    lines = [f"# spatial-arena {name}", "", f"{command.summary}. Same as `python -m {command.module}`.", ""]
    for args in command.help_pages:
        parser = captured_parser(command.module, args)
        if args:
            lines += [f"## spatial-arena {name} {' '.join(args)}", ""]
        lines += [_cell(parser.description or ""), "", *parser_markdown(parser)]
        if parser.epilog and parser.epilog.startswith("policy options"):
            lines += [
                "Once `--policy NAME` picks a registered policy, its options apply too: "
                "see [policy options](policies.md).",
                "",
            ]
    return "\n".join(lines)


def policies_page() -> str:
    """Every registered policy's options, from its config dataclass."""
    from benchmarks.command import policy_benchmarks, policy_names
    from policies.config_cli import add_config_arguments
    from policies.registry import policy_config_class, registered_policies

    lines = [
        "# Policy options",
        "",
        f"Policies: {', '.join(f'`{n}`' for n in policy_names())}, or a class of "
        "your own as `--policy package.module:Class`. A registered policy's options are accepted by the "
        "benchmark commands it runs on (below) once `--policy NAME` picks it (`--backbone` and "
        "`--checkpoint` pick `vla`); an option the benchmark also has (e.g. `--seed`) takes the "
        "benchmark's value. The EB loop's options of `mllm` exist on `embodied` only.",
        "",
    ]
    where = policy_benchmarks()
    for name in registered_policies():
        cls = policy_config_class(name)
        parser = argparse.ArgumentParser(add_help=False)
        add_config_arguments(parser, cls)
        parser._action_groups[1].title = f"--policy {name} ({cls.__module__}.{cls.__name__})"
        lines += [
            f"## {name}",
            "",
            _cell((cls.__doc__ or "").strip()),
            "",
            f"Runs on: {', '.join(where[name])}.",
            "",
            *parser_markdown(parser),
        ]
    return "\n".join(lines)


def cli_pages() -> dict[str, str]:
    """``cli/index.md``, one page per subcommand and the policy options."""
    from benchmarks.command import SUBCOMMANDS

    index = [
        "# Command-line reference",
        "",
        "One command, `spatial-arena`, with a subcommand per entry point; "
        "each is the same as its `python -m` module. `spatial-arena list` prints the benchmarks, env "
        "ids, policies, VLA backbones, static benchmarks and scoring modes. Exit status: 0 done, 1 a "
        "failure outside the input, 2 bad input, 3 a run with errored units (unless `--allow-errors`).",
        "",
        "| command | what | module |",
        "|---|---|---|",
    ]
    pages = {f"cli/{name}.md": command_page(name) for name in SUBCOMMANDS}
    index += [
        f"| [{name}]({name}.md) | {_cell(c.summary)} | `python -m {c.module}` |"
        for name, c in SUBCOMMANDS.items()
    ]
    index += ["", "[Policy options](policies.md): the options of every registered policy.", ""]
    return {"cli/index.md": "\n".join(index), **pages, "cli/policies.md": policies_page()}


# ------------------------------------------------------------------------------------------- results


def load_result(path: Path) -> dict[str, Any]:
    """A committed results file, checked for its provenance keys."""
    data = json.loads(path.read_text())
    missing = [key for key in RESULT_KEYS if not data.get(key)]
    if missing:
        raise ValueError(f"{path}: missing {', '.join(missing)}; every results file states its provenance")
    return data


def result_page(name: str, data: Mapping[str, Any], note: str = "") -> str:
    """One results file as a page: provenance, headline metrics, tables, notes, then its Markdown note."""
    lines = [f"# {data['title']}", "", "| | |", "|---|---|"]
    lines += [
        f"| {key} | {_cell(data[key])} |" for key in ("date", "machine", "setup", "source") if data.get(key)
    ]
    if data.get("command"):
        lines.append(f"| command | `{_cell(data['command'])}` |")
    lines += [f"| file | `bench/results/{name}.json` |", ""]
    if data.get("metrics"):
        lines += [
            "| metric | value |",
            "|---|---|",
            *(f"| {k} | {v} |" for k, v in data["metrics"].items()),
            "",
        ]
    for table in data.get("tables", []):
        lines += [
            f"**{table['caption']}**",
            "",
            "| " + " | ".join(map(_cell, table["columns"])) + " |",
            "|" + "---|" * len(table["columns"]),
            *("| " + " | ".join(map(_cell, row)) + " |" for row in table["rows"]),
            "",
        ]
    if data.get("notes"):
        lines += [data["notes"], ""]
    if note:
        lines += [note.strip(), ""]
    return "\n".join(lines)


def results_pages(folder: Path = RESULTS_DIR) -> dict[str, str]:
    """``results/index.md`` and one page per ``bench/results/*.json`` (with ``NAME.md`` beside it appended);
    two files with one title are an error (the nav lists the pages by title, so they would read as one), and so
    is a note without its ``NAME.json`` (it would never be shown)."""
    files = sorted(folder.glob("*.json"))
    orphans = sorted(p.name for p in folder.glob("*.md") if not p.with_suffix(".json").is_file())
    if orphans:
        raise ValueError(
            f"{folder}: {', '.join(orphans)} without a .json beside it; a note is shown on the page of "
            "its NAME.json, which states the provenance"
        )
    pages, index = (
        {},
        [
            "# Results",
            "",
            "Measured numbers, each read from a committed file in `bench/results/` "
            "that states when, where and how it was measured.",
            "",
            "| result | date | machine |",
            "|---|---|---|",
        ],
    )
    titles: dict[str, Path] = {}
    for path in files:
        data = load_result(path)
        if data["title"] in titles:
            raise ValueError(
                f"{path}: title {data['title']!r} is also {titles[data['title']].name}'s; "
                "give each results file a title of its own"
            )
        titles[data["title"]] = path
        note = path.with_suffix(".md")
        pages[f"results/{path.stem}.md"] = result_page(
            path.stem, data, note.read_text() if note.is_file() else ""
        )
        index.append(
            f"| [{_cell(data['title'])}]({path.stem}.md) | {data['date']} | {_cell(data['machine'])} |"
        )
    return {"results/index.md": "\n".join(index) + "\n", **pages}


# ------------------------------------------------------------------------------------------- parity ledger


class ParityRow(NamedTuple):  # a NamedTuple: the tests load this file without registering it as a module
    """One official-compatible route and the committed result that measures its agreement with the official
    implementation (fields are dotted paths into ``bench/results/RESULT.json``).

    Attributes:
        route: the command and options that select the route, as :func:`official_routes` spells it.
        official: the implementation compared with.
        result: the results file's stem; empty when nothing measures the route yet.
        version: the field holding the official implementation's version or commit.
        total: the field holding the number of cases compared; ``unit`` names them.
        agreeing: the field holding the cases that agree, or ``differing``: the field listing those that differ.
        compare: a metric measured on both, as (label, field here, field of the official implementation).
        deltas: known deltas and why; ``{field}`` placeholders are filled from the results file.
        to_measure: when not measured, what would measure it.
    """

    route: str
    official: str
    result: str = ""
    version: str = ""
    total: str = ""
    unit: str = ""
    agreeing: str = ""
    differing: str = ""
    compare: tuple[str, str, str] | None = None
    deltas: str = ""
    to_measure: str = ""


_STATIC_MODES = "static-benchmarks.md#official-compatible-modes-mode-and-where-they-differ"


def _static_row(bench: str, mode: str, official: str) -> ParityRow:
    """A static mode that no committed result compares with its public scorer yet."""
    return ParityRow(
        route=f"static --bench {bench} --mode {mode}",
        official=official,
        deltas=f"reproduced from the public code's observed behaviour; differences by design: "
        f"[static benchmarks]({_STATIC_MODES})",
        to_measure=f"an upstream results file (item id, raw response, upstream's score) rescored with "
        f"`--mode {mode}`, counting the items scored the same",
    )


#: Every official-compatible route and where its agreement is measured; a route in the code without a row
#: here (or a row for a route that is gone) fails the build.
PARITY_LEDGER: tuple[ParityRow, ...] = (
    ParityRow(
        route="static --bench multihopspatial --mode multihop-repo",
        official="MultihopSpatial's repository script",
        result="multihop_repo_agreement",
        version="official",
        total="metrics.items",
        unit="items",
        agreeing="metrics.items_agreeing",
        compare=("MCQ accuracy", "metrics.mcq_accuracy_here", "metrics.mcq_accuracy_upstream"),
        deltas="none on these records (prediction, box, IoU and score per item); they are an excerpt of "
        "upstream's published results, not the whole set",
    ),
    _static_row("multihopspatial", "multihop-lmms-eval", "lmms-eval's multihopspatial task"),
    _static_row("space10", "space10-lmms-eval", "the SpaCE-10 lmms-eval fork (space-10-single/-double)"),
    _static_row("space10", "space10-single", "the SpaCE-10 lmms-eval fork's space-10-single task"),
    _static_row("space10", "space10-double", "the SpaCE-10 lmms-eval fork's space-10-double task"),
    _static_row("space10", "space10-stats", "the SpaCE-10 fork's statistics script (space_10/evaluator.py)"),
    _static_row("spatialscore", "spatialscore-repo", "SpatialScore's test_qwen.py and utils/util.py"),
    _static_row("spatialtree", "spatialtree-lmms-eval", "lmms-eval's spatialtreebench task"),
    _static_row("vsibench", "vsibench-lmms-eval", "lmms-eval's vsibench task"),
    ParityRow(
        route="goal score --scorer lmms-eval",
        official="lmms-eval's spatialtreebench L4 scorers (manipulateeval, agenticnaveval)",
        deltas="inputs on which the public code raises score 0 here, with the reason "
        "([goal-image scoring](goal-scoring.md#the-lmms-eval-scorer-scorer-lmms-eval))",
        to_measure="lmms-eval's process_results on the same predictions and references, compared per sample",
    ),
    ParityRow(
        route="calvin --backend builtin",
        official="calvin_env, scene D",
        result="calvin_parity_2026-11-26_vm-2core-shared_100chains",
        version="calvin_env_commit",
        total="chains",
        unit="chains",
        differing="chains_differ_builtin_official",
        compare=("expert avg. len", "avg_len_builtin", "avg_len_official"),
        deltas="the same scripted expert on both; camera images differ (mean abs. difference {static_mad_builtin} static, {gripper_mad_builtin} "
        "gripper, of 255; {static_mad_assets} with CALVIN's files loaded): the built-in table's own looks; "
        "calvin_env carries contact state across resets, so over all 1000 chains a few end differently",
    ),
    ParityRow(
        route="calvin --backend official",
        official="calvin_env, run by the bridge",
        result="calvin_official_absolute",
        version="calvin_env_commit",
        total="metrics.chains",
        unit="chains",
        agreeing="metrics.chains_agreeing",
        compare=("expert avg. len", "metrics.avg_len_official", "metrics.avg_len_builtin"),
        deltas="the env is calvin_env's own; measured: the bridge's absolute actions, chain for chain against the "
        "built-in table (the same scripted expert); the chain protocol around the env (chains, step budget, "
        "task checks) is the project's, not measured against CALVIN's evaluate_policy.py",
    ),
    ParityRow(
        route="libero",
        official="LIBERO (rpent-libero port) under OpenVLA's evaluation protocol",
        deltas="by design: MuJoCo 3.3, fixture jitter drawn from the reset's seed, fast rendering, upright "
        "images ([LIBERO](libero.md#protocol-and-deviations))",
        to_measure="one released LIBERO checkpoint through OpenVLA's run_libero_eval.py and through "
        "`libero --policy vla` on the same initial states, success compared per episode",
    ),
    ParityRow(
        route="embodied nav",
        official="EmbodiedBench EB-Navigation (AI2-THOR)",
        deltas="another simulator (MuJoCo homes): its numbers are not EmbodiedBench's",
        to_measure="one model through EmbodiedBench's harness and here on matched episodes, success compared",
    ),
    ParityRow(
        route="embodied manip",
        official="EmbodiedBench EB-Manipulation (CoppeliaSim / RLBench)",
        deltas="another simulator (robosuite / MuJoCo): its numbers are not EmbodiedBench's",
        to_measure="one model through EmbodiedBench's harness and here on matched episodes, success compared",
    ),
)


def official_routes() -> list[str]:
    """Every official-compatible route the code registers: static scoring modes but the project's, goal
    scorers but the default, CALVIN backends, LIBERO and the EB families."""
    from typing import get_args, get_type_hints

    from benchmarks.calvin.config import CalvinConfig
    from benchmarks.command import embodied_families
    from benchmarks.goal_scoring.config import ScoreConfig
    from benchmarks.scoring.goal import SCORERS
    from benchmarks.static.registry import PROJECT_MODE, benchmark_names, get_benchmark

    static = [
        f"static --bench {bench} --mode {mode}"
        for bench in benchmark_names()
        for mode in get_benchmark(bench).modes
        if mode != PROJECT_MODE
    ]
    goal = [f"goal score --scorer {name}" for name in SCORERS if name != ScoreConfig.scorer]
    backends = get_args(get_type_hints(CalvinConfig)["backend"])
    calvin = [f"calvin --backend {backend}" for backend in backends]
    return [*static, *goal, *calvin, "libero", *(f"embodied {family}" for family in embodied_families())]


def result_field(data: Mapping[str, Any], path: str, stem: str) -> Any:
    """A dotted field of a results file, or an error naming the file and the field."""
    value: Any = data
    for key in path.split("."):
        if not isinstance(value, Mapping) or key not in value:
            raise ValueError(
                f"bench/results/{stem}.json has no field {path!r}, which the parity ledger reads"
            )
        value = value[key]
    return value


def parity_cells(row: ParityRow, folder: Path = RESULTS_DIR) -> list[str]:
    """A ledger row's cells: route, official implementation, agreement, known deltas, results link."""
    if not row.result:
        agreement = f"not measured: {row.to_measure}"
        return [f"`{row.route}`", row.official, agreement, row.deltas or "–", "–"]
    data = load_result(folder / f"{row.result}.json")
    official = row.official
    if row.version:
        version = str(result_field(data, row.version, row.result))
        official += (
            f" (commit `{version[:12]}`)" if re.fullmatch("[0-9a-f]{40}", version) else f" ({version})"
        )
    parts = []
    if row.total:
        total = result_field(data, row.total, row.result)
        agreeing = (
            result_field(data, row.agreeing, row.result)
            if row.agreeing
            else total - len(result_field(data, row.differing, row.result))
        )
        parts.append(f"{agreeing} / {total} {row.unit}".strip())
    if row.compare:
        label, here, there = row.compare
        ours, theirs = (result_field(data, f, row.result) for f in (here, there))
        parts.append(f"{label} {ours} here vs {theirs} ({ours - theirs:+.3g})")
    deltas = row.deltas.format_map({**data.get("metrics", {}), **data})
    link = f"[{_cell(data['title'])}](../results/{row.result}.md) ({data['date']})"
    return [f"`{row.route}`", official, "; ".join(parts), deltas, link]


def parity_page(
    rows: Sequence[ParityRow] = PARITY_LEDGER, routes: Sequence[str] | None = None, folder: Path = RESULTS_DIR
) -> str:
    """The parity ledger: each official-compatible route's measured agreement, from the committed results;
    every route the code registers must have a row, and every row a registered route."""
    routes = official_routes() if routes is None else routes
    named = [row.route for row in rows]
    missing, extra = sorted(set(routes) - set(named)), sorted(set(named) - set(routes))
    if missing or extra:
        raise ValueError(
            f"parity ledger: routes without a row {missing}, rows without a route {extra}; "
            "add or remove ParityRow entries in PARITY_LEDGER (docs/_scripts/gen_pages.py)"
        )
    measured = sum(1 for row in rows if row.result)
    lines = [
        "# Parity ledger",
        "",
        "Where a number is the official implementation's number and where it is not: every official-compatible "
        "scoring mode and closed-loop route, with the agreement measured against the official implementation "
        f"in a committed result ({measured} of {len(rows)} routes measured). Generated from `PARITY_LEDGER` in "
        "`docs/_scripts/gen_pages.py` and the files in `bench/results/`; a route not measured says what would "
        "measure it.",
        "",
        "| route | official implementation | cases agreeing / total, metric | known deltas and why | result |",
        "|---|---|---|---|---|",
    ]
    lines += ["| " + " | ".join(_cell(c) for c in parity_cells(row, folder)) + " |" for row in rows]
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------------------------------- mkdocs hook


def generate() -> dict[str, str]:
    """Every generated page, by its path under docs/."""
    return {**env_pages(), **cli_pages(), **results_pages(), "guide/parity.md": parity_page()}


def on_config(config: Any) -> Any:
    """Generate the pages and list them in the nav under their section's index page."""
    if str(ROOT) not in sys.path[:1]:  # document this checkout, not another installed copy of the packages
        sys.path.insert(0, str(ROOT))
    _PAGES.clear()
    _PAGES.update(generate())
    config["nav"] = [_expand(item) for item in config["nav"] or []]
    return config


def _expand(item: Any) -> Any:
    """A nav entry ``{Title: section/index.md}`` of a generated section becomes the section's page list."""
    if isinstance(item, dict) and len(item) == 1:
        ((title, target),) = item.items()
        if isinstance(target, str) and target.endswith("/index.md") and target in _PAGES:
            folder = target[: -len("index.md")]
            children = [p for p in _PAGES if p.startswith(folder) and p != target]
            return {title: [target, *children]}
    return item


def on_files(files: Any, config: Any) -> Any:
    """Add the generated pages to the site."""
    from mkdocs.structure.files import File

    for path, content in _PAGES.items():
        files.append(File.generated(config, path, content=content))
    return files


def main(argv: Sequence[str] | None = None) -> int:
    """``--update-spaces``: re-make the envs and rewrite env_spaces.json; else print the pages' paths."""
    parser = argparse.ArgumentParser(
        prog="python docs/_scripts/gen_pages.py", description=__doc__.splitlines()[0]
    )
    parser.add_argument(
        "--update-spaces", action="store_true", help="gym.make each documented id, write the file"
    )
    args = parser.parse_args(argv)
    if args.update_spaces:
        print(f"recorded the spaces of {len(update_spaces())} ids in {SPACES_FILE}")
    else:
        print("\n".join(generate()))
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main())
