"""fio ``--output-format=json`` and ``json+`` (fio 2.x and 3.x), local and client/server.

Per job (``jobs``, or ``client_stats`` for ``fio --client``) and per direction that moved
data (read, write, trim; ``mixed`` with ``unified_rw_reporting``):

* ``storage.iops``: ``iops`` (op/s; stat.c: ``1000.0 * total_io_u / runtime_ms``);
* ``storage.bandwidth``: ``bw_bytes`` (B/s; stat.c: ``1000 * io_bytes / runtime_ms``). The
  ``bw``/``bw_min``/``bw_mean``... fields are KiB/s (``bw_bytes / 1024``), used only as stats;
* ``storage.latency``, seconds, twice: ``params["latency"] == "completion"`` from ``clat_ns``
  and ``"total"`` from ``lat_ns``. fio's ``lat`` is the whole life of an I/O, submission
  included (``slat + clat``); ``clat`` starts at submission. The completion latency is the one
  fio reports percentiles and json+ histogram bins for by default (``clat_percentiles=1``,
  ``lat_percentiles=0``), so it carries the percentiles. For a comparison with tools that
  report response time (Vdbench) use ``latency == "total"``: the two differ by the submission
  latency, which is large only for asynchronous engines at high queue depth.

The value of a latency sample is fio's mean; its ``Stats`` carry ``n`` (fio's ``N``), min,
max, mean, stddev and, from fio's percentiles, median (p50), p99 and p999 (p99.9); p90 and
p99.99 go to the params ``lat_p90`` and ``lat_p9999``.

Job options: a job's ``job options`` override the ``global options`` (fio's own precedence).
``bs`` is read the way fio reads sizes: with the default ``kb_base=1024``, ``4k`` and ``4kB``
are 4096 bytes and ``4KiB`` is 4000 (fio's HOWTO, ``kb_base``: "compatibility mode"); with
``kb_base=1000`` the other way round. Without a ``bs`` option, ``io_bytes / total_ios``.
``iodepth`` and ``numjobs`` default to 1 (fio's documented defaults).

``group_reporting``: one entry then covers all ``numjobs`` threads (fio sums IOPS and bandwidth
and merges the latency histograms); without it there is one entry per thread, told apart by
the param ``instance``. Client/server: each host's entries carry ``host``; fio's
``All clients`` entry is kept with ``host == "All clients"`` -- fio 3.33 writes no percentiles
for it (and the hostname of the last client), so they are computed by merging the per-host
json+ bins (``merge_clat_histograms``) when every host has them.

fio prints text before the JSON at times (``fio: ...`` warnings, ``<host>`` lines of clients,
its normal output with ``--output-format=normal,json``, a pasted prompt and command line):
everything before the first ``{`` is skipped with a warning. Several JSON documents in one
file (runs appended to one log) are each read, told apart by the param ``run`` (1, 2, ...).

Versions (stat.c ``show_ddir_status_json`` at each tag). fio 3.3 and later write ``bw_bytes``;
fio 2.99-3.2 write ``io_bytes`` in bytes and ``bw`` in KiB/s only: the bandwidth is then
fio's own later formula, ``1000 * io_bytes // runtime``, said in a warning. fio 2.x writes
``io_bytes`` in KiB (``>> 10``), ``bw`` in KiB/s and ``slat``/``clat``/``lat`` in
microseconds with the percentiles under ``clat`` (no ``N``, no ``*_ns``): the bandwidth is
``1000 * io_bytes * 1024 // runtime`` (fio's formula, closer than ``bw * 1024``, which is
floored to 1 KiB/s; ``bw * 1024`` only without a runtime) and the latencies are converted
from µs, both said in a warning; a clat/lat ``min`` of 0 µs (under 1 µs) is left out; the
block size is then not derived from ``io_bytes``. Latency ``n`` is fio's ``N``, else the
direction's ``total_ios`` (one completion latency per I/O). Options a file does not
record (fio 2.1 writes no ``job options``) are left out, not filled with fio's defaults.

A file where every job failed (``error`` != 0) holds no measurement: a ParseError naming
the jobs and errors. fio's normal (human-readable) output without any JSON is read by
``fio_normal.parse_normal`` (figures as printed, rounded: said in a warning).
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Iterable, Mapping
from decimal import Decimal
from fractions import Fraction
from typing import Any

from assay.errors import ParseError
from assay.model import Sample, Stats
from assay.parsers.base import ParseResult, require_text
from assay.parsers.fio_normal import parse_normal
from assay.parsers.jsonshape import json_text, json_text_map
from assay.parsers.numbers import checked, json_int, json_number, parse_int, parse_number
from assay.vocab import ALL_CLIENTS  # the name fio gives a multi-client total; shared

TOOL = "fio"
DIRECTIONS = ("read", "write", "trim", "mixed")
# fio's default percentile_list (options.c, "percentile_list")
DEFAULT_PERCENTILES = (
    1.0,
    5.0,
    10.0,
    20.0,
    30.0,
    40.0,
    50.0,
    60.0,
    70.0,
    80.0,
    90.0,
    95.0,
    99.0,
    99.5,
    99.9,
    99.95,
    99.99,
)


def ns_to_s(value: float) -> float:
    """fio's *_ns fields are nanoseconds; divided in decimal so 109056 ns is 0.000109056 s."""
    if not math.isfinite(value):
        return value * 1e-9
    return float(Decimal(repr(float(value))) / Decimal(1_000_000_000))


# matched on the stripped text: "\s*...\s*$" around it split a run of blanks two ways on a
# failed match, quadratically (8,000 blanks: 0.4 s)
_SIZE = re.compile(r"(?P<num>\d+(?:\.\d+)?)\s*(?P<suffix>[a-zA-Z]*)")
_PREFIX_POWER = {"": 0, "k": 1, "m": 2, "g": 3, "t": 4, "p": 5, "e": 6}


# ---------------------------------------------------------------------------- histograms


def merge_bins(bins_list: Iterable[Mapping[str, int] | Mapping[int, int]]) -> dict[int, int]:
    """Add up fio json+ ``clat_ns.bins`` (bucket value in ns -> count) of several jobs/hosts.

    The buckets are fio's fixed log-linear ones (stat.c ``plat_idx_to_val``), identical in
    every job, so adding counts bucket by bucket is the histogram of all the I/Os together.
    """
    merged: dict[int, int] = {}
    for bins in bins_list:
        for key, count in bins.items():
            value = _whole(key, "a clat_ns.bins bucket")
            merged[value] = merged.get(value, 0) + _whole(count, f"the count of bucket {value}")
    return merged


def _whole(value: Any, what: str) -> int:
    """A bucket or count of a fio histogram: a whole number ≥ 0 (JSON keys are strings)."""
    if isinstance(value, str):
        text = value.strip()
        if not (text.isascii() and text.isdigit() and len(text) < 20):
            raise ParseError(f"fio JSON: {what} is {value[:40]!r}, not a whole number")
        return int(text)
    return json_int(value, source="fio JSON", what=what)


def percentiles_from_bins(
    bins: Mapping[int, int], percentiles: Iterable[float] = DEFAULT_PERCENTILES
) -> dict[float, int]:
    """fio's own rule (stat.c ``calc_clat_percentiles``): the p-th percentile is the first
    bucket whose cumulative count reaches ``p / 100 * N``. Returns ns per percentile."""
    items = sorted((int(k), int(v)) for k, v in bins.items())
    total = sum(count for _, count in items)
    out: dict[float, int] = {}
    if total == 0:
        return out
    wanted = sorted(float(p) for p in percentiles)
    j = 0
    cumulative = 0
    for value, count in items:
        cumulative += count
        # exact rational arithmetic: fio compares in long double, never quite like a double
        while j < len(wanted) and cumulative >= Fraction(wanted[j]) / 100 * total:
            out[wanted[j]] = value
            j += 1
        if j == len(wanted):
            break
    return out


def merge_clat_histograms(
    bins_list: Iterable[Mapping[str, int] | Mapping[int, int]],
    percentiles: Iterable[float] = DEFAULT_PERCENTILES,
) -> dict[float, int]:
    """Percentiles (ns) of several jobs or hosts together, from their merged json+ bins.

    Percentiles of a union are never the average of the parts' percentiles: this merges the
    histograms and reads the percentiles off the merged one, the way fio does for
    ``group_reporting``. For a single job it gives fio's own percentiles exactly.
    """
    return percentiles_from_bins(merge_bins(bins_list), percentiles)


# ---------------------------------------------------------------------------- options


def parse_size(text: str, kb_base: int = 1024) -> int | None:
    """A fio size option ("4k", "1m", "4KiB", "512") in bytes; None if not a plain size.

    fio's "compatibility mode" (kb_base=1024, the default): k/K/kB/KB are powers of 2 and
    KiB/MiB powers of 10; kb_base=1000 swaps them (fio HOWTO, "kb_base").
    """
    m = _SIZE.fullmatch(text.strip())
    if not m:
        return None
    suffix = m["suffix"].lower()
    iec = suffix.endswith("ib") and len(suffix) == 3
    prefix = suffix[0] if suffix else ""
    if (
        prefix not in _PREFIX_POWER
        or len(suffix) > 3
        or (len(suffix) >= 2 and not (suffix.endswith("b") or iec))
    ):
        return None
    binary = (kb_base != 1000) != iec  # compat mode: SI-looking = binary, IEC-looking = decimal
    base = 1024 if binary else 1000
    return int(float(m["num"]) * base ** _PREFIX_POWER[prefix])


def _block_sizes(value: str, kb_base: int) -> dict[str, int | str]:
    """fio's bs=read[,write[,trim]]; a missing write/trim size is the read one."""
    parts = [p.strip() for p in value.split(",")]
    sizes: dict[str, int | str] = {}
    for i, ddir in enumerate(("read", "write", "trim")):
        raw = parts[i] if i < len(parts) and parts[i] else parts[0]
        size = parse_size(raw, kb_base)
        sizes[ddir] = size if size is not None else raw  # ranges ("4k-16k") stay text
    sizes["mixed"] = sizes["read"]
    return sizes


def _int_option(options: Mapping[str, str], name: str, default: int, source: str) -> int:
    """A whole-number job option; fio's own default when the job does not set it. A value
    that is not a whole number is a ParseError, never silently the default."""
    if name not in options:
        return default
    value = options[name]
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str):
        raise ParseError(f"fio job option {name}={value!r} is not a whole number", source=source)
    return parse_int(value, source=source, line=None, what=f"fio job option {name}")


# ---------------------------------------------------------------------------- parsing


# fio's normal (human-readable) output: a job's result header and its group summary
_NORMAL = re.compile(
    r"^\S.*: \(groupid=\d+, jobs=\d+\): err=\s*-?\d+|^Run status group \d+ \(all jobs\):",
    re.MULTILINE,
)


def looks_like(text: str) -> bool:
    """fio JSON: a "fio version" key, or "jobs"/"client_stats" with "jobname"; or fio's
    normal output (refused by ``parse`` with a message saying what it is)."""
    head = text[:65536]
    if '"fio version"' in head:
        return True
    if '"jobname"' in head and ('"jobs"' in head or '"client_stats"' in head):
        return True
    return _NORMAL.search(head) is not None


def _load_all(text: str, source: str, result: ParseResult) -> list[dict[str, Any]]:
    """Every fio JSON document in ``text`` (one, or several runs appended to one file)."""
    require_text(text, "fio JSON", source=source)
    m = re.search(r"^\{", text, re.MULTILINE) or re.search(r"\{", text)
    if m is None:
        raise ParseError(
            "no JSON object found: not fio --output-format=json output", source=source, line=1
        )
    _skipped(text[: m.start()], "before fio's JSON", result)
    if before := [ln.strip() for ln in text[: m.start()].splitlines() if ln.strip()]:
        result.meta["text_before_json"] = before[:5]  # fio's own messages, as printed
    docs = [_decode(text, m.start(), source)]
    end = docs[0][1]
    while (nxt := re.compile(r"^\{", re.MULTILINE).search(text, end)) is not None:
        try:
            doc, next_end = _decode(text, nxt.start(), source)
        except ParseError:
            break  # not a whole document: reported as ignored text below
        if not (isinstance(doc, dict) and ("jobs" in doc or "client_stats" in doc)):
            break
        _skipped(text[end : nxt.start()], "between two fio JSON documents", result)
        docs.append((doc, next_end))
        end = next_end
    rest = text[end:].strip()
    if rest:
        result.warnings.append(f"text after fio's JSON ignored: {rest.splitlines()[0][:120]!r}")
    for doc, _ in docs:
        if not isinstance(doc, dict):
            raise ParseError(
                "fio JSON is not an object", source=source, line=text.count("\n", 0, m.start()) + 1
            )
    return [doc for doc, _ in docs]


def _skipped(skipped: str, where: str, result: ParseResult) -> None:
    if skipped.strip():
        n = skipped.count("\n")
        first = skipped.strip().splitlines()[0]
        result.warnings.append(f"skipped {n} line(s) of text {where}: {first[:120]!r}")


def _decode(text: str, start: int, source: str) -> tuple[Any, int]:
    try:
        return json.JSONDecoder(parse_constant=_no_constant).raw_decode(text, start)
    except json.JSONDecodeError as err:
        raise ParseError(
            f"fio JSON is not valid ({err.msg}); truncated?", source=source, line=err.lineno
        ) from None
    except (ValueError, RecursionError) as err:  # NaN/Infinity, a numeral over int()'s limit
        raise ParseError(f"fio JSON is not valid: {str(err)[:120]}", source=source) from None


def _no_constant(name: str) -> float:
    raise ValueError(f"{name} is not a number fio writes")


def _to_s(value: float, per_second: int) -> float:
    """A fio latency in seconds: ns (``*_ns``, per_second=1e9) or µs (fio 2.x, 1e6)."""
    if per_second == 1_000_000_000:
        return ns_to_s(value)
    if not math.isfinite(value):
        return value / per_second
    return float(Decimal(repr(float(value))) / Decimal(per_second))


def _latency_stats(
    lat: Mapping[str, Any], source: str, per_second: int = 1_000_000_000, n: int = 0
) -> tuple[Stats, dict[str, float]]:
    unit = "ns" if per_second == 1_000_000_000 else "us"

    def sec(key: str, value: Any = None) -> float:
        v = lat[key] if value is None else value
        return _to_s(
            json_number(v, source=source, what=f"latency {key} ({unit})", minimum=0), per_second
        )

    pct = {
        parse_number(str(k), source=source, line=None, what="percentile", minimum=0): sec(
            f"percentile {k}", v
        )
        for k, v in (lat.get("percentile") or {}).items()
    }
    pct.pop(0.0, None)  # fio 2.x pads its percentile list with "0.00" : 0 entries
    extra: dict[str, float] = {}
    if 90.0 in pct:
        extra["lat_p90"] = pct[90.0]
    if 99.99 in pct:
        extra["lat_p9999"] = pct[99.99]
    low: float | None = sec("min")
    if low == 0 and per_second != 1_000_000_000:
        low = None  # fio 2.x prints whole µs: a min of 0 is under 1 µs, not a time of 0
    stats = Stats(
        n=json_int(lat["N"], source=source, what="latency N") if "N" in lat else n,
        min=low,
        max=sec("max"),
        mean=sec("mean"),
        stddev=sec("stddev") if "stddev" in lat else None,
        median=pct.get(50.0),
        p99=pct.get(99.0),
        p999=pct.get(99.9),
    )
    return stats, extra


# the fields of a direction, by era: (clat, lat, units per second, io_bytes in KiB)
_NS_FIELDS = ("clat_ns", "lat_ns", 1_000_000_000, False)
_US_FIELDS = ("clat", "lat", 1_000_000, True)  # fio 2.x (before 2.99)


def _era(data: Mapping[str, Any]) -> tuple[str, str, int, bool]:
    if "clat_ns" in data or "lat_ns" in data or "io_kbytes" in data:
        return _NS_FIELDS
    return _US_FIELDS if ("clat" in data or "lat" in data) else _NS_FIELDS


def _bandwidth(data: Mapping[str, Any], kib_io: bool, ddir: str, source: str) -> tuple[float, str]:
    """B/s: fio's ``bw_bytes``; else derived from what the file has, with the note to warn."""

    def whole(key: str) -> int:
        return json_int(data[key], source=source, what=f"{ddir}.{key}")

    if "bw_bytes" in data:
        return json_number(data["bw_bytes"], source=source, what=f"{ddir}.bw_bytes", minimum=0), ""
    if "io_bytes" in data and "runtime" in data and whole("runtime") > 0:
        if kib_io:  # fio 2.x: io_bytes is whole KiB (io_bytes >> 10)
            return float(1000 * whole("io_bytes") * 1024 // whole("runtime")), (
                "no bw_bytes (fio 2.x): bandwidth = 1000 * io_bytes (KiB) * 1024 // runtime "
                "(ms), fio's own formula for bw_bytes, io_bytes being whole KiB"
            )
        return float(1000 * whole("io_bytes") // whole("runtime")), (
            "no bw_bytes (fio before 3.3): bandwidth = 1000 * io_bytes // runtime (ms), "
            "fio's own formula for bw_bytes"
        )
    return json_number(data["bw"], source=source, what=f"{ddir}.bw", minimum=0) * 1024, (
        "no bw_bytes nor runtime: bandwidth = bw (KiB/s) * 1024, exact to 1 KiB/s"
    )


def _entry_samples(
    entry: Mapping[str, Any],
    options: Mapping[str, str],
    params_base: dict[str, Any],
    result: ParseResult,
    source: str,
    merged_bins: Mapping[str, Mapping[int, int]] | None = None,
) -> None:
    kb_base = _int_option(options, "kb_base", 1024, source)
    sizes = _block_sizes(options["bs"], kb_base) if "bs" in options else {}
    for ddir in DIRECTIONS:
        data = entry.get(ddir)
        if not isinstance(data, Mapping):
            continue
        if not data.get("io_bytes") and not data.get("total_ios"):
            continue  # this direction moved nothing
        params = dict(params_base)
        params["direction"] = ddir
        era = _era(data)
        bs: int | str | None = sizes.get(ddir)

        def num(key: str, d: Mapping[str, Any] = data, dd: str = ddir) -> float:
            return json_number(d[key], source=source, what=f"{dd}.{key}", minimum=0)

        def count(key: str, d: Mapping[str, Any] = data, dd: str = ddir) -> int:
            return json_int(d[key], source=source, what=f"{dd}.{key}")

        if bs is None and data.get("total_ios") and not era[3]:
            per_io = num("io_bytes") / count("total_ios")
            bs = int(per_io) if float(per_io).is_integer() else None
        if bs is not None:
            params["bs"] = bs

        iops_stats = None
        if data.get("iops_samples"):
            iops_stats = Stats(
                n=count("iops_samples"),
                min=num("iops_min"),
                max=num("iops_max"),
                mean=num("iops_mean"),
                stddev=num("iops_stddev"),
            )
        result.samples.append(Sample.make(TOOL, "storage.iops", num("iops"), params, iops_stats))
        bw_stats = None
        if data.get("bw_samples"):
            kib = 1024.0  # bw_min/max/mean/dev are KiB/s (stat.c: bw_bytes / 1024)
            bw_stats = Stats(
                n=count("bw_samples"),
                min=num("bw_min") * kib,
                max=num("bw_max") * kib,
                mean=num("bw_mean") * kib,
                stddev=num("bw_dev") * kib,
            )
        bw, note = _bandwidth(data, era[3], ddir, source)
        if note and note not in result.warnings:
            result.warnings.append(note)
        result.samples.append(Sample.make(TOOL, "storage.bandwidth", bw, params, bw_stats))
        _latency_samples(data, era, params, result, source, (merged_bins or {}).get(ddir))


def _latency_samples(
    data: Mapping[str, Any],
    era: tuple[str, str, int, bool],
    params: dict[str, Any],
    result: ParseResult,
    source: str,
    bins: Mapping[int, int] | None,
) -> None:
    clat_field, lat_field, per_second, _ = era
    total_ios = data.get("total_ios", 0)
    n = json_int(total_ios, source=source, what="total_ios") if total_ios else 0
    for field, kind in ((clat_field, "completion"), (lat_field, "total")):
        lat = data.get(field)
        if not isinstance(lat, Mapping):
            continue
        if ("N" in lat and not lat["N"]) or ("N" not in lat and not lat.get("max")):
            continue  # no latency recorded
        lat = dict(lat)
        lat_params = {**params, "latency": kind}
        if "percentile" not in lat and bins and kind == "completion":
            lat["percentile"] = {f"{k:f}": v for k, v in percentiles_from_bins(bins).items()}
            lat_params["percentiles"] = "merged from per-host bins"
        stats, extra = _latency_stats(lat, source, per_second, n)
        lat_params.update(extra)
        result.samples.append(
            Sample.make(TOOL, "storage.latency", stats.mean or 0.0, lat_params, stats)
        )
    if per_second != 1_000_000_000:
        note = "fio 2.x latencies (clat, lat) are in microseconds: converted to seconds"
        if note not in result.warnings:
            result.warnings.append(note)


def _common_params(
    entry: Mapping[str, Any], options: Mapping[str, str], source: str
) -> dict[str, Any]:
    params: dict[str, Any] = {"job": entry.get("jobname", "")}
    if not options and "job options" not in entry:
        return params  # fio 2.1 records no options: fio's defaults would be a guess
    params["rw"] = options.get("rw", options.get("readwrite", "read"))  # fio's default: read
    params["iodepth"] = _int_option(options, "iodepth", 1, source)
    params["numjobs"] = _int_option(options, "numjobs", 1, source)
    if "rwmixread" in options:
        params["rwmixread"] = _int_option(options, "rwmixread", 50, source)
    elif "rwmixwrite" in options:
        params["rwmixread"] = 100 - _int_option(options, "rwmixwrite", 50, source)
    elif str(params["rw"]) in ("rw", "readwrite", "randrw"):
        params["rwmixread"] = 50  # fio's default mix
    if "ioengine" in options:
        params["ioengine"] = options["ioengine"]
    if "direct" in options:
        params["direct"] = _int_option(options, "direct", 0, source)
    for name in ("usr_cpu", "sys_cpu"):  # percent of the job's run time, as fio prints them
        if name in entry:
            params[name] = json_number(entry[name], source=source, what=name, minimum=0)
    return params


def _check_entry(entry: Any, client_mode: bool, source: str) -> None:
    """The fields of a job entry that the parser uses as they are: the types fio writes."""
    if not isinstance(entry, dict):
        raise ParseError("a fio job entry is not an object", source=source)
    name = json_text(entry.get("jobname", ""), source=source, what="a job's jobname")
    what = f"job {name[:40]!r}"
    json_text_map(entry.get("job options") or {}, source=source, what=f"{what}: job options")
    for key in ("groupid", "error"):
        if key in entry:
            json_int(entry[key], source=source, what=f"{what}: {key}")
    if client_mode and "hostname" in entry:
        json_text(entry["hostname"], source=source, what=f"{what}: hostname")


@checked
def parse(text: str, source: str = "<text>") -> ParseResult:
    """Parse fio JSON or JSON+ (local ``jobs`` or client/server ``client_stats``), one
    document or several appended (each a ``run``)."""
    normal = _NORMAL.search(text) is not None
    if normal and not re.search(r"^\{", text, re.MULTILINE):
        return parse_normal(text, source)  # no JSON: fio's normal output alone
    result = ParseResult(tool=TOOL)
    try:
        docs = _load_all(text, source, result)
    except ParseError as err:
        if not normal:
            raise
        # a "{" line that is not fio's JSON (a pasted script), or a cut JSON after the normal
        # output: the normal output is read, and the JSON's fault said
        result = parse_normal(text, source)
        result.warnings.append(f"fio JSON not read ({err}): fio's normal output read instead")
        return result
    failed: list[dict[str, Any]] = []
    for i, doc in enumerate(docs):
        run = {"run": i + 1} if len(docs) > 1 else {}
        _parse_doc(doc, run, result, failed, source)
    if failed:
        result.meta["failed"] = failed
        if not result.samples:
            jobs = "; ".join(
                f"job {f['job']!r}"
                + (f" on {f['host']}" if f.get("host") else "")
                + f": error {f['error']} ({_strerror(f['error'])})"
                for f in failed[:4]
            )
            said = result.meta.get("text_before_json")
            raise ParseError(
                f"fio reported no measurement: every job failed ({jobs})",
                source=source,
                hint=f"fio printed: {' | '.join(said)[:300]}" if said else None,
            )
    if not result.samples:
        result.warnings.append("no job moved any data")
    return result


def _strerror(code: Any) -> str:
    return os.strerror(code) if isinstance(code, int) and 0 < code < 200 else "fio error"


def _parse_doc(
    doc: dict[str, Any],
    run: dict[str, Any],
    result: ParseResult,
    failed: list[dict[str, Any]],
    source: str,
) -> None:
    if "fio version" in doc:
        result.meta["version"] = json_text(doc["fio version"], source=source, what="fio version")
    for key in ("time", "timestamp"):
        if key in doc:
            result.meta[key] = doc[key]
    global_options = dict(
        json_text_map(doc.get("global options") or {}, source=source, what="global options")
    )
    if global_options:
        result.meta["global_options"] = global_options
    if "disk_util" in doc:
        result.meta["disk_util"] = doc["disk_util"]

    entries = doc.get("client_stats")
    client_mode = isinstance(entries, list)
    if not client_mode:
        entries = doc.get("jobs")
    if not isinstance(entries, list):
        raise ParseError("fio JSON has neither 'jobs' nor 'client_stats'", source=source, line=1)
    if not entries:
        raise ParseError("fio JSON has no job", source=source, line=1)

    # how many entries share a job name (and host): without group_reporting one per thread
    seen: dict[tuple[str, str | None], int] = {}
    counts: dict[tuple[str, str | None], int] = {}
    for entry in entries:
        _check_entry(entry, client_mode, source)
        if entry.get("jobname") == ALL_CLIENTS:
            continue
        k = (entry.get("jobname", ""), entry.get("hostname") if client_mode else None)
        counts[k] = counts.get(k, 0) + 1

    for entry in entries:
        name = entry.get("jobname", "")
        k = (name, entry.get("hostname") if client_mode else None)
        instance = None
        if counts.get(k, 0) > 1:
            instance = seen.get(k, 0)
            seen[k] = instance + 1
        _parse_entry(
            entry, entries, global_options, client_mode, instance, run, result, failed, source
        )


def _parse_entry(
    entry: dict[str, Any],
    entries: list[dict[str, Any]],
    global_options: dict[str, str],
    client_mode: bool,
    instance: int | None,
    run: dict[str, Any],
    result: ParseResult,
    failed: list[dict[str, Any]],
    source: str,
) -> None:
    name = entry.get("jobname", "")
    options = {**global_options, **(entry.get("job options") or {})}
    group: list[dict[str, Any]] = []
    if client_mode and name == ALL_CLIENTS:
        # fio's sum of every client in the group; its "hostname" is just the last client's
        group = [
            e
            for e in entries
            if e.get("jobname") != ALL_CLIENTS and e.get("groupid") == entry.get("groupid")
        ]
        if group:
            options = {**global_options, **(group[0].get("job options") or {})}
    error = entry.get("error") or next((e["error"] for e in group if e.get("error")), 0)
    if error:
        host = ALL_CLIENTS if group else entry.get("hostname")
        failed.append({"job": name, "host": host, "error": error, **run})
        result.warnings.append(f"job {name!r}: fio error {error}; its results are not reported")
        return
    params = {**run, **_common_params(entry, options, source)}
    merged: dict[str, dict[int, int]] | None = None
    if client_mode and name == ALL_CLIENTS:
        names = {e.get("jobname") for e in group}
        params["job"] = names.pop() if len(names) == 1 else ALL_CLIENTS
        params["host"] = ALL_CLIENTS
        merged = {}
        for ddir in DIRECTIONS:
            parts = [((e.get(ddir) or {}).get("clat_ns") or {}).get("bins") for e in group]
            if parts and all(parts):
                merged[ddir] = merge_bins(p for p in parts if p)
    elif client_mode:
        params["host"] = entry.get("hostname")
    if instance is not None:
        params["instance"] = instance
    try:
        _entry_samples(entry, options, params, result, source, merged)
    except KeyError as exc:  # fio always writes these keys: the JSON was cut or edited
        raise ParseError(
            f"job {name!r}: fio JSON lacks the key {exc.args[0]!r}", source=source
        ) from None
    except (TypeError, AttributeError):
        raise ParseError(
            f"job {name!r}: a field of the fio JSON has the wrong type (edited JSON?)",
            source=source,
        ) from None
