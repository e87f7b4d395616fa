"""Typed configs are the CLI: one dataclass per command, one flag per field, help from the field.

Generic command-line plumbing, not policy code: every command of every layer above (``policies.serve``,
``vla.train``, ``vla.demos``, each benchmark) parses its flags and reports bad input with it (``arg``,
``parse_config``, ``run_cli``, ``InputError``, the exit statuses). It lives in ``policies``, the lowest layer
whose configs are flags (the policies' own options), so that every layer reaches it downward.

    @dataclass
    class EvalConfig:
        num_sequences: int = arg(1000, "chains to evaluate")
        policy: str = "expert"
        '''policy name or module:Class'''

    config = parse_config(EvalConfig)          # --num-sequences 100 --policy random

A field's help is its ``arg(..., help)`` metadata or the docstring written under it. No special cases:
the flag is the field name with dashes (plus ``metadata["aliases"]``, and ``metadata["former"]``: former
names, still accepted with a one-line deprecation note on stderr, not shown in ``--help``); booleans are
``--flag/--no-flag``; ``Literal`` fields become choices; ``X | None`` fields accept the string ``none``; a
field without a default is a required flag.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import inspect
import itertools
import json
import sys
import textwrap
import traceback
import types
import typing
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar, get_args, get_origin

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

C = TypeVar("C", bound="DataclassInstance")  # a config dataclass
EXIT_BAD_INPUT = 2
#: A run that finished with some units (chains, episodes, items) in an error, unless ``--allow-errors``.
EXIT_UNITS_ERRORED = 3


class InputError(ValueError):
    """Bad input from the user. The message names the input, says what is wrong and how to fix it."""


class RunAborted(RuntimeError):
    """A run stopped for a reason outside its input (e.g. a model server failing again and again); the
    message says what happened and how to continue. One line, exit status :attr:`exit_status`, no
    traceback."""

    exit_status = 1


class OneLineParser(argparse.ArgumentParser):
    """An argument parser whose errors are one line (the flag, the problem, where the options are listed)."""

    def error(self, message: str) -> typing.NoReturn:
        if message.startswith("argument ") and ": must be" in message:  # our range checks read as sentences
            message = message[len("argument ") :].replace(": must be", " must be", 1)
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: error: {message} (see --help)\n")


def arg(
    default: Any,
    help: str,
    *,
    minimum: float | None = None,
    maximum: float | None = None,
    json_kind: type | None = None,
    must_exist: bool = False,
    **metadata: Any,
) -> Any:
    """A dataclass field with its CLI help text (mutable defaults are copied per instance).

    ``minimum``/``maximum`` reject values outside them at parse time (counts and sizes: minimum 1);
    ``json_kind`` (``dict``/``list``) makes a string field hold JSON of that kind, checked at parse time;
    ``must_exist`` makes a path field name an existing file or folder. Other keywords go into the field's
    metadata: ``aliases`` (more flags), ``former`` (former flag names: accepted with a deprecation note,
    hidden from ``--help``), ``cli=False`` (no flag), ``parse`` (a function from the flag's text
    to the value, raising ``argparse.ArgumentTypeError``; e.g. a JSON number or list), ``metavar``.
    """
    if must_exist:
        metadata["must_exist"] = True
    if minimum is not None:
        metadata["minimum"] = minimum
    if maximum is not None:
        metadata["maximum"] = maximum
    if json_kind is not None:
        metadata["json_kind"] = json_kind
    if isinstance(default, (list, dict, set)):
        return dataclasses.field(
            default_factory=lambda: type(default)(default), metadata={"help": help, **metadata}
        )
    return dataclasses.field(default=default, metadata={"help": help, **metadata})


def preview(text: str, limit: int = 80) -> str:
    """``repr(text)`` for a one-line message, cut to about ``limit`` characters with the full length named."""
    return repr(text) if len(text) <= limit else f"{text[:limit]!r}... ({len(text):,} characters)"


def parse_json_option(flag: str, text: str | None, kind: type = dict) -> Any:
    """The JSON value of a ``--*-kwargs``-style option, or a one-line :class:`InputError` naming the flag."""
    from policies.backends.jsonwire import NestingError, loads_bounded

    try:
        value = loads_bounded(text or ("{}" if kind is dict else "[]"))  # no RecursionError on deep nesting
    except json.JSONDecodeError as e:
        raise InputError(
            f"{flag} is not valid JSON ({e.msg} at character {e.pos}): pass e.g. '{{\"key\": 1}}'"
        ) from None
    except NestingError as e:
        raise InputError(f"{flag} is not a flat JSON value ({e}): pass e.g. '{{\"key\": 1}}'") from None
    if not isinstance(value, kind):
        raise InputError(
            f"{flag} must be a JSON {'object' if kind is dict else kind.__name__}, got {preview(text or '')}"
        )
    return value


def run_cli(main: Callable[[list[str] | None], object], argv: Sequence[str] | None = None) -> int:
    """Run a command's ``main`` with the one error handler every CLI shares; returns the exit status.

    Bad input (:class:`InputError` and its subclasses, a missing or unwritable file) prints one line,
    ``error: <what and the fix>``, and exits 2. Anything else is a bug or a failed run: it keeps its
    traceback and exits 1. ``main`` may return an exit status (an ``int``); anything else means 0.
    """
    try:
        result = main(None if argv is None else list(argv))
    except InputError as e:
        return _fail(str(e))
    except RunAborted as e:
        return _fail(str(e), status=e.exit_status)
    except OSError as e:
        if e.filename is None:
            raise
        return _fail(f"{e.filename}: {e.strerror or e}; check the path and its permissions")
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except Exception:
        traceback.print_exc()
        return 1
    return result if isinstance(result, int) and not isinstance(result, bool) else 0


def _fail(message: str, status: int = EXIT_BAD_INPUT) -> int:
    print("error: " + " ".join(message.split()), file=sys.stderr)
    return status


class _FormerFlag(argparse.Action):
    """A flag's former name: stores into the same field, with a one-line deprecation note on stderr."""

    def __init__(self, *args: Any, current: str, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.current = current

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[Any] | None,
        option_string: str | None = None,
    ) -> None:
        print(f"note: {option_string} is deprecated; use {self.current} (the same option)", file=sys.stderr)
        setattr(namespace, self.dest, values)


def _unwrap_optional(tp: Any) -> tuple[Any, bool]:
    if get_origin(tp) in (typing.Union, types.UnionType):
        args = [a for a in get_args(tp) if a is not type(None)]
        if len(args) == 1 and len(get_args(tp)) == 2:
            return args[0], True
    return tp, False


def _converter(tp: Any, optional: bool, metadata: typing.Mapping[str, Any]) -> Any:
    minimum, maximum, json_kind = metadata.get("minimum"), metadata.get("maximum"), metadata.get("json_kind")

    def convert(text: str) -> Any:
        if optional and text.lower() == "none":
            return None
        try:
            value = metadata.get("parse", tp)(text)
        except (TypeError, ValueError):
            raise argparse.ArgumentTypeError(
                f"expected {getattr(tp, '__name__', tp)}, got {text!r}"
            ) from None
        if minimum is not None and value < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum:g}, got {text}")
        if maximum is not None and value > maximum:
            raise argparse.ArgumentTypeError(f"must be at most {maximum:g}, got {text}")
        if metadata.get("must_exist") and not Path(value).exists():
            raise argparse.ArgumentTypeError(f"{value} does not exist; check the path")
        if json_kind is not None:
            try:
                parse_json_option("", value, json_kind)
            except InputError as e:
                raise argparse.ArgumentTypeError(str(e).strip()) from None
        return value

    return convert


def field_docs(cls: type) -> dict[str, str]:
    """The docstring written under each field of a dataclass (read from its source), whitespace-folded."""
    try:
        body = ast.parse(textwrap.dedent(inspect.getsource(cls))).body[0].body  # type: ignore[attr-defined]
    except (OSError, TypeError):  # no source available (e.g. a class built at run time)
        return {}
    docs = {}
    for node, nxt in itertools.pairwise(body):
        is_field = isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)
        if (
            is_field
            and isinstance(nxt, ast.Expr)
            and isinstance(nxt.value, ast.Constant)
            and isinstance(nxt.value.value, str)
        ):
            docs[node.target.id] = " ".join(nxt.value.value.split())
    return docs


def _declared_by(cls: type, name: str) -> type:
    """The class in ``cls``'s MRO whose body declares the field ``name``."""
    return next(k for k in cls.__mro__ if name in vars(k).get("__annotations__", {}))


def _field_default(f: dataclasses.Field[Any]) -> tuple[bool, Any]:
    """(whether the field is required, its default: ``None`` when required)."""
    if f.default is not dataclasses.MISSING:
        return False, f.default
    if f.default_factory is not dataclasses.MISSING:
        return False, f.default_factory()
    return True, None


def add_config_arguments(parser: Any, cls: type, *, skip: set[str] | frozenset[str] = frozenset()) -> None:
    """Add one flag per field of the dataclass ``cls`` (except ``skip``) to a parser or argument group.

    The command's own fields come first; fields inherited from a base config (e.g. the shared execution
    options) follow in a help section named by the base's docstring."""
    hints = typing.get_type_hints(cls)
    owners = {f.name: _declared_by(cls, f.name) for f in dataclasses.fields(cls)}
    docs = {name: doc for owner in set(owners.values()) for name, doc in field_docs(owner).items()}
    sections: dict[type, Any] = {}
    for f in sorted(dataclasses.fields(cls), key=lambda f: cls.__mro__.index(owners[f.name])):
        if not f.init or f.metadata.get("cli") is False or f.name in skip:
            continue
        owner = owners[f.name]
        if owner is not cls and isinstance(parser, argparse.ArgumentParser):
            title = (owner.__doc__ or owner.__name__).strip().splitlines()[0].rstrip(".")
            target = sections.setdefault(owner, parser.add_argument_group(title))
        else:
            target = parser
        _add_field_flags(target, f, hints[f.name], docs.get(f.name, ""))


def _add_field_flags(target: Any, f: dataclasses.Field[Any], hint: Any, doc: str) -> None:
    """The flag(s) of one config field: its name with dashes, its aliases and (hidden) its former names."""
    flags = ["--" + f.name.replace("_", "-"), *f.metadata.get("aliases", ())]
    tp, optional = _unwrap_optional(hint)
    required, default = _field_default(f)
    help_text = f.metadata.get("help") or doc
    shown = "" if required or default in (None, "") or "default" in help_text else f" (default: {default})"
    kwargs: dict[str, Any] = {"dest": f.name, "default": default, "help": help_text + shown}
    if "metavar" in f.metadata:
        kwargs["metavar"] = f.metadata["metavar"]
    if tp is bool:
        target.add_argument(*flags, action=argparse.BooleanOptionalAction, **kwargs)
    elif get_origin(tp) is Literal:
        target.add_argument(*flags, choices=list(get_args(tp)), required=required, **kwargs)
    elif get_origin(tp) in (list, tuple, Sequence):
        (item,) = get_args(tp)[:1] or (str,)
        target.add_argument(
            *flags, nargs="*", type=_converter(item, False, f.metadata), required=required, **kwargs
        )
    else:
        target.add_argument(*flags, type=_converter(tp, optional, f.metadata), required=required, **kwargs)
    if f.metadata.get("former"):  # hidden; the default comes from the current flag
        target.add_argument(
            *f.metadata["former"],
            dest=f.name,
            default=argparse.SUPPRESS,
            help=argparse.SUPPRESS,
            type=_converter(tp, optional, f.metadata),
            action=_FormerFlag,
            current=flags[0],
        )


def config_from_namespace(cls: type[C], namespace: argparse.Namespace) -> C:
    """Build ``cls`` from parsed arguments (fields absent from the namespace keep their defaults)."""
    names = {f.name for f in dataclasses.fields(cls) if f.init}
    return cls(**{k: v for k, v in vars(namespace).items() if k in names})


def config_parser(cls: type, prog: str) -> argparse.ArgumentParser:
    """A one-line-error parser named ``prog`` with one flag per field of the dataclass ``cls`` (help: its
    docstring and the docstring under each field)."""
    parser = OneLineParser(prog=prog, description=(cls.__doc__ or "").strip())
    add_config_arguments(parser, cls)
    return parser


def parse_config(cls: type[C], argv: Sequence[str] | None = None, *, prog: str | None = None) -> C:
    """Parse ``argv`` (default: ``sys.argv[1:]``) into the dataclass ``cls``; its docstring is the help.

    A value the config rejects (``__post_init__``, or its ``check()`` method) is a one-line usage error."""
    parser = OneLineParser(
        prog=prog, description=cls.__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    add_config_arguments(parser, cls)
    namespace = parser.parse_args(argv)
    try:
        config = config_from_namespace(cls, namespace)
        check = getattr(config, "check", None)
        if callable(check):  # the config's own checks of what the types cannot say
            check()
    except ValueError as exc:  # one line, argparse's exit status, before anything heavy is imported
        parser.error(str(exc))
    return config
