"""Parsers of third-party tool output: text in, samples out (pure functions).

Each module exposes ``parse(text, source) -> ParseResult`` and ``looks_like(text) -> bool``.
``FORMATS`` maps the ``assay import --format`` names to modules, imported on first use.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from assay.errors import ParseError
from assay.parsers.base import ParseResult
from assay.parsers.prefixes import Split, Writer, split_writers

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
    match = _one_format(text, source)
    if match is None:
        raise ParseError(
            "cannot tell which tool wrote this",
            source=source,
            hint=f"name it with --format ({', '.join(available_formats())})",
        )
    return match


def _one_format(text: str, source: str) -> str | None:
    """The one format whose parser knows ``text``, None when none does; several: an error."""
    matches = [fmt for fmt in available_formats() if parser_module(fmt).looks_like(text)]
    if len(matches) <= 1:
        return matches[0] if matches else None
    raise ParseError(
        f"looks like several tools: {', '.join(matches)}",
        source=source,
        hint="name it with --format",
    )


def parse_text(text: str, fmt: str, source: str = "<text>") -> ParseResult:
    """The samples in ``text``, written by the tool ``fmt`` names ("auto": told from the text).
    Launcher prefixes come off first (``prefixes``); when several ranks or hosts wrote, each
    writer's lines are parsed as one output and their samples say whose they are."""
    split = split_writers(text)
    if len(split.writers) == 1:
        result = _parse_one(split.writers[0].text, fmt, source)
    else:
        result = _parse_writers(split, fmt, source)
    if split.style is not None:
        result.meta.setdefault("launcher_prefix", split.style.name)
    return result


def _parse_one(text: str, fmt: str, source: str) -> ParseResult:
    if fmt == "auto":
        fmt = detect_format(text, source)
    return parser_module(fmt).parse(text, source=source)


def _writer_format(text: str, fmt: str, source: str) -> str | None:
    """The format of one writer's lines, or None when they hold no output of it (a rank that
    printed only warnings)."""
    if fmt != "auto":
        return fmt if parser_module(fmt).looks_like(text) else None
    return _one_format(text, source)


def _parse_writers(split: Split, fmt: str, source: str) -> ParseResult:
    key = split.style.key if split.style else "rank"
    parsed: list[tuple[Writer, ParseResult]] = []
    refused: list[ParseError] = []
    for writer in split.writers:
        where = f"{source} ({key} {writer.who})"
        writer_fmt = _writer_format(writer.text, fmt, where)
        if writer_fmt is None:
            continue
        try:
            parsed.append((writer, parser_module(writer_fmt).parse(writer.text, source=where)))
        except ParseError as exc:  # one writer's bad lines do not cost the others theirs
            refused.append(exc)
    if not parsed and refused:
        raise refused[0]
    if not parsed:  # no writer printed the tool's output: the parser says what is missing
        return _parse_one("".join(w.text for w in split.writers), fmt, source)
    result = parsed[0][1] if len(parsed) == 1 else _merge(key, parsed, source)
    result.warnings.extend(f"not read: {exc}" for exc in refused)
    return result


def _merge(key: str, parsed: list[tuple[Writer, ParseResult]], source: str) -> ParseResult:
    first = parsed[0][1]
    tools = {result.tool for _, result in parsed}
    if len(tools) > 1:
        raise ParseError(
            f"the {key}s printed different tools' outputs ({', '.join(sorted(tools))})",
            source=source,
            hint="import each tool's lines as a file of its own",
        )
    merged = ParseResult(tool=first.tool, meta=dict(first.meta))
    for writer, result in parsed:
        who: str | int | None = writer.who
        if key == "rank" and who is not None:
            who = int(who)
        for sample in result.samples:
            sample.params[key] = who
        merged.samples.extend(result.samples)
        merged.complete = merged.complete and result.complete
        merged.missing.extend(f"{key} {writer.who}: {m}" for m in result.missing)
        merged.warnings.extend(f"{key} {writer.who}: {w}" for w in result.warnings)
    return merged


__all__ = ["FORMATS", "ParseResult", "available_formats", "detect_format", "parse_text"]
