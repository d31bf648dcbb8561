"""Parsers of third-party tool output: text in, samples out (pure functions).

Each module exposes ``parse(text, source) -> ParseResult`` and ``looks_like(text) -> bool``.
``FORMATS`` maps the ``assay import --format`` names to modules, imported on first use.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from assay.errors import ParseError
from assay.parsers.base import ParseResult

FORMATS: dict[str, str] = {
    "osu": "osu",
    "imb": "imb",
    "perftest": "perftest",
    "nccl": "nccl",
    "stream": "stream",
    "hpl": "hpl",
    "hpcc": "hpcc",
    "fio": "fio",
    "vdbench": "vdbench",
    "ior": "ior",
    "mdtest": "mdtest",
    "gpu-burn": "gpu_burn",
    "assay-json": "assay_json",
}


def available_formats() -> list[str]:
    """The formats whose parser module is present in this version."""
    out = []
    for fmt in FORMATS:
        try:
            parser_module(fmt)
        except ParseError:
            continue
        out.append(fmt)
    return out


def parser_module(fmt: str) -> ModuleType:
    if fmt not in FORMATS:
        raise ParseError(f"unknown format {fmt!r}", hint=f"formats: {', '.join(FORMATS)}, auto")
    try:
        return importlib.import_module(f"assay.parsers.{FORMATS[fmt]}")
    except ModuleNotFoundError:
        raise ParseError(f"format {fmt!r} is not implemented yet") from None


def detect_format(text: str, source: str = "<text>") -> str:
    """The tool that printed ``text``, from its header; an error when none or several match."""
    matches = [fmt for fmt in available_formats() if parser_module(fmt).looks_like(text)]
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise ParseError(
            "cannot tell which tool wrote this",
            source=source,
            hint=f"name it with --format ({', '.join(available_formats())})",
        )
    raise ParseError(
        f"looks like several tools: {', '.join(matches)}",
        source=source,
        hint="name it with --format",
    )


def parse_text(text: str, fmt: str, source: str = "<text>") -> ParseResult:
    if fmt == "auto":
        fmt = detect_format(text, source)
    return parser_module(fmt).parse(text, source=source)


__all__ = ["FORMATS", "ParseResult", "available_formats", "detect_format", "parse_text"]
