"""OSU Micro-Benchmarks (OMB 3.x to 7.x) text output.

A file holds one or more *blocks*. A block opens with the title line OMB prints first,
``# OSU MPI Latency Test v5.6.2``, ``# OSU MPI-CUDA Allreduce Latency Test v7.0``, then
optional comment lines (``# Datatype: MPI_CHAR.``, which OMB 7.x prints before *or* after the
column header; ``# Send Buffer on DEVICE (D) and Receive Buffer on DEVICE (D)`` for ``-d cuda``;
``# [ pairs: 1 ] [ window size: 64 ]`` for osu_mbw_mr), one column header and the rows.

Samples (canonical SI; OSU's "MB/s" is 1e6 B/s, its "us" microseconds):

===========================  ==============================================================
benchmark                    metric (value)
===========================  ==============================================================
osu_latency, osu_multi_lat,  ``p2p.latency``: the printed latency (OMB's average)
osu_latency_mt/_mp
osu_bw                       ``p2p.bandwidth``
osu_bibw                     ``p2p.bibw``
osu_mbw_mr                   ``p2p.bandwidth`` (aggregate over the pairs) and
                             ``p2p.message_rate`` (messages/s, unit op/s)
blocking collectives         ``coll.<op>`` (allreduce, alltoall, bcast, barrier...): Avg Latency
one-sided (osu_put_latency,  ``rma.<op>.latency``, ``rma.<op>.bandwidth``, ``rma.<op>.bibw`` (op:
osu_get_bw, osu_acc_...)     put, get, accumulate, get_accumulate, fetch_and_op,
                             compare_and_swap); params ``window_creation``, ``synchronization``
non-blocking collectives     ``coll.i<op>``: "Pure Comm.(us)", the collective alone, comparable
                             with the blocking one; ``coll.i<op>.overall``: "Overall(us)", the
                             latency with the overlapped compute. Compute and Overlap(%) are
                             not kept.
===========================  ==============================================================

With ``-f`` (full statistics) the Min/Max columns become ``Stats(min, max, mean=avg)``. They
are the spread *across ranks* of each rank's average, and OMB does not print the rank count,
so ``Stats.n`` is 0 ("not printed"); the printed iteration count goes to ``params["iterations"]``.
Tail columns of newer OMB 7.x (P50/P90/P99 Tail Lat) map to ``Stats.median`` and ``Stats.p99``;
Stats has no p90 field, so P90 is kept in ``params["p90"]`` (seconds).

With ``-f`` the non-blocking collectives of OMB 5.7+ add ``Coll. Init``, ``MPI_Test``,
``MPI_Wait``, ``Min Comm.`` and ``Max Comm.`` columns: Min/Max Comm. are the spread across
ranks of ``coll.i<op>`` (``Stats``); the other three are not kept.

params: ``tool="osu"``, ``benchmark`` ("osu_latency"), ``version`` ("5.6.2"), ``size`` (bytes,
absent for barrier), ``iterations`` (when printed), ``device`` ("cuda", "rocm"... for MPI-CUDA
titles), ``send_buffer``/``recv_buffer`` ("device"/"host"/"managed"), ``datatype``, ``pairs`` and
``window`` (osu_mbw_mr), ``sender_threads``/``receiver_threads`` (osu_latency_mt) and
``sender_processes``/``receiver_processes`` (osu_latency_mp; OMB 5.x prints both before the
title). A benchmark run more than once in one file (a pasted session, outputs
concatenated, a documentation page) gets ``run`` (1, 2... in file order among the runs of that
benchmark) so that each run is its own series. Shell prompts, ``mpirun`` lines and other text
outside a table are skipped; a ``...`` line after rows (rows left out by whoever pasted the
output) is warned about.

With ``-c`` (OMB 6+) a row whose Validation column is not "Pass" is skipped with a warning.
Blocks OMB prints for benchmarks outside this scope (hello, init, OpenSHMEM/UPC...) are
skipped with a warning. Lines the MPI runtime writes into the table
(``[host:pid] ...`` help aggregation, UCX log lines) are skipped with a warning naming the line.
Any other line inside a table that is not a row ends the table; a row after it means two
streams were interleaved, and that line raises ParseError. A table cut off mid-line (the file
does not end with a newline) loses its last row and the result is ``complete=False``. OMB does
not print the largest size it will run, so a file cut exactly at a line boundary cannot be told
from a finished one.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from assay.errors import ParseError
from assay.model import Sample, Stats
from assay.parsers.base import (
    ParseResult,
    header_columns,
    last_line_cut,
    make_sample,
    require_tool,
    table_row,
)
from assay.parsers.numbers import (
    checked,
    parse_int,
    parse_rate,
    parse_time,
    sweep_rows,
    to_int,
)

PROBE = "osu"
_sample = partial(make_sample, PROBE)
US = 1e-6  # OMB prints microseconds
MB = 1e6  # OMB's MB/s: bytes / 1e6 per second (osu_bw.c divides by 1e6)

_TITLE_HEAD = re.compile(r"^\s*#\s*OSU\s+(?P<api>[A-Za-z][A-Za-z_]*)(?:-(?P<device>[A-Za-z]+))?\s")


def _title(line: str) -> dict[str, str | None] | None:
    """An OMB title line "# OSU MPI[-DEV] NAME Test [vVERSION]" as api, device, name and
    version, or None. Its end is read by words: one pattern with a lazy name before "Test"
    rescanned a run of blanks from every position (32,000 blanks took 3 s)."""
    head = _TITLE_HEAD.match(line)
    if head is None:
        return None
    words = line[head.end() :].split()
    version = None
    if len(words) >= 2 and words[-2] == "Test" and words[-1].startswith("v"):
        version = words[-1][1:] or None
        words = words[:-1]
        if version is None:
            return None
    if len(words) < 2 or words[-1] != "Test":
        return None
    return {"api": head["api"], "device": head["device"], "name": " ".join(words[:-1]),
            "version": version}  # fmt: skip


_DATATYPE = re.compile(r"^\s*#\s*Datatype:\s*(?P<dt>[\w ]+?)\.?\s*$")
_BUFFERS = re.compile(
    r"^\s*#\s*Send Buffer on (?P<send>\w+)(?:\s*\(\w\))?\s+and\s+"
    r"Receive Buffer on (?P<recv>\w+)",
    re.IGNORECASE,
)
# osu_latency_mt's threads and osu_latency_mp's processes per side: OMB 5.x prints these
# before the title, 7.x after it
_THREADS = re.compile(
    r"^\s*#\s*Number of (?:(?P<who>Sender|Receiver) (?P<t>threads)|forked (?P<p>processes) "
    r"in (?P<side>sender|receiver)):\s*(?P<n>\d+)",
    re.I,
)
# one-sided benchmarks: "# Window creation: MPI_Win_allocate", "# Synchronization: MPI_Win_flush"
_RMA_SETUP = re.compile(r"^\s*#\s*(?P<what>Window creation|Synchronization):\s*(?P<how>\S+)\s*$")
_PAIRS = re.compile(r"pairs:\s*(?P<pairs>\d+)\s*\]\s*\[\s*window size:\s*(?P<window>\d+)")
# "..." or "…" where a person pasting an output left rows out
_ELIDED = re.compile(r"^(?:\.{3,}|\u2026)$")
# Lines an MPI runtime or UCX writes into the same stream: "[host:pid] ..." / "[1700.5] [host:..".
_RUNTIME_MESSAGE = re.compile(r"^\s*\[[^\]]*\]")

# Column headers OMB prints, most specific first (names end up as keys in _Row.values).
_COLUMNS: list[tuple[str, re.Pattern[str]]] = [
    (name, re.compile(pattern, re.IGNORECASE))
    for name, pattern in [
        ("size", r"Size"),
        ("avg", r"Avg\s+Latency\s*\(us\)"),
        ("min", r"Min\s+Latency\s*\(us\)"),
        ("max", r"Max\s+Latency\s*\(us\)"),
        ("avg", r"Latency\s*\(us\)"),
        ("iterations", r"Iterations"),
        ("p50", r"P50\s+Tail\s+Lat\s*\(us\)"),
        ("p90", r"P90\s+Tail\s+Lat\s*\(us\)"),
        ("p99", r"P99\s+Tail\s+Lat\s*\(us\)"),
        ("bw", r"Bandwidth\s*\(MB/s\)"),
        ("bw", r"MB/s(?:ec)?"),
        ("msgrate", r"Messages/s(?:ec)?"),
        ("overall", r"Overall\s*\(us\)"),
        ("compute", r"Compute\s*\(us\)"),
        ("pure", r"Pure\s+Comm\.?\s*\(us\)"),
        # -f (full statistics) of the non-blocking collectives, OMB 5.7+
        ("init", r"Coll\.?\s+Init\s*\(us\)"),
        ("test", r"MPI_Test\s*\(us\)"),
        ("wait", r"MPI_Wait\s*\(us\)"),
        ("min_comm", r"Min\s+Comm\.?\s*\(us\)"),
        ("max_comm", r"Max\s+Comm\.?\s*\(us\)"),
        ("overlap", r"Overlap\s*\(%\)"),
        ("validation", r"Validation"),  # OMB 6+ with -c: "Pass" / "Fail" per row
    ]
]

# Collective names as OMB titles spell them -> MPI operation name.
_COLLECTIVES = {
    "allgather": "allgather",
    "allgatherv": "allgatherv",
    "allreduce": "allreduce",
    "all-to-all personalized exchange": "alltoall",
    "all-to-allv personalized exchange": "alltoallv",
    "all-to-allw personalized exchange": "alltoallw",
    "alltoall": "alltoall",
    "alltoallv": "alltoallv",
    "alltoallw": "alltoallw",
    "barrier": "barrier",
    "broadcast": "bcast",
    "bcast": "bcast",
    "gather": "gather",
    "gatherv": "gatherv",
    "reduce": "reduce",
    "reduce_scatter": "reduce_scatter",
    "reduce-scatter": "reduce_scatter",
    "reduce scatter": "reduce_scatter",
    "reduce_scatter_block": "reduce_scatter_block",
    "scatter": "scatter",
    "scatterv": "scatterv",
}

_POINT_TO_POINT = {
    "latency": ("osu_latency", "latency"),
    "multi latency": ("osu_multi_lat", "latency"),
    "multi-threaded latency": ("osu_latency_mt", "latency"),
    "multi-process latency": ("osu_latency_mp", "latency"),
    "bandwidth": ("osu_bw", "bandwidth"),
    "bi-directional bandwidth": ("osu_bibw", "bibw"),
    "multiple bandwidth / message rate": ("osu_mbw_mr", "mbw_mr"),
}


# One-sided benchmarks (OMB 5+): "# OSU MPI_Put Latency Test", "# OSU MPI_Get_accumulate latency
# Test"... MPI operation -> the short name of its executable (osu_<short>_latency, _bw, _bibw).
_ONE_SIDED = {
    "put": "put",
    "get": "get",
    "accumulate": "acc",
    "get_accumulate": "get_acc",
    "fetch_and_op": "fop",
    "compare_and_swap": "cas",
}
_ONE_SIDED_MEASURES = {
    "latency": ("latency", "rma_latency"),
    "bandwidth": ("bw", "rma_bw"),
    "bi-directional bandwidth": ("bibw", "rma_bibw"),
}


@dataclass(frozen=True)
class _Kind:
    benchmark: str  # "osu_allreduce"
    measure: str  # "latency" | "bandwidth" | "bibw" | "mbw_mr" | "collective" | "nonblocking"
    op: str = ""  # collective operation, "" for point-to-point


@dataclass
class _Block:
    line: int
    title: str
    kind: _Kind | None
    version: str | None
    device: str | None
    params: dict[str, Any] = field(default_factory=dict)
    columns: list[str] = field(default_factory=list)
    rows: list[tuple[int, dict[str, float]]] = field(default_factory=list)
    garbage: tuple[int, str] | None = None  # first non-row line after the rows started


def _kind_of(name: str) -> _Kind | None:
    """The benchmark behind an OMB title ("Allreduce Latency" -> osu_allreduce)."""
    n = " ".join(name.lower().split())
    if n in _POINT_TO_POINT:
        benchmark, measure = _POINT_TO_POINT[n]
        return _Kind(benchmark, measure)
    if not n.endswith(" latency"):
        return None
    coll = n.removesuffix(" latency")
    nonblocking = coll.startswith("non-blocking ")
    coll = coll.removeprefix("non-blocking ")
    op = _COLLECTIVES.get(coll)
    if op is None:
        return None
    if nonblocking:
        return _Kind(f"osu_i{op}", "nonblocking", f"i{op}")
    return _Kind(f"osu_{op}", "collective", op)


def _one_sided(title: dict[str, str | None]) -> _Kind | None:
    """The one-sided benchmark of a title "OSU MPI_Put Bandwidth Test" (osu_put_bw), or None."""
    api = (title["api"] or "").lower()
    short = _ONE_SIDED.get(api.removeprefix("mpi_")) if api.startswith("mpi_") else None
    measure = _ONE_SIDED_MEASURES.get(" ".join((title["name"] or "").lower().split()))
    if short is None or measure is None or title["device"]:
        return None
    return _Kind(f"osu_{short}_{measure[0]}", measure[1], api.removeprefix("mpi_"))


def _is_header(text: str) -> bool:
    body = text.strip().lstrip("#").strip()
    return body.startswith(("Size", "Avg Latency", "Latency", "Overall("))


def _parse_header(text: str, *, source: str, line: int) -> list[str]:
    body = text.strip().lstrip("#")
    return [n for n, _ in header_columns(body, _COLUMNS, tool="OSU", source=source, line=line)]


def _row_samples(block: _Block, values: dict[str, float]) -> list[Sample]:
    kind = block.kind
    assert kind is not None
    params: dict[str, Any] = {"tool": "osu", "benchmark": kind.benchmark}
    if block.version:
        params["version"] = block.version
    if "size" in values:
        params["size"] = int(values["size"])  # whole and ≥ 0: checked when the row was read
    if "iterations" in values:
        params["iterations"] = int(values["iterations"])
    params.update(block.params)

    if kind.measure.startswith("rma_"):  # one-sided: rma.put.latency, rma.get.bandwidth...
        if kind.measure == "rma_latency":
            return [_sample(f"rma.{kind.op}.latency", values["avg"] * US, params, unit="s",
                            better="lower")]  # fmt: skip
        what = "bandwidth" if kind.measure == "rma_bw" else "bibw"
        return [_sample(f"rma.{kind.op}.{what}", values["bw"] * MB, params, unit="B/s",
                        better="higher")]  # fmt: skip
    if kind.measure in ("bandwidth", "bibw"):
        metric = "p2p.bandwidth" if kind.measure == "bandwidth" else "p2p.bibw"
        return [_sample(metric, values["bw"] * MB, params, unit="B/s", better="higher")]
    if kind.measure == "mbw_mr":
        out = [_sample("p2p.bandwidth", values["bw"] * MB, params, unit="B/s", better="higher")]
        if "msgrate" in values:
            out.append(
                _sample("p2p.message_rate", values["msgrate"], params, unit="op/s", better="higher")
            )
        return out
    if kind.measure == "nonblocking":
        spread = None
        if "min_comm" in values and "max_comm" in values:  # -f: the spread across ranks
            spread = Stats(n=0, min=values["min_comm"] * US, max=values["max_comm"] * US,
                           mean=values["pure"] * US)  # fmt: skip
        return [
            _sample(
                f"coll.{kind.op}", values["pure"] * US, params, spread, unit="s", better="lower"
            ),
            _sample(
                f"coll.{kind.op}.overall", values["overall"] * US, params, unit="s", better="lower"
            ),
        ]

    # latency-like: point-to-point latency or a blocking collective
    stats = None
    if any(k in values for k in ("min", "max", "p50", "p99")):
        stats = Stats(
            n=0,  # the spread is across ranks and OMB does not print how many
            min=values["min"] * US if "min" in values else None,
            max=values["max"] * US if "max" in values else None,
            mean=values["avg"] * US,
            median=values["p50"] * US if "p50" in values else None,
            p99=values["p99"] * US if "p99" in values else None,
        )
    if "p90" in values:
        params["p90"] = values["p90"] * US
    metric = "p2p.latency" if kind.measure == "latency" else f"coll.{kind.op}"
    return [_sample(metric, values["avg"] * US, params, stats, unit="s", better="lower")]


_TIMES = frozenset({"avg", "min", "max", "p50", "p90", "p99", "overall", "pure", "min_comm",
                    "max_comm"})  # fmt: skip

_REQUIRED = {
    "latency": ("avg",),
    "collective": ("avg",),
    "bandwidth": ("size", "bw"),
    "bibw": ("size", "bw"),
    "mbw_mr": ("size", "bw"),
    "nonblocking": ("overall", "pure"),
    "rma_latency": ("size", "avg"),
    "rma_bw": ("size", "bw"),
    "rma_bibw": ("size", "bw"),
}


def _number_repeated_runs(blocks: list[_Block]) -> None:
    """A benchmark run more than once in one file (a session pasted whole, outputs
    concatenated): each run its own series, ``params["run"]`` 1, 2... in file order among the
    runs of that benchmark, whatever options (device buffers...) each run had."""
    ran = [b for b in blocks if b.kind is not None and b.rows]
    counts = Counter(b.kind.benchmark for b in ran if b.kind is not None)
    seen: Counter[str] = Counter()
    for b in ran:
        name = b.kind.benchmark if b.kind is not None else ""
        if counts[name] > 1:
            seen[name] += 1
            b.params["run"] = seen[name]


def looks_like(text: str) -> bool:
    """True when the text holds an OMB title line ("# OSU MPI ... Test")."""
    return any(_title(line) for line in text.splitlines())


class _Reader:
    """Reads an OMB output line by line into blocks (one per title line)."""

    def __init__(self, source: str, n_lines: int, cut_last: bool) -> None:
        self.source = source
        self.last_cut = n_lines if cut_last else None  # the line cut mid-row, if any
        self.blocks: list[_Block] = []
        self.block: _Block | None = None
        self.pending: dict[str, Any] = {}  # thread counts printed before their title
        self.stopped = False  # the last row was cut off mid-line
        self.warnings: list[str] = []

    def feed(self, lineno: int, raw: str) -> None:
        stripped = raw.strip()
        if self.stopped or self.threads(lineno, raw) or self.title(lineno, raw, stripped):
            return
        block = self.block
        if block is None or not stripped or block.kind is None:
            return  # preamble before the first title, blank lines, skipped blocks
        if self.comment(block, lineno, raw, stripped):
            return
        if not block.columns:
            self.header(block, lineno, raw, stripped)
        elif _RUNTIME_MESSAGE.match(raw):
            if block.garbage is None:  # after the table: launcher chatter before the next block
                self.warn(lineno, f"skipped a runtime message: {stripped[:80]!r}")
        elif stripped[0].isdigit():
            self.row(block, lineno, stripped)
        elif block.rows and block.garbage is None:
            if _ELIDED.match(stripped):
                self.warn(lineno, f"{stripped!r} after the last {block.kind.benchmark} row: "
                          "rows were left out where this output was pasted")  # fmt: skip
            block.garbage = (lineno, stripped)  # the table may have ended here

    def warn(self, lineno: int, message: str) -> None:
        self.warnings.append(f"{self.source}:{lineno}: {message}")

    def threads(self, lineno: int, raw: str) -> bool:
        m = _THREADS.match(raw)
        if m:
            side, what = (m["who"], "threads") if m["t"] else (m["side"], "processes")
            key = f"{side.lower()}_{what}"
            value = parse_int(m["n"], source=self.source, line=lineno, what=key)
            block = self.block
            (block.params if block is not None and not block.columns else self.pending)[key] = value
        return m is not None

    def title(self, lineno: int, raw: str, stripped: str) -> bool:
        title = _title(raw)
        if not title:
            return False
        kind = _kind_of(title["name"]) if title["api"] == "MPI" else _one_sided(title)
        device = title["device"].lower() if title["device"] else None
        block = _Block(line=lineno, title=stripped.lstrip("#").strip(), kind=kind,
                       version=title["version"], device=device)  # fmt: skip
        if device:
            block.params["device"] = device
        block.params.update(self.pending)
        self.pending = {}
        self.blocks.append(block)
        self.block = block
        if kind is None:
            self.warn(lineno, f"skipped '{block.title}': not a benchmark assay reads")
        return True

    def comment(self, block: _Block, lineno: int, raw: str, stripped: str) -> bool:
        """The comment lines that describe a block: datatype, buffers, pairs and window."""
        dt = _DATATYPE.match(raw)
        if dt:
            block.params["datatype"] = dt["dt"].strip()
            return True
        buffers = _BUFFERS.match(raw)
        if buffers:
            block.params["send_buffer"] = buffers["send"].lower()
            block.params["recv_buffer"] = buffers["recv"].lower()
            return True
        setup = _RMA_SETUP.match(raw)
        if setup:
            key = "window_creation" if setup["what"] == "Window creation" else "synchronization"
            block.params[key] = setup["how"]
            return True
        pairs = _PAIRS.search(raw)
        if pairs and stripped.startswith("#"):
            block.params["pairs"] = parse_int(pairs["pairs"], source=self.source, line=lineno)
            block.params["window"] = parse_int(pairs["window"], source=self.source, line=lineno)
            return True
        return False

    def header(self, block: _Block, lineno: int, raw: str, stripped: str) -> None:
        assert block.kind is not None
        if _is_header(raw):
            block.columns = _parse_header(raw, source=self.source, line=lineno)
            need = [c for c in _REQUIRED[block.kind.measure] if c not in block.columns]
            if need:
                raise ParseError(
                    f"the {block.kind.benchmark} header lacks column(s) {', '.join(need)}",
                    source=self.source,
                    line=lineno,
                )
        elif stripped[0].isdigit():
            raise ParseError(
                f"row before the column header of '{block.title}'", source=self.source, line=lineno
            )
        elif not stripped.startswith("#"):
            self.warn(lineno, f"ignored {stripped[:80]!r}")

    def row(self, block: _Block, lineno: int, stripped: str) -> None:
        assert block.kind is not None
        tokens = table_row(stripped, n_columns=len(block.columns), table=block.kind.benchmark,
                           garbage=block.garbage, cut_last=lineno == self.last_cut,
                           source=self.source, line=lineno)  # fmt: skip
        if tokens is None:
            self.stopped = True  # the last row was cut off mid-line: see _completeness
            return
        cells = dict(zip(block.columns, tokens, strict=True))
        verdict = cells.pop("validation", "Pass")
        if verdict.lower() != "pass":
            self.warn(lineno, f"skipped the {block.kind.benchmark} row {tokens[0]}: "
                      f"OMB validation says {verdict!r} (wrong data)")  # fmt: skip
            return
        # a time OMB measured is > 0; sizes, counts, rates, overlap % are ≥ 0
        values = {
            name: (parse_time if name in _TIMES else parse_rate)(
                tok, source=self.source, line=lineno, what=name
            )
            for name, tok in cells.items()
        }
        for name in ("size", "iterations"):
            if name in values:
                values[name] = to_int(values[name], source=self.source, line=lineno, what=name)
        block.rows.append((lineno, values))


def _completeness(reader: _Reader, lines: list[str]) -> list[str]:
    """What the output lacks: the row cut off mid-line, the blocks without any row."""
    missing: list[str] = []
    block = reader.block
    if reader.last_cut and lines and block is not None and block.kind is not None:
        last = lines[-1].strip()
        if last and last[0].isdigit():
            after = (
                f" after size {int(block.rows[-1][1]['size'])}"
                if (block.rows and "size" in block.rows[-1][1])
                else ""
            )
            missing.append(
                f"{block.kind.benchmark}: the row{after} was cut off (output ends mid-line); "
                "later sizes, if any, are unknown"
            )
    for b in reader.blocks:
        if b.kind is not None and not b.rows:
            missing.append(f"{b.kind.benchmark} (line {b.line}): no rows after '{b.title}'")
    return missing


def _check_sweeps(blocks: list[_Block], source: str) -> list[str]:
    """Repeated rows kept once, rows lost in the middle named (``sweep_rows``), per table."""
    warnings: list[str] = []
    for b in blocks:
        if b.kind is not None and b.rows and "size" in b.rows[0][1]:
            rows = [(n, int(v["size"]), v) for n, v in b.rows]
            kept, dup_gap = sweep_rows(rows, table=b.kind.benchmark, source=source)
            b.rows = [(n, v) for n, _, v in kept]
            warnings.extend(dup_gap)
    return warnings


def _taken_rows(block: _Block) -> Iterator[dict[str, float]]:
    """The block's rows in order, each let go as it is taken: a table of 250,000 sizes held
    every row beside its samples (a third of an import's memory)."""
    rows, block.rows = block.rows, []
    rows.reverse()
    while rows:
        yield rows.pop()[1]


@checked
def parse(text: str, source: str = "<text>") -> ParseResult:
    """Read OSU Micro-Benchmarks output into samples (see the module docstring)."""
    require_tool(
        text,
        tool="osu",
        looks_like=looks_like,
        expected="not OSU Micro-Benchmarks output: no '# OSU MPI ... Test' title line",
        source=source,
        hint="OMB prints a title such as '# OSU MPI Latency Test v7.2' before each table",
    )
    lines = text.splitlines()
    reader = _Reader(source, len(lines), last_line_cut(text))
    for lineno, raw in enumerate(lines, start=1):
        reader.feed(lineno, raw)
    blocks = reader.blocks
    missing = _completeness(reader, lines)
    complete = not missing
    warnings = reader.warnings + _check_sweeps(blocks, source)
    _number_repeated_runs(blocks)
    samples = [s for b in blocks for values in _taken_rows(b) for s in _row_samples(b, values)]
    if not samples and complete:
        raise ParseError(
            f"no OSU benchmark assay reads in this output ({'; '.join(b.title for b in blocks)})",
            source=source,
        )
    versions = sorted({b.version for b in blocks if b.version})
    meta: dict[str, Any] = {
        "tool": "osu",
        "benchmarks": [b.kind.benchmark for b in blocks if b.kind is not None],
        "versions": versions,
    }
    if len(versions) == 1:
        meta["version"] = versions[0]
    return ParseResult(tool="osu", samples=samples, meta=meta, complete=complete,
                       missing=missing, warnings=warnings)  # fmt: skip
