"""What every third-party parser returns, and helpers they share (numbers: ``numbers.py``).

A parser is a pure function ``parse(text, source="<text>") -> ParseResult``. It never
guesses a value it did not read: a line it cannot read raises ``ParseError`` naming the
source and line, unless the parser can keep the complete rows it read and say which are
missing (a truncated table), in which case ``ParseResult.complete`` is False and
``ParseResult.missing`` says what is absent.
"""

from __future__ import annotations

import dataclasses
import importlib
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from assay.errors import ParseError
from assay.model import Sample, Stats
from assay.parsers.numbers import parse_number as parse_number  # re-exported for parsers
from assay.parsers.numbers import parse_rate, to_int


@dataclass
class ParseResult:
    tool: str  # "osu", "imb", "fio", ...
    samples: list[Sample] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)  # tool version, benchmark name, command...
    complete: bool = True
    missing: list[str] = field(default_factory=list)  # what a truncated output lacks
    warnings: list[str] = field(default_factory=list)


def make_sample(
    probe: str,
    metric: str,
    value: float,
    params: dict[str, Any],
    stats: Stats | None = None,
    *,
    unit: str,
    better: str,
) -> Sample:
    """A sample whose unit and direction are the ones the tool's column means, whatever the
    metric table's default for that family."""
    sample = Sample.make(probe, metric, value, params, stats, unit=unit)
    if sample.better != better:
        sample = dataclasses.replace(sample, better=better)  # type: ignore[arg-type]
    return sample


TOOL_NAMES = {
    "osu": "OSU",
    "imb": "IMB",
    "perftest": "perftest",
    "nccl": "nccl-tests",
    "hpl": "HPL",
    "hpcc": "HPCC",
    "stream": "STREAM",
    "fio": "fio",
}


def other_tool(text: str, this: str) -> str:
    """Which other tool's output ``text`` looks like, for a wrong-tool error message."""
    for fmt, name in TOOL_NAMES.items():
        if fmt == this:
            continue
        module = importlib.import_module(f"assay.parsers.{fmt}")  # at call time: no import cycle
        if module.looks_like(text):
            return name
    return ""


def require_text(text: str, what: str, *, source: str) -> None:
    """The first check of a parser that knows its tool by its own markers: some text at all."""
    if not text.strip():
        raise ParseError(f"empty input, no {what}", source=source)


def require_tool(
    text: str,
    *,
    tool: str,
    looks_like: Callable[[str], bool],
    expected: str,
    source: str,
    hint: str | None = None,
) -> None:
    """The checks every parser makes first: the text is not empty and is this tool's output.
    ``expected`` says what was looked for; the error also names the tool it looks like."""
    if not text.strip():
        raise ParseError("empty output: there is nothing to parse", source=source)
    if not looks_like(text):
        other = other_tool(text, tool)
        looks = f"; it looks like {other} output" if other else ""
        raise ParseError(f"{expected}{looks}", source=source, hint=hint)


# Where str.splitlines() ends a line: LF, CR (old Mac and some Windows tools), CRLF, and a few
# others. A text ending in one of them has no cut last line, whichever its line ends are.
_LINE_ENDS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"


def last_line_cut(text: str) -> bool:
    """Whether the last line of ``text`` has no line end (the tool was stopped mid-line)."""
    return not text or text[-1] not in _LINE_ENDS


def tool_lines(
    text: str,
    *,
    tool: str,
    looks_like: Callable[[str], bool],
    expected: str,
    source: str,
) -> tuple[list[str], bool]:
    """``require_tool``'s checks, then the text's lines and whether its last line was cut (no
    newline at the end: the tool was stopped mid-line, so that line is not a whole row)."""
    require_tool(text, tool=tool, looks_like=looks_like, expected=expected, source=source)
    return text.splitlines(), last_line_cut(text)


def table_row(
    stripped: str,
    *,
    n_columns: int,
    table: str,
    garbage: tuple[int, str] | None,
    cut_last: bool,
    source: str,
    line: int,
) -> list[str] | None:
    """The tokens of a data row of a table, or None when it is the output's last line and was
    cut short. A foreign line seen inside the table (``garbage``) or a row with the wrong
    number of columns means two writers interleaved: a ParseError naming the line."""
    if garbage is not None:
        bad_line, bad_text = garbage
        raise ParseError(
            f"unexpected line inside the {table} table (interleaved output?): {bad_text[:80]!r}",
            source=source,
            line=bad_line,
        )
    tokens = stripped.split()
    if cut_last:
        return None
    if len(tokens) != n_columns:
        raise ParseError(
            f"expected {n_columns} columns in the {table} table, found {len(tokens)}: "
            f"{stripped[:80]!r} (interleaved output?)",
            source=source,
            line=line,
        )
    return tokens


def header_columns(
    body: str,
    columns: list[tuple[str, re.Pattern[str]]],
    *,
    tool: str,
    source: str,
    line: int,
) -> Iterator[tuple[str, re.Match[str]]]:
    """The columns of a table header whose names hold spaces ("Avg Latency(us)", "BW peak[Gb/sec]"),
    left to right: at each word the first of ``columns`` (name, pattern) that matches there.
    Lazy, so a caller's check of one column (its unit) fails before a later unknown column."""
    pos = 0
    while pos < len(body):
        if body[pos].isspace():
            pos += 1
            continue
        for name, pattern in columns:
            m = pattern.match(body, pos)
            if m:
                yield name, m
                pos = m.end()
                break
        else:
            raise ParseError(
                f"unknown {tool} column header {body[pos:].strip()!r}", source=source, line=line
            )


def rate_row(tokens: list[str], columns: list[str], *, source: str, line: int) -> dict[str, float]:
    """A row of a table of non-negative figures (IMB, perftest) by column name; the ``size``
    and ``iterations`` columns must hold whole numbers."""
    row = {
        name: parse_rate(tok, source=source, line=line, what=name)  # all >= 0
        for name, tok in zip(columns, tokens, strict=True)
    }
    for name in ("size", "iterations"):
        if name in row:
            row[name] = to_int(row[name], source=source, line=line, what=name)
    return row
