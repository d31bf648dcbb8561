"""mdtest (hpc/ior's mdtest 3.x and 4.x, and LLNL mdtest 1.8 and 1.9): the ``SUMMARY rate`` table.

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

Several runs in one file (a batch script's, each from ``-- started at`` to ``-- finished at``)
are kept apart: with more than one SUMMARY table every sample has ``params["run"]`` (0, 1,
...). Each run's params come from its launch line (``tasks``, ``nodes``), its ``N tasks, M
files`` line (``items``) and its command line (``-n`` items_per_rank, ``-I`` items_per_dir,
``-z`` depth, ``-b`` branching, ``-w``/``-e`` bytes, ``-a`` api; ``-u`` unique_dir, ``-F``,
``-D``, ``-S``, ``-L`` when given). mdtest 1.8 prints the tree's rates outside its table
(``tree creation rate: N ops/sec``): kept as samples of that run.

Samples: ``storage.metadata.<operation>`` (``directory_creation``, ``file_stat``, ...,
``tree_removal``), op/s, value = Mean, ``Stats`` n = iterations, min, max, mean, stddev. A
phase mdtest did not run (``-C`` only, as the IO500 harness does) is printed as all zeros: no
sample, named in ``meta["not_run"]``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
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
# mdtest 1.8 prints the tree's rates outside its SUMMARY table
_TREE_RATE = re.compile(r"^tree (?P<what>creation|removal) rate: (?P<rate>\S+) ops/sec")
# Flags of mdtest's command line that take a value; the params some of them set (what tells
# one run from another: items per rank, per directory, tree depth and fan-out, bytes written
# and read per file, the API), and the switches kept (-u a directory per task, -F files only).
_VALUED = frozenset("abdefiIlnNpsVwWxzGO")
_VALUED_PARAMS = {"n": "items_per_rank", "I": "items_per_dir", "z": "depth", "b": "branching",
                  "w": "write_bytes", "e": "read_bytes"}  # fmt: skip
_SWITCHES = {"u": "unique_dir", "F": "files_only", "D": "dirs_only", "S": "shared_file",
             "L": "leaf_only"}  # fmt: skip


def looks_like(text: str) -> bool:
    return bool(_LAUNCH.search(text)) or (
        "SUMMARY rate" in text and "Operation" in text and "creation" in text
    )


def metric_name(operation: str) -> str:
    """``Directory creation`` -> ``storage.metadata.directory_creation``."""
    return "storage.metadata." + "_".join(operation.lower().split())


def command_params(command: str) -> dict[str, Any]:
    """The params mdtest's command line sets: ``-n 100 -u``, ``"-n" "100"`` (1.9),
    ``'-n' '100'`` (3.x on), ``-n100``; long options (``--dataPacketType=...``) skipped."""
    words = [w.strip("'\"") for w in command.split()]
    params: dict[str, Any] = {}
    i = 0
    while i < len(words):
        word, i = words[i], i + 1
        if not word.startswith("-") or word.startswith("--") or len(word) < 2:
            continue
        for pos, letter in enumerate(word[1:], start=1):
            if letter in _SWITCHES:
                params[_SWITCHES[letter]] = True
            if letter not in _VALUED:
                continue
            value = word[pos + 1 :].removeprefix("=")
            if not value and i < len(words):
                value, i = words[i], i + 1
            if letter == "a":
                params["api"] = value
            elif letter in _VALUED_PARAMS:  # "-w 4k" as typed when not a plain count
                plain = value.isascii() and value.isdigit() and len(value) < 19
                params[_VALUED_PARAMS[letter]] = int(value) if plain else value
            break
    return params


@dataclass
class _Reader:
    """What the lines read so far say: the current run's header, the table being read."""

    source: str
    result: ParseResult
    header: dict[str, Any] = field(default_factory=dict)
    tables: int = 0  # SUMMARY rate tables so far (one per run)
    kind: str | None = None  # the table being read: "rate" or "time"
    iterations: int = 0
    rows_in_table: int = 0
    started: int = 0
    finished: int = 0
    rates: list[tuple[int, dict[str, Any], str, list[float], int]] = field(default_factory=list)
    times: dict[tuple[int, str], float] = field(default_factory=dict)
    tree_rates: list[tuple[int, dict[str, Any], str, float]] = field(default_factory=list)
    not_run: list[str] = field(default_factory=list)
    seen: dict[tuple[int, str, str], tuple[int, list[float]]] = field(default_factory=dict)

    def line(self, line: str, lineno: int) -> None:
        """One stripped, non-empty line: a run's header lines, or a SUMMARY table's."""
        if line.startswith("-- started at"):
            self.started += 1
            self.header, self.kind = {}, None
        elif line.startswith("-- finished at"):
            self.finished += 1
            self.kind = None
        elif m := _LAUNCH.search(line):
            self.result.meta.setdefault("version", m["v"])
            for key in ("tasks", "nodes"):
                self.header[key] = parse_int(m[key], source=self.source, line=lineno, what=key)
        elif line.startswith("Command line used:"):
            command = line.split(":", 1)[1].strip()
            self.result.meta.setdefault("command", command)
            self.header.update(command_params(command))
        elif m := _FILES.match(line):
            self.header["items"] = parse_int(m["items"], source=self.source, line=lineno)
        elif m := _TREE_RATE.match(line):
            rate = parse_number(m["rate"], source=self.source, line=lineno, what="tree rate")
            op = f"Tree {m['what']}"
            self.tree_rates.append((self.tables + (op == "Tree creation"), self.header, op, rate))
        elif m := _SUMMARY.match(line):
            self.kind = m["kind"] or "rate"  # mdtest 1.8 prints "SUMMARY: (of n iterations)"
            self.iterations = parse_int(m["n"], source=self.source, line=lineno)
            self.tables += self.kind == "rate"
            self.rows_in_table = 0
        elif self.kind is not None and not line.startswith(("Operation", "---")):
            self.row(line, lineno)

    def row(self, line: str, lineno: int) -> None:
        m = _row(line)
        if m is None or not m["op"].startswith(_PHASES):
            self.kind = None  # the table ended ("time to remove tree: ..." after 1.8's)
            return
        values = [parse_number(m[k], source=self.source, line=lineno) for k in _FIGURES]
        op = " ".join(m["op"].split())
        if (first := self.seen.get((self.tables, self.kind, op))) is not None:
            if first[1] != values:
                raise ParseError(
                    f"a second '{op}' row with other figures in one summary (line {first[0]} "
                    "has the first): two outputs mixed?",
                    source=self.source,
                    line=lineno,
                )
            self.result.warnings.append(
                f"{self.source}:{lineno}: '{op}' repeats line {first[0]}; kept once"
            )
            return
        self.seen[(self.tables, self.kind, op)] = (lineno, values)
        self.rows_in_table += 1
        if self.kind == "time":
            self.times[(self.tables, op)] = values[2]
        elif all(v == 0 for v in values):
            self.not_run.append(op)
        else:
            params = {**self.header, "operation": op}
            self.rates.append((self.tables, params, op, values, self.iterations))


_PHASES = ("Directory ", "File ", "Tree ")
_FIGURES = ("max", "min", "mean", "sd")


@checked
def parse(text: str, source: str = "<text>") -> ParseResult:
    """Samples of every ``SUMMARY rate`` table (several mdtest runs may be concatenated)."""
    require_text(text, "mdtest output", source=source)
    reader = _Reader(source, ParseResult(tool=TOOL))
    for lineno, raw in enumerate(text.splitlines(), start=1):
        if line := raw.strip():
            reader.line(line, lineno)
    if reader.tables == 0:
        other = other_tool(text, TOOL)
        raise ParseError(
            "no mdtest 'SUMMARY rate' table found" + _found(reader),
            source=source,
            hint=f"this looks like {other} output" if other else None,
        )
    return _result(reader)


def _found(reader: _Reader) -> str:
    if not reader.header:
        return ""
    return " (the text holds a run's header but no summary: did mdtest stop before it ended?)"


def _result(r: _Reader) -> ParseResult:
    result, several = r.result, r.tables > 1
    for table, params, op, (vmax, vmin, vmean, vsd), n in r.rates:
        if several:
            params["run"] = table - 1
        if (table, op) in r.times:
            params["time_s"] = r.times[(table, op)]
        stats = Stats(n=n, min=vmin, max=vmax, mean=vmean, stddev=vsd)
        result.samples.append(
            make_sample(TOOL, metric_name(op), vmean, params, stats, unit="op/s", better="higher")
        )
    for table, header, op, rate in r.tree_rates:
        if 0 < table <= r.tables and (table, "rate", op) not in r.seen:
            params = {**header, "operation": op, **({"run": table - 1} if several else {})}
            result.samples.append(
                make_sample(TOOL, metric_name(op), rate, params, unit="op/s", better="higher")
            )
    if r.not_run:
        result.meta["not_run"] = sorted(set(r.not_run))
    if several:
        result.meta["runs"] = r.tables
    if r.finished < max(r.started, 1):
        result.complete = False
        result.missing.append("the '-- finished at' line (the output may be cut short)")
    if r.rows_in_table == 0:
        result.complete = False
        result.missing.append("the rows of the last SUMMARY table")
    return result
