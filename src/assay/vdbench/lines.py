"""Reading a Vdbench parameter file into lines as Vdbench's scanner does: comments, ``eof``,
continuation lines and ``include=FILE`` (the rules are in ``assay.vdbench.syntax``), within one
parameter file's bound for the whole text and ``MAX_READS`` reads."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from assay.errors import ParseError
from assay.inputfile import MAX_TEXT_BYTES, InputTooLarge, is_file, read_bounded
from assay.vdbench.definitions import Where

# Reads of parameter files, includes included: a file that includes one file twice, or a
# hundred files, is read as often; two million times is not a parameter file.
MAX_READS = 1000


@dataclass(frozen=True)
class SourceLine:
    text: str
    where: Where


@dataclass
class _Total:
    """What the reads of one parameter file and its includes came to."""

    reads: int = 0
    size: int = 0


def read_file(
    path: Path,
    shown: str,
    chain: tuple[Path, ...],
    out: list[SourceLine],
    files: list[str],
    total: _Total | None = None,
) -> None:
    """Append the parameter lines of ``path`` (comments removed, includes inserted)."""
    total = total if total is not None else _Total()
    total.reads += 1
    if total.reads > MAX_READS:
        raise ParseError(
            f"more than {MAX_READS} reads of parameter files (includes included): not a "
            "Vdbench parameter file",
            source=shown,
        )
    try:
        limit = MAX_TEXT_BYTES - total.size
        data = read_bounded(path, limit, "Vdbench parameter file, includes inserted")
    except OSError as err:
        raise ParseError(
            f"cannot read Vdbench parameter file: {err.strerror}", source=shown
        ) from None
    except InputTooLarge:
        raise ParseError(
            f"the parameter file with its includes inserted is larger than "
            f"{MAX_TEXT_BYTES // 2**20} MiB ({MAX_TEXT_BYTES} bytes): not read further",
            source=shown,
        ) from None
    total.size += len(data)
    text = data.decode(errors="replace")
    files.append(shown)
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if line.startswith("eof"):
            break
        if not line or line[0] in "*#/":
            continue
        where = Where(shown, lineno)
        if line.startswith("include="):
            _include(line, path, where, chain, out, files, total)
            continue
        out.append(SourceLine(line, where))


def _include(
    line: str, including: Path, where: Where, chain: tuple[Path, ...], out, files, total
) -> None:
    name = cut_comment(line, where)[len("include=") :]
    if not name:
        raise ParseError("'include=' without a file name", source=where.file, line=where.line)
    given = Path(name)
    tried: list[Path] = []
    if given.is_absolute():
        tried.append(given)
    else:
        # relative to the including file first (Vdb_scan.readIncludeFile), then to the
        # current directory, Vdbench's own fall-back
        tried.append(including.parent / given)
        tried.append(Path.cwd() / given)
    found = next((p for p in tried if is_file(p)), None)
    if found is None:
        raise ParseError(
            f"include={name}: file not found",
            source=where.file,
            line=where.line,
            hint="looked for " + ", ".join(str(p) for p in tried),
        )
    resolved = found.resolve()
    if resolved in chain:
        raise ParseError(f"include={name} includes itself", source=where.file, line=where.line)
    shown = str(found) if given.is_absolute() else os.path.normpath(str(found))
    read_file(found, shown, (*chain, resolved), out, files, total)


def cut_comment(text: str, where: Where) -> str:
    """The text before the first blank outside double quotes (Vdb_scan.specialize)."""
    quoted = False
    for i, ch in enumerate(text):
        if ch == '"':
            quoted = not quoted
        elif ch in " \t" and not quoted:
            return text[:i]
    if quoted:
        raise ParseError("unterminated double quote", source=where.file, line=where.line)
    return text
