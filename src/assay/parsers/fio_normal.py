"""fio's normal (human-readable) output, fio 2.x and 3.x: the figures as fio printed them.

Read only where a file holds no fio JSON (``fio.parse`` reads the JSON of
``--output-format=normal,json`` instead). Per job result block (``name: (groupid=0, jobs=8):
err= 0: ...``) and per direction line:

* fio 3.x (stat.c ``show_ddir_status``): ``read: IOPS=3068, BW=11.0MiB/s (12.6MB/s)(...)``:
  IOPS and BW rounded to fio's ``significant_figures`` (4 by default); ``KiB``/``MiB`` are
  powers of 2, ``kB``/``MB`` powers of 10 (fio prints the other base in parentheses).
* fio 2.x: ``read : io=4096.0MB, bw=611058KB/s, iops=152764, runt=  6864msec``, where
  ``KB``/``MB`` are powers of 2 (fio 2's default ``kb_base=1024``).

``storage.iops``, ``storage.bandwidth`` (B/s) and ``storage.latency`` (s) from the
``clat``/``lat`` lines (``completion``/``total``, their unit in parentheses: nsec, usec,
msec), with the percentiles printed under them. Params: ``job``, ``direction`` and, from the
job's description line (``name: (g=0): rw=randread, bs=4K-4K/..., ioengine=libaio,
iodepth=16``), ``rw``, ``bs``, ``ioengine``, ``iodepth``; ``jobs`` is the number of jobs the
block reports (``group_reporting``). Several runs appended to one file (a new description
line or version banner after results) are told apart by ``run``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from assay.errors import ParseError
from assay.model import Sample, Stats
from assay.parsers.base import ParseResult

TOOL = "fio"
_NUM = r"\d+(?:\.\d+)?"
_DESCRIPTION = re.compile(
    r"^(?P<name>\S[^:]*): \(g=\d+\): rw=(?P<rw>[^,]+), bs=(?P<bs>.*?), "
    r"ioengine=(?P<ioengine>[^,]+), iodepth=(?P<iodepth>\d+)"
)
_RESULT = re.compile(
    r"^(?P<name>\S[^:]*): \(groupid=\d+, jobs=(?P<jobs>\d+)\): err=\s*(?P<err>-?\d+)"
)
_DDIR3 = re.compile(
    rf"^\s+(?P<ddir>read|write|trim|mixed)\s*: IOPS=(?P<iops>{_NUM}[kMG]?), "
    rf"BW=(?P<bw>{_NUM})(?P<unit>[kKMGTP]i?B|B)/s"
)
_DDIR2 = re.compile(
    rf"^\s+(?P<ddir>read|write|trim|mixed)\s*: io=\S+, bw=(?P<bw>{_NUM})(?P<unit>[KMGTP]?B)/s, "
    rf"iops=(?P<iops>{_NUM}[KMG]?), runt=\s*\d+msec"
)
_LAT = re.compile(
    rf"^\s+(?P<kind>clat|lat) \((?P<unit>nsec|usec|msec)\): min=\s*(?P<min>{_NUM}[kKMG]?), "
    rf"max=\s*(?P<max>{_NUM}[kKMG]?), avg=\s*(?P<avg>{_NUM}), stdev=\s*(?P<stdev>{_NUM})"
)
_PCT_HEAD = re.compile(r"^\s+(?P<kind>clat|lat) percentiles \((?P<unit>nsec|usec|msec)\):")
# a number starts where no digit is before it: tried once per run of digits, not at each digit
_PCT = re.compile(rf"(?<![\d.])(?P<p>{_NUM})th=\[\s*(?P<v>{_NUM}[kKMG]?)\]")
_BANNER = re.compile(r"^fio-\d+\.\d+")
_SECONDS = {"nsec": 1e-9, "usec": 1e-6, "msec": 1e-3}
_COUNT = {"": 1, "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9}
_POWER = {"": 0, "k": 1, "K": 1, "M": 2, "G": 3, "T": 4, "P": 5}
_KINDS = {"clat": "completion", "lat": "total"}


@dataclass
class _Block:
    """One job's result block, one direction at a time."""

    params: dict[str, Any]
    ddir: dict[str, Any] | None = None
    lat: dict[str, dict[str, float]] = field(default_factory=dict)
    pct: dict[str, dict[float, float]] = field(default_factory=dict)
    pct_kind: tuple[str, float] | None = None


def _count(text: str) -> float:
    """A figure fio printed with num2str: ``10.3k`` is 10300."""
    suffix = text[-1] if text[-1] in _COUNT else ""
    return float(text[: len(text) - len(suffix)]) * _COUNT[suffix]


def _bytes_per_s(value: str, unit: str, fio2: bool) -> float:
    """``11.0MiB`` or ``12.6MB`` (fio 3), ``611058KB`` (fio 2: KB is 1024)."""
    prefix = unit[0] if len(unit) > 1 else ""
    binary = "i" in unit or fio2
    return float(value) * (1024 if binary else 1000) ** _POWER[prefix]


def _size(text: str) -> int | None:
    m = re.fullmatch(r"(\d+)([KMGT]?)(?:i?B)?", text.strip())
    return int(m[1]) * 1024 ** _POWER[m[2]] if m else None


def _block_size(bs: str) -> int | str:
    """The read block size of ``4K-4K/4K-4K/4K-4K`` (fio 2) or ``(R) 4096B-4096B, ...``."""
    first = re.split(r"[/,]", bs.replace("(R)", ""), maxsplit=1)[0].strip()
    low, _, high = first.partition("-")
    size = _size(low)
    return size if size is not None and (not high or _size(high) == size) else first


def parse_normal(text: str, source: str) -> ParseResult:
    """Samples of every job and direction of fio's normal output."""
    result = ParseResult(tool=TOOL)
    described: dict[str, dict[str, Any]] = {}
    block: _Block | None = None
    run, results_in_run, seen = 1, False, {}
    blocks: list[_Block] = []
    for line in text.splitlines():
        if _BANNER.match(line) or (m := _DESCRIPTION.match(line)):
            if results_in_run:
                run, results_in_run, seen = run + 1, False, {}
            if not _BANNER.match(line):
                described[m["name"]] = {
                    "rw": m["rw"].strip(),
                    "bs": _block_size(m["bs"]),
                    "ioengine": m["ioengine"].strip(),
                    "iodepth": int(m["iodepth"]),
                }
            else:
                result.meta.setdefault("version", line.split()[0])
        elif m := _RESULT.match(line):
            _close(block, result)
            results_in_run = True
            name = m["name"]
            params = {"run": run, "job": name, **described.get(name, {}), "jobs": int(m["jobs"])}
            if int(m["err"]):
                result.warnings.append(f"job {name!r}: fio error {m['err']}; not reported")
                block = None
                continue
            seen[name] = seen.get(name, 0) + 1
            if seen[name] > 1:
                params["instance"] = seen[name] - 1
            block = _Block(params)
            blocks.append(block)
        elif block is not None:
            _block_line(block, line, result)
    _close(block, result)
    return _finish(result, run, source)


def _block_line(block: _Block, line: str, result: ParseResult) -> None:
    m3 = _DDIR3.match(line)
    if (m := m3 or _DDIR2.match(line)) is not None:
        _close(block, result)
        block.ddir = {
            "direction": m["ddir"],
            "iops": _count(m["iops"]),
            "bw": _bytes_per_s(m["bw"], m["unit"], fio2=m3 is None),
        }
    elif block.ddir is None:
        return
    elif m := _LAT.match(line):
        scale = _SECONDS[m["unit"]]
        block.lat[m["kind"]] = {k: _count(m[k]) * scale for k in ("min", "max", "avg", "stdev")}
        block.pct_kind = None
    elif m := _PCT_HEAD.match(line):
        block.pct_kind = (m["kind"], _SECONDS[m["unit"]])
    elif block.pct_kind and line.lstrip().startswith("|"):
        kind, scale = block.pct_kind
        for p in _PCT.finditer(line):
            block.pct.setdefault(kind, {})[float(p["p"])] = _count(p["v"]) * scale
    else:
        block.pct_kind = None


def _close(block: _Block | None, result: ParseResult) -> None:
    """The samples of the direction a block has read, then the block is ready for the next."""
    if block is None or block.ddir is None:
        return
    params = {**block.params, "direction": block.ddir["direction"]}
    result.samples.append(Sample.make(TOOL, "storage.iops", block.ddir["iops"], params))
    result.samples.append(Sample.make(TOOL, "storage.bandwidth", block.ddir["bw"], params))
    for kind, lat in block.lat.items():
        pct = block.pct.get(kind, {})
        stats = Stats(
            n=0,
            min=lat["min"] if lat["min"] > 0 else None,  # 0: under fio's printed resolution
            max=lat["max"],
            mean=lat["avg"],
            stddev=lat["stdev"],
            median=pct.get(50.0),
            p99=pct.get(99.0),
            p999=pct.get(99.9),
        )
        lat_params = {**params, "latency": _KINDS[kind]}
        for q, key in ((90.0, "lat_p90"), (99.99, "lat_p9999")):
            if q in pct:
                lat_params[key] = pct[q]
        result.samples.append(Sample.make(TOOL, "storage.latency", lat["avg"], lat_params, stats))
    block.ddir, block.lat, block.pct, block.pct_kind = None, {}, {}, None


def _finish(result: ParseResult, runs: int, source: str) -> ParseResult:
    if not result.samples:
        raise ParseError(
            "this is fio's normal (human-readable) output without any job result line "
            "('read: IOPS=..., BW=...' or 'read : io=..., bw=...'): nothing to read; rerun "
            "fio with --output-format=json (or json+)",
            source=source,
        )
    if runs == 1 or len({s.params["run"] for s in result.samples}) == 1:
        for s in result.samples:
            s.params.pop("run", None)
    result.warnings.append(
        "read from fio's normal output: IOPS, bandwidth and latencies as fio printed them "
        "(rounded to its significant figures); --output-format=json gives them exactly"
    )
    return result
