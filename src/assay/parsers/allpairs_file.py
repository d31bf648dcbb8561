"""The all-pairs matrix file (``allpairs.bin``, written by native/allpairs.c): its one reader,
into condensed link arrays, and its one writer (tests, synthetic matrices, benchmarks).

In memory a matrix is the upper triangle of N nodes, condensed as scipy's ``squareform``
(``assay.condensed``): a 1-D float32 array of N(N-1)/2 links, NaN where a link was not measured.
Latency in seconds (half the round trip), bandwidth in bytes/s. 10,000 nodes: 5e7 links, 200 MB
a metric; nothing here makes a Python object per link, and a caller that needs one metric
(the report analyses one at a time) reads only that one.

On disk, little-endian (docs/cluster.md, "The all-pairs file"):

    header   "ASSAYAP1", u32 header_len, u32 n_nodes, u32 lat_size, u32 bw_size,
             u32 bw_window, f32 pair_budget_s, n x (u16 len, host name), zero padding to
             header_len (a multiple of 8)
    rounds   u32 "RUND", u32 round, u32 kind (0 sweep, 1 retest, 2 resume), u32 count,
             u32 lat_iters, u32 bw_iters, f64 t_start, f64 wall_s,
             count x (u16 a, u16 b, f32 latency_s, f32 bandwidth_Bps)        a < b, NaN: failed
    end      u32 "END!", u32 rounds, u32 pairs, u32 flags (bit 0: a rank stopped answering)

Rounds are appended as they end, so a job that died leaves a file without its end block, maybe
with a last block cut in the middle: the reader keeps every whole round and says where the
file stops (``MatrixFile.note``). The file is read a round block at a time (never mapped or
held whole: a 600 MB file costs the matrices and a batch of records, not its size again).
Parsing is a pure function of the bytes; the only side effect is reading (or, for the writer,
writing) the one file named.
"""

from __future__ import annotations

import mmap
import os
import struct
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

import numpy as np

from assay.condensed import link_index, n_links, row_medians, rows_of
from assay.errors import ProbeError
from assay.inputfile import UnreadableFile, open_regular
from assay.parsers.numbers import _UNIT_MAX

MAGIC = b"ASSAYAP1"
ROUND_MARK = 0x444E5552  # "RUND" little-endian
END_MARK = 0x21444E45  # "END!"
FLAG_TIMED_OUT = 1
KINDS = ("sweep", "retest", "resume")
METRICS = ("p2p.latency", "p2p.bandwidth")
COLUMN = {"p2p.latency": "latency", "p2p.bandwidth": "bandwidth"}  # metric -> record field

HEAD = struct.Struct("<8sIIIIIf")  # 32 bytes, host names follow
ROUND_HEAD = np.dtype(
    [("marker", "<u4"), ("round", "<u4"), ("kind", "<u4"), ("count", "<u4"),
     ("lat_iters", "<u4"), ("bw_iters", "<u4"), ("t_start", "<f8"), ("wall_s", "<f8")]
)  # fmt: skip
RECORD = np.dtype([("a", "<u2"), ("b", "<u2"), ("latency", "<f4"), ("bandwidth", "<f4")])
ROUND_STRUCT = struct.Struct("<IIIIIIdd")  # ROUND_HEAD, for one block's heading
END = struct.Struct("<IIII")
# a retest's records, with the round each came from
RETEST = np.dtype([("round", "<u4"), *[(k, RECORD[k]) for k in RECORD.names]])  # type: ignore[misc]
assert ROUND_HEAD.itemsize == ROUND_STRUCT.size == 40 and RECORD.itemsize == 12


def nan_array(size: int) -> np.ndarray:
    """float32 NaNs. From an anonymous mapping populated in one call: on a virtual machine
    page faults dominate filling fresh memory (200 MB here: 1.4 s by np.full, 0.3 s so)."""
    flags = mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | getattr(mmap, "MAP_POPULATE", 0)
    out = np.frombuffer(mmap.mmap(-1, max(4 * size, 1), flags=flags), np.float32, size)
    out.fill(np.nan)
    return out


@dataclass(frozen=True)
class NodeStats:
    """Per node (index = node), over its measured links: jsonl.h's conventions (median of the
    two middle values for an even count, sample standard deviation, 0 for one link)."""

    count: np.ndarray  # int64, links measured
    min: np.ndarray  # float64; NaN where count == 0
    max: np.ndarray
    mean: np.ndarray
    median: np.ndarray
    stddev: np.ndarray


ROW_BLOCK_LINKS = 1 << 21  # links gathered at once (rows x N): ~50 MB of temporaries


def node_stats(values: np.ndarray, n: int) -> NodeStats:
    """Each node's figures over its N-1 links, a block of nodes at a time (numpy across the
    block: no Python step per link, nor per node); the median is ``assay.condensed``'s, the
    one the report's node medians use."""
    out = {f: np.full(n, np.nan) for f in ("min", "max", "mean", "median", "stddev")}
    count = np.zeros(n, np.int64)
    rows = max(1, ROW_BLOCK_LINKS // max(n, 1))
    for start in range(0, n, rows):
        block = rows_of(values, n, np.arange(start, min(n, start + rows), dtype=np.int64))
        got = slice(start, start + block.shape[0])
        out["median"][got], c = row_medians(block)
        count[got] = c
        finite = ~np.isnan(block)
        has = c > 0
        mean = np.where(finite, block, 0).sum(axis=1, dtype=np.float64) / np.maximum(c, 1)
        dev = np.where(finite, block - mean[:, None], 0)
        ss = np.square(dev, dtype=np.float64).sum(axis=1)
        out["min"][got] = np.where(has, np.where(finite, block, np.inf).min(axis=1), np.nan)
        out["max"][got] = np.where(has, np.where(finite, block, -np.inf).max(axis=1), np.nan)
        out["mean"][got] = np.where(has, mean, np.nan)
        stddev = np.where(c > 1, np.sqrt(ss / np.maximum(c - 1, 1)), 0.0)
        out["stddev"][got] = np.where(has, stddev, np.nan)
    return NodeStats(count=count, **out)


@dataclass(frozen=True)
class Round:
    number: int
    kind: str  # "sweep" | "retest" | "resume"
    count: int  # pairs in the block
    lat_iterations: int
    bw_iterations: int
    t_start: float  # s since the job's first barrier
    wall_s: float


@dataclass
class MatrixFile:
    """What one file holds. ``values``: per metric read, each link's figure from the sweep and
    resume rounds (a link's last finite figure; condensed float32, NaN = not measured);
    ``retests``: the retest rounds' records, apart (they confirm or not)."""

    path: Path
    hosts: list[str]  # index = node = MPI rank
    lat_size: int
    bw_size: int
    window: int
    pair_budget_s: float
    values: dict[str, np.ndarray]  # metric -> condensed links (the metrics read)
    rounds: list[Round] = field(default_factory=list)
    retests: np.ndarray = field(default_factory=lambda: np.zeros(0, RETEST))
    failed: np.ndarray = field(default_factory=lambda: np.zeros((0, 2), np.int64))  # (a, b) rows
    # condensed indices of the links a sweep or resume record measured below the latency the
    # reader was given (``latency_below``): found in the records, whichever metrics were read
    below: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    complete: bool = False  # the end block was read
    timed_out: bool = False  # the end block says a rank stopped answering
    note: str = ""  # "" when complete and whole; else where and why the file stops

    @property
    def n(self) -> int:
        return len(self.hosts)

    @property
    def pairs(self) -> int:
        return sum(r.count for r in self.rounds)

    @property
    def latency(self) -> np.ndarray:
        return self.column("p2p.latency")

    @property
    def bandwidth(self) -> np.ndarray:
        return self.column("p2p.bandwidth")

    def column(self, metric: str) -> np.ndarray:
        if metric not in self.values:
            raise KeyError(f"{metric} was not read from {self.path} (read: {list(self.values)})")
        return self.values[metric]

    def size(self, metric: str) -> int:
        """The message size (bytes) of the metric's figure."""
        return self.lat_size if metric == "p2p.latency" else self.bw_size

    @property
    def concurrent(self) -> int:
        """Most pairs measured at once: the largest sweep or resume round."""
        return max((r.count for r in self.rounds if r.kind != "retest"), default=1) or 1


def _error(path: Path, what: str) -> ProbeError:
    return ProbeError(f"{path}: {what}", hint="the all-pairs probe's matrix file (allpairs.bin)")


def _header(
    f: BinaryIO, size: int, path: Path
) -> tuple[int, list[str], tuple[int, int, int, float]]:
    if size < HEAD.size:
        raise _error(path, f"{size} bytes: shorter than the header (the job wrote nothing)")
    first = f.read(HEAD.size)
    magic, header_len, n, lat_size, bw_size, window, budget = HEAD.unpack_from(first, 0)
    if magic[:6] != MAGIC[:6]:
        raise _error(path, f"not an all-pairs matrix file (starts {bytes(magic)!r})")
    if magic != MAGIC:
        raise _error(path, f"format {magic[6:].decode(errors='replace')!r}; this assay reads "
                           f"{MAGIC[6:].decode()!r}: a newer assay wrote it")  # fmt: skip
    if header_len % 8 or header_len < HEAD.size or header_len > size or n < 2:
        raise _error(path, f"damaged header (length {header_len}, {n} nodes, file {size} B)")
    buf = first + f.read(header_len - HEAD.size)
    hosts, pos = [], HEAD.size
    for i in range(n):  # one per node, not per link
        if pos + 2 > header_len:
            raise _error(path, f"damaged header: host name {i} of {n} runs past it")
        (length,) = struct.unpack_from("<H", buf, pos)
        if pos + 2 + length > header_len:
            raise _error(path, f"damaged header: host name {i} of {n} runs past it")
        hosts.append(buf[pos + 2 : pos + 2 + length].decode(errors="replace"))
        pos += 2 + length
    return header_len, hosts, (lat_size, bw_size, window, float(budget))


def _blocks(f: BinaryIO, pos: int, size: int, n: int) -> Iterator[tuple[str, object]]:
    """("round", (head tuple, records)), ("end", (rounds, pairs, flags)), or ("stop", why)
    last; ``f`` is at ``pos``, the first block, and ``size`` is the file's."""
    while True:
        if pos == size:
            yield "stop", "it ends without its end block (the job did not finish)"
            return
        if pos + 4 > size:
            yield "stop", f"its last {size - pos} bytes are a block cut short"
            return
        head = f.read(min(ROUND_HEAD.itemsize, size - pos))
        (marker,) = struct.unpack_from("<I", head)
        if marker == END_MARK:
            if pos + END.size > size:
                yield "stop", "its end block is cut short"
                return
            yield "end", END.unpack_from(head)
            rest = size - pos - END.size
            if rest:
                yield "stop", f"{rest} bytes after its end block are not read"
            return
        if marker != ROUND_MARK:
            yield "stop", f"byte {pos} is not the start of a round (damaged)"
            return
        if len(head) < ROUND_HEAD.itemsize:
            yield "stop", "its last round's heading is cut short"
            return
        heading = ROUND_STRUCT.unpack(head)
        number, count = heading[1], heading[3]
        start = pos + ROUND_HEAD.itemsize
        if start + count * RECORD.itemsize > size:
            yield "stop", f"round {number} is cut short"
            return
        records = np.frombuffer(f.read(count * RECORD.itemsize), RECORD)
        if count and (int(records["b"].max()) >= n or bool((records["a"] >= records["b"]).any())):
            yield "stop", f"round {number} names a pair outside the {n} nodes (damaged)"
            return
        yield "round", (heading, records)
        pos = start + count * RECORD.itemsize


def read_matrix_file(
    path: Path, *, metrics: Sequence[str] = METRICS, latency_below: float | None = None
) -> MatrixFile:
    """Every whole round of the file, the ``metrics`` asked for as condensed arrays (both by
    default; one costs half the memory); ``latency_below``: also find the links whose latency
    was measured below it (``MatrixFile.below``). Raises ProbeError when the file has no
    readable header."""
    path = Path(path)
    unknown = [m for m in metrics if m not in COLUMN]
    if unknown:
        raise ValueError(f"an all-pairs file holds {', '.join(METRICS)}, not {unknown}")
    try:
        with open_regular(path, follow=False) as f:  # a link to /dev/zero or a FIFO: refused
            size = os.fstat(f.fileno()).st_size
            if size == 0:
                raise _error(path, "empty (the job wrote nothing)")
            return _read(f, size, path, list(metrics), latency_below)
    except OSError as exc:
        raise _error(path, f"cannot read: {exc.strerror or exc}") from None
    except UnreadableFile as exc:
        raise _error(path, f"cannot read: {exc.why}") from None


@dataclass
class _Folding:
    """What the sweep and resume records fold into, a round at a time: a round's pairs come
    sorted by their first node, so its writes run through the matrix in order (twice as fast
    here as the same writes in batches of many rounds)."""

    n: int
    arrays: dict[str, np.ndarray]  # record field -> condensed links
    latency_below: float | None
    failed: list[np.ndarray] = field(default_factory=list)
    below: list[np.ndarray] = field(default_factory=list)

    def add(self, rec: np.ndarray) -> None:
        """Records in file order into the matrices: a link's last finite figure stays."""
        k = link_index(self.n, rec["a"], rec["b"])
        for column, values in self.arrays.items():
            v = rec[column]
            ok = ~np.isnan(v)
            # numpy assigns repeated indices in order: the last one stays
            if ok.all():
                values[k] = v
            else:
                values[k[ok]] = v[ok]
        if self.latency_below is not None:
            hit = rec["latency"] < self.latency_below  # NaN compares False
            if hit.any():
                self.below.append(k[hit])
        self.failed.append(_failed(rec))


def _read(
    f: BinaryIO, size: int, path: Path, metrics: list[str], latency_below: float | None
) -> MatrixFile:
    header_len, hosts, (lat_size, bw_size, window, budget) = _header(f, size, path)
    n = len(hosts)
    arrays = {COLUMN[m]: nan_array(n_links(n)) for m in metrics}
    folding = _Folding(n, arrays, latency_below)
    rounds: list[Round] = []
    retests: list[np.ndarray] = []
    complete, timed_out, stop, impossible = False, False, "", 0
    for what, body in _blocks(f, header_len, size, n):
        if what == "stop":
            stop = str(body)
            break
        if what == "end":
            complete = True
            timed_out = bool(body[3] & FLAG_TIMED_OUT)  # type: ignore[index]
            continue
        (_, number, kind, count, lat_iters, bw_iters, t_start, wall_s), rec = body  # type: ignore[misc]
        rec, dropped = _possible(rec)
        impossible += dropped
        rounds.append(
            Round(number, KINDS[kind] if kind < len(KINDS) else str(kind), count, lat_iters,
                  bw_iters, t_start, wall_s)
        )  # fmt: skip
        if kind == 1:
            out = np.zeros(count, RETEST)
            out["round"] = number
            for name in RECORD.names or ():
                out[name] = rec[name]
            retests.append(out)
            folding.failed.append(_failed(rec))
            continue
        folding.add(rec)
    note = ""
    if stop:
        last = f"round {rounds[-1].number}" if rounds else "no round"
        note = f"{path.name} was cut short: {stop}; {len(rounds)} whole rounds kept (to {last})"
    if timed_out:
        note = (note + "; " if note else "") + "a rank stopped answering (the job was ended)"
    if impossible:
        note = (note + "; " if note else "") + (
            f"{impossible} impossible figures left out (a latency not above 0 or over 1e8 s, "
            "a bandwidth below 0 or over 1e17 B/s: a corrupt file)"
        )
    failed = [x for x in folding.failed if len(x)]
    return MatrixFile(
        path=path, hosts=hosts, lat_size=lat_size, bw_size=bw_size, window=window,
        pair_budget_s=budget,
        values={m: arrays[COLUMN[m]] for m in metrics},
        rounds=rounds,
        retests=np.concatenate(retests) if retests else np.zeros(0, RETEST),
        failed=np.concatenate(failed) if failed else np.zeros((0, 2), np.int64),
        below=np.unique(np.concatenate(folding.below)) if folding.below else np.zeros(0, np.int64),
        complete=complete and not stop, timed_out=timed_out, note=note,
    )  # fmt: skip


NO_PAIRS = np.zeros((0, 2), np.int64)


# The backstop every parser's figures pass (``parsers.numbers``): a latency above 0 and at most
# 1e8 s, a bandwidth of 0 to 1e17 B/s. A record outside (``+inf``, ``1e30`` s, float32's
# 3.4e38 B/s: a corrupt file) is a figure not measured, counted in the file's note (issue 28).
LIMITS = {"latency": (0.0, _UNIT_MAX["s"]), "bandwidth": (0.0, _UNIT_MAX["B/s"])}


def _possible(rec: np.ndarray) -> tuple[np.ndarray, int]:
    """``rec`` with each impossible figure made NaN (a copy, when there is one), and how many."""
    out, dropped = rec, 0
    for column, (low, high) in LIMITS.items():
        v = rec[column]
        ok = (v >= low) & (v <= high) & ((v > low) if column == "latency" else True)
        bad = ~np.isnan(v) & ~ok  # inf and NaN compare False; NaN is "not measured" already
        if bad.any():
            out = out.copy() if out is rec else out
            out[column][bad] = np.nan
            dropped += int(bad.sum())
    return out, dropped


def _failed(rec: np.ndarray) -> np.ndarray:
    """(a, b) of the records with neither figure (the pair failed)."""
    bad = np.isnan(rec["latency"]) & np.isnan(rec["bandwidth"])
    if not bad.any():
        return NO_PAIRS
    return np.stack([rec["a"][bad], rec["b"][bad]], axis=1).astype(np.int64)


# ---- writing --------------------------------------------------------------------------------


def tournament_round(n: int, r: int) -> tuple[np.ndarray, np.ndarray]:
    """Round r (0-based) of the circle method as (a, b) arrays, a < b, sorted by a: the probe's
    pairs (tests/tournament.py spells the method out), without a Python object per pair."""
    m = n + n % 2  # with the bye for odd n
    i = np.arange(m // 2, dtype=np.int64)

    def node_at(pos: np.ndarray) -> np.ndarray:
        return np.where(pos == 0, 0, 1 + (pos - 1 - r) % (m - 1))

    p, q = node_at(i), node_at(m - 1 - i)
    keep = (p < n) & (q < n)
    a, b = np.minimum(p, q)[keep], np.maximum(p, q)[keep]
    order = np.argsort(a, kind="stable")
    return a[order], b[order]


class MatrixWriter:
    """Writes a matrix file as the probe does: the header, round blocks, the end block."""

    def __init__(
        self,
        f: BinaryIO,
        hosts: list[str],
        *,
        lat_size: int = 8,
        bw_size: int = 131072,
        window: int = 64,
        pair_budget_s: float = 0.1,
    ) -> None:
        self.f, self.n, self.rounds, self.pairs = f, len(hosts), 0, 0
        names = [h.encode() for h in hosts]
        body = b"".join(struct.pack("<H", len(b)) + b for b in names)
        header_len = -(-(HEAD.size + len(body)) // 8) * 8
        head = HEAD.pack(MAGIC, header_len, len(hosts), lat_size, bw_size, window, pair_budget_s)
        f.write((head + body).ljust(header_len, b"\0"))

    def round(
        self,
        number: int,
        a: np.ndarray,
        b: np.ndarray,
        latency: np.ndarray,
        bandwidth: np.ndarray,
        *,
        kind: str = "sweep",
        lat_iterations: int = 1,
        bw_iterations: int = 1,
        t_start: float = 0.0,
        wall_s: float = 0.0,
    ) -> None:
        head = np.zeros(1, ROUND_HEAD)
        head[0] = (ROUND_MARK, number, KINDS.index(kind), len(a), lat_iterations, bw_iterations,
                   t_start, wall_s)  # fmt: skip
        rec = np.empty(len(a), RECORD)
        rec["a"], rec["b"], rec["latency"], rec["bandwidth"] = a, b, latency, bandwidth
        self.f.write(head.tobytes() + rec.tobytes())
        self.rounds += 1
        self.pairs += len(a)

    def end(self, flags: int = 0) -> None:
        self.f.write(END.pack(END_MARK, self.rounds, self.pairs, flags))


def write_sweep(
    path: Path,
    hosts: list[str],
    latency: np.ndarray,
    bandwidth: np.ndarray,
    *,
    rounds: int | None = None,
    end: bool = True,
    lat_size: int = 8,
    bw_size: int = 131072,
    window: int = 64,
    pair_budget_s: float = 0.1,
) -> None:
    """A sweep's file from two condensed matrices, round by round in tournament order (the
    first ``rounds`` of them; ``end=False`` leaves the end block off, as a job that died)."""
    n = len(hosts)
    total = n - 1 + n % 2
    with open(path, "wb") as f:
        w = MatrixWriter(f, hosts, lat_size=lat_size, bw_size=bw_size, window=window,
                         pair_budget_s=pair_budget_s)  # fmt: skip
        for r in range(total if rounds is None else min(rounds, total)):
            a, b = tournament_round(n, r)
            k = link_index(n, a, b)
            w.round(r + 1, a, b, latency[k], bandwidth[k], t_start=0.1 * r, wall_s=0.1)
        if end:
            w.end()
