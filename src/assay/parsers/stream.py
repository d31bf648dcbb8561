"""McCalpin's STREAM (``stream.c`` 5.10, and the 5.x releases before it), text output.

The table stream.c prints (5.10)::

    Function    Best Rate MB/s  Avg time     Min time     Max time
    Copy:            8239.8     0.019513     0.019418     0.019651

"MB" is 1e6 bytes: stream.c prints ``1.0E-06 * bytes[j] / mintime[j]`` where ``bytes[j]`` is
2 or 3 arrays of ``sizeof(STREAM_TYPE) * STREAM_ARRAY_SIZE`` bytes; the times are seconds
over the ``NTIMES - 1`` timed iterations (the first is not counted). Releases before 5.10
head the table ``Function      Rate (MB/s)   Avg time ...``; HPCC's copy prints ``Rate (GB/s)``
(1e9 B/s) -- the unit is taken from the header either way.

Validation (``checkSTREAMresults``) ends in ``Solution Validates: avg error less than
1.000000e-13 on all three arrays`` or in ``Failed Validation on array a[], AvgRelAbsErr >
epsilon (...)`` lines. A failed validation is a ``ParseError``: its rates are never returned.
A table without its validation line (the output was cut) is returned with ``complete=False``.
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
_BYTES = re.compile(r"^This system uses (?P<b>\d+) bytes per (?:array element|DOUBLE PRECISION)")
_ARRAY = re.compile(r"^Array size = (?P<n>\d+)(?: \(elements\))?, Offset = (?P<o>-?\d+)")
_NTIMES = re.compile(r"^(?:Each kernel will be executed|Each test is run) (?P<k>\d+) times")
_THREADS_REQ = re.compile(r"^Number of Threads requested = (?P<k>\d+)")
_THREADS_CNT = re.compile(r"^Number of Threads counted = (?P<k>\d+)")
_HEADER = re.compile(
    r"^Function\s+(?:Best Rate|Rate)\s*\(?(?P<unit>[MG]B/s)\)?\s+Avg time\s+Min time\s+Max time"
)
_ROW = re.compile(
    r"^(?P<kernel>Copy|Scale|Add|Triad):\s+(?P<rate>\S+)\s+(?P<avg>\S+)\s+(?P<min>\S+)"
    r"\s+(?P<max>\S+)\s*$"
)
_VALIDATES = re.compile(r"^Solution Validates")
_FAILED = re.compile(r"^(?:Failed Validation|ERROR\b)")


@dataclass
class _Table:
    line: int
    scale: float
    rows: dict[str, tuple[float, float, float, float, int]] = field(default_factory=dict)
    validated: bool = False
    header: dict[str, Any] = field(default_factory=dict)


def looks_like(text: str) -> bool:
    """STREAM's banner or its result table (HPCC's file is hpcc.py's)."""
    if "HPC Challenge Benchmark" in text or "Begin of Summary section." in text:
        return False
    if _VERSION.search(text):
        return True
    return any(_HEADER.match(ln.strip()) for ln in text.splitlines())


@checked
def parse(text: str, source: str = "<text>") -> ParseResult:
    """Parse the output of one or more STREAM runs; any failed validation is a ParseError."""
    require_text(text, "STREAM output", source=source)
    result = ParseResult(tool=TOOL)
    header: dict[str, Any] = {}
    tables: list[_Table] = []
    table: _Table | None = None
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if m := _VERSION.search(line):
            header = {"version": m["v"]}  # a new run starts
            result.meta.setdefault("version", m["v"])
        elif m := _BYTES.match(line):
            header["bytes_per_element"] = parse_int(
                m["b"], source=source, line=lineno, what="bytes per element"
            )
        elif m := _ARRAY.match(line):
            header["elements"] = parse_int(m["n"], source=source, line=lineno, what="array size")
            header["offset"] = parse_int(m["o"], source=source, line=lineno, what="offset")
        elif m := _NTIMES.match(line):
            header["ntimes"] = parse_int(m["k"], source=source, line=lineno, what="NTIMES")
        elif m := _THREADS_REQ.match(line):
            header["threads_requested"] = parse_int(
                m["k"], source=source, line=lineno, what="threads"
            )
        elif m := _THREADS_CNT.match(line):
            header["threads"] = parse_int(m["k"], source=source, line=lineno, what="threads")
        elif m := _HEADER.match(line):
            table = _Table(line=lineno, scale=_UNITS[m["unit"]], header=dict(header))
            tables.append(table)
        elif m := _ROW.match(line):
            if table is None:
                raise ParseError(
                    f"{m['kernel']} row before the table header", source=source, line=lineno
                )
            nums = [
                parse_number(m[k], source=source, line=lineno)
                for k in ("rate", "avg", "min", "max")
            ]
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
                continue
            table.rows[m["kernel"]] = (nums[0], nums[1], nums[2], nums[3], lineno)
        elif _FAILED.match(line):
            raise ParseError(
                f"STREAM failed its validation: {line}",
                source=source,
                line=lineno,
                hint="stream.c's results are not valid; no rate is reported",
            )
        elif _VALIDATES.match(line):
            if table is None:
                raise ParseError(
                    "validation line before any result table", source=source, line=lineno
                )
            table.validated = True

    if not tables:
        raise ParseError(
            "no STREAM result table ('Function ... Best Rate MB/s ...') found", source=source
        )
    if len(tables) > 1:
        result.meta["runs"] = len(tables)
    for i, tab in enumerate(tables):
        _samples(tab, i if len(tables) > 1 else None, result)
    return result


def _samples(table: _Table, run: int | None, result: ParseResult) -> None:
    where = f"run {run + 1} (table at line {table.line})" if run is not None else "the table"
    for kernel in KERNELS:
        if kernel not in table.rows:
            result.complete = False
            result.missing.append(f"{kernel} row of {where}")
    if not table.validated:
        result.complete = False
        result.missing.append(f"validation line ('Solution Validates') after {where}")
    h = table.header
    for kernel in KERNELS:
        if kernel not in table.rows:
            continue
        rate, avg, tmin, tmax, _ = table.rows[kernel]
        params: dict[str, Any] = {"min_time": tmin, "avg_time": avg, "max_time": tmax}
        if "elements" in h:
            params["elements"] = h["elements"]
        if "threads" in h or "threads_requested" in h:
            params["threads"] = h.get("threads", h.get("threads_requested"))
        elif "elements" in h:
            # stream.c prints the thread lines only when built with OpenMP (#ifdef _OPENMP):
            # a complete header without them is the serial build.
            params["threads"] = 1
        if run is not None:
            params["run"] = run
        stats = None
        if "ntimes" in h and tmax > 0:
            # the same bytes move in every iteration: the slowest one ran at rate * min/max
            best = _times(rate, table.scale)
            stats = Stats(n=h["ntimes"] - 1, max=best, min=best * tmin / tmax)
        result.samples.append(
            Sample.make(TOOL, f"memory.{kernel.lower()}", _times(rate, table.scale), params, stats)
        )
    for key in ("bytes_per_element", "ntimes", "offset"):
        if key in h:
            result.meta.setdefault(key, h[key])


def _times(value: float, factor: float) -> float:
    """``value * factor`` in decimal, so that 8239.8 MB/s is 8239800000 B/s, not 8239799999.99."""
    if not math.isfinite(value):
        return value * factor
    return float(Decimal(repr(value)) * Decimal(repr(factor)))
