"""nccl-tests (and rccl-tests) text output: all_reduce_perf, all_gather_perf, alltoall_perf...

The table has one row per message size and one group of columns per placement, titled by the
line above the header (``out-of-place ... in-place``). Three header layouts are read, driven by
the header itself:

* nccl-tests 2.x up to about 2.10: ``size count type redop time algbw busbw error ...``
  (``error`` is the largest numerical difference, e.g. ``2e-07``, not a count);
* older still, without ``redop`` (all_gather, broadcast of 2019);
* current: ``size count type redop root time algbw busbw #wrong time algbw busbw #wrong``,
  possibly followed by ``#iters`` or a timestamp, and ``cputime`` instead of ``time`` with -C.

Samples, one set per row and placement: ``gpu.nccl.<op>.busbw`` and ``gpu.nccl.<op>.algbw``
(GB/s printed, 1e9 B/s; see nccl-tests doc/PERFORMANCE.md) and ``gpu.nccl.<op>.time`` (us
printed, seconds). A bandwidth printed as 0.00 (below the 0.01 GB/s print resolution, at small
sizes) is not a measured zero and is not kept; the time of that row is.

``<op>`` is the test name without ``_perf`` (all_reduce, all_gather, alltoall, broadcast,
reduce, reduce_scatter, sendrecv...), taken from ``# Collective test starting: all_reduce_perf``
(or ``... concluded``) when printed, else from the source file name, else from the printed
numbers: busbw/algbw is 2(n-1)/n for all_reduce, (n-1)/n for
reduce_scatter and 1 for reduce/broadcast (nccl-tests doc/PERFORMANCE.md), with n the number of
``# Rank`` lines. When that still leaves two candidates (all_gather and alltoall both have
(n-1)/n and no reduction) ParseError asks for the test name.

params: ``tool="nccl"``, ``benchmark`` ("all_reduce_perf"), ``size`` (bytes), ``count``,
``type``, ``redop``, ``root`` (when printed), ``placement`` ("out-of-place"/"in-place"),
``ranks`` (number of ``# Rank`` lines, when printed), ``version`` (nccl-tests version line).

Correctness: a row whose ``#wrong`` is above 0 produced wrong data; its samples of that
placement are left out and a warning names the line (the timing of a wrong result is not a
result). ``N/A`` in ``#wrong`` (checking disabled with ``-c 0``) keeps the sample and adds one
warning. Without the ``# Avg bus bandwidth`` footer the result is ``complete=False`` and
``missing`` names the sizes after the last row (up to maxBytes of the ``# nThread`` line).
NCCL debug lines (``host:pid:tid [dev] NCCL INFO ...``) are skipped. Any other line inside the
table ends it; a row after it means interleaved output and raises ParseError at that line.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from assay.errors import ParseError
from assay.model import Sample
from assay.parsers.base import ParseResult, make_sample, parse_number, tool_lines
from assay.parsers.numbers import checked, parse_int, parse_rate, parse_time, sweep_rows

PROBE = "nccl"
_sample = partial(make_sample, PROBE)
US = 1e-6
GB = 1e9  # nccl-tests GB/s: bytes / 1e9 per second (doc/PERFORMANCE.md)

_OPS = (
    "all_reduce",
    "all_gather",
    "alltoall",
    "broadcast",
    "reduce_scatter",
    "reduce",
    "sendrecv",
    "gather",
    "scatter",
    "hypercube",
)
_NTHREAD = re.compile(r"^\s*#\s*nThread\s+(?P<nthread>\d+)\s+nGpus\s+(?P<ngpus>\d+)")
_MAXBYTES = re.compile(r"maxBytes\s+(?P<max>\d+)")
_VERSION = re.compile(r"^\s*#\s*[nr]ccl-tests version\s+(?P<version>\S+)")
_COLLECTIVE = re.compile(r"^\s*#\s*Collective test (?:starting|concluded):\s*(?P<name>\w+)")
_RANK = re.compile(r"^\s*#\s*Rank\s+\d+\b")
_AVG_BUSBW = re.compile(r"^\s*#\s*Avg bus bandwidth\s*:\s*(?P<bw>\S+)")
_DEBUG = re.compile(r"^\s*\S+:\d+:\d+\s+\[\d+\]\s+NCCL\s+(?P<level>INFO|WARN|TRACE)\b")
_TIME_COLUMNS = ("time", "cputime")
_PLACEMENTS = re.compile(r"out-of-place|in-place")


@dataclass
class _Group:
    placement: str
    index: dict[str, int]  # column name -> token index


@dataclass
class _Table:
    line: int
    op: str | None
    columns: list[str]
    groups: list[_Group]
    rows: list[tuple[int, list[str]]] = field(default_factory=list)
    footer: bool = False
    max_bytes: int | None = None
    ranks: int | None = None
    garbage: tuple[int, str] | None = None


def _op_from_name(name: str) -> str | None:
    base = os.path.basename(name).lower().replace("-", "_")
    for op in _OPS:
        if op in base or op.replace("_", "") in base:
            return op
    return None


def _groups(columns: list[str], placements: list[str], *, source: str, line: int) -> list[_Group]:
    starts = [i for i, c in enumerate(columns) if c in _TIME_COLUMNS]
    if not starts:
        raise ParseError("nccl-tests header without a time column", source=source, line=line)
    if not placements:
        placements = ["out-of-place", "in-place"][: len(starts)]
    if len(placements) != len(starts):
        raise ParseError(
            f"nccl-tests header has {len(starts)} column groups but the title names "
            f"{len(placements)} placements",
            source=source,
            line=line,
        )
    groups = []
    for n, start in enumerate(starts):
        end = starts[n + 1] if n + 1 < len(starts) else len(columns)
        index = {columns[i]: i for i in range(start, end)}
        index["time"] = start
        for need in ("algbw", "busbw"):
            if need not in index:
                raise ParseError(
                    f"nccl-tests column group {placements[n]} lacks {need}",
                    source=source,
                    line=line,
                )
        groups.append(_Group(placements[n], index))
    return groups


def _sweep(t: _Table, size_i: int, source: str) -> tuple[list[tuple[int, list[str]]], list[str]]:
    """The table's rows with sizes read, repeats kept once and gaps named (numbers.sweep_rows)."""
    rows = [
        (line, parse_int(tokens[size_i], source=source, line=line, what="size"), tokens)
        for line, tokens in t.rows
    ]
    kept, warnings = sweep_rows(rows, table=f"nccl-tests (line {t.line})", source=source)
    return [(line, tokens) for line, _, tokens in kept], warnings


def _infer_op(table: _Table, source: str) -> str | None:
    """The collective, from busbw/algbw (nccl-tests doc/PERFORMANCE.md), redop and root."""
    n = table.ranks
    if not n or not table.rows:
        return None
    size_i = table.columns.index("size")
    # the largest size: its bandwidths have the most significant digits (sizes already read)
    line, tokens = max(table.rows, key=lambda v: int(v[1][size_i]))
    g = table.groups[0]
    algbw = parse_rate(tokens[g.index["algbw"]], source=source, line=line, what="algbw")
    busbw = parse_rate(tokens[g.index["busbw"]], source=source, line=line, what="busbw")
    if algbw <= 0:
        return None
    ratio = busbw / algbw
    redop = tokens[table.columns.index("redop")] if "redop" in table.columns else "none"
    root = (
        parse_int(tokens[table.columns.index("root")], source=source, line=line, minimum=-1)
        if "root" in table.columns
        else None
    )

    def near(x: float) -> bool:
        return abs(ratio - x) <= 0.02 * x

    reducing = redop.lower() != "none"
    if reducing and near(2 * (n - 1) / n) and n > 1:
        return "all_reduce"
    if reducing and near((n - 1) / n) and n > 1:
        return "reduce_scatter"
    if reducing and near(1.0) and (root is None or root >= 0):
        return "reduce"
    if not reducing and near(1.0) and root is not None and root >= 0:
        return "broadcast"
    return None


def _header_columns(stripped: str) -> list[str] | None:
    body = stripped.lstrip("#").split()
    if len(body) >= 4 and body[0] == "size" and body[1] == "count" and "algbw" in body:
        return body
    return None


_EXPECTED = "not nccl-tests output: no '#  size  count  type ... algbw  busbw' header"


def looks_like(text: str) -> bool:
    """True for a nccl-tests/rccl-tests table header (``size count type ... algbw busbw``)."""
    return any(_header_columns(line.strip()) for line in text.splitlines())


@checked
def parse(text: str, source: str = "<text>") -> ParseResult:
    """Read nccl-tests output into samples (see the module docstring)."""
    lines, cut_last_line = tool_lines(
        text, tool="nccl", looks_like=looks_like, expected=_EXPECTED, source=source
    )
    warnings: list[str] = []
    tables: list[_Table] = []
    table: _Table | None = None
    version: str | None = None
    pending_op: str | None = None
    max_bytes: int | None = None
    nthread: dict[str, int] = {}
    ranks = 0
    placements: list[str] = []
    avg_busbw: list[float] = []
    debug_lines = 0
    truncated_row = False

    for lineno, raw in enumerate(lines, start=1):
        stripped = raw.strip()
        if not stripped:
            continue
        if _DEBUG.match(raw):
            debug_lines += 1
            if "NCCL WARN" in raw:
                warnings.append(f"{source}:{lineno}: {stripped[:120]}")
            continue
        m = _VERSION.match(raw)
        if m:
            version = m["version"]
            continue
        m = _COLLECTIVE.match(raw)
        if m:
            op = m["name"].removesuffix("_perf")
            if "concluded" in raw:
                if table is not None and table.op is None:
                    table.op = op
            else:
                pending_op = op
            continue
        m = _NTHREAD.match(raw)
        if m:
            nthread = {
                "nthread": parse_int(m["nthread"], source=source, line=lineno, what="nThread"),
                "ngpus": parse_int(m["ngpus"], source=source, line=lineno, what="nGpus"),
            }
            mb = _MAXBYTES.search(raw)
            max_bytes = parse_int(mb["max"], source=source, line=lineno) if mb else None
            ranks = 0
            if table is not None and table.footer:
                table = None
            continue
        if _RANK.match(raw):
            ranks += 1
            continue
        columns = _header_columns(stripped)
        if columns:
            table = _Table(
                line=lineno,
                op=pending_op,
                columns=columns,
                groups=_groups(columns, placements, source=source, line=lineno),
                max_bytes=max_bytes,
                ranks=ranks or None,
            )
            tables.append(table)
            pending_op = None
            placements = []
            continue
        if stripped.startswith("#") and _PLACEMENTS.search(stripped):
            placements = _PLACEMENTS.findall(stripped)  # the title of the next header
            continue
        m = _AVG_BUSBW.match(raw)
        if m and table is not None:
            table.footer = True
            avg_busbw.append(parse_number(m["bw"], source=source, line=lineno))
            continue
        if table is None or table.footer:
            continue
        if stripped.startswith("#"):
            continue  # '(B) (elements)' units line, 'Out of bounds values'
        if stripped[0].isdigit():
            if table.garbage is not None:
                bad_line, bad_text = table.garbage
                raise ParseError(
                    f"unexpected line inside the nccl-tests table (interleaved output?): "
                    f"{bad_text[:80]!r}",
                    source=source,
                    line=bad_line,
                )
            tokens = stripped.split()
            ncols = len(table.columns)
            # a timestamp column holds "date time": one token more than the header names
            fits = len(tokens) == ncols or (
                "timestamp" in table.columns and len(tokens) == ncols + 1
            )
            last = cut_last_line and lineno == len(lines)
            if not fits or last:
                if last:
                    truncated_row = True
                    break
                raise ParseError(
                    f"expected {ncols} columns in the nccl-tests table, found {len(tokens)}: "
                    f"{stripped[:80]!r} (interleaved output?)",
                    source=source,
                    line=lineno,
                )
            table.rows.append((lineno, tokens))
            continue
        if table.rows and table.garbage is None:
            table.garbage = (lineno, stripped)

    warn_na = False
    tests: list[dict[str, str]] = []
    samples: list[Sample] = []
    missing: list[str] = []
    complete = not truncated_row
    for t in tables:
        size_i = t.columns.index("size")
        t.rows, dup_gap = _sweep(t, size_i, source)
        warnings.extend(dup_gap)
        op = t.op or _op_from_name(source)
        op_from = "header" if t.op else "file name"
        if op is None:
            op = _infer_op(t, source)
            op_from = "busbw/algbw ratio"
        if op is None:
            raise ParseError(
                "cannot tell which collective this nccl-tests table measured (no 'Collective "
                "test starting' line, no test name in the file name, and busbw/algbw does not "
                "single one out)",
                source=source,
                line=t.line,
                hint="name the file after the test, e.g. all_gather_perf.log",
            )
        t.op = op
        tests.append({"test": f"{op}_perf", "from": op_from})
        if not t.footer:
            complete = False
            after = ""
            if t.rows:
                last_size = int(t.rows[-1][1][size_i])
                upto = f" up to {t.max_bytes}" if t.max_bytes else ""
                after = f"sizes after {last_size}{upto} and "
            missing.append(f"{op}_perf (line {t.line}): {after}the '# Avg bus bandwidth' footer")
        for lineno, tokens in t.rows:
            base: dict[str, Any] = {"tool": "nccl", "benchmark": f"{op}_perf"}
            if version:
                base["version"] = version
            for name in ("size", "count", "type", "redop", "root"):
                if name not in t.columns:
                    continue
                token = tokens[t.columns.index(name)]
                if name in ("type", "redop"):
                    base[name] = token
                else:
                    base[name] = parse_int(
                        token,
                        source=source,
                        line=lineno,
                        what=name,
                        minimum=-1 if name == "root" else 0,
                    )
            if t.ranks:
                base["ranks"] = t.ranks
            if "cputime" in t.columns:
                base["timer"] = "cpu"
            for g in t.groups:
                wrong_i = g.index.get("#wrong")
                if wrong_i is not None:
                    # rccl-tests marks counts over its threshold with '*'
                    wrong = tokens[wrong_i].rstrip("*")
                    if wrong.upper() == "N/A":
                        warn_na = True
                    elif parse_int(wrong, source=source, line=lineno, what="#wrong") > 0:
                        warnings.append(
                            f"{source}:{lineno}: {g.placement} result at {base.get('size')} bytes "
                            f"left out: nccl-tests counted {wrong} wrong elements"
                        )
                        continue
                params = {**base, "placement": g.placement}
                time_us = parse_time(tokens[g.index["time"]], source=source, line=lineno)
                algbw = parse_rate(tokens[g.index["algbw"]], source=source, line=lineno)
                busbw = parse_rate(tokens[g.index["busbw"]], source=source, line=lineno)
                prefix = f"gpu.nccl.{op}"
                # 0.00 GB/s is below the print resolution (small sizes), not a measured zero
                for name, bw in (("busbw", busbw), ("algbw", algbw)):
                    if bw > 0:
                        samples.append(
                            _sample(
                                f"{prefix}.{name}", bw * GB, params, unit="B/s", better="higher"
                            )
                        )
                samples.append(
                    _sample(f"{prefix}.time", time_us * US, params, unit="s", better="lower")
                )
    if warn_na:
        warnings.append(f"{source}: '#wrong' is N/A: nccl-tests did not check the results (-c 0)")
    if debug_lines:
        warnings.append(f"{source}: skipped {debug_lines} NCCL debug line(s)")
    if not samples and complete:
        raise ParseError("nccl-tests output without any result row", source=source)

    meta: dict[str, Any] = {
        "tool": "nccl",
        "version": version,
        "tests": tests,
        "avg_bus_bandwidth": [bw * GB for bw in avg_busbw],
        **nthread,
    }
    return ParseResult(
        tool="nccl",
        samples=samples,
        meta=meta,
        complete=complete,
        missing=missing,
        warnings=warnings,
    )
