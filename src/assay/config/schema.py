"""The schema of ``config.toml``: every section, key and type assay reads, in one place.

``validate_config`` is the one gate: a file whose section or key is not here (``[outlier]``
for ``[outliers]``, ``partitoin``), or whose value has the wrong type or range
(``nodes = "abc"``, ``sbatch_args = "--exclusive"``, ``partition = ["a", "b"]``,
``time = true``, ``heartbeat_timeout = -1`` or ``nan``), is refused with every problem named
(section, key, value), never used half-read. Strings that reach a command line or a script
may hold no control character (a newline in an sbatch argument would end a line of the batch
script). What each value *means* (defaults, the MPI launch rules, Rpeak overrides, the outlier
rule) stays with the code that uses it: ``assay.launch.slurm.options`` ([slurm]),
``assay.toolchain.mpis`` ([[mpi]]), ``assay.system.peak`` ([peak]),
``assay.analysis.statistics.outliers`` ([outliers]), ``assay.analysis.check.checklimits`` ([check]).

Imported when a config is validated, not with ``assay.config``: ``assay --help`` must not pay
for pydantic.
"""

from __future__ import annotations

import datetime
import difflib
import ipaddress
import re
from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field
from pydantic import ValidationError as _ValidationError

from assay.errors import ConfigError
from assay.textutil import control_character


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
MAX_NODES = 200_000  # as assay.plan.bounds: above the largest machine
Seconds = Annotated[float, AfterValidator(_positive), Field(le=366 * DAY_S)]


class _Table(BaseModel):
    # strict: TOML has types, and a string is never read as a number nor a number as a
    # string; finite: nan and inf are TOML floats, never a setting
    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)


class MpiLaunchTable(_Table):
    """``[slurm.mpi.NAME]``: how one MPI starts inside an allocation."""

    launcher: Literal["srun", "mpirun"] = "srun"
    srun_mpi: Name = "pmi2"
    args: list[Text] = []
    env: dict[EnvName, Text] = {}


class SlurmTable(_Table):
    """``[slurm]``: defaults of a Slurm run (command-line options win)."""

    # its upper bound is the launcher's (launch.slurm.options: one message for --nodes too)
    nodes: Annotated[int, Field(ge=1)] = 2
    partition: Name | None = None
    account: Name | None = None
    qos: Name | None = None
    constraint: Name | None = None
    time: SlurmTime | None = None
    sbatch_args: list[Text] = []
    max_wait: Seconds = 24 * 3600.0
    heartbeat_timeout: Annotated[float, Field(ge=0, le=366 * DAY_S)] = 120.0  # 0: no watchdog
    poll_s: Annotated[float, Field(ge=0.1, le=3600)] = 2.0  # squeue not hammered, nor forgotten
    pairs_at_once: Annotated[int, Field(ge=0, le=MAX_NODES // 2)] = 0
    intra_node: bool = False
    fio_network: Network | None = None
    fio_port: Annotated[int, Field(ge=1, le=65535)] = 8765
    mpi: dict[Name, MpiLaunchTable] = {}


class MpiEntry(_Table):
    """One ``[[mpi]]``: an MPI implementation discovery would not find."""

    name: Name
    mpicc: Name
    launcher: Name
    launcher_flags: list[Text] = []


class PeakTable(_Table):
    """``[peak]``: Rpeak overrides."""

    uarch: Name | None = None
    cores: Annotated[int, Field(ge=1, le=65536)] | None = None  # per node
    clock_ghz: Annotated[float, Field(ge=0.01, le=100)] | None = None
    clock_kind: Name | None = None
    clock: Literal["base", "max"] | None = None
    flops_per_cycle_dp: Annotated[float, Field(gt=0, le=4096)] | None = None  # per core
    flops_per_cycle_sp: Annotated[float, Field(gt=0, le=4096)] | None = None


class OutliersTable(_Table):
    """``[outliers]``: when a link or a node is called out."""

    threshold: Annotated[float, AfterValidator(_positive), Field(le=1000)] | None = None
    link_factor: Factor | None = None
    node_factor: Factor | None = None


class CheckTable(_Table):
    """``[check]``: what ``assay check`` judges against and how far below it a figure may be
    (limits keyed by a metric, a family or ``default``)."""

    baseline: Name | list[Name] | None = None  # one per node type
    retest: bool = True
    warn_below: dict[Name, Ratio] = {}
    fail_below: dict[Name, Ratio] = {}


class ConfigFile(_Table):
    slurm: SlurmTable | None = None
    mpi: list[MpiEntry] = []
    peak: PeakTable | None = None
    outliers: OutliersTable | None = None
    check: CheckTable | None = None


SECTIONS: dict[str, type[_Table]] = {
    "slurm": SlurmTable,
    "peak": PeakTable,
    "outliers": OutliersTable,
    "check": CheckTable,
}


def validate_config(data: Mapping[str, Any], origin: str = "config") -> dict[str, Any]:
    """``data`` (a parsed config.toml) checked against the schema: the keys it sets, with
    TOML times as text. Raises ConfigError naming every problem."""
    try:
        model = ConfigFile.model_validate(dict(data))
    except _ValidationError as exc:
        raise _config_error(exc, origin) from None
    return model.model_dump(exclude_unset=True)


def validate_section(
    name: str,
    table: Any,
    origin: str = "config",
    *,
    options: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """One section's table checked (the keys it sets); ``options`` names the command-line
    option of each key, for values given there rather than in the file."""
    if table is None:
        return {}
    model = SECTIONS[name]
    try:
        checked = model.model_validate(table)
    except _ValidationError as exc:
        raise _config_error(exc, origin, prefix=(name,), options=options) from None
    return checked.model_dump(exclude_unset=True)


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


def _known(loc: tuple[Any, ...]) -> list[str]:
    """The keys (or sections) the table holding ``loc``'s last key takes."""
    model: Any = ConfigFile
    for p in loc[:-1]:
        if isinstance(p, int) or model is None:
            continue
        field = model.model_fields.get(p) if hasattr(model, "model_fields") else None
        if field is None:  # a name of the user's (an MPI's): its table's model is the value's
            continue
        model = _model_of(field.annotation)
    return sorted(model.model_fields) if hasattr(model, "model_fields") else []


def _model_of(annotation: Any) -> Any:
    for arg in getattr(annotation, "__args__", ()) or ():
        found = _model_of(arg)
        if found is not None:
            return found
    return annotation if isinstance(annotation, type) and issubclass(annotation, _Table) else None


def _config_error(
    exc: _ValidationError,
    origin: str,
    *,
    prefix: tuple[str, ...] = (),
    options: Mapping[str, str] | None = None,
) -> ConfigError:
    lines: list[str] = []
    hints: list[str] = []
    for err in exc.errors():
        loc = tuple(p for p in err["loc"] if not (isinstance(p, str) and p.startswith("function")))
        head = loc[0] if loc else None
        option = options.get(head) if options and isinstance(head, str) else None
        kind = err["type"]
        if kind == "extra_forbidden":
            full = prefix + loc
            known = _known(full)
            name = str(full[-1])
            close = difflib.get_close_matches(name, known, n=1)
            if len(full) == 1:
                lines.append(f"{origin}: unknown section [{name}]")
            else:
                table, _ = _where(full)
                lines.append(f"{origin}: unknown key {name!r} in {table}")
            hints.append(
                (f"did you mean {close[0]!r}? " if close else "")
                + (f"known: {', '.join(known)}" if known else "")
            )
            continue
        if kind == "missing":
            table, key = _where(prefix + loc)
            lines.append(f"{origin}: {table}: the key {key!r} is missing")
            continue
        message = str(err["msg"]).removeprefix("Value error, ")
        wanted = _WANTED.get(kind, "").format(**err.get("ctx", {})) or message
        wanted = wanted[:1].lower() + wanted[1:]
        shown = repr(err.get("input"))
        shown = shown if len(shown) <= 80 else shown[:77] + "..."
        if option:
            rest = "".join(f"[{p}]" for p in loc[1:])
            lines.append(f"{option}{rest} {shown}: {wanted}")
            continue
        table, key = _where(prefix + loc)
        lines.append(f"{origin}: {table} {key} = {shown}: {wanted}".replace(":  ", ": "))
    hint = "; ".join(h for h in dict.fromkeys(hints) if h) or None
    return ConfigError("\n".join(lines[:10]), hint=hint)
