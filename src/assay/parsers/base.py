"""What every third-party parser returns, and helpers they share.

A parser is a pure function ``parse(text, source="<text>") -> ParseResult``. It never
guesses a value it did not read: a line it cannot read raises ``ParseError`` naming the
source and line, unless the parser can keep the complete rows it read and say which are
missing (a truncated table), in which case ``ParseResult.complete`` is False and
``ParseResult.missing`` says what is absent.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from assay.errors import ParseError
from assay.model import Sample


@dataclass
class ParseResult:
    tool: str  # "osu", "imb", "fio", ...
    samples: list[Sample] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)  # tool version, benchmark name, command...
    complete: bool = True
    missing: list[str] = field(default_factory=list)  # what a truncated output lacks
    warnings: list[str] = field(default_factory=list)


def parse_number(token: str, *, source: str, line: int) -> float:
    """A number as a tool printed it; anything else is a ParseError at that line."""
    try:
        return float(token)
    except ValueError:
        raise ParseError(f"expected a number, found {token!r}", source=source, line=line) from None
