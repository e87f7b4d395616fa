"""Typed configs are the CLI: one dataclass per command, one flag per field, help from the field.

    @dataclass
    class EvalConfig:
        num_sequences: int = arg(1000, "chains to evaluate")
        policy: str = "expert"
        '''policy name or module:Class'''

    config = parse_config(EvalConfig)          # --num-sequences 100 --policy random

A field's help is its ``arg(..., help)`` metadata or the docstring written under it. No special cases:
the flag is the field name with dashes (plus ``metadata["aliases"]``); booleans are ``--flag/--no-flag``;
``Literal`` fields become choices; ``X | None`` fields accept the string ``none``; a field without a
default is a required flag.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import inspect
import itertools
import textwrap
import types
import typing
from collections.abc import Sequence
from typing import Any, Literal, TypeVar, get_args, get_origin

C = TypeVar("C")


def arg(default: Any, help: str, **metadata: Any) -> Any:
    """A dataclass field with its CLI help text (mutable defaults are copied per instance)."""
    if isinstance(default, (list, dict, set)):
        return dataclasses.field(default_factory=lambda: type(default)(default), metadata={"help": help, **metadata})
    return dataclasses.field(default=default, metadata={"help": help, **metadata})


def _unwrap_optional(tp: Any) -> tuple[Any, bool]:
    if get_origin(tp) in (typing.Union, types.UnionType):
        args = [a for a in get_args(tp) if a is not type(None)]
        if len(args) == 1 and len(get_args(tp)) == 2:
            return args[0], True
    return tp, False


def _converter(tp: Any, optional: bool) -> Any:
    def convert(text: str) -> Any:
        if optional and text.lower() == "none":
            return None
        return tp(text)

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
        if is_field and isinstance(nxt, ast.Expr) and isinstance(nxt.value, ast.Constant) \
                and isinstance(nxt.value.value, str):
            docs[node.target.id] = " ".join(nxt.value.value.split())
    return docs


def _declared_by(cls: type, name: str) -> type:
    """The class in ``cls``'s MRO whose body declares the field ``name``."""
    return next(k for k in cls.__mro__ if name in vars(k).get("__annotations__", {}))


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
        flags = ["--" + f.name.replace("_", "-"), *f.metadata.get("aliases", ())]
        tp, optional = _unwrap_optional(hints[f.name])
        required = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING  # type: ignore[misc]
        default = None if required else (f.default if f.default is not dataclasses.MISSING
                                          else f.default_factory())  # type: ignore[misc]
        help_text = f.metadata.get("help") or docs.get(f.name, "")
        shown = "" if required or default in (None, "") or "default" in help_text else f" (default: {default})"
        kwargs: dict[str, Any] = {"dest": f.name, "default": default, "help": help_text + shown}
        if tp is bool:
            target.add_argument(*flags, action=argparse.BooleanOptionalAction, **kwargs)
        elif get_origin(tp) is Literal:
            target.add_argument(*flags, choices=list(get_args(tp)), required=required, **kwargs)
        elif get_origin(tp) in (list, tuple, Sequence):
            (item,) = get_args(tp)[:1] or (str,)
            target.add_argument(*flags, nargs="*", type=item, required=required, **kwargs)
        else:
            target.add_argument(*flags, type=_converter(tp, optional), required=required, **kwargs)


def config_from_namespace(cls: type[C], namespace: argparse.Namespace) -> C:
    """Build ``cls`` from parsed arguments (fields absent from the namespace keep their defaults)."""
    names = {f.name for f in dataclasses.fields(cls) if f.init}  # type: ignore[arg-type]
    return cls(**{k: v for k, v in vars(namespace).items() if k in names})


def parse_config(cls: type[C], argv: Sequence[str] | None = None, *, prog: str | None = None) -> C:
    """Parse ``argv`` (default: ``sys.argv[1:]``) into the dataclass ``cls``; its docstring is the help."""
    parser = argparse.ArgumentParser(prog=prog, description=cls.__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    add_config_arguments(parser, cls)
    return config_from_namespace(cls, parser.parse_args(argv))
