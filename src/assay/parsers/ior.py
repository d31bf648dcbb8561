"""IOR (hpc/ior 3.x and 4.x): the text report and the JSON one (``-O summaryFormat=JSON``).

Text (src/ior-output.c): a ``Results:`` table with one line per access and iteration, columns
``access bw(MiB/s) IOPS Latency(s) block(KiB) xfer(KiB) open(s) wr/rd(s) close(s) total(s)
iter`` (IOR 3.2 has no IOPS and Latency columns), then ``Summary of all tests:``, one line
per test and operation, columns ``Operation Max(MiB) Min(MiB) Mean(MiB) StdDev Max(OPs)
Min(OPs) Mean(OPs) StdDev Mean(s) [Stonewall(s) Stonewall(MiB)] Test# #Tasks tPN reps fPP
reord reordoff reordrand seed segcnt blksiz xsize aggs(MiB) API RefNum`` (the Stonewall
columns since IOR 3.3; IOR 3.0 and 3.1 print no OPs columns and ``aggsize`` in bytes; 2.10
spells ``Max (MiB)``, ``Std Dev``). Both tables are read by their header words. MiB is 2**20 bytes:
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

Several tests, several runs. A file may hold several ior invocations (a batch script running
ior once per API or mode, pasted ``tail``s of several jobs, with shell prompts and launcher
lines between them): each banner (or a table after a finished run, for pastes without one)
starts a run, and with more than one every sample has ``params["run"]`` (0, 1, ...). Each test
keeps the params that tell it from another, which the summary's columns do not all hold: from
the test's ``Options`` (``api``, ``type`` collective/independent, ``access``, ``ordering in a
file``; 3.0's ``Summary:`` block) and the command line (``-c``/``--collective``, ``-e`` fsync,
``-Y``, ``-z``, ``-B``/``--posix.odirect``, ``-C``, ``-Z``, ``-u``, ``-O name=1``, ``-D``):
``collective`` (where known), then ``fsync``, ``random_offset``, ``direct_io``, ...
when set, ``stonewall_s`` when given. Without them an MPI-IO or HDF5 test with ``-c`` and
the same test without it were one measurement of two repetitions in a report.

JSON: the same numbers under ``"summary"`` (``bwMeanMIB``, ``OPsMean``, ...) and
``"tests"[i]["Results"]``; text before the first ``{`` (IOR's banner) is skipped.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
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
_RESULTS_HEADER = re.compile(r"^access\s+bw\(MiB/s\)\s", re.M)
_TEST_ID = re.compile(r"^(?:TestID\s*:\s*(?P<a>\d{1,9})\b|Test (?P<b>\d{1,9}) started:)")
# IOR 2.10's summary header spells "Max (MiB)", "Mean (s)", "Std Dev"
_SPACED_UNIT = re.compile(r"\s+\((MiB|OPs|s)\)")


def _option(line: str) -> tuple[str, str] | None:
    """``KEY : VALUE`` of IOR's Options section (3.2 on), ``KEY = VALUE`` of its Summary
    section (2.10 to 3.1), or None. Split at the first colon or equals sign: one pattern with
    a lazy key before blanks and a colon backtracked over a run of blanks (8,000 blanks took
    0.5 s, growing with the square)."""
    cut = min((i for i in (line.find(":"), line.find("=")) if i > 0), default=-1)
    if cut < 0:
        return None
    key, value = line[:cut].rstrip(), line[cut + 1 :]
    if not _OPTION_KEY.fullmatch(key):
        return None
    return key, value.strip()


_OPERATIONS = ("write", "read")
# Flags of ior's command line that take a value (src/parse_options.c); the others are switches.
_VALUED = frozenset("aAbdDfGiIjJlMNoOQstTUX")
# Switches that tell two tests apart (the summary table has no column for them): the param
# each sets, from its letter, its long name (4.x) or ``-O name=1``. -c collective comes from
# the Options' "type" where IOR prints it (3.2 on).
_SWITCHES = {"e": "fsync", "Y": "fsync_per_write", "z": "random_offset", "B": "direct_io",
             "C": "reorder_tasks", "Z": "reorder_random",
             "u": "unique_dir", "c": "collective", "collective": "collective",
             "posix.odirect": "direct_io", "fsync": "fsync", "fsyncperwrite": "fsync_per_write",
             "randomoffset": "random_offset", "useo_direct": "direct_io",
             "uniquedir": "unique_dir"}  # fmt: skip


def looks_like(text: str) -> bool:
    if _BANNER.search(text):
        return True
    if "Summary of all tests:" in text and "Max(MiB)" in text:
        return True
    if _RESULTS_HEADER.search(text) and "iter" in text:  # a pasted Results table, no banner
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


@dataclass
class _Run:
    """One ior invocation's output: several may be concatenated in one file (a batch script
    running ior once per API, or pasted ``tail``s of several jobs)."""

    line: int  # where it starts
    version: str = ""
    command: str = ""
    section: str = ""
    test: int = 0  # the TestID whose output is being read
    options: dict[int, dict[str, str]] = field(default_factory=dict)
    results_header: list[str] | None = None
    summary_header: list[str] | None = None
    iterations: list[tuple[int, int, dict[str, str]]] = field(default_factory=list)
    summary: list[tuple[int, dict[str, str]]] = field(default_factory=list)
    finished: bool = False
    cut: str = ""  # a summary line cut short at the end of the output

    def seen(self) -> bool:
        return bool(self.version or self.command or self.options or self.tables())

    def tables(self) -> bool:
        return self.results_header is not None or self.summary_header is not None

    def done(self) -> bool:
        return self.finished or bool(self.summary)


def _starts_output(line: str, words: list[str]) -> bool:
    return line.startswith(("Summary of all tests:", "Results:", "Options:", "Summary:")) or (
        _is_results_header(words) or _summary_header(line) is not None
    )


def _is_results_header(words: list[str]) -> bool:
    return words[0] == "access" and "bw(MiB/s)" in words


def _summary_header(line: str) -> list[str] | None:
    """The summary's column names. IOR 2.10 (IOR.c, SummarizeResults) spells "Max (MiB)" and
    "Std Dev", heads its -v columns with "Op grep #Tasks ..." but prints #Tasks first and the
    test number and API last, and ends each row with "EXCEL"."""
    if not line.startswith("Operation"):
        return None
    words = _SPACED_UNIT.sub(r"(\1)", line).replace("Std Dev", "StdDev").split()
    if "Mean(MiB)" not in words:
        return None
    if words[-2:] != ["API", "RefNum"] and words[10:12] == ["Op", "grep"]:
        words = [*words[:10], *words[12:], "Test#", "API"]
    if _SPACED_UNIT.search(line):
        words.append("EXCEL")
    return _unique(words)


def _read_runs(lines: list[str], source: str) -> list[_Run]:
    last = max((i for i, ln in enumerate(lines, start=1) if ln.strip()), default=0)
    runs = [_Run(1)]
    for lineno, raw in enumerate(lines, start=1):
        line = raw.strip()
        if not line:
            continue
        run, words = runs[-1], line.split()
        if m := _BANNER.search(line):
            if run.seen():
                runs.append(run := _Run(lineno))
            run.version = m["v"]
            continue
        if run.done() and _starts_output(line, words):  # a next output without its banner
            runs.append(run := _Run(lineno))
        _feed(run, line, words, lineno, lineno == last, source)
        if run.cut:
            break
    # a run is a banner or a table: "Summary:" and "key: value" lines in the prose around
    # a paste are no run of their own
    return [run for run in runs if run.version or run.tables()]


def _feed(run: _Run, line: str, words: list[str], lineno: int, last: bool, source: str) -> None:
    """One line of a run's output: the Options (or 2.10-3.1 Summary) section, the per-iteration
    Results table and the Summary of all tests; everything else (prompts, launcher messages,
    task maps, "Max Write:" lines) is skipped."""
    if line.startswith("Command line"):
        run.command = run.command or line.partition(":")[2].strip()
    elif line.startswith(("Finished", "Run finished")):  # 2.10: "Run finished: <date>"
        run.finished, run.section = True, ""
    elif m := _TEST_ID.match(line):
        run.test = int(m["a"] or m["b"])
    elif line.startswith(("Options:", "Summary:")):
        run.section = "options"
    elif line.startswith("Results:"):
        run.section = "results"
    elif line.startswith("Summary of all tests:"):
        run.section = "summary"
    elif _is_results_header(words):
        run.results_header, run.section = words, "results"
    elif (header := _summary_header(line)) is not None:
        run.summary_header, run.section = header, "summary"
    elif run.section == "options" and (kv := _option(line)):
        run.options.setdefault(run.test, {}).setdefault(*kv)
    elif words[0] not in _OPERATIONS:
        return
    elif run.section == "results" and run.results_header:
        row = _table_row(words, run.results_header, "Results", source, lineno)
        run.iterations.append((lineno, run.test, row))
    elif run.section == "summary" and run.summary_header:
        if len(words) != len(run.summary_header) and last:
            run.cut = f"the rest of the summary line at {source}:{lineno}"
            return
        run.summary.append(
            (lineno, _table_row(words, run.summary_header, "summary", source, lineno))
        )


def _table_row(
    words: list[str], header: list[str], table: str, source: str, line: int
) -> dict[str, str]:
    if len(words) != len(header):
        raise ParseError(
            f"{len(words)} values for the {len(header)} {table} columns", source=source, line=line
        )
    return dict(zip(header, words, strict=True))


def _parse_text(text: str, source: str) -> ParseResult:
    result = ParseResult(tool=TOOL)
    runs = _read_runs(text.splitlines(), source)
    if not any(run.tables() for run in runs):
        raise ParseError(
            "no IOR result table ('access bw(MiB/s) ...' or 'Summary of all tests') found"
            + _found(runs),
            source=source,
            hint=f"this looks like {other} output" if (other := other_tool(text, TOOL)) else None,
        )
    _run_meta(runs, result)
    for index, run in enumerate(runs):
        where = f" of the IOR run at line {run.line}" if len(runs) > 1 else ""
        extra = {"run": index} if len(runs) > 1 else {}
        _run_samples(run, extra, result, source)
        if run.cut:
            result.complete = False
            result.missing.append(run.cut)
        elif not run.summary:
            result.complete = False
            result.missing.append(f"the 'Summary of all tests' table{where}")
            if not run.iterations:
                result.missing.append(f"any write/read result line{where}")
        elif not run.finished and result.complete:
            result.complete = False
            result.missing.append(f"the 'Finished' line{where}")
    return result


def _found(runs: list[_Run]) -> str:
    """What a refused output holds, for the message: its banner, options, command."""
    parts = [f"the IOR-{r.version} banner" for r in runs if r.version][:1]
    parts += ["its Options" for r in runs if r.options][:1]
    parts += ["its command line" for r in runs if r.command][:1]
    if not parts:
        return ""
    held = ", ".join(parts)
    return f": the text holds {held} but no result line (did ior stop before a test ended?)"


def _run_meta(runs: list[_Run], result: ParseResult) -> None:
    versions = list(dict.fromkeys(run.version for run in runs if run.version))
    commands = [run.command for run in runs if run.command]
    if versions:
        result.meta["version"] = versions[0]
    if len(versions) > 1:
        result.meta["versions"] = versions
    if commands:
        result.meta["command"] = commands[0]
    if len(commands) > 1:
        result.meta["commands"] = commands
    if options := next((run.options[min(run.options)] for run in runs if run.options), None):
        result.meta["options"] = options
    if len(runs) > 1:
        result.meta["runs"] = len(runs)
    result.meta["iterations"] = sum(len(run.iterations) for run in runs)


def _run_samples(run: _Run, extra: dict[str, Any], result: ParseResult, source: str) -> None:
    flags = _command_flags(run.command) if run.command else None
    if run.summary:
        for lineno, row in run.summary:
            test = _i(row, "Test#", source, lineno) if "Test#" in row else run.test
            common = {**_test_params(run.options.get(test, {}), flags), **extra}
            _summary_samples(row, common, result, source, lineno)
        return
    for lineno, test, row in run.iterations:
        common = {**_test_params(run.options.get(test, {}), flags), "test": test, **extra}
        _iteration_samples(row, common, result, source, lineno)


def _command_flags(command: str) -> dict[str, str]:
    """ior's switches and valued flags on its command line: ``-a MPIIO -c -F``, ``-t=1M``,
    ``-wvvvv``, ``--posix.odirect``, ``-O collective=1``; the executable and values skipped."""
    flags: dict[str, str] = {}
    words = command.split()
    i = 0
    while i < len(words):
        word, i = words[i], i + 1
        if word.startswith("--"):
            key, _, value = word[2:].partition("=")
            flags[key] = value
        elif word.startswith("-") and len(word) > 1:
            for pos, letter in enumerate(word[1:], start=1):
                if letter not in _VALUED:
                    flags[letter] = ""
                    continue
                value = word[pos + 1 :].removeprefix("=")
                if not value and i < len(words):
                    value, i = words[i], i + 1
                if letter == "O":  # -O key=value: an option by its name
                    key, _, value = value.partition("=")
                    flags[key.lower()] = value
                else:
                    flags[letter] = value
                break
    return flags


def _test_params(options: dict[str, str], flags: dict[str, str] | None) -> dict[str, Any]:
    """The params one test's Options and the command line give: what the summary's columns
    do not say (collective, fsync, random offsets, O_DIRECT) and, for an output without a
    summary, what they would (API, file per process, tasks)."""
    params: dict[str, Any] = {}
    if api := options.get("api") or (flags or {}).get("a"):
        params["api"] = api
    if "access" in options:
        params["file_per_proc"] = options["access"] == "file-per-process"
    elif flags is not None and "F" in flags:
        params["file_per_proc"] = True
    given = flags or {}
    switches = {name for flag, name in _SWITCHES.items() if given.get(flag, "0") in ("", "1")}
    if options.get("type") in ("collective", "independent"):
        params["collective"] = options["type"] == "collective"
    elif flags is not None:
        params["collective"] = "collective" in switches
    if options.get("ordering in a file", "").startswith("random"):
        switches.add("random_offset")
    params.update((name, True) for name in sorted(switches - {"collective"}))
    counts = (("tasks", "tasks"), ("clients per node", "tasks_per_node"))
    for value, name in [(options.get(k, ""), n) for k, n in counts] + [
        ((flags or {}).get("D", ""), "stonewall_s")  # -D: a phase stops after so many seconds
    ]:
        if value.isascii() and value.isdigit() and len(value) < 19:
            params[name] = int(value)
    return params


def _unique(header: list[str]) -> list[str]:
    """The summary has two "StdDev" columns, after Mean(MiB) and after Mean(OPs)."""
    out: list[str] = []
    for word in header:
        if word == "StdDev" and out:
            unit = "OPs" if "Mean(OPs)" in out else "MiB"
            word = f"StdDev({unit})"
        out.append(word)
    return out


def _f(row: dict[str, str], column: str, source: str, line: int) -> float:
    if column not in row:
        raise ParseError(
            f"the IOR table header lacks the {column!r} column", source=source, line=line
        )
    return parse_number(row[column], source=source, line=line, what=column)


def _i(row: dict[str, str], column: str, source: str, line: int) -> int:
    """A whole count or size of the table (IOR prints them with %d or %lld)."""
    return to_int(_f(row, column, source, line), source=source, line=line, what=column)


# The summary's columns that name the test (IOR 3.0 on; 2.10 has fewer): whole numbers, and
# flags (kept when set: a test without -C has no reorder_tasks param).
_SUMMARY_INTS = {"Test#": "test", "#Tasks": "tasks", "tPN": "tasks_per_node",
                 "reps": "repetitions", "segcnt": "segments", "blksiz": "block_size",
                 "xsize": "transfer_size"}  # fmt: skip
_SUMMARY_FLAGS = {"reord": "reorder_tasks", "reordrand": "reorder_random"}


def _summary_samples(
    row: dict[str, str], common: dict[str, Any], result: ParseResult, source: str, line: int
) -> None:
    params: dict[str, Any] = {**common, "operation": row["Operation"]}
    for column, name in _SUMMARY_INTS.items():
        if column in row:
            params[name] = _i(row, column, source, line)
    if "fPP" in row:
        params["file_per_proc"] = _f(row, "fPP", source, line) != 0
    for column, name in _SUMMARY_FLAGS.items():  # the table's word over the command line's
        if column in row and _f(row, column, source, line) != 0:
            params[name] = True
        elif column in row:
            params.pop(name, None)
    params["mean_time_s"] = _f(row, "Mean(s)", source, line)
    if "API" in row:
        params["api"] = row["API"]
    if "aggs(MiB)" in row:
        params["aggregate_bytes"] = _times(_f(row, "aggs(MiB)", source, line), MIB)
    elif "aggsize" in row:  # IOR 3.0/3.1: bytes
        params["aggregate_bytes"] = _f(row, "aggsize", source, line)
    reps = params.get("repetitions", 1)
    bw = _stats(row, "MiB", reps, MIB, source, line)
    assert bw.mean is not None
    result.samples.append(
        make_sample(TOOL, "storage.bandwidth", bw.mean, params, bw, unit="B/s", better="higher")
    )
    if "Mean(OPs)" in row:  # IOR 3.2 on (3.0 and 3.1 print bandwidth only)
        ops = _stats(row, "OPs", reps, 1, source, line)
        assert ops.mean is not None
        result.samples.append(
            make_sample(TOOL, "storage.iops", ops.mean, params, ops, unit="op/s", better="higher")
        )


def _stats(row: dict[str, str], unit: str, n: int, factor: float, source: str, line: int) -> Stats:
    def col(name: str) -> float:
        return _times(_f(row, f"{name}({unit})", source, line), factor)

    return Stats(n=n, min=col("Min"), max=col("Max"), mean=col("Mean"), stddev=col("StdDev"))


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
    flags = _command_flags(str(data["Command line"])) if "Command line" in data else None
    options = {  # each test's "Options" object, as the text report's Options section
        test.get("TestID", t): {str(k): str(v) for k, v in (test.get("Options") or {}).items()}
        for t, test in enumerate(tests)
    }
    if summary:
        for entry in summary:
            common = _test_params(options.get(entry.get("TestID"), {}), flags)
            _json_summary(entry, common, result, source)
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


def _json_summary(
    entry: dict[str, Any], common: dict[str, Any], result: ParseResult, source: str
) -> None:
    operation = entry.get("operation")
    if operation not in _OPERATIONS:
        return
    reps = _int(entry, "repetitions", source)
    params: dict[str, Any] = {
        **common,
        "operation": operation,
        "api": entry.get("API") or common.get("api"),
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
    for key, name in (("reorderTasks", "reorder_tasks"), ("reorderTasksRandom", "reorder_random")):
        params.pop(name, None)
        if key in entry and _num(entry, key, source) != 0:
            params[name] = True
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
