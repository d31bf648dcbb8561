"""nccl-tests (and rccl-tests) text output: all_reduce_perf, all_gather_perf, alltoall_perf...

The table has one row per message size and one group of columns per buffer layout, titled by
the line above the header (``out-of-place ... in-place``). Three header layouts are read, driven by
the header itself:

* nccl-tests 2.x up to about 2.10: ``size count type redop time algbw busbw error ...``
  (``error`` is the largest numerical difference, e.g. ``2e-07``, not a count);
* older still, without ``redop`` (all_gather of 2019) or with ``root`` but no ``redop``
  (broadcast of 2019);
* current: ``size count type redop root time algbw busbw #wrong time algbw busbw #wrong``,
  possibly followed by ``#iters`` or a timestamp, and ``cputime`` instead of ``time`` with -C.

Samples, one set per row and buffer layout: ``gpu.nccl.<op>.busbw`` and ``gpu.nccl.<op>.algbw``
(GB/s printed, 1e9 B/s; see nccl-tests doc/PERFORMANCE.md) and ``gpu.nccl.<op>.time`` (us
printed, seconds). A bandwidth printed as 0.00 (below the 0.01 GB/s print resolution, at small
sizes) is not a measured zero and is not kept; the time of that row is. The footer
``# Avg bus bandwidth : X`` is kept as ``gpu.nccl.<op>.avg.busbw`` (no size: nccl-tests'
mean of the busbw column over every row and buffer layout).

A file may hold several tests (a job script running all_reduce_perf then all_gather_perf...)
and several runs of one test: each table is its own series; when one collective appears in
more than one table, every table of it gets a ``run`` index (1, 2...) in file order.

``<op>`` is the test name without ``_perf`` (and without the ``_mpi`` suffix of MPI builds),
taken, in this order, from ``# Collective test starting: all_reduce_perf`` (or ``...
concluded``), from a command line before the table naming ``./build/all_gather_perf`` (a job
script's ``Running: ...`` line, a shell prompt), from the source file name, else from the
printed numbers: busbw/algbw is 2(n-1)/n for all_reduce, (n-1)/n for reduce_scatter and 1 for
reduce/broadcast (nccl-tests doc/PERFORMANCE.md), with n the number of ``# Rank`` lines; with
no ``# Rank`` lines, a reducing table whose busbw exceeds its algbw can only be all_reduce.
When that still leaves two candidates (all_gather and alltoall both have (n-1)/n and no
reduction) ParseError asks for the test name.

params: ``tool="nccl"``, ``benchmark`` ("all_reduce_perf"), ``size`` (bytes), ``count``,
``type``, ``redop``, ``root`` (when printed), ``buffers`` ("out-of-place"/"in-place"),
``ranks`` (number of ``# Rank`` lines, when printed), ``version`` (nccl-tests version line),
``run`` (see above).

Correctness: a row whose ``#wrong`` is above 0 produced wrong data; its samples of that
buffer layout are left out and a warning names the line. A table whose footer says ``# Out of
bounds values : N FAILED`` (N > 0; nccl-tests then exits with an error) is left out whole, with
a warning; a file where every table failed is refused. ``N/A`` in ``#wrong`` (checking disabled
with ``-c 0``) keeps the sample and adds one warning. Repeated 0-byte rows (sizes below one
element per rank, printed once per requested size) are kept once. Without the ``# Avg bus
bandwidth`` footer the result is ``complete=False`` and ``missing`` names the sizes after the
last row (up to maxBytes of the ``# nThread`` line). NCCL debug lines (``host:pid:tid [dev]
NCCL INFO ...``) are skipped. Any other line inside the table ends it; a row after it means
interleaved output and raises ParseError at that line.
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
_NTHREAD = re.compile(r"^\s*#?\s*nThread\s+(?P<nthread>\d+)\s+nGpus\s+(?P<ngpus>\d+)")
_MAXBYTES = re.compile(r"maxBytes\s+(?P<max>\d+)")
_VERSION = re.compile(r"^\s*#\s*[nr]ccl-tests version\s+(?P<version>\S+)")
_COLLECTIVE = re.compile(r"^\s*#\s*Collective test (?:starting|concluded):\s*(?P<name>\w+)")
_COMMAND = re.compile(r"(?:^|[\s/])(?P<name>[a-z_]+)_perf(?:_mpi)?(?=\s|$)")
_RANK = re.compile(r"^\s*#?\s*Rank\s+\d+\s+(?:Group|Pid)\b")
_AVG_BUSBW = re.compile(r"^\s*#\s*Avg bus bandwidth\s*:\s*(?P<bw>\S+)")
_OOB = re.compile(r"^\s*#\s*Out of bounds values\s*:\s*(?P<n>\d+)\s+(?P<verdict>OK|FAILED)")
_DEBUG = re.compile(r"^\s*\S+:\d+:\d+\s+\[\d+\]\s+NCCL\s+(?P<level>INFO|WARN|TRACE)\b")
_TIME_COLUMNS = ("time", "cputime")
_BUFFERS = re.compile(r"out-of-place|in-place")


@dataclass
class _Group:
    buffers: str  # "out-of-place" or "in-place"
    index: dict[str, int]  # column name -> token index


@dataclass
class _Table:
    line: int
    op: str | None
    op_from: str
    columns: list[str]
    groups: list[_Group]
    rows: list[tuple[int, list[str]]] = field(default_factory=list)
    footer: bool = False
    avg_busbw: float | None = None
    out_of_bounds: tuple[int, int] | None = None  # (line, count) of a FAILED verdict
    max_bytes: int | None = None
    ranks: int | None = None
    garbage: tuple[int, str] | None = None
    run: int | None = None


def _op_name(name: str) -> str:
    """all_reduce from all_reduce_perf or all_reduce_perf_mpi (nccl-tests' MPI build)."""
    return name.removesuffix("_mpi").removesuffix("_perf")


def _op_from_name(name: str) -> str | None:
    base = os.path.basename(name).lower().replace("-", "_")
    for op in _OPS:
        if op in base or op.replace("_", "") in base:
            return op
    return None


def _groups(columns: list[str], layouts: list[str], *, source: str, line: int) -> list[_Group]:
    starts = [i for i, c in enumerate(columns) if c in _TIME_COLUMNS]
    if not starts:
        raise ParseError("nccl-tests header without a time column", source=source, line=line)
    if not layouts:
        layouts = ["out-of-place", "in-place"][: len(starts)]
    if len(layouts) != len(starts):
        raise ParseError(
            f"nccl-tests header has {len(starts)} column groups but the title names "
            f"{len(layouts)} buffer layouts",
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
                    f"nccl-tests column group {layouts[n]} lacks {need}",
                    source=source,
                    line=line,
                )
        groups.append(_Group(layouts[n], index))
    return groups


def _sweep(t: _Table, source: str) -> list[str]:
    """The table's rows with sizes read, repeats kept once and gaps named (numbers.sweep_rows);
    0-byte rows (one per requested size below one element per rank) kept once."""
    size_i = t.columns.index("size")
    rows = [
        (line, parse_int(tokens[size_i], source=source, line=line, what="size"), tokens)
        for line, tokens in t.rows
    ]
    zeros = [r for r in rows if r[1] == 0]
    warnings = []
    if len(zeros) > 1:
        rows = [r for r in rows if r[1] != 0 or r is zeros[0]]
        warnings.append(
            f"{source}:{zeros[1][0]}: {len(zeros) - 1} more 0-byte row(s) of the nccl-tests "
            f"table (line {t.line}) left out: sizes below one element per rank; the first "
            f"(line {zeros[0][0]}) kept"
        )
    kept, more = sweep_rows(rows, table=f"nccl-tests (line {t.line})", source=source)
    t.rows = [(line, tokens) for line, _, tokens in kept]
    return warnings + more


def _infer_op(table: _Table, source: str) -> str | None:
    """The collective, from busbw/algbw (nccl-tests doc/PERFORMANCE.md), redop and root."""
    if not table.rows:
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
    n = table.ranks
    if not n:
        # only all_reduce moves more over the bus than its algorithm bandwidth (2(n-1)/n > 1)
        return "all_reduce" if reducing and ratio > 1.02 else None
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


@dataclass
class _Reader:
    """The state of one pass over the lines: what the lines before the next table said."""

    source: str
    n_lines: int
    cut_last_line: bool
    tables: list[_Table] = field(default_factory=list)
    table: _Table | None = None
    warnings: list[str] = field(default_factory=list)
    version: str | None = None
    pending_op: tuple[str, str] | None = None  # (op, where it was read)
    max_bytes: int | None = None
    nthread: dict[str, int] = field(default_factory=dict)
    ranks: int = 0
    layouts: list[str] = field(default_factory=list)
    debug_lines: int = 0
    truncated_row: bool = False

    def feed(self, lineno: int, raw: str) -> bool:
        """Read one line; False when the output ends here (a row cut short)."""
        stripped = raw.strip()
        if not stripped:
            return True
        if _DEBUG.match(raw):
            self.debug_lines += 1
            if "NCCL WARN" in raw:
                self.warnings.append(f"{self.source}:{lineno}: {stripped[:120]}")
            return True
        if self._preamble(lineno, raw, stripped) or self._footer(lineno, raw):
            return True
        t = self.table
        if t is None or t.footer:
            self._command(stripped)
            return True
        if stripped.startswith("#"):
            return True  # '(B) (elements)' units line, '# Errors with asterisks ...'
        if stripped[0].isdigit():
            return self._row(t, lineno, stripped)
        if t.rows and t.garbage is None:
            t.garbage = (lineno, stripped)
        return True

    def _preamble(self, lineno: int, raw: str, stripped: str) -> bool:
        """The lines before a table: version, test name, nThread, ranks, title and header."""
        if m := _VERSION.match(raw):
            self.version = m["version"]
        elif m := _COLLECTIVE.match(raw):
            self._collective(m["name"], "concluded" in raw)
        elif m := _NTHREAD.match(raw):
            self.nthread = {
                "nthread": parse_int(m["nthread"], source=self.source, line=lineno),
                "ngpus": parse_int(m["ngpus"], source=self.source, line=lineno),
            }
            mb = _MAXBYTES.search(raw)
            self.max_bytes = parse_int(mb["max"], source=self.source, line=lineno) if mb else None
            self.ranks = 0
        elif _RANK.match(raw):
            self.ranks += 1
        elif columns := _header_columns(stripped):
            self._header(lineno, columns)
        elif stripped.startswith("#") and _BUFFERS.search(stripped):
            self.layouts = _BUFFERS.findall(stripped)  # the title of the next header
        else:
            return False
        return True

    def _collective(self, name: str, concluded: bool) -> None:
        op = _op_name(name)
        t = self.table
        if not concluded:
            self.pending_op = (op, "header")
        elif t is not None and t.op_from not in ("header",):
            t.op, t.op_from = op, "header"

    def _command(self, stripped: str) -> None:
        """A command line (job script echo, shell prompt) naming the test binary."""
        if stripped.startswith("#") or (self.pending_op and self.pending_op[1] == "header"):
            return
        if (m := _COMMAND.search(stripped)) and _op_name(m["name"]) in _OPS:
            self.pending_op = (_op_name(m["name"]), "command line")

    def _header(self, lineno: int, columns: list[str]) -> None:
        op, op_from = self.pending_op or (None, "")
        self.table = _Table(
            line=lineno,
            op=op,
            op_from=op_from,
            columns=columns,
            groups=_groups(columns, self.layouts, source=self.source, line=lineno),
            max_bytes=self.max_bytes,
            ranks=self.ranks or None,
        )
        self.tables.append(self.table)
        self.pending_op, self.layouts, self.ranks = None, [], 0

    def _footer(self, lineno: int, raw: str) -> bool:
        t = self.table
        if t is None:
            return False
        if m := _OOB.match(raw):
            if m["verdict"] == "FAILED" or int(m["n"]) > 0:
                t.out_of_bounds = (lineno, int(m["n"]))
            return True
        if m := _AVG_BUSBW.match(raw):
            t.footer = True
            t.avg_busbw = parse_number(m["bw"], source=self.source, line=lineno)
            return True
        return False

    def _row(self, t: _Table, lineno: int, stripped: str) -> bool:
        if t.garbage is not None:
            bad_line, bad_text = t.garbage
            raise ParseError(
                f"unexpected line inside the nccl-tests table (interleaved output?): "
                f"{bad_text[:80]!r}",
                source=self.source,
                line=bad_line,
            )
        tokens = stripped.split()
        ncols = len(t.columns)
        # a timestamp column holds "date time": one token more than the header names
        fits = len(tokens) == ncols or ("timestamp" in t.columns and len(tokens) == ncols + 1)
        if self.cut_last_line and lineno == self.n_lines:
            self.truncated_row = True
            return False
        if not fits:
            raise ParseError(
                f"expected {ncols} columns in the nccl-tests table, found {len(tokens)}: "
                f"{stripped[:80]!r} (interleaved output?)",
                source=self.source,
                line=lineno,
            )
        t.rows.append((lineno, tokens))
        return True


def _name_ops(tables: list[_Table], source: str) -> list[dict[str, str]]:
    """Each table's collective (header, command line, file name, numbers) and run index."""
    tests = []
    for t in tables:
        if t.op is None and (op := _op_from_name(source)):
            t.op, t.op_from = op, "file name"
        if t.op is None and (op := _infer_op(t, source)):
            t.op, t.op_from = op, "busbw/algbw ratio"
        if t.op is None:
            raise ParseError(
                "cannot tell which collective this nccl-tests table measured (no 'Collective "
                "test starting' line, no test binary on a command line, no test name in the "
                "file name, and busbw/algbw does not single one out)",
                source=source,
                line=t.line,
                hint="name the file after the test, e.g. all_gather_perf.log",
            )
        tests.append({"test": f"{t.op}_perf", "from": t.op_from})
    for op in {t.op for t in tables}:
        same = [t for t in tables if t.op == op]
        if len(same) > 1:
            for n, t in enumerate(same, start=1):
                t.run = n
    return tests


def _row_params(t: _Table, tokens: list[str], lineno: int, source: str) -> dict[str, Any]:
    base: dict[str, Any] = {"tool": "nccl", "benchmark": f"{t.op}_perf"}
    for name in ("size", "count", "type", "redop", "root"):
        if name not in t.columns:
            continue
        token = tokens[t.columns.index(name)]
        if name in ("type", "redop"):
            base[name] = token
        else:
            minimum = -1 if name == "root" else 0
            base[name] = parse_int(token, source=source, line=lineno, what=name, minimum=minimum)
    if t.ranks:
        base["ranks"] = t.ranks
    if "cputime" in t.columns:
        base["timer"] = "cpu"
    if t.run is not None:
        base["run"] = t.run
    return base


def _table_samples(
    t: _Table, version: str | None, source: str, warnings: list[str]
) -> tuple[list[Sample], bool]:
    """The samples of one table, and whether a '#wrong' of N/A was seen."""
    samples: list[Sample] = []
    unchecked = False
    prefix = f"gpu.nccl.{t.op}"
    extra = {"version": version} if version else {}
    for lineno, tokens in t.rows:
        base = {**_row_params(t, tokens, lineno, source), **extra}
        for g in t.groups:
            wrong_i = g.index.get("#wrong")
            if wrong_i is not None:
                wrong = tokens[wrong_i].rstrip("*")  # rccl-tests marks counts over its threshold
                if wrong.upper() == "N/A":
                    unchecked = True
                elif parse_int(wrong, source=source, line=lineno, what="#wrong") > 0:
                    warnings.append(
                        f"{source}:{lineno}: {g.buffers} result at {base.get('size')} bytes "
                        f"left out: nccl-tests counted {wrong} wrong elements"
                    )
                    continue
            params = {**base, "buffers": g.buffers}
            time_us = parse_time(tokens[g.index["time"]], source=source, line=lineno)
            algbw = parse_rate(tokens[g.index["algbw"]], source=source, line=lineno)
            busbw = parse_rate(tokens[g.index["busbw"]], source=source, line=lineno)
            # 0.00 GB/s is below the print resolution (small sizes), not a measured zero
            for name, bw in (("busbw", busbw), ("algbw", algbw)):
                if bw > 0:
                    samples.append(
                        _sample(f"{prefix}.{name}", bw * GB, params, unit="B/s", better="higher")
                    )
            time_s = time_us * US
            samples.append(_sample(f"{prefix}.time", time_s, params, unit="s", better="lower"))
    if t.avg_busbw is not None and t.avg_busbw > 0:
        params = {"tool": "nccl", "benchmark": f"{t.op}_perf", **extra}
        params.update({k: v for k, v in (("ranks", t.ranks), ("run", t.run)) if v is not None})
        samples.append(
            _sample(f"{prefix}.avg.busbw", t.avg_busbw * GB, params, unit="B/s", better="higher")
        )
    return samples, unchecked


def _missing(t: _Table) -> str:
    after = ""
    if t.rows:
        last_size = int(t.rows[-1][1][t.columns.index("size")])
        upto = f" up to {t.max_bytes}" if t.max_bytes else ""
        after = f"sizes after {last_size}{upto} and "
    return f"{t.op}_perf (line {t.line}): {after}the '# Avg bus bandwidth' footer"


@checked
def parse(text: str, source: str = "<text>") -> ParseResult:
    """Read nccl-tests output into samples (see the module docstring)."""
    lines, cut_last_line = tool_lines(
        text, tool="nccl", looks_like=looks_like, expected=_EXPECTED, source=source
    )
    r = _Reader(source=source, n_lines=len(lines), cut_last_line=cut_last_line)
    for lineno, raw in enumerate(lines, start=1):
        if not r.feed(lineno, raw):
            break
    warnings = r.warnings
    for t in r.tables:
        warnings.extend(_sweep(t, source))
    tests = _name_ops(r.tables, source)
    samples: list[Sample] = []
    missing = [_missing(t) for t in r.tables if not t.footer]
    failed = [t for t in r.tables if t.out_of_bounds]
    unchecked = False
    for t in r.tables:
        if t.out_of_bounds:
            line, count = t.out_of_bounds
            warnings.append(
                f"{source}:{line}: {t.op}_perf (line {t.line}) left out: nccl-tests counted "
                f"{count} out-of-bounds value(s) (FAILED: its results are wrong)"
            )
            continue
        got, na = _table_samples(t, r.version, source, warnings)
        samples.extend(got)
        unchecked = unchecked or na
    if unchecked:
        warnings.append(f"{source}: '#wrong' is N/A: nccl-tests did not check the results (-c 0)")
    if r.debug_lines:
        warnings.append(f"{source}: skipped {r.debug_lines} NCCL debug line(s)")
    complete = not r.truncated_row and not missing
    if failed and len(failed) == len(r.tables):
        line, count = failed[0].out_of_bounds or (None, 0)
        raise ParseError(
            f"nccl-tests reported '# Out of bounds values : {count} FAILED': the results are "
            "wrong, no table passed its check",
            source=source,
            line=line,
        )
    if not samples and complete:
        raise ParseError("nccl-tests output without any result row", source=source)
    meta: dict[str, Any] = {
        "tool": "nccl",
        "version": r.version,
        "tests": tests,
        "avg_bus_bandwidth": [t.avg_busbw * GB for t in r.tables if t.avg_busbw is not None],
        **r.nthread,
    }
    return ParseResult(
        tool="nccl",
        samples=samples,
        meta=meta,
        complete=complete,
        missing=missing,
        warnings=warnings,
    )
