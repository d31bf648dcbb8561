"""Intel(R) MPI Benchmarks (IMB-MPI1) text output.

IMB prints a header (``#    Intel(R) MPI Benchmarks 2019 Update 6, MPI-1 part``, the calling
sequence, the message-length range and the list of benchmarks to run), then one block per
benchmark and process count::

    # Benchmarking Allreduce
    # #processes = 2
    # ( 2 additional processes waiting in MPI_Barrier)
           #bytes #repetitions  t_min[usec]  t_max[usec]  t_avg[usec]

and ends with ``# All processes entering MPI_Finalize``.

Units. IMB's "Mbytes/sec" changed meaning: IMB 2018 and later divide by 1e6
(``static double MEGA = 1.0 / 1e6`` in IMB_output.c, intel/mpi-benchmarks; the 2025 user guide
writes "bandwidth = X / T"), IMB 3.x/4.x divided by 2**20 (``MEGA = 1.0/1048576.0`` in the same
file of those releases; their guide writes "bandwidth = X / 1.048576 / T"). The version in the
header decides: a year version of 2018 or later is 1e6 B/s, anything older (3.x, 4.x, 2017) is
2**20 B/s. The 2017 release itself was not checked. Without a header the version is unknown and
no bandwidth sample is made (a warning says so). Times are microseconds.

Samples:

====================  =====================================================================
benchmark             metrics
====================  =====================================================================
PingPong              ``p2p.latency`` (t[usec], IMB's half round trip), ``p2p.bandwidth``
PingPing              ``p2p.pingping.latency`` (t[usec]), ``p2p.pingping.bandwidth``
Sendrecv              ``p2p.sendrecv.latency`` (t_avg), ``p2p.sendrecv.bandwidth``
Exchange              ``p2p.exchange.latency`` (t_avg), ``p2p.exchange.bandwidth``
Uniband / Biband      ``p2p.uniband.bandwidth`` / ``p2p.biband.bandwidth`` and
                      ``p2p.uniband.message_rate`` / ``p2p.biband.message_rate`` (op/s)
collectives           ``coll.<name lowercased>`` (coll.allreduce, coll.reduce_scatter,
                      coll.barrier...): t_avg
====================  =====================================================================

Where IMB prints t_min/t_max/t_avg (the spread of the per-process averages across the
``#processes`` ranks) the sample gets ``Stats(n=ranks, min=t_min, max=t_max, mean=t_avg)``.
Bandwidth at 0 bytes (always 0.00) is not kept. params: ``tool="imb"``, ``benchmark``
("PingPong"), ``version`` ("2019 Update 6"), ``ranks`` (from ``# #processes = N``), ``size``
(bytes, absent for Barrier), ``iterations`` (#repetitions).

A row IMB marks ``out-of-mem``, ``time-out`` or ``int-overflow`` instead of timings is skipped
with a warning naming the line. Without ``# All processes entering MPI_Finalize`` the result is
``complete=False`` and ``missing`` names the sizes after the last row of the unfinished block
(up to the maximum message length of the header) and the listed benchmarks that never started.
A line inside a table that is not a row ends the table; a row after it means interleaved output
and raises ParseError at that line. When IMB says how many processes wait in MPI_Barrier
while the first, smaller process count runs, the job's rank count is known and an unfinished
output also lists the larger process counts that never started.
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
_BENCHMARKING = re.compile(r"^\s*#\s*Benchmarking\s+(?:Multi-)?(?P<name>\S+)\s*$")
_PROCESSES = re.compile(r"^\s*#\s*#processes\s*=\s*(?P<n>\d+)")
_WAITING = re.compile(r"^\s*#\s*\(\s*(?P<n>\d+)\s+additional processes waiting")
_MAX_LEN = re.compile(r"^\s*#\s*Maximum message length in bytes:\s*(?P<n>\d+)")
_FINALIZE = re.compile(r"^\s*#\s*All processes entering MPI_Finalize")
_FAILED_ROW = re.compile(r"^\s*\d+\s+(?P<what>out-of-mem|time-out|int-overflow)", re.IGNORECASE)

_COLUMNS = {
    "#bytes": "size",
    "#repetitions": "iterations",
    "t[usec]": "t",
    "t_min[usec]": "t_min",
    "t_max[usec]": "t_max",
    "t_avg[usec]": "t_avg",
    "Mbytes/sec": "mbytes",
    "Msg/sec": "msgrate",
    "defects": "defects",
}

# point-to-point benchmarks -> (latency metric, bandwidth metric, message-rate metric)
_P2P = {
    "pingpong": ("p2p.latency", "p2p.bandwidth", None),
    "pingping": ("p2p.pingping.latency", "p2p.pingping.bandwidth", None),
    "sendrecv": ("p2p.sendrecv.latency", "p2p.sendrecv.bandwidth", None),
    "exchange": ("p2p.exchange.latency", "p2p.exchange.bandwidth", None),
    "uniband": (None, "p2p.uniband.bandwidth", "p2p.uniband.message_rate"),
    "biband": (None, "p2p.biband.bandwidth", "p2p.biband.message_rate"),
}


@dataclass
class _Block:
    name: str
    line: int
    ranks: int | None = None
    columns: list[str] = field(default_factory=list)
    rows: list[dict[str, float]] = field(default_factory=list)
    row_lines: list[int] = field(default_factory=list)  # the file line of each row
    garbage: tuple[int, str] | None = None


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


def _block_samples(block: _Block, version: str | None, mega: float | None) -> list[Sample]:
    out: list[Sample] = []
    p2p = _p2p_metrics(block.name)
    for row in block.rows:
        params: dict[str, Any] = {"tool": "imb", "benchmark": block.name}
        if version:
            params["version"] = version
        if block.ranks is not None:
            params["ranks"] = block.ranks
        if "size" in row:
            params["size"] = int(row["size"])
        if "iterations" in row:
            params["iterations"] = int(row["iterations"])
        stats = None
        if "t_avg" in row:
            stats = Stats(
                n=block.ranks or 0,
                min=row["t_min"] * US,
                max=row["t_max"] * US,
                mean=row["t_avg"] * US,
            )
        latency = row["t"] if "t" in row else row.get("t_avg")
        if p2p is None:
            if latency is None:
                continue
            out.append(
                _sample(
                    f"coll.{block.name.lower()}",
                    latency * US,
                    params,
                    stats,
                    unit="s",
                    better="lower",
                )
            )
            continue
        lat_metric, bw_metric, rate_metric = p2p
        if lat_metric and latency is not None:
            out.append(_sample(lat_metric, latency * US, params, stats, unit="s", better="lower"))
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
    """True for an IMB header or an IMB ``# Benchmarking X`` block with ``#processes``."""
    if _HEADER.search(text):
        return True
    lines = text.splitlines()
    return any(_BENCHMARKING.match(x) for x in lines) and any(_PROCESSES.match(x) for x in lines)


@checked
def parse(text: str, source: str = "<text>") -> ParseResult:
    """Read IMB-MPI1 output into samples (see the module docstring)."""
    lines, cut_last_line = tool_lines(
        text, tool="imb", looks_like=looks_like, expected=_EXPECTED, source=source
    )
    version: str | None = None
    part: str | None = None
    max_len: int | None = None
    command: str | None = None
    listed: list[str] = []
    in_list = False
    expect_command = False
    finalized = False
    waiting: int | None = None
    total_ranks: int | None = None  # ranks of the job: #processes + those waiting in the barrier
    warnings: list[str] = []
    blocks: list[_Block] = []
    block: _Block | None = None
    truncated_row = False

    for lineno, raw in enumerate(lines, start=1):
        stripped = raw.strip()
        if not stripped:
            continue
        head = _HEADER.search(raw)
        if head and version is None:
            version, part = head["version"].strip(), head["part"]
            continue
        if expect_command and stripped.startswith("#") and stripped != "#":
            command = stripped.lstrip("#").strip()
            expect_command = False
            continue
        if stripped.startswith("# Calling sequence was"):
            expect_command = True
            continue
        m = _MAX_LEN.match(raw)
        if m:
            max_len = parse_int(m["n"], source=source, line=lineno, what="max message length")
            continue
        if stripped.startswith("# List of Benchmarks to run"):
            in_list = True
            continue
        if in_list:
            if stripped.startswith("#---") or _BENCHMARKING.match(raw):
                in_list = False
            elif stripped.startswith("#"):
                name = stripped.lstrip("#").strip()
                if name:
                    listed.append(name)
                continue
        bench = _BENCHMARKING.match(raw)
        if bench:
            block = _Block(name=bench["name"], line=lineno)
            blocks.append(block)
            continue
        if _FINALIZE.match(raw):
            finalized = True
            block = None
            continue
        if block is None:
            continue  # header noise
        m = _PROCESSES.match(raw)
        if m:
            block.ranks = parse_int(m["n"], source=source, line=lineno, what="#processes")
            continue
        m = _WAITING.match(raw)
        if m:
            if waiting is None and block.ranks is not None:
                waiting = parse_int(m["n"], source=source, line=lineno, what="waiting processes")
                total_ranks = block.ranks + waiting
            continue
        if not block.columns:
            first = stripped.split()[0]
            if first in ("#bytes", "#repetitions"):
                names = stripped.split()
                unknown = [n for n in names if n not in _COLUMNS]
                if unknown:
                    raise ParseError(
                        f"unsupported IMB column(s) {', '.join(unknown)} in {block.name}",
                        source=source,
                        line=lineno,
                    )
                block.columns = [_COLUMNS[n] for n in names]
            continue  # '#----' rules, MODE lines
        failed = _FAILED_ROW.match(raw)
        if failed:
            warnings.append(
                f"{source}:{lineno}: skipped the {block.name} row {stripped.split()[0]} bytes: "
                f"IMB reports {failed['what']}"
            )
            continue
        if stripped[0].isdigit():
            tokens = table_row(
                stripped,
                n_columns=len(block.columns),
                table=f"IMB {block.name}",
                garbage=block.garbage,
                cut_last=cut_last_line and lineno == len(lines),
                source=source,
                line=lineno,
            )
            if tokens is None:
                truncated_row = True
                break
            row = rate_row(tokens, block.columns, source=source, line=lineno)
            if row.get("defects", 0) > 0:
                warnings.append(
                    f"{source}:{lineno}: skipped the {block.name} row {int(row.get('size', 0))} "
                    f"bytes: IMB found {row['defects']:g} defects (wrong results)"
                )
                continue
            block.rows.append(row)
            block.row_lines.append(lineno)
            continue
        if stripped.startswith("#"):
            continue
        if block.rows and block.garbage is None:
            block.garbage = (lineno, stripped)

    for b in blocks:
        if b.rows and "size" in b.rows[0]:
            rows = [(n, int(r["size"]), r) for n, r in zip(b.row_lines, b.rows, strict=True)]
            label = f"IMB {b.name}" + (f" (#processes = {b.ranks})" if b.ranks else "")
            kept, dup_gap = sweep_rows(rows, table=label, source=source)
            b.rows, b.row_lines = [r for _, _, r in kept], [n for n, _, _ in kept]
            warnings.extend(dup_gap)
    complete = finalized and not truncated_row
    missing: list[str] = []
    if not complete:
        if blocks:
            last_block = blocks[-1]
            label = last_block.name + (
                f" (#processes = {last_block.ranks})" if last_block.ranks else ""
            )
            if last_block.rows and "size" in last_block.rows[-1]:
                upto = f" up to {max_len}" if max_len is not None else ""
                last_size = int(last_block.rows[-1]["size"])
                if max_len is None or last_size < max_len:
                    missing.append(f"{label}: sizes after {last_size}{upto}")
            elif not last_block.rows:
                missing.append(f"{label}: no rows")
        started = {b.name.lower() for b in blocks}
        missing += [f"{n}: never started" for n in listed if n.lower() not in started]
        if total_ranks is not None:
            # IMB runs each benchmark again with more processes, up to all of the job's ranks
            for name in dict.fromkeys(b.name for b in blocks):
                if name.lower().startswith(("pingpong", "pingping")):
                    continue  # always exactly 2 processes
                most = max(b.ranks or 0 for b in blocks if b.name == name)
                if most < total_ranks:
                    missing.append(f"{name} (#processes = {total_ranks}): never started")
        missing.append("the closing '# All processes entering MPI_Finalize' line")
    for b in blocks[:-1] if not complete else blocks:
        if not b.rows:
            warnings.append(f"{source}:{b.line}: the {b.name} block has no rows")

    mega = mbytes_factor(version)
    if mega is None and any("mbytes" in b.columns for b in blocks):
        warnings.append(
            f"{source}: IMB version unknown, so its Mbytes/sec (1e6 or 2**20 bytes) cannot be "
            "converted; no bandwidth samples"
        )
    samples: list[Sample] = []
    for b in blocks:
        samples.extend(_block_samples(b, version, mega))
    if not samples and complete:
        raise ParseError("IMB output without any result row", source=source)

    meta: dict[str, Any] = {
        "tool": "imb",
        "version": version,
        "part": part,
        "benchmarks": [b.name for b in blocks],
        "listed": listed,
        "max_message_bytes": max_len,
        "mbytes_unit_bytes": mega,
    }
    if command:
        meta["command"] = command
    if total_ranks is not None:
        meta["job_ranks"] = total_ranks
    return ParseResult(
        tool="imb",
        samples=samples,
        meta=meta,
        complete=complete,
        missing=missing,
        warnings=warnings,
    )
