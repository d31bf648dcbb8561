"""HPC Challenge (HPCC) ``hpccoutf.txt``: the Summary section's key=value block, checked
against the body's validation lines.

Units, from HPCC 1.5's source (github.com/icl-utk-edu/hpcc):

* ``HPL_Tflops``: ``src/io.c`` prints ``HPLrdata.Gflops * 1e-3``; HPL's Gflops are 1e9 flop/s
  (see ``hpl.py``), so Tflops are 1e12 flop/s.
* ``*STREAM_*`` (GB/s): ``STREAM/stream.c`` computes ``1e-9 * bytes * VectorSize / mintime``,
  i.e. 1e9 B/s -- not GiB, and not McCalpin's MB/s.
* ``PTRANS_GBs``: ``PTRANS/pdtransdriver.c`` computes ``1e-9 / wtime * m * n * sizeof(double)``.
* ``*_GUPs``: billions (1e9) of updates per second, as the RandomAccess section says
  ("Billion(10^9) Updates per second [GUP/s]").
* ``*DGEMM_Gflops``, ``*FFT_Gflops``: 1e9 flop/s (``DGEMM/tstdgemm.c``: ``2e-9 n^3 / t``;
  ``FFT/tstfft.c``: ``1e-9 * 5 n log2(n) / t``).
* ``*_usec`` and ``*_GBytes`` (``src/bench_lat_bw_1.5.2.c``): ``latency * 1e6 /* usec */`` and
  ``bandwidth * 1e-9 /* GB/s */`` from seconds and byte/s; latency is measured with 8-byte
  messages, bandwidth with 2,000,000-byte ones.

Star tests run on every process at once and HPCC reports their *average* per process
(``STREAM/onecpu.c``, ``DGEMM/onecpu.c``: ``MPI_Reduce(..., MPI_SUM)`` then ``/= commSize``);
Single tests run on one randomly chosen process; MPI tests (and PTRANS, HPL) are global.

HPCC initialises every result to -1 (``src/io.c``, ``HPCC_Init``) and prints -1 for a test that
did not run (the latency/bandwidth test needs two processes); a field no test wrote prints as
whatever the memory held, typically a denormal (``SingleRandomAccess_LCG_GUPs=2.36541e-310``,
``HPL_Tflops=4.94066e-324``); a failed residual prints ``nan``. None of them is a sample: each
run says in a warning which values it did not store, and why.

hpcc appends to ``hpccoutf.txt``: a file holds every run since it was created, restarts and
aborted starts included, each from its banner. Every run is read and kept apart by a ``run``
param (1 for the first in the file); an aborted start is said in a warning.

Validation. ``Success=0`` (``Failure`` in ``HPCC_Params``) means *some* test failed its check:
an HPL or PTRANS residual, a STREAM validation, a DGEMM or FFT residual, RandomAccess errors.
Only rank 0 writes the file, so the body shows the checks of rank 0 alone (and none at all
for a Single test that ran elsewhere). A rate is returned only when its section's check is
visible and passed, or when HPCC says everything passed (``Success=1``):

* a section whose visible check failed: its rates go to ``meta["failed"]``, with a warning;
* ``Success=0`` and a section whose check cannot be seen for every process: the same;
* HPL: every test in the HPL section is read with ``hpl.py`` -- one ``compute.hpl`` sample per
  test that PASSED. ``HPL_Tflops`` is only HPCC's best test (``HPL_pddriver.c`` keeps the
  highest Gflops whether or not it passed), so it is used only when the body has no HPL test.
"""

from __future__ import annotations

import itertools
import math
import re
import sys
from dataclasses import dataclass, field
from typing import Any

from assay.errors import ParseError
from assay.model import Sample, Stats
from assay.parsers import hpl
from assay.parsers.base import ParseResult, parse_number, require_text
from assay.parsers.numbers import checked, parse_int, to_int
from assay.units import Better

TOOL = "hpcc"

_BANNER = re.compile(r"This is the DARPA/DOE HPC Challenge Benchmark version (?P<v>\S+)")
_HOSTNAME = re.compile(r"^Hostname: '(?P<h>.*)'\s*$")
_BEGIN = re.compile(r"^Begin of (?P<name>\S+) section\.\s*$")
_END = re.compile(r"^End of (?P<name>\S+) section\.\s*$")
# the value taken whole and stripped in code: a lazy value before "\s*$" rescanned a run of
# blanks inside it from every position (8,000 blanks: 0.8 s, growing with the square)
_KEYVAL = re.compile(r"^(?P<key>[A-Za-z_][A-Za-z0-9_]*)=(?P<value>.*)$")
_NODE_ERRORS = re.compile(r"^Node\(s\) with error (?P<n>\d+)\s*$")
_NODE_SELECTED = re.compile(r"^Node selected (?P<n>\d+)\s*$")
_MINAVGMAX = re.compile(
    r"^(?P<stat>Minimum|Average|Maximum) (?:(?P<kernel>Copy|Scale|Add|Triad) )?"
    r"(?P<unit>GB/s|Gflop/s|GUP/s) (?P<v>\S+)\s*$"
)
_RA_FOUND = re.compile(r"^Found (?P<n>\d+) errors in \d+ locations \((?P<verdict>passed|failed)\)")
_DGEMM_RESID = re.compile(r"^Scaled residual: (?P<v>\S+)\s*$")
_FFT_N = re.compile(r"^Vector size:\s+(?P<n>\d+)\s*$")
_FFT_ERR = re.compile(r"^max\(\|x-x0\|\):\s+(?P<v>\S+)\s*$")
_PTRANS_ROW = re.compile(r"^(WALL|CPU)\s+.*\s(?P<check>PASSED|FAILED|BYPASS)\s")
_PTRANS_COUNT = re.compile(
    r"^\s*(?P<k>\d+) tests (?:completed and (?P<what>passed|failed) residual checks|"
    r"(?P<skip>skipped) because of illegal input values)\."
)

LATENCY_MSG_BYTES = 8  # bench_lat_bw_1.5.2.c: *msg_length_for_lat = 8
BANDWIDTH_MSG_BYTES = 2_000_000  # bench_lat_bw_1.5.2.c: *msg_length_for_bw = 2000000


@dataclass(frozen=True)
class _Key:
    """How one Summary key becomes a sample."""

    key: str
    metric: str
    scale: float  # to canonical SI
    section: str  # the body section whose check covers it
    params: tuple[tuple[str, Any], ...] = ()
    extra: tuple[tuple[str, str], ...] = ()  # param name <- other Summary key
    unit: str | None = None  # when the metric's family default is not right
    better: Better | None = None
    stats_from: str | None = None  # Min/Avg/Max label in a Star section ("Copy", "" ...)


_STAR = (("variant", "star"), ("per", "process"))
_SINGLE = (("variant", "single"),)
_MPI = (("variant", "mpi"),)
_STREAM_X = (("elements", "STREAM_VectorSize"), ("threads", "STREAM_Threads"))
_PTRANS_X = (
    ("N", "PTRANS_n"),
    ("NB", "PTRANS_nb"),
    ("P", "PTRANS_nprow"),
    ("Q", "PTRANS_npcol"),
    ("time_s", "PTRANS_time"),
)
_POLY, _LCG = (("generator", "poly"),), (("generator", "lcg"),)
_LAT = (("pattern", "pingpong"), ("size", LATENCY_MSG_BYTES))
_BW = (("pattern", "pingpong"), ("size", BANDWIDTH_MSG_BYTES))
_RING_LAT = (("size", LATENCY_MSG_BYTES),)
_RING_BW = (("per", "process"), ("size", BANDWIDTH_MSG_BYTES))
_K = _Key

# Every Summary key that is a rate, and how it becomes a sample (a table, read top to bottom).
KEYS: list[_Key] = [
    _K("StarSTREAM_Copy", "memory.copy", 1e9, "StarSTREAM", _STAR, _STREAM_X, stats_from="Copy"),
    _K("SingleSTREAM_Copy", "memory.copy", 1e9, "SingleSTREAM", _SINGLE, _STREAM_X),
    _K("StarSTREAM_Scale", "memory.scale", 1e9, "StarSTREAM", _STAR, _STREAM_X, stats_from="Scale"),
    _K("SingleSTREAM_Scale", "memory.scale", 1e9, "SingleSTREAM", _SINGLE, _STREAM_X),
    _K("StarSTREAM_Add", "memory.add", 1e9, "StarSTREAM", _STAR, _STREAM_X, stats_from="Add"),
    _K("SingleSTREAM_Add", "memory.add", 1e9, "SingleSTREAM", _SINGLE, _STREAM_X),
    _K("StarSTREAM_Triad", "memory.triad", 1e9, "StarSTREAM", _STAR, _STREAM_X, stats_from="Triad"),
    _K("SingleSTREAM_Triad", "memory.triad", 1e9, "SingleSTREAM", _SINGLE, _STREAM_X),
    _K(
        "StarDGEMM_Gflops",
        "compute.dgemm",
        1e9,
        "StarDGEMM",
        _STAR,
        (("n", "DGEMM_N"),),
        stats_from="",
    ),
    _K("SingleDGEMM_Gflops", "compute.dgemm", 1e9, "SingleDGEMM", _SINGLE, (("n", "DGEMM_N"),)),
    _K("PTRANS_GBs", "memory.ptrans", 1e9, "PTRANS", _MPI, _PTRANS_X),
    _K("StarFFT_Gflops", "compute.fft", 1e9, "StarFFT", _STAR, (("n", "FFT_N"),), stats_from=""),
    _K("SingleFFT_Gflops", "compute.fft", 1e9, "SingleFFT", _SINGLE, (("n", "FFT_N"),)),
    _K("MPIFFT_Gflops", "compute.fft", 1e9, "MPIFFT", _MPI, (("n", "MPIFFT_N"),)),
    _K(
        "MPIRandomAccess_GUPs",
        "memory.randomaccess",
        1e9,
        "MPIRandomAccess",
        _MPI + _POLY,
        (("table_words", "MPIRandomAccess_N"),),
        unit="op/s",
    ),
    _K(
        "StarRandomAccess_GUPs",
        "memory.randomaccess",
        1e9,
        "StarRandomAccess",
        _STAR + _POLY,
        (("table_words", "RandomAccess_N"),),
        unit="op/s",
        stats_from="",
    ),
    _K(
        "SingleRandomAccess_GUPs",
        "memory.randomaccess",
        1e9,
        "SingleRandomAccess",
        _SINGLE + _POLY,
        (("table_words", "RandomAccess_N"),),
        unit="op/s",
    ),
    _K(
        "MPIRandomAccess_LCG_GUPs",
        "memory.randomaccess",
        1e9,
        "MPIRandomAccess_LCG",
        _MPI + _LCG,
        (("table_words", "MPIRandomAccess_LCG_N"),),
        unit="op/s",
    ),
    _K(
        "StarRandomAccess_LCG_GUPs",
        "memory.randomaccess",
        1e9,
        "StarRandomAccess_LCG",
        _STAR + _LCG,
        (("table_words", "RandomAccess_LCG_N"),),
        unit="op/s",
        stats_from="",
    ),
    _K(
        "SingleRandomAccess_LCG_GUPs",
        "memory.randomaccess",
        1e9,
        "SingleRandomAccess_LCG",
        _SINGLE + _LCG,
        (("table_words", "RandomAccess_LCG_N"),),
        unit="op/s",
    ),
    _K(
        "MinPingPongLatency_usec",
        "p2p.latency",
        1e-6,
        "LatencyBandwidth",
        (*_LAT, ("stat", "min")),
    ),
    _K(
        "MinPingPongBandwidth_GBytes",
        "p2p.bandwidth",
        1e9,
        "LatencyBandwidth",
        (*_BW, ("stat", "min")),
    ),
    _K(
        "AvgPingPongLatency_usec",
        "p2p.latency",
        1e-6,
        "LatencyBandwidth",
        (*_LAT, ("stat", "avg")),
    ),
    _K(
        "AvgPingPongBandwidth_GBytes",
        "p2p.bandwidth",
        1e9,
        "LatencyBandwidth",
        (*_BW, ("stat", "avg")),
    ),
    _K(
        "MaxPingPongLatency_usec",
        "p2p.latency",
        1e-6,
        "LatencyBandwidth",
        (*_LAT, ("stat", "max")),
    ),
    _K(
        "MaxPingPongBandwidth_GBytes",
        "p2p.bandwidth",
        1e9,
        "LatencyBandwidth",
        (*_BW, ("stat", "max")),
    ),
    _K(
        "NaturallyOrderedRingLatency_usec",
        "p2p.ring.latency",
        1e-6,
        "LatencyBandwidth",
        (("order", "natural"), *_RING_LAT),
        unit="s",
        better="lower",
    ),
    _K(
        "NaturallyOrderedRingBandwidth_GBytes",
        "p2p.ring.bandwidth",
        1e9,
        "LatencyBandwidth",
        (("order", "natural"), *_RING_BW),
        unit="B/s",
        better="higher",
    ),
    _K(
        "RandomlyOrderedRingLatency_usec",
        "p2p.ring.latency",
        1e-6,
        "LatencyBandwidth",
        (("order", "random"), *_RING_LAT),
        unit="s",
        better="lower",
    ),
    _K(
        "RandomlyOrderedRingBandwidth_GBytes",
        "p2p.ring.bandwidth",
        1e9,
        "LatencyBandwidth",
        (("order", "random"), *_RING_BW),
        unit="B/s",
        better="higher",
    ),
]


@dataclass
class _Section:
    name: str
    first_line: int  # line number of the "Begin of" line
    lines: list[str] = field(default_factory=list)
    closed: bool = False

    def text(self) -> str:
        return "\n".join(self.lines)


@dataclass
class _Summary:
    values: dict[str, str] = field(default_factory=dict)
    lines: dict[str, int] = field(default_factory=dict)

    def number(self, key: str, source: str) -> float | None:
        if key not in self.values:
            return None
        return hpl.number_or_nan(self.values[key], source=source, line=self.lines[key])


def looks_like(text: str) -> bool:
    """HPCC's output file: its banner or its Summary section."""
    return "HPC Challenge Benchmark" in text or "Begin of Summary section." in text


def _runs(text: str) -> list[tuple[list[str], int]]:
    """hpcc appends to hpccoutf.txt: each banner starts a run, (its lines, its first line).

    The "####" rule printed just before a banner belongs to that run; whatever comes before
    the first banner (a launcher's lines, a pasted block's heading) to the first run."""
    lines = text.splitlines()
    starts = [i for i, ln in enumerate(lines) if _BANNER.search(ln)]
    starts = [i - 1 if i > 0 and lines[i - 1].startswith("#") else i for i in starts]
    if len(starts) < 2:
        return [(lines, 1)]
    bounds = [0, *starts[1:], len(lines)]
    return [(lines[lo:hi], lo + 1) for lo, hi in itertools.pairwise(bounds)]


def not_computed(value: float) -> str | None:
    """Why a Summary value is no figure HPCC computed, or None when it is one.

    HPCC initialises every result to -1 (``HPCC_Init``) and prints it for a test that did not
    run; a field it never wrote at all prints as whatever the memory held, typically a denormal
    (``4.94066e-324``, ``2.36541e-310``); a failed residual prints ``nan``."""
    if math.isnan(value) or math.isinf(value):
        return "not a number"
    if value < 0:
        return "not run"
    if 0 < value < sys.float_info.min:
        return "uninitialised"
    return None


def _split(lines: list[str], first_line: int, source: str) -> tuple[list[str], dict[str, _Section]]:
    preamble: list[str] = []
    sections: dict[str, _Section] = {}
    current: _Section | None = None
    for offset, line in enumerate(lines):
        lineno = first_line + offset
        if m := _BEGIN.match(line):
            current = _Section(m["name"], lineno)
            sections[current.name] = current
            continue
        if m := _END.match(line):
            if current is None or m["name"] != current.name:
                raise ParseError(
                    f"'End of {m['name']} section.' without its beginning",
                    source=source,
                    line=lineno,
                )
            current.closed = True
            current = None
            continue
        if current is None:
            preamble.append(line)
        else:
            current.lines.append(line)
    return preamble, sections


def _read_summary(section: _Section) -> _Summary:
    summary = _Summary()
    for offset, line in enumerate(section.lines, start=1):
        if m := _KEYVAL.match(line):
            summary.values[m["key"]] = m["value"].rstrip()
            summary.lines[m["key"]] = section.first_line + offset
    return summary


def _star_stats(section: _Section | None, source: str) -> dict[str, dict[str, float]]:
    """Star sections' "Minimum/Average/Maximum <kernel> <unit> x" lines, per kernel label."""
    stats: dict[str, dict[str, float]] = {}
    if section is None:
        return stats
    for offset, line in enumerate(section.lines, start=1):
        if m := _MINAVGMAX.match(line):
            value = parse_number(m["v"], source=source, line=section.first_line + offset)
            stats.setdefault(m["kernel"] or "", {})[m["stat"]] = value
    return stats


def _check(
    name: str,
    section: _Section | None,
    *,
    procs: int | None,
    threshold: float | None,
    eps: float | None,
    source: str,
) -> tuple[str, str]:
    """("passed" | "failed" | "unknown" | "none", why) for the check a section prints."""
    if name == "LatencyBandwidth":
        return "none", "the latency/bandwidth test has no validation"
    if section is None:
        return "unknown", f"no {name} section in the output"
    root_only = name.startswith("Star") and (procs or 1) > 1
    verdict: str | None = None
    for offset, line in enumerate(section.lines, start=1):
        lineno = section.first_line + offset
        if (m := _NODE_ERRORS.match(line)) and parse_int(
            m["n"], source=source, line=lineno, what="count"
        ):
            return "failed", f"{m['n']} process(es) reported an error"
        if (
            (m := _NODE_SELECTED.match(line))
            and parse_int(m["n"], source=source, line=lineno, what="rank") != 0
            and verdict is None
        ):
            # a Single test on another rank: rank 0 printed nothing of its check (doIO)
            return "unknown", f"the check ran on rank {m['n']}, whose output HPCC does not write"
        if line.startswith("Failed Validation"):
            return "failed", line.strip()
        if line.startswith("Solution Validates"):
            verdict = "passed"
        if m := _RA_FOUND.match(line):
            if m["verdict"] == "failed":
                return "failed", line.strip()
            verdict = "passed"
        if m := _PTRANS_ROW.match(line):
            if m["check"] == "FAILED":
                return "failed", f"PTRANS residual check FAILED (line {lineno})"
            verdict = verdict or ("passed" if m["check"] == "PASSED" else None)
        if (
            (m := _PTRANS_COUNT.match(line))
            and parse_int(m["k"], source=source, line=lineno, what="count")
            and (m["what"] == "failed" or m["skip"])
        ):
            return "failed", line.strip()
        if m := _DGEMM_RESID.match(line):
            if threshold is None:
                continue
            resid = parse_number(m["v"], source=source, line=lineno)
            if not resid < threshold:
                return "failed", f"DGEMM scaled residual {resid} >= {threshold}"
            verdict = "passed"
    if name in ("StarFFT", "SingleFFT"):
        verdict = _fft_verdict(section, threshold=threshold, eps=eps, source=source) or verdict
        if verdict == "failed":
            return "failed", "FFT error max(|x-x0|) / ln(n) / eps is not below the threshold"
    if verdict == "passed" and root_only:
        return "unknown", "only rank 0's check is in the output"
    if verdict == "passed":
        return "passed", ""
    return "unknown", f"the {name} section shows no check"


def _fft_verdict(
    section: _Section, *, threshold: float | None, eps: float | None, source: str
) -> str | None:
    """FFT/tstfft.c: passed if ``maxErr / log(n) / eps < thrsh``."""
    n = err = None
    for offset, line in enumerate(section.lines, start=1):
        if m := _FFT_N.match(line):
            n = parse_int(m["n"], source=source, line=section.first_line + offset, what="FFT n")
        elif m := _FFT_ERR.match(line):
            err = parse_number(m["v"], source=source, line=section.first_line + offset)
    if n is None or err is None or threshold is None or not eps or n < 2:
        return None
    return "passed" if err / math.log(n) / eps < threshold else "failed"


def _sample(
    metric: str,
    value: float,
    params: dict[str, Any],
    stats: Stats | None = None,
    *,
    unit: str | None = None,
    better: Better | None = None,
) -> Sample:
    sample = Sample.make(TOOL, metric, value, params, stats, unit=unit)
    if better is not None:
        sample.better = better  # p2p.ring.* is not in units.METRICS; its family has no default
    return sample


def _hpl_from_summary(summary: _Summary, params: dict[str, Any], source: str) -> Sample | None:
    """The summary's HPL result (HPCC's best test), when the body has no HPL test to read."""
    tflops = summary.number("HPL_Tflops", source)
    n = summary.number("HPL_N", source)
    if tflops is None or not_computed(tflops) or not tflops or not n or not_computed(n):
        return None  # -1, 0, a denormal: HPL did not run; HPL_N=0: no problem was solved
    v = summary.values
    # HPL_pdtest.c's T/V column: "W%c%1d%c%c%1d%c%1d" of order, depth, bcast, rfact, ndiv,
    # pfact, nbmin -- the same characters HPCC stores in HPL_order, HPL_depth, ...
    parts = (
        "HPL_order",
        "HPL_depth",
        "HPL_ctop",
        "HPL_crfact",
        "HPL_nbdiv",
        "HPL_cpfact",
        "HPL_nbmin",
    )
    variant = "W" + "".join(v[k] for k in parts) if all(k in v for k in parts) else None
    out: dict[str, Any] = {
        "N": int(summary.number("HPL_N", source) or 0) or None,
        "NB": int(summary.number("HPL_NB", source) or 0) or None,
        "P": int(summary.number("HPL_nprow", source) or 0) or None,
        "Q": int(summary.number("HPL_npcol", source) or 0) or None,
        "variant": variant,
        "time_s": summary.number("HPL_time", source),
    }
    # HPL 2's scaled residual ||Ax-b||_oo / (eps * (||x||_oo * ||A||_oo + ||b||_oo) * N);
    # HPCC's HPL_XnormI is x's inf-norm (HPL_pdtest.c swaps the norms of the row vector x).
    norms = [
        summary.number(k, source)
        for k in ("HPL_RnormI", "HPL_eps", "HPL_XnormI", "HPL_AnormI", "HPL_BnormI")
    ]
    if all(x is not None for x in norms) and out["N"]:
        rnorm, eps, xnorm, anorm, bnorm = (float(x) for x in norms)  # type: ignore[arg-type]
        denom = eps * (xnorm * anorm + bnorm) * out["N"]
        out["residual"] = rnorm / denom if denom else None
    out["residual_passed"] = True  # only called when Success=1: every HPL test passed
    out.update(params)
    return _sample(
        hpl.METRIC, hpl.times(tflops, 1e12), {k: x for k, x in out.items() if x is not None}
    )


@dataclass
class _Run:
    """One HPCC run of the file while it is read: what its checks and samples need."""

    source: str
    sections: dict[str, _Section]
    summary: _Summary
    result: ParseResult = field(default_factory=lambda: ParseResult(tool=TOOL))
    common: dict[str, Any] = field(default_factory=dict)
    procs: int | None = None
    failed_run: bool = False
    threshold: float | None = None
    eps: float | None = None
    failed: list[dict[str, Any]] = field(default_factory=list)
    not_computed: list[tuple[str, str, str]] = field(default_factory=list)  # key, raw, why


@checked
def parse(text: str, source: str = "<text>") -> ParseResult:
    """Parse an ``hpccoutf.txt`` (HPCC 1.4/1.5): every run it holds, kept apart."""
    require_text(text, "HPCC output", source=source)
    if not looks_like(text):
        raise ParseError(
            "not an HPCC output file: no 'HPC Challenge Benchmark' banner and no Summary section",
            source=source,
            line=1,
        )
    runs = [(first, _parse_run(lines, first, source)) for lines, first in _runs(text)]
    result = runs[0][1] if len(runs) == 1 else _merge(runs)
    if not result.samples and not result.meta.get("failed"):
        raise ParseError(_nothing_found(runs), source=source, line=1)
    return result


def _parse_run(lines: list[str], first_line: int, source: str) -> ParseResult:
    """One run: its Summary's rates checked against its body, its HPL tests through hpl.py."""
    preamble, sections = _split(lines, first_line, source)
    summary_section = sections.get("Summary")
    run = _Run(source, sections, _read_summary(summary_section) if summary_section else _Summary())
    result = run.result
    for line in preamble:
        if m := _BANNER.search(line):
            result.meta["version"] = m["v"]
        elif m := _HOSTNAME.match(line):
            result.meta["hostname"] = m["h"]
    for section in sections.values():
        if not section.closed:
            result.complete = False
            result.missing.append(f"end of the {section.name} section (line {section.first_line})")
    # HPL's header (printed first by HPCC_InitHPL) gives eps and the residual threshold that
    # HPCC also applies to DGEMM, FFT and PTRANS.
    header = hpl.read_tests("\n".join(preamble), source=source)
    run.threshold, run.eps = header.threshold, header.eps
    if run.threshold is not None:
        result.meta["threshold"] = run.threshold
    if summary_section is None:
        result.complete = False
        result.missing.append("Summary section (Begin of Summary section. ... End of ...)")
    procs = run.summary.number("CommWorldProcs", source)
    if procs is not None and not not_computed(procs):
        run.procs = int(procs)
        run.common = {"procs": run.procs}
        result.meta["procs"] = run.procs
    success = run.summary.number("Success", source)
    failure = run.summary.number("Failure", source)
    run.failed_run = (success is not None and success == 0) or bool(failure)
    if success is not None or failure is not None:
        result.meta["success"] = not run.failed_run
    _hpl_part(run)
    verdicts = _summary_part(run, summary_section)
    for section, (status, why) in sorted(verdicts.items()):
        if status == "failed":
            result.warnings.append(f"{section}: check failed ({why}); its rates are not reported")
        elif status == "unknown" and run.failed_run:
            result.warnings.append(f"{section}: not reported, HPCC reports Success=0 and {why}")
    if run.failed:
        result.meta["failed"] = run.failed
    if run.not_computed:
        result.meta["not_measured"] = [key for key, _, _ in run.not_computed]
        result.warnings.append(_not_computed_warning(run.not_computed))
    return result


def _hpl_part(run: _Run) -> None:
    """HPL: every test of the body through hpl.py, else the Summary's HPL_Tflops."""
    result, summary, source = run.result, run.summary, run.source
    hpl_section = run.sections.get("HPL")
    tests = hpl.HplOutput()
    if hpl_section is not None:
        tests = hpl.read_tests(
            hpl_section.text(), source=source, first_line=hpl_section.first_line + 1
        )
    if tests.tests:
        hpl_result = hpl.build_result(tests, source=source, probe=TOOL)
        for s in hpl_result.samples:
            s.params.update(run.common)
        result.samples += hpl_result.samples
        result.warnings += hpl_result.warnings
        result.missing += hpl_result.missing
        result.complete = result.complete and hpl_result.complete
        run.failed += [{"section": "HPL", **rec} for rec in hpl_result.meta.get("failed", [])]
        run.failed += [
            {"section": "HPL", "unchecked": True, **rec}
            for rec in hpl_result.meta.get("unchecked", [])
        ]
        if "summary" in hpl_result.meta:
            result.meta["hpl_summary"] = hpl_result.meta["summary"]
        _compare_best(summary, tests, result, source)
        return
    if not summary.values or (tflops := summary.number("HPL_Tflops", source)) is None:
        return
    if why := not_computed(tflops) or (not tflops and "not run"):
        run.not_computed.append(("HPL_Tflops", summary.values["HPL_Tflops"], why))
    elif run.failed_run:
        reason = "Success=0 and no HPL test in the output to check"
        run.failed.append({"section": "HPL", "key": "HPL_Tflops", "reason": reason})
        result.warnings.append(
            "HPL_Tflops not reported: HPCC reports a failed check "
            "and the output shows no HPL test to clear it"
        )
    elif (sample := _hpl_from_summary(summary, run.common, source)) is not None:
        result.samples.append(sample)
    else:
        n = summary.values.get("HPL_N", "absent")
        run.not_computed.append(("HPL_Tflops", summary.values["HPL_Tflops"], f"HPL_N={n}"))


def _summary_part(run: _Run, summary_section: _Section | None) -> dict[str, tuple[str, str]]:
    """Every rate of the Summary that HPCC computed and whose check passed, as a sample."""
    result, summary, source = run.result, run.summary, run.source
    verdicts: dict[str, tuple[str, str]] = {}
    for key in KEYS:
        value = summary.number(key.key, source)
        if value is None:
            if summary_section is not None and not summary_section.closed:
                result.missing.append(f"Summary key {key.key}")
            continue
        if why := not_computed(value):
            run.not_computed.append((key.key, summary.values[key.key], why))
            continue
        if (why_not := _not_a_rate(key, value, summary, source)) is not None:
            # a failed test is a failed figure with its reason, never a rate of zero
            run.not_computed.append((key.key, summary.values[key.key], "did not complete"))
            run.failed.append(
                {"section": key.section, "key": key.key, "value": value, "reason": why_not}
            )
            result.warnings.append(f"{key.key} not reported: {why_not}")
            continue
        if key.section not in verdicts:
            verdicts[key.section] = _check(
                key.section,
                run.sections.get(key.section),
                procs=run.procs,
                threshold=run.threshold,
                eps=run.eps,
                source=source,
            )
        status, why = verdicts[key.section]
        if status == "failed" or (status == "unknown" and run.failed_run):
            reason = why if status == "failed" else f"HPCC reports Success=0 and {why}"
            run.failed.append(
                {"section": key.section, "key": key.key, "value": value, "reason": reason}
            )
            continue
        result.samples.append(_key_sample(run, key, value))
    return verdicts


def _key_sample(run: _Run, key: _Key, value: float) -> Sample:
    """The sample of one Summary rate, with the params its other keys give."""
    summary, source = run.summary, run.source
    params: dict[str, Any] = dict(key.params)
    for name, other in key.extra:
        extra = summary.number(other, source)
        if extra is None or not_computed(extra):
            continue
        if name.endswith("_s"):  # a time; every other extra is a size or a count
            params[name] = extra
        else:
            params[name] = to_int(extra, source=source, line=summary.lines.get(other), what=other)
    params.update(run.common)
    stats = None
    if key.stats_from is not None:
        mam = _star_stats(run.sections.get(key.section), source).get(key.stats_from, {})
        if len(mam) == 3:
            stats = Stats(
                n=run.procs or 1,
                min=hpl.times(mam["Minimum"], key.scale),
                max=hpl.times(mam["Maximum"], key.scale),
                mean=hpl.times(mam["Average"], key.scale),
            )
    value = hpl.times(value, key.scale)
    return _sample(key.metric, value, params, stats, unit=key.unit, better=key.better)


def _not_computed_warning(dropped: list[tuple[str, str, str]]) -> str:
    """Which Summary values were not stored, grouped by why (-1: not run, denormal: never set)."""
    by_why: dict[str, list[str]] = {}
    for key, raw, why in dropped:
        by_why.setdefault(why, []).append(key if why == "not run" else f"{key}={raw}")
    parts = [f"{why}: {', '.join(keys)}" for why, keys in by_why.items()]
    return "Summary values HPCC did not compute, not stored (" + "; ".join(parts) + ")"


def _merge(runs: list[tuple[int, ParseResult]]) -> ParseResult:
    """Every run of an appended file, kept apart by a ``run`` param (1 for the first)."""
    result = ParseResult(tool=TOOL)
    result.warnings.append(
        f"the file holds {len(runs)} HPCC runs (hpcc appends to hpccoutf.txt); each is "
        f"kept apart as params.run 1..{len(runs)}"
    )
    result.meta["runs"] = []
    for index, (first, r) in enumerate(runs, start=1):
        tag = f"run {index} (line {first})"
        for s in r.samples:
            s.params["run"] = index
        result.samples += r.samples
        result.warnings += [f"{tag}: {w}" for w in r.warnings]
        if index == len(runs):
            result.complete, result.missing = r.complete, r.missing
        elif r.missing:
            kept = f"its {len(r.samples)} result(s) kept" if r.samples else "no result in it"
            result.warnings.append(f"{tag} stopped early ({r.missing[0]}): {kept}")
        result.meta["runs"].append({"run": index, "line": first, **r.meta})
        result.meta.setdefault("failed", []).extend(
            {"run": index, **f} for f in r.meta.get("failed", [])
        )
        if "version" in r.meta:
            result.meta["version"] = r.meta["version"]
    if not result.meta["failed"]:
        del result.meta["failed"]
    return result


def _nothing_found(runs: list[tuple[int, ParseResult]]) -> str:
    """The refusal of a file without one result: what it holds and what is missing."""
    first, last = runs[-1]
    found = f"{len(runs)} HPCC run(s) (the last from line {first})"
    if last.missing:
        return (
            f"no HPCC result: the file holds {found}, which stopped before any result "
            f"(missing: {'; '.join(last.missing[:2])})"
        )
    return (
        f"no HPCC result: the file holds {found}; its Summary section holds no value HPCC "
        "computed (every rate -1 or never set) and the body no HPL test line"
    )


def _not_a_rate(key: _Key, value: float, summary: _Summary, source: str) -> str | None:
    """Why a Summary rate that is not -1 is still no measurement, or None when it is one.

    HPCC computes a rate from a time it initialised to -1 (``HPCC_Init``); when the test
    stops early the time stays -1 and the rate comes out 0 (PTRANS: ``PTRANS_time=-1``,
    ``PTRANS_GBs=0``). A time of -1 or 0 beside the rate, or a rate of exactly 0, means
    the test did not complete: no measured rate is zero."""
    for name, other in key.extra:
        if name != "time_s":
            continue
        t = summary.number(other, source)
        if t is not None and t <= 0:
            return f"{other}={t:g}: the {key.section} test did not complete"
    if value == 0:
        return f"{key.key}=0: the {key.section} test did not complete (no measured rate is 0)"
    return None


def _compare_best(
    summary: _Summary, tests: hpl.HplOutput, result: ParseResult, source: str
) -> None:
    """HPL_Tflops is HPCC's best test, passed or not: say so when the best one failed."""
    tflops = summary.number("HPL_Tflops", source)
    if tflops is None or tflops < 0 or not tests.tests:
        return
    best = max(tests.tests, key=lambda t: t.gflops)
    result.meta["hpl_best"] = {**best.record(), "passed": best.passed}
    # the body prints Gflops with 4 significant digits, the summary with %g (6)
    if abs(best.gflops - tflops * 1e3) > 1e-3 * max(best.gflops, tflops * 1e3):
        result.warnings.append(
            f"HPL_Tflops={tflops} does not match the best HPL test in the output "
            f"({best.gflops} Gflops, line {best.line})"
        )
    elif not best.passed:
        result.warnings.append(
            f"HPL_Tflops={tflops} is HPCC's best test, which FAILED its residual check "
            f"(line {best.line}); only tests that passed are reported"
        )
