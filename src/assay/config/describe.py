"""The declared tables of config.toml in words: each key's type, range, default and help, as
``assay config`` shows them. Read from the declarations (``assay.config.schema``), never
written a second time."""

from __future__ import annotations

import json
import re
import types
from dataclasses import dataclass
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic.fields import FieldInfo

from assay.config import schema as s


@dataclass(frozen=True)
class KeyDoc:
    key: str
    kind: str  # "whole number", "list of string", ...
    range: str  # ">= 1, <= 65535"; "" when any value of the kind is taken
    default: str  # "not set" when the key has none
    help: str
    owner: str  # the module that declares the key (a part's: fio's keys of [slurm])


@dataclass(frozen=True)
class TableDoc:
    title: str  # "[slurm]", "[[mpi]]", "[slurm.mpi.NAME]"
    owner: str  # the module that declares it
    help: str
    keys: list[KeyDoc]


# What a validator of the shared types takes, in words.
_VALIDATORS = {
    s._positive: "> 0", s._factor: ">= 1", s._ratio: "> 0, <= 1",
    s._slurm_time: "a Slurm time", s._network: "a network (CIDR)",
    s._env_name: "an environment variable name",
}  # fmt: skip
_BOUNDS = (("gt", ">"), ("ge", ">="), ("lt", "<"), ("le", "<="), ("min_length", "length >="))
_TITLE = re.compile(r"^(One )?``\[[^`]*\]``: ")  # the docstring's own title, shown apart
_KINDS = {int: "whole number", float: "number", str: "string", bool: "true or false"}


def _kind(annotation: Any) -> str:
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is Annotated:
        return _kind(args[0])
    if origin in (Union, types.UnionType):
        return " or ".join(_kind(a) for a in args if a is not type(None))
    if origin is Literal:
        return " or ".join(repr(a) for a in args)
    if origin is list:
        return f"list of {_kind(args[0])}"
    if origin is dict:
        return f"table of {_kind(args[1])}"
    if isinstance(annotation, type) and issubclass(annotation, s.ConfigTable):
        return "table"
    return _KINDS.get(annotation, str(annotation))


def _limits(annotation: Any, metadata: list[Any]) -> list[str]:
    found: list[str] = []
    for item in metadata:
        if isinstance(item, FieldInfo):
            found += _limits(None, item.metadata)
        elif callable(getattr(item, "func", None)):
            found += [_VALIDATORS[item.func]] if item.func in _VALIDATORS else []
        found += [f"{sign} {getattr(item, n)}" for n, sign in _BOUNDS if hasattr(item, n)]
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is Annotated:
        found += _limits(args[0], list(args[1:]))
    elif origin in (Union, types.UnionType, list, dict):  # a list's items, a table's values
        for arg in args[-1:] if origin is dict else args:
            found += _limits(arg, [])
    return list(dict.fromkeys(found))


def _default(field: FieldInfo) -> str:
    if field.is_required():
        return "required"
    value = field.get_default(call_default_factory=True)
    return "not set" if value is None else json.dumps(value)  # TOML's spelling: true, "srun"


def _owner(table: type[s.ConfigTable], key: str) -> str:
    """The module of the class that declares ``key`` (a table may have parts: ``with_parts``)."""
    mine = (c for c in table.__mro__ if key in getattr(c, "__annotations__", {}))
    return next(mine, table).__module__


def _tables(title: str, table: type[s.ConfigTable]) -> list[TableDoc]:
    keys, inner = [], []
    for name, field in table.model_fields.items():
        limits = ", ".join(_limits(field.annotation, field.metadata))
        keys.append(KeyDoc(name, _kind(field.annotation), limits, _default(field),
                           field.description or "", _owner(table, name)))  # fmt: skip
        for arg in get_args(field.annotation):  # a table of tables: [slurm.mpi.NAME]
            if isinstance(arg, type) and issubclass(arg, s.ConfigTable):
                inner += _tables(f"{title[:-1]}.{name}.NAME]", arg)
    help_text = _TITLE.sub("", " ".join((table.__doc__ or "").split()))
    return [TableDoc(title, table.__module__, help_text, keys), *inner]


def describe(schema: s.Schema) -> list[TableDoc]:
    """Every table of ``schema``, each followed by the tables it holds."""
    out: list[TableDoc] = []
    for name, section in schema.sections.items():
        out += _tables(f"[[{name}]]" if section.many else f"[{name}]", section.table)
    return out
