"""McCalpin's STREAM (``stream.c`` 5.x, ``stream.f``, ``stream_mpi.c``), text output.

The table stream.c prints (5.10)::

    Function    Best Rate MB/s  Avg time     Min time     Max time
    Copy:            8239.8     0.019513     0.019418     0.019651

"MB" is 1e6 bytes: stream.c prints ``1.0E-06 * bytes[j] / mintime[j]`` where ``bytes[j]`` is
2 or 3 arrays of ``sizeof(STREAM_TYPE) * STREAM_ARRAY_SIZE`` bytes; the times are seconds
over the ``NTIMES - 1`` timed iterations (the first is not counted). Releases before 5.10
head the table ``Function      Rate (MB/s)   Avg time ...`` and print ``Array size = 2000000,
Offset = 0``; the Fortran stream.f prints ``Array size =    2000000`` and ``Offset     =  0`` on
lines of their own and leaves out the first and the last iteration; HPCC's copy prints
``Rate (GB/s)`` (1e9 B/s) -- the unit is taken from the header either way. ``stream_mpi.c``
(its own revision, 1.x) prints ``Total Aggregate Array size = N (elements)`` and ``Data is
distributed across R MPI ranks``: its samples carry ``ranks``.

Runs. Every table is its own run with the header lines printed before it: a file of several
runs (``for t in 1 2 4 8; do OMP_NUM_THREADS=$t ./stream; done > out``) gives a ``run`` index
and each run's own ``threads``, never another run's. A ``Number of Threads requested`` line
starts a new run's thread count (stream-scaling prints only that line, the header and the
Triad row for every run after the first: such a Triad-only run is read as what it is, said in
a warning, not as a cut table).

Validation (``checkSTREAMresults``) ends in ``Solution Validates`` or in ``Failed Validation
on array a[] ...`` lines: a failed run gives no rate (a warning names it); a file whose every
run failed is a ``ParseError``. A table without its validation line (the output was cut) is
returned with ``complete=False``.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from assay.errors import ParseError
from assay.model import Sample, Stats
from assay.parsers.base import ParseResult, parse_number, require_text
from assay.parsers.numbers import checked, parse_int

TOOL = "stream"
KERNELS = ("Copy", "Scale", "Add", "Triad")
_UNITS = {"MB/s": 1e6, "GB/s": 1e9}  # stream.c: 1.0E-06 * bytes / time; HPCC: 1e-9

_VERSION = re.compile(r"STREAM version \$Revision:\s*(?P<v>[0-9.]+)\s*\$")
_HEADER = re.compile(
    r"^Function\s+(?:Best Rate|Rate)\s*\(?(?P<unit>[MG]B/s)\)?\s+Avg time\s+Min time\s+Max time"
)
_ROW = re.compile(
    r"^(?P<kernel>Copy|Scale|Add|Triad):\s+(?P<rate>\S+)\s+(?P<avg>\S+)\s+(?P<min>\S+)"
    r"\s+(?P<max>\S+)\s*$"
)
_VALIDATES = re.compile(r"^Solution Validates")
_FAILED = re.compile(r"^(?:Failed Validation|ERROR\b)")

# The header lines before a table: (pattern, key of the run's header, what it is). The first
# group of each pattern is the integer kept; "offset" also comes from _ARRAY's second group.
_ARRAY = re.compile(
    r"^(?:Total Aggregate )?Array size =\s*(?P<n>\d+)(?: \(elements\))?"
    r"(?:, Offset = (?P<o>-?\d+))?"
)
_HEADER_LINES: tuple[tuple[re.Pattern[str], str, str], ...] = (
    (
        re.compile(
            r"^(?:This system uses|Assuming) (\d+) bytes per "
            r"(?:array element|DOUBLE PRECISION)"
        ),
        "bytes_per_element",
        "bytes per element",
    ),
    (_ARRAY, "elements", "array size"),
    (re.compile(r"^Offset\s*=\s*(-?\d+)$"), "offset", "offset"),  # stream.f's own line
    (
        re.compile(
            r"^(?:Each kernel will be executed|Each test is run|You are running each test)"
            r"\s+(\d+) times"
        ),
        "ntimes",
        "NTIMES",
    ),
    (re.compile(r"^Number of Threads(?: requested)?\s*=\s*(\d+)"), "threads_requested", "threads"),
    (re.compile(r"^Number of Threads counted\s*=\s*(\d+)"), "threads", "threads"),
    (re.compile(r"^Data is distributed across (\d+) MPI ranks"), "ranks", "MPI ranks"),
)
# stream.f times NTIMES iterations and leaves out the first and the last (stream.c: the first)
_EXCLUDING = re.compile(r"^\*EXCLUDING\* the first and last iterations")


@dataclass
class _Table:
    line: int
    scale: float
    rows: dict[str, tuple[float, float, float, float, int]] = field(default_factory=dict)
    validated: bool = False
    failed: tuple[int, str] | None = None  # the first 'Failed Validation' line
    header: dict[str, Any] = field(default_factory=dict)


def looks_like(text: str) -> bool:
    """STREAM's banner or its result table (HPCC's file is hpcc.py's)."""
    if "HPC Challenge Benchmark" in text or "Begin of Summary section." in text:
        return False
    if _VERSION.search(text):
        return True
    return any(_HEADER.match(ln.strip()) for ln in text.splitlines())


def _header_line(line: str, lineno: int, header: dict[str, Any], source: str) -> bool:
    """Read one of the lines before a table into ``header``; False when it is none of them."""
    if m := _VERSION.search(line):
        header.clear()  # a new run's banner: nothing of the previous run's header carries over
        header["version"] = m["v"]
        return True
    if _EXCLUDING.match(line):
        header["excluded"] = 2
        return True
    for pattern, key, what in _HEADER_LINES:
        if m := pattern.match(line):
            if key == "threads_requested":
                header.pop("threads", None)  # the previous run's count is not this run's
            header[key] = parse_int(m[1], source=source, line=lineno, what=what)
            if pattern is _ARRAY and m["o"] is not None:
                header["offset"] = parse_int(m["o"], source=source, line=lineno, what="offset")
            return True
    return False


def _row(table: _Table | None, m: re.Match[str], lineno: int, result: ParseResult, source: str):
    if table is None:
        raise ParseError(f"{m['kernel']} row before the table header", source=source, line=lineno)
    nums = [parse_number(m[k], source=source, line=lineno) for k in ("rate", "avg", "min", "max")]
    if (seen := table.rows.get(m["kernel"])) is not None:
        if list(seen[:4]) != nums:
            raise ParseError(
                f"a second {m['kernel']} row with other figures (line {seen[4]} has the "
                "first): two outputs mixed?",
                source=source,
                line=lineno,
            )
        result.warnings.append(
            f"{source}:{lineno}: the {m['kernel']} row repeats line {seen[4]}; kept once"
        )
        return
    table.rows[m["kernel"]] = (nums[0], nums[1], nums[2], nums[3], lineno)


@checked
def parse(text: str, source: str = "<text>") -> ParseResult:
    """Parse the output of one or more STREAM runs (see the module docstring)."""
    require_text(text, "STREAM output", source=source)
    result = ParseResult(tool=TOOL)
    header: dict[str, Any] = {}
    tables: list[_Table] = []
    table: _Table | None = None
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if _header_line(line, lineno, header, source):
            result.meta.setdefault("version", header.get("version"))
        elif m := _HEADER.match(line):
            table = _Table(line=lineno, scale=_UNITS[m["unit"]], header=dict(header))
            tables.append(table)
        elif m := _ROW.match(line):
            _row(table, m, lineno, result, source)
        elif _FAILED.match(line):
            if table is None:
                raise ParseError(
                    f"STREAM failed its validation: {line}", source=source, line=lineno
                )
            table.failed = table.failed or (lineno, line)
        elif _VALIDATES.match(line):
            if table is None:
                raise ParseError(
                    "validation line before any result table", source=source, line=lineno
                )
            table.validated = True
    if not tables:
        found = f"a STREAM {header['version']} banner" if "version" in header else "no banner"
        raise ParseError(
            f"no STREAM result table ('Function ... Best Rate MB/s ...') found ({found})",
            source=source,
        )
    if result.meta.get("version") is None:
        result.meta.pop("version", None)
    _keep_runs(tables, result, source)
    return result


def _keep_runs(tables: list[_Table], result: ParseResult, source: str) -> None:
    """The samples of every run that did not fail its validation; all failed: a ParseError."""
    several = len(tables) > 1
    if several:
        result.meta["runs"] = len(tables)
    for i, tab in enumerate(tables):
        if tab.failed is not None:
            where = f"run {i + 1} (table at line {tab.line})" if several else "the table"
            result.warnings.append(
                f"{source}:{tab.failed[0]}: {where} failed its validation "
                f"({tab.failed[1]}): its rates are not reported"
            )
            continue
        _samples(tab, i if several else None, result)
    summaries = [str(i + 1) for i, t in enumerate(tables) if _triad_only(t)]
    if summaries:
        result.warnings.append(
            f"runs {', '.join(summaries)}: only the thread count and the Triad row (a summary "
            "as stream-scaling prints it, the validation line filtered out, no 'Failed "
            "Validation' line)"
        )
    if all(t.failed is not None for t in tables):
        line, text = next(t.failed for t in tables if t.failed is not None)
        raise ParseError(
            f"STREAM failed its validation: {text}",
            source=source,
            line=line,
            hint="stream.c's results are not valid; no rate is reported",
        )


def _triad_only(table: _Table) -> bool:
    """A run of which only the Triad row was kept (stream-scaling's egrep), not a cut table."""
    return set(table.rows) == {"Triad"} and not table.validated and table.failed is None


def _samples(table: _Table, run: int | None, result: ParseResult) -> None:
    where = f"run {run + 1} (table at line {table.line})" if run is not None else "the table"
    if not _triad_only(table):  # a Triad-only run is said once, in _keep_runs
        for kernel in KERNELS:
            if kernel not in table.rows:
                result.complete = False
                result.missing.append(f"{kernel} row of {where}")
        if not table.validated:
            result.complete = False
            result.missing.append(f"validation line ('Solution Validates') after {where}")
    h = table.header
    for kernel in KERNELS:
        if kernel in table.rows:
            result.samples.append(_sample(kernel, table, h, run))
    for key in ("bytes_per_element", "ntimes", "offset"):
        if key in h:
            result.meta.setdefault(key, h[key])


def _sample(kernel: str, table: _Table, h: dict[str, Any], run: int | None) -> Sample:
    rate, avg, tmin, tmax, _ = table.rows[kernel]
    params: dict[str, Any] = {"min_time": tmin, "avg_time": avg, "max_time": tmax}
    if "elements" in h:
        params["elements"] = h["elements"]
    if "ranks" in h:
        params["ranks"] = h["ranks"]
    if "threads" in h or "threads_requested" in h:
        params["threads"] = h.get("threads", h.get("threads_requested"))
    elif "elements" in h and "ranks" not in h:
        # stream.c prints the thread lines only when built with OpenMP (#ifdef _OPENMP):
        # a complete header without them is the serial build.
        params["threads"] = 1
    if run is not None:
        params["run"] = run
    stats = None
    if "ntimes" in h and tmax > 0:
        # the same bytes move in every iteration: the slowest one ran at rate * min/max
        best = _times(rate, table.scale)
        stats = Stats(n=h["ntimes"] - h.get("excluded", 1), max=best, min=best * tmin / tmax)
    return Sample.make(TOOL, f"memory.{kernel.lower()}", _times(rate, table.scale), params, stats)


def _times(value: float, factor: float) -> float:
    """``value * factor`` in decimal, so that 8239.8 MB/s is 8239800000 B/s, not 8239799999.99."""
    if not math.isfinite(value):
        return value * factor
    return float(Decimal(repr(value)) * Decimal(repr(factor)))
