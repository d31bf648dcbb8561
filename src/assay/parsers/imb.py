"""Intel(R) MPI Benchmarks text output: IMB-MPI1, IMB-EXT, IMB-NBC and IMB-RMA, 3.x to 2021.x.

IMB prints a header (``#    Intel(R) MPI Benchmarks 2019 Update 6, MPI-1 part``, older
``#    Intel (R) MPI Benchmark Suite V3.2, MPI-1 part``; the part is MPI-1, MPI-2 for IMB-EXT
4.x, NBC, RMA...), the calling sequence, the message-length range and the list of benchmarks
to run, then one block per benchmark and process count::

    # Benchmarking Allreduce
    # #processes = 2
    # ( 2 additional processes waiting in MPI_Barrier)
           #bytes #repetitions  t_min[usec]  t_max[usec]  t_avg[usec]

and ends with ``# All processes entering MPI_Finalize``. Variants of a block:

- ``-multi`` (multiple mode): ``# Benchmarking Multi-PingPong``, ``# ( 2 groups of 2 processes
  each running simultaneous )`` and ``# Group  0: 0 1`` lines instead of ``#processes``. With
  ``-multi 0`` IMB prints t_min/t_max/t_avg over all groups; with ``-multi 1`` one row per group
  (a leading ``Group`` column). Samples get ``groups`` and ``group_ranks`` params (and
  ``group`` for a per-group row), never ``ranks``: they are their own series.
- IMB-EXT's ``#    MODE: AGGREGATE`` / ``NON-AGGREGATE``: ``params["mode"]``.
- IMB-NBC's overlap columns ``t_ovrl[usec] t_pure[usec] t_CPU[usec] overlap[%]``.

A file holding several IMB runs (a pasted session: one header per run, prompts and launcher
lines between them) keeps each run apart: ``params["run"]`` (1, 2, ...) when there are more
than one, each with its own version. Lines outside the IMB blocks are skipped; a ``...`` line
after rows (rows left out by whoever pasted the output) is warned about.

Units. IMB's "Mbytes/sec" changed meaning: IMB 2018 and later divide by 1e6
(``static double MEGA = 1.0 / 1e6`` in IMB_output.c, intel/mpi-benchmarks; the 2025 user guide
writes "bandwidth = X / T"), IMB 3.x/4.x divided by 2**20 (``MEGA = 1.0/1048576.0`` in the same
file of those releases; their guide writes "bandwidth = X / 1.048576 / T"). The version in the
run's header decides: a year version of 2018 or later is 1e6 B/s, anything older (3.x, 4.x,
2017) is 2**20 B/s. The 2017 release itself was not checked. Without a header the version is
unknown and no bandwidth sample is made (a warning says so). Times are microseconds.

Samples:

=======================  ==================================================================
benchmark                metrics
=======================  ==================================================================
PingPong                 ``p2p.latency`` (t[usec], IMB's half round trip), ``p2p.bandwidth``
PingPing                 ``p2p.pingping.latency`` (t[usec]), ``p2p.pingping.bandwidth``
Sendrecv                 ``p2p.sendrecv.latency`` (t_avg), ``p2p.sendrecv.bandwidth``
Exchange                 ``p2p.exchange.latency`` (t_avg), ``p2p.exchange.bandwidth``
Uniband / Biband         ``p2p.uniband.bandwidth`` / ``p2p.biband.bandwidth`` and
                         ``p2p.uniband.message_rate`` / ``p2p.biband.message_rate`` (op/s)
one-sided (IMB-EXT,      ``rma.<name lowercased>.latency`` (t or t_avg) and, where printed,
IMB-RMA)                 ``rma.<name>.bandwidth``: rma.unidir_put, rma.window, rma.one_put_all
non-blocking (IMB-NBC)   ``coll.<name>`` (t_pure, the collective alone) and
                         ``coll.<name>.overall`` (t_ovrl, with the overlapped compute);
                         t_CPU and overlap[%] are not kept. ``Ibcast_pure`` & co: coll.ibcast
collectives              ``coll.<name lowercased>`` (coll.allreduce, coll.barrier...): t_avg
=======================  ==================================================================

Where IMB prints t_min/t_max/t_avg (the spread of the per-process averages across the
processes) the sample gets ``Stats(n=processes, min=t_min, max=t_max, mean=t_avg)``.
Bandwidth at 0 bytes (always 0.00) is not kept. params: ``tool="imb"``, ``benchmark``
("PingPong", as IMB spells it), ``version`` ("2019 Update 6"), ``ranks`` (from ``#processes``),
``size`` (bytes, absent for Barrier), ``iterations`` (#repetitions), and the variants' params
above.

A row IMB marks ``out-of-mem``, ``time-out`` or ``int-overflow`` instead of timings is skipped
with a warning naming the line; so are the ``[ p1, p2, ... ]`` percentile lines a patched IMB
(PerfKitBenchmarker's ``-show_tail``) prints after each row. Without ``# All processes entering
MPI_Finalize`` a run is unfinished: the result is ``complete=False`` and ``missing`` names the
sizes after the last row of the unfinished block (up to the maximum message length of the
header) and the listed benchmarks that never started. A line inside a table that is not a row
ends the table; a row after it means interleaved output and raises ParseError at that line.
When IMB says how many processes wait in MPI_Barrier while the first, smaller process count
runs, the job's rank count is known and an unfinished output also lists the larger process
counts that never started.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from assay.errors import ParseError
from assay.model import Sample, Stats
from assay.parsers.base import (
    ParseResult,
    make_sample,
    rate_row,
    table_row,
    tool_lines,
)
from assay.parsers.numbers import checked, parse_int, sweep_rows

PROBE = "imb"
_sample = partial(make_sample, PROBE)
US = 1e-6

_HEADER = re.compile(
    r"Intel\s*\(R\)\s*MPI\s+Benchmarks?(?:\s+Suite)?\s+V?(?P<version>[^,]+?)\s*,\s*"
    r"(?P<part>\S+)\s+part",
    re.IGNORECASE,
)
_BENCHMARKING = re.compile(r"^\s*#\s*Benchmarking\s+(?P<multi>Multi-)?(?P<name>\S+)\s*$")
_PROCESSES = re.compile(r"^\s*#\s*\(?\s*#processes\s*=\s*(?P<n>\d+)")
_GROUPS = re.compile(r"^\s*#\s*\(\s*(?P<groups>\d+)\s+groups?\s+of\s+(?P<size>\d+)\s+process")
_WAITING = re.compile(r"^\s*#\s*\(\s*(?P<n>\d+)\s+additional processes waiting")
_MODE = re.compile(r"^\s*#\s*MODE:\s*(?P<mode>[A-Za-z-]+)")
_MAX_LEN = re.compile(r"^\s*#\s*Maximum message length in bytes:\s*(?P<n>\d+)")
_FINALIZE = re.compile(r"^\s*#\s*All processes entering MPI_Finalize")
_FAILED_ROW = re.compile(r"^\s*\d+\s+(?P<what>out-of-mem|time-out|int-overflow)", re.IGNORECASE)
_ELIDED = re.compile(r"^(?:\.{3,}|\u2026)$")  # "..." where a person pasting left rows out
_TAIL_LINE = re.compile(r"^\s*\[[\d.,\s]*\]\s*$")  # "[ 0.83, 0.97, ... ]" of a patched IMB

_COLUMNS = {
    "Group": "group",
    "#bytes": "size",
    "#repetitions": "iterations",
    "t[usec]": "t",
    "t_min[usec]": "t_min",
    "t_max[usec]": "t_max",
    "t_avg[usec]": "t_avg",
    "t_ovrl[usec]": "t_ovrl",
    "t_pure[usec]": "t_pure",
    "t_CPU[usec]": "t_cpu",
    "overlap[%]": "overlap",
    "Mbytes/sec": "mbytes",
    "Msg/sec": "msgrate",
    "defects": "defects",
}
_FIRST_COLUMNS = ("Group", "#bytes", "#repetitions")
_WHOLE_COLUMNS = ("size", "iterations", "group")

# point-to-point benchmarks -> (latency metric, bandwidth metric, message-rate metric)
_P2P = {
    "pingpong": ("p2p.latency", "p2p.bandwidth", None),
    "pingping": ("p2p.pingping.latency", "p2p.pingping.bandwidth", None),
    "sendrecv": ("p2p.sendrecv.latency", "p2p.sendrecv.bandwidth", None),
    "exchange": ("p2p.exchange.latency", "p2p.exchange.bandwidth", None),
    "uniband": (None, "p2p.uniband.bandwidth", "p2p.uniband.message_rate"),
    "biband": (None, "p2p.biband.bandwidth", "p2p.biband.message_rate"),
}
# One-sided benchmarks of IMB-EXT (Window, Unidir_Put...) and IMB-RMA (Unidir_put, One_put_all,
# Truly_passive_put...), by lowercased name.
_RMA = frozenset(
    {
        "window",
        "unidir_get",
        "unidir_put",
        "bidir_get",
        "bidir_put",
        "accumulate",
        "one_put_all",
        "one_get_all",
        "all_put_all",
        "all_get_all",
        "put_local",
        "put_all_local",
        "get_local",
        "get_all_local",
        "exchange_put",
        "exchange_get",
        "get_accumulate",
        "fetch_and_op",
        "compare_and_swap",
        "truly_passive_put",
    }
)


@dataclass
class _Block:
    name: str
    line: int
    run: int
    multi: bool = False
    ranks: int | None = None
    params: dict[str, Any] = field(default_factory=dict)  # groups, group_ranks, mode
    columns: list[str] = field(default_factory=list)
    rows: list[dict[str, float]] = field(default_factory=list)
    row_lines: list[int] = field(default_factory=list)  # the file line of each row
    garbage: tuple[int, str] | None = None

    @property
    def label(self) -> str:
        where = f"#processes = {self.ranks}" if self.ranks else ""
        if self.multi:
            groups, size = self.params.get("groups", "?"), self.params.get("group_ranks", "?")
            where = f"{groups} groups of {size}"
        mode = f", {self.params['mode']}" if "mode" in self.params else ""
        return f"{'Multi-' if self.multi else ''}{self.name}" + (
            f" ({where}{mode})" if where or mode else ""
        )

    @property
    def processes(self) -> int:
        """How many processes IMB's t_min/t_max/t_avg spread over (0: not printed)."""
        if self.multi:
            return self.params.get("groups", 0) * self.params.get("group_ranks", 0)
        return self.ranks or 0


@dataclass
class _Run:
    """One IMB invocation: its header and its blocks."""

    index: int
    version: str | None = None
    part: str | None = None
    max_len: int | None = None
    command: str | None = None
    listed: list[str] = field(default_factory=list)
    finalized: bool = False
    total_ranks: int | None = None  # #processes + those waiting in the barrier
    blocks: list[_Block] = field(default_factory=list)

    def meta(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "version": self.version,
            "part": self.part,
            "benchmarks": [b.label for b in self.blocks],
        }
        if self.command:
            out["command"] = self.command
        return out


def mbytes_factor(version: str | None) -> float | None:
    """Bytes per IMB "Mbytes": 1e6 from IMB 2018 on, 2**20 before, None when unknown."""
    if not version:
        return None
    m = re.match(r"\s*(\d{1,9})", version)
    if not m:
        return None
    return 1e6 if int(m.group(1)) >= 2018 else float(2**20)


def _p2p_metrics(name: str) -> tuple[str | None, str | None, str | None] | None:
    key = name.lower()
    for prefix, metrics in _P2P.items():
        # PingPongSpecificSource / PingPongAnySource (IMB 2017+) measure the same thing
        if (
            key == prefix
            or key.startswith(prefix + "specificsource")
            or key.startswith(prefix + "anysource")
        ):
            return metrics
    return None


def _metrics(name: str) -> tuple[str | None, str | None, str | None]:
    """(latency, bandwidth, message rate) metrics of a benchmark; latency is the t_pure
    metric for an IMB-NBC block (its t_ovrl goes to ``<latency>.overall``)."""
    p2p = _p2p_metrics(name)
    if p2p is not None:
        return p2p
    key = name.lower()
    if key in _RMA:
        return f"rma.{key}.latency", f"rma.{key}.bandwidth", None
    return f"coll.{key.removesuffix('_pure')}", None, None


def _row_params(block: _Block, run: _Run, runs: int, row: dict[str, float]) -> dict[str, Any]:
    params: dict[str, Any] = {"tool": "imb", "benchmark": block.name}
    if run.version:
        params["version"] = run.version
    if runs > 1:
        params["run"] = run.index
    if block.ranks is not None:
        params["ranks"] = block.ranks
    params.update(block.params)
    for col in _WHOLE_COLUMNS:
        if col in row:
            params[col] = int(row[col])
    return params


def _block_samples(block: _Block, run: _Run, runs: int) -> list[Sample]:
    out: list[Sample] = []
    lat_metric, bw_metric, rate_metric = _metrics(block.name)
    mega = mbytes_factor(run.version)
    for row in block.rows:
        params = _row_params(block, run, runs, row)
        stats = None
        if "t_avg" in row:
            stats = Stats(
                n=block.processes,
                min=row["t_min"] * US,
                max=row["t_max"] * US,
                mean=row["t_avg"] * US,
            )
        latency = next((row[k] for k in ("t", "t_pure", "t_avg") if k in row), None)
        if lat_metric and latency is not None:
            out.append(_sample(lat_metric, latency * US, params, stats, unit="s", better="lower"))
        if lat_metric and "t_ovrl" in row:
            out.append(
                _sample(
                    f"{lat_metric}.overall", row["t_ovrl"] * US, params, unit="s", better="lower"
                )
            )
        if bw_metric and "mbytes" in row and mega is not None and params.get("size"):
            out.append(
                _sample(bw_metric, row["mbytes"] * mega, params, unit="B/s", better="higher")
            )
        if rate_metric and "msgrate" in row:  # the 0-byte message rate is a real figure
            out.append(_sample(rate_metric, row["msgrate"], params, unit="op/s", better="higher"))
    return out


_EXPECTED = (
    "not Intel MPI Benchmarks output: no 'Intel(R) MPI Benchmarks' header and no "
    "'# Benchmarking <name>' block"
)


def looks_like(text: str) -> bool:
    """True for an IMB header or an IMB ``# Benchmarking X`` block with ``#processes`` or
    ``groups of N processes``."""
    if _HEADER.search(text):
        return True
    lines = text.splitlines()
    return any(_BENCHMARKING.match(x) for x in lines) and any(
        _PROCESSES.match(x) or _GROUPS.match(x) for x in lines
    )


class _Reader:
    """Reads an IMB output line by line into runs of blocks."""

    def __init__(self, source: str, cut_last: int | None) -> None:
        self.source = source
        self.cut_last = cut_last  # the number of the last line when it was cut mid-line
        self.runs: list[_Run] = [_Run(index=1)]
        self.block: _Block | None = None
        self.in_list = False
        self.expect_command = False
        self.truncated_row = False
        self.tail_lines = 0
        self.warnings: list[str] = []

    @property
    def run(self) -> _Run:
        return self.runs[-1]

    def header(self, lineno: int, stripped: str) -> bool:
        """The run's header lines; False when the line is not one."""
        head = _HEADER.search(stripped)
        if head:
            if self.run.version is not None or self.run.blocks:
                self.runs.append(_Run(index=len(self.runs) + 1))
            self.run.version, self.run.part = head["version"].strip(), head["part"]
            self.block = None
            return True
        if self.expect_command and stripped.startswith("#") and stripped != "#":
            self.run.command = stripped.lstrip("#").strip()
            self.expect_command = False
            return True
        if stripped.startswith("# Calling sequence was"):
            self.expect_command = True
            return True
        m = _MAX_LEN.match(stripped)
        if m:
            self.run.max_len = parse_int(
                m["n"], source=self.source, line=lineno, what="max message length"
            )
            return True
        if stripped.startswith("# List of Benchmarks to run"):
            self.in_list = True
            return True
        if self.in_list:
            if stripped.startswith("#---") or _BENCHMARKING.match(stripped):
                self.in_list = False
            elif stripped.startswith("#"):
                name = stripped.lstrip("#").strip()
                if name:
                    self.run.listed.append(name)
                return True
        return False

    def block_line(self, lineno: int, stripped: str) -> bool:
        """The lines that open or close a block, or describe it before its column header."""
        bench = _BENCHMARKING.match(stripped)
        if bench:
            self.block = _Block(
                name=bench["name"], line=lineno, run=self.run.index, multi=bool(bench["multi"])
            )
            self.run.blocks.append(self.block)
            return True
        if _FINALIZE.match(stripped):
            self.run.finalized = True
            self.block = None
            return True
        block = self.block
        if block is None or block.columns:
            return False
        for pattern, action in (
            (_PROCESSES, self._processes),
            (_GROUPS, self._groups),
            (_WAITING, self._waiting),
            (_MODE, self._mode),
        ):
            m = pattern.match(stripped)
            if m:
                action(block, m, lineno)
                return True
        if stripped.split()[0] in _FIRST_COLUMNS:
            self._columns(block, stripped, lineno)
        return True  # '#----' rules, Group lists and other lines before the columns

    def _processes(self, block: _Block, m: re.Match[str], lineno: int) -> None:
        block.ranks = parse_int(m["n"], source=self.source, line=lineno, what="#processes")

    def _groups(self, block: _Block, m: re.Match[str], lineno: int) -> None:
        block.params["groups"] = parse_int(m["groups"], source=self.source, line=lineno)
        block.params["group_ranks"] = parse_int(m["size"], source=self.source, line=lineno)

    def _waiting(self, block: _Block, m: re.Match[str], lineno: int) -> None:
        if self.run.total_ranks is None and block.ranks is not None:
            waiting = parse_int(m["n"], source=self.source, line=lineno, what="waiting")
            self.run.total_ranks = block.ranks + waiting

    def _mode(self, block: _Block, m: re.Match[str], lineno: int) -> None:
        block.params["mode"] = m["mode"].lower()

    def _columns(self, block: _Block, stripped: str, lineno: int) -> None:
        names = stripped.split()
        unknown = [n for n in names if n not in _COLUMNS]
        if unknown:
            raise ParseError(
                f"unsupported IMB column(s) {', '.join(unknown)} in {block.name}",
                source=self.source,
                line=lineno,
            )
        block.columns = [_COLUMNS[n] for n in names]

    def row(self, lineno: int, stripped: str) -> None:
        """A line of a block's table: a row, a failed row, or the end of the table."""
        block = self.block
        assert block is not None
        failed = _FAILED_ROW.match(stripped)
        if failed:
            self.warnings.append(
                f"{self.source}:{lineno}: skipped the {block.name} row {stripped.split()[0]} "
                f"bytes: IMB reports {failed['what']}"
            )
            return
        if _TAIL_LINE.match(stripped):
            self.tail_lines += 1
            return
        if not stripped[0].isdigit():
            if not stripped.startswith("#") and block.rows and block.garbage is None:
                if _ELIDED.match(stripped):
                    self.warnings.append(
                        f"{self.source}:{lineno}: {stripped!r} after the last {block.label} row: "
                        "rows were left out where this output was pasted"
                    )
                block.garbage = (lineno, stripped)
            return
        tokens = table_row(
            stripped,
            n_columns=len(block.columns),
            table=f"IMB {block.name}",
            garbage=block.garbage,
            cut_last=lineno == self.cut_last,
            source=self.source,
            line=lineno,
        )
        if tokens is None:
            self.truncated_row = True
            return
        row = rate_row(tokens, block.columns, source=self.source, line=lineno)
        if "group" in row:
            row["group"] = int(row["group"])
        if row.get("defects", 0) > 0:
            self.warnings.append(
                f"{self.source}:{lineno}: skipped the {block.name} row {int(row.get('size', 0))} "
                f"bytes: IMB found {row['defects']:g} defects (wrong results)"
            )
            return
        block.rows.append(row)
        block.row_lines.append(lineno)

    def feed(self, lineno: int, raw: str) -> None:
        stripped = raw.strip()
        if not stripped or self.truncated_row:
            return
        if self.header(lineno, stripped) or self.block_line(lineno, stripped):
            return
        if self.block is not None:
            self.row(lineno, stripped)


def _check_sweeps(blocks: list[_Block], source: str) -> list[str]:
    """Repeated rows kept once, rows lost in the middle named (``sweep_rows``), per table."""
    warnings: list[str] = []
    for b in blocks:
        if b.rows and "size" in b.rows[0] and "group" not in b.rows[0]:
            rows = [(n, int(r["size"]), r) for n, r in zip(b.row_lines, b.rows, strict=True)]
            kept, dup_gap = sweep_rows(rows, table=f"IMB {b.label}", source=source)
            b.rows, b.row_lines = [r for _, _, r in kept], [n for n, _, _ in kept]
            warnings.extend(dup_gap)
    return warnings


def _missing(run: _Run) -> list[str]:
    """What an unfinished run lacks: the rest of its last block, the benchmarks and the
    process counts that never started, and the closing line."""
    missing: list[str] = []
    if run.blocks:
        last = run.blocks[-1]
        if last.rows and "size" in last.rows[-1]:
            last_size = int(last.rows[-1]["size"])
            upto = f" up to {run.max_len}" if run.max_len is not None else ""
            if run.max_len is None or last_size < run.max_len:
                missing.append(f"{last.label}: sizes after {last_size}{upto}")
        elif not last.rows:
            missing.append(f"{last.label}: no rows")
    started = {b.name.lower() for b in run.blocks}
    missing += [f"{n}: never started" for n in run.listed if n.lower() not in started]
    if run.total_ranks is not None:
        # IMB runs each benchmark again with more processes, up to all of the job's ranks
        for name in dict.fromkeys(b.name for b in run.blocks):
            if name.lower().startswith(("pingpong", "pingping")):
                continue  # always exactly 2 processes
            most = max(b.ranks or 0 for b in run.blocks if b.name == name)
            if most < run.total_ranks:
                missing.append(f"{name} (#processes = {run.total_ranks}): never started")
    missing.append("the closing '# All processes entering MPI_Finalize' line")
    return missing


@checked
def parse(text: str, source: str = "<text>") -> ParseResult:
    """Read IMB output into samples (see the module docstring)."""
    lines, cut_last_line = tool_lines(
        text, tool="imb", looks_like=looks_like, expected=_EXPECTED, source=source
    )
    reader = _Reader(source, len(lines) if cut_last_line else None)
    for lineno, raw in enumerate(lines, start=1):
        reader.feed(lineno, raw)
    runs = [r for r in reader.runs if r.blocks or r.version]
    blocks = [b for r in runs for b in r.blocks]
    warnings = reader.warnings + _check_sweeps(blocks, source)
    if reader.tail_lines:
        warnings.append(
            f"{source}: skipped {reader.tail_lines} '[ ... ]' percentile line(s) "
            "of a patched IMB (-show_tail): not read"
        )
    missing: list[str] = []
    for r in runs:
        if not r.finalized or (reader.truncated_row and r is runs[-1]):
            missing += _missing(r)
        for b in r.blocks[:-1] if not r.finalized else r.blocks:
            if not b.rows:
                warnings.append(f"{source}:{b.line}: the {b.label} block has no rows")
        if mbytes_factor(r.version) is None and any("mbytes" in b.columns for b in r.blocks):
            warnings.append(
                f"{source}: IMB version unknown{f' (run {r.index})' if len(runs) > 1 else ''}, "
                "so its Mbytes/sec (1e6 or 2**20 bytes) cannot be converted; no bandwidth samples"
            )
    complete = not missing
    samples = [s for r in runs for b in r.blocks for s in _block_samples(b, r, len(runs))]
    if not samples and complete:
        found = [f"IMB {r.version}" for r in runs if r.version] + [b.label for b in blocks]
        raise ParseError(
            "IMB output without any result row (found: "
            f"{', '.join(found) or 'no header, no block'}; no '#bytes' table with rows)",
            source=source,
        )
    return ParseResult(
        tool="imb",
        samples=samples,
        meta=_meta(runs),
        complete=complete,
        missing=missing,
        warnings=warnings,
    )


def _meta(runs: list[_Run]) -> dict[str, Any]:
    first = runs[0] if runs else _Run(index=1)
    meta: dict[str, Any] = {
        "tool": "imb",
        "version": first.version,
        "part": first.part,
        "benchmarks": [b.name for r in runs for b in r.blocks],
        "listed": [n for r in runs for n in r.listed],
        "max_message_bytes": first.max_len,
        "mbytes_unit_bytes": mbytes_factor(first.version),
    }
    if first.command:
        meta["command"] = first.command
    if first.total_ranks is not None:
        meta["job_ranks"] = first.total_ranks
    if len(runs) > 1:
        meta["runs"] = [r.meta() for r in runs]
    return meta
