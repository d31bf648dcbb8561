"""The all-pairs matrix file (``allpairs.bin``, written by native/allpairs.c): read into condensed
link matrices, and written (by tests and synthetic matrices) in the same format.

In memory a matrix is the upper triangle of N nodes, condensed as scipy's ``squareform``: a 1-D
float32 array of N(N-1)/2 links, ``k(i, j) = N*i - i*(i+1)//2 + (j - i - 1)`` for i < j, NaN
where a link was not measured. Latency in seconds (half the round trip), bandwidth in bytes/s.
10,000 nodes: 5e7 links, 200 MB a metric; nothing here makes a Python object per link.

On disk, little-endian (docs/cluster.md, "The matrix file"):

    header   "ASSAYAP1", u32 header_len, u32 n_nodes, u32 lat_size, u32 bw_size,
             u32 bw_window, f32 pair_budget_s, n x (u16 len, host name), zero padding to
             header_len (a multiple of 8)
    rounds   u32 "RUND", u32 round, u32 kind (0 sweep, 1 retest, 2 resume), u32 count,
             u32 lat_iters, u32 bw_iters, f64 t_start, f64 wall_s,
             count x (u16 a, u16 b, f32 latency_s, f32 bandwidth_Bps)        a < b, NaN: failed
    end      u32 "END!", u32 rounds, u32 pairs, u32 flags (bit 0: a rank stopped answering)

Rounds are appended as they end, so a job that died leaves a file without its end block, maybe
with a last block cut in the middle: the reader keeps every whole round and says where the
file stops (``MatrixFile.note``). Parsing here is a pure function of the bytes; the only side
effect is reading (or, for the writer, writing) the one file named.
"""

from __future__ import annotations

import mmap
import struct
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

import numpy as np

from assay.errors import ProbeError

MAGIC = b"ASSAYAP1"
ROUND_MARK = 0x444E5552  # "RUND" little-endian
END_MARK = 0x21444E45  # "END!"
FLAG_TIMED_OUT = 1
KINDS = ("sweep", "retest", "resume")
METRICS = ("p2p.latency", "p2p.bandwidth")

HEAD = struct.Struct("<8sIIIIIf")  # 32 bytes, host names follow
ROUND_HEAD = np.dtype(
    [("marker", "<u4"), ("round", "<u4"), ("kind", "<u4"), ("count", "<u4"),
     ("lat_iters", "<u4"), ("bw_iters", "<u4"), ("t_start", "<f8"), ("wall_s", "<f8")]
)  # fmt: skip
RECORD = np.dtype([("a", "<u2"), ("b", "<u2"), ("latency", "<f4"), ("bandwidth", "<f4")])
ROUND_STRUCT = struct.Struct("<IIIIIIdd")  # ROUND_HEAD, for one block's heading
END = struct.Struct("<IIII")
BATCH = 1 << 20  # records folded into the matrices at once (12 MB)
# a retest's records, with the round each came from
RETEST = np.dtype([("round", "<u4"), *[(k, RECORD[k]) for k in RECORD.names]])  # type: ignore[misc]
assert ROUND_HEAD.itemsize == ROUND_STRUCT.size == 40 and RECORD.itemsize == 12


def n_links(n: int) -> int:
    return n * (n - 1) // 2


def link_index(n: int, i: np.ndarray | int, j: np.ndarray | int) -> np.ndarray:
    """Condensed index of the link i-j (i < j; arrays or ints), as int64:
    n*i - i*(i+1)/2 + (j - i - 1), computed in place (two temporaries, not five)."""
    i = np.asarray(i, dtype=np.int64)
    k = (2 * n - 1) - i
    k *= i
    k //= 2
    k += j
    k -= i
    k -= 1
    return k


def nan_array(size: int) -> np.ndarray:
    """float32 NaNs. From an anonymous mapping populated in one call: on a virtual machine
    page faults dominate filling fresh memory (200 MB here: 1.4 s by np.full, 0.3 s so)."""
    flags = mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | getattr(mmap, "MAP_POPULATE", 0)
    out = np.frombuffer(mmap.mmap(-1, max(4 * size, 1), flags=flags), np.float32, size)
    out.fill(np.nan)
    return out


def node_links(values: np.ndarray, n: int, i: int) -> np.ndarray:
    """Node i's N-1 links (to 0..i-1, then i+1..N-1) from a condensed matrix: a copy."""
    before = np.arange(i, dtype=np.int64)
    k_before = link_index(n, before, i)
    start = int(link_index(n, i, i + 1)) if i < n - 1 else 0
    return np.concatenate([values[k_before], values[start : start + n - 1 - i]])


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
    block: no Python step per link, nor per node)."""
    out = {f: np.full(n, np.nan) for f in ("min", "max", "mean", "median", "stddev")}
    count = np.zeros(n, np.int64)
    rows = max(1, ROW_BLOCK_LINKS // max(n, 1))
    j = np.arange(n, dtype=np.int64)
    for start in range(0, n, rows):
        i = np.arange(start, min(n, start + rows), dtype=np.int64)[:, None]
        block = values[link_index(n, np.minimum(i, j), np.maximum(i, j))]
        block[i == j] = np.nan  # the diagonal's index is meaningless
        finite = ~np.isnan(block)
        c = finite.sum(axis=1)
        got = slice(start, start + len(i))
        count[got] = c
        has = c > 0
        filled = np.where(finite, block, np.inf)
        low, high = np.maximum((c - 1) // 2, 0), c // 2
        part = np.partition(filled, np.unique(np.concatenate([low, high])), axis=1)
        mid = 0.5 * (np.take_along_axis(part, low[:, None], 1)[:, 0].astype(np.float64)
                     + np.take_along_axis(part, high[:, None], 1)[:, 0])  # fmt: skip
        mean = np.where(finite, block, 0).sum(axis=1, dtype=np.float64) / np.maximum(c, 1)
        dev = np.where(finite, block - mean[:, None], 0)
        ss = np.square(dev, dtype=np.float64).sum(axis=1)
        out["min"][got] = np.where(has, filled.min(axis=1), np.nan)
        out["max"][got] = np.where(has, np.where(finite, block, -np.inf).max(axis=1), np.nan)
        out["mean"][got] = np.where(has, mean, np.nan)
        out["median"][got] = np.where(has, mid, np.nan)
        out["stddev"][got] = np.where(c > 1, np.sqrt(ss / np.maximum(c - 1, 1)), 0.0)
        out["stddev"][got] = np.where(has, out["stddev"][got], np.nan)
    return NodeStats(count=count, **out)


@dataclass
class LinkMatrix:
    """One metric over every link of N nodes (module docstring: the condensed layout)."""

    metric: str  # "p2p.latency" | "p2p.bandwidth"
    size: int  # message size of the figure, bytes
    hosts: list[str]  # index = node = MPI rank
    values: np.ndarray  # float32, N(N-1)/2, NaN = not measured
    mpi: str = ""
    mpi_label: str = ""

    @property
    def n(self) -> int:
        return len(self.hosts)

    def value(self, i: int, j: int) -> float:
        a, b = min(i, j), max(i, j)
        return float(self.values[int(link_index(self.n, a, b))])


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
    """What one file holds. ``latency``/``bandwidth``: the sweep and resume rounds (a link's
    last finite figure); ``retests``: the retest rounds' records, apart (they confirm or not)."""

    path: Path
    hosts: list[str]
    lat_size: int
    bw_size: int
    window: int
    pair_budget_s: float
    latency: LinkMatrix
    bandwidth: LinkMatrix
    rounds: list[Round] = field(default_factory=list)
    retests: np.ndarray = field(default_factory=lambda: np.zeros(0, RETEST))
    failed: np.ndarray = field(default_factory=lambda: np.zeros((0, 2), np.int64))  # (a, b) rows
    complete: bool = False  # the end block was read
    timed_out: bool = False  # the end block says a rank stopped answering
    note: str = ""  # "" when complete and whole; else where and why the file stops

    @property
    def n(self) -> int:
        return len(self.hosts)

    @property
    def pairs(self) -> int:
        return sum(r.count for r in self.rounds)


def _error(path: Path, what: str) -> ProbeError:
    return ProbeError(f"{path}: {what}", hint="the all-pairs probe's matrix file (allpairs.bin)")


def _header(buf: mmap.mmap, path: Path) -> tuple[int, list[str], tuple[int, int, int, float]]:
    if len(buf) < HEAD.size:
        raise _error(path, f"{len(buf)} bytes: shorter than the header (the job wrote nothing)")
    magic, header_len, n, lat_size, bw_size, window, budget = HEAD.unpack_from(buf, 0)
    if magic[:6] != MAGIC[:6]:
        raise _error(path, f"not an all-pairs matrix file (starts {bytes(magic)!r})")
    if magic != MAGIC:
        raise _error(path, f"format {magic[6:].decode(errors='replace')!r}; this assay reads "
                           f"{MAGIC[6:].decode()!r}: a newer assay wrote it")  # fmt: skip
    if header_len % 8 or header_len < HEAD.size or header_len > len(buf) or n < 2:
        raise _error(path, f"damaged header (length {header_len}, {n} nodes, file {len(buf)} B)")
    hosts, pos = [], HEAD.size
    for i in range(n):  # one per node, not per link
        if pos + 2 > header_len:
            raise _error(path, f"damaged header: host name {i} of {n} runs past it")
        (size,) = struct.unpack_from("<H", buf, pos)
        if pos + 2 + size > header_len:
            raise _error(path, f"damaged header: host name {i} of {n} runs past it")
        hosts.append(bytes(buf[pos + 2 : pos + 2 + size]).decode(errors="replace"))
        pos += 2 + size
    return header_len, hosts, (lat_size, bw_size, window, float(budget))


def _blocks(buf: mmap.mmap, pos: int, n: int) -> Iterator[tuple[str, object]]:
    """("round", (head tuple, records)), ("end", (rounds, pairs, flags)), or ("stop", why)
    last. A round's records are a view into ``buf``."""
    size = len(buf)
    while True:
        if pos == size:
            yield "stop", "it ends without its end block (the job did not finish)"
            return
        if pos + 4 > size:
            yield "stop", f"its last {size - pos} bytes are a block cut short"
            return
        (marker,) = struct.unpack_from("<I", buf, pos)
        if marker == END_MARK:
            if pos + END.size > size:
                yield "stop", "its end block is cut short"
                return
            yield "end", END.unpack_from(buf, pos)
            rest = size - pos - END.size
            if rest:
                yield "stop", f"{rest} bytes after its end block are not read"
            return
        if marker != ROUND_MARK:
            yield "stop", f"byte {pos} is not the start of a round (damaged)"
            return
        if pos + ROUND_HEAD.itemsize > size:
            yield "stop", "its last round's heading is cut short"
            return
        head = ROUND_STRUCT.unpack_from(buf, pos)
        number, count = head[1], head[3]
        start = pos + ROUND_HEAD.itemsize
        if start + count * RECORD.itemsize > size:
            yield "stop", f"round {number} is cut short"
            return
        records = np.frombuffer(buf, RECORD, count, start)
        if count and (int(records["b"].max()) >= n or bool((records["a"] >= records["b"]).any())):
            yield "stop", f"round {number} names a pair outside the {n} nodes (damaged)"
            return
        yield "round", (head, records)
        pos = start + count * RECORD.itemsize


def read_matrix_file(path: Path, *, mpi: str = "", mpi_label: str = "") -> MatrixFile:
    """Every whole round of the file; raises ProbeError when it has no readable header."""
    path = Path(path)
    try:
        with open(path, "rb") as f:
            size = f.seek(0, 2)
            if size == 0:
                raise _error(path, "empty (the job wrote nothing)")
            # mapped, not read: a 600 MB file costs page faults, not a second copy; _read keeps
            # no view into it once it returns (the map could not close)
            with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
                return _read(mm, path, mpi, mpi_label)
    except OSError as exc:
        raise _error(path, f"cannot read: {exc.strerror or exc}") from None


def _read(buf: mmap.mmap, path: Path, mpi: str, mpi_label: str) -> MatrixFile:
    header_len, hosts, (lat_size, bw_size, window, budget) = _header(buf, path)
    n = len(hosts)
    lat, bw = nan_array(n_links(n)), nan_array(n_links(n))
    rounds: list[Round] = []
    retests: list[np.ndarray] = []
    failed: list[np.ndarray] = []
    pending: list[np.ndarray] = []  # sweep/resume records not yet in the matrices
    waiting = 0
    complete, timed_out, stop = False, False, ""
    for what, body in _blocks(buf, header_len, n):
        if what == "stop":
            stop = str(body)
            break
        if what == "end":
            complete = True
            timed_out = bool(body[3] & FLAG_TIMED_OUT)  # type: ignore[index]
            continue
        (_, number, kind, count, lat_iters, bw_iters, t_start, wall_s), rec = body  # type: ignore[misc]
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
            failed.append(_failed(rec))
            continue
        pending.append(rec)
        waiting += count
        if waiting >= BATCH:  # a round at a time costs numpy calls, not work: batch them
            _fold(pending, n, lat, bw, failed)
            pending, waiting = [], 0
    if pending:
        _fold(pending, n, lat, bw, failed)
    note = ""
    if stop:
        last = f"round {rounds[-1].number}" if rounds else "no round"
        note = f"{path.name} was cut short: {stop}; {len(rounds)} whole rounds kept (to {last})"
    if timed_out:
        note = (note + "; " if note else "") + "a rank stopped answering (the job was ended)"
    failed = [f for f in failed if len(f)]
    return MatrixFile(
        path=path, hosts=hosts, lat_size=lat_size, bw_size=bw_size, window=window,
        pair_budget_s=budget,
        latency=LinkMatrix(METRICS[0], lat_size, hosts, lat, mpi, mpi_label),
        bandwidth=LinkMatrix(METRICS[1], bw_size, hosts, bw, mpi, mpi_label),
        rounds=rounds,
        retests=np.concatenate(retests) if retests else np.zeros(0, RETEST),
        failed=np.concatenate(failed) if failed else np.zeros((0, 2), np.int64),
        complete=complete and not stop, timed_out=timed_out, note=note,
    )  # fmt: skip


def _failed(rec: np.ndarray) -> np.ndarray:
    """(a, b) of the records with neither figure (the pair failed)."""
    bad = np.isnan(rec["latency"]) & np.isnan(rec["bandwidth"])
    return np.stack([rec["a"][bad], rec["b"][bad]], axis=1).astype(np.int64)


def _fold(pending: list[np.ndarray], n: int, lat: np.ndarray, bw: np.ndarray,
          failed: list[np.ndarray]) -> None:  # fmt: skip
    """Records in file order into the matrices: a link's last finite figure stays."""
    rec = np.concatenate(pending) if len(pending) > 1 else pending[0]
    k = link_index(n, rec["a"], rec["b"])
    for values, column in ((lat, "latency"), (bw, "bandwidth")):
        v = rec[column]
        ok = ~np.isnan(v)
        # numpy assigns repeated indices in order: the last one stays
        if ok.all():
            values[k] = v
        else:
            values[k[ok]] = v[ok]
    failed.append(_failed(rec))


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
