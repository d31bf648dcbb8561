"""mdtest (hpc/ior's mdtest 3.x and 4.x, and LLNL mdtest 1.9): the ``SUMMARY rate`` table.

mdtest prints, after its iterations::

    SUMMARY rate: (of 3 iterations)                      <- 1.9 and 3.x
    SUMMARY rate (in ops/sec): (of 1 iterations)         <- 4.x
       Operation                      Max            Min           Mean        Std Dev
       ---------                      ---            ---           ----        -------
       Directory creation        :       7345.338       3211.453       5963.545       1945.909
       File creation              119113.150     119113.150     119113.150          0.000

(4.x drops the ``:`` after the operation.)
The rates are operations per second over all tasks (4.x says "in ops/sec"; mdtest.c
divides the items done by all ranks by the phase time). 4.x then prints a ``SUMMARY time``
table in seconds, mislabelled "(in ops/sec)" too; its means are kept as the param
``time_s``.

Samples: ``storage.metadata.<operation>`` (``directory_creation``, ``file_stat``, ...,
``tree_removal``), op/s, value = Mean, ``Stats`` n = iterations, min, max, mean, stddev. A
phase mdtest did not run (``-C`` only, as the IO500 harness does) is printed as all zeros: no
sample, named in ``meta["not_run"]``.
"""

from __future__ import annotations

import re
from typing import Any

from assay.errors import ParseError
from assay.model import Stats
from assay.parsers.base import ParseResult, make_sample, other_tool, parse_number, require_text
from assay.parsers.numbers import checked, parse_int

TOOL = "mdtest"

_LAUNCH = re.compile(
    r"mdtest-(?P<v>\S+) was launched with (?P<tasks>\d+) total task\(s\) on (?P<nodes>\d+) node"
)
_SUMMARY = re.compile(
    r"^SUMMARY(?: (?P<kind>rate|time))?(?: \([^)]*\))?:?\s*\(of (?P<n>\d+) iterations?\)"
)
_OP = re.compile(r"[A-Za-z][A-Za-z ]*", re.ASCII)


def _row(line: str) -> dict[str, str] | None:
    """``OP[:] MAX MIN MEAN SD``: the operation's name and its four figures, or None. Read
    from the right without a pattern over the whole line: one regular expression with a lazy
    name before the figures backtracked over a run of blanks in every way (2,000 blanks took
    72 s)."""
    parts = line.rsplit(None, 4)
    if len(parts) != 5 or line[:1].isspace():
        return None
    op = parts[0].rstrip()
    op = op[:-1].rstrip() if op.endswith(":") else op
    if not _OP.fullmatch(op):
        return None
    return dict(zip(("op", "max", "min", "mean", "sd"), [op, *parts[1:]], strict=True))


_FILES = re.compile(
    r"^(?P<tasks>\d+) tasks, (?P<items>\d+) (?P<what>files(?:/directories)?|directories)"
)


def looks_like(text: str) -> bool:
    return bool(_LAUNCH.search(text)) or (
        "SUMMARY rate" in text and "Operation" in text and "creation" in text
    )


def metric_name(operation: str) -> str:
    """``Directory creation`` -> ``storage.metadata.directory_creation``."""
    return "storage.metadata." + "_".join(operation.lower().split())


@checked
def parse(text: str, source: str = "<text>") -> ParseResult:
    """Samples of every ``SUMMARY rate`` table (several mdtest runs may be concatenated)."""
    require_text(text, "mdtest output", source=source)
    result = ParseResult(tool=TOOL)
    header: dict[str, Any] = {}
    tables = 0
    kind: str | None = None
    iterations = 0
    rows_in_table = 0
    started = finished = 0
    rates: list[tuple[dict[str, Any], str, float, float, float, float, int]] = []
    times: dict[tuple[int, str], float] = {}
    not_run: list[str] = []
    seen: dict[tuple[int, str, str], tuple[int, list[float]]] = {}  # a row printed twice
    lines = text.splitlines()
    for lineno, raw in enumerate(lines, start=1):
        line = raw.strip()
        if not line:
            continue
        if line.startswith("-- started at"):
            started += 1
            header = {}
            kind = None
            continue
        if line.startswith("-- finished at"):
            finished += 1
            kind = None
            continue
        if m := _LAUNCH.search(line):
            result.meta.setdefault("version", m["v"])
            header["tasks"] = parse_int(m["tasks"], source=source, line=lineno, what="tasks")
            header["nodes"] = parse_int(m["nodes"], source=source, line=lineno, what="nodes")
            continue
        if line.startswith("Command line used:"):
            result.meta.setdefault("command", line.split(":", 1)[1].strip())
            continue
        if m := _FILES.match(line):
            header["items"] = parse_int(m["items"], source=source, line=lineno, what="items")
            continue
        if m := _SUMMARY.match(line):
            kind = m["kind"] or "rate"  # mdtest 1.8 prints "SUMMARY: (of n iterations)"
            iterations = parse_int(m["n"], source=source, line=lineno, what="iterations")
            if kind == "rate":
                tables += 1
            rows_in_table = 0
            continue
        if kind is None or line.startswith(("Operation", "---")):
            continue
        m = _row(line)
        if m is None:
            kind = None  # the table ended
            continue
        values = [
            parse_number(m[k], source=source, line=lineno) for k in ("max", "min", "mean", "sd")
        ]
        op = " ".join(m["op"].split())
        if (first := seen.get((tables, kind, op))) is not None:
            if first[1] != values:
                raise ParseError(
                    f"a second '{op}' row with other figures in one summary (line {first[0]} "
                    "has the first): two outputs mixed?",
                    source=source,
                    line=lineno,
                )
            result.warnings.append(f"{source}:{lineno}: '{op}' repeats line {first[0]}; kept once")
            continue
        seen[(tables, kind, op)] = (lineno, values)
        rows_in_table += 1
        if kind == "time":
            times[(tables, op)] = values[2]
            continue
        if all(v == 0 for v in values):
            not_run.append(op)
            continue
        params = dict(header)
        params["operation"] = op
        if tables > 1:
            params["run"] = tables - 1
        rates.append((params, op, *values, iterations))
    if tables == 0:
        other = other_tool(text, TOOL)
        raise ParseError(
            "no mdtest 'SUMMARY rate' table found",
            source=source,
            hint=f"this looks like {other} output" if other else None,
        )
    for params, op, vmax, vmin, vmean, vsd, n in rates:
        run = params.get("run", 0)
        if (run + 1, op) in times:
            params["time_s"] = times[(run + 1, op)]
        stats = Stats(n=n, min=vmin, max=vmax, mean=vmean, stddev=vsd)
        result.samples.append(
            make_sample(TOOL, metric_name(op), vmean, params, stats, unit="op/s", better="higher")
        )
    if not_run:
        result.meta["not_run"] = sorted(set(not_run))
    if tables > 1:
        result.meta["runs"] = tables
    if finished < max(started, 1):
        result.complete = False
        result.missing.append("the '-- finished at' line (the output may be cut short)")
    if rows_in_table == 0:
        result.complete = False
        result.missing.append("the rows of the last SUMMARY table")
    return result
