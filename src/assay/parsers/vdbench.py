"""Vdbench raw-I/O (SD/WD) reports: ``summary.html``, ``totals.html`` or Vdbench's console.
(``flatfile.html`` is recognised and refused with a message naming the files to import.)

Every run starts with a ``Starting RD=name; I/O rate: ...; elapsed=...; For loops: ...`` line
and has a table of reporting intervals ended by a weighted average over the intervals after
the warm-up, the ``avg_M-N`` line (Vdbench 5.04.07 Users Guide, "Report files": "the
weighted average for all intervals except the first", or after ``warmup=``). Two column
sets exist, both read from the two header lines (their words are paired column by column)::

    5.04.06 and before:  resp time | read resp | write resp | resp max | resp stddev
    5.04.07:             resp time | read resp | write resp | read max | write max | resp stddev

followed by ``queue depth`` and, where Vdbench reads the CPU (not on macOS), ``cpu% sys+u``
and ``cpu% sys``. ``totals.html`` prints the header once and then only the ``avg_`` lines.

Units. ``i/o rate`` is I/O per second. ``MB/sec`` is 2**20 bytes per second: the header says
``1024**2`` and Vdbench's flatfile legend reads "MB/sec: Megabytes per second (MB=1024*1024)".
Response times are milliseconds ("All I/O times are in milliseconds", guide, summary.html).

Samples, one set per ``avg_`` line: ``storage.iops``, ``storage.bandwidth`` (B/s),
``storage.latency`` (s) with ``params["direction"]`` "total" (``resp time``; stats max =
``resp max`` or the larger of read/write max, stddev = ``resp stddev``), "read" and "write"
(``read resp``/``write resp``, their max in 5.04.07; left out when the run did no reads or no
writes). Stats ``n`` is the number of intervals averaged. An ``avg_2-1`` line (a run shorter
than two intervals: nothing was averaged) gives no samples, only a warning. The interval lines
are counted (``meta["runs"]``), not returned: Vdbench's own average is the result.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from assay.errors import ParseError
from assay.model import Stats
from assay.parsers.base import ParseResult, make_sample, other_tool, parse_number, require_text
from assay.parsers.numbers import checked, parse_int, parse_rate

TOOL = "vdbench"
MIB = 2**20  # "MB/sec 1024**2"

# no "<" inside a tag: "<[^>]*>" rescanned to the end of a line from every "<" of a long
# run of them (quadratic: 100,000 characters took 30 s); this stops at the next "<"
_TAG = re.compile(r"<[^<>]*>")
_TIME = r"(?:\d{1,2}:\d{2}:\d{2}\.\d+)"
_START = re.compile(r"Starting RD=(?P<rd>[^;]+?)\s*(?:;(?P<rest>.*))?$")
_ROW = re.compile(
    # the values start with a figure, so the blanks before them are the "\s+"'s alone: a class
    # holding blanks after "\s+" split a run of them every way on a failed match (quadratic)
    # and a time stamp is followed by blanks or by a glued "avg_" (17:46:35.163avg_31-150):
    # "\s*" let its fraction's digits and a numeric interval's split every way (quadratic)
    rf"^(?:{_TIME}(?:\s+|(?=avg_)))?(?P<interval>avg_\d+(?:-\d+)?|\d+)\s+"
    r"(?P<values>[-+0-9.eENaInfity][-+0-9.eENaInfity\s]*)$"
)
_AVG = re.compile(r"avg_(?P<first>\d+)(?:-(?P<last>\d+))?")
_VERSION = re.compile(r"Vdbench distribution: vdbench(?P<v>\d+)")
_FSD_HEADER = re.compile(r"\.Interval\.\s+\.ReqstdOps")
# flatfile.html (Flat.java): comment lines, then " tod  timestamp Run Interval reqrate ..."
_FLATFILE = re.compile(
    r"^\s*tod\s+timestamp\s+Run\s+Interval\b|'flatfile\.html' contains Vdbench", re.M
)


@dataclass
class _Run:
    name: str | None
    line: int
    info: dict[str, Any] = field(default_factory=dict)
    intervals: int = 0
    averages: int = 0
    avg_lines: dict[str, tuple[int, dict[str, float]]] = field(default_factory=dict)


def looks_like(text: str) -> bool:
    """Vdbench's report title, banner, its ``1024**2`` (or ``1000**2``) interval header, or
    its ``Starting RD=`` line followed by an ``avg_`` line (a pasted excerpt)."""
    if "<title>Vdbench" in text or "Vdbench distribution:" in text:
        return True
    if "Vdbench summary report" in text or _FLATFILE.search(text[:65536]):
        return True
    if ("1024**2" in text or "1000**2" in text) and re.search(r"\binterval\b", text):
        return True
    return "Starting RD=" in text and re.search(r"\bavg_\d+-\d+\s", text) is not None


@dataclass
class _Scan:
    """What ``parse`` has read so far."""

    lines: list[str]
    source: str
    result: ParseResult
    columns: list[str] | None = None
    runs: list[_Run] = field(default_factory=list)
    run: _Run | None = None


@checked
def parse(text: str, source: str = "<text>") -> ParseResult:
    """Samples of every ``avg_`` line of a Vdbench SD/WD report."""
    require_text(text, "Vdbench output", source=source)
    if _FLATFILE.search(text):
        raise ParseError(
            "a Vdbench flatfile.html (one column per counter): not read; import the "
            "summary.html or totals.html of the same output directory, which hold the same "
            "avg_ lines",
            source=source,
        )
    result = ParseResult(tool=TOOL)
    if m := _VERSION.search(text):
        digits = m["v"]
        result.meta["version"] = (
            f"{digits[0]}.{digits[1:3]}.{digits[3:]}" if len(digits) == 5 else digits
        )
    scan = _Scan([_TAG.sub("", raw).rstrip() for raw in text.splitlines()], source, result)
    last_data = max((i for i, ln in enumerate(scan.lines) if ln.strip()), default=-1)
    i = 0
    while i < len(scan.lines):
        stripped = scan.lines[i].strip()
        i += 1
        if not stripped:
            continue
        if m := _START.search(stripped):
            info = _run_info(m["rest"] or "", source, i)
            scan.run = _Run(m["rd"].strip(), i, info)
            scan.runs.append(scan.run)
        elif _FSD_HEADER.search(stripped):
            raise ParseError(
                "a Vdbench file system (FSD/FWD) report: only raw I/O (SD/WD) reports are read",
                source=source,
                line=i,
            )
        elif re.search(r"\binterval\b", stripped) and "MB/sec" in stripped:
            i = _header(scan, stripped, i)
        elif (m := _ROW.match(stripped)) is not None and not _row(scan, m, i, i - 1 == last_data):
            break  # the last line, cut short
    return _finish(scan, text)


def _header(scan: _Scan, first: str, lineno: int) -> int:
    """The two header lines (the second is the next non-empty one, ``1024**2`` under
    ``MB/sec``); returns the index of the line after them."""
    j = lineno
    while j < len(scan.lines) and not scan.lines[j].strip():
        j += 1
    if j >= len(scan.lines) or not re.search(r"10(?:24|00)\*\*2", scan.lines[j]):
        raise ParseError(
            "interval header without its second line ('rate 1024**2 ...')",
            source=scan.source,
            line=lineno,
        )
    scan.columns = _columns(first, scan.lines[j], scan.source, lineno)
    scan.result.meta.setdefault(
        "column_set", "5.04.07" if "read max" in scan.columns else "5.04.06"
    )
    return j + 1


def _row(scan: _Scan, m: re.Match[str], lineno: int, is_last: bool) -> bool:
    """An interval or ``avg_`` line; False when it is the output's last line, cut short."""
    source, result = scan.source, scan.result
    if scan.columns is None:
        raise ParseError(
            "an interval or avg_ line before any interval header ('interval  i/o  MB/sec ... "
            "1024**2'): the columns of this excerpt cannot be told",
            source=source,
            line=lineno,
        )
    columns = scan.columns
    tokens = m["values"].split()
    if len(tokens) != len(columns):
        if is_last and len(tokens) < len(columns):
            result.complete = False
            result.missing.append(f"the rest of the line at {source}:{lineno} (cut short)")
            return False
        raise ParseError(
            f"{len(tokens)} values for {len(columns)} columns ({', '.join(columns)})",
            source=source,
            line=lineno,
        )
    values = dict(zip(columns, (_value(t, source, lineno) for t in tokens), strict=True))
    if scan.run is None:  # a table without its 'Starting RD=' line (console excerpt)
        scan.run = _Run(None, lineno)
        scan.runs.append(scan.run)
    run = scan.run
    label = m["interval"]
    if not label.startswith("avg_"):
        run.intervals += 1
        return True
    if (first := run.avg_lines.get(label)) is not None:
        if first[1] != values and not _same_with_nan(first[1], values):
            raise ParseError(
                f"a second {label} line with other figures in run {run.name} "
                f"(line {first[0]} has the first): two outputs mixed?",
                source=source,
                line=lineno,
            )
        result.warnings.append(f"{source}:{lineno}: {label} repeats line {first[0]}; kept once")
        return True
    run.avg_lines[label] = (lineno, values)
    run.averages += 1
    _samples(label, values, run, result, source, lineno)
    return True


def _same_with_nan(a: dict[str, float], b: dict[str, float]) -> bool:
    return a.keys() == b.keys() and all(
        x == y or (math.isnan(x) and math.isnan(y)) for x, y in ((a[k], b[k]) for k in a)
    )


def _value(token: str, source: str, line: int) -> float:
    """A figure of a row; Vdbench prints ``NaN`` where it has none (cpu% of an empty run)."""
    if token == "NaN":
        return math.nan
    return parse_number(token, source=source, line=line)


def _finish(scan: _Scan, text: str) -> ParseResult:
    result, runs = scan.result, scan.runs
    if not runs:
        if scan.columns is None:
            other = other_tool(text, TOOL)
            hint = f"this looks like {other} output" if other else None
            raise ParseError(
                "no Vdbench interval table ('interval  i/o  MB/sec ... 1024**2') found",
                source=scan.source,
                hint=hint,
            )
        raise ParseError("a Vdbench header without any interval line", source=scan.source)
    result.meta["runs"] = [
        {"name": r.name, "line": r.line, "intervals": r.intervals, **r.info} for r in runs
    ]
    for r in runs:
        if r.averages == 0:
            result.complete = False
            result.missing.append(f"avg_ line of run {r.name or '?'} (started at line {r.line})")
    return result


def _columns(first: str, second: str, source: str, line: int) -> list[str]:
    words1 = first.split()
    if "interval" not in words1:
        raise ParseError("the column header lacks 'interval'", source=source, line=line)
    words1 = words1[words1.index("interval") + 1 :]
    words2 = second.split()
    if len(words1) != len(words2):
        raise ParseError(
            f"header lines do not pair up ({len(words1)} and {len(words2)} words)",
            source=source,
            line=line,
        )
    return [f"{a} {b}" for a, b in zip(words1, words2, strict=True)]


def _run_info(rest: str, source: str, lineno: int) -> dict[str, Any]:
    """``I/O rate: Uncontrolled MAX; elapsed=120 warmup=30; For loops: threads=2``."""
    info: dict[str, Any] = {}
    if m := re.search(r"I/O rate:\s*([^;]+)", rest):
        rate = m[1].strip()
        lower = rate.lower()
        if "curve" in lower:
            info["iorate_requested"] = "curve"
        elif "max" in lower:
            info["iorate_requested"] = "max"
        else:
            try:
                info["iorate_requested"] = parse_rate(rate, source=source, line=lineno)
            except ParseError:
                info["iorate_requested"] = rate  # kept as Vdbench printed it
        if "uncontrolled" in lower:
            info["controlled"] = False
        elif "controlled" in lower:
            info["controlled"] = True
    if m := re.search(r"elapsed=(\d+)", rest):
        info["elapsed_s"] = parse_int(
            m[1], source=source, line=lineno, what="elapsed="
        )  # the RD's elapsed=, seconds
    if m := re.search(r"warmup=(\d+)", rest):
        info["warmup_s"] = parse_int(m[1], source=source, line=lineno, what="warmup=")
    if m := re.search(r"For loops:\s*(.*)$", rest):
        loops = m[1].strip()
        if loops and loops != "None":
            info["for_loops"] = loops  # as Vdbench prints them: "threads=2 xfersize=8k"
            for key, value in re.findall(r"(\w+)=(\S+)", loops):
                info.setdefault(key, _loop_value(value))
    return info


_SIZE = re.compile(r"(?P<num>\d+(?:\.\d+)?)(?P<unit>[kmgt])", re.IGNORECASE)


def _loop_value(value: str) -> int | float | str:
    """A ``For loops:`` value: a whole number, a size in bytes (Vdbench's ``k`` is 1024),
    a number, or the text as printed (``max``, ``(10,90)``)."""
    if len(value) > 30:  # no count or size Vdbench prints is that long
        return value
    if value.isdigit():
        return int(value)
    if m := _SIZE.fullmatch(value):
        size = float(m["num"]) * 1024 ** ("kmgt".index(m["unit"].lower()) + 1)
        return int(size) if size.is_integer() else value
    try:
        number = float(value)
    except ValueError:
        return value
    return number if math.isfinite(number) else value


def _samples(
    label: str, values: dict[str, float], run: _Run, result: ParseResult, source: str, line: int
) -> None:
    m = _AVG.fullmatch(label)
    assert m is not None
    first = parse_int(m["first"], source=source, line=line, what="interval")
    last = parse_int(m["last"], source=source, line=line, what="interval") if m["last"] else first
    if last < first:
        result.warnings.append(
            f"{source}:{line}: {label} of run {run.name}: the run had fewer than two intervals, "
            "nothing was averaged"
        )
        return
    params: dict[str, Any] = {}
    if run.name is not None:
        params["run"] = run.name
    params.update(run.info)
    params["interval"] = label
    for column, key in (
        ("bytes i/o", "bytes_per_io"),
        ("read pct", "read_pct"),
        ("queue depth", "queue_depth"),
        ("cpu% sys+u", "cpu_sys_user_pct"),
        ("cpu% sys", "cpu_sys_pct"),
    ):
        if column in values and math.isfinite(values[column]):
            params[key] = values[column]
    n = last - first + 1
    rate = _need(values, "i/o rate", source, line)
    where = f"{source}:{line}: {label} of run {run.name or '?'}"
    if not rate > 0:  # 0.0 (or NaN): no I/O measured, so no rate, bandwidth or response time
        result.warnings.append(f"{where}: i/o rate {rate}, no I/O measured; no sample kept")
        return
    result.samples.append(
        make_sample(TOOL, "storage.iops", rate, params, unit="op/s", better="higher")
    )
    if (bw := _bandwidth(values, rate, where, result, source, line)) is not None:
        result.samples.append(
            make_sample(TOOL, "storage.bandwidth", bw, params, unit="B/s", better="higher")
        )
    read_max = values.get("read max")
    write_max = values.get("write max")
    total_max = values.get("resp max")
    if total_max is None and read_max is not None and write_max is not None:
        total_max = max(read_max, write_max)
    stddev = values.get("resp stddev")
    read_pct = values.get("read pct")
    for direction, column, max_ms in (
        ("total", "resp time", total_max),
        ("read", "read resp", read_max),
        ("write", "write resp", write_max),
    ):
        if direction == "read" and read_pct == 0:
            continue
        if direction == "write" and read_pct == 100:
            continue
        mean = _need(values, column, source, line)
        stats = Stats(
            n=n,
            mean=_ms(mean),
            max=_ms(max_ms) if max_ms is not None else None,
            stddev=_ms(stddev) if direction == "total" and stddev is not None else None,
        )
        result.samples.append(
            make_sample(
                TOOL,
                "storage.latency",
                _ms(mean),
                {**params, "direction": direction},
                stats,
                unit="s",
                better="lower",
            )
        )


def _bandwidth(
    values: dict[str, float], rate: float, where: str, result: ParseResult, source: str, line: int
) -> float | None:
    """B/s from ``MB/sec`` (1024**2, or 1000**2 where the header says so). Vdbench prints
    MB/sec with two decimals: a starved run's ``0.00`` is a rounded figure, not a bandwidth of
    0, so it is derived from ``i/o rate`` x ``bytes i/o`` (said in a warning) or left out."""
    column = "MB/sec 1000**2" if "MB/sec 1000**2" in values else "MB/sec 1024**2"
    mb = _need(values, column, source, line)
    if mb > 0 or math.isnan(mb):
        return _times(mb, MIB if column.endswith("1024**2") else 1e6) if mb > 0 else None
    per_io = values.get("bytes i/o", math.nan)
    if per_io > 0:
        result.warnings.append(
            f"{where}: MB/sec printed as 0.00 at {rate} I/O per second: bandwidth derived "
            f"as i/o rate x bytes i/o ({rate} x {per_io:g} B)"
        )
        return _times(rate, per_io)
    result.warnings.append(f"{where}: MB/sec printed as 0.00 with I/O done: no bandwidth kept")
    return None


def _need(values: dict[str, float], column: str, source: str, line: int) -> float:
    if column not in values:
        raise ParseError(f"no '{column}' column in this Vdbench table", source=source, line=line)
    return values[column]


def _ms(value: float) -> float:
    return _times(value, 1e-3)


def _times(value: float, factor: float) -> float:
    """``value * factor`` in decimal, so that 0.10 MB/s is 104857.6 B/s exactly."""
    if not math.isfinite(value):
        return value * factor
    return float(Decimal(repr(value)) * Decimal(repr(factor)))
