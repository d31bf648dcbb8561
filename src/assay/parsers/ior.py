"""IOR (hpc/ior 3.x and 4.x): the text report and the JSON one (``-O summaryFormat=JSON``).

Text (src/ior-output.c): a ``Results:`` table with one line per access and iteration, columns
``access bw(MiB/s) IOPS Latency(s) block(KiB) xfer(KiB) open(s) wr/rd(s) close(s) total(s)
iter`` (IOR 3.2 has no IOPS and Latency columns), then ``Summary of all tests:``, one line
per test and operation, columns ``Operation Max(MiB) Min(MiB) Mean(MiB) StdDev Max(OPs)
Min(OPs) Mean(OPs) StdDev Mean(s) [Stonewall(s) Stonewall(MiB)] Test# #Tasks tPN reps fPP
reord reordoff reordrand seed segcnt blksiz xsize aggs(MiB) API RefNum`` (the Stonewall
columns since IOR 3.3). Both tables are read by their header words. MiB is 2**20 bytes:
ior-output.c divides bytes by ``MEBIBYTE``, ``#define MEBIBYTE (1 << 20)`` in src/iordef.h.

Samples. From the summary (the result IOR itself reports), per test and operation:
``storage.bandwidth`` = Mean(MiB) in B/s and ``storage.iops`` = Mean(OPs), with ``Stats`` over
the repetitions (n = reps, min, max, mean, stddev). IOR computes these OPs as transfers per
second of the total time (``bw_ops_values``: aggregate bytes / transfer size / time), not of
the access time like the per-iteration IOPS column (hpc/ior issue #478). Without a summary
(output cut short, or written by the IO500 harness, which prints none) the per-iteration rows
are the samples, with ``params["iteration"]``, and the result is incomplete. IOR's
``Latency(s)`` column is not a per-I/O latency (it is the access time divided by
block/transfer, whatever the segment count: hpc/ior issue #495) and is kept only as the param
``ior_latency_s``.

JSON: the same numbers under ``"summary"`` (``bwMeanMIB``, ``OPsMean``, ...) and
``"tests"[i]["Results"]``; text before the first ``{`` (IOR's banner) is skipped.
"""

from __future__ import annotations

import json
import math
import re
from decimal import Decimal
from typing import Any

from assay.errors import ParseError
from assay.model import Stats
from assay.parsers.base import ParseResult, make_sample, other_tool, parse_number, require_text
from assay.parsers.numbers import checked, json_number, to_int

TOOL = "ior"
MIB = 2**20  # iordef.h: #define MEBIBYTE (1 << 20)

_BANNER = re.compile(r"IOR-(?P<v>\S+): MPI Coordinated Test of Parallel I/O")
_OPTION_KEY = re.compile(r"[A-Za-z][A-Za-z /_-]*", re.ASCII)


def _option(line: str) -> tuple[str, str] | None:
    """``KEY : VALUE`` of IOR's Options section, or None. Split at the first colon: one
    pattern with a lazy key before blanks and a colon backtracked over a run of blanks
    (8,000 blanks took 0.5 s, growing with the square)."""
    key, colon, value = line.partition(":")
    key = key.rstrip()
    if not colon or not _OPTION_KEY.fullmatch(key):
        return None
    return key, value.strip()


_OPERATIONS = ("write", "read")


def looks_like(text: str) -> bool:
    if _BANNER.search(text):
        return True
    if "Summary of all tests:" in text and "Max(MiB)" in text:
        return True
    head = text.lstrip()[:4000]
    return head.startswith("{") and '"bwMeanMIB"' in text


@checked
def parse(text: str, source: str = "<text>") -> ParseResult:
    """Samples of an IOR text or JSON report."""
    require_text(text, "IOR output", source=source)
    # JSON (-O summaryFormat=JSON): an object at the start of a line, with tests or summary
    if m := re.search(r"^\{", text, re.M):
        rest = text[m.start() :]
        if '"tests"' in rest or '"summary"' in rest:
            return _parse_json(text, m.start(), source)
    return _parse_text(text, source)


# ---------------------------------------------------------------------------- text


def _parse_text(text: str, source: str) -> ParseResult:
    result = ParseResult(tool=TOOL)
    lines = text.splitlines()
    if m := _BANNER.search(text):
        result.meta["version"] = m["v"]
    options: dict[str, str] = {}
    results_header: list[str] | None = None
    summary_header: list[str] | None = None
    section = ""
    iteration_rows: list[tuple[int, dict[str, str]]] = []
    summary_rows: list[tuple[int, dict[str, str]]] = []
    finished = False
    for lineno, raw in enumerate(lines, start=1):
        line = raw.strip()
        if not line:
            continue
        if line.startswith("Command line"):
            result.meta["command"] = line.partition(":")[2].strip()
            continue
        if line.startswith("Finished"):
            finished = True
            section = ""
            continue
        if line.startswith(("Options:", "Summary:")) and not line.startswith("Summary of"):
            section = "options"
            continue
        if line.startswith("Results:"):
            section = "results"
            continue
        if line.startswith("Summary of all tests:"):
            section = "summary"
            continue
        words = line.split()
        if words[0] == "access" and "bw(MiB/s)" in words:
            results_header = words
            section = "results"
            continue
        if words[0] == "Operation" and "Mean(MiB)" in words:
            summary_header = _unique(words)
            section = "summary"
            continue
        if section == "options" and (kv := _option(line)):
            options.setdefault(*kv)
            continue
        if section == "results" and results_header and words[0] in _OPERATIONS:
            if len(words) != len(results_header):
                raise ParseError(
                    f"{len(words)} values for the {len(results_header)} Results columns",
                    source=source,
                    line=lineno,
                )
            iteration_rows.append((lineno, dict(zip(results_header, words, strict=True))))
        elif section == "summary" and summary_header and words[0] in _OPERATIONS:
            if len(words) != len(summary_header):
                if lineno == len(lines) or all(not ln.strip() for ln in lines[lineno:]):
                    result.complete = False
                    result.missing.append(f"the rest of the summary line at {source}:{lineno}")
                    break
                raise ParseError(
                    f"{len(words)} values for the {len(summary_header)} summary columns",
                    source=source,
                    line=lineno,
                )
            summary_rows.append((lineno, dict(zip(summary_header, words, strict=True))))

    if results_header is None and summary_header is None:
        other = other_tool(text, TOOL)
        raise ParseError(
            "no IOR result table ('access bw(MiB/s) ...' or 'Summary of all tests') found",
            source=source,
            hint=f"this looks like {other} output" if other else None,
        )
    if options:
        result.meta["options"] = options
    common = _option_params(options)
    if summary_rows:
        for lineno, row in summary_rows:
            _summary_samples(row, common, result, source, lineno)
    else:
        for lineno, row in iteration_rows:
            _iteration_samples(row, common, result, source, lineno)
        result.complete = False
        result.missing.append("the 'Summary of all tests' table")
        if not iteration_rows:
            result.missing.append("any write/read result line")
    if not finished and result.complete:
        result.complete = False
        result.missing.append("the 'Finished' line")
    result.meta["iterations"] = len(iteration_rows)
    return result


def _unique(header: list[str]) -> list[str]:
    """The summary has two "StdDev" columns, after Mean(MiB) and after Mean(OPs)."""
    out: list[str] = []
    for word in header:
        if word == "StdDev" and out:
            unit = "OPs" if "Mean(OPs)" in out else "MiB"
            word = f"StdDev({unit})"
        out.append(word)
    return out


def _option_params(options: dict[str, str]) -> dict[str, Any]:
    params: dict[str, Any] = {}
    if "api" in options:
        params["api"] = options["api"]
    if "access" in options:
        params["file_per_proc"] = options["access"] == "file-per-process"
    for key, name in (("tasks", "tasks"), ("clients per node", "tasks_per_node")):
        value = options.get(key, "")
        if value.isascii() and value.isdigit() and len(value) < 19:
            params[name] = int(value)
    return params


def _f(row: dict[str, str], column: str, source: str, line: int) -> float:
    if column not in row:
        raise ParseError(
            f"the IOR table header lacks the {column!r} column", source=source, line=line
        )
    return parse_number(row[column], source=source, line=line, what=column)


def _i(row: dict[str, str], column: str, source: str, line: int) -> int:
    """A whole count or size of the table (IOR prints them with %d or %lld)."""
    return to_int(_f(row, column, source, line), source=source, line=line, what=column)


def _summary_samples(
    row: dict[str, str], common: dict[str, Any], result: ParseResult, source: str, line: int
) -> None:
    reps = _i(row, "reps", source, line)
    params: dict[str, Any] = {
        **common,
        "operation": row["Operation"],
        "test": _i(row, "Test#", source, line),
        "tasks": _i(row, "#Tasks", source, line),
        "tasks_per_node": _i(row, "tPN", source, line),
        "repetitions": reps,
        "file_per_proc": _f(row, "fPP", source, line) != 0,
        "segments": _i(row, "segcnt", source, line),
        "block_size": _i(row, "blksiz", source, line),
        "transfer_size": _i(row, "xsize", source, line),
        "mean_time_s": _f(row, "Mean(s)", source, line),
    }
    if "API" in row:
        params["api"] = row["API"]
    if "aggs(MiB)" in row:
        params["aggregate_bytes"] = _times(_f(row, "aggs(MiB)", source, line), MIB)
    bw_sd = _f(row, "StdDev(MiB)", source, line)
    ops_sd = _f(row, "StdDev(OPs)", source, line)
    bw = Stats(
        n=reps,
        min=_times(_f(row, "Min(MiB)", source, line), MIB),
        max=_times(_f(row, "Max(MiB)", source, line), MIB),
        mean=_times(_f(row, "Mean(MiB)", source, line), MIB),
        stddev=_times(bw_sd, MIB),
    )
    ops = Stats(
        n=reps,
        min=_f(row, "Min(OPs)", source, line),
        max=_f(row, "Max(OPs)", source, line),
        mean=_f(row, "Mean(OPs)", source, line),
        stddev=ops_sd,
    )
    assert bw.mean is not None and ops.mean is not None
    result.samples.append(
        make_sample(TOOL, "storage.bandwidth", bw.mean, params, bw, unit="B/s", better="higher")
    )
    result.samples.append(
        make_sample(TOOL, "storage.iops", ops.mean, params, ops, unit="op/s", better="higher")
    )


def _iteration_samples(
    row: dict[str, str], common: dict[str, Any], result: ParseResult, source: str, line: int
) -> None:
    params: dict[str, Any] = {
        **common,
        "operation": row["access"],
        "iteration": _i(row, "iter", source, line),
        "block_size": round(_f(row, "block(KiB)", source, line) * 1024),
        "transfer_size": round(_f(row, "xfer(KiB)", source, line) * 1024),
        "total_time_s": _f(row, "total(s)", source, line),
    }
    if "Latency(s)" in row:
        params["ior_latency_s"] = _f(row, "Latency(s)", source, line)
    bw = _times(_f(row, "bw(MiB/s)", source, line), MIB)
    result.samples.append(
        make_sample(TOOL, "storage.bandwidth", bw, params, unit="B/s", better="higher")
    )
    if "IOPS" in row:
        iops = _f(row, "IOPS", source, line)
        result.samples.append(
            make_sample(TOOL, "storage.iops", iops, params, unit="op/s", better="higher")
        )


# ---------------------------------------------------------------------------- JSON


def _parse_json(text: str, start: int, source: str) -> ParseResult:
    result = ParseResult(tool=TOOL)
    if m := _BANNER.search(text[:start]):
        result.meta["version"] = m["v"]
    try:
        data, _ = json.JSONDecoder(parse_constant=_no_constant).raw_decode(text[start:])
    except json.JSONDecodeError as err:
        line = text.count("\n", 0, start) + err.lineno
        truncated = err.pos >= len(text[start:].rstrip()) - 1
        raise ParseError(
            f"IOR JSON cannot be read: {err.msg}"
            + (" (the output is cut short)" if truncated else ""),
            source=source,
            line=line,
        ) from None
    except (ValueError, RecursionError) as err:  # NaN/Infinity, a numeral over int()'s limit
        raise ParseError(f"IOR JSON cannot be read: {str(err)[:120]}", source=source) from None
    if not isinstance(data, dict):
        raise ParseError("IOR JSON is not an object", source=source)
    try:
        return _json_result(data, result, source)
    except (TypeError, AttributeError, KeyError):
        raise ParseError(
            "IOR JSON has an unexpected structure (a list or object where IOR writes another)",
            source=source,
        ) from None


def _no_constant(name: str) -> float:
    raise ValueError(f"{name} is not a number IOR writes")


def _json_result(data: dict[str, Any], result: ParseResult, source: str) -> ParseResult:
    if "Version" in data:
        result.meta["version"] = str(data["Version"])
    if "Command line" in data:
        result.meta["command"] = str(data["Command line"])
    summary = data.get("summary")
    tests = data.get("tests") or []
    if summary:
        for entry in summary:
            _json_summary(entry, result, source)
    else:
        for t, test in enumerate(tests):
            for rep in test.get("Results") or []:
                for entry in rep if isinstance(rep, list) else [rep]:
                    _json_iteration(entry, test.get("TestID", t), result, source)
        result.complete = False
        result.missing.append('the "summary" array')
    if "Finished" not in data and result.complete:
        result.complete = False
        result.missing.append('the "Finished" entry')
    if not result.samples:
        raise ParseError("IOR JSON without write/read results", source=source)
    return result


def _num(entry: dict[str, Any], key: str, source: str) -> float:
    if key not in entry:
        raise ParseError(f"IOR JSON summary entry without {key!r}", source=source)
    value = entry[key]
    if isinstance(value, str):  # some IOR versions quote numbers
        return parse_number(value, source=source, line=None, what=f"IOR JSON {key!r}")
    return json_number(value, source=source, what=f"IOR JSON {key!r}")


def _int(entry: dict[str, Any], key: str, source: str) -> int:
    return to_int(_num(entry, key, source), source=source, line=None, what=f"IOR JSON {key!r}")


def _json_summary(entry: dict[str, Any], result: ParseResult, source: str) -> None:
    operation = entry.get("operation")
    if operation not in _OPERATIONS:
        return
    reps = _int(entry, "repetitions", source)
    params: dict[str, Any] = {
        "operation": operation,
        "api": entry.get("API"),
        "test": _int(entry, "TestID", source),
        "tasks": _int(entry, "numTasks", source),
        "tasks_per_node": _int(entry, "tasksPerNode", source),
        "repetitions": reps,
        "file_per_proc": _num(entry, "filePerProc", source) != 0,
        "segments": _int(entry, "segmentCount", source),
        "block_size": _int(entry, "blockSize", source),
        "transfer_size": _int(entry, "transferSize", source),
        "mean_time_s": _num(entry, "MeanTime", source),
    }
    bw = Stats(
        n=reps,
        min=_times(_num(entry, "bwMinMIB", source), MIB),
        max=_times(_num(entry, "bwMaxMIB", source), MIB),
        mean=_times(_num(entry, "bwMeanMIB", source), MIB),
        stddev=_times(_num(entry, "bwStdMIB", source), MIB),
    )
    ops = Stats(
        n=reps,
        min=_num(entry, "OPsMin", source),
        max=_num(entry, "OPsMax", source),
        mean=_num(entry, "OPsMean", source),
        stddev=_num(entry, "OPsSD", source),
    )
    assert bw.mean is not None and ops.mean is not None
    result.samples.append(
        make_sample(TOOL, "storage.bandwidth", bw.mean, params, bw, unit="B/s", better="higher")
    )
    result.samples.append(
        make_sample(TOOL, "storage.iops", ops.mean, params, ops, unit="op/s", better="higher")
    )


def _json_iteration(entry: dict[str, Any], test: Any, result: ParseResult, source: str) -> None:
    operation = entry.get("access")
    if operation not in _OPERATIONS:
        return
    params: dict[str, Any] = {"operation": operation, "test": test}
    if "iter" in entry:
        params["iteration"] = _int(entry, "iter", source)
    bw = _times(_num(entry, "bwMiB", source), MIB)
    result.samples.append(
        make_sample(TOOL, "storage.bandwidth", bw, params, unit="B/s", better="higher")
    )
    if "iops" in entry:
        result.samples.append(
            make_sample(
                TOOL,
                "storage.iops",
                _num(entry, "iops", source),
                params,
                unit="op/s",
                better="higher",
            )
        )


def _times(value: float, factor: float) -> float:
    """``value * factor`` in decimal, so that 1842.29 MiB/s is 1931778007.04 B/s exactly."""
    if not math.isfinite(value):
        return value * factor
    return float(Decimal(repr(value)) * Decimal(repr(factor)))
