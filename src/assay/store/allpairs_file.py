"""``allpairs.bin``, the all-pairs probe's file, read into a link matrix (and written, for
tests and benchmarks): a stand-in for the native probe's own reader and writer, to be merged
into one module with them. The format is the probe's contract (docs/cluster.md, "The
all-pairs file"), little-endian:

    header  "ASSAYAP1", u32 header_len, u32 n_nodes, u32 lat_size, u32 bw_size,
            u32 bw_window, f32 pair_budget_s, n_nodes × (u16 len, UTF-8 host name),
            zero padding to header_len (a multiple of 8)
    rounds  u32 "RUND", u32 round, u32 kind (0 sweep, 1 retest, 2 resume), u32 count,
            u32 lat_iters, u32 bw_iters, f64 t_start, f64 wall_s,
            count × (u16 a, u16 b, f32 latency_s, f32 bandwidth_Bps)     a < b, NaN = failed
    end     u32 "END!", u32 rounds, u32 pairs, u32 flags (bit 0: a rank timed out)

A reader keeps every whole round block; a file without its end block was cut short, and the
matrix says so (naming the last whole round). One metric is read at a time (a 10,000-node
file is 600 MB of records; one metric's condensed array 200 MB).
"""

from __future__ import annotations

import math
import struct
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from assay.condensed import link_index, n_links
from assay.errors import StoreError

MAGIC = b"ASSAYAP1"
ROUND = 0x444E5552
END = 0x21444E45
KINDS = {0: "sweep", 1: "retest", 2: "resume"}
RECORD = np.dtype([("a", "<u2"), ("b", "<u2"), ("lat", "<f4"), ("bw", "<f4")])
_ROUND_HEAD = struct.Struct("<6I2d")  # marker, round, kind, count, lat_iters, bw_iters, t, wall
_END = struct.Struct("<4I")


@dataclass
class Round:
    number: int
    kind: int
    pairs: int
    lat_iters: int
    bw_iters: int
    t_start: float
    wall_s: float


@dataclass
class AllPairsFile:
    """What the file says besides its pairs: the nodes, sizes, rounds, and how it ended."""

    path: Path
    hosts: list[str]
    lat_size: int
    bw_size: int
    bw_window: int
    pair_budget_s: float
    rounds: list[Round] = field(default_factory=list)
    complete: bool = False
    timed_out: bool = False  # the end block's flag: a rank timed out
    problem: str = ""  # why the file ends where it does, when it was cut short


def _header(f, path: Path) -> AllPairsFile:
    head = f.read(32)
    if len(head) < 32 or head[:8] != MAGIC:
        raise StoreError(f"{path}: not an all-pairs file (no ASSAYAP1 header)")
    header_len, n, lat_size, bw_size, window = struct.unpack_from("<5I", head, 8)
    (budget,) = struct.unpack_from("<f", head, 28)
    rest = f.read(header_len - 32)
    if header_len < 32 or len(rest) < header_len - 32:
        raise StoreError(f"{path}: the header is cut short")
    hosts, pos = [], 0
    try:
        for _ in range(n):
            (length,) = struct.unpack_from("<H", rest, pos)
            hosts.append(rest[pos + 2 : pos + 2 + length].decode())
            pos += 2 + length
    except (struct.error, UnicodeDecodeError) as exc:
        raise StoreError(f"{path}: the header's host names cannot be read ({exc})") from None
    return AllPairsFile(path, hosts, lat_size, bw_size, window, float(budget))


def _blocks(f, info: AllPairsFile) -> Iterator[tuple[Round, np.ndarray]]:
    """Each whole round block after the header (``f`` just past it) with its records; sets
    ``info.complete`` and ``info.problem`` when the blocks end."""
    while True:
        head = f.read(_ROUND_HEAD.size)
        if len(head) >= 4 and struct.unpack_from("<I", head)[0] == END:
            tail = head + f.read(max(0, _END.size - len(head)))
            info.complete, info.timed_out = True, bool(_END.unpack_from(tail)[3] & 1)
            return
        last = f"round {info.rounds[-1].number}" if info.rounds else "no round"
        if len(head) < _ROUND_HEAD.size:
            info.problem = f"cut short after {last} (no end block)"
            return
        marker, number, kind, count, li, bi, t0, wall = _ROUND_HEAD.unpack(head)
        if marker != ROUND:
            info.problem = f"damaged after {last} (no round marker)"
            return
        data = f.read(count * RECORD.itemsize)
        if len(data) < count * RECORD.itemsize:
            info.problem = f"cut short in round {number} (kept: {last})"
            return
        rnd = Round(number, kind, count, li, bi, t0, wall)
        info.rounds.append(rnd)
        yield rnd, np.frombuffer(data, RECORD)


def read_header(path: Path) -> AllPairsFile:
    with open(path, "rb") as f:
        return _header(f, path)


@dataclass
class Column:
    """One metric of a file: each link's figure from the sweep and resume rounds (condensed,
    NaN = not measured), the retest rounds' measurements apart, and what the reader must
    know."""

    info: AllPairsFile
    values: np.ndarray  # float32, condensed
    retest_links: np.ndarray  # int64 condensed indices
    retest_values: np.ndarray  # float32
    retest_rounds: np.ndarray  # int32
    notes: list[str]
    largest_round: int  # most pairs in one round (measured at the same time)


def read_column(path: Path, metric: str) -> Column:
    """One metric (``p2p.latency`` or ``p2p.bandwidth``) of the file: a link measured twice in
    sweep or resume rounds keeps the later (said in the notes). A file cut short keeps its
    whole rounds and says so in the notes. A StoreError names a file that is not one."""
    column = "lat" if metric == "p2p.latency" else "bw"
    with open(path, "rb") as f:
        info = _header(f, path)
        n = len(info.hosts)
        values = np.full(n_links(n), np.nan, np.float32)
        retest_k, retest_v, retest_r = [], [], []
        twice = most = 0
        for rnd, records in _blocks(f, info):
            a, b = records["a"].astype(np.int64), records["b"].astype(np.int64)
            if ((a >= b) | (b >= n)).any():
                raise StoreError(
                    f"{path}: round {rnd.number} names a pair outside 0 <= a < b < {n}"
                )
            k = link_index(n, a, b)
            v = records[column]
            if rnd.kind == 1:
                retest_k.append(k)
                retest_v.append(v.copy())
                retest_r.append(np.full(k.size, rnd.number, np.int32))
                continue
            twice += int(np.count_nonzero(~np.isnan(values[k])))
            values[k] = v
            most = max(most, rnd.pairs)
    notes = []
    if not info.complete:
        notes.append(f"{path.name} was {info.problem}: the rounds measured before are kept.")
    if info.timed_out:
        notes.append("A rank timed out during the sweep (the file's end block says so).")
    if twice:
        notes.append(f"{twice} link(s) measured twice in sweep or resume rounds: the later kept.")
    cat = np.concatenate
    return Column(
        info,
        values,
        cat(retest_k) if retest_k else np.zeros(0, np.int64),
        cat(retest_v) if retest_v else np.zeros(0, np.float32),
        cat(retest_r) if retest_r else np.zeros(0, np.int32),
        notes,
        max(most, 1),
    )


def write_allpairs(
    path: Path,
    hosts: list[str],
    rounds: Iterable[tuple[int, np.ndarray, np.ndarray, np.ndarray, np.ndarray]],
    lat_size: int = 8,
    bw_size: int = 1 << 20,
    bw_window: int = 64,
    pair_budget_s: float = 0.05,
    end: bool = True,
    flags: int = 0,
) -> None:
    """Write a file in the probe's format (tests, benchmarks): ``rounds`` gives (kind, a, b,
    latency, bandwidth) per round; ``end`` False leaves the end block out (cut short)."""
    names = b"".join(struct.pack("<H", len(h.encode())) + h.encode() for h in hosts)
    length = 32 + len(names)
    length += (-length) % 8
    with open(path, "wb") as f:
        f.write(
            MAGIC
            + struct.pack("<5If", length, len(hosts), lat_size, bw_size, bw_window, pair_budget_s)
        )
        f.write(names + b"\0" * (length - 32 - len(names)))
        number = pairs = 0
        for number, (kind, a, b, lat, bw) in enumerate(rounds, start=1):
            rec = np.empty(len(a), RECORD)
            rec["a"], rec["b"], rec["lat"], rec["bw"] = a, b, lat, bw
            f.write(_ROUND_HEAD.pack(ROUND, number, kind, len(a), 10, 10, 0.0, math.nan))
            f.write(rec.tobytes())
            pairs += len(a)
        if end:
            f.write(_END.pack(END, number, pairs, flags))
