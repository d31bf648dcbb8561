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
END = struct.Struct("<IIII")
# a retest's records, with the round each came from
RETEST = np.dtype([("round", "<u4"), *[(k, RECORD[k]) for k in RECORD.names]])  # type: ignore[misc]
assert ROUND_HEAD.itemsize == 40 and RECORD.itemsize == 12


def n_links(n: int) -> int:
    return n * (n - 1) // 2


def link_index(n: int, i: np.ndarray | int, j: np.ndarray | int) -> np.ndarray:
    """Condensed index of the link i-j (i < j; arrays or ints), as int64."""
    i = np.asarray(i, dtype=np.int64)
    j = np.asarray(j, dtype=np.int64)
    return n * i - i * (i + 1) // 2 + (j - i - 1)


def node_links(values: np.ndarray, n: int, i: int) -> np.ndarray:
    """Node i's N-1 links (to 0..i-1, then i+1..N-1) from a condensed matrix: a copy."""
    before = np.arange(i, dtype=np.int64)
    k_before = link_index(n, before, i)
    start = int(link_index(n, i, i + 1)) if i < n - 1 else 0
    return np.concatenate([values[k_before], values[start : start + n - 1 - i]])


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
    """("round", (head, records)), ("end", (rounds, pairs, flags)), or ("stop", why) last."""
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
        head = np.frombuffer(buf, ROUND_HEAD, 1, pos)[0]
        count = int(head["count"])
        start = pos + ROUND_HEAD.itemsize
        if start + count * RECORD.itemsize > size:
            yield "stop", f"round {int(head['round'])} is cut short"
            return
        records = np.frombuffer(buf, RECORD, count, start)
        if count and (np.any(records["a"] >= records["b"]) or int(records["b"].max()) >= n):
            yield "stop", f"round {int(head['round'])} names a pair outside the {n} nodes (damaged)"
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
    lat = np.full(n_links(n), np.nan, np.float32)
    bw = np.full(n_links(n), np.nan, np.float32)
    rounds: list[Round] = []
    retests: list[np.ndarray] = []
    failed: list[np.ndarray] = []
    complete, timed_out, stop = False, False, ""
    for what, body in _blocks(buf, header_len, n):
        if what == "stop":
            stop = str(body)
            break
        if what == "end":
            complete = True
            timed_out = bool(body[3] & FLAG_TIMED_OUT)  # type: ignore[index]
            continue
        head, rec = body  # type: ignore[misc]
        kind = int(head["kind"])
        rounds.append(
            Round(int(head["round"]), KINDS[kind] if kind < len(KINDS) else str(kind),
                  len(rec), int(head["lat_iters"]), int(head["bw_iters"]),
                  float(head["t_start"]), float(head["wall_s"]))
        )  # fmt: skip
        lat_v, bw_v = rec["latency"], rec["bandwidth"]
        bad = np.isnan(lat_v) & np.isnan(bw_v)
        if bad.any():
            failed.append(np.stack([rec["a"][bad], rec["b"][bad]], axis=1).astype(np.int64))
        if kind == 1:
            out = np.zeros(len(rec), RETEST)
            out["round"] = head["round"]
            for name in RECORD.names or ():
                out[name] = rec[name]
            retests.append(out)
            continue
        k = link_index(n, rec["a"], rec["b"])
        ok = ~np.isnan(lat_v)
        lat[k[ok]] = lat_v[ok]
        ok = ~np.isnan(bw_v)
        bw[k[ok]] = bw_v[ok]
    note = ""
    if stop:
        last = f"round {rounds[-1].number}" if rounds else "no round"
        note = f"{path.name} was cut short: {stop}; {len(rounds)} whole rounds kept (to {last})"
    if timed_out:
        note = (note + "; " if note else "") + "a rank stopped answering (the job was ended)"
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


# ---- writing --------------------------------------------------------------------------------


def tournament_round(n: int, r: int) -> tuple[np.ndarray, np.ndarray]:
    """Round r (0-based) of the circle method as (a, b) arrays, a < b, sorted by a: the pairs
    of ``assay.launch.tournament.rounds(n)[r]`` (and of the probe's), without a Python object
    per pair."""
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
