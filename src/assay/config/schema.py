"""The mechanism of ``config.toml``'s schema: how a table is declared, assembled and checked.

Each table is declared by the module that owns it, beside the code that gives its values a
meaning: ``[slurm]`` by the Slurm scheduler (``assay.launch.slurm.options``), its ``fio_port``
and ``fio_network`` by fio (keys a serving probe adds to every scheduler's table), ``[[mpi]]`` by
``assay.toolchain.mpis``, ``[peak]`` by ``assay.system.peak``, ``[outliers]`` by
``assay.analysis.statistics.outliers``, ``[check]`` by ``assay.analysis.check.checklimits``. A
declaration is a ``ConfigTable`` (keys, types, ranges, defaults, and help in
``Field(description=...)``) named by a ``Section``; ``assemble`` makes one ``Schema`` of them,
where every owner is visible (``assay.run.configfile``). This module names no table.

``validate_config`` is the one gate for a whole file: a section or key not declared
(``[outlier]`` for ``[outliers]``, ``partitoin``), or a value of the wrong type or range
(``nodes = "abc"``, ``sbatch_args = "--exclusive"``, ``time = true``, ``heartbeat_timeout =
-1`` or ``nan``), is refused with every problem named (section, key, value), never used
half-read; ``validate_section`` checks one owner's table by the same rules and messages.
Strings that reach a command line or a script may hold no control character (a newline in an
sbatch argument would end a line of the batch script).

Imported when a config is validated, not with ``assay.config``: ``assay --help`` must not pay
for pydantic.
"""

from __future__ import annotations

import datetime
import difflib
import functools
import ipaddress
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, create_model
from pydantic import ValidationError as _ValidationError

from assay.errors import ConfigError
from assay.textutil import control_character


class DeclarationError(TypeError):
    """A table declared wrongly (a default outside its own range, a table declared twice): a
    mistake in assay's code, found when the declaration is made, never in a user's file."""


def _plain(value: str) -> str:
    found = control_character(value)
    if found:
        raise ValueError(
            f"contains the control character {found}: refused in a value that reaches a "
            "command line or a script"
        )
    return value


_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _env_name(value: str) -> str:
    if not _ENV_NAME.fullmatch(value):
        raise ValueError("is not an environment variable name (letters, digits, _)")
    return value


# Slurm's --time: minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS (sbatch(1)); or none.
_SLURM_TIME = re.compile(r"(?:\d+-)?\d+(?::\d+){0,2}|unlimited|infinite", re.IGNORECASE)


def _slurm_time_text(value: Any) -> Any:
    if isinstance(value, datetime.time):  # TOML's unquoted 00:30:00
        return value.strftime("%H:%M:%S")
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return str(value)  # minutes
    return value


def _slurm_time(value: str) -> str:
    if not _SLURM_TIME.fullmatch(value):
        raise ValueError(
            'expected a Slurm time limit: minutes, "MM:SS", "HH:MM:SS" or "D-HH:MM:SS"'
        )
    return value


def _network(value: str) -> str:
    try:
        ipaddress.ip_network(value, strict=False)
    except ValueError:
        raise ValueError('expected a network such as "10.0.0.0/16"') from None
    return value


Text = Annotated[str, AfterValidator(_plain)]
Name = Annotated[str, Field(min_length=1), AfterValidator(_plain)]
EnvName = Annotated[str, AfterValidator(_env_name)]
SlurmTime = Annotated[
    str, BeforeValidator(_slurm_time_text), AfterValidator(_plain), AfterValidator(_slurm_time)
]
Network = Annotated[str, AfterValidator(_plain), AfterValidator(_network)]


def _positive(value: float) -> float:
    if not value > 0:
        raise ValueError("expected a positive number")
    return value


def _factor(value: float) -> float:
    if not value >= 1:
        raise ValueError("expected a factor of 1 or more")
    return value


def _ratio(value: float) -> float:
    if not 0 < value <= 1:
        raise ValueError("expected a ratio above 0 and at most 1 (0.9: 10 % below the baseline)")
    return value


Positive = Annotated[float, AfterValidator(_positive)]
Factor = Annotated[float, AfterValidator(_factor), Field(le=1000)]
Ratio = Annotated[float, AfterValidator(_ratio)]

# Every number gets a range a person could mean (issue 28): finite is not enough. ``clock_ghz
# = 1e300`` made Rpeak infinite (``Infinity`` in samples.jsonl, not JSON), ``poll_s = 1e20`` an
# OverflowError in time.sleep after the job was submitted. The bounds are far beyond any real
# setting, never near one.
DAY_S = 86400.0
Seconds = Annotated[float, AfterValidator(_positive), Field(le=366 * DAY_S)]


class ConfigTable(BaseModel):
    """A table of config.toml as its owner declares it: each key a field with its type, its
    range, its default and its help (``Field(description=...)``). A default outside its own
    range is refused when the class is made (``DeclarationError``)."""

    # strict: TOML has types, and a string is never read as a number nor a number as a
    # string; finite: nan and inf are TOML floats, never a setting
    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)
    # keys the table had and gave to another owner: each one's new place, told to a config
    # that still has it (refused, as any unknown key, but with where it went)
    MOVED: ClassVar[dict[str, str]] = {}

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        defaults = {
            name: f.default
            for name, f in cls.model_fields.items()
            if not f.is_required() and f.default is not None and f.default_factory is None
        }
        try:
            cls.model_validate(defaults)
        except _ValidationError as exc:
            wrong = [e for e in exc.errors() if e["type"] != "missing"]
            if wrong:
                where = ", ".join(
                    f"{'.'.join(map(str, e['loc']))} = {e['input']!r} ({e['msg']})" for e in wrong
                )
                raise DeclarationError(
                    f"{cls.__module__}.{cls.__qualname__}: a default outside its own range: {where}"
                ) from None


@dataclass(frozen=True)
class Section:
    """One table of config.toml, declared by its owner: ``[name]``, or ``[[name]]`` (an array
    of tables) when ``many``. The owner is the module that defines the table."""

    name: str
    table: type[ConfigTable]
    many: bool = False

    @property
    def owner(self) -> str:
        return self.table.__module__


@dataclass(frozen=True)
class Schema:
    """Every declared table of config.toml, assembled: what a whole file is checked against."""

    sections: dict[str, Section]
    model: type[ConfigTable]


def _field(section: Section) -> tuple[Any, Any]:
    return (list[section.table], []) if section.many else (section.table | None, None)


def assemble(sections: Iterable[Section]) -> Schema:
    """One schema of the owners' declarations, in their order; a table declared twice is a
    ``DeclarationError`` naming both owners."""
    found: dict[str, Section] = {}
    for section in sections:
        if section.name in found:
            raise DeclarationError(
                f"[{section.name}] is declared twice: by {found[section.name].owner} and by "
                f"{section.owner}"
            )
        found[section.name] = section
    fields: Any = {name: _field(s) for name, s in found.items()}
    return Schema(found, create_model("ConfigFile", __base__=ConfigTable, **fields))


def with_parts(table: type[ConfigTable], parts: Iterable[type[ConfigTable]]) -> type[ConfigTable]:
    """``table`` with the keys other owners add to it (a serving probe's keys in a scheduler's
    table): each key declared once, by its part; the result keeps ``table``'s owner."""
    parts = tuple(parts)
    if not parts:
        return table
    return create_model(  # type: ignore[call-overload, no-any-return]
        # the parts first in the bases: the table's own keys come first in its fields
        table.__name__, __base__=(*parts, table), __module__=table.__module__,
        __doc__=table.__doc__,
    )  # fmt: skip


def validate_config(
    data: Mapping[str, Any], schema: Schema, origin: str = "config"
) -> dict[str, Any]:
    """``data`` (a parsed config.toml) checked against ``schema``: the keys it sets, with
    TOML times as text. Raises ConfigError naming every problem."""
    try:
        model = schema.model.model_validate(dict(data))
    except _ValidationError as exc:
        raise _config_error(exc, origin, schema.model) from None
    return model.model_dump(exclude_unset=True)


@functools.cache
def _alone(section: Section) -> type[ConfigTable]:
    """A file of this one section: its table is checked as in a whole file."""
    fields: Any = {section.name: _field(section)}
    return create_model(f"Only_{section.name}", __base__=ConfigTable, **fields)


def validate_section(
    section: Section,
    table: Any,
    origin: str = "config",
    *,
    options: Mapping[str, str] | None = None,
) -> Any:
    """One owner's table checked (the keys it sets; a list for ``[[name]]``); ``options``
    names the command-line option of each key, for values given there rather than in the
    file."""
    if table is None:
        return [] if section.many else {}
    model = _alone(section)
    try:
        checked = model.model_validate({section.name: table})
    except _ValidationError as exc:
        raise _config_error(exc, origin, model, options=options) from None
    return checked.model_dump(exclude_unset=True)[section.name]


def table_defaults(table: type[ConfigTable]) -> dict[str, Any]:
    """The default of each key that has one (the declaration's, written once)."""
    return {n: f.get_default(call_default_factory=True) for n, f in table.model_fields.items()
            if not f.is_required()}  # fmt: skip


# ------------------------------------------------------------------------------ messages

_WANTED = {
    "int_type": "expected a whole number",
    "int_parsing": "expected a whole number",
    "float_type": "expected a number",
    "finite_number": "expected a finite number",
    "string_type": "expected a string (in quotes)",
    "bool_type": "expected true or false",
    "list_type": 'expected a list, e.g. ["a", "b"]',
    "dict_type": "expected a table",
    "model_type": "expected a table",
    "model_attributes_type": "expected a table",
    "greater_than_equal": "expected a value of at least {ge}",
    "greater_than": "expected a value above {gt}",
    "less_than_equal": "expected a value of at most {le}",
}


def _where(loc: tuple[Any, ...]) -> tuple[str, str]:
    """(table, key) of a value: ``('slurm', 'mpi', 'x', 'args', 0)`` ->
    (``[slurm.mpi.x]``, ``args[0]``)."""
    last = max((i for i, p in enumerate(loc) if isinstance(p, str)), default=-1)
    names = [str(p) for p in loc[:last] if isinstance(p, str)]
    entry = loc[last - 1] if last >= 1 and isinstance(loc[last - 1], int) else None
    key = str(loc[last]) if last >= 0 else ""
    key += "".join(f"[{p}]" for p in loc[last + 1 :])
    if entry is not None:  # a table of an array of tables: [[mpi]] entry 1
        table = f"[[{'.'.join(names)}]] entry {entry + 1}"
    else:
        table = f"[{'.'.join(names)}]" if names else ""
    return table, key


def _holder(loc: tuple[Any, ...], root: type[ConfigTable]) -> Any:
    """The table (its model) holding ``loc``'s last key."""
    model: Any = root
    for p in loc[:-1]:
        if isinstance(p, int) or model is None:
            continue
        field = model.model_fields.get(p) if hasattr(model, "model_fields") else None
        if field is None:  # a name of the user's (an MPI's): its table's model is the value's
            continue
        model = _model_of(field.annotation)
    return model


def _known(loc: tuple[Any, ...], root: type[ConfigTable]) -> list[str]:
    """The keys (or sections) the table holding ``loc``'s last key takes."""
    model = _holder(loc, root)
    return sorted(model.model_fields) if hasattr(model, "model_fields") else []


def _model_of(annotation: Any) -> Any:
    for arg in getattr(annotation, "__args__", ()) or ():
        found = _model_of(arg)
        if found is not None:
            return found
    return (
        annotation if isinstance(annotation, type) and issubclass(annotation, ConfigTable) else None
    )


def _config_error(
    exc: _ValidationError,
    origin: str,
    root: type[ConfigTable],
    *,
    options: Mapping[str, str] | None = None,
) -> ConfigError:
    lines: list[str] = []
    hints: list[str] = []
    for err in exc.errors():
        loc = tuple(p for p in err["loc"] if not (isinstance(p, str) and p.startswith("function")))
        # a command-line option: the key is the one after the section's name
        head = loc[1] if options and len(loc) > 1 else None
        option = options.get(head) if options and isinstance(head, str) else None
        kind = err["type"]
        if kind == "extra_forbidden":
            full = loc
            known = _known(full, root)
            name = str(full[-1])
            close = difflib.get_close_matches(name, known, n=1)
            if len(full) == 1:
                lines.append(f"{origin}: unknown section [{name}]")
            else:
                table, _ = _where(full)
                lines.append(f"{origin}: unknown key {name!r} in {table}")
                if moved := getattr(_holder(full, root), "MOVED", {}).get(name):
                    hints.append(f"{name} is no longer a key of {table}: {moved}")
                    continue
            hints.append(
                (f"did you mean {close[0]!r}? " if close else "")
                + (f"known: {', '.join(known)}" if known else "")
            )
            continue
        if kind == "missing":
            table, key = _where(loc)
            lines.append(f"{origin}: {table}: the key {key!r} is missing")
            continue
        message = str(err["msg"]).removeprefix("Value error, ")
        wanted = _WANTED.get(kind, "").format(**err.get("ctx", {})) or message
        wanted = wanted[:1].lower() + wanted[1:]
        shown = repr(err.get("input"))
        shown = shown if len(shown) <= 80 else shown[:77] + "..."
        if option:
            rest = "".join(f"[{p}]" for p in loc[2:])
            lines.append(f"{option}{rest} {shown}: {wanted}")
            continue
        table, key = _where(loc)
        lines.append(f"{origin}: {table} {key} = {shown}: {wanted}".replace(":  ", ": "))
    hint = "; ".join(h for h in dict.fromkeys(hints) if h) or None
    return ConfigError("\n".join(lines[:10]), hint=hint)
