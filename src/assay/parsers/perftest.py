"""perftest (linux-rdma/perftest: ib_send_lat, ib_write_bw, ...) text output.

Each test prints a settings block between dashed lines (title such as ``Send Latency Test`` or
``RDMA_Write BW Test``, then ``Device : mlx5_0``, ``Link type : IB``... two per line, separated
by spaces or tabs), the local/remote addresses, the column header, the rows and a closing dashed
line. Rows may be separated by tabs; perftest may print ``Conflicting CPU frequency values
detected`` between rows (skipped, counted in a warning).

Latency (``ib_*_lat``): ``rdma.latency`` with value = ``t_typical``, the median, which perftest
itself reports as the representative figure (print_report_lat sorts the samples and prints the
median as t_typical), and ``Stats(n=#iterations, min=t_min, max=t_max, median=t_typical,
mean=t_avg, stddev=t_stdev, p99, p999)``. Older perftest prints only t_min/t_max/t_typical.
The duration mode (``-D``) prints only ``t_avg[usec]  tps average`` (print_report_lat_duration):
the value is then t_avg, the mean (said in a warning), ``params["mode"] = "duration"`` and
``params["tps"]`` the transactions per second. Times are microseconds; ``--report-cycles``
output (cycles) is refused.

Bandwidth (``ib_*_bw``): ``rdma.bandwidth`` with value = BW average, ``params["bw_peak"]``
(B/s; absent when perftest did not measure it and printed 0.00: the server of a send test, the
duration mode) and ``params["msg_rate"]`` (messages/s, from MsgRate[Mpps]). Units: perftest's
``MB/sec`` and ``MiB/sec`` are both 2**20 bytes per second and ``Gb/sec`` (``--report_gbits``)
is 1e9 bits per second: print_report_bw in src/perftest_resources.c (linux-rdma/perftest)
divides by ``format_factor = (report_fmt == MBS) ? 0x100000 : 125000000``.

params: ``tool="perftest"``, ``benchmark`` ("ib_send_lat"), ``size``, ``iterations``,
``device``, ``link_type``, ``connection`` ("RC"), ``qps``, and ``bidirectional=True`` for the
bidirectional tests. A file may hold a session of several tests (each its own series) and the
same test run more than once (server and client on one terminal, an iteration run then a
``-D`` run): every table of a test that appears more than once gets a ``run`` index (1, 2...)
in file order. A table whose title was cut from a pasted block (a shell prompt, then the
column header) takes its test from the command line before it (``$ ib_send_lat -s 64 host``),
said in a warning; with neither, ParseError says what was found and what is missing.

A table is complete when its closing dashed line follows, or when its last size is 8388608
(2**23, the largest size ``-a`` runs: "Run sizes from 2 till 2^23"); otherwise the result is
``complete=False``. A line inside a table that is not a row, a known perftest warning or the
closing line ends the table; a row after it means interleaved output and raises ParseError.
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
    header_columns,
    make_sample,
    rate_row,
    table_row,
    tool_lines,
)
from assay.parsers.numbers import checked, sweep_rows

PROBE = "perftest"
_sample = partial(make_sample, PROBE)
US = 1e-6
ALL_MAX_SIZE = 2**23  # ib_*: "-a, --all  Run sizes from 2 till 2^23"

# bytes per second per unit perftest prints (print_report_bw: format_factor)
_BW_UNITS = {"MB/sec": float(0x100000), "MiB/sec": float(0x100000), "Gb/sec": 125_000_000.0}

_VERB = re.compile(r"[A-Za-z][\w ]*")


def _title(line: str) -> dict[str, str | None] | None:
    """A perftest title ("Send Latency Test", "RDMA_Write Bidirectional BW Test") as verb,
    kind and bidir, or None. Read by words: one pattern with a lazy verb before the kind
    rescanned a run of blanks from every position (2,000 blanks: 0.2 s, growing with the
    square)."""
    words = line.split()
    if len(words) < 3 or words[-1] != "Test" or words[-2] not in ("Latency", "BW"):
        return None
    bidir = "Bidirectional" if len(words) >= 4 and words[-3] == "Bidirectional" else None
    verb = " ".join(words[: -3 if bidir else -2])
    if not _VERB.fullmatch(verb):
        return None
    return {"verb": verb, "kind": words[-2], "bidir": bidir}


_DASHES = re.compile(r"^\s*-{20,}\s*$")
_SETTING = re.compile(r"(?P<key>[A-Za-z][\w .*/()-]{0,60}?)\s*:\s*(?P<val>[^\s:]+)")
_CPU_FREQ = re.compile(r"^\s*Conflicting CPU frequency values detected")
# a command line naming the test: "$ ib_send_lat -s 64 host", "# sudo ./ib_write_bw -b ..."
_COMMAND = re.compile(r"(?:^|[\s/])(?P<bench>ib_(?:send|write|read|atomic)_(?:lat|bw))(?=\s|$)")
_BIDIR_FLAG = re.compile(r"\s(?:-b|--bidirectional)(?=\s|$)")

_COLUMNS: list[tuple[str, re.Pattern[str]]] = [
    (name, re.compile(pattern))
    for name, pattern in [
        ("size", r"#bytes"),
        ("sl", r"#sl"),
        ("iterations", r"#iterations"),
        ("t_min", r"t_min\[(?P<unit>\w+)\]"),
        ("t_max", r"t_max\[(?P<unit>\w+)\]"),
        ("t_typical", r"t_typical\[(?P<unit>\w+)\]"),
        ("t_avg", r"t_avg\[(?P<unit>\w+)\]"),
        ("t_stdev", r"t_stdev\[(?P<unit>\w+)\]"),
        ("p999", r"99\.9%\s+percentile\[(?P<unit>\w+)\]"),
        ("p99", r"99%\s+percentile\[(?P<unit>\w+)\]"),
        ("tps", r"tps\s+average"),  # duration mode (-D): transactions per second
        ("bw_peak", r"BW\s+peak\[(?P<unit>[\w/]+)\]"),
        ("bw_avg", r"BW\s+average\[(?P<unit>[\w/]+)\]"),
        ("msg_rate", r"MsgRate\[Mpps\]"),
        ("port_bw", r"BW\s+Port\d\[(?P<unit>[\w/]+)\]"),
        ("port_rate", r"MsgRate\s+Port\d\[Mpps\]"),
        ("cpu_util", r"CPU_Util\[%\]"),
    ]
]

_VERBS = {"send": "send", "rdma_write": "write", "rdma_read": "read"}
_SETTINGS_PARAMS = {
    "Device": "device",
    "Link type": "link_type",
    "Connection type": "connection",
    "Number of qps": "qps",
}


@dataclass
class _Table:
    benchmark: str
    kind: str  # "Latency" | "BW"
    line: int
    bidirectional: bool
    settings: dict[str, str] = field(default_factory=dict)
    columns: list[str] = field(default_factory=list)
    bw_factor: float | None = None
    rows: list[dict[str, float]] = field(default_factory=list)
    row_lines: list[int] = field(default_factory=list)  # the file line of each row
    closed: bool = False
    garbage: tuple[int, str] | None = None
    run: int | None = None


def _benchmark(verb: str, kind: str) -> str:
    v = verb.strip().lower()
    base = "atomic" if v.startswith("atomic") else _VERBS.get(v, v.replace(" ", "_"))
    return f"ib_{base}_{'lat' if kind == 'Latency' else 'bw'}"


def _parse_header(text: str, *, source: str, line: int) -> tuple[list[str], float | None]:
    names: list[str] = []
    bw_factor: float | None = None
    body = text.rstrip()
    for name, m in header_columns(body, _COLUMNS, tool="perftest", source=source, line=line):
        unit = m.groupdict().get("unit")
        if (name.startswith("t_") or name in ("p99", "p999")) and unit != "usec":
            raise ParseError(
                f"perftest latency in {unit!r} (--report-cycles?): assay needs usec",
                source=source,
                line=line,
            )
        if name in ("bw_peak", "bw_avg"):
            if unit not in _BW_UNITS:
                raise ParseError(
                    f"unknown perftest bandwidth unit {unit!r}", source=source, line=line
                )
            bw_factor = _BW_UNITS[unit]
        names.append(name)
    return names, bw_factor


def _base_params(table: _Table) -> dict[str, Any]:
    base: dict[str, Any] = {"tool": "perftest", "benchmark": table.benchmark}
    for key, name in _SETTINGS_PARAMS.items():
        if key in table.settings:
            value: Any = table.settings[key]
            # a number of QPs too long for a counter is text, never a huge int
            base[name] = (
                int(value)
                if name == "qps" and value.isascii() and value.isdigit() and len(value) < 10
                else value
            )
    if table.bidirectional:
        base["bidirectional"] = True
    if table.run is not None:
        base["run"] = table.run
    return base


def _latency_sample(row: dict[str, float], params: dict[str, Any]) -> Sample | None:
    typical = row.get("t_typical", row.get("t_avg"))
    if typical is None:
        return None
    if "t_typical" not in row and "tps" in row:
        params["mode"] = "duration"
        params["tps"] = row["tps"]
    stats = Stats(
        n=int(row["iterations"]) if "iterations" in row else 0,
        min=_us(row, "t_min"),
        max=_us(row, "t_max"),
        median=_us(row, "t_typical"),
        mean=_us(row, "t_avg"),
        stddev=_us(row, "t_stdev"),
        p99=_us(row, "p99"),
        p999=_us(row, "p999"),
    )
    return _sample("rdma.latency", typical * US, params, stats, unit="s", better="lower")


def _table_samples(table: _Table) -> list[Sample]:
    out: list[Sample] = []
    base = _base_params(table)
    for row in table.rows:
        params = dict(base)
        params["size"] = int(row["size"])
        if "iterations" in row:
            params["iterations"] = int(row["iterations"])
        if table.kind == "Latency":
            if (sample := _latency_sample(row, params)) is not None:
                out.append(sample)
            continue
        assert table.bw_factor is not None
        if row.get("bw_peak"):  # 0.00 means perftest did not measure the peak
            params["bw_peak"] = row["bw_peak"] * table.bw_factor
        if "msg_rate" in row:
            params["msg_rate"] = row["msg_rate"] * 1e6
        value = row["bw_avg"] * table.bw_factor
        out.append(_sample("rdma.bandwidth", value, params, unit="B/s", better="higher"))
    return out


def _us(row: dict[str, float], key: str) -> float | None:
    return row[key] * US if key in row else None


def _is_column_header(stripped: str) -> bool:
    return stripped.startswith("#bytes")


_EXPECTED = (
    "not perftest output: no '#bytes #iterations ...' result header with perftest's "
    "columns (t_min[usec]..., BW peak[...])"
)


def looks_like(text: str) -> bool:
    """True for a perftest table header (``#bytes #iterations`` with perftest's columns)."""
    for line in text.splitlines():
        s = line.strip()
        # "#iterations", where IMB's header says "#repetitions"
        if _is_column_header(s) and "#iterations" in s and ("t_" in s or "BW " in s):
            return True
    return False


@dataclass
class _Reader:
    """One pass over the lines: the tables, and the command line seen since the last one."""

    source: str
    n_lines: int
    cut_last_line: bool
    tables: list[_Table] = field(default_factory=list)
    table: _Table | None = None
    command: tuple[int, str, bool] | None = None  # (line, benchmark, bidirectional)
    warnings: list[str] = field(default_factory=list)
    cpu_freq_lines: int = 0
    truncated_row: bool = False

    def feed(self, lineno: int, raw: str) -> bool:
        """Read one line; False when the output ends here (a row cut short)."""
        stripped = raw.strip()
        if not stripped:
            return True
        title = _title(raw)
        if title:
            self._start(lineno, _benchmark(title["verb"] or "", title["kind"] or ""), title)
            return True
        t = self.table
        if _is_column_header(stripped) and (t is None or (t.columns and t.closed)):
            t = self._untitled(lineno)
        if t is None or t.closed:
            self._command_line(lineno, stripped)
            return True
        if not t.columns:
            self._settings(t, lineno, raw, stripped)
            return True
        return self._table_line(t, lineno, raw, stripped)

    def _start(self, lineno: int, benchmark: str, title: dict[str, str | None]) -> None:
        kind = title["kind"] or ""
        self.table = _Table(benchmark, kind, lineno, bidirectional=bool(title["bidir"]))
        self.tables.append(self.table)
        self.command = None

    def _command_line(self, lineno: int, stripped: str) -> None:
        if m := _COMMAND.search(stripped):
            self.command = (lineno, m["bench"], bool(_BIDIR_FLAG.search(stripped)))

    def _untitled(self, lineno: int) -> _Table:
        """A column header with no title before it: the test named by the command line."""
        if self.command is None:
            after = " after the closed table" if self.table is not None else ""
            raise ParseError(
                f"perftest result header{after} without the test title before it ('Send "
                "Latency Test', 'RDMA_Write BW Test'...) nor a command line naming the test "
                "(ib_send_lat ...): cannot tell which test measured these rows",
                source=self.source,
                line=lineno,
            )
        at, bench, bidir = self.command
        kind = "Latency" if bench.endswith("_lat") else "BW"
        self._start(at, bench, {"kind": kind, "bidir": "Bidirectional" if bidir else None})
        self.warnings.append(
            f"{self.source}:{lineno}: no test title before this header: the test "
            f"({bench}) is taken from the command line at line {at}"
        )
        assert self.table is not None
        return self.table

    def _settings(self, t: _Table, lineno: int, raw: str, stripped: str) -> None:
        if _is_column_header(stripped):
            t.columns, t.bw_factor = _parse_header(raw, source=self.source, line=lineno)
            kind_ok = ("bw_avg" in t.columns) == (t.kind == "BW")
            if not kind_ok or "size" not in t.columns:
                raise ParseError(
                    f"the columns do not fit a {t.kind} test ({t.benchmark})",
                    source=self.source,
                    line=lineno,
                )
        elif not _DASHES.match(raw) and not stripped.startswith(
            ("local address", "remote address", "GID")
        ):
            for m in _SETTING.finditer(raw):
                t.settings.setdefault(m["key"].strip(), m["val"])

    def _table_line(self, t: _Table, lineno: int, raw: str, stripped: str) -> bool:
        if _DASHES.match(raw):
            t.closed = True
        elif _CPU_FREQ.match(raw):
            self.cpu_freq_lines += 1
        elif _is_column_header(stripped) and not t.rows:
            pass  # the same header printed twice (server and client on one terminal)
        elif stripped[0].isdigit():
            tokens = table_row(
                stripped,
                n_columns=len(t.columns),
                table=t.benchmark,
                garbage=t.garbage,
                cut_last=self.cut_last_line and lineno == self.n_lines,
                source=self.source,
                line=lineno,
            )
            if tokens is None:
                self.truncated_row = True
                return False
            t.rows.append(rate_row(tokens, t.columns, source=self.source, line=lineno))
            t.row_lines.append(lineno)
        elif t.rows and t.garbage is None:
            t.garbage = (lineno, stripped)
        return True


def _finish_tables(tables: list[_Table], source: str, warnings: list[str]) -> None:
    """Rows swept (repeats, gaps), runs of one test numbered, duration mode said."""
    for t in tables:
        if t.rows and "size" in t.rows[0]:
            rows = [(n, int(r["size"]), r) for n, r in zip(t.row_lines, t.rows, strict=True)]
            kept, dup_gap = sweep_rows(rows, table=t.benchmark, source=source)
            t.rows, t.row_lines = [r for _, _, r in kept], [n for n, _, _ in kept]
            warnings.extend(dup_gap)
        if t.kind == "Latency" and "tps" in t.columns and "t_typical" not in t.columns:
            warnings.append(
                f"{source}:{t.line}: {t.benchmark} in duration mode (-D) prints no t_typical: "
                "its value is t_avg, the mean"
            )
    for key in {(t.benchmark, t.bidirectional) for t in tables if t.rows}:
        same = [t for t in tables if (t.benchmark, t.bidirectional) == key and t.rows]
        if len(same) > 1:
            for n, t in enumerate(same, start=1):
                t.run = n


def _completeness(
    tables: list[_Table], truncated_row: bool, source: str, warnings: list[str]
) -> tuple[bool, list[str]]:
    complete = not truncated_row
    missing: list[str] = []
    for t in tables:
        ended = t.closed or (t.rows and int(t.rows[-1]["size"]) >= ALL_MAX_SIZE)
        if t.columns and t.rows and ended and not (truncated_row and t is tables[-1]):
            continue
        if not t.columns and not t.rows and t is not tables[-1]:
            # a title and settings but no table: the test failed or a server waited in vain
            warnings.append(f"{source}:{t.line}: {t.benchmark} printed no result table")
            continue
        complete = False
        after = f" after size {int(t.rows[-1]['size'])}" if t.rows else ""
        missing.append(
            f"{t.benchmark} (line {t.line}): rows{after} and the closing line "
            "(output ends inside the table)"
        )
    return complete, missing


@checked
def parse(text: str, source: str = "<text>") -> ParseResult:
    """Read perftest output into samples (see the module docstring)."""
    lines, cut_last_line = tool_lines(
        text, tool="perftest", looks_like=looks_like, expected=_EXPECTED, source=source
    )
    r = _Reader(source=source, n_lines=len(lines), cut_last_line=cut_last_line)
    for lineno, raw in enumerate(lines, start=1):
        if not r.feed(lineno, raw):
            break
    warnings = r.warnings
    _finish_tables(r.tables, source, warnings)
    complete, missing = _completeness(r.tables, r.truncated_row, source, warnings)
    if r.cpu_freq_lines:
        warnings.append(
            f"{source}: perftest warned {r.cpu_freq_lines} time(s) 'Conflicting CPU frequency "
            "values detected' (CPU frequency not at max: results may be noisy)"
        )
    samples: list[Sample] = []
    for t in r.tables:
        samples.extend(_table_samples(t))
    if not samples and complete:
        raise ParseError("perftest output without any result row", source=source)
    meta: dict[str, Any] = {
        "tool": "perftest",
        "benchmarks": [t.benchmark for t in r.tables],
        "settings": [t.settings for t in r.tables],
    }
    return ParseResult(
        tool="perftest",
        samples=samples,
        meta=meta,
        complete=complete,
        missing=missing,
        warnings=warnings,
    )
